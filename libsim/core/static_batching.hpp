// Static batching: form a padded batch from the queue (when full or when its window closes) and run
// it to completion; finish it.
#pragma once
#include "accounting.hpp"
#include "containers.hpp"
#include "decls.hpp"
#include "slowdown.hpp"
#include "state.hpp"
#include "steptime.hpp"
#include "stepwork.hpp"

namespace fleetsim {

// Replica r's run set to one phase of a static batch of n requests padded to pmax prompt and omax
// output tokens, its steps at `slow` times their time: the padded prefill (phase 0, one step;
// nclass[c] of the requests of class c) or the decode (phase 1). Returns the phase's steps.
FLEETSIM_HD inline int64_t static_phase(Sim& s, int32_t r, int32_t phase, int64_t n, int64_t pmax, int64_t omax,
                                        double slow, const double* nclass) {
  const PoolParams& P = pool_of(s, r);
  Replica& R = s.rep[r];
  const double dn = double(n), dp = double(pmax);
  if (phase == 0) {
    set_single_step(P, R, dn * dp, dn * dp * (dp + 1.0) * 0.5, 0.0, 0.0, 0.0, dn);
    if (slow > 1.0) scale_line(R.run_line, slow);
    for (int32_t c = 0; c < s.p->n_classes; ++c) R.run_class_in_share[c] = R.run_class_share[c] = nclass[c] / dn;
    R.run_blocks0 = double(ceil_div(n * (pmax + omax), R.bs) + n * P.window_blocks);
    R.run_blocks_rate = 0.0;
    return 1;
  }
  // (a roofline draft held FLOPs-bound for the whole batch: its run cannot end at the crossover)
  set_decode_run(P, R, dn, dn * dp);
  if (slow > 1.0) scale_line(R.run_line, slow);
  for (int32_t c = 0; c < s.p->n_classes; ++c) R.run_class_in_share[c] = 0.0;
  return omax - 1;
}

// A static batch was accounted when it formed; replica r lost it at t: take back what it did not
// run (the rest of its decode, and of its prefill if that had not ended).
FLEETSIM_HD inline void static_take_back(Sim& s, int32_t r, double t) {
  Replica& R = s.rep[r];
  const PoolParams& P = pool_of(s, r);
  const double t_first = R.batch_t_first, t_end = R.t_next;
  int64_t pmax = 0, omax = 0;
  double nclass[kMaxClasses];
  for (int32_t c = 0; c < kMaxClasses; ++c) nclass[c] = 0.0;
  for (int32_t i = 0; i < R.batch_n; ++i) {
    const Request& q = s.req[slot(s, r, i).req];
    pmax = max_of<int64_t>(pmax, q.prompt);
    omax = max_of<int64_t>(omax, q.output);
    nclass[q.cls] += 1.0;
  }
  // the run in place is the decode's when there was one
  if (P.generative && omax >= 2) account_run_part(s, R, omax - 1, t_first, t_end, t, -1.0);
  if (t < t_first) {
    const double slow = R.run_cpu ? P.fallback_slowdown : R.run_hot ? P.thermal_factor : 1.0;
    static_phase(s, r, 0, R.batch_n, pmax, omax, slow, nclass);
    account_run_part(s, R, 1, t_first - R.run_line.o, t_first, t, -1.0);
  }
}

FLEETSIM_HD inline void static_try_start(Sim& s, int32_t r, double t) {
  const PoolParams& P = pool_of(s, r);
  Replica& R = s.rep[r];
  if (R.busy || R.state == kOff || R.state == kStarting) return;
  // a draining replica stops once its host CPU stage is empty too
  if (R.state == kDraining && P.router == Router::central_queue) {
    if (R.host_n == 0) replica_off(s, r, t);
    return;
  }
  Queue& Q = s.q[R.queue];
  if (Q.size == 0) {
    if (R.state == kDraining) {
      if (R.host_n == 0)
        replica_off(s, r, t);
      else if (R.t_next != kInf)
        set_next(s, r, kInf);
      return;
    }
    if (R.t_next != kInf) set_next(s, r, kInf);
    return;
  }
  const double deadline = s.req[q_at(s, Q, 0)].t_queued + P.batch_window_s;
  if (Q.size < P.max_batch && t < deadline) {
    if (R.t_next != deadline) set_next(s, r, deadline);
    return;
  }
  // form the batch: FCFS while the padded batch fits in the KV cache (a sliding-window model's
  // sequences each hold a window in those layers too)
  const int64_t cap = P.kv_total_blocks * R.bs, window = P.window_blocks * R.bs;
  int64_t n = 0, pmax = 0, omax = 0;
  double nclass[kMaxClasses];
  for (int32_t c = 0; c < kMaxClasses; ++c) nclass[c] = 0.0;
  while (n < P.max_batch && Q.size > 0) {
    const Request& q = s.req[q_at(s, Q, 0)];
    const int64_t np = max_of<int64_t>(pmax, q.prompt), no = max_of<int64_t>(omax, q.output);
    if ((n + 1) * (np + no + window) > cap) break;
    const int32_t ri = q_pop_front(s, Q);
    advance_clock(s, t);
    s.waiting[q.cls]--;
    s.req[ri].t_admit = t;
    slot(s, r, int32_t(n)).req = ri;
    nclass[q.cls] += 1.0;
    pmax = np;
    omax = no;
    ++n;
  }
  set_busy(s, r, 1, t);
  // a CPU fallback or a throttled clock holds for the whole batch (exactly 1 without)
  const double slow = run_factor(s, r, t);
  static_phase(s, r, 0, n, pmax, omax, slow, nclass);  // the prefill of the padded batch
  const double t_first = t + R.run_line.o;
  account_run(s, R, 1, t, t_first);
  double t_end = t_first;
  if (P.generative && omax >= 2) {
    const int64_t k = static_phase(s, r, 1, n, pmax, omax, slow, nclass);
    t_end = t_first + line_sum(R.run_line, k);
    account_run(s, R, k, t_first, t_end);
  }
  R.batch_n = int32_t(n);
  lo_touch(s, R);
  R.batch_t_first = t_first;
  set_next(s, r, t_end);
}

FLEETSIM_HD inline void static_finish(Sim& s, int32_t r, double t) {
  Replica& R = s.rep[r];
  for (int32_t i = 0; i < R.batch_n; ++i) {
    const int32_t ri = slot(s, r, i).req;
    Request& q = s.req[ri];
    q.t_first = R.batch_t_first;
    q.generated = q.output;
    device_done(s, r, ri, t);
  }
  R.batch_n = 0;
  lo_touch(s, R);
  set_busy(s, r, 0, t);
  set_next(s, r, kInf);
}

}  // namespace fleetsim
