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
  return P.perf.overhead_s + comm +
         max_of(flops / (m * P.perf.flops_per_s), (weight_bytes + kv_bytes / m) / P.perf.bytes_per_s);
}

// Two times of one kind of kernel, a stream of bytes and its arithmetic, composed as the pool's
// calibrated model says (PerfParams::kernel_overlap): the longer of the two, or their sum.
FLEETSIM_HD FLEETSIM_FORCEINLINE double kernel_s(const PerfParams& f, double bytes_s, double compute_s) {
  return f.kernel_overlap ? max_of(bytes_s, compute_s) : bytes_s + compute_s;
}

// The calibrated step time (params.hpp) of a step's work on one device of a rank: m micro-batches
// share the compute and KV part, each traversal reads the weights once, plus the collectives.
FLEETSIM_HD FLEETSIM_FORCEINLINE double calibrated_step_s(const PerfParams& f, double seqs, double weight_bytes,
                                                          double matmul_flops, double kv_bytes, double attn_flops,
                                                          double m, double comm) {
  return f.overhead_s + comm + f.per_seq_s * seqs +
         kernel_s(f, f.weight_s_per_byte * weight_bytes, f.matmul_s_per_flop * matmul_flops / m) +
         kernel_s(f, f.kv_s_per_byte * kv_bytes, f.attn_s_per_flop * attn_flops) / m;
}

// The GEMMs of a calibrated decode step over n sequences on m micro-batches: weights W read per
// traversal, plus the extra query tokens of a verify step (speculative decoding).
FLEETSIM_HD FLEETSIM_FORCEINLINE double calibrated_gemm_s(const PerfParams& f, double W, double flops, double m) {
  return kernel_s(f, f.weight_s_per_byte * W, f.matmul_s_per_flop * flops / m);
}

// Speculative decoding (params.hpp, SpecParams) of a decode run of n sequences, context T0 + n j
// before step j, on m micro-batches: the verify step adds k query tokens per sequence to the
// target's GEMMs (and, on the roofline, to its attention over each context) and k steps of the
// draft; a core step is then 1 / tokens_per_step of it, since each sequence gains that many tokens.
// W is the weights one micro-batch's plain step reads, Wv its verify step's: a mixture of experts
// routes k + 1 tokens per sequence there, which touch more experts.
FLEETSIM_HD inline int64_t speculate_run(const PoolParams& P, Replica& R, Line& l, double n, double T0, double m,
                                         double W, double Wv) {
  int64_t exact_steps = kLineHolds;
  const SpecParams& sp = P.spec;
  const WorkParams& w = P.work;
  const PerfParams& f = P.perf;
  const double k = double(sp.k);
  const double gemm = k * w.matmul_flops_per_token * n, attn_a = k * w.attn_flops_per_pair * (T0 + n),
               attn_b = k * w.attn_flops_per_pair * n;
  const double d_flops = k * sp.draft_flops_per_token * n;
  const double d_bytes_a = k * (sp.draft_weight_bytes + sp.draft_kv_bytes_per_token * (T0 + n) +
                                sp.draft_window_bytes_per_seq * n),
               d_bytes_b = k * sp.draft_kv_bytes_per_token * n;
  if (f.kind == PerfKind::roofline) {
    l.a1 += (gemm + attn_a) / (m * f.flops_per_s);
    l.b1 += attn_b / (m * f.flops_per_s);
    l.a2 += (Wv - W) / f.bytes_per_s;
    // the draft runs before the verify step, not under it: its own roofline is added to both arms.
    // Its bytes grow with the context and its FLOPs do not, so where its bytes bind at the run's
    // start they bind throughout; else its FLOPs, until the step where its bytes overtake them,
    // where the run ends (the next one starts bytes-bound)
    const double dc = d_flops / f.flops_per_s, dm_a = d_bytes_a / f.bytes_per_s, dm_b = d_bytes_b / f.bytes_per_s;
    if (dm_a >= dc) {
      l.a1 += dm_a, l.a2 += dm_a;
      l.b1 += dm_b, l.b2 += dm_b;
    } else {
      l.o += dc;
      // steps j = 0, 1, ... with dm_a + dm_b j <= dc
      if (dm_b > 0.0) {
        const double j = (dc - dm_a) / dm_b;
        if (j < double(kLineHolds)) exact_steps = int64_t(j) + 1;
      }
    }
  } else if (f.kind == PerfKind::calibrated) {
    // decode attention is priced as its KV read, which the k extra queries share; the target's
    // GEMMs gain the k query tokens, and the draft runs k steps of its own
    const double base = w.matmul_flops_per_token * n;
    l.a1 += calibrated_gemm_s(f, Wv, base + gemm, m) - calibrated_gemm_s(f, W, base, m) +
            k * calibrated_gemm_s(f, sp.draft_weight_bytes, sp.draft_flops_per_token * n, 1.0) +
            f.kv_s_per_byte * k * (sp.draft_kv_bytes_per_token * (T0 + n) + sp.draft_window_bytes_per_seq * n);
    l.b1 += f.kv_s_per_byte * d_bytes_b;
  }
  // across devices, the verify step's collectives carry k more tokens a sequence, and each draft
  // step has all-reduces of its own
  const ParallelParams& c = P.par;
  const double comm = k * n / m * comm_s_per_token(c) +
                      k * sp.draft_allreduces * (c.allreduce_latency_s + n * sp.draft_allreduce_s_per_token);
  if (f.kind == PerfKind::roofline)
    l.o += comm;
  else if (f.kind == PerfKind::calibrated)
    l.o += f.comm_factor * comm;
  R.run_fa += gemm + attn_a + d_flops;
  R.run_fb += attn_b;
  R.run_ba += d_bytes_a + (Wv - W) * m;
  R.run_bb += d_bytes_b;
  const double g = 1.0 / sp.tokens_per_step;
  l.o *= g;
  l.a1 *= g;
  l.b1 *= g;
  l.a2 *= g;
  l.b2 *= g;
  R.run_fa *= g;
  R.run_fb *= g;
  R.run_ba *= g;
  R.run_bb *= g;
  return exact_steps;
}

// Decode-only run of n sequences whose context before step j is T0 + n j. Returns the steps for
// which its line is exact (kLineHolds: all of them); a run longer than that must end there.
FLEETSIM_HD inline int64_t set_decode_run(const PoolParams& P, Replica& R, double n, double T0) {
  int64_t exact_steps = kLineHolds;
  const WorkParams& w = P.work;
  const PerfParams& f = P.perf;
  const bool roofline = f.kind == PerfKind::roofline;
  Line l;
  l.o = f.overhead_s;
  l.a2 = l.b2 = 0.0;
  if (plain_step_model(P)) {
    R.run_fa = w.matmul_flops_per_token * n + w.attn_flops_per_pair * (T0 + n);
    R.run_fb = w.attn_flops_per_pair * n;
    R.run_ba = w.weight_bytes + w.kv_bytes_per_token * (T0 + n);
    R.run_bb = w.kv_bytes_per_token * n;
    if (roofline) {
      l.a1 = R.run_fa / f.flops_per_s;
      l.b1 = R.run_fb / f.flops_per_s;
      l.a2 = R.run_ba / f.bytes_per_s;
      l.b2 = R.run_bb / f.bytes_per_s;
    } else if (f.kind == PerfKind::calibrated) {
      l.a1 = f.per_seq_s * n + calibrated_gemm_s(f, w.weight_bytes, w.matmul_flops_per_token * n, 1.0) +
             f.kv_s_per_byte * w.kv_bytes_per_token * (T0 + n);
      l.b1 = f.kv_s_per_byte * R.run_bb;
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
      l.a1 = R.run_fa / (m * f.flops_per_s);
      l.b1 = R.run_fb / (m * f.flops_per_s);
      l.a2 = (W + kv_a / m) / f.bytes_per_s;
      l.b2 = R.run_bb / (m * f.bytes_per_s);
    } else if (f.kind == PerfKind::calibrated) {
      l.o += f.comm_factor * comm_s(P.par, n / m);
      l.a1 = f.per_seq_s * n + calibrated_gemm_s(f, W, w.matmul_flops_per_token * n, m) + f.kv_s_per_byte * kv_a / m;
      l.b1 = f.kv_s_per_byte * R.run_bb / m;
    }
  }
  if (f.kind == PerfKind::linear) {  // a linear model already includes the replica's parallelism
    l.a1 = f.per_decode_seq_s * n + f.per_context_token_s * (T0 + n);
    l.b1 = f.per_context_token_s * n;
    l.a2 = 0.0;
    l.b2 = 0.0;
  }
  if (P.spec.k > 0) {
    const bool plain = plain_step_model(P);
    const double m = plain ? 1.0 : micro_batches(P.par, n);
    const double k1 = double(P.spec.k) + 1.0;
    exact_steps = speculate_run(P, R, l, n, T0, m, plain ? w.weight_bytes : step_weight_bytes(w, P.moe, n / m),
                                plain ? w.weight_bytes : step_weight_bytes(w, P.moe, n * k1 / m));
  }
  R.run_line = l;
  R.run_in_share = 0.0;
  R.run_seqs = n;
  return exact_steps;
}

// A single step with prefill work: FLOPs and bytes of its prefill and decode parts.
FLEETSIM_HD inline void set_single_step(const PoolParams& P, Replica& R, double ptoks, double ppairs, double pread,
                                        double n, double T0, double seqs) {
  const WorkParams& w = P.work;
  const PerfParams& f = P.perf;
  const bool plain = plain_step_model(P);
  double f_in = w.matmul_flops_per_token * ptoks + w.prefill_attn_flops_per_pair * ppairs;
  double f_out = n > 0.0 ? w.matmul_flops_per_token * n + w.attn_flops_per_pair * (T0 + n) : 0.0;
  const double ctx_out = n > 0.0 ? T0 + n : 0.0;
  double bytes, dt;
  if (plain) {
    bytes = w.weight_bytes + w.kv_bytes_per_token * (pread + ptoks + ctx_out);
    dt = f.kind == PerfKind::calibrated
             ? calibrated_step_s(f, seqs, w.weight_bytes, w.matmul_flops_per_token * (ptoks + n),
                                 w.kv_bytes_per_token * (pread + ptoks + ctx_out),
                                 w.prefill_attn_flops_per_pair * ppairs, 1.0, 0.0)
             : step_time(P, f_in + f_out, bytes, ptoks, n, ctx_out);
  } else {
    const double m = micro_batches(P.par, seqs);
    const double tokens = ptoks + n;
    const double W = step_weight_bytes(w, P.moe, tokens / m);
    const double upproj = w.context_upproj_flops_per_token * pread;
    f_in += w.window_flops_per_token * ptoks + upproj;
    f_out += w.window_flops_per_token * n;
    const double kv = w.kv_bytes_per_token * (pread + ptoks + ctx_out) + w.window_bytes_per_seq * seqs;
    bytes = W * m + kv;
    if (f.kind == PerfKind::roofline)
      dt = parallel_step_s(P, f_in + f_out, W, kv, m, comm_s(P.par, tokens / m));
    else if (f.kind == PerfKind::calibrated)
      dt = calibrated_step_s(f, seqs, W, w.matmul_flops_per_token * tokens + upproj, kv,
                             w.prefill_attn_flops_per_pair * ppairs + w.window_flops_per_token * ptoks, m,
                             f.comm_factor * comm_s(P.par, tokens / m));
    else
      dt = step_time(P, f_in + f_out, bytes, ptoks, n, ctx_out);
  }
  // a draft (or heads) runs over the step's prompt tokens too, to hold their KV for its proposals
  double draft_in_s = 0.0;
  if (P.spec.k > 0 && ptoks > 0.0 && f.kind != PerfKind::linear) {
    const SpecParams& sp = P.spec;
    // (its sliding-window layers read a window for each prefilling sequence)
    const double d_flops = sp.draft_flops_per_token * ptoks,
                 d_kv = sp.draft_kv_bytes_per_token * (pread + ptoks) + sp.draft_window_bytes_per_seq * (seqs - n);
    const double comm = sp.draft_allreduces * (P.par.allreduce_latency_s + ptoks * sp.draft_allreduce_s_per_token);
    draft_in_s =
        f.kind == PerfKind::roofline
            ? max_of(d_flops / f.flops_per_s, (sp.draft_weight_bytes + d_kv) / f.bytes_per_s) + comm
            : calibrated_gemm_s(f, sp.draft_weight_bytes, d_flops, 1.0) + f.kv_s_per_byte * d_kv + f.comm_factor * comm;
    dt += draft_in_s;
    f_in += d_flops;
    bytes += sp.draft_weight_bytes + d_kv;
  }
  R.run_fa = f_in + f_out;
  R.run_fb = 0.0;
  R.run_ba = bytes;
  R.run_bb = 0.0;
  Line l;
  l.o = dt;
  l.a1 = l.b1 = l.a2 = l.b2 = 0.0;
  R.run_line = l;
  if (f.kind == PerfKind::roofline) {
    R.run_in_share = f_in / (f_in + f_out);
  } else if (f.kind == PerfKind::calibrated) {
    const double ci = f.matmul_s_per_flop * w.matmul_flops_per_token * ptoks +
                      f.matmul_s_per_flop * w.context_upproj_flops_per_token * pread +
                      f.attn_s_per_flop * w.prefill_attn_flops_per_pair * ppairs +
                      f.kv_s_per_byte * w.kv_bytes_per_token * (pread + ptoks);
    const double co =
        f.matmul_s_per_flop * w.matmul_flops_per_token * n + f.kv_s_per_byte * w.kv_bytes_per_token * ctx_out;
    R.run_in_share = ci + co > 0.0 ? (ci + draft_in_s) / (ci + draft_in_s + co) : ptoks / (ptoks + n);
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
    R.run_class_in_share[c] = R.run_in_share * in;
    R.run_class_share[c] = R.run_class_in_share[c] + (1.0 - R.run_in_share) * out;
  }
}

}  // namespace fleetsim
