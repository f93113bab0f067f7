#include "report/pool_json.hpp"

#include <cmath>

namespace fleetsim {

// Utilization of one pool, or of several (summed tallies, summed peaks).
Json utilization_json(const PoolTally& t, double peak_flops_s, double peak_bytes_s, double kv_block_capacity_s,
                      double fixed_bytes_s, double kv_block_bytes_s, double memory_bytes_s) {
  Json ut;
  double busy = t.replica_s > 0 ? t.busy_s / t.replica_s : 0.0;
  const double cold = t.replica_s > 0 ? t.cold_s / t.replica_s : 0.0;
  double idle = t.replica_s > 0 ? 1.0 - busy - cold : 0.0;
  if (idle < 0.0) {  // never idle: busy and up time are summed apart, so they differ in the last bits
    idle = 0.0;
    busy = 1.0 - cold;
  }
  // a pool that never had a replica up has no time to divide: null, as every ratio of nothing
  ut["busy_fraction"] = t.replica_s > 0 ? Json(busy) : Json(nullptr);
  ut["idle_fraction"] = t.replica_s > 0 ? Json(idle) : Json(nullptr);
  ut["cold_start_fraction"] = t.replica_s > 0 ? Json(cold) : Json(nullptr);
  ut["idle_headroom_fraction"] = ratio(t.headroom_s, t.replica_s);
  ut["idle_waste_fraction"] = ratio(t.waste_s, t.replica_s);
  ut["compute_fraction"] = ratio(t.flops, peak_flops_s);
  ut["bandwidth_fraction"] = ratio(t.bytes, peak_bytes_s);
  ut["mean_batch_size"] = ratio(t.seq_steps, t.steps);
  ut["kv_occupancy"] = ratio(t.kv_block_s, kv_block_capacity_s);
  ut["memory_occupancy"] = ratio(fixed_bytes_s + kv_block_bytes_s, memory_bytes_s);
  return ut;
}

Json fleet_json(const PoolTally& t, double window) {
  Json f;
  f["mean_replicas"] = ratio(t.replica_s, window);
  f["max_replicas"] = t.max_replicas;
  f["scale_ups"] = t.scale_ups;
  f["scale_downs"] = t.scale_downs;
  f["crashes"] = t.crashes;
  f["interruptions"] = t.interruptions;
  f["neighbour_failures"] = t.neighbour_failures;
  return f;
}

// What an autoscaled pool's autoscaler read at its evaluations in the window, beside its target:
// why it scaled, or did not.
Json autoscale_signal_json(const AutoscaleParams& A, const PoolTally& t) {
  static const char* names[] = {"queue_depth", "inflight", "ttft", "busy", "host_cpu"};
  Json j;
  j["signal"] = names[int(A.signal)];
  j["target"] = A.target;
  j["evaluations"] = t.signal_n;
  j["mean"] = ratio(t.signal_sum, t.signal_n);
  j["peak"] = t.signal_n > 0 ? Json(t.signal_peak) : Json(nullptr);
  return j;
}

// A CPU fallback and thermal throttling, where configured (docs/model.md, "Slowdowns").
void slowdown_json(Json& f, const PoolTally& t, bool fallback, bool thermal) {
  if (fallback)
    f["cpu_fallback"] = {{"replica_hours", t.fallback_s / 3600.0},
                         {"share_of_replica_hours", ratio(t.fallback_s, t.replica_s)},
                         {"cpu_busy_replica_hours", t.cpu_busy_s / 3600.0}};
  if (thermal)
    f["thermal"] = {{"throttled_replica_hours", t.throttled_s / 3600.0},
                    {"throttled_busy_share", ratio(t.throttled_s, t.busy_s)},
                    {"throttled_step_share", ratio(t.throttled_steps, t.steps)}};
}

// A device shared by replicas (time slicing, MPS): the CUDA contexts it holds, and the KV cache
// each replica can hold when all of them hold the same and the device is full -- what to size
// each engine's budget to so that none can run the device out of memory.
Json sharing_json(const PoolSpec& P) {
  Json j;
  const int n = P.shared_by();
  j["mode"] = P.time_slicing > 1 ? "time_slicing" : "mps";
  j["replicas_per_device"] = n;
  if (P.time_slicing == 1) j["active_thread_percentage"] = P.mps_active_thread_percentage;
  j["cuda_context_gib"] = P.cuda_context_gib;
  j["device_context_gib"] = P.device_context_gib();
  const Capacity& c = P.capacity;
  const double fixed = c.weights_gib + c.runtime_overhead_gib + c.activation_gib;
  const double kv = (c.device_gib - P.device_context_gib()) / n - fixed;
  const double block_bytes = c.block_bytes_per_token() * P.kv_block_tokens;
  const int64_t blocks = kv > 0 ? int64_t(std::floor(kv * 1073741824.0 / block_bytes)) : 0;
  j["kv_gib_per_replica_on_device"] = kv;
  j["kv_blocks_per_replica_on_device"] = blocks;
  j["oversubscribed"] = c.kv_blocks > blocks;  // the engines' budgets add up to more than the device holds
  return j;
}

bool shares_device(const PoolSpec& P) { return P.shared_by() > 1 || P.mps_active_thread_percentage < 100; }

}  // namespace fleetsim
