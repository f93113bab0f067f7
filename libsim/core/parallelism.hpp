// Communication of a replica that spans devices: tensor-parallel all-reduces, pipeline
// hand-offs and expert-parallel all-to-alls, each a latency plus a per-token transfer time, paid
// once per traversal of the pipeline by a micro-batch (docs/model.md, "Parallelism").
#pragma once
#include "params.hpp"

namespace fleetsim {

// Micro-batches in flight: a pipeline of pp stages runs up to pp batches at once (vLLM's virtual
// engines), but never more than there are sequences.
FLEETSIM_HD FLEETSIM_FORCEINLINE double micro_batches(const ParallelParams& c, double seqs) {
  if (c.pp <= 1 || seqs <= 1.0) return 1.0;
  return seqs < double(c.pp) ? seqs : double(c.pp);
}

// Seconds of communication in one traversal by a micro-batch of `tokens` tokens.
FLEETSIM_HD inline double comm_s(const ParallelParams& c, double tokens) {
  double t = 0.0;
  if (c.allreduces > 0.0) t += c.allreduces * (c.allreduce_latency_s + tokens * c.allreduce_s_per_token);
  if (c.handoffs > 0.0) t += c.handoffs * (c.handoff_latency_s + tokens * c.handoff_s_per_token);
  if (c.all_to_alls > 0.0) t += c.all_to_alls * (c.all_to_all_latency_s + tokens * c.all_to_all_s_per_token);
  return t;
}

// The per-token part of a traversal's communication: seconds per token it carries.
FLEETSIM_HD FLEETSIM_FORCEINLINE double comm_s_per_token(const ParallelParams& c) {
  return c.allreduces * c.allreduce_s_per_token + c.handoffs * c.handoff_s_per_token +
         c.all_to_alls * c.all_to_all_s_per_token;
}

// Ring all-reduce of `bytes` over n devices: each sends and receives 2 (n - 1) / n of the data.
FLEETSIM_HD FLEETSIM_FORCEINLINE double ring_allreduce_s(double bytes, int32_t n, double bytes_per_s,
                                                         double latency_s) {
  if (n <= 1) return 0.0;
  return latency_s + 2.0 * double(n - 1) / double(n) * bytes / bytes_per_s;
}

}  // namespace fleetsim
