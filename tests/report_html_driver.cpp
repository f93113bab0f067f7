// Writes the HTML report of each JSON document given: report_html_driver IN OUT [IN OUT ...].
// The browser test renders what it writes (the same code path as `fleetsim report`).
#include <cstdio>
#include <exception>

#include "cli/report_command.hpp"
#include "libsim/base/error.hpp"

int main(int argc, char** argv) {
  if (argc < 3 || argc % 2 == 0) {
    std::fprintf(stderr, "usage: report_html_driver INPUT.json OUTPUT.html [INPUT.json OUTPUT.html ...]\n");
    return 2;
  }
  try {
    for (int i = 1; i + 1 < argc; i += 2) {
      fleetsim::cli::ReportArgs a;
      a.input = argv[i];
      a.output = argv[i + 1];
      fleetsim::cli::run_report_command(a);
    }
  } catch (const fleetsim::InputError& e) {
    std::fprintf(stderr, "%s\n", e.one_line().c_str());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "report_html_driver: %s\n", e.what());
    return 1;
  }
  return 0;
}
