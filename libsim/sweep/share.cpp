// Sweeps: sharing a run between configurations whose engine limits never decided anything.
#include "sweep/share.hpp"

#include <cstring>
#include <memory>

namespace fleetsim {

namespace {

// Pools the rule covers: continuous batching, a device each (time-sliced and MPS neighbours see
// each other's memory), an engine that preempts rather than crashes when KV runs out, and no host
// stage (its FIFOs are sized by the slots too, and nothing records how full they came).
bool covered(const PoolParams& P) {
  return P.batching == Batching::continuous && !P.crash_on_kv_exhausted && P.time_slicing <= 1 && P.mps_clients <= 1 &&
         P.host.cores == 0;
}

}  // namespace

std::unique_ptr<SimParams> without_limits(const SimParams& p) {
  // copied whole, padding included, so that a difference there only costs a run, never a wrong answer
  auto m = std::make_unique<SimParams>();
  std::memcpy(static_cast<void*>(m.get()), &p, sizeof(SimParams));
  for (PoolParams& P : m->pools) {
    if (!covered(P)) continue;
    P.max_num_seqs = P.max_batched_tokens = 0;
    P.kv_total_blocks = P.kv_watermark_blocks = 0;
    P.fixed_memory_bytes = 0;  // read by the core only where a device is shared
  }
  return m;
}

bool limits_serve(const SimParams& ran, const RunLimits& use, const SimParams& other) {
  int64_t fewer_slots = 0;  // request slots `other` has fewer of (negative: more)
  bool slots_differ = false;
  for (int32_t i = 0; i < ran.n_pools; ++i) {
    const PoolParams &D = ran.pools[i], &R = other.pools[i];
    if (!covered(D)) continue;
    const LimitUse& u = use.pools[i];
    if (R.max_num_seqs != D.max_num_seqs) {
      // every `running < max_num_seqs` saw at most peak_running sequences, and held; the queues'
      // capacity for rerouted requests (queue_limit + slots per replica fed) and the request pool
      // (queue limits + every replica's slots) move with the slots
      const int64_t d = int64_t(D.max_num_seqs) - R.max_num_seqs;
      const int64_t fed = D.router == Router::central_queue ? D.max_replicas : 1;
      if (!(u.peak_running < D.max_num_seqs && u.peak_running < R.max_num_seqs)) return false;
      if (!(u.queue_room >= 0 && fed * d <= u.queue_room)) return false;
      fewer_slots += int64_t(D.max_replicas) * d;
      slots_differ = true;
    }
    // a budget smaller by d leaves every check d less room
    if (R.max_batched_tokens != D.max_batched_tokens &&
        !(u.budget_room >= 0 && int64_t(D.max_batched_tokens) - R.max_batched_tokens <= u.budget_room))
      return false;
    // fewer blocks by d leave every check d less room; a watermark higher by w, w less where it counts
    const int64_t d = D.kv_total_blocks - R.kv_total_blocks, w = R.kv_watermark_blocks - D.kv_watermark_blocks;
    if ((d != 0 || w != 0) && !(u.kv_room >= 0 && u.kv_room_mark >= 0 && d <= u.kv_room && d + w <= u.kv_room_mark))
      return false;
  }
  return !slots_differ || (use.request_room >= 0 && fewer_slots <= use.request_room);
}

bool limits_left_room(const SimParams& ran, const RunLimits& use) {
  for (int32_t i = 0; i < ran.n_pools; ++i) {
    if (!covered(ran.pools[i])) continue;
    const LimitUse& u = use.pools[i];
    if (u.peak_running < ran.pools[i].max_num_seqs || u.budget_room >= 0 || (u.kv_room >= 0 && u.kv_room_mark >= 0))
      return true;
  }
  return false;
}

bool run_serves(const SimParams& ran, const Tally& t, const SimParams& other) {
  const auto a = without_limits(ran), b = without_limits(other);
  return std::memcmp(a.get(), b.get(), sizeof(SimParams)) == 0 && limits_serve(ran, t.limits, other);
}

bool is_limit_path(const std::string& path) {
  static const char* const leaves[] = {
      "max_num_seqs",         "max_batched_tokens",  "gpu_memory_utilization",   "max_running_requests",
      "chunked_prefill_size", "mem_fraction_static", "free_gpu_memory_fraction", "kv_watermark",
      "max_batch_size",       "max_num_tokens"};
  const size_t dot = path.rfind('.');
  const std::string leaf = dot == std::string::npos ? path : path.substr(dot + 1);
  for (const char* l : leaves)
    if (leaf == l) return true;
  return false;
}

std::vector<std::pair<size_t, size_t>> limit_stretches(size_t n, const std::function<std::string(size_t)>& key,
                                                       size_t max_len) {
  std::vector<std::pair<size_t, size_t>> out;
  std::string prev;
  for (size_t i = 0; i < n; ++i) {
    std::string k = key(i);
    if (out.empty() || k != prev || out.back().second - out.back().first >= max_len)
      out.emplace_back(i, i + 1);
    else
      out.back().second = i + 1;
    prev = std::move(k);
  }
  return out;
}

}  // namespace fleetsim
