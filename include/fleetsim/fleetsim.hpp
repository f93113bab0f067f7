// fleetsim's public C++ API: load a scenario, run it, sweep it, size it. Results come as the
// documented JSON (docs/output-schema.md) and as a plain struct of the headline figures. Only the
// standard library appears here; errors are fleetsim::Error carrying the located message.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace fleetsim {

// An input error ("file:line:column: error: what (why) suggestion"), or an output failure.
class Error : public std::runtime_error {
 public:
  enum class Kind { input, output, failure };
  Error(Kind kind, const std::string& message) : std::runtime_error(message), kind_(kind) {}
  Kind kind() const { return kind_; }

 private:
  Kind kind_;
};

// A validated, immutable scenario. Cheap to copy (shared).
class ScenarioHandle {
 public:
  // `overrides` are "path=value" changes applied before validation, as `fleetsim --set`.
  static ScenarioHandle from_file(const std::string& path, const std::vector<std::string>& overrides = {});
  // `name` is used in error locations; relative trace paths resolve against `base_dir`.
  static ScenarioHandle from_yaml(const std::string& yaml, const std::vector<std::string>& overrides = {},
                                  const std::string& name = "<yaml>", const std::string& base_dir = ".");
  static ScenarioHandle builtin_default(const std::vector<std::string>& overrides = {});

  const std::string& name() const;
  bool has_sweep() const;  // a top-level sweep: section

  struct Impl;
  const Impl& impl() const {
    if (!impl_) throw Error(Error::Kind::failure, "fleetsim: an empty ScenarioHandle (moved from)");
    return *impl_;
  }
  static ScenarioHandle adopt(std::shared_ptr<const Impl> impl);

 private:
  ScenarioHandle() = default;  // a handle holds a scenario: made only by from_file, from_yaml, ...
  std::shared_ptr<const Impl> impl_;
};

// The headline figures of a run (seconds and dollars); every figure is also in the JSON.
struct RunSummary {
  int64_t arrived = 0, completed = 0, rejected = 0;
  double ttft_p50_s = 0, ttft_p99_s = 0, tpot_mean_s = 0, e2e_p99_s = 0;
  double requests_per_s = 0, output_tokens_per_s = 0;
  double busy_fraction = 0, device_hours = 0, total_usd = 0;
  // every dollar over every token in and out (the sweep's default objective), over every request;
  // then the input's and the output's shares of the dollars, each over its own tokens
  double per_million_tokens_usd = 0, per_request_usd = 0;
  double per_million_input_tokens_usd = 0, per_million_output_tokens_usd = 0;
};

struct RunResult {
  std::string json;  // the run document (docs/output-schema.md)
  RunSummary summary;
};

// One simulation: replication `replication` of the scenario's seed (or of `seed`, when set).
RunResult run(const ScenarioHandle& s, uint32_t replication = 0);
RunResult run(const ScenarioHandle& s, uint64_t seed, uint32_t replication);

struct SweepSettings {
  int threads = 0;         // 0: every hardware thread; at most 4096
  bool allow_cuda = true;  // let the backend be chosen (CUDA where this build has it, a GPU is present
                           // and it beats the threads); false: CPU threads
  // Configurations done and in all, about every 200 ms from a helper thread and once at the end;
  // may be empty. An exception it throws stops the sweep and sweep_json throws it as an Error.
  std::function<void(uint64_t done, uint64_t total)> progress;
};

// The scenario's sweep: section, run whole; the sweep document (rows, summary, Pareto frontier).
std::string sweep_json(const ScenarioHandle& s, const SweepSettings& settings = {});

struct CapacityQuery {
  std::string model, device;
  int64_t context_tokens = 0;  // 0: 4096, or the model's context window if shorter
  std::string weight_dtype = "bf16", kv_dtype = "bf16";
  int tensor_parallel = 1, pipeline_parallel = 1;
  double gpu_memory_utilization = 0.9;
  int max_num_seqs = 256, max_batched_tokens = 8192, kv_block_tokens = 16;
  std::string expert_weight_dtype;  // an MoE model's routed experts ("mxfp4" for gpt-oss); "": the weights'
  bool enforce_eager = false;       // no CUDA graphs: their memory is not reserved
};

struct CapacityResult {
  bool fits = false;
  double weights_gib = 0, kv_gib = 0;
  int64_t kv_capacity_tokens = 0, max_concurrent_at_context = 0;
  std::string json;  // the capacity document
};

CapacityResult capacity(const CapacityQuery& q);

// The built-in devices and models, as the `fleetsim catalog --format json` document.
std::string catalog_json();

const char* version();

}  // namespace fleetsim
