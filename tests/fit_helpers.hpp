// Benchmark and step-timing files for the `fleetsim fit` tests (test_fit_inputs.cpp,
// test_fit_profiles.cpp), and the error each read or fit ends in.
#pragma once
#include <string>

#include "cli/fit_command.hpp"
#include "helpers.hpp"
#include "libsim/calibrate/fit.hpp"

namespace fleetsim::test {

inline const char* kHeader = "model,device,tp,isl,osl,concurrency,mean_ttft_ms,mean_tpot_ms\n";
inline const char* kRow = "meta-llama/Llama-3.1-8B-Instruct,H100-SXM,1,";

// A benchmark CSV of three good rows, the first one's TTFT and TPOT replaced.
inline std::string bench_csv(const std::string& name, const std::string& ttft, const std::string& tpot = "7.5") {
  return write_temp(name, std::string(kHeader) + kRow + "512,64,1," + ttft + "," + tpot + "\n" + kRow +
                              "512,64,4,40,8.0\n" + kRow + "2048,64,2,90,8.5\n");
}

inline std::string vllm_json(const std::string& name, const std::string& ttft, int concurrency = 1) {
  return write_temp(name, R"({"model_id": "meta-llama/Llama-3.1-8B-Instruct", "max_concurrency": )" +
                              std::to_string(concurrency) +
                              R"(, "num_prompts": 10, "completed": 10, "total_input_tokens": 5120,
      "total_output_tokens": 640, "mean_ttft_ms": )" +
                              ttft + R"(, "mean_tpot_ms": 8.0})");
}

inline std::string read_error(const std::string& path, const BenchPoint& d = {}) {
  return test::input_error([&] { read_benchmarks(path, d); });
}

inline std::string steps_error(const std::string& path) {
  std::string device;
  return test::input_error([&] { read_step_samples(path, device); });
}

inline std::string fit_error(cli::FitArgs a, std::string* emitted = nullptr) {
  a.threads = 2;
  return test::input_error([&] {
    cli::run_fit(a, [&](const std::string& s) {
      if (emitted) *emitted += s;
    });
  });
}

inline std::string steps_csv(const std::string& name, int rows) {
  std::string s = "model,device,prefill_tokens,decode_seqs,decode_context_tokens,step_ms\n";
  for (int i = 1; i <= rows; ++i)
    s += "meta-llama/Llama-3.1-8B,H100-SXM," + std::to_string(100 * i) + "," + std::to_string(i) + "," +
         std::to_string(500 * i) + "," + std::to_string(5 + i) + "\n";
  return write_temp(name, s);
}

inline const std::string kTtftExpected = "expected a latency of at least 0.001 ms and at most 3600000 ms (an hour)";

}  // namespace fleetsim::test
