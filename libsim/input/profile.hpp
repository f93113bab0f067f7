// Calibrated performance profiles: the fitted coefficients of the calibrated step-time model
// (docs/model.md, "Calibrated step time") for a device, and optionally one model and tensor-
// parallel degree, with where they came from and how well they predict data they were not fitted
// on. Shipped profiles live in profiles/ and are compiled in; a scenario names one with
// engine.perf_profile (a shipped name or a file path), and `fleetsim fit` writes new ones.
#pragma once
#include <string>
#include <vector>

#include "catalog/catalog.hpp"
#include "core/params.hpp"

namespace fleetsim {

// Each time term is a factor times the work at the device's peak rate: weight_factor = 2 means
// weights stream at half the peak bandwidth. Keeping factors rather than rates lets a profile
// fitted on one model carry to another on the same device.
struct PerfCoefficients {
  double step_s = 0;            // fixed per step (scheduler, launch)
  double per_seq_s = 0;         // per sequence in the step (scheduling, sampling, bookkeeping)
  double weight_factor = 0;     // x weight bytes / peak bandwidth
  double matmul_factor = 0;     // x GEMM FLOPs / peak FLOP/s (of the weights' dtype)
  double kv_factor = 0;         // x KV bytes / peak bandwidth
  double attention_factor = 0;  // x prefill-attention FLOPs / peak BF16 FLOP/s
  double client_ttft_s = 0;     // what the benchmark client adds to TTFT (and e2e)
  double comm_factor = 1;       // x the modelled collectives (tensor parallelism's all-reduces, ...)
  // The physics terms (docs/model.md, "Physics step time"), neutral in a profile that lacks them:
  double layer_s = 0;                   // fixed per layer per step (kernel launches, norms, rotary)
  double gemm_ramp_tokens = 0;          // GEMM efficiency e(m) = e_max m / (m + this): tokens at half peak
  double moe_factor = 1;                // x the routed experts' GEMM time (grouped GEMM vs dense)
  double client_s_per_input_token = 0;  // API server: tokenization, per prompt token, in TTFT and e2e
  double tp_step_s = 0;                 // fixed per step of a replica of several ranks (the executor's broadcast)
  // With asynchronous scheduling (vLLM 0.14 and later by default) the scheduler prepares the next
  // step while the device runs this one: these replace step_s and per_seq_s (both 0: not fitted,
  // step_s and per_seq_s apply).
  double async_step_s = 0;
  double async_per_seq_s = 0;
  double client_s_per_output_token = 0;  // API server: detokenization and streaming, per output token, in e2e
  double eager_step_s = 0;               // added per step when the engine runs without CUDA graphs
  // Not fitted: how the terms compose (PerfParams::kernel_overlap). Formats 4 and earlier were
  // fitted as a plain sum, and keep meaning what they meant.
  bool kernel_overlap = true;
};

// Names of the fitted coefficients, in the order `fleetsim fit` solves for them: the first
// kProfileBaseTerms are those of a per-device or per-configuration fit; `fit --global` adds the
// physics terms after them.
constexpr int kProfileBaseTerms = 8;
constexpr int kProfileTerms = 16;
// The version of the profile file format this build reads and writes (`format:` in the file).
constexpr int kProfileFormat = 5;
const char* const* profile_term_names();
// The largest value a profile may give term i (its least is 0): seconds up to a minute, factors
// up to 10^4.
double profile_term_max(int i);
double& profile_term(PerfCoefficients& c, int i);
double profile_term(const PerfCoefficients& c, int i);

// How well a profile predicts: median and worst |relative error| per metric on the points it was
// fitted on and on points held out of the fit (NaN: no such points).
struct ProfileError {
  int points = 0;
  double median[4], worst[4];  // mean_ttft, mean_tpot, mean_e2e, p99_ttft
  ProfileError() {
    for (int k = 0; k < 4; ++k) median[k] = worst[k] = __builtin_nan("");
  }
};
constexpr const char* kProfileMetrics[4] = {"mean_ttft", "mean_tpot", "mean_e2e", "p99_ttft"};
// A fit to per-step timings (`fleetsim fit --steps`) measures its error on step times, not on
// latencies: median |relative error| of the steps it was fitted on, and of steps held out of it.
struct StepTimeError {
  int steps = 0;
  double median = __builtin_nan(""), held_out = __builtin_nan("");
};

struct PerfProfile {
  std::string name;          // e.g. h100-sxm-80gb/llama-3.1-8b/tp1
  std::string device;        // catalog device; "": any (the physics coefficients)
  std::string model;         // catalog model, or empty: any model on the device
  int tp = 0;                // 0: any
  std::string weight_dtype;  // of the runs it was fitted on ("bf16", "fp8"); "": not recorded (any)
  std::string engine;        // e.g. "vllm 0.12.0"
  PerfCoefficients c;
  std::string data;  // what it was fitted on (file and rows)
  std::string method;
  ProfileError fit, held_out;
  ProfileError cross_validated;  // physics: each device's points predicted by a fit without that device
  StepTimeError step_time;       // a fit to per-step timings
  std::string origin;            // "builtin" or the file it was read from
};

// A profile by shipped name or file path (relative paths against base_dir). Throws InputError.
PerfProfile load_profile(const std::string& name_or_path, const std::string& base_dir);
// Parse a profile from YAML text; `where` names it in errors.
PerfProfile parse_profile(const std::string& text, const std::string& where);
std::string profile_yaml(const PerfProfile& p);

// The shipped profiles, and the one fitted on runs of this engine on exactly this device, model,
// tp and weight dtype, or null. Device profiles (any model) are not chosen for a pool on their own: on
// models they were not fitted on they predict worse than the roofline (docs/validation.md), so a
// scenario must name one; nor is a profile of FP8 runs applied to BF16 weights, or the reverse.
const std::vector<PerfProfile>& builtin_profiles();
// What each shipped profile was fitted on, read from the header lines profile_yaml writes, so that
// a pool finds its profile without parsing every shipped file (a test checks them against the
// parse); builtin_profile(i) parses the i-th on first use.
struct ProfileKey {
  std::string name, device, model, weight_dtype, engine;  // "" where the file says any
  int tp = 0;
};
const std::vector<ProfileKey>& builtin_profile_keys();
const PerfProfile& builtin_profile(size_t i);
// The shipped physics coefficients (profiles/physics.yaml): fitted once on every device's runs.
constexpr const char* kPhysicsProfile = "physics";
const PerfProfile& physics_profile();
const PerfProfile* find_builtin_profile(const std::string& device, const std::string& model, int tp,
                                        const std::string& weight_dtype, const std::string& engine = "vllm");

// Whether `p`'s measured error speaks for a pool of this model, tp and weight dtype: it was
// fitted on exactly that (a field the profile leaves open matches). Else "" and `why` says what
// differs. async_scheduling: 1 or 0 whether the pool schedules ahead (checked against a vLLM
// profile that names its version), -1 not asked.
bool profile_applies(const PerfProfile& p, const std::string& model, int tp, int pp, const std::string& weight_dtype,
                     std::string& why, const std::string& engine = "vllm", int async_scheduling = -1);
// The engine a profile was fitted on, without its version ("vllm 0.12.0" -> "vllm"; "" -> "vllm").
std::string profile_engine(const PerfProfile& p);

// What the physics terms need of a pool besides the device's peak rates.
struct StepFacts {
  double peak_flops_per_s = 0, bf16_flops_per_s = 0, peak_bytes_per_s = 0;
  bool enforce_eager = false;
  bool async_scheduling = false;      // the engine schedules the next step while this one runs
  int layers = 0;                     // of the whole model (a step traverses every stage)
  int ranks = 1;                      // devices of a replica (tp x pp): several are driven by one executor
  double dense_flops_per_token = 0;   // per device: 2 x the parameters every token runs through / tp
  double expert_flops_per_token = 0;  // per device: 2 x the routed experts' parameters a token runs / tp
  double all_expert_flops = 0;        // per device: 2 x all routed experts' parameters / tp (each a GEMM)
};

// The core's step-time parameters from a profile, for a device's peak rates.
void apply_profile(const PerfCoefficients& c, const StepFacts& f, PerfParams& out);

}  // namespace fleetsim
