// Immutable simulation parameters: plain structs, validated and derived on the host before a
// run, then read by the core on the host or (mirrored) on the device. Arrays are raw pointers to
// memory owned elsewhere (a host vector, or its device copy), so the struct is trivially copyable.
// Pools and request classes live in fixed-capacity arrays: no allocation, no indirection.
#pragma once
#include "hd.hpp"

namespace fleetsim {

constexpr int32_t kMaxPools = 8;
constexpr int32_t kMaxClasses = 8;
// Least-outstanding pools of this many replica slots or more keep an index instead of scanning
// every replica per arrival (below it the scan is as cheap as keeping the index).
constexpr int32_t kLoIndexReplicas = 16;

enum class DistKind : int32_t { fixed = 0, uniform = 1, lognormal = 2, geometric = 3, empirical = 4, exponential = 5 };

struct DistParams {
  DistKind kind;
  double a;              // fixed: value; uniform: low; lognormal: mu; geometric, exponential: mean
  double b;              // uniform: high; lognormal: sigma; geometric: 1 / log(1 - 1/mean)
  const double* values;  // empirical support, ascending cdf
  const double* cdf;
  int64_t n;
};

// Open loop: poisson, gamma, diurnal, trace, constant (evenly spaced) and burst (`clients`
// requests at once). Closed loop: concurrency (`clients` users, each sending its next request when
// its previous one ends, after a think time), as benchmarks run at a fixed concurrency.
enum class ArrivalKind : int32_t {
  poisson = 0,
  gamma = 1,
  diurnal = 2,
  trace = 3,
  constant = 4,
  burst = 5,
  concurrency = 6
};

struct ArrivalParams {
  ArrivalKind kind;
  double rate_per_s;         // mean rate (poisson, gamma, diurnal)
  double gamma_shape;        // 1 / cv^2
  double gamma_scale_s;      // cv^2 / rate
  double diurnal_amplitude;  // rate(t) = rate (1 + amplitude cos(2 pi (t - peak_at) / period))
  double diurnal_period_s;
  double diurnal_peak_at_s;
  double start_s;           // no arrivals before (a batch job that starts later)
  double stop_s;            // no arrivals after (and the run's duration_s)
  const double* trace_t_s;  // arrival times, ascending, already scaled
  const int32_t* trace_prompt;
  const int32_t* trace_output;
  const int32_t* trace_cached;  // prompt tokens an unbounded prefix cache holds (null: none)
  int64_t trace_n;
  // a trace's hashed prompt blocks (Mooncake hash_ids, renumbered densely): request i's are
  // trace_blocks[trace_block_off[i], trace_block_off[i + 1]), each of trace_block_tokens tokens
  const int32_t* trace_blocks;
  const int64_t* trace_block_off;
  int32_t trace_block_tokens;
  // sessions read from the trace (trace_sessions.hpp; null: every row is sent at its time): row i
  // follows up trace_parent[i] and is followed up by trace_child[i] (-1: none); trace_follow_ups
  // rows have a parent
  const int32_t* trace_parent;
  const int32_t* trace_child;
  int64_t trace_follow_ups;
  int32_t clients;  // burst: requests; concurrency: users
  double ramp_s;    // concurrency: user i first sends at start_s + ramp_s x i / clients
  int64_t
      max_requests;  // concurrency: requests sent in all, then users stop (0: no limit), as a benchmark's num_prompts
};

enum class Batching : int32_t { continuous = 0, fixed_batch = 1 };
// session_affinity: a session's turns go to the replica that served its last turn (its history is
// cached there), else as least_outstanding. prefix_aware: the replica whose bounded prefix cache
// holds most of the request's leading blocks, weighed against its queue (routing.hpp).
enum class Router : int32_t {
  round_robin = 0,
  least_outstanding = 1,
  central_queue = 2,
  session_affinity = 3,
  prefix_aware = 4
};
enum class PerfKind : int32_t { roofline = 0, linear = 1, calibrated = 2 };

// What one step costs. Roofline: overhead + max(FLOPs / flops_per_s, bytes / bytes_per_s).
// Linear: overhead + per_prefill_token * p + per_decode_seq * n + per_context_token * ctx.
// Calibrated (a fitted profile, docs/model.md "Calibrated step time"): terms, each a fitted
// coefficient times the step's work: overhead + per_seq S + max(weight bytes, GEMM FLOPs) +
// max(KV bytes, prefill-attention FLOPs), each kernel bound by the longer of its two times
// (kernel_overlap; profiles of format 4 and earlier add all six).
struct PerfParams {
  PerfKind kind;
  double overhead_s;
  double flops_per_s;  // peak x mfu
  double bytes_per_s;  // bandwidth x mbu
  double per_prefill_token_s;
  double per_decode_seq_s;
  double per_context_token_s;
  double per_seq_s;          // calibrated: scheduling, sampling and bookkeeping per sequence in the step
  double weight_s_per_byte;  // calibrated: per weight byte read
  double matmul_s_per_flop;  // calibrated: per GEMM FLOP
  double kv_s_per_byte;      // calibrated: per KV byte read or written
  double attn_s_per_flop;    // calibrated: per prefill-attention FLOP
  double comm_factor;        // calibrated: x the modelled collectives of a replica of several devices
  // calibrated: how the terms compose. 1: a GEMM streams its weights while it computes and
  // attention reads the KV while it computes, so each kernel takes the longer of its two times;
  // 0: every term adds (profiles of format 4 and earlier)
  int32_t kernel_overlap;
  double client_ttft_s;              // HTTP, tokenization and detokenization a client sees in its TTFT (any kind)
  double client_s_per_input_token;   // the API server's tokenization, per prompt token: in TTFT and e2e
  double client_s_per_output_token;  // its detokenization and streaming, per output token: in e2e
};

// Work per step, from the model architecture.
struct WorkParams {
  double matmul_flops_per_token;  // 2 x parameters
  double attn_flops_per_pair;     // 4 x layers x heads x head_dim, per (query, key) pair of a decode step
  // a prefill's pairs: the same, except under MLA, which prefills as multi-head attention over
  // up-projected keys and values (smaller heads than the latent ones decode attends over), after
  // up-projecting the context it attends to (GEMM FLOPs per context token)
  double prefill_attn_flops_per_pair;
  double context_upproj_flops_per_token;
  double weight_bytes;        // read once per step (an MoE model: its dense part)
  double kv_bytes_per_token;  // read per context token, written per new token
  // sliding-window layers: a fixed cost per sequence, once its context passes the window
  double window_flops_per_token;  // attention FLOPs of one new token over a full window
  double window_bytes_per_seq;    // KV bytes of a full window, read once per step
};

// A replica of tp x pp devices (docs/model.md, "Parallelism"). A step is one traversal of the
// pipeline by each of m = min(pp, sequences) micro-batches; per traversal it pays collectives
// whose cost is a latency plus a per-token time (bytes per token / link bandwidth).
struct ParallelParams {
  int32_t tp;         // tensor-parallel degree
  int32_t pp;         // pipeline stages
  int32_t ep;         // expert-parallel degree (1, or tp: experts spread over the tensor-parallel group)
  double allreduces;  // per traversal: 2 per layer (1 for an expert-parallel MoE layer)
  double allreduce_latency_s;
  double allreduce_s_per_token;  // 2 (tp - 1) / tp x hidden x activation bytes / link bandwidth
  double handoffs;               // per traversal: pp - 1 stage boundaries
  double handoff_latency_s;
  double handoff_s_per_token;  // hidden x activation bytes / bandwidth between stages
  double all_to_alls;          // per traversal: dispatch and combine of each expert-parallel MoE layer
  double all_to_all_latency_s;
  double all_to_all_s_per_token;  // experts_per_token x hidden x bytes x (ep - 1) / ep^2 / bandwidth
};

// Mixture of experts: a step reads only the experts its tokens are routed to. With uniform
// routing of k of E experts per token, a share 1 - (1 - k/E)^B of them is touched by B tokens.
struct MoeParams {
  double expert_bytes;  // routed experts' weights per device (0: a dense model)
  double miss_log;      // log(1 - k/E): log of the chance that one token misses a given expert
};

enum class ScaleSignal : int32_t { queue_depth = 0, inflight = 1, ttft = 2, busy = 3, host_cpu = 4 };

// How a new replica becomes ready: a node, the image, the weights (downloaded, or read from a
// node-local cache), loading them into device memory, warm-up. Billed from the first stage.
struct ColdStartParams {
  double provision_s;  // medians; each stage is lognormal with its sigma (0: a fixed time)
  double provision_sigma;
  double image_pull_s;
  double image_pull_sigma;
  double fetch_bytes;    // the whole checkpoint: each node of a replica fetches all of it
  double weights_bytes;  // one device's shard: what each device loads
  double download_bytes_per_s;
  double cache_hit_probability;
  double cache_bytes_per_s;
  double load_bytes_per_s;
  double warmup_s;
  double warmup_sigma;
};

// A Kubernetes-HPA/KEDA-like autoscaler.
struct AutoscaleParams {
  int32_t enabled;
  ScaleSignal signal;
  double target;               // per replica (queue_depth, inflight) or a level (ttft seconds, busy, host_cpu)
  double interval_s;           // evaluation period
  double up_window_s;          // scale-up stabilization: the lowest recommendation over this window
  double down_window_s;        // scale-down stabilization: the highest recommendation over this window
  double cooldown_s;           // no scale-down this long after any scaling
  double tolerance;            // ratio signals: no change within this relative distance of the target
  double ttft_window_s;        // ttft signal: completions considered
  double ttft_quantile;        // ttft signal: which percentile
  double cpu_base;             // host_cpu signal: utilization with no traffic
  double cpu_per_request_s;    // host_cpu signal: CPU seconds per request (tokenize, detokenize, HTTP)
  int32_t max_starts;          // nodes obtainable in total over the run (0: unlimited)
  double max_starts_per_hour;  // nodes obtainable per hour (0: unlimited)
  // rate policies (Kubernetes' behavior.scaleUp / scaleDown, selectPolicy Max): within any period,
  // a change of at most `pods` replicas or `percent` of the count at the period's start, whichever
  // allows more (0: that policy is not set; both 0: no limit)
  int32_t up_pods;
  double up_percent, up_period_s;
  int32_t down_pods;
  double down_percent, down_period_s;
};

// The host CPU stage in front of the device (docs/model.md, "The host CPU"): each replica's
// `cores` tokenize and pre-process requests first come, first served, before they may queue for
// the device; with detokenize_s_per_token > 0 they also post-process each finished response.
// cores == 0: no host stage (requests queue for the device on arrival).
struct HostParams {
  int32_t cores;                  // per replica
  int32_t post;                   // 1: a finished response is a post-processing job (detokenize_s_per_token > 0)
  double tokenize_s_per_token;    // per prompt token, as received (before truncation)
  double per_request_s;           // per request: parsing, chat template, validation
  double detokenize_s_per_token;  // per output token, charged as one job when the last token is out
};

// One pool of identical replicas: a device, a model, an engine, a router, a price.
// Speculative decoding (docs/model.md, "Speculative decoding"): a draft model proposes k tokens
// per decoding sequence, the target verifies them in one step and keeps on average
// tokens_per_step of them (the accepted ones and its own next token). A decode step is priced as
// the verify step (the target's work for k + 1 tokens per sequence, with the weights and each
// context read once) plus k steps of the draft, and each sequence advances tokens_per_step
// tokens: the core runs it as steps of one token, each 1 / tokens_per_step of that time.
struct SpecParams {
  int32_t k;               // draft tokens per step (0: no speculation)
  double tokens_per_step;  // expected tokens a sequence gains per verify step
  double draft_weight_bytes;
  double draft_flops_per_token;
  double draft_kv_bytes_per_token;
  double draft_window_bytes_per_seq;  // a sliding-window draft's KV of a full window, read each draft step
  // tensor parallelism: the draft's all-reduces per draft step (2 per layer) and per-token time
  // of each (the target's link and latency)
  double draft_allreduces;
  double draft_allreduce_s_per_token;
};

struct PoolParams {
  // model
  int32_t max_context;  // prompt + output are truncated to it
  int32_t generative;   // 0: embedding / scoring model, requests end with their prefill
  // engine
  Batching batching;
  int32_t max_num_seqs;        // continuous: running sequences per replica
  int32_t max_batched_tokens;  // continuous: tokens per step, decode included
  int32_t kv_block_tokens;
  int64_t kv_total_blocks;      // per replica
  int64_t kv_watermark_blocks;  // admission keeps this many blocks free
  int32_t max_batch;            // static batching
  double batch_window_s;        // static batching
  PerfParams perf;
  WorkParams work;  // per device of one tensor-parallel rank, summed over the pipeline stages
  ParallelParams par;
  MoeParams moe;
  int64_t window_blocks;   // KV blocks every running sequence holds for its sliding-window layers
  int32_t async_admit;     // 1: the engine schedules a step ahead: new requests join the step after next
  int32_t extended_steps;  // 1: step time takes the parallel / MoE / sliding-window path (stepwork.hpp)
  // fleet
  int32_t replicas;           // replicas ready at the start
  int32_t min_replicas;       // autoscaler floor (and the chosen headroom of idle replicas)
  int32_t max_replicas;       // replica slots
  int32_t headroom_replicas;  // idle replicas counted as chosen headroom, not waste
  AutoscaleParams autoscale;
  ColdStartParams cold;
  Router router;
  int32_t lo_index;     // least outstanding over many replicas: a tournament tree instead of a scan (containers.hpp)
  int32_t queue_limit;  // waiting requests per queue (per replica, or the pool's central one)
  // failures
  int32_t crash_on_kv_exhausted;  // a naive server: out of KV memory kills the process (no preemption)
  int32_t prefix_caching;         // the engine keeps shared prefixes' KV and skips their prefill
  // a bounded prefix cache per replica (prefix_cache.hpp; 0 entries: the pool-wide unbounded one)
  int32_t cache_entries;   // trace blocks a replica can keep
  int32_t cache_table;     // its lookup table's slots (a power of two, at least twice the entries)
  int32_t cache_block_kv;  // KV blocks one trace block takes
  int32_t cpu_entries;     // its host-memory tier: trace blocks it can keep (0: none)
  int32_t cpu_table;
  double cpu_load_s_per_token;  // loading a token's KV back over PCIe (every device its share at once)
  // a store the pool's replicas share (LMCache remote, Mooncake store): trace blocks it keeps (0:
  // none), and loading from it: per token over the network, and once per request that does
  int32_t remote_entries;
  int32_t remote_table;
  double remote_load_s_per_token;
  double remote_latency_s;
  SpecParams spec;
  // disaggregated prefill (engine.hpp, "handoffs"): a prefill pool computes each prompt and sends
  // its KV over a link to a replica of decode_pool, which emits every output token
  int32_t disagg;              // 1: this is a prefill pool
  int32_t decode_pool;         // where its requests decode
  double handoff_s_per_token;  // transfer time per prompt token: its KV bytes over the link
  double handoff_latency_s;    // and the link's fixed cost per transfer
  double handoff_bytes_per_token;
  int32_t handoff_window_tokens;      // sliding-window layers send their last this many tokens' KV
  double handoff_window_s_per_token;  // at this time a token
  double handoff_window_bytes_per_token;
  int32_t time_slicing;         // replicas per device taking turns (1: a device each); memory not isolated
  int32_t mps_clients;          // MPS: replicas per device whose kernels run concurrently under one server (1: none)
  int32_t device_tenants;       // replicas on one device (time slicing, MPS, MIG slices; else 1): all lost with it
  double mps_thread_share;      // MPS: each client's cap on the device's SMs (active thread percentage / 100)
  double server_context_bytes;  // a shared device's CUDA context storage held by its MPS server, however many clients
  double tenant_context_bytes;  // and by each time-sliced replica on it (its own process's context)
  double interruptions_per_s;   // per provisioned replica: spot reclaims plus hardware failures
  double spot_per_s;            // of those, the spot reclaims, which committed replicas do not have
  int32_t committed_replicas;   // reserved capacity, paid whether used or not
  double repair_s;              // owned devices: a failed one is back after this long (0: replaced at once)
  int32_t spares;               // owned devices on the shelf to swap in meanwhile (<= kMaxSpares)
  int32_t owned_replicas;       // owned pools: replicas on owned devices; those beyond are rented on demand
  // nodes (rented, billing: node, autoscaled; accounting.hpp, "nodes"): replicas are placed on
  // whole nodes, a node is paid for while it is up, and the cluster removes an empty one later
  int32_t replicas_per_node;  // 0: nodes are not tracked in the core
  int32_t nodes_per_group;    // nodes one placement group counts (a replica larger than a node spans several)
  int32_t max_node_groups;    // placement groups the cluster can hold (0: unlimited)
  int32_t pinned_nodes;       // nodes (lowest first) a pod without a device request keeps from removal
  double node_unneeded_s;     // an empty node is removed after this long
  int32_t empty_nodes_first;  // scale-down takes replicas from the emptiest node (a pod deletion cost), not the fullest
  // step-time slowdowns (slowdown.hpp): a server that falls back to the CPU after a node image
  // update, and thermal throttling under sustained load
  double fallback_share;     // share of replica slots whose server falls back (0: none)
  double fallback_slowdown;  // x their step times from fallback_at_s on
  double fallback_at_s;      // the image update
  double thermal_tau_s;      // time constant of the temperature proxy (0: no throttling)
  double thermal_above;      // throttled while the proxy is above this
  double thermal_factor;     // x step times while throttled: 1 / (1 - clock drop)
  // accounting, per replica
  double usd_per_replica_hour;
  double peak_flops_per_s;  // for compute utilization
  double peak_bytes_per_s;  // for bandwidth utilization
  double device_memory_bytes;
  double fixed_memory_bytes;  // weights + runtime overhead + activation peak
  HostParams host;
};

// One class of requests: its own arrivals and lengths, served by one pool.
struct ClassParams {
  ArrivalParams arrivals;
  DistParams prompt;
  DistParams output;
  int32_t pool;
  int32_t priority;      // waiting requests of a higher priority are admitted first (FCFS within one)
  int32_t checkpointed;  // work survives a lost replica (a batch job that checkpoints); else it restarts
  int32_t max_retries;   // a request whose replica failed is retried this many times, then fails
  double prefix_share;   // share of requests that start with the class's shared prefix (a system prompt)
  int32_t prefix_tokens;
  double response_cache_hit_rate;  // share answered from a response cache, without the device
  double response_cache_latency_s;
  DistParams think;      // concurrency: a user's pause between a response and its next request
  double retry_after_s;  // concurrency: a rejected user's least pause before its next request
  // concurrency: users run multi-turn sessions (clients.hpp) of this many turns; each turn's prompt
  // is the conversation so far plus a new message of `prompt` tokens
  int32_t sessions;
  DistParams turns;
  double good_ttft_s;  // goodput: a completed request meeting all three counts as good
  double good_tpot_s;
  double good_e2e_s;
};

// A sweep's rule for stopping a run whose SLO miss is already certain (sweep/settle.hpp): term i
// counts the requests in the window whose `kind` figure reached `at_least` (for rejections: every
// one), and once more than `allowed` have, no run of the remaining requests can meet the limit.
enum class SettleKind : int32_t { rejections = 0, ttft = 1, tpot = 2, e2e = 3, queue_wait = 4 };
constexpr int32_t kMaxSettleTerms = 8;
struct SettleTerm {
  double at_least;
  int64_t allowed;
  SettleKind kind;
  int32_t unused;  // keeps the struct free of padding (sweeps compare parameters byte for byte)
};
struct SettleRule {
  int32_t n;  // 0: every run goes to its end
  int32_t unused;
  SettleTerm terms[kMaxSettleTerms];
};

struct SimParams {
  int32_t n_pools;
  int32_t n_classes;
  PoolParams pools[kMaxPools];
  ClassParams classes[kMaxClasses];
  double duration_s;
  double warmup_s;
  // measurement window [measure_from_s, measure_to_s) when measure_to_s > 0, else [warmup_s,
  // duration_s): the trajectory does not depend on it, so windows of one run are comparable
  double measure_from_s, measure_to_s;
  uint64_t seed;
  int64_t max_events;     // guard against runaway configurations
  int64_t max_run_steps;  // 0: decode runs as long as the batch is unchanged; 1: every step an event (tests)
  int32_t wake_all;       // 1: a shared queue wakes every replica it offers work to at once (tests)
  SettleRule settle;
};

// The measurement window [from, to): a request is in it by its arrival time.
FLEETSIM_HD inline double window_from_s(const SimParams& p) {
  return p.measure_to_s > 0.0 ? p.measure_from_s : p.warmup_s;
}
FLEETSIM_HD inline double window_to_s(const SimParams& p) {
  return p.measure_to_s > 0.0 ? p.measure_to_s : p.duration_s;
}

}  // namespace fleetsim
