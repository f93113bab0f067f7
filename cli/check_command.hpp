// `fleetsim check`: budgets for CI pipelines (exit 0 pass, 1 violated, 2 input error).
#pragma once
#include <functional>
#include <string>
#include <vector>

namespace fleetsim::cli {

struct CheckArgs {
  std::string scenario;  // scenario file ("" : the built-in default)
  std::string budgets;   // budgets file ("" : the scenario's own budgets: section)
  std::string baseline;  // another version of the scenario, to report what moved
  std::string junit, markdown;
  std::vector<std::string> sets;
  std::string format = "table";
  int threads = 0;
};

// Writes the result through `emit`; returns the exit code. Throws InputError / OutputError.
int run_check(const CheckArgs& a, const std::function<void(const std::string&)>& emit);

}  // namespace fleetsim::cli
