// Raw per-simulation tallies, the core's only output. Everything a report shows is derived from
// these on the host (libsim/report.cpp); tallies of replications merge by adding.
#pragma once
#include "histogram.hpp"

namespace fleetsim {

enum class SimStatus : int32_t { ok = 0, event_limit = 1, workspace_too_small = 2 };

struct Tally {
  int32_t status;
  // requests that arrived in the measurement window [warmup_s, duration_s)
  int64_t arrived;
  int64_t completed;
  int64_t rejected_queue_full;
  int64_t rejected_too_long;
  int64_t preempted;  // preemption events of window requests
  int64_t events;     // all events processed (arrivals, steps and runs)
  int64_t unfinished; // requests still in the system when the simulation stopped (0 unless it failed)
  int64_t steps;      // steps started in the window (engine iterations)
  double input_tokens;   // of completed window requests
  double output_tokens;  // of completed window requests
  double window_s;
  // integrals over the window
  double busy_s;         // replica time inside steps
  double input_busy_s;   // busy time attributed to prefill work
  double flops;          // model FLOPs performed
  double bytes;          // bytes moved
  double seq_steps;      // sequences per step, summed over steps
  double kv_block_s;     // allocated KV blocks x seconds
  double in_system_s;    // requests waiting or running x seconds
  double queue_len_s;    // requests waiting x seconds
  Histogram ttft;
  Histogram tpot;
  Histogram e2e;
  Histogram queue_wait;
};

FLEETSIM_HD inline void tally_clear(Tally& t) {
  t.status = 0;
  t.arrived = t.completed = t.rejected_queue_full = t.rejected_too_long = t.preempted = 0;
  t.events = t.steps = t.unfinished = 0;
  t.input_tokens = t.output_tokens = t.window_s = 0.0;
  t.busy_s = t.input_busy_s = t.flops = t.bytes = t.seq_steps = t.kv_block_s = 0.0;
  t.in_system_s = t.queue_len_s = 0.0;
  hist_clear(t.ttft);
  hist_clear(t.tpot);
  hist_clear(t.e2e);
  hist_clear(t.queue_wait);
}

FLEETSIM_HD inline void tally_merge(Tally& into, const Tally& from) {
  if (from.status != 0) into.status = from.status;
  into.arrived += from.arrived;
  into.completed += from.completed;
  into.rejected_queue_full += from.rejected_queue_full;
  into.rejected_too_long += from.rejected_too_long;
  into.preempted += from.preempted;
  into.events += from.events;
  into.unfinished += from.unfinished;
  into.steps += from.steps;
  into.input_tokens += from.input_tokens;
  into.output_tokens += from.output_tokens;
  into.window_s += from.window_s;
  into.busy_s += from.busy_s;
  into.input_busy_s += from.input_busy_s;
  into.flops += from.flops;
  into.bytes += from.bytes;
  into.seq_steps += from.seq_steps;
  into.kv_block_s += from.kv_block_s;
  into.in_system_s += from.in_system_s;
  into.queue_len_s += from.queue_len_s;
  hist_merge(into.ttft, from.ttft);
  hist_merge(into.tpot, from.tpot);
  hist_merge(into.e2e, from.e2e);
  hist_merge(into.queue_wait, from.queue_wait);
}

}  // namespace fleetsim
