// How the CUDA backend lays out a launch, as host code the CPU tests check (tests/test_mirror.cpp):
// jobs ordered by expected work, a persistent grid sized from the device's
// occupancy and memory, one workspace slot per resident thread, and compact per-job results that
// hold only the pools and classes the scenario has.
//
// Coalescing: the core addresses its workspace as one simulation's structs (libsim/core/state.hpp),
// so lanes of a warp touch the same field in different slots; making those loads coalesce would
// need the core to interleave fields across simulations, which it does not. What the layout does:
// slots are contiguous, 256-byte aligned, and their stride is an odd multiple of 256 bytes, so the
// same field of neighbouring slots falls on different DRAM channels and L2 sets instead of one.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <numeric>
#include <vector>

#include "backend/backend.hpp"
#include "core/engine.hpp"

namespace fleetsim {

// Requests a simulation is expected to see (arrival rate x time, a trace's length, ...).
inline double expected_requests(const SimParams& p) {
  double n = 0;
  for (int32_t c = 0; c < p.n_classes; ++c) {
    const ArrivalParams& a = p.classes[c].arrivals;
    const double stop = a.stop_s > 0 ? std::min(a.stop_s, p.duration_s) : p.duration_s;
    const double span = std::max(0.0, stop - a.start_s);
    switch (a.kind) {
      case ArrivalKind::trace: n += double(a.trace_n); break;
      case ArrivalKind::burst: n += double(a.clients); break;
      case ArrivalKind::concurrency:
        n += a.max_requests > 0 ? double(a.max_requests) : double(a.clients) * std::max(1.0, span / 10.0);
        break;
      default: n += a.rate_per_s * span;
    }
  }
  return std::max(1.0, n);
}

// Expected work of a simulation: requests x replicas (events grow with both).
inline double expected_work(const SimParams& p) {
  double replicas = 0;
  for (int32_t i = 0; i < p.n_pools; ++i) replicas += std::max(p.pools[i].replicas, p.pools[i].min_replicas);
  return expected_requests(p) * std::max(1.0, replicas);
}

// Job indices, most expected work first; equal work keeps job order (a configuration's replications
// stay together). Threads take jobs in this order, so the longest start first and the last to
// start are the shortest, and the lanes of a warp get jobs of similar length.
inline std::vector<uint32_t> order_by_work(const std::vector<SimJob>& jobs) {
  std::vector<double> key(jobs.size());
  for (size_t i = 0; i < jobs.size(); ++i) key[i] = -expected_work(*jobs[i].params);
  std::vector<uint32_t> order(jobs.size());
  std::iota(order.begin(), order.end(), 0u);
  // the standard library's sort: Thrust's host radix sort binds a reference through a null
  // execution-policy pointer, which UndefinedBehaviorSanitizer rejects
  std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) { return key[a] < key[b]; });
  return order;
}

// One job's result on the device: the tally's header, then its pools, then its classes.
struct CompactLayout {
  int32_t pools = 1, classes = 1;  // the most any job of the launch has
  FLEETSIM_HD static constexpr uint64_t header_bytes() { return offsetof(Tally, pools); }
  FLEETSIM_HD uint64_t bytes() const {
    const uint64_t b = header_bytes() + sizeof(PoolTally) * uint64_t(pools) + sizeof(ClassTally) * uint64_t(classes);
    return (b + 255) & ~uint64_t(255);
  }
};

// Word copies (every part is a multiple of 8 bytes at an 8-byte offset), usable in device code.
FLEETSIM_HD inline void copy_words(void* dst, const void* src, uint64_t bytes) {
  uint64_t* d = static_cast<uint64_t*>(dst);
  const uint64_t* s = static_cast<const uint64_t*>(src);
  for (uint64_t i = 0; i < bytes / 8; ++i) d[i] = s[i];
}
static_assert(offsetof(Tally, pools) % 8 == 0 && sizeof(PoolTally) % 8 == 0 && sizeof(ClassTally) % 8 == 0,
              "compact results copy 8-byte words");

FLEETSIM_HD inline void compact_store(const Tally& t, uint8_t* dst) {
  copy_words(dst, &t, CompactLayout::header_bytes());
  dst += CompactLayout::header_bytes();
  copy_words(dst, t.pools, sizeof(PoolTally) * uint64_t(t.n_pools));
  copy_words(dst + sizeof(PoolTally) * uint64_t(t.n_pools), t.classes, sizeof(ClassTally) * uint64_t(t.n_classes));
}

// `out` must be value-initialised (zero): then it equals the tally the host simulation leaves.
inline void compact_expand(const uint8_t* src, Tally& out) {
  std::memcpy(&out, src, CompactLayout::header_bytes());
  src += CompactLayout::header_bytes();
  std::memcpy(out.pools, src, sizeof(PoolTally) * size_t(out.n_pools));
  std::memcpy(out.classes, src + sizeof(PoolTally) * size_t(out.n_pools), sizeof(ClassTally) * size_t(out.n_classes));
}

// What the device offers the simulation kernel (cudaGetDeviceProperties, cudaMemGetInfo and
// cudaOccupancyMaxActiveBlocksPerMultiprocessor on the device; made up in tests).
struct DeviceLimits {
  int sms = 1;
  int max_threads_per_sm = 2048;
  int blocks_per_sm = 1;  // resident blocks of the kernel at `block` threads
  int block = 64;
  uint64_t memory_budget = 0;  // bytes this launch may take
};

struct LaunchPlan {
  uint32_t block = 0, grid = 0;
  uint32_t slots = 0;           // simulations in flight (threads with a workspace slot)
  uint64_t slot_stride = 0;     // bytes per slot: the largest workspace, then a scratch tally
  uint64_t tally_offset = 0;    // the scratch tally's offset inside a slot
  CompactLayout result;         // one job's result
  uint32_t chunk = 0;           // jobs per launch; two result buffers of `chunk` alternate
  std::vector<uint32_t> order;  // jobs, most expected work first
  double occupancy = 0;         // warps in flight per SM (on average) / the SM's maximum
  uint64_t slot_bytes() const { return uint64_t(slots) * slot_stride; }
  uint64_t result_bytes() const { return 2 * uint64_t(chunk) * result.bytes(); }
  uint64_t device_bytes() const { return slot_bytes() + result_bytes() + 2 * uint64_t(chunk) * sizeof(uint32_t); }
  uint64_t bytes_per_slot() const { return slot_stride; }
};

// Plan the launches of `jobs`: every resident thread of the kernel (occupancy x SMs) gets a slot
// while memory allows; results take at most a quarter of the budget.
inline LaunchPlan plan_launch(const std::vector<SimJob>& jobs, const DeviceLimits& d) {
  LaunchPlan L;
  L.block = uint32_t(std::max(32, d.block));
  L.order = order_by_work(jobs);
  uint64_t ws = 0;
  for (const auto& j : jobs) {
    ws = std::max(ws, workspace_layout(*j.params).total);
    L.result.pools = std::max(L.result.pools, j.params->n_pools);
    L.result.classes = std::max(L.result.classes, j.params->n_classes);
  }
  L.tally_offset = (ws + 255) & ~uint64_t(255);
  L.slot_stride = (L.tally_offset + sizeof(Tally) + 255) & ~uint64_t(255);
  if ((L.slot_stride / 256) % 2 == 0) L.slot_stride += 256;  // an odd multiple of 256 bytes
  const uint64_t n = jobs.size();
  const uint64_t resident = uint64_t(std::max(1, d.blocks_per_sm)) * uint64_t(std::max(1, d.sms)) * L.block;
  const uint64_t for_results = d.memory_budget / 4;
  const uint64_t per_job = 2 * (L.result.bytes() + sizeof(uint32_t));
  const uint64_t by_memory = (d.memory_budget - std::min(d.memory_budget, for_results)) / L.slot_stride;
  L.slots = uint32_t(std::max<uint64_t>(1, std::min({resident, by_memory, std::max<uint64_t>(n, 1)})));
  // a few jobs per slot per launch, so each launch's tail (its shortest jobs) is short
  L.chunk = uint32_t(std::max<uint64_t>(1, std::min({n, 8 * uint64_t(L.slots), for_results / per_job})));
  // too few slots for a block on every SM: blocks of one warp, so they spread over more SMs
  if (L.slots < uint64_t(std::max(1, d.sms)) * L.block) L.block = 32;
  L.grid = uint32_t((L.slots + L.block - 1) / L.block);
  // warps in flight per SM, on average over the SMs, against the SM's maximum
  const double warps = std::min(double(L.slots), double(resident)) / 32.0;
  L.occupancy = warps / std::max(1, d.sms) / (double(d.max_threads_per_sm) / 32.0);
  return L;
}

}  // namespace fleetsim
