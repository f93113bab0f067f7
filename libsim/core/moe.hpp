// Mixture of experts: which share of the routed experts' weights a step reads.
#pragma once
#include "detmath.hpp"
#include "params.hpp"

namespace fleetsim {

// Expected share of the E experts of a layer that B tokens touch, each routed to k distinct
// experts uniformly: 1 - (1 - k/E)^B (miss_log = log(1 - k/E)).
FLEETSIM_HD inline double experts_touched_share(const MoeParams& m, double tokens) {
  if (!(m.miss_log < 0.0)) return 1.0;  // every token reads every expert (k = E)
  return 1.0 - dm::exp(tokens * m.miss_log);
}

// Weight bytes one device reads in a step whose micro-batch has `tokens` tokens.
FLEETSIM_HD FLEETSIM_FORCEINLINE double step_weight_bytes(const WorkParams& w, const MoeParams& m, double tokens) {
  if (m.expert_bytes == 0.0) return w.weight_bytes;
  return w.weight_bytes + m.expert_bytes * experts_touched_share(m, tokens);
}

}  // namespace fleetsim
