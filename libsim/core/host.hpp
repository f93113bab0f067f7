// The host CPU stage in front of the device (docs/model.md, "The host CPU"): tokenization and
// pre-processing before a request may queue for the device, and (optionally) detokenization of
// the finished response, on its replica's own `cores`. Each replica's host is a multi-server FCFS
// queue: a job takes the lowest free core for a time fixed by its lengths, or waits in the
// replica's host FIFO. Cores serve only while their replica is ready or draining.
//
// One event per job, "a core finishes", found through a heap of replicas ordered by their
// earliest finishing core, as the device's events are through the replica heap; a simulation
// without a host stage never looks at it. Also here: joining the device queue (shared with
// arrivals without a host stage), and what a lost replica does to its host jobs.
#pragma once
#include "accounting.hpp"
#include "containers.hpp"
#include "continuous.hpp"
#include "decls.hpp"
#include "handoff.hpp"
#include "lifecycle.hpp"
#include "prefix_cache.hpp"
#include "state.hpp"
#include "static_batching.hpp"

namespace fleetsim {

enum HostStage : int16_t { kHostNone = 0, kHostPre = 1, kHostPost = 2 };

FLEETSIM_HD FLEETSIM_FORCEINLINE bool host_serving(const Replica& R) {
  return R.state == kReady || R.state == kDraining;
}

// The replica heap of host events, ordered by (host_next, index) like the device's.
FLEETSIM_HD FLEETSIM_FORCEINLINE bool hh_less(const Sim& s, int32_t a, int32_t b) {
  const double ta = s.rep[a].host_next, tb = s.rep[b].host_next;
  return ta < tb || (ta == tb && a < b);
}
FLEETSIM_HD inline void hh_update(Sim& s, int32_t r) {
  heap_fix(s.hheap, s.hheap_pos, s.n_replicas, r, [&s](int32_t a, int32_t b) { return hh_less(s, a, b); });
}

// Replica r's earliest finishing core, into the heap.
FLEETSIM_HD inline void host_set_next(Sim& s, int32_t r) {
  Replica& R = s.rep[r];
  const int32_t C = pool_of(s, r).host.cores;
  double best = kInf;
  for (int32_t k = 0; k < C; ++k) {
    const int64_t i = R.host_base + k;
    if (s.core_job[i] != kNone && s.core_free[i] < best) best = s.core_free[i];
  }
  if (best != R.host_next) {
    R.host_next = best;
    hh_update(s, r);
  }
}

// Start the jobs waiting at replica r's host on its free cores (lowest first).
FLEETSIM_HD inline void host_fill(Sim& s, int32_t r, double t) {
  Replica& R = s.rep[r];
  const PoolParams& P = pool_of(s, r);
  if (P.host.cores == 0) return;
  if (host_serving(R) && R.host_busy < P.host.cores && R.hq.size > 0) {
    PoolState& ps = s.pool[R.pool];
    host_advance(s, R.pool, t);
    for (int32_t k = 0; k < P.host.cores && R.hq.size > 0; ++k) {
      const int64_t i = R.host_base + k;
      if (s.core_job[i] != kNone) continue;
      const int32_t ri = q_pop_front(s, R.hq);
      Request& q = s.req[ri];
      const double svc = q.host_stage == kHostPre ? q.host_s : P.host.detokenize_s_per_token * double(q.output);
      if (q.host_stage == kHostPre) q.t_host = t;
      s.core_job[i] = ri;
      s.core_start[i] = t;
      s.core_free[i] = t + svc;
      R.host_busy++;
      ps.host_busy++;
      ps.host_busy_draining += int32_t(R.state == kDraining);
    }
  }
  host_set_next(s, r);
}

// Request ri joins replica r's host stage (at the back of its FIFO, or the front for one whose
// tokenization a lost replica interrupted).
FLEETSIM_HD inline void host_submit(Sim& s, int32_t r, int32_t ri, int16_t stage, double t, bool front = false) {
  Replica& R = s.rep[r];
  s.req[ri].host_stage = stage;
  R.host_n++;
  lo_touch(s, R);
  s.pool[R.pool].host_jobs++;
  if (front)
    q_push_front(s, R.hq, ri);
  else
    q_push_back(s, R.hq, ri);
  host_fill(s, r, t);
}

// Request ri joins the device queue of replica `target` (its pool's central queue, or its own),
// and the replicas that can serve it are woken: an arrival without a host stage, or a request
// whose pre-processing just finished.
FLEETSIM_HD inline void enqueue_device(Sim& s, int32_t target, int32_t ri, double t) {
  const int32_t cls = s.req[ri].cls;
  const int32_t pi = s.rep[target].pool;
  const PoolParams& P = s.p->pools[pi];
  const PoolState& ps = s.pool[pi];
  Queue& Q = s.q[s.rep[target].queue];
  const bool was_empty = Q.size == 0;
  advance_clock(s, t);
  if (s.prioritized)
    q_insert_by_priority(s, Q, ri, s.p->classes[cls].priority, s.class_priority);
  else
    q_push_back(s, Q, ri);
  s.waiting[cls]++;

  const int32_t r0 = ps.first_replica, r1 = ps.first_replica + ps.n_replicas;
  if (P.batching == Batching::continuous) {
    if (P.router != Router::central_queue) {
      if (was_empty || !s.rep[target].busy) cont_kick(s, target, t);
    } else if (was_empty) {
      int32_t idle = kNone;  // (only where the pool has an idle serving replica: the counts say)
      if (ps.n_busy_serving < ps.n_ready + ps.n_draining)
        for (int32_t r = r0; r < r1; ++r)
          if (!s.rep[r].busy && s.rep[r].state == kReady) {
            idle = r;
            break;
          }
      if (idle != kNone) {
        cont_kick(s, idle, t);
      } else {
        cq_offer(s, pi, kNone, t);
      }
    }
  } else {
    if (P.router != Router::central_queue) {
      static_try_start(s, target, t);
    } else {
      for (int32_t r = r0; r < r1; ++r) static_try_start(s, r, t);
    }
  }
}

// The device finished request ri on replica r: it is done, or its response is post-processed
// (detokenized) on r's host first.
FLEETSIM_HD inline void device_done(Sim& s, int32_t r, int32_t ri, double t) {
  if (pool_of(s, r).cache_entries > 0) {  // its prompt's blocks stay in the replica's cache
    Request& q = s.req[ri];
    const int32_t* ids = nullptr;
    const int32_t n = request_blocks(s, q, ids);
    cache_unref(s, r, ids, q.cache_hits);
    q.cache_hits = 0;
    cache_insert(s, r, ids, n, t);
  }
  if (pool_of(s, r).disagg)  // a prefill pool: the prompt's KV goes on to decode
    handoff_send(s, r, ri, t);
  else if (pool_of(s, r).host.post && s.req[ri].output > 0)
    host_submit(s, r, ri, kHostPost, t);
  else
    record_done(s, r, ri, t);
}

// The earliest core of replica r finished its job at t.
FLEETSIM_HD inline void host_finish(Sim& s, int32_t r, double t) {
  Replica& R = s.rep[r];
  const PoolParams& P = pool_of(s, r);
  PoolState& ps = s.pool[R.pool];
  int64_t i = R.host_base;
  while (s.core_job[i] == kNone || s.core_free[i] != R.host_next) ++i;
  host_advance(s, R.pool, t);
  const int32_t ri = s.core_job[i];
  s.core_job[i] = kNone;
  R.host_busy--;
  ps.host_busy--;
  ps.host_busy_draining -= int32_t(R.state == kDraining);
  R.host_n--;
  lo_touch(s, R);
  ps.host_jobs--;
  Request& q = s.req[ri];
  const int16_t stage = q.host_stage;
  q.host_stage = kHostNone;
  host_fill(s, r, t);  // the next job takes the core
  if (stage == kHostPre) {
    q.t_queued = t;
    enqueue_device(s, r, ri, t);
  } else {
    record_done(s, r, ri, t);
  }
  // a draining replica stops once its device and its host are both empty
  if (R.state == kDraining && R.host_n == 0) {
    if (P.batching == Batching::continuous) {
      if (!R.busy) cont_kick(s, r, t);
    } else {
      static_try_start(s, r, t);
    }
  }
}

// Replica r was lost at t: the jobs on its cores lose their work. A request whose tokenization
// was cut goes back to the front of the host FIFO (counted as retried; given up after
// max_retries); a response being post-processed, or waiting to be, was on the lost node: the
// request is retried on the device like one it was running (requeue_lost).
FLEETSIM_HD inline void host_lose(Sim& s, int32_t r, double t) {
  Replica& R = s.rep[r];
  const PoolParams& P = pool_of(s, r);
  if (P.host.cores == 0 || R.host_n == 0) return;
  PoolState& ps = s.pool[R.pool];
  Queue& Q = s.q[R.queue];
  host_advance(s, R.pool, t);
  // a response lost with the node: the device work that made it is done again, as a lost slot's is
  auto lose_response = [&](int32_t ri) {
    const Request& q = s.req[ri];
    if (!q.in_window) return;
    const double lost = double(q.prompt) + double(q.generated);
    s.tally->classes[q.cls].lost_tokens += lost;
    s.tally->pools[R.pool].lost_tokens += lost;
  };
  // waiting responses first (they keep their order behind the interrupted ones below)
  for (int32_t n = R.hq.size; n > 0; --n) {
    const int32_t ri = q_pop_front(s, R.hq);
    if (s.req[ri].host_stage == kHostPre) {
      q_push_back(s, R.hq, ri);
      continue;
    }
    s.req[ri].host_stage = kHostNone;
    R.host_n--;
    lo_touch(s, R);
    ps.host_jobs--;
    lose_response(ri);
    requeue_lost(s, Q, ri, t);
  }
  // the jobs on cores, latest started first, so the earliest ends up at the front
  while (R.host_busy > 0) {
    int64_t i = kNone;
    for (int32_t k = 0; k < P.host.cores; ++k) {
      const int64_t j = R.host_base + k;
      if (s.core_job[j] != kNone && (i == kNone || s.core_start[j] >= s.core_start[i])) i = j;
    }
    const int32_t ri = s.core_job[i];
    const double a = max_of(s.core_start[i], s.W0), b = min_of(t, s.W1);
    if (b > a) s.tally->pools[R.pool].host_lost_s += b - a;
    s.core_job[i] = kNone;
    R.host_busy--;
    ps.host_busy--;
    ps.host_busy_draining -= int32_t(R.state == kDraining);
    Request& q = s.req[ri];
    if (q.host_stage == kHostPost) {
      q.host_stage = kHostNone;
      R.host_n--;
      lo_touch(s, R);
      ps.host_jobs--;
      lose_response(ri);
      requeue_lost(s, Q, ri, t);
      continue;
    }
    const ClassParams& C = s.p->classes[q.cls];
    q.retries++;
    if (q.retries > C.max_retries) {
      q.host_stage = kHostNone;
      R.host_n--;
      lo_touch(s, R);
      ps.host_jobs--;
      advance_clock(s, t);
      s.in_system[q.cls]--;
      if (q.in_window) s.tally->classes[q.cls].failed++;
      s.req_free[s.req_free_n++] = ri;
      client_done(s, q.cls, t, false, q.user, -1, kNone, -1, q.trace_row);
      continue;
    }
    if (q.in_window) s.tally->classes[q.cls].retried++;
    q_push_front(s, R.hq, ri);
  }
  host_set_next(s, r);
}

// The load balancer sends the requests waiting at lost replica r's host to the hosts of ready
// replicas (least outstanding first, while each keeps room for all it holds); the rest wait for
// r to come back.
FLEETSIM_HD inline void host_reroute(Sim& s, int32_t r, double t) {
  Replica& R = s.rep[r];
  const PoolParams& P = pool_of(s, r);
  if (P.host.cores == 0) return;
  const PoolState& ps = s.pool[R.pool];
  const int32_t cap = pool_queue_cap(P);
  while (R.hq.size > 0) {
    int32_t best = kNone, best_out = 0;
    for (int32_t o = ps.first_replica; o < ps.first_replica + ps.n_replicas; ++o) {
      if (o == r || s.rep[o].state != kReady) continue;
      const int32_t out = outstanding(s, o);
      note_room(s.tally->limits.pools[R.pool].queue_room, int64_t(cap) - 1 - out);
      if (out >= cap) continue;
      if (best == kNone || out < best_out) {
        best = o;
        best_out = out;
      }
    }
    if (best == kNone) break;
    const int32_t ri = q_pop_front(s, R.hq);
    R.host_n--;
    lo_touch(s, R);
    s.pool[R.pool].host_jobs--;
    host_submit(s, best, ri, kHostPre, t);
  }
}

}  // namespace fleetsim
