// Raw per-simulation tallies, the core's only output: one block per request class (counts,
// tokens, latency histograms) and one per pool (device time, work, memory). Everything a report
// shows is derived from these on the host (libsim/report/report.cpp); tallies merge by adding.
#pragma once
#include "histogram.hpp"
#include "params.hpp"

namespace fleetsim {

// settled: stopped once a SettleRule term made its SLO miss certain (the figures are partial)
enum class SimStatus : int32_t { ok = 0, event_limit = 1, settled = 2 };

// provisioning, image pull, weights fetch, weights load, warm-up, and (owned devices) waiting
// for a device back from repair
constexpr int32_t kColdStages = 6;
constexpr int32_t kAwaitingDevice = 5;

// Requests of one class that arrived in the measurement window [warmup_s, duration_s).
struct ClassTally {
  int64_t arrived;
  int64_t completed;
  int64_t rejected_queue_full;
  int64_t rejected_too_long;
  int64_t preempted;             // preemption events
  int64_t retried;               // requests sent back to the queue because their replica was lost
  int64_t failed;                // requests given up after max_retries
  int64_t cache_hits;            // answered from the response cache
  int64_t prefix_hits;           // admitted with a cached prefix (the class's shared one, or from its trace)
  int64_t prefix_tokens_reused;  // prompt tokens those hits did not prefill (at first admission)
  int64_t prefix_tokens_loaded;  // of which loaded from a host tier or a shared store
  double input_tokens;           // of completed requests
  double answered_input_tokens;  // of which answered from the response cache (no device computed them)
  double output_tokens;          // of completed requests
  double busy_s;                 // device time spent on this class's requests (in the window)
  double input_busy_s;           // of which on their prompts (prefill)
  double decode_busy_s;          // of busy_s, on the decode pool its pool hands prompts to
  double decode_input_busy_s;    // of which on prompts (the last prompt token, computed again)
  double lost_tokens;            // KV tokens computed and then dropped (preemption, a lost replica), to be recomputed
  double in_system_s;            // requests waiting or running x seconds
  double queue_len_s;            // requests waiting x seconds
  double thinking_s;             // closed-loop users between a response and their next request x seconds
  int64_t good;                  // completed within the class's goodput thresholds
  // sessions (clients.hpp) whose last turn ended in the window: how many, their turns, their time
  // from the first send to the last response, and that time per turn, summed
  int64_t sessions;
  double session_turns;
  double session_s;
  double session_turn_s;
  // sessions from a trace (trace_sessions.hpp), by send time in the window: follow-up turns sent,
  // those held past their trace time for the answer they follow, and that hold in seconds, summed
  int64_t follow_ups;
  int64_t turns_held;
  double turn_hold_s;
  Histogram ttft;
  Histogram tpot;
  Histogram e2e;
  Histogram queue_wait;
  // host CPU stage (host.hpp; empty without one): arrival to the start of its tokenization, and
  // to joining the device queue (the part of TTFT the host takes)
  Histogram host_wait;
  Histogram host_time;
};

// One pool's devices, integrated over the window.
struct PoolTally {
  double replica_s;           // provisioned replica time (billed: starting, ready or draining)
  double cold_s;              // replica time spent starting (provisioning to warm-up)
  double headroom_s;          // idle replica time within the chosen headroom
  double waste_s;             // idle replica time beyond it
  double excess_s;            // provisioned replica time beyond the committed replicas (paid at the hourly price)
  double committed_unused_s;  // committed replicas not provisioned (paid for, never started)
  double share_gap_s;         // shared devices: places on devices in use that no replica holds, unpaid by a commitment
  double cold_stage_s[kColdStages];  // each start's time in each stage inside the window
  double scale_ups;                  // replicas started
  double scale_downs;                // replicas stopped
  double max_replicas;               // most replicas provisioned at once
  double crashes;                    // replicas that died of a KV out-of-memory
  double interruptions;              // replicas lost to spot reclaim or hardware failure
  double owned_failures;             // of those, owned devices (an owned pool rents the rest on demand)
  double lost_tokens;                // KV tokens its replicas computed and then dropped (the classes', by pool)
  double busy_s;                     // replica time inside steps
  double input_busy_s;               // busy time attributed to prefill work
  double flops;                      // model FLOPs performed
  double bytes;                      // bytes moved
  double seq_steps;                  // sequences per step, summed over steps
  double steps;                      // steps in the window
  double kv_block_s;                 // allocated KV blocks x seconds
  double node_s;                     // nodes up x seconds (nodes tracked: billing by the node, autoscaled)
  double node_pinned_s;              // of which empty nodes kept by a pod without a device request
  double node_unneeded_s;            // of which empty nodes waiting for the cluster to remove them
  double unschedulable;              // replica starts refused: no free slot on a node and no node to add
  // slowdowns (slowdown.hpp); busy_s is the device's: steps computed on the host CPU are not in it
  double fallback_s;          // ready or draining replica time fallen back to the CPU
  double cpu_busy_s;          // of which in steps (on the CPU: the device idle)
  double throttled_s;         // device-busy time in steps at the throttled clock
  double throttled_steps;     // steps at the throttled clock
  double host_busy_s;         // host CPU stage: busy core-seconds
  double host_lost_s;         // of which on jobs a lost replica threw away
  double neighbour_failures;  // MPS: clients taken down by another client's fault on their device (shared fate)
  // disaggregated prefill: prompts whose KV this pool sent to its decode pool, their bytes and
  // the transfers' time (link latency included)
  double kv_sent, kv_sent_bytes, kv_sent_s;
  double cache_evicted;  // bounded prefix caches: trace blocks evicted to make room
  double cache_load_s;   // time steps spent loading blocks from the host tier and the shared store
  double remote_loaded;  // prompt tokens loaded from the shared store
  // the metric an autoscaler read at its evaluations in the window (its signal's units: a busy or
  // CPU share, requests per replica, seconds of TTFT): summed, counted, and the highest
  double signal_sum, signal_n, signal_peak;
};

// How near a continuous pool's engine limits came to deciding anything, over the whole run (not
// the measurement window): the most sequences it ran at once, and the least room left by any check
// of the token budget, of the KV blocks and of what its slots size (a queue's capacity for
// rerouted requests, the request pool) (negative: some check failed, and the limit shaped the
// run). A run whose limits never decided is the run of any limits that would not have either
// (sweep/share.hpp): a sweep over them runs it once.
constexpr int64_t kRoomUnbounded = int64_t(1) << 62;
struct LimitUse {
  int64_t peak_running;  // sequences running at once, at most
  int64_t budget_room;   // token budget: least of budget - tokens asked for (a chunk, a next admission)
  int64_t kv_room;       // KV blocks, checks without the watermark: free - needed (decode growth, runs)
  int64_t kv_room_mark;  // KV blocks, checks that keep the watermark: free - watermark - needed
  int64_t queue_room;    // a lost replica's requests rerouted: queue capacity - 1 - outstanding
};
struct RunLimits {
  int64_t request_room;  // arrivals: request slots (queue limits + batch slots) - 1 - requests held
  LimitUse pools[kMaxPools];
};

FLEETSIM_HD FLEETSIM_FORCEINLINE void note_room(int64_t& room, int64_t left) {
  if (left < room) room = left;
}

struct Tally {
  int32_t status;
  int32_t n_pools;
  int32_t n_classes;
  int32_t settled_term;  // status settled: the SettleRule term that decided
  int64_t events;        // all events processed
  int64_t unfinished;    // requests still in the system when the simulation stopped (0 unless it failed)
  double window_s;
  double settled_s;  // status settled: when
  RunLimits limits;
  PoolTally pools[kMaxPools];
  ClassTally classes[kMaxClasses];
};

FLEETSIM_HD inline void class_tally_clear(ClassTally& c) {
  c.arrived = c.completed = c.rejected_queue_full = c.rejected_too_long = c.preempted = c.retried = c.failed =
      c.cache_hits = c.prefix_hits = 0;
  c.good = 0;
  c.sessions = 0;
  c.session_turns = c.session_s = c.session_turn_s = 0.0;
  c.follow_ups = c.turns_held = 0;
  c.turn_hold_s = 0.0;
  c.prefix_tokens_reused = 0;
  c.prefix_tokens_loaded = 0;
  c.decode_busy_s = c.decode_input_busy_s = 0.0;
  c.input_tokens = c.output_tokens = c.busy_s = c.input_busy_s = c.lost_tokens = c.in_system_s = c.queue_len_s =
      c.thinking_s = c.answered_input_tokens = 0.0;
  hist_clear(c.ttft);
  hist_clear(c.tpot);
  hist_clear(c.e2e);
  hist_clear(c.queue_wait);
  hist_clear(c.host_wait);
  hist_clear(c.host_time);
}

FLEETSIM_HD inline void pool_tally_clear(PoolTally& p) {
  p.replica_s = p.busy_s = p.input_busy_s = p.flops = p.bytes = p.seq_steps = p.steps = p.kv_block_s = 0.0;
  p.cold_s = p.headroom_s = p.waste_s = p.scale_ups = p.scale_downs = p.max_replicas = 0.0;
  p.crashes = p.interruptions = p.owned_failures = p.lost_tokens = p.excess_s = p.committed_unused_s = p.share_gap_s =
      0.0;
  p.node_s = p.node_pinned_s = p.node_unneeded_s = p.unschedulable = 0.0;
  p.fallback_s = p.cpu_busy_s = p.throttled_s = p.throttled_steps = 0.0;
  p.host_busy_s = p.host_lost_s = 0.0;
  p.neighbour_failures = 0.0;
  p.kv_sent = p.kv_sent_bytes = p.kv_sent_s = 0.0;
  p.cache_evicted = p.cache_load_s = p.remote_loaded = 0.0;
  p.signal_sum = p.signal_n = p.signal_peak = 0.0;
  for (int32_t k = 0; k < kColdStages; ++k) p.cold_stage_s[k] = 0.0;
}

FLEETSIM_HD inline void tally_clear(Tally& t, int32_t n_pools = kMaxPools, int32_t n_classes = kMaxClasses) {
  t.status = 0;
  t.settled_term = 0;
  t.settled_s = 0.0;
  t.n_pools = n_pools;
  t.n_classes = n_classes;
  t.events = t.unfinished = 0;
  t.window_s = 0.0;
  t.limits.request_room = kRoomUnbounded;
  for (int32_t i = 0; i < kMaxPools; ++i) {
    pool_tally_clear(t.pools[i]);
    LimitUse& u = t.limits.pools[i];
    u.peak_running = 0;
    u.budget_room = u.kv_room = u.kv_room_mark = u.queue_room = kRoomUnbounded;
  }
  for (int32_t i = 0; i < kMaxClasses; ++i) {
    if (i < n_classes) {
      class_tally_clear(t.classes[i]);
    } else {  // unused classes: counts only, histograms left as they are (never read)
      t.classes[i].arrived = t.classes[i].completed = 0;
      t.classes[i].ttft.n = t.classes[i].tpot.n = t.classes[i].e2e.n = t.classes[i].queue_wait.n = 0;
      t.classes[i].host_wait.n = t.classes[i].host_time.n = 0;
    }
  }
}

FLEETSIM_HD inline void class_tally_merge(ClassTally& into, const ClassTally& from) {
  into.arrived += from.arrived;
  into.completed += from.completed;
  into.rejected_queue_full += from.rejected_queue_full;
  into.rejected_too_long += from.rejected_too_long;
  into.preempted += from.preempted;
  into.retried += from.retried;
  into.failed += from.failed;
  into.cache_hits += from.cache_hits;
  into.prefix_hits += from.prefix_hits;
  into.prefix_tokens_reused += from.prefix_tokens_reused;
  into.prefix_tokens_loaded += from.prefix_tokens_loaded;
  into.input_tokens += from.input_tokens;
  into.answered_input_tokens += from.answered_input_tokens;
  into.output_tokens += from.output_tokens;
  into.busy_s += from.busy_s;
  into.input_busy_s += from.input_busy_s;
  into.decode_busy_s += from.decode_busy_s;
  into.decode_input_busy_s += from.decode_input_busy_s;
  into.lost_tokens += from.lost_tokens;
  into.in_system_s += from.in_system_s;
  into.queue_len_s += from.queue_len_s;
  into.thinking_s += from.thinking_s;
  into.good += from.good;
  into.sessions += from.sessions;
  into.session_turns += from.session_turns;
  into.session_s += from.session_s;
  into.session_turn_s += from.session_turn_s;
  into.follow_ups += from.follow_ups;
  into.turns_held += from.turns_held;
  into.turn_hold_s += from.turn_hold_s;
  hist_merge(into.ttft, from.ttft);
  hist_merge(into.tpot, from.tpot);
  hist_merge(into.e2e, from.e2e);
  hist_merge(into.queue_wait, from.queue_wait);
  hist_merge(into.host_wait, from.host_wait);
  hist_merge(into.host_time, from.host_time);
}

FLEETSIM_HD inline void pool_tally_merge(PoolTally& into, const PoolTally& from) {
  into.replica_s += from.replica_s;
  into.busy_s += from.busy_s;
  into.input_busy_s += from.input_busy_s;
  into.flops += from.flops;
  into.bytes += from.bytes;
  into.seq_steps += from.seq_steps;
  into.steps += from.steps;
  into.kv_block_s += from.kv_block_s;
  into.cold_s += from.cold_s;
  into.headroom_s += from.headroom_s;
  into.waste_s += from.waste_s;
  into.scale_ups += from.scale_ups;
  into.scale_downs += from.scale_downs;
  into.max_replicas += from.max_replicas;
  into.crashes += from.crashes;
  into.excess_s += from.excess_s;
  into.committed_unused_s += from.committed_unused_s;
  into.share_gap_s += from.share_gap_s;
  for (int32_t k = 0; k < kColdStages; ++k) into.cold_stage_s[k] += from.cold_stage_s[k];
  into.interruptions += from.interruptions;
  into.owned_failures += from.owned_failures;
  into.lost_tokens += from.lost_tokens;
  into.node_s += from.node_s;
  into.node_pinned_s += from.node_pinned_s;
  into.node_unneeded_s += from.node_unneeded_s;
  into.unschedulable += from.unschedulable;
  into.fallback_s += from.fallback_s;
  into.cpu_busy_s += from.cpu_busy_s;
  into.throttled_s += from.throttled_s;
  into.throttled_steps += from.throttled_steps;
  into.host_busy_s += from.host_busy_s;
  into.host_lost_s += from.host_lost_s;
  into.neighbour_failures += from.neighbour_failures;
  into.kv_sent += from.kv_sent;
  into.kv_sent_bytes += from.kv_sent_bytes;
  into.kv_sent_s += from.kv_sent_s;
  into.cache_evicted += from.cache_evicted;
  into.cache_load_s += from.cache_load_s;
  into.remote_loaded += from.remote_loaded;
  into.signal_sum += from.signal_sum;
  into.signal_n += from.signal_n;
  if (from.signal_peak > into.signal_peak) into.signal_peak = from.signal_peak;
}

}  // namespace fleetsim
