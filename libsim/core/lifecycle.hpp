// A replica's life: how long a cold start or a restart takes, failures (crashes, spot reclaims,
// hardware) and the requests they put back, starting a replica, stopping it, and its becoming ready.
#pragma once
#include "accounting.hpp"
#include "containers.hpp"
#include "continuous.hpp"
#include "philox.hpp"
#include "slots.hpp"
#include "state.hpp"
#include "static_batching.hpp"
#include "steptime.hpp"

namespace fleetsim {

// A stage's duration: its median, spread lognormally by sigma (0: exactly the median).
// `start_no` keys the draw: the replica's starts before this one.
FLEETSIM_HD inline double stage_s(const Sim& s, int32_t r, int32_t start_no, double median, double sigma,
                                  uint32_t sub) {
  if (sigma <= 0.0 || median <= 0.0) return median;
  const Replica& R = s.rep[r];
  const double u =
      s.rng.uniform(Stream::lifecycle, uint32_t(R.pool), uint64_t(r) * 1000003ULL + uint64_t(start_no), sub);
  return median * dm::exp(sigma * normal_quantile(u));
}

// The stages of a start, in seconds: provisioning, image pull, weights fetch, weights load and
// warm-up. A cold start (a new node) has them all; a restart on the same node (a crash) fetches
// weights from the node-local cache if it hits, loads and warms up.
FLEETSIM_HD inline void start_stages(const Sim& s, int32_t r, bool new_node, int32_t start_no, double* st) {
  const Replica& R = s.rep[r];
  const ColdStartParams& c = s.p->pools[R.pool].cold;
  const double u = s.rng.uniform(Stream::lifecycle, uint32_t(R.pool), uint64_t(r) * 1000003ULL + uint64_t(start_no),
                                 new_node ? 0 : 2);
  const bool hit = u < c.cache_hit_probability;
  // a start on a node already obtained waits for what is left of its provisioning and image pull
  st[0] = new_node ? stage_s(s, r, start_no, c.provision_s, c.provision_sigma, 10) : R.node_wait_prov_s;
  st[1] = new_node ? stage_s(s, r, start_no, c.image_pull_s, c.image_pull_sigma, 11) : R.node_wait_pull_s;
  st[2] = hit ? c.fetch_bytes / c.cache_bytes_per_s : c.fetch_bytes / c.download_bytes_per_s;
  st[3] = c.weights_bytes / c.load_bytes_per_s;
  st[4] = stage_s(s, r, start_no, c.warmup_s, c.warmup_sigma, 12);
  st[kAwaitingDevice] = 0.0;  // replica_fail adds the wait for a repaired device
}

// The part of [a, a + d) inside the window (all of d where the window holds it).
FLEETSIM_HD FLEETSIM_FORCEINLINE double window_span(const Sim& s, double a, double d) {
  if (a >= s.W0) return a < s.W1 ? min_of(d, s.W1 - a) : 0.0;
  return max_of(0.0, min_of(a + d, s.W1) - s.W0);
}

// Replica r starts at `from` on a node (or a shared device) another start obtained: it waits for
// what is left of that node's provisioning and image pull, and holds the node's times itself.
FLEETSIM_HD inline void set_node_waits(Sim& s, int32_t r, double from) {
  Replica& R = s.rep[r];
  const PoolParams& P = s.p->pools[R.pool];
  double prov = -kInf, up = -kInf;
  if (P.replicas_per_node > 0) {
    const Replica& F = s.rep[node_slot(s.pool[R.pool], P, r)];
    prov = F.node_prov_at;
    up = F.node_up_at;
  } else if (P.device_tenants > 1) {
    int32_t d0 = 0, d1 = 0;
    tenants_of(s, r, &d0, &d1);
    for (int32_t k = d0; k < d1; ++k)
      if (k != r && s.rep[k].state != kOff) {
        prov = max_of(prov, s.rep[k].node_prov_at);
        up = max_of(up, s.rep[k].node_up_at);
      }
  }
  R.node_wait_prov_s = max_of(0.0, prov - from);
  R.node_wait_pull_s = max_of(0.0, up - max_of(from, prov));
  R.node_prov_at = prov;
  R.node_up_at = up;
}

// A start that obtained a node records when it is up on the node's first slot, where the node's
// other starts read it.
FLEETSIM_HD inline void note_node_up(Sim& s, int32_t r) {
  const Replica& R = s.rep[r];
  const PoolParams& P = s.p->pools[R.pool];
  if (P.replicas_per_node == 0) return;
  Replica& F = s.rep[node_slot(s.pool[R.pool], P, r)];
  F.node_prov_at = R.node_prov_at;
  F.node_up_at = R.node_up_at;
}

// Seconds from asking for replica r to its first request, its stages running from `from` (the
// request's time, or later after a wait for a repaired device). Each stage's time inside the window
// is tallied, so the ledger can split the window's cold-start time by stage, a start asked for
// before the window included.
FLEETSIM_HD inline double begin_start(Sim& s, int32_t r, bool new_node, double asked, double from) {
  Replica& R = s.rep[r];
  if (new_node) {  // a new node's device starts cool
    R.heat = 0.0;
    R.heat_t = from;
  }
  R.start_asked = asked;
  R.start_from = from;
  R.start_no = R.starts;
  R.start_new_node = new_node;
  double st[kColdStages];
  start_stages(s, r, new_node, R.start_no, st);
  if (new_node) {  // the node (or device) it obtains is up once these two stages are done
    R.node_prov_at = from + st[0];
    R.node_up_at = R.node_prov_at + st[1];
  }
  PoolTally& T = s.tally->pools[s.rep[r].pool];
  double a = from;
  for (int32_t k = 0; k < kColdStages; ++k) {
    T.cold_stage_s[k] += window_span(s, a, st[k]);
    a += st[k];
  }
  return (((st[0] + st[1]) + st[2]) + st[3]) + st[4];
}

// Replica r's cold start ends at t before its time (scaled down, reclaimed, lost with a neighbour):
// the stages it had not run, and the rest of a wait for a device, come off the stage tallies, so
// that the stages add up to the cold-start time billed.
FLEETSIM_HD inline void cut_start(Sim& s, int32_t r, double t) {
  const Replica& R = s.rep[r];
  if (R.state != kStarting) return;
  PoolTally& T = s.tally->pools[R.pool];
  double st[kColdStages];
  start_stages(s, r, R.start_new_node != 0, R.start_no, st);
  st[kAwaitingDevice] = R.start_from - R.start_asked;
  for (int32_t k = 0; k < kColdStages; ++k) {
    // the wait comes first, from the ask; the stages follow it in order
    double a = k == kAwaitingDevice ? R.start_asked : R.start_from;
    for (int32_t j = 0; j < k && k != kAwaitingDevice; ++j) a += st[j];
    const double ran = min_of(max_of(t - a, 0.0), st[k]);
    T.cold_stage_s[k] -= window_span(s, a, st[k]) - window_span(s, a, ran);
  }
}

// An owned device failed at t: it goes to repair (back after repair_s) and its replica takes a
// spare from the shelf, or waits for the first device back from repair (its own, without spares).
// Returns the wait. The devices in repair never outnumber the spares, so the ring is bounded.
FLEETSIM_HD inline double await_device(Sim& s, int32_t pi, double t) {
  PoolState& ps = s.pool[pi];
  const PoolParams& P = s.p->pools[pi];
  int32_t k = 0;
  for (int32_t i = 0; i < ps.n_repair; ++i) {
    if (ps.repair_t[i] <= t)
      ps.shelf++;  // repaired: back on the shelf
    else
      ps.repair_t[k++] = ps.repair_t[i];
  }
  ps.n_repair = k;
  if (ps.shelf > 0) {
    ps.shelf--;
    ps.repair_t[ps.n_repair++] = t + P.repair_s;
    return 0.0;
  }
  double first = t + P.repair_s;  // its own device, unless another comes back sooner
  for (int32_t i = 0; i < ps.n_repair; ++i)
    if (ps.repair_t[i] < first) {
      const double x = ps.repair_t[i];
      ps.repair_t[i] = first;  // taken: the failed device goes to repair in its place
      first = x;
    }
  return first - t;
}

// The load balancer sends the requests queued at replica r, which cannot serve them (lost, or
// not up yet), to ready replicas: least outstanding first, while each keeps room in its queue for
// everything it runs (a preemption or failure pushes those back). The rest wait for r.
FLEETSIM_HD inline void reroute_queue(Sim& s, int32_t r, double t) {
  const Replica& R = s.rep[r];
  const PoolParams& P = pool_of(s, r);
  const PoolState& ps = s.pool[R.pool];
  Queue& Q = s.q[R.queue];
  while (Q.size > 0) {
    int32_t best = kNone, best_out = 0;
    for (int32_t o = ps.first_replica; o < ps.first_replica + ps.n_replicas; ++o) {
      if (o == r || s.rep[o].state != kReady) continue;
      const int32_t out = outstanding(s, o);
      note_room(s.tally->limits.pools[R.pool].queue_room, int64_t(s.q[s.rep[o].queue].cap) - 1 - out);
      if (out >= s.q[s.rep[o].queue].cap) continue;
      if (best == kNone || out < best_out) {
        best = o;
        best_out = out;
      }
    }
    if (best == kNone) break;
    Queue& O = s.q[s.rep[best].queue];
    const bool was_empty = O.size == 0;
    const int32_t ri = q_pop_front(s, Q);
    if (s.prioritized)  // in its class's place, as any request joining a queue
      q_insert_by_priority(s, O, ri, s.p->classes[s.req[ri].cls].priority, s.class_priority);
    else
      q_push_back(s, O, ri);
    if (was_empty) {
      if (P.batching == Batching::continuous)
        cont_kick(s, best, t);
      else
        static_try_start(s, best, t);
    }
  }
}

// A request whose replica was lost: back to the front of the queue to be retried (a checkpointed
// class keeps its progress), or given up after max_retries.
FLEETSIM_HD inline void requeue_lost(Sim& s, Queue& Q, int32_t ri, double t) {
  Request& q = s.req[ri];
  const ClassParams& C = s.p->classes[q.cls];
  ClassTally& T = s.tally->classes[q.cls];
  if (!C.checkpointed) q.generated = 0;
  q.retries++;
  q.cache_hits = 0;  // its replica's cache is gone with it
  // and so is a session's conversation, which only that replica held (a trace's prefix is in the
  // pool-wide cache)
  if ((s.session_classes >> q.cls) & 1) q.cached = 0;
  advance_clock(s, t);
  if (q.retries > C.max_retries) {
    s.in_system[q.cls]--;
    if (q.in_window) T.failed++;
    s.req_free[s.req_free_n++] = ri;
    client_done(s, q.cls, t, false, q.user, -1, kNone, -1, q.trace_row);
    return;
  }
  if (q.in_window) T.retried++;
  q_push_front(s, Q, ri);
  s.waiting[q.cls]++;
}

// Replica r, lost, sent its work back to its pool's central queue: the others can take it now.
FLEETSIM_HD inline void hand_back_central(Sim& s, int32_t r, double t) {
  const PoolParams& P = pool_of(s, r);
  if (P.batching == Batching::continuous) {
    cq_offer(s, s.rep[r].pool, r, t);
  } else {
    const PoolState& ps = s.pool[s.rep[r].pool];
    for (int32_t o = ps.first_replica; o < ps.first_replica + ps.n_replicas; ++o)
      if (o != r) static_try_start(s, o, t);
  }
}

// Lose replica r at time t (a crash, a spot reclaim, a hardware failure): its requests are
// retried, its KV state is gone, and it comes back after a restart on the same node or a full
// cold start on a new one. `culprit` is a request the replica was taking when it died (or kNone).
// An owned device's wait for a spare is `device_wait` when given (>= 0), else drawn; the wait
// is returned. `first` is false for an MPS client that follows the first onto its new node: one
// node obtained, counted once against max_starts.
FLEETSIM_HD inline double replica_fail_one(Sim& s, int32_t r, double t, bool new_node, int32_t culprit,
                                           double device_wait, bool first = true, bool owned = true) {
  Replica& R = s.rep[r];
  const PoolParams& P = pool_of(s, r);
  Queue& Q = s.q[R.queue];
  cut_start(s, r, t);      // a start under way is over: it starts again below
  double wasted_from = t;  // work in flight since then is lost; its time still counts as busy
  if (R.busy && P.batching == Batching::continuous && R.run_k > 0) {
    wasted_from = R.run_t0;
    if (!R.run_prefill) {  // the decode steps that completed before t happened: apply them
      int64_t j = line_steps_until(R.run_line, R.run_k, t - R.run_t0);
      if (R.run_t0 + line_sum(R.run_line, j) > t) j -= 1;
      if (j > 0) {
        const double tj = R.run_t0 + line_sum(R.run_line, j);
        R.run_k = j;
        cont_finish_run(s, r, tj);
        wasted_from = tj;
      }
    }
  } else if (R.busy && P.batching == Batching::fixed_batch && R.batch_n > 0) {
    static_take_back(s, r, t);  // a static batch was accounted when it formed
  }
  if (t > wasted_from && !R.run_cpu) {  // (steps on the host CPU are no device time)
    const double a = max_of(wasted_from, s.W0), b = min_of(t, s.W1);
    if (b > a) account_busy(s, R, b - a);  // split as the run was: prefill, decode, classes
  }
  if (culprit != kNone) requeue_lost(s, Q, culprit, t);
  if (P.batching == Batching::continuous) {
    while (R.run_tail != kNone) {  // newest first, so the oldest ends up at the front
      const int32_t sl = R.run_tail;
      Seq& x = slot(s, r, sl);
      {
        const Request& q = s.req[x.req];
        // (with the cache gone, the tokens it took over from the request are lost too)
        const double lost =
            double((x.decoding ? x.L0 + x.adopted + (R.step - x.s0) : int64_t(x.prefill_done)) - x.loaded);
        if (q.in_window) {
          s.tally->classes[q.cls].lost_tokens += lost;
          s.tally->pools[R.pool].lost_tokens += lost;
        }
      }
      if (x.decoding) {
        s.req[x.req].generated += int32_t(R.step - x.s0);
        stop_decoding(s, r, sl);
      } else {
        list_remove_pf(s, r, sl);
      }
      const int32_t ri = x.req;
      release_slot(s, r, sl);
      requeue_lost(s, Q, ri, t);
    }
    R.free_blocks = P.kv_total_blocks;
    R.pinned_blocks = 0;
    R.prefix_ready = 0;
    R.cache_blocks = 0;
    cache_clear(s, r);
  } else {
    for (int32_t i = R.batch_n - 1; i >= 0; --i) {
      const Request& q = s.req[slot(s, r, i).req];  // its prefill at least (the decode progress is not tracked)
      if (q.in_window && t >= R.batch_t_first) {
        s.tally->classes[q.cls].lost_tokens += double(q.prompt);
        s.tally->pools[R.pool].lost_tokens += double(q.prompt);
      }
      requeue_lost(s, Q, slot(s, r, i).req, t);
    }
    R.batch_n = 0;
    lo_touch(s, R);
  }
  host_lose(s, r, t);  // its host jobs: interrupted tokenizations, responses not yet sent
  set_busy(s, r, 0, t);
  R.run_k = 0;
  R.run_prefill = 0;
  const bool was_draining = R.state == kDraining;
  if (P.router != Router::central_queue) reroute_queue(s, r, t);  // the lost requests, and those queued here
  host_reroute(s, r, t);
  // it was leaving anyway: it stays off once nothing waits for it (a central queue's work waits for
  // the pool, not for it: the others take it up, below)
  const bool central = P.router == Router::central_queue;
  const bool repair = P.repair_s > 0.0 && new_node && owned;  // an owned device: no new node
  if (was_draining && (central || Q.size == 0) && R.host_n == 0) {
    // its device goes to repair all the same: the slot's next start waits for a device (and the
    // replicas sharing the device wait as long)
    double wait = device_wait;
    if (repair) {
      if (wait < 0.0) wait = await_device(s, R.pool, t);
      R.device_at = t + wait;
    }
    replica_off(s, r, t);
    if (central && Q.size > 0) hand_back_central(s, r, t);
    return wait;
  }
  double wait = 0.0;
  if (repair) {  // a spare or a repaired device
    wait = device_wait >= 0.0 ? device_wait : await_device(s, R.pool, t);
    R.device_at = t + wait;
    new_node = false;
    // a spare from the shelf, or the device back from days of repair: cool either way
    R.heat = 0.0;
    R.heat_t = t + wait;
    // the part inside the window: the capacity the failure cost there
    s.tally->pools[R.pool].cold_stage_s[kAwaitingDevice] += window_span(s, t, wait);
  }
  if (!new_node) set_node_waits(s, r, t + wait);
  const double back = wait + begin_start(s, r, new_node, t, t + wait);
  if (new_node) note_node_up(s, r);
  R.starts++;
  if (new_node && first) {  // a replacement node counts against the nodes obtainable
    PoolState& ps = s.pool[R.pool];
    ps.start_t[ps.start_head] = t;
    ps.start_head = ps.start_head + 1 == kScaleHistory ? 0 : ps.start_head + 1;
    ps.starts++;
  }
  set_state(s, r, kStarting, t);
  set_next(s, r, t + back);
  if (central && Q.size > 0) hand_back_central(s, r, t);
  return wait;
}

// Lose replica r at time t. A lost device (a reclaim, a hardware failure: new_node) takes every
// replica on it -- time-sliced, MPS clients, MIG slices -- and they restart the same way, at
// once. MPS clients also share a crash: a fatal fault in one is a fault of every client of its
// server (time-sliced processes and MIG slices keep theirs apart). A client still starting is not
// on the server yet: a crash leaves it to finish its own start (a lost device does not); nor is a
// client fallen back to the host CPU, whose crash is its own and whom a crash does not reach.
FLEETSIM_HD inline void replica_fail(Sim& s, int32_t r, double t, bool new_node, int32_t culprit, bool owned) {
  const PoolParams& P = pool_of(s, r);
  const bool off_server = !new_node && fallen_back(P, s.rep[r], t);
  const double wait = replica_fail_one(s, r, t, new_node, culprit, -1.0, true, owned);
  if (P.device_tenants <= 1 || (!new_node && P.mps_clients <= 1) || off_server) return;
  int32_t d0 = 0, d1 = 0;
  tenants_of(s, r, &d0, &d1);
  for (int32_t o = d0; o < d1; ++o) {
    if (o == r || s.rep[o].state == kOff || (!new_node && s.rep[o].state == kStarting)) continue;
    if (!new_node && fallen_back(P, s.rep[o], t)) continue;
    s.tally->pools[s.rep[o].pool].neighbour_failures += in_window(s, t);
    replica_fail_one(s, o, t, new_node, kNone, wait, false, owned);
  }
}

// A spot reclaim or hardware failure hits one provisioned replica of pool pi, chosen uniformly
// (where replicas share a device: one device in use, and every replica on it).
FLEETSIM_HD inline void pool_interrupt(Sim& s, int32_t pi, double t) {
  PoolState& ps = s.pool[pi];
  const PoolParams& P = s.p->pools[pi];
  const double u = s.rng.uniform(Stream::lifecycle, uint32_t(16 + pi), uint64_t(ps.fail_draws++), 3);
  const int32_t units = loss_units(s, pi);
  int32_t k = int32_t(u * double(units));
  // an owned pool bills its provisioned units owned first and rents the rest (cost/ledger.cpp): a
  // draw among the first `owned_replicas` units hit an owned device, which goes to repair; one
  // beyond them a rented device, which the cloud replaces with a new node
  const int32_t n = max_of(P.device_tenants, 1), end = ps.first_replica + ps.n_replicas;
  const bool owned = k < (P.owned_replicas + n - 1) / n;
  int32_t victim = kNone;
  for (int32_t d0 = ps.first_replica; d0 < end && victim == kNone; d0 += n) {
    int32_t live = kNone;  // the device's first provisioned replica
    for (int32_t r = d0; r < min_of(d0 + n, end) && live == kNone; ++r)
      if (s.rep[r].state != kOff) live = r;
    if (live != kNone && k-- == 0) victim = live;
  }
  // an owned replica still waiting for a device has none to lose: a draw that lands on it finds
  // no device in service there (failures thin to the devices in service, uniformly among them)
  if (victim != kNone && s.rep[victim].device_at > t) victim = kNone;
  if (victim != kNone) {
    s.tally->pools[pi].interruptions += in_window(s, t);
    if (owned) s.tally->pools[pi].owned_failures += in_window(s, t);
  }
  ps.next_fail = kInf;
  if (victim != kNone) replica_fail(s, victim, t, true, kNone, owned);
  // the next one (set_state redraws only when the provisioned count changes)
  const double rate = loss_rate(s.p->pools[pi], loss_units(s, pi));
  if (rate > 0.0) {
    const double v = s.rng.uniform(Stream::lifecycle, uint32_t(16 + pi), uint64_t(ps.fail_draws++), 1);
    ps.next_fail = t - dm::log(v) / rate;
  }
}

// Ask for a new replica in a free slot of pool pi; false if none is free or capacity is capped.
FLEETSIM_HD inline bool replica_start(Sim& s, int32_t pi, double t) {
  PoolState& ps = s.pool[pi];
  const AutoscaleParams& A = s.p->pools[pi].autoscale;
  // the caps count nodes obtained: a replica placed on a node already up takes none
  auto capped = [&]() {
    if (A.max_starts > 0 && ps.starts >= A.max_starts) return true;
    if (A.max_starts_per_hour > 0.0) {
      int32_t recent = 0;  // starts within the last hour (the ring keeps the latest kScaleHistory)
      for (int32_t i = 0; i < min_of(ps.starts, kScaleHistory); ++i)
        if (t - ps.start_t[i] < 3600.0) ++recent;
      if (double(recent) >= A.max_starts_per_hour) return true;
    }
    return false;
  };
  const PoolParams& P = s.p->pools[pi];
  int32_t pick = kNone;
  bool new_node = true;
  if (P.replicas_per_node > 0) {
    // a free slot on a node that is up first (no provisioning or image pull), else a new node
    pool_advance(s, pi, t);  // nodes whose time has come are gone
    for (int32_t r = ps.first_replica; r < ps.first_replica + ps.n_replicas && pick == kNone; ++r)
      if (s.rep[r].state == kOff && s.rep[node_slot(ps, P, r)].node_until >= 0.0) pick = r;
    new_node = pick == kNone;
    if (new_node && capped()) return false;
    if (new_node && P.max_node_groups > 0 && ps.nodes_up >= P.max_node_groups) {
      s.tally->pools[pi].unschedulable += in_window(s, t);  // free devices, but none a replica fits
      return false;
    }
  }
  // time-sliced replicas, MPS clients and MIG slices: a place on a device another replica holds
  // is on a node that is up
  const int32_t shared = max_of(P.device_tenants, 1);
  auto device_up = [&](int32_t r) {
    int32_t d0 = 0, d1 = 0;
    tenants_of(s, r, &d0, &d1);
    for (int32_t k = d0; k < d1; ++k)
      if (k != r && s.rep[k].state != kOff) return true;
    return false;
  };
  const bool cap = P.replicas_per_node == 0 && capped();
  if (cap && shared == 1) return false;
  // an owned pool's slot whose device is in repair waits for it: slots with their device first
  for (int32_t r = ps.first_replica; r < ps.first_replica + ps.n_replicas && pick == kNone; ++r)
    if (s.rep[r].state == kOff && s.rep[r].device_at <= t && (!cap || device_up(r))) pick = r;
  for (int32_t r = ps.first_replica; r < ps.first_replica + ps.n_replicas && pick == kNone; ++r)
    if (s.rep[r].state == kOff && (!cap || device_up(r))) pick = r;
  if (P.replicas_per_node == 0 && shared > 1 && pick != kNone) new_node = !device_up(pick);
  if (pick != kNone) {
    const int32_t r = pick;
    Replica& R = s.rep[r];
    const double wait = R.device_at > t ? R.device_at - t : 0.0;
    s.tally->pools[pi].cold_stage_s[kAwaitingDevice] += window_span(s, t, wait);
    set_state(s, r, kStarting, t);
    if (!new_node) set_node_waits(s, r, t + wait);
    set_next(s, r, t + wait + begin_start(s, r, new_node, t, t + wait));
    if (new_node) note_node_up(s, r);
    R.starts++;
    if (new_node) {
      ps.start_t[ps.start_head] = t;
      ps.start_head = ps.start_head + 1 == kScaleHistory ? 0 : ps.start_head + 1;
      ps.starts++;
    }
    ps.last_scale = t;
    s.tally->pools[pi].scale_ups += in_window(s, t);
    return true;
  }
  return false;
}

// A replica stops billing: it has drained, or it was idle when the autoscaler removed it.
FLEETSIM_HD inline void replica_off(Sim& s, int32_t r, double t) {
  Replica& R = s.rep[r];
  cut_start(s, r, t);
  R.free_blocks += R.pinned_blocks;  // the node and its cache are gone
  R.pinned_blocks = 0;
  R.prefix_ready = 0;
  cache_clear(s, r);
  set_busy(s, r, 0, t);
  set_state(s, r, kOff, t);
  R.run_k = 0;
  // (device_at stays: a device on its way from repair comes to this slot, and a start here waits for it)
  set_next(s, r, kInf);
}

// The end of a cold start: the replica serves from now on.
FLEETSIM_HD inline void replica_ready(Sim& s, int32_t r, double t) {
  Replica& R = s.rep[r];
  const PoolParams& P = pool_of(s, r);
  set_state(s, r, kReady, t);
  R.t_next = kInf;
  rh_update(s, r);
  host_fill(s, r, t);  // requests routed here while it started
  if (P.router != Router::central_queue) {
    // requests the load balancer left with replicas that are still starting (none was up when they
    // came, or when their replica was lost) come to the first one ready
    const PoolState& ps = s.pool[R.pool];
    for (int32_t o = ps.first_replica; o < ps.first_replica + ps.n_replicas; ++o)
      if (o != r && s.rep[o].state == kStarting) {
        reroute_queue(s, o, t);
        host_reroute(s, o, t);
      }
  }
  if (P.batching == Batching::continuous) {
    if (s.q[R.queue].size > 0) cont_kick(s, r, t);
  } else {
    static_try_start(s, r, t);
  }
}

}  // namespace fleetsim
