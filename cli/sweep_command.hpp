// `fleetsim sweep` and `fleetsim merge`: a sweep run with its journal, stop signals, progress and
// rows streamed as they finish; shard documents merged into the whole sweep's.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "libsim/input/scenario.hpp"

namespace fleetsim::cli {

struct SweepArgs {
  std::string backend = "auto";         // auto, cpu or cuda
  std::string shard;                    // "K/N", or "" for the whole sweep
  std::string journal, resume;          // files (or "")
  std::string format = "table";         // table, json, csv or jsonl
  int threads = 0;                      // 0: all
  std::vector<std::string> argv;        // the command line, for the hint that resumes it
  std::function<bool()> output_failed;  // whether a write through emit has failed (it then stops)
};

// Runs the sweep of `src` (the scenario with its overrides), writing through `emit`. Returns the
// exit code: 0, or 128 + the signal that stopped it. Throws InputError / OutputError.
int run_sweep_command(const ScenarioSource& src, const SweepArgs& a,
                      const std::function<void(const std::string&)>& emit);

// Merges the shard files into the whole sweep's document, written in `format`.
int run_merge_command(const std::vector<std::string>& inputs, const std::string& format,
                      const std::function<void(const std::string&)>& emit);

}  // namespace fleetsim::cli
