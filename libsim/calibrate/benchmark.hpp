// Measured benchmark points (a server, a load, what the benchmark reported) and fleetsim's
// prediction of each: the input of `fleetsim fit` and of the latency validation
// (docs/validation.md). A point becomes a one-pool scenario that runs the benchmark's load: a
// fixed number of closed-loop clients (vllm bench serve --max-concurrency, GuideLLM concurrent),
// a constant or Poisson rate, or every prompt at once (--request-rate inf).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "backend/runner.hpp"
#include "input/profile.hpp"
#include "input/scenario.hpp"

namespace fleetsim {

enum BenchMetric { kMeanTtft = 0, kMeanTpot = 1, kMeanE2e = 2, kP99Ttft = 3, kBenchMetrics = 4 };

// The most requests a point's replay sends (num_prompts, warm prompts): a fit replays every point
// many times, and published runs send thousands.
constexpr int kMaxReplayedPrompts = 1000000;

struct BenchPoint {
  std::string where;   // file:line
  std::string source;  // the row's own citation, where it has one
  std::string engine, engine_version;
  std::string model_id, device_id;  // as the data names them
  std::string model, device;        // catalog names ("" if the catalog has none)
  int tp = 1, pp = 1;
  std::string weight_dtype = "bf16";
  std::string expert_weight_dtype;  // an MoE checkpoint's own expert dtype (gpt-oss: mxfp4); "": the weights
  double isl = 0, osl = 0;
  int concurrency = 0;                           // closed loop; else rate_per_s
  double rate_per_s = 0;                         // open loop (infinity: every prompt at once)
  bool poisson = false;                          // open loop: Poisson arrivals (else evenly spaced)
  int num_prompts = 0;                           // 0: not stated; at most kMaxReplayedPrompts
  int max_num_seqs = 0, max_batched_tokens = 0;  // 0: the engine's default
  // The engine scheduled each step while the last ran: vLLM from 0.14.0 (its default since then),
  // where the version is stated; SGLang's and TensorRT-LLM's rows run on their own profiles.
  bool async_scheduling = false;
  double gpu_memory_utilization = 0;
  double network_gb_s = 0;  // the link between nodes a replica spans (0: the engine's default)
  // The replica's devices reach each other's memory (peer-to-peer); false: their collectives go
  // through the host over PCIe (GPUs in separate containers, or without a scale-up link)
  bool peer_to_peer = true;
  // Per-request lengths in the order the benchmark sent them (ShareGPT and other datasets whose
  // lengths vary); empty: every request is isl / osl long. An open-loop point replays them.
  std::vector<int32_t> req_prompt, req_output;
  // The leading requests whose prompts the server had already seen (an earlier run on the same
  // server with prefix caching on; the client's warm-up prompt): their full KV blocks are cached.
  int warm_prompts = 0;
  // Open-loop load stages run one after another, the next once the last has drained
  // (inference-perf's load stages): {requests per second, seconds}. Empty: one stage at rate_per_s.
  std::vector<std::pair<double, double>> stages;
  // Prompts that repeat (inference-perf's shared_prefix data): request n of each stage sends the
  // (n mod distinct_prompts)-th prompt of one shuffled list of distinct_prompts prompts, which
  // fall in prompt_groups groups sharing a system prompt of system_prompt_tokens. With prefix
  // caching a prompt sent before has its full KV blocks cached, and a new prompt of a group sent
  // before has its system prompt's. 0: every prompt is new.
  int distinct_prompts = 0, prompt_groups = 0, system_prompt_tokens = 0;
  double measured[kBenchMetrics];  // seconds; NaN: not reported
  std::string group;               // engine/model/device/tp[pp]: the rows a per-configuration profile covers
  std::string skip;                // why fleetsim cannot run it ("" if it can)
};

// The longest a measured latency may be (seconds): an hour per request, a minute per output token.
// Beyond that it is no measurement of a served request, and a fit would chase it to coefficients
// no profile allows.
double latency_limit_s(int metric);

// Reads measured points. By content:
//   CSV with a header naming model, device, isl, osl, concurrency or request_rate, and some of
//     mean_ttft_ms, p99_ttft_ms, mean_tpot_ms, mean_e2e_ms (tests/validation/serving_points.csv's
//     layout; tp, weight_dtype, engine, num_prompts, notes optional; key=value pairs in notes such
//     as max_num_seqs=128, warm_prompts=200, network_gb_s=25 and p2p=0 are read; a `request_lengths`
//     column names a CSV of prompt_tokens,output_tokens per request, relative to this file's folder);
//   JSON written by `vllm bench serve --save-result` (model_id, max_concurrency or request_rate,
//     num_prompts, mean_ttft_ms, ...; device, tp and lengths come from `defaults`; input_lens and
//     output_lens, where present, are the per-request lengths);
//   JSON written by GuideLLM (benchmarks[].args / metrics; the same; its synchronous strategy is
//     one client).
// A latency given (mean_ttft_ms, ...) must be a number in (0, latency_limit_s]; absent is allowed.
// Throws InputError with file:line for malformed input.
std::vector<BenchPoint> read_benchmarks(const std::string& path, const BenchPoint& defaults);

// A point's configuration and load, not its measurements: repeats of one benchmark share it, so a
// fit keeps them on one side of a fold, and with its measurements it finds the same point twice.
std::string benchmark_key(const BenchPoint& p);

// The mean of per-request lengths (0 for none).
double mean_length(const std::vector<int32_t>& v);

// The engine a source names, as fleetsim names it: vllm, sglang or trtllm (TensorRT-LLM, also
// written tensorrt-llm, tensorrt_llm or trt-llm; any case); "" for any other.
std::string engine_named(const std::string& name);

// Catalog names for the data's model and device names ("" if none).
std::string catalog_model_for(const std::string& model_id);
std::string catalog_device_for(const std::string& device_id);

// What a benchmark's data leave unsaid about its client, assumed alike for every point of a run.
struct BenchProtocol {
  int requests_per_client = 10;  // closed loop, where num_prompts is not stated: total = this x concurrency
  double client_jitter_s = 0;    // closed loop: mean of an exponential pause before each request is sent
};

// The one-pool scenario that runs a point's benchmark (YAML).
std::string benchmark_scenario_yaml(const BenchPoint& p, const BenchProtocol& proto = {});

// A point ready to simulate repeatedly with different coefficients.
struct PreparedPoint {
  const BenchPoint* point = nullptr;
  Scenario scenario;
};
PreparedPoint prepare_point(const BenchPoint& p, const BenchProtocol& proto = {});

// Sets `skip` on points whose scenario fleetsim rejects (the model does not fit, ...), with why.
void mark_unsimulatable(std::vector<BenchPoint>& points, const BenchProtocol& proto = {});

// Predicted metrics (seconds) of a prepared point under coefficients c (null: the scenario's own
// step-time model), averaged over `replications`.
struct Prediction {
  double v[kBenchMetrics];
  bool ok = true;  // false: the run did not finish (overloaded, event budget)
};
Prediction predict_point(const PreparedPoint& pp, const PerfCoefficients* c, HostWorkspace& ws, int replications = 1);

// |predicted - measured| / measured, NaN where either is missing.
double relative_error(double predicted, double measured);

}  // namespace fleetsim
