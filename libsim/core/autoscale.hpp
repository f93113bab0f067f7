// The autoscaler: its signal and the replica count it asks for, the stabilization windows and
// cooldown, and removing one replica (cancel a start, stop an idle one, or drain the least loaded).
#pragma once
#include "accounting.hpp"
#include "containers.hpp"
#include "detmath.hpp"
#include "host.hpp"
#include "lifecycle.hpp"
#include "state.hpp"

namespace fleetsim {

// Remove one replica: an idle one at once, else drain the least loaded (highest index on ties).
// On tracked nodes, Kubernetes' ReplicaSet ranking comes first: a replica with more of its pool's
// replicas on its node goes first ("doubled up"), which spreads rather than empties nodes; with
// empty_nodes_first (a pod deletion cost per node) the one with the fewest goes first.
FLEETSIM_HD inline void scale_down_one(Sim& s, int32_t pi, double t) {
  PoolState& ps = s.pool[pi];
  const PoolParams& P = s.p->pools[pi];
  int32_t victim = kNone, best = 0, best_peers = 0;
  const bool central = P.router == Router::central_queue;
  for (int32_t r = ps.first_replica + ps.n_replicas - 1; r >= ps.first_replica; --r) {
    const Replica& R = s.rep[r];
    // a start not yet finished is the cheapest to cancel, unless requests already wait for it
    if (R.state == kStarting && (central || s.q[R.queue].size == 0) && R.host_n == 0) {
      victim = r;
      break;
    }
    if (R.state != kReady) continue;
    const int32_t o = outstanding(s, r);
    int32_t peers = P.replicas_per_node > 0 ? node_replicas(s, ps, P, node_slot(ps, P, r)) : 0;
    if (P.empty_nodes_first) peers = P.replicas_per_node - peers;
    if (victim == kNone || peers > best_peers || (peers == best_peers && o < best)) {
      victim = r;
      best = o;
      best_peers = peers;
    }
  }
  if (victim == kNone) return;
  if (ps.n_ready + ps.n_starting == 1) {
    if (ps.host_jobs > 0) return;  // the last replica stays while requests wait
    for (int32_t qi = ps.first_queue; qi < ps.first_queue + ps.n_queues; ++qi)
      if (s.q[qi].size > 0) return;
  }
  s.tally->pools[pi].scale_downs += in_window(s, t);
  ps.last_scale = t;
  const Replica& V = s.rep[victim];
  const bool idle = V.state == kStarting || (!V.busy && V.host_n == 0 && (central || s.q[V.queue].size == 0) &&
                                             (P.batching == Batching::continuous ? V.n_running == 0 : V.batch_n == 0));
  if (idle) {
    replica_off(s, victim, t);
  } else {
    set_state(s, victim, kDraining, t);
  }
}

// The autoscaler's metric and the replica count it asks for.
FLEETSIM_HD inline int32_t autoscale_desired(Sim& s, int32_t pi, double t, int32_t current) {
  const PoolParams& P = s.p->pools[pi];
  const AutoscaleParams& A = P.autoscale;
  PoolState& ps = s.pool[pi];
  int64_t waiting = 0, running = 0;
  for (int32_t qi = ps.first_queue; qi < ps.first_queue + ps.n_queues; ++qi) waiting += s.q[qi].size;
  for (int32_t r = ps.first_replica; r < ps.first_replica + ps.n_replicas; ++r)
    running += P.batching == Batching::continuous ? s.rep[r].n_running : s.rep[r].batch_n;
  const double interval = max_of(t - ps.last_eval, 1e-9);
  double ratio = -1.0;  // metric / target, for the signals that scale the current count
  switch (A.signal) {
    case ScaleSignal::queue_depth: return int32_t(min_of(1.0e6, dm::ceil(double(waiting) / A.target)));
    case ScaleSignal::inflight: return int32_t(min_of(1.0e6, dm::ceil(double(waiting + running) / A.target)));
    case ScaleSignal::ttft: {
      // the chosen percentile of first-token times completed within the window
      int32_t n = 0;
      double value = 0.0;
      for (int32_t i = 0; i < ps.ttft_n; ++i)
        if (t - ps.ttft_t[i] <= A.ttft_window_s) ++n;
      if (n == 0) return waiting + running + ps.host_jobs > 0 ? max_of(current, 1) : 0;
      const int32_t rank = max_of(1, int32_t(dm::ceil(A.ttft_quantile * double(n))));
      for (int32_t i = 0; i < ps.ttft_n; ++i) {
        if (t - ps.ttft_t[i] > A.ttft_window_s) continue;
        int32_t below = 0, equal = 0;
        for (int32_t j = 0; j < ps.ttft_n; ++j) {
          if (t - ps.ttft_t[j] > A.ttft_window_s) continue;
          below += ps.ttft_v[j] < ps.ttft_v[i] ? 1 : 0;
          equal += ps.ttft_v[j] == ps.ttft_v[i] ? 1 : 0;
        }
        if (below < rank && below + equal >= rank) {
          value = ps.ttft_v[i];
          break;
        }
      }
      ratio = value / A.target;
      break;
    }
    case ScaleSignal::busy: {
      const double ready = max_of(double(ps.n_ready + ps.n_draining), 1.0);
      ratio = (ps.busy_acc / interval / ready) / A.target;
      break;
    }
    case ScaleSignal::host_cpu: {
      // the host CPU only tokenizes and serves HTTP: it stays low while the device saturates
      const double ready = max_of(double(ps.n_ready + ps.n_draining), 1.0);
      double cpu;
      if (P.host.cores > 0) {  // the modelled host stage: its cores' busy share over the interval
        host_advance(s, pi, t);
        cpu = min_of(1.0, A.cpu_base + ps.host_busy_acc / interval / (ready * double(P.host.cores)));
      } else {
        cpu = min_of(1.0, A.cpu_base + A.cpu_per_request_s * ps.arrivals_since / interval / ready);
      }
      ratio = cpu / A.target;
      break;
    }
  }
  const int32_t floor = waiting + running + ps.host_jobs > 0 ? 1 : 0;  // work is waiting: never ask for none
  if (current == 0) return ratio > 0.0 ? 1 : floor;
  if (ratio >= 1.0 - A.tolerance && ratio <= 1.0 + A.tolerance) return current;
  return max_of(floor, int32_t(min_of(1.0e6, dm::ceil(double(current) * ratio))));
}

FLEETSIM_HD inline void autoscale_eval(Sim& s, int32_t pi, double t) {
  const PoolParams& P = s.p->pools[pi];
  const AutoscaleParams& A = P.autoscale;
  PoolState& ps = s.pool[pi];
  pool_advance(s, pi, t);
  const int32_t current = ps.n_ready + ps.n_starting;  // draining replicas are already leaving
  int32_t desired = autoscale_desired(s, pi, t, current);
  desired = max_of(P.min_replicas, min_of(P.max_replicas, desired));
  // stabilization: remember recommendations; scale up to the lowest of the up window, down to
  // the highest of the down window
  ps.hist_t[ps.hist_head] = t;
  ps.hist_d[ps.hist_head] = desired;
  ps.hist_head = ps.hist_head + 1 == kScaleHistory ? 0 : ps.hist_head + 1;
  if (ps.hist_n < kScaleHistory) ps.hist_n++;
  int32_t up = desired, down = desired;
  for (int32_t i = 0; i < ps.hist_n; ++i) {
    if (t - ps.hist_t[i] <= A.up_window_s) up = min_of(up, ps.hist_d[i]);
    if (t - ps.hist_t[i] <= A.down_window_s) down = max_of(down, ps.hist_d[i]);
  }
  if (up > current) {
    for (int32_t k = current; k < up; ++k)
      if (!replica_start(s, pi, t)) break;
  } else if (down < current && t - ps.last_scale >= A.cooldown_s) {
    for (int32_t k = down; k < current; ++k) scale_down_one(s, pi, t);
  }
  ps.busy_acc = 0.0;
  ps.arrivals_since = 0.0;
  if (P.host.cores > 0) {
    host_advance(s, pi, t);
    ps.host_busy_acc = 0.0;
  }
  ps.last_eval = t;
  ps.next_eval = t + A.interval_s;
}

}  // namespace fleetsim
