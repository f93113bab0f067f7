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
    // the last replica stays while requests wait, or their KV is on its way from a prefill pool
    if (ps.host_jobs > 0 || ps.in_transit > 0) return;
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
// Prometheus' histogram_quantile over counts of n > 0 values in the TTFT buckets: the bucket the
// q-th value falls in, interpolated linearly within it (from 0 for the first bucket); in the +Inf
// bucket, the highest finite edge.
FLEETSIM_HD inline double ttft_histogram_quantile(const int64_t* count, int64_t n, double q) {
  const double rank = q * double(n);
  int64_t below = 0;
  for (int32_t b = 0; b < kTtftBuckets - 1; ++b) {
    if (count[b] > 0 && double(below + count[b]) >= rank) {
      const double lo = b == 0 ? 0.0 : ttft_edge(b - 1), hi = ttft_edge(b);
      return lo + (hi - lo) * (rank - double(below)) / double(count[b]);
    }
    below += count[b];
  }
  return ttft_edge(kTtftBuckets - 2);
}

// Requests the prefill pools of decode pool pi hold (queued, in a batch, on their hosts): work
// headed for pi.
FLEETSIM_HD inline int64_t headed_for(const Sim& s, int32_t pi) {
  int64_t n = 0;
  for (int32_t k = 0; k < s.p->n_pools; ++k) {
    if (!s.p->pools[k].disagg || s.p->pools[k].decode_pool != pi) continue;
    const PoolState& ks = s.pool[k];
    n += ks.host_jobs;
    for (int32_t qi = ks.first_queue; qi < ks.first_queue + ks.n_queues; ++qi) n += s.q[qi].size;
    for (int32_t r = ks.first_replica; r < ks.first_replica + ks.n_replicas; ++r) n += s.rep[r].n_running;
  }
  return n;
}

// What the autoscaler of pool pi read at t, if t is in the window: the report says what it saw
// beside its target, whether it scaled or not.
FLEETSIM_HD FLEETSIM_FORCEINLINE void note_signal(Sim& s, int32_t pi, double t, double v) {
  if (!(t >= s.W0 && t < s.W1)) return;
  PoolTally& T = s.tally->pools[pi];
  T.signal_sum += v;
  T.signal_n += 1.0;
  if (v > T.signal_peak) T.signal_peak = v;
}

FLEETSIM_HD inline int32_t autoscale_desired(Sim& s, int32_t pi, double t, int32_t current) {
  const PoolParams& P = s.p->pools[pi];
  const AutoscaleParams& A = P.autoscale;
  PoolState& ps = s.pool[pi];
  int64_t waiting = 0, running = 0;
  for (int32_t qi = ps.first_queue; qi < ps.first_queue + ps.n_queues; ++qi) waiting += s.q[qi].size;
  for (int32_t r = ps.first_replica; r < ps.first_replica + ps.n_replicas; ++r)
    running += P.batching == Batching::continuous ? s.rep[r].n_running : s.rep[r].batch_n;
  const double interval = max_of(t - ps.last_eval, 1e-9);
  // work is waiting (or its KV on its way here, or its prompt in a prefill pool): never ask for none
  const int32_t floor = waiting + running + ps.host_jobs + int64_t(ps.in_transit) > 0 || headed_for(s, pi) > 0 ? 1 : 0;
  double ratio = -1.0;  // metric / target, for the signals that scale the current count
  switch (A.signal) {
    case ScaleSignal::queue_depth:
    case ScaleSignal::inflight: {
      // an average-value target: the total over the target, unless the per-replica average is
      // within the tolerance of it (Kubernetes applies its tolerance to every metric)
      const double total = double(waiting) + (A.signal == ScaleSignal::inflight ? double(running) : 0.0);
      if (current > 0) note_signal(s, pi, t, total / double(current));  // no replica reports no average
      if (current > 0) {
        const double r = total / (A.target * double(current));
        if (r >= 1.0 - A.tolerance && r <= 1.0 + A.tolerance) return current;
      }
      return max_of(floor, int32_t(min_of(1.0e6, dm::ceil(total / A.target))));
    }
    case ScaleSignal::ttft: {
      // the chosen percentile of the first-token times completed in the window's slices, as
      // Prometheus' histogram_quantile reads vLLM's histogram (state.hpp, ttft_edge)
      const int64_t now = int64_t(dm::floor(t / (A.ttft_window_s / double(kTtftSlices))));
      int64_t count[kTtftBuckets];
      for (int32_t b = 0; b < kTtftBuckets; ++b) count[b] = 0;
      int64_t n = 0;
      for (int32_t k = 0; k < kTtftSlices; ++k)
        if (ps.ttft_slice[k] >= 0 && ps.ttft_slice[k] > now - kTtftSlices && ps.ttft_slice[k] <= now)
          for (int32_t b = 0; b < kTtftBuckets; ++b) {
            count[b] += ps.ttft_count[k][b];
            n += ps.ttft_count[k][b];
          }
      if (n == 0) return floor > 0 ? max_of(current, 1) : 0;
      const double q = ttft_histogram_quantile(count, n, A.ttft_quantile);
      note_signal(s, pi, t, q);
      ratio = q / A.target;
      break;
    }
    case ScaleSignal::busy:
    case ScaleSignal::host_cpu: {
      // a utilization averaged over the replicas that report it, the ready ones: starting ones
      // report nothing, and draining ones are being deleted, which the HPA leaves out with their
      // metrics (groupPods). As Kubernetes' HPA: desired = ceil(ratio x reporting replicas); where
      // replicas are starting and the ratio says up, they count as reporting 0, and no change is
      // made if that brings the ratio within the tolerance or below 1 (replica_calculator.go)
      const int32_t reporting = ps.n_ready;
      const double ready = max_of(double(reporting), 1.0);
      double m;
      if (A.signal == ScaleSignal::busy) {
        m = ps.busy_acc / interval / ready;
      } else if (floor == 0 && ps.arrivals_since == 0.0) {
        m = 0.0;                      // nothing arrived, nothing in flight: an idle server's own load is no demand
      } else if (P.host.cores > 0) {  // the modelled host stage: its cores' busy share over the interval
        // (the host CPU only tokenizes and serves HTTP: it stays low while the device saturates)
        host_advance(s, pi, t);
        m = min_of(1.0, A.cpu_base + ps.host_busy_acc / interval / (ready * double(P.host.cores)));
      } else {
        m = min_of(1.0, A.cpu_base + A.cpu_per_request_s * ps.arrivals_since / interval / ready);
      }
      if (reporting > 0) note_signal(s, pi, t, m);  // (no ready replica has a metric to read)
      // no ready replica has a metric: as the HPA, which changes nothing without one, starts stay;
      // with none at all, demand starts one (an activator's cold start) and none keeps the floor
      if (reporting == 0) return current > 0 ? current : m > 0.0 ? 1 : floor;
      const double r = m / A.target;
      if (ps.n_starting > 0 && r > 1.0) {
        const double r_all = r * double(reporting) / double(reporting + ps.n_starting);
        if (r_all <= 1.0 + A.tolerance) return current;
      } else if (r >= 1.0 - A.tolerance && r <= 1.0 + A.tolerance) {
        return current;
      }
      return max_of(floor, int32_t(min_of(1.0e6, dm::ceil(double(reporting) * r))));
    }
  }
  // (ttft) a value target, as Kubernetes scales on an object metric: ceil(ratio x ready replicas),
  // draining ones among them (getReadyPodsCount counts running, ready pods, terminating or not:
  // kubernetes/kubernetes pkg/controller/podautoscaler/replica_calculator.go)
  if (current == 0) return ratio > 0.0 ? 1 : floor;
  if (ratio >= 1.0 - A.tolerance && ratio <= 1.0 + A.tolerance) return current;
  const int32_t ready = ps.n_ready + ps.n_draining;
  if (ready == 0) return current;  // all still starting: nothing to scale by yet
  return max_of(floor, int32_t(min_of(1.0e6, dm::ceil(double(ready) * ratio))));
}

// Record value v at time t and return the extreme (the highest when `highest`, else the lowest) of
// the values recorded within `window` seconds of t, v included (state.hpp, WindowExtreme).
FLEETSIM_HD inline int32_t window_push(WindowExtreme& q, double t, int32_t v, double window, bool highest) {
  auto at = [&q](int32_t i) { return (q.head + i) % kScaleHistory; };
  // entries the new value outdoes can never be the extreme again
  while (q.n > 0 && (highest ? q.v[at(q.n - 1)] <= v : q.v[at(q.n - 1)] >= v)) --q.n;
  while (q.n > 0 && t - q.t[q.head] >= window) {  // not newer than the window's start (Kubernetes: After(cutoff))
    q.head = at(1);
    --q.n;
  }
  if (q.n == kScaleHistory) {  // full: merge the two oldest into the older value at the newer time
    const int32_t a = at(0), b = at(1);
    q.v[b] = q.v[a];
    q.head = b;
    --q.n;
  }
  q.t[at(q.n)] = t;
  q.v[at(q.n)] = v;
  ++q.n;
  return q.v[q.head];
}

// Rate policies (Kubernetes' HPA behavior, selectPolicy Max): the count the changes of the last
// period allow, from the count at the period's start (the current one less what the period added,
// plus what it removed, in either direction: calculateScaleUpLimitWithScalingRules).
FLEETSIM_HD inline int32_t rate_limited(const PoolState& ps, const AutoscaleParams& A, int32_t current, int32_t desired,
                                        double t) {
  const bool up = desired > current;
  const int32_t pods = up ? A.up_pods : A.down_pods;
  const double percent = up ? A.up_percent : A.down_percent, period = up ? A.up_period_s : A.down_period_s;
  if (pods <= 0 && !(percent > 0.0)) return desired;
  int32_t net = 0;  // replicas added less those removed within the period
  for (int32_t i = 0; i < ps.change_n; ++i)
    if (t - ps.change_t[i] < period) net += ps.change_d[i];
  const double start = double(current - net);
  if (up) {
    double limit = 0.0;
    if (pods > 0) limit = start + double(pods);
    if (percent > 0.0) limit = max_of(limit, dm::ceil(start * (1.0 + percent / 100.0)));
    return min_of(desired, int32_t(min_of(limit, 1.0e6)));
  }
  double limit = start;
  if (pods > 0) limit = start - double(pods);
  // (a percentage down truncates, as Kubernetes' int32(start x (1 - p)) does; up, it rounds up)
  if (percent > 0.0) limit = min_of(pods > 0 ? limit : start, dm::floor(start * (1.0 - percent / 100.0)));
  return max_of(desired, int32_t(max_of(limit, 0.0)));
}

FLEETSIM_HD inline void note_change(PoolState& ps, double t, int32_t d) {
  if (d == 0) return;
  ps.change_t[ps.change_head] = t;
  ps.change_d[ps.change_head] = d;
  ps.change_head = ps.change_head + 1 == kScaleHistory ? 0 : ps.change_head + 1;
  if (ps.change_n < kScaleHistory) ps.change_n++;
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
  // the highest of the down window. The first evaluation records the count the pool started
  // with beside its own (Kubernetes' recordInitialRecommendation), so a fleet started larger than
  // it needs keeps it for a window
  if (ps.up_q.n == 0 && ps.down_q.n == 0) {
    window_push(ps.up_q, t, current, A.up_window_s, false);
    window_push(ps.down_q, t, current, A.down_window_s, true);
  }
  int32_t up = window_push(ps.up_q, t, desired, A.up_window_s, false);
  int32_t down = window_push(ps.down_q, t, desired, A.down_window_s, true);
  if (up > current) {
    up = rate_limited(ps, A, current, up, t);
    int32_t started = 0;
    for (int32_t k = current; k < up; ++k) {
      if (!replica_start(s, pi, t)) break;
      ++started;
    }
    note_change(ps, t, started);
  } else if (down < current && t - ps.last_scale >= A.cooldown_s) {
    down = rate_limited(ps, A, current, down, t);
    const int32_t before = ps.n_ready + ps.n_starting;
    for (int32_t k = down; k < current; ++k) scale_down_one(s, pi, t);
    note_change(ps, t, ps.n_ready + ps.n_starting - before);
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
