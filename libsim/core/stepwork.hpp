// From work to time: the step time of a step's FLOPs and bytes, the line a decode-only run's step
// times follow (steptime.hpp), a single step with prefill work, and each class's share of a run.
//
// A replica spanning devices (tp x pp) or serving a mixture of experts takes the extended path
// (docs/model.md, "Parallelism"); a one-device dense replica takes the plain one, unchanged.
#pragma once
#include "moe.hpp"
#include "parallelism.hpp"
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

// The extended path with tp = pp = 1 and no experts or windows gives the plain path's bits; the
// flag (set on the host) only spares the plain path its extra arithmetic.
FLEETSIM_HD FLEETSIM_FORCEINLINE bool plain_step_model(const PoolParams& P) { return P.extended_steps == 0; }

// The roofline time of a step on a replica of tp x pp devices with m micro-batches in flight:
// compute and the KV part of the bytes split over the micro-batches, each traversal reading the
// (touched) weights once, plus the traversal's collectives. Work is per tensor-parallel rank,
// summed over the pipeline stages.
FLEETSIM_HD FLEETSIM_FORCEINLINE double parallel_step_s(const PoolParams& P, double flops, double weight_bytes,
                                                        double kv_bytes, double m, double comm) {
  return P.perf.overhead_s + comm + max_of(flops / (m * P.perf.flops_per_s), (weight_bytes + kv_bytes / m) / P.perf.bytes_per_s);
}

// Decode-only run of n sequences whose context before step j is T0 + n j.
FLEETSIM_HD inline void set_decode_run(const PoolParams& P, Replica& R, double n, double T0) {
  const WorkParams& w = P.work;
  const bool roofline = P.perf.kind == PerfKind::roofline;
  Line l;
  l.o = P.perf.overhead_s;
  if (plain_step_model(P)) {
    R.run_fa = w.matmul_flops_per_token * n + w.attn_flops_per_pair * (T0 + n);
    R.run_fb = w.attn_flops_per_pair * n;
    R.run_ba = w.weight_bytes + w.kv_bytes_per_token * (T0 + n);
    R.run_bb = w.kv_bytes_per_token * n;
    if (roofline) {
      l.a1 = R.run_fa / P.perf.flops_per_s;
      l.b1 = R.run_fb / P.perf.flops_per_s;
      l.a2 = R.run_ba / P.perf.bytes_per_s;
      l.b2 = R.run_bb / P.perf.bytes_per_s;
    }
  } else {
    const double m = micro_batches(P.par, n);
    const double W = step_weight_bytes(w, P.moe, n / m);
    const double kv_a = w.kv_bytes_per_token * (T0 + n) + w.window_bytes_per_seq * n;
    R.run_fa = w.matmul_flops_per_token * n + w.attn_flops_per_pair * (T0 + n) + w.window_flops_per_token * n;
    R.run_fb = w.attn_flops_per_pair * n;
    R.run_ba = W * m + kv_a;  // each micro-batch reads the weights it touches
    R.run_bb = w.kv_bytes_per_token * n;
    if (roofline) {
      l.o += comm_s(P.par, n / m);
      l.a1 = R.run_fa / (m * P.perf.flops_per_s);
      l.b1 = R.run_fb / (m * P.perf.flops_per_s);
      l.a2 = (W + kv_a / m) / P.perf.bytes_per_s;
      l.b2 = R.run_bb / (m * P.perf.bytes_per_s);
    }
  }
  if (!roofline) {  // a calibrated profile already includes the replica's parallelism
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
  const bool plain = plain_step_model(P);
  double f_in = w.matmul_flops_per_token * ptoks + w.attn_flops_per_pair * ppairs;
  double f_out = n > 0.0 ? w.matmul_flops_per_token * n + w.attn_flops_per_pair * (T0 + n) : 0.0;
  double bytes, dt;
  if (plain) {
    bytes = w.weight_bytes + w.kv_bytes_per_token * (pread + ptoks + (n > 0.0 ? T0 + n : 0.0));
    dt = step_time(P, f_in + f_out, bytes, ptoks, n, n > 0.0 ? T0 + n : 0.0);
  } else {
    const double m = micro_batches(P.par, seqs);
    const double tokens = ptoks + n;
    const double W = step_weight_bytes(w, P.moe, tokens / m);
    f_in += w.window_flops_per_token * ptoks;
    f_out += w.window_flops_per_token * n;
    const double kv = w.kv_bytes_per_token * (pread + ptoks + (n > 0.0 ? T0 + n : 0.0)) + w.window_bytes_per_seq * seqs;
    bytes = W * m + kv;
    dt = P.perf.kind == PerfKind::roofline ? parallel_step_s(P, f_in + f_out, W, kv, m, comm_s(P.par, tokens / m))
                                            : step_time(P, f_in + f_out, bytes, ptoks, n, n > 0.0 ? T0 + n : 0.0);
  }
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
