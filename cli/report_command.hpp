// `fleetsim report INPUT -o FILE`: the HTML report of a run or sweep JSON document, or of a scenario.
#pragma once
#include <string>
#include <vector>

namespace fleetsim::cli {

struct ReportArgs {
  std::string input;              // a `fleetsim run --format json` or `fleetsim sweep`/`merge` JSON file, or a
                                  // scenario (.yaml/.yml, or "" for the built-in default), which is run first
  std::string output;             // the HTML file to write ("" or "-": standard output)
  std::vector<std::string> sets;  // --set overrides, for a scenario
  int threads = 1;
  bool threads_given = false;  // --threads on the command line (a JSON result runs nothing)
};

// Returns 0. An input that cannot be read, is not JSON, or is not a run or sweep document is an
// InputError naming the file; an output that cannot be written is an OutputError.
int run_report_command(const ReportArgs& a);

}  // namespace fleetsim::cli
