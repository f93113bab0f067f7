// `fleetsim fit`: a calibrated performance profile from measured data.
#pragma once
#include <functional>
#include <string>
#include <vector>

namespace fleetsim::cli {

struct FitArgs {
  std::vector<std::string> inputs;  // benchmark results (CSV, vllm bench JSON, GuideLLM JSON) or step timings
  bool steps = false;               // inputs are per-step timings
  bool global = false;              // the physics coefficients: any device and model (fit --global)
  std::string device, model, engine = "vllm";
  int tp = 0;          // 0: not given (results that do not say run at tp 1)
  std::string name;    // the profile's name (default: device/model/tpN)
  std::string output;  // profile file to write ("" or "-": standard output)
  std::string format = "table";
  int folds = 5;  // 0: no held-out error; else 2 to 50
  int threads = 0;
  int requests_per_client = 10;
};

// Writes through `emit` (stdout, with the CLI's broken-pipe handling); throws InputError.
int run_fit(const FitArgs& a, const std::function<void(const std::string&)>& emit);

}  // namespace fleetsim::cli
