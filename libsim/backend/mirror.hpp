// Mirroring parameters into another address space (the GPU's): the arrays the parameters point
// to are packed into one buffer and every pointer is rewritten to its copy; the launch plan (job
// order, slots, compact results) is in backend_launch.hpp. Host-only and backend-neutral, so the
// CUDA backend's data layout is tested on the CPU (tests/test_mirror.cpp).
#pragma once
#include <cstdint>
#include <cstring>
#include <map>
#include <type_traits>
#include <vector>

#include "backend/backend.hpp"
#include "backend/backend_launch.hpp"
#include "core/engine.hpp"

namespace fleetsim {

struct Mirror {
  std::vector<SimParams> params;                       // distinct parameter sets, pointers not yet rewritten
  std::vector<uint32_t> job_params;                    // job -> index into params
  std::vector<std::pair<const void*, size_t>> arrays;  // distinct arrays and their sizes
  std::map<const void*, size_t> offset;                // array -> offset in the packed buffer
  size_t array_bytes = 0;

  explicit Mirror(const std::vector<SimJob>& jobs) {
    std::map<const SimParams*, uint32_t> index_of;
    for (const auto& j : jobs) {
      auto it = index_of.emplace(j.params, uint32_t(params.size()));
      if (it.second) params.push_back(*j.params);
      job_params.push_back(it.first->second);
    }
    for (const auto& p : params)
      for (int32_t c = 0; c < p.n_classes; ++c) {
        const ClassParams& k = p.classes[c];
        note(k.arrivals.trace_t_s, sizeof(double) * size_t(k.arrivals.trace_n));
        note(k.arrivals.trace_prompt, sizeof(int32_t) * size_t(k.arrivals.trace_n));
        note(k.arrivals.trace_output, sizeof(int32_t) * size_t(k.arrivals.trace_n));
        note(k.arrivals.trace_cached, sizeof(int32_t) * size_t(k.arrivals.trace_n));
        note(k.arrivals.trace_parent, sizeof(int32_t) * size_t(k.arrivals.trace_n));
        note(k.arrivals.trace_child, sizeof(int32_t) * size_t(k.arrivals.trace_n));
        if (k.arrivals.trace_block_off) {
          note(k.arrivals.trace_block_off, sizeof(int64_t) * size_t(k.arrivals.trace_n + 1));
          note(k.arrivals.trace_blocks, sizeof(int32_t) * size_t(k.arrivals.trace_block_off[k.arrivals.trace_n]));
        }
        note(k.prompt.values, sizeof(double) * size_t(k.prompt.n));
        note(k.prompt.cdf, sizeof(double) * size_t(k.prompt.n));
        note(k.output.values, sizeof(double) * size_t(k.output.n));
        note(k.output.cdf, sizeof(double) * size_t(k.output.n));
        note(k.think.values, sizeof(double) * size_t(k.think.n));
        note(k.think.cdf, sizeof(double) * size_t(k.think.n));
        note(k.turns.values, sizeof(double) * size_t(k.turns.n));
        note(k.turns.cdf, sizeof(double) * size_t(k.turns.n));
      }
  }

  // Copy every array into `dst` (array_bytes long) with `copy(dst_offset, src, bytes)`.
  template <class Copy>
  void pack(Copy&& copy) const {
    for (const auto& [p, bytes] : arrays) copy(offset.at(p), p, bytes);
  }

  // The parameter sets with their pointers rewritten into a buffer at `base`.
  std::vector<SimParams> relocated(const void* base) const {
    std::vector<SimParams> out = params;
    for (auto& p : out)
      for (int32_t c = 0; c < p.n_classes; ++c) {
        ClassParams& k = p.classes[c];
        move(k.arrivals.trace_t_s, base);
        move(k.arrivals.trace_prompt, base);
        move(k.arrivals.trace_output, base);
        move(k.arrivals.trace_cached, base);
        move(k.arrivals.trace_parent, base);
        move(k.arrivals.trace_child, base);
        move(k.arrivals.trace_block_off, base);
        move(k.arrivals.trace_blocks, base);
        move(k.prompt.values, base);
        move(k.prompt.cdf, base);
        move(k.output.values, base);
        move(k.output.cdf, base);
        move(k.think.values, base);
        move(k.think.cdf, base);
        move(k.turns.values, base);
        move(k.turns.cdf, base);
      }
    return out;
  }

 private:
  void note(const void* p, size_t bytes) {
    if (!p || !bytes || offset.count(p)) return;
    offset[p] = array_bytes;
    arrays.emplace_back(p, bytes);
    array_bytes += (bytes + 15) & ~size_t(15);
  }
  template <class T>
  void move(const T*& ptr, const void* base) const {
    if (ptr)
      ptr = reinterpret_cast<const T*>(static_cast<const char*>(base) + offset.at(static_cast<const void*>(ptr)));
  }
};

}  // namespace fleetsim
