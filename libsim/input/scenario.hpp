// Scenario files: YAML in, validated immutable parameters out. Every error names the file,
// line and column (or the --set override) and says what was expected.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/error.hpp"
#include "catalog/capacity.hpp"
#include "catalog/catalog.hpp"
#include "core/params.hpp"
#include "input/profile.hpp"
#include "input/trace.hpp"

namespace fleetsim {

struct DistSpec {
  DistKind kind = DistKind::fixed;
  double a = 0, b = 0;
  std::vector<double> values, cdf;  // empirical
  std::string describe;             // e.g. "lognormal(median=1020, p99=7000)"
};

// Devices the pool's owner bought (pricing.owned) or bought and keeps in a colocation facility
// (pricing.colocated) instead of renting them: docs/model.md, "Owning and colocating".
struct OwnershipSpec {
  enum class Kind { rented, owned, colocated } kind = Kind::rented;
  int replicas = 0;           // replicas on owned devices; more are rented on demand
  double node_capex_usd = 0;  // one node: its devices, host and network share
  double refresh_years = 0;   // straight-line amortization period
  double busy_kw_per_device = 0, idle_kw_per_device = 0, host_kw_per_node = 0;
  double pue = 1, usd_per_kwh = 0;        // energy: facility overhead and price
  double space_usd_per_node_month = 0;    // owned: rack space, network, support
  double usd_per_kw_month = 0;            // colocated: contracted power, cooling included
  double rack_kw = 0;                     // facility: power one rack delivers (0: no limit)
  int racks = 0;                          // racks available
  int years = 0;                          // the multi-year view
  double rent_price_change_per_year = 0;  // how on-demand prices move each year, for that view
  double repair_days = 0;                 // a failed device is back after this long (0: replaced at once)
  int spares = 0;                         // devices on the shelf to swap in meanwhile
  // a newer device to compare per 1M tokens, year by year (libsim/cost/refresh.hpp): the same
  // scenario with this pool's replicas on it, as the YAML overrides that make it
  struct Newer {
    std::string device;
    int replicas = 0;
    int tensor_parallel = 0;  // 0: the pool's
    double node_capex_usd = 0;
    double capex_change_per_year = 0;  // its price the year it is bought: x (1 + this)^(year - 1)
    double busy_kw_per_device = 0, idle_kw_per_device = 0;
    std::vector<std::string> paths, values;  // overrides that put the pool on it
    Location where;                          // `newer:` in the scenario, for errors in the variant
  } newer;
  bool has_newer() const { return !newer.device.empty(); }
  bool owned() const { return kind != Kind::rented; }
};

// One pool of identical replicas.
struct PoolSpec {
  std::string name;
  DeviceSpec device;      // what one replica sees (a slice, for a MIG partition)
  std::string partition;  // MIG profile, or empty for whole devices
  int time_slicing = 1;   // replicas taking turns on one device (no memory isolation)
  int mps_clients = 1;    // replicas running at once on one device under an MPS server (shared fate)
  double mps_active_thread_percentage = 100;  // each MPS client's cap on the device's SMs
  int shared_by() const {
    return time_slicing * mps_clients;
  }  // replicas sharing one device's price (one of the two is 1)
  int replicas_per_device = 1;
  ModelSpec model;
  std::string weight_dtype, kv_dtype;
  std::string expert_weight_dtype;  // routed experts' dtype (MoE); empty: weight_dtype
  int tp = 1, pp = 1, ep = 1;       // tensor, pipeline and expert parallelism: a replica is tp x pp devices
  int dp = 1;  // data-parallel attention: the replicas are ranks of engines of dp ranks sharing the experts
  double network_gb_s = 50, network_latency_us = 20;  // between nodes, per device
  int devices() const { return tp * pp; }

  // engine
  EngineKind engine_kind = EngineKind::vllm;
  std::vector<std::string> engine_assumed;  // settings the scenario left to the engine's defaults
  Batching batching = Batching::continuous;
  int max_num_seqs = 0, max_batched_tokens = 0, kv_block_tokens = 0;
  double gpu_memory_utilization = 0, kv_watermark = 0;
  double runtime_overhead_gib = -1, activation_gib = -1;  // < 0: modelled
  double cuda_context_gib =
      0;  // one CUDA context's device storage, outside the engine's budget (counted on shared devices)
  double device_context_gib() const;  // the contexts a shared device holds: one per time-sliced replica, one MPS server
  bool enforce_eager = false;         // no CUDA graphs: their memory is not reserved
  bool async_scheduling = true;       // the next step is scheduled while this one runs (vLLM 0.14+ default)
  int max_batch = 0;
  double batch_window_s = 0;
  PerfKind perf_model = PerfKind::roofline;
  std::shared_ptr<const PerfProfile> profile;  // calibrated: the fitted coefficients and their provenance
  double client_ttft_s = 0;                    // added to every TTFT and e2e (the client's own time)
  double client_s_per_input_token = 0, client_s_per_output_token = 0;  // the API server, per token
  bool engine_side = false;  // engine.latency_at: engine: latencies as the engine logs them, no client stage
  double mfu = 0, mbu = 0, step_overhead_s = 0;
  double step_base_s = 0, per_prefill_token_s = 0, per_decode_seq_s = 0, per_context_token_s = 0;
  HostParams host{};  // engine.host: the host CPU stage (cores 0: none)

  // fleet
  int replicas = 0;  // at the start
  int min_replicas = 0, max_replicas = 0, headroom_replicas = 0;
  Router router = Router::least_outstanding;
  int queue_limit = 0;
  double usd_per_hour = 0;
  AutoscaleParams autoscale{};
  ColdStartParams cold{};
  // failures and pricing
  bool crash_on_kv_exhausted = false;
  bool prefix_caching = true;
  // engine.prefix_cache: {scope: replica, max_tokens}: a bounded LRU cache of a trace's hashed
  // blocks in each replica's free KV (else the unbounded pool-wide one); the block size is the
  // trace's (set once the classes are read)
  bool cache_per_replica = false;
  int64_t cache_max_tokens = 0;  // 0: as much as the KV cache holds
  double cache_cpu_gib = 0;      // a host-memory tier per replica behind it (0: none)
  // a store the pool's replicas share behind both (0 GiB: none), over the network
  double cache_remote_gib = 0, cache_remote_gb_s = 0, cache_remote_latency_us = 0;
  int cache_block_tokens = 0;
  // engine.speculative: a draft model of `spec_tokens` tokens per step, each accepted with the
  // conditional probabilities `spec_acceptance` (position by position)
  int spec_tokens = 0;
  std::vector<double> spec_acceptance;
  // disaggregation: this pool computes prompts and sends their KV to decode_pool (an index into
  // Scenario::pools; -1: it serves whole requests), each transfer taking latency + bytes / bandwidth
  int decode_pool = -1;
  std::string kv_link;  // the link's kind as the scenario named it (network, scale_up, pcie) or "custom"
  double kv_link_gb_s = 0, kv_link_latency_us = 0;  // per lane: one device of each side
  int kv_link_lanes = 1;                            // devices sending in parallel: min of the two sides
  double kv_bytes_per_token = 0;                    // the whole replica's KV of one prompt token
  double kv_window_bytes_per_token = 0;  // and of its sliding-window layers, for its last sliding_window tokens
  ModelSpec spec_draft;                  // a draft model, or heads (engine.speculative.draft_layers) as one
  int spec_heads = 0;                    // the heads' layers (0: a draft model)
  // heads that end in the target's LM head: its parameters, read every draft step but held once
  double spec_shared_head_params = 0;
  double spec_tokens_per_step = 1;
  int lora_adapters = 0, lora_rank = 16;  // fine-tuned variants served by one replica (consolidation)
  double lora_step_overhead = 0.15;
  double lora_gib_per_device() const;  // resident adapters' memory on each device
  double spot_discount = 0, spot_interruptions_per_hour = 0, mtbf_hours = 0;
  // slowdowns (docs/model.md, "Slowdowns"): fleet.faults.cpu_fallback and fleet.thermal
  double fallback_share = 0, fallback_slowdown = 50, fallback_at_s = 0;
  double thermal_tau_s = 0, thermal_above = 0, thermal_clock_drop = 0;
  bool cpu_fallback() const { return fallback_share > 0; }
  bool thermal() const { return thermal_tau_s > 0; }
  int committed_replicas = 0;  // owned pools: the owned replicas (the core tracks both alike)
  double committed_discount = 0;
  OwnershipSpec ownership;
  bool node_billing = false;  // whole nodes are paid for (always so for owned devices)
  // an autoscaled pool billed by the node: the cluster autoscaler's side (fleet.nodes)
  double node_unneeded_s = 600;    // an empty node is removed after this long
  int pinned_nodes = 0;            // nodes a pod without a device request keeps from removal
  int max_nodes = 0;               // nodes the cluster can add for this pool (0: unlimited)
  bool empty_nodes_first = false;  // scale-down order: the emptiest node's replicas first
  bool nodes_tracked() const { return node_billing && autoscale.enabled && !ownership.owned(); }
  // Packing replicas onto nodes of device.devices_per_node devices (a MIG slice or a time-sliced
  // share counts as its part of a device): the nodes n replicas need, and the billed units on them.
  double unit_device_share() const;  // a billed unit's share of a device: a MIG slice a part, else 1
  double units_per_replica() const;  // billed units (device-hours per replica-hour) one replica uses
  double units_per_node() const;     // billed units one node holds
  int replicas_per_node() const;     // whole replicas one node holds (1 for a replica wider than a node)
  int nodes_per_replica() const;     // nodes a replica wider than a node spans (else 1)
  int nodes_for(int replicas) const;
  bool spot() const { return spot_interruptions_per_hour > 0 || spot_discount > 0; }
  // what a replica-hour beyond commitments costs (time-sliced replicas share their device's price)
  // (a replica of tp x pp devices pays for each)
  double hourly_usd() const { return usd_per_hour * devices() * (1.0 - spot_discount) / shared_by(); }

  Capacity capacity;  // per device of a replica
  PoolParams params() const;
  void set_parallel_work(PoolParams& p) const;
};

// One class of requests.
struct RequestClassSpec {
  std::string name;
  std::string team;
  int pool = 0;  // index into Scenario::pools
  ArrivalKind arrival = ArrivalKind::poisson;
  double rate_per_s = 0, cv = 1, peak_to_mean = 1, period_s = 86400, peak_at_s = 0, time_scale = 1;
  double start_s = 0, stop_s = 0;
  std::string trace_path;
  std::shared_ptr<const TraceData> trace;  // shared between configurations of a sweep
  DistSpec prompt, output;
  double mean_prompt_tokens = 0, mean_output_tokens = 0;
  bool checkpointed = false;
  int max_retries = 3;
  int priority = 0;  // higher is admitted first
  double prefix_share = 0;
  int prefix_tokens = 0;
  double response_cache_hit_rate = 0, response_cache_latency_s = 0.002;
  // burst: requests; concurrency: closed-loop users, their think time and a rejected user's pause
  int clients = 0;
  int64_t max_requests = 0;  // concurrency: requests in all (0: until stop_s)
  double ramp_s = 0;         // concurrency: users' first sends spread evenly over this long
  DistSpec think;
  double think_mean_s = 0, retry_after_s = 1.0;
  // concurrency: users run sessions of `turns` turns, each prompt the conversation so far plus a
  // new message (prompt_tokens)
  bool sessions = false;
  DistSpec turns;
  double mean_turns = 0;
  // trace: replayed as sessions (workload.arrival.sessions): a follow-up waits for the answer it
  // replies to (core/trace_sessions.hpp)
  bool trace_sessions = false;
  // goodput bounds (infinity: none)
  double good_ttft_s = kInf, good_tpot_s = kInf, good_e2e_s = kInf;
  ClassParams params() const;  // pointers into this object
};

struct Scenario {
  std::string name, description;
  std::string source;                  // file the scenario came from
  std::vector<std::string> inputs;     // files it read: traces, length columns, profiles
  std::vector<std::string> overrides;  // "path=value" overrides applied, in order
  uint64_t seed = 0;
  double duration_s = 0, warmup_s = 0;
  std::vector<PoolSpec> pools;            // at least one
  std::vector<RequestClassSpec> classes;  // at least one
  bool multi = false;                     // written with pools: / classes: (reports then list them)

  // The immutable core parameters; arrays point into this Scenario, which must outlive them.
  SimParams params() const;
};

// One change to a scenario before validation: a --set, or one value of a sweep parameter.
struct Override {
  std::string path;   // dotted scenario path, e.g. fleet.replicas
  std::string value;  // the value as YAML text
  Location origin;    // where it came from, for errors
  std::string label;  // "path=value", as reports show it
};

// "a.b=v" -> an Override located at "--set a.b=v". Throws InputError.
Override parse_set(const std::string& text);
std::vector<Override> parse_sets(const std::vector<std::string>& texts);

// A scenario parsed once and instantiated per configuration (thread-safe: each instantiation
// parses its own copy; traces and derived means are cached and shared).
class ScenarioSource {
 public:
  static ScenarioSource from_file(const std::string& path);
  static ScenarioSource from_text(const std::string& text, const std::string& name, const std::string& base_dir);
  static ScenarioSource builtin_default();
  // The same source with overrides applied before every instantiation's own (e.g. --set).
  ScenarioSource with_overrides(std::vector<Override> base) const;
  const std::vector<Override>& base_overrides() const { return base_; }
  Scenario instantiate(const std::vector<Override>& overrides = {}) const;
  // One configuration of this source's sweep: as instantiate, but base overrides of the sweep
  // section are left out (a configuration never reads it; a long swept list would otherwise be
  // parsed again, and carried in the configuration's overrides, once per configuration).
  Scenario instantiate_configuration(const std::vector<Override>& overrides) const;
  const std::string& text() const;
  const std::string& name() const;
  const std::string& base_dir() const;

  struct Impl;

 private:
  std::shared_ptr<Impl> impl_;
  std::vector<Override> base_;
};

// Load a scenario from a file, or from text (name is used in messages), applying `--set`
// overrides ("path.to.key=value") before validation. Throws InputError.
Scenario load_scenario_file(const std::string& path, const std::vector<std::string>& overrides = {});
Scenario load_scenario_text(const std::string& text, const std::string& name, const std::string& base_dir,
                            const std::vector<std::string>& overrides = {});

// The built-in default scenario (scenarios/chat-default.yaml, compiled in).
Scenario load_default_scenario(const std::vector<std::string>& overrides = {});
const char* default_scenario_text();

const char* router_name(Router r);
const char* batching_name(Batching b);
const char* arrival_name(ArrivalKind a);
const char* perf_name(PerfKind p);
// A pool's step-time model by name: "physics" where its coefficients are the ones fitted on every
// device (a profile of no one device), else perf_name of its kind.
const char* perf_name(const PoolSpec& p);

}  // namespace fleetsim
