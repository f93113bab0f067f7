// The clock and every integral the report reads: requests in system and waiting over time, a run's
// work and busy time, a finished request's latencies, and each pool's replica counts (billed,
// starting, busy, idle) with the state changes that move them.
#pragma once
#include "clients.hpp"
#include "detmath.hpp"
#include "philox.hpp"
#include "state.hpp"
#include "steptime.hpp"
#include "tally.hpp"

namespace fleetsim {

// 1 for an event inside the measurement window, else 0 (event counts are the window's, like rates).
FLEETSIM_HD FLEETSIM_FORCEINLINE double in_window(const Sim& s, double t) { return t >= s.W0 && t < s.W1 ? 1.0 : 0.0; }

// Integrate the request counts up to time t (clipped to the window).
FLEETSIM_HD inline void advance_clock(Sim& s, double t) {
  const double a = max_of(s.t_clock, s.W0), b = min_of(t, s.W1);
  if (b > a) {
    for (int32_t c = 0; c < s.p->n_classes; ++c) {
      s.tally->classes[c].in_system_s += double(s.in_system[c]) * (b - a);
      s.tally->classes[c].queue_len_s += double(s.waiting[c]) * (b - a);
    }
  }
  if (t > s.t_clock) s.t_clock = t;
}

// Add the in-flight run of replica r, k steps over [t0, t1], to the tallies (pro rata inside
// the window for a run that straddles its edges).
FLEETSIM_HD inline void account_run(Sim& s, const Replica& R, int64_t k, double t0, double t1) {
  if (k <= 0 || !(t1 > t0)) return;
  const double a = max_of(t0, s.W0), b = min_of(t1, s.W1);
  if (!(b > a)) return;
  const double overlap = b - a;
  const double f = overlap / (t1 - t0);
  PoolTally& T = s.tally->pools[R.pool];
  T.busy_s += overlap;
  T.input_busy_s += overlap * R.run_in_share;
  T.flops += f * arith_sum(R.run_fa, R.run_fb, 0, k);
  T.bytes += f * arith_sum(R.run_ba, R.run_bb, 0, k);
  T.seq_steps += f * double(k) * R.run_seqs;
  T.steps += f * double(k);
  T.kv_block_s += overlap * (R.run_blocks0 + 0.5 * R.run_blocks_rate * double(k));
  for (int32_t c = 0; c < s.p->n_classes; ++c) {
    s.tally->classes[c].busy_s += overlap * R.run_class_share[c];
    s.tally->classes[c].input_busy_s += overlap * R.run_class_in_share[c];
  }
}

FLEETSIM_HD inline void record_done(Sim& s, int32_t ri, double t) {
  Request& q = s.req[ri];
  advance_clock(s, t);
  s.in_system[q.cls]--;
  // what the client adds (HTTP, tokenization, detokenization) shifts its first token and its end
  const double cl = s.p->pools[s.p->classes[q.cls].pool].perf.client_ttft_s;
  {
    PoolState& ps = s.pool[s.p->classes[q.cls].pool];
    ps.ttft_t[ps.ttft_head] = t;
    ps.ttft_v[ps.ttft_head] = (q.t_first < 0.0 ? t : q.t_first) - q.t_arrive + cl;
    ps.ttft_head = ps.ttft_head + 1 == kTtftSamples ? 0 : ps.ttft_head + 1;
    if (ps.ttft_n < kTtftSamples) ps.ttft_n++;
  }
  if (q.in_window) {
    ClassTally& T = s.tally->classes[q.cls];
    T.completed++;
    T.input_tokens += q.prompt;
    T.output_tokens += q.output;
    if (q.t_first < 0.0) q.t_first = t;
    hist_add(T.e2e, t - q.t_arrive + cl);
    hist_add(T.ttft, q.t_first - q.t_arrive + cl);
    hist_add(T.queue_wait, q.t_admit - q.t_queued);
    if (s.p->pools[s.p->classes[q.cls].pool].host.cores > 0) {
      hist_add(T.host_wait, q.t_host - q.t_arrive);
      hist_add(T.host_time, q.t_queued - q.t_arrive);
    }
    double tpot = 0.0;  // vllm bench's convention for a single output token
    if (q.output >= 2) {
      tpot = (t - q.t_first) / double(q.output - 1);
      hist_add(T.tpot, tpot);
    }
    if ((s.goodput_classes >> q.cls) & 1) {
      const ClassParams& C = s.p->classes[q.cls];
      if (q.t_first - q.t_arrive + cl <= C.good_ttft_s && tpot <= C.good_tpot_s && t - q.t_arrive + cl <= C.good_e2e_s)
        T.good++;
    } else {
      T.good++;  // no bound
    }
  }
  s.req_free[s.req_free_n++] = ri;
  client_done(s, q.cls, t + cl);
}

// Integrate the pool's replica counts up to time t: billed time, cold starts, idle time split
// into chosen headroom and waste (clipped to the window), and busy time for the autoscaler.
FLEETSIM_HD inline void pool_advance(Sim& s, int32_t pi, double t) {
  PoolState& ps = s.pool[pi];
  const double t0 = ps.t_clock;
  if (!(t > t0)) return;
  ps.busy_acc += double(ps.n_busy) * (t - t0);
  const double a = max_of(t0, s.W0), b = min_of(t, s.W1);
  if (b > a) {
    const double dt = b - a;
    PoolTally& T = s.tally->pools[pi];
    T.replica_s += double(ps.n_prov) * dt;
    T.excess_s += double(max_of(0, ps.n_prov - s.p->pools[pi].committed_replicas)) * dt;
    T.committed_unused_s += double(max_of(0, s.p->pools[pi].committed_replicas - ps.n_prov)) * dt;
    T.cold_s += double(ps.n_starting) * dt;
    const int32_t idle = ps.n_ready + ps.n_draining - ps.n_busy;
    const int32_t head = min_of(idle, s.p->pools[pi].headroom_replicas);
    T.headroom_s += double(head) * dt;
    T.waste_s += double(idle - head) * dt;
  }
  ps.t_clock = t;
}

FLEETSIM_HD inline void set_busy(Sim& s, int32_t r, int32_t busy, double t) {
  Replica& R = s.rep[r];
  if (R.busy == busy) return;
  pool_advance(s, R.pool, t);
  s.pool[R.pool].n_busy += busy ? 1 : -1;
  R.busy = busy;
}

FLEETSIM_HD inline void set_state(Sim& s, int32_t r, int32_t state, double t) {
  Replica& R = s.rep[r];
  if (R.state == state) return;
  pool_advance(s, R.pool, t);
  PoolState& ps = s.pool[R.pool];
  auto count = [&](int32_t st, int32_t d) {
    if (st == kReady) ps.n_ready += d;
    if (st == kStarting) ps.n_starting += d;
    if (st == kDraining) ps.n_draining += d;
    if (st != kOff) ps.n_prov += d;
  };
  const int32_t before = ps.n_prov;
  count(R.state, -1);
  count(state, +1);
  R.state = state;
  PoolTally& T = s.tally->pools[R.pool];
  if (double(ps.n_prov) > T.max_replicas) T.max_replicas = double(ps.n_prov);
  // failures are a Poisson process per provisioned replica: memoryless, so redraw the pool's next one
  const double rate = s.p->pools[R.pool].interruptions_per_s * double(ps.n_prov);
  if (ps.n_prov != before) {
    if (rate > 0.0) {
      const double u = s.rng.uniform(Stream::lifecycle, uint32_t(16 + R.pool), uint64_t(ps.fail_draws++), 1);
      ps.next_fail = t - dm::log(u) / rate;
    } else {
      ps.next_fail = kInf;
    }
  }
}

}  // namespace fleetsim
