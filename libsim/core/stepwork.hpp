// From work to time: the step time of a step's FLOPs and bytes, the line a decode-only run's step
// times follow (steptime.hpp), a single step with prefill work, and each class's share of a run.
#pragma once
#include "state.hpp"
#include "steptime.hpp"

namespace fleetsim {

// Step time of a step with the given work.
FLEETSIM_HD inline double step_time(const PoolParams& P, double flops, double bytes, double prefill_tokens,
                                    double decode_seqs, double decode_ctx) {
  if (P.perf.kind == PerfKind::roofline)
    return P.perf.overhead_s + max_of(flops / P.perf.flops_per_s, bytes / P.perf.bytes_per_s);
  return P.perf.overhead_s + P.perf.per_prefill_token_s * prefill_tokens + P.perf.per_decode_seq_s * decode_seqs +
         P.perf.per_context_token_s * decode_ctx;
}

// Decode-only run of n sequences whose context before step j is T0 + n j.
FLEETSIM_HD inline void set_decode_run(const PoolParams& P, Replica& R, double n, double T0) {
  const WorkParams& w = P.work;
  R.run_fa = w.matmul_flops_per_token * n + w.attn_flops_per_pair * (T0 + n);
  R.run_fb = w.attn_flops_per_pair * n;
  R.run_ba = w.weight_bytes + w.kv_bytes_per_token * (T0 + n);
  R.run_bb = w.kv_bytes_per_token * n;
  Line l;
  l.o = P.perf.overhead_s;
  if (P.perf.kind == PerfKind::roofline) {
    l.a1 = R.run_fa / P.perf.flops_per_s;
    l.b1 = R.run_fb / P.perf.flops_per_s;
    l.a2 = R.run_ba / P.perf.bytes_per_s;
    l.b2 = R.run_bb / P.perf.bytes_per_s;
  } else {
    l.a1 = P.perf.per_decode_seq_s * n + P.perf.per_context_token_s * (T0 + n);
    l.b1 = P.perf.per_context_token_s * n;
    l.a2 = 0.0;
    l.b2 = 0.0;
  }
  R.run_line = l;
  R.run_in_share = 0.0;
  R.run_seqs = n;
}

// A single step with prefill work: FLOPs and bytes of its prefill and decode parts.
FLEETSIM_HD inline void set_single_step(const PoolParams& P, Replica& R, double ptoks, double ppairs, double pread,
                                        double n, double T0, double seqs) {
  const WorkParams& w = P.work;
  const double f_in = w.matmul_flops_per_token * ptoks + w.attn_flops_per_pair * ppairs;
  const double f_out = n > 0.0 ? w.matmul_flops_per_token * n + w.attn_flops_per_pair * (T0 + n) : 0.0;
  const double bytes = w.weight_bytes + w.kv_bytes_per_token * (pread + ptoks + (n > 0.0 ? T0 + n : 0.0));
  const double dt = step_time(P, f_in + f_out, bytes, ptoks, n, n > 0.0 ? T0 + n : 0.0);
  R.run_fa = f_in + f_out;
  R.run_fb = 0.0;
  R.run_ba = bytes;
  R.run_bb = 0.0;
  Line l;
  l.o = dt;
  l.a1 = l.b1 = l.a2 = l.b2 = 0.0;
  R.run_line = l;
  if (P.perf.kind == PerfKind::roofline) {
    R.run_in_share = f_in / (f_in + f_out);
  } else {
    const double ci = P.perf.per_prefill_token_s * ptoks;
    const double co = P.perf.per_decode_seq_s * n + P.perf.per_context_token_s * (n > 0.0 ? T0 + n : 0.0);
    R.run_in_share = ci + co > 0.0 ? ci / (ci + co) : ptoks / (ptoks + n);
  }
  R.run_seqs = seqs;
}

// Each class's share of a run: prefill time by prefill tokens, decode time by sequences.
FLEETSIM_HD inline void set_class_shares(const Sim& s, Replica& R, const double* prefill_by_class, double ptoks) {
  const double n = double(R.n_decode);
  for (int32_t c = 0; c < s.p->n_classes; ++c) {
    const double in = ptoks > 0.0 ? prefill_by_class[c] / ptoks : 0.0;
    const double out = n > 0.0 ? double(R.n_decode_class[c]) / n : 0.0;
    R.run_class_share[c] = R.run_in_share * in + (1.0 - R.run_in_share) * out;
  }
}

}  // namespace fleetsim
