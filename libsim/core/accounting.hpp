// The clock and every integral the report reads: requests in system and waiting over time, a run's
// work and busy time, a finished request's latencies, and each pool's replica counts (billed,
// starting, busy, idle) with the state changes that move them.
#pragma once
#include "clients.hpp"
#include "containers.hpp"
#include "detmath.hpp"
#include "philox.hpp"
#include "state.hpp"
#include "steptime.hpp"
#include "tally.hpp"

namespace fleetsim {

// 1 for an event inside the measurement window, else 0 (event counts are the window's, like rates).
FLEETSIM_HD FLEETSIM_FORCEINLINE double in_window(const Sim& s, double t) { return t >= s.W0 && t < s.W1 ? 1.0 : 0.0; }

// What pool pi loses one at a time: a provisioned replica, or where replicas share a device
// (time slicing, MPS, MIG slices) a device in use, lost whole with every replica on it.
FLEETSIM_HD inline int32_t loss_units(const Sim& s, int32_t pi) {
  const PoolState& ps = s.pool[pi];
  const int32_t n = s.p->pools[pi].device_tenants, end = ps.first_replica + ps.n_replicas;
  if (n <= 1) return ps.n_prov;
  int32_t used = 0;
  for (int32_t d0 = ps.first_replica; d0 < end; d0 += n)
    for (int32_t r = d0; r < min_of(d0 + n, end); ++r)
      if (s.rep[r].state != kOff) {
        ++used;
        break;
      }
  return used;
}

// The rate at which pool P loses one of its n units (loss_units): hardware fails on each; spot
// reclaims only those beyond the committed (reserved, not spot) ones, in whole devices where shared.
FLEETSIM_HD inline double loss_rate(const PoolParams& P, int32_t n) {
  const int32_t t = P.device_tenants;
  const int32_t reserved = min_of(n, t > 1 ? (P.committed_replicas + t - 1) / t : P.committed_replicas);
  const double all = P.interruptions_per_s * double(n);
  return reserved > 0 && P.spot_per_s > 0.0 ? all - P.spot_per_s * double(reserved) : all;
}

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
// Device time `overlap` (in the window; negative: taken back) of replica R's run, split as the run
// splits it: prefill or decode, each class's share, and a handed-off class's time on its decode pool.
FLEETSIM_HD inline void account_busy(Sim& s, const Replica& R, double overlap) {
  PoolTally& T = s.tally->pools[R.pool];
  T.busy_s += overlap;
  T.input_busy_s += overlap * R.run_in_share;
  for (int32_t c = 0; c < s.p->n_classes; ++c) {
    s.tally->classes[c].busy_s += overlap * R.run_class_share[c];
    s.tally->classes[c].input_busy_s += overlap * R.run_class_in_share[c];
  }
  if (s.handoff_on)  // a class's time on the pool that decodes its prefills
    for (int32_t c = 0; c < s.p->n_classes; ++c)
      if (R.pool != s.p->classes[c].pool) {
        s.tally->classes[c].decode_busy_s += overlap * R.run_class_share[c];
        s.tally->classes[c].decode_input_busy_s += overlap * R.run_class_in_share[c];
      }
}

// The part of a run of k steps over [t0, t1) from `from` on, inside the window, pro rata in time;
// `sign` -1 takes back what a run accounted in advance and did not do.
FLEETSIM_HD inline void account_run_part(Sim& s, const Replica& R, int64_t k, double t0, double t1, double from,
                                         double sign) {
  if (k <= 0 || !(t1 > t0)) return;
  const double a = max_of(max_of(t0, from), s.W0), b = min_of(t1, s.W1);
  if (!(b > a)) return;
  const double overlap = sign * (b - a);
  const double f = overlap / (t1 - t0);
  PoolTally& T = s.tally->pools[R.pool];
  if (R.run_cpu) {  // a server fallen back to the host CPU: the engine steps, the device does nothing
    T.seq_steps += f * double(k) * R.run_seqs;
    T.steps += f * double(k);
    T.kv_block_s += overlap * (R.run_blocks0 + 0.5 * R.run_blocks_rate * double(k));
    return;
  }
  if (R.run_hot) T.throttled_steps += f * double(k);
  T.flops += f * arith_sum(R.run_fa, R.run_fb, 0, k);
  T.bytes += f * arith_sum(R.run_ba, R.run_bb, 0, k);
  T.seq_steps += f * double(k) * R.run_seqs;
  T.steps += f * double(k);
  T.kv_block_s += overlap * (R.run_blocks0 + 0.5 * R.run_blocks_rate * double(k));
  account_busy(s, R, overlap);
}
FLEETSIM_HD FLEETSIM_FORCEINLINE void account_run(Sim& s, const Replica& R, int64_t k, double t0, double t1) {
  account_run_part(s, R, k, t0, t1, t0, 1.0);
}

// A sweep's settle rule (params.hpp): a figure of a request in the window counts towards every
// term of its kind it reaches; the first term past its allowance stops the run (sim_advance).
FLEETSIM_HD inline void settle_note(Sim& s, SettleKind kind, double v, double t) {
  const SettleRule& rule = s.p->settle;
  for (int32_t i = 0; i < rule.n; ++i) {
    const SettleTerm& term = rule.terms[i];
    if (term.kind == kind && v >= term.at_least && ++s.settle_seen[i] > term.allowed && s.settled == kNone) {
      s.settled = i;
      s.settled_t = t;
    }
  }
}
FLEETSIM_HD FLEETSIM_FORCEINLINE void count_rejection(Sim& s, int64_t& counter, double t) {
  counter++;
  if (s.p->settle.n > 0) settle_note(s, SettleKind::rejections, 1.0, t);
}

// The client's share of a first token (HTTP, tokenization): what it adds to what the engine sees.
FLEETSIM_HD FLEETSIM_FORCEINLINE double client_ttft_s(const Sim& s, const Request& q) {
  const PerfParams& pf = s.p->pools[s.p->classes[q.cls].pool].perf;
  return pf.client_ttft_s + pf.client_s_per_input_token * double(q.prompt);
}

// Pool pi's `ttft` signal histogram takes a first-token time v, observed at t: in this moment's
// slice of the window, in its bucket.
FLEETSIM_HD inline void note_ttft(Sim& s, int32_t pi, double v, double t) {
  if (s.p->pools[pi].autoscale.signal != ScaleSignal::ttft) return;
  PoolState& ps = s.pool[pi];
  const int64_t id = int64_t(dm::floor(t / (s.p->pools[pi].autoscale.ttft_window_s / double(kTtftSlices))));
  const int32_t k = int32_t(id % kTtftSlices);
  if (ps.ttft_slice[k] < id) {  // the slot's slice has left the window: it starts this one
    ps.ttft_slice[k] = id;
    for (int32_t b = 0; b < kTtftBuckets; ++b) ps.ttft_count[k][b] = 0;
  }
  // (a first token applied late, from a slice older than the slot's, is out of every window read
  // from now on: replicas' runs are applied in any order between two evaluations)
  if (ps.ttft_slice[k] == id) {
    int32_t b = 0;
    while (b < kTtftBuckets - 1 && v > ttft_edge(b)) ++b;  // Prometheus buckets are le: upper edge included
    ps.ttft_count[k][b]++;
  }
}

// Request ri's first token, out at t on replica r (kNone: no replica), as vLLM observes it: each
// engine measures from the request's arrival at it (vllm/v1/metrics/stats.py). A pool serving
// whole requests sees the client's TTFT; a decode pool, the time from the prefill's end, when it
// takes the request and pulls its KV, to its first token (a prefill pool noted its own first token
// when it sent the KV: handoff_send); the client's share is added to each.
FLEETSIM_HD inline void note_first_token(Sim& s, int32_t r, int32_t ri, double t) {
  Request& q = s.req[ri];
  if (q.ttft_noted) return;
  q.ttft_noted = 1;
  const double first = q.t_first < 0.0 ? t : q.t_first;
  const int32_t entry = s.p->classes[q.cls].pool;
  if (r >= 0 && s.rep[r].pool != entry)
    note_ttft(s, s.rep[r].pool, first - q.t_handoff + client_ttft_s(s, q), t);
  else
    note_ttft(s, entry, first - q.t_arrive + client_ttft_s(s, q), t);
}

FLEETSIM_HD inline void record_done(Sim& s, int32_t r, int32_t ri, double t) {
  Request& q = s.req[ri];
  advance_clock(s, t);
  s.in_system[q.cls]--;
  // what the client adds (HTTP, tokenization, detokenization) shifts its first token and its end
  const PerfParams& pf = s.p->pools[s.p->classes[q.cls].pool].perf;
  const double cl = client_ttft_s(s, q);
  const double cl_end = cl + pf.client_s_per_output_token * double(q.output);
  // in the system until the client has the whole response (its e2e), so that mean_in_system is
  // throughput x mean e2e; a closed-loop user thinks from then on (client_think)
  const double a = max_of(t, s.W0), b = min_of(t + cl_end, s.W1);
  if (b > a) s.tally->classes[q.cls].in_system_s += b - a;
  // a first token not taken when it came out (a static batch's, a cached answer's) is taken now
  note_first_token(s, r, ri, t);
  if (q.in_window) {
    ClassTally& T = s.tally->classes[q.cls];
    T.completed++;
    T.input_tokens += q.prompt;
    T.output_tokens += q.output;
    if (q.t_first < 0.0) q.t_first = t;
    const double e2e = t - q.t_arrive + cl_end, ttft = q.t_first - q.t_arrive + cl,
                 wait = q.wait_s + q.t_admit - q.t_queued;
    hist_add(T.e2e, e2e);
    hist_add(T.ttft, ttft);
    hist_add(T.queue_wait, wait);
    if (s.p->pools[s.p->classes[q.cls].pool].host.cores > 0) {
      hist_add(T.host_wait, q.t_host - q.t_arrive);
      hist_add(T.host_time, q.t_host + q.host_s - q.t_arrive);  // left the host stage then
    }
    double tpot = 0.0;  // vllm bench's convention for a single output token
    if (q.output >= 2) {
      tpot = (t - q.t_first + (cl_end - cl)) / double(q.output - 1);
      hist_add(T.tpot, tpot);
    }
    if (s.p->settle.n > 0) {
      settle_note(s, SettleKind::ttft, ttft, t);
      settle_note(s, SettleKind::e2e, e2e, t);
      settle_note(s, SettleKind::queue_wait, wait, t);
      if (q.output >= 2) settle_note(s, SettleKind::tpot, tpot, t);
    }
    if ((s.goodput_classes >> q.cls) & 1) {
      const ClassParams& C = s.p->classes[q.cls];
      if (ttft <= C.good_ttft_s && tpot <= C.good_tpot_s && e2e <= C.good_e2e_s) T.good++;
    } else {
      T.good++;  // no bound
    }
  }
  s.req_free[s.req_free_n++] = ri;
  // a session's conversation stays cached where its prompt was computed: the prefill replica
  // when it was handed off
  const bool here = s.rep[r].pool == s.p->classes[q.cls].pool;
  client_done(s, q.cls, t + cl_end, false, q.user, int64_t(q.prompt) + q.output, here ? r : q.prefilled_on,
              here ? -1 : q.prompt, q.trace_row);
}

// Nodes (PoolParams::replicas_per_node > 0): slot k of a pool sits on placement group
// k / replicas_per_node, one node (or the nodes a replica larger than a node spans). A group is up
// from the first replica placed on it until the cluster removes it, node_unneeded_s after its last
// replica left, unless a pod without a device request pins it (docs/model.md, "Nodes").
FLEETSIM_HD FLEETSIM_FORCEINLINE int32_t node_slot(const PoolState& ps, const PoolParams& P, int32_t r) {
  return ps.first_replica + (r - ps.first_replica) / P.replicas_per_node * P.replicas_per_node;
}

// Replicas of the pool provisioned on the group whose first slot is f.
FLEETSIM_HD inline int32_t node_replicas(const Sim& s, const PoolState& ps, const PoolParams& P, int32_t f) {
  const int32_t end = min_of(f + P.replicas_per_node, ps.first_replica + ps.n_replicas);
  int32_t n = 0;
  for (int32_t r = f; r < end; ++r) n += s.rep[r].state != kOff ? 1 : 0;
  return n;
}

// Groups up, empty ones kept by a pinned pod or waiting for removal, and the next removal.
FLEETSIM_HD inline void nodes_recount(Sim& s, int32_t pi) {
  PoolState& ps = s.pool[pi];
  const PoolParams& P = s.p->pools[pi];
  ps.nodes_up = ps.nodes_pinned_empty = ps.nodes_unneeded = 0;
  ps.next_node_release = kInf;
  for (int32_t f = ps.first_replica; f < ps.first_replica + ps.n_replicas; f += P.replicas_per_node) {
    const double u = s.rep[f].node_until;
    if (u < 0.0) continue;
    ps.nodes_up++;
    if (u < kInf) {
      ps.nodes_unneeded++;
      ps.next_node_release = min_of(ps.next_node_release, u);
    } else if (node_replicas(s, ps, P, f) == 0) {
      ps.nodes_pinned_empty++;
    }
  }
}

FLEETSIM_HD inline void nodes_integrate(Sim& s, int32_t pi, double t0, double t1) {
  const double a = max_of(t0, s.W0), b = min_of(t1, s.W1);
  if (!(b > a)) return;
  const PoolState& ps = s.pool[pi];
  const double g = double(s.p->pools[pi].nodes_per_group) * (b - a);
  PoolTally& T = s.tally->pools[pi];
  T.node_s += double(ps.nodes_up) * g;
  T.node_pinned_s += double(ps.nodes_pinned_empty) * g;
  T.node_unneeded_s += double(ps.nodes_unneeded) * g;
}

// Node time from t0 to t, removing the empty groups whose time has come on the way.
FLEETSIM_HD inline void nodes_advance(Sim& s, int32_t pi, double t0, double t) {
  PoolState& ps = s.pool[pi];
  const PoolParams& P = s.p->pools[pi];
  double from = t0;
  while (ps.next_node_release <= t) {
    const double at = max_of(ps.next_node_release, from);
    nodes_integrate(s, pi, from, at);
    from = at;
    for (int32_t f = ps.first_replica; f < ps.first_replica + ps.n_replicas; f += P.replicas_per_node)
      if (s.rep[f].node_until >= 0.0 && s.rep[f].node_until <= at) s.rep[f].node_until = -1.0;
    nodes_recount(s, pi);
  }
  nodes_integrate(s, pi, from, t);
}

// Replica r was provisioned or released at t: its group is up while it holds a replica; empty, it
// stays until removed (never, when pinned).
FLEETSIM_HD inline void node_changed(Sim& s, int32_t r, double t) {
  const int32_t pi = s.rep[r].pool;
  const PoolState& ps = s.pool[pi];
  const PoolParams& P = s.p->pools[pi];
  const int32_t f = node_slot(ps, P, r);
  Replica& F = s.rep[f];
  const int32_t group = (f - ps.first_replica) / P.replicas_per_node;
  if (node_replicas(s, ps, P, f) > 0)
    F.node_until = kInf;
  else if (F.node_until >= 0.0)
    F.node_until = group * P.nodes_per_group < P.pinned_nodes ? kInf : t + P.node_unneeded_s;
  nodes_recount(s, pi);
}

// Integrate the pool's replica counts up to time t: billed time, cold starts, idle time split
// into chosen headroom and waste (clipped to the window), and busy time for the autoscaler.
FLEETSIM_HD inline void pool_advance(Sim& s, int32_t pi, double t) {
  PoolState& ps = s.pool[pi];
  const double t0 = ps.t_clock;
  if (!(t > t0)) return;
  if (s.p->pools[pi].replicas_per_node > 0) nodes_advance(s, pi, t0, t);
  ps.busy_acc += double(ps.n_busy_ready) * (t - t0);
  const double a = max_of(t0, s.W0), b = min_of(t, s.W1);
  if (b > a) {
    const double dt = b - a;
    PoolTally& T = s.tally->pools[pi];
    T.replica_s += double(ps.n_prov) * dt;
    T.excess_s += double(max_of(0, ps.n_prov - s.p->pools[pi].committed_replicas)) * dt;
    T.committed_unused_s += double(max_of(0, s.p->pools[pi].committed_replicas - ps.n_prov)) * dt;
    // a device in use is paid whole, however few of its places hold a replica; places the
    // commitment pays for already (used or not) are not paid again
    const int32_t k = s.p->pools[pi].time_slicing * s.p->pools[pi].mps_clients;
    if (k > 1)
      T.share_gap_s += double(max_of(0, ps.n_dev_used * k - max_of(ps.n_prov, s.p->pools[pi].committed_replicas))) * dt;
    T.cold_s += double(ps.n_starting) * dt;
    // a replica stepping on the host CPU leaves its device idle
    const int32_t idle = ps.n_ready + ps.n_draining - (ps.n_busy - ps.n_cpu_busy);
    const int32_t head = min_of(idle, s.p->pools[pi].headroom_replicas);
    T.headroom_s += double(head) * dt;
    T.waste_s += double(idle - head) * dt;
    if (ps.n_fb | ps.n_cpu_busy | ps.n_hot_busy) {
      T.cpu_busy_s += double(ps.n_cpu_busy) * dt;
      T.throttled_s += double(ps.n_hot_busy) * dt;
      const double from = max_of(a, s.p->pools[pi].fallback_at_s);  // fallback slots fall back from then on
      if (b > from) T.fallback_s += double(ps.n_fb) * (b - from);
    }
  }
  ps.t_clock = t;
}

// The temperature proxy of replica r up to time t: an exponentially weighted device-busy fraction
// with time constant tau, h <- b + (h - b) exp(-dt / tau), b = 1 if its device was busy since the
// last update, else 0. Called before anything that changes b.
FLEETSIM_HD inline void heat_update(Sim& s, Replica& R, double t) {
  const double tau = s.p->pools[R.pool].thermal_tau_s;
  if (!(tau > 0.0) || !(t > R.heat_t)) return;
  const double b = R.busy && !R.run_cpu ? 1.0 : 0.0;
  R.heat = b + (R.heat - b) * dm::exp(-(t - R.heat_t) / tau);
  R.heat_t = t;
}

// Integrate pool pi's busy host cores up to t: the window's core-seconds, and the autoscaler's,
// which are the ready replicas' (Kubernetes' HPA leaves out pods being deleted: groupPods in
// pkg/controller/podautoscaler/replica_calculator.go).
FLEETSIM_HD inline void host_advance(Sim& s, int32_t pi, double t) {
  PoolState& ps = s.pool[pi];
  const double t0 = ps.host_t;
  if (!(t > t0)) return;
  if (ps.host_busy > 0) {
    const double busy = double(ps.host_busy);
    ps.host_busy_acc += double(ps.host_busy - ps.host_busy_draining) * (t - t0);
    const double a = max_of(t0, s.W0), b = min_of(t, s.W1);
    if (b > a) s.tally->pools[pi].host_busy_s += busy * (b - a);
  }
  ps.host_t = t;
}

FLEETSIM_HD inline void set_busy(Sim& s, int32_t r, int32_t busy, double t) {
  Replica& R = s.rep[r];
  if (R.busy == busy) return;
  pool_advance(s, R.pool, t);
  heat_update(s, R, t);
  PoolState& ps = s.pool[R.pool];
  ps.n_busy += busy ? 1 : -1;
  if (R.state == kReady || R.state == kDraining) ps.n_busy_serving += busy ? 1 : -1;
  if (R.state == kReady) ps.n_busy_ready += busy ? 1 : -1;
  if (!busy) {  // an idle replica has no run: its flags go with the run
    ps.n_cpu_busy -= R.run_cpu;
    ps.n_hot_busy -= R.run_hot;
    R.run_cpu = R.run_hot = 0;
  }
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
    if (R.fb_slot && (st == kReady || st == kDraining)) ps.n_fb += d;
  };
  const int32_t before = ps.n_prov;
  const int32_t was = R.state;
  count(R.state, -1);
  count(state, +1);
  if (R.busy) {
    ps.n_busy_serving += int32_t(state == kReady || state == kDraining) - int32_t(was == kReady || was == kDraining);
    ps.n_busy_ready += int32_t(state == kReady) - int32_t(was == kReady);
  }
  if (R.host_busy > 0 && (state == kDraining) != (was == kDraining)) {
    host_advance(s, R.pool, t);  // the busy cores counted so far at their old state
    ps.host_busy_draining += (state == kDraining ? 1 : -1) * R.host_busy;
  }
  R.state = state;
  lo_touch(s, R);
  // devices shared by time slicing or MPS: one comes into use with its first replica, and out of
  // use with its last (a scale-down takes replicas where they are, not device by device)
  const PoolParams& P = s.p->pools[R.pool];
  const int32_t k = P.time_slicing > 1 ? P.time_slicing : P.mps_clients;
  if (k > 1 && (was == kOff) != (state == kOff)) {
    const int32_t d0 = ps.first_replica + ((r - ps.first_replica) / k) * k;
    const int32_t d1 = min_of(d0 + k, ps.first_replica + ps.n_replicas);
    int32_t others = 0;
    for (int32_t o = d0; o < d1; ++o) others += o != r && s.rep[o].state != kOff;
    if (others == 0) ps.n_dev_used += state == kOff ? -1 : 1;
  }
  if (s.p->pools[R.pool].replicas_per_node > 0 && (was == kOff) != (state == kOff)) node_changed(s, r, t);
  PoolTally& T = s.tally->pools[R.pool];
  if (double(ps.n_prov) > T.max_replicas) T.max_replicas = double(ps.n_prov);
  // failures are a Poisson process per provisioned replica (or device in use): memoryless, so
  // redraw the pool's next one
  const double rate = loss_rate(s.p->pools[R.pool], loss_units(s, R.pool));
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
