// The discrete-event simulation of one serving pool: the single simulation core, compiled for
// the host and (unchanged) for the device. Plain structs over a flat workspace sized from the
// parameters before the run; no allocation, exceptions, virtual calls or containers in here.
//
// Events are request arrivals, replica "run ends" and (with a host CPU stage) host cores finishing
// a job. A run is either one step that carries prefill work, or a stretch of decode-only steps
// during which the batch does not change; its length and duration are computed in closed form
// (steptime.hpp), so the cost of a simulation scales with requests and batch changes, not with
// generated tokens.
//
// This file is the event loop. The rest of the core is split by concern: state.hpp (the data),
// workspace.hpp (its layout), containers.hpp, accounting.hpp, stepwork.hpp, slots.hpp and kv.hpp,
// continuous.hpp and static_batching.hpp, lifecycle.hpp, autoscale.hpp, routing.hpp, host.hpp (the
// host CPU stage), handoff.hpp (disaggregated prefill), clients.hpp (closed-loop users) and
// trace_sessions.hpp (a trace's conversations);
// decls.hpp declares the few calls that go against that order.
#pragma once
#include "accounting.hpp"
#include "autoscale.hpp"
#include "clients.hpp"
#include "continuous.hpp"
#include "host.hpp"
#include "lifecycle.hpp"
#include "routing.hpp"
#include "state.hpp"
#include "static_batching.hpp"
#include "tally.hpp"
#include "workload.hpp"
#include "workspace.hpp"

namespace fleetsim {

// The replicas each pool starts with are warm at t = 0.
FLEETSIM_HD inline void sim_start_fleet(Sim& s, const SimParams& p) {
  for (int32_t pi = 0; pi < p.n_pools; ++pi) {
    const PoolState& ps = s.pool[pi];
    for (int32_t k = 0; k < p.pools[pi].replicas; ++k) set_state(s, ps.first_replica + k, kReady, 0.0);
  }
}

// A simulation ready to run: the workspace reset, the starting fleet warm, the first arrivals due.
FLEETSIM_HD inline Sim sim_begin(const SimParams& p, uint32_t replication, uint8_t* workspace, Tally& tally) {
  tally_clear(tally, p.n_pools, p.n_classes);
  Sim s = sim_bind(p, replication, workspace, &tally);
  tally.window_s = s.W1 - s.W0;
  sim_start_fleet(s, p);
  for (int32_t c = 0; c < p.n_classes; ++c)
    s.next_arrival[c] = (s.closed_classes >> c) & 1
                            ? client_next(s, c)
                            : first_arrival(p.classes[c].arrivals, s.rng, uint32_t(c), s.arr[c], p.duration_s);
  // a trace replayed as sessions keeps its next row apart from the turns released to it
  for (int32_t c = 0; c < p.n_classes; ++c)
    if ((s.trace_session_classes >> c) & 1) s.arr[c].next_t = s.next_arrival[c];
  return s;
}

// Whether the measurement window has nothing more to record at time t: t is past it, every
// request that arrived in it has left, and no run or host job that began before its end is still
// in flight (those are tallied when they end). Every later event adds nothing to the window's
// figures, so a run can stop here (a timeline interval or a budget window: backend/windows.cpp).
FLEETSIM_HD inline bool sim_window_closed(const Sim& s, double t) {
  if (t < s.W1) return false;
  int64_t open = 0;
  for (int32_t c = 0; c < s.p->n_classes; ++c) {
    const ClassTally& T = s.tally->classes[c];
    open += T.arrived - T.completed - T.rejected_queue_full - T.rejected_too_long - T.failed;
  }
  if (open != 0) return false;
  for (int32_t r = 0; r < s.n_replicas; ++r) {  // (a static batch is tallied when it forms)
    const Replica& R = s.rep[r];
    if (R.busy && R.run_k > 0 && R.run_t0 < s.W1 && s.p->pools[R.pool].batching == Batching::continuous) return false;
  }
  if (s.host_on) {
    const WorkspaceLayout l = workspace_layout(*s.p);
    for (int64_t i = 0; i < l.cores; ++i)
      if (s.core_job[i] != kNone && s.core_start[i] < s.W1) return false;
  }
  return true;
}

// Process events in time order. With kPausable, stop before the first event at or after `until`,
// or (stop_when_closed) once the measurement window is closed. Returns the time of the first event
// left unprocessed (kInf when none is left, or when the event budget ran out).
template <bool kPausable>
FLEETSIM_HD inline double sim_advance(Sim& s, double until = kInf, bool stop_when_closed = false) {
  const SimParams& p = *s.p;
  Tally& tally = *s.tally;
  for (;;) {
    // the next event: a replica's, a host core's, a KV transfer's end, an autoscaler evaluation, a
    // failure, an arrival (ties in that order)
    const int32_t r = s.rheap[0].r;
    const double tr = s.rheap[0].t;
    const double th0 = s.host_on ? s.rep[s.hheap[0]].host_next : kInf;
    const double tx = s.xheap_n > 0 ? s.xheap[0].t : kInf;
    // (the transfer's end joins the host's time so that a fleet without either compares no more)
    const bool hx = tx < th0;
    const double th = hx ? tx : th0;
    int32_t cls = 0, pe = 0, pf = 0;
    double ta = s.next_arrival[0], te = s.pool[0].next_eval, tf = s.pool[0].next_fail;
    for (int32_t c = 1; c < p.n_classes; ++c)
      if (s.next_arrival[c] < ta) {
        ta = s.next_arrival[c];
        cls = c;
      }
    for (int32_t pi = 1; pi < p.n_pools; ++pi) {
      if (s.pool[pi].next_eval < te) {
        te = s.pool[pi].next_eval;
        pe = pi;
      }
      if (s.pool[pi].next_fail < tf) {
        tf = s.pool[pi].next_fail;
        pf = pi;
      }
    }
    // the fleet stays as it is while the last requests drain
    if (te >= p.duration_s) te = kInf;
    if (tf >= p.duration_s) tf = kInf;
    if (tr >= kInf && th >= kInf && ta >= kInf && te >= kInf && tf >= kInf) return kInf;
    if (kPausable) {
      const double t = min_of(min_of(min_of(tr, th), min_of(ta, te)), tf);
      if (t >= until || (stop_when_closed && sim_window_closed(s, t))) return t;
    }
    if (s.settled != kNone) {  // the SLO is missed whatever the rest does (a sweep's settle rule)
      tally.status = int32_t(SimStatus::settled);
      tally.settled_term = s.settled;
      tally.settled_s = s.settled_t;
      return kInf;
    }
    if (++s.events > p.max_events) {
      tally.status = int32_t(SimStatus::event_limit);
      return kInf;
    }
    if (tr <= th && tr <= ta && tr <= te && tr <= tf) {
      const PoolParams& P = p.pools[s.rep[r].pool];
      if (s.rep[r].state == kStarting) {
        replica_ready(s, r, tr);
      } else if (P.batching == Batching::continuous) {
        cont_finish_run(s, r, tr);
        cont_start_step(s, r, tr);
      } else if (s.rep[r].busy) {
        static_finish(s, r, tr);
        static_try_start(s, r, tr);
        if (P.router == Router::central_queue) {
          const PoolState& ps = s.pool[s.rep[r].pool];
          for (int32_t o = ps.first_replica; o < ps.first_replica + ps.n_replicas; ++o) static_try_start(s, o, tr);
        }
      } else {
        static_try_start(s, r, tr);
      }
    } else if (th <= ta && th <= te && th <= tf) {
      if (hx)
        handoff_arrive(s, th);
      else
        host_finish(s, s.hheap[0], th);
    } else if (te <= ta && te <= tf) {
      autoscale_eval(s, pe, te);
    } else if (tf <= ta) {
      pool_interrupt(s, pf, tf);
    } else if ((s.closed_classes >> cls) & 1) {
      advance_clock(s, ta);  // the present, for the request's end if it is turned away
      const int32_t user = client_pop(s, cls, ta);
      handle_arrival(s, cls, ta, user);
    } else if ((s.trace_session_classes >> cls) & 1) {
      trace_session_arrival(s, cls, ta);
    } else {
      handle_arrival(s, cls, ta);
      s.next_arrival[cls] = next_arrival(p.classes[cls].arrivals, s.rng, uint32_t(cls), s.arr[cls], ta, p.duration_s);
    }
  }
}

// Close the integrals at the end of the simulated span (or at time t, where a run stopped once its
// window closed: everything after adds nothing to it) and record the totals.
FLEETSIM_HD inline void sim_end(Sim& s, double t) {
  const SimParams& p = *s.p;
  advance_clock(s, t);
  for (int32_t pi = 0; pi < p.n_pools; ++pi) pool_advance(s, pi, t);
  if (s.closed_classes)
    for (int32_t c = 0; c < p.n_classes; ++c) client_integrate(s, c, t);
  s.tally->events = s.events;
  int64_t left = 0;
  for (int32_t c = 0; c < p.n_classes; ++c) left += s.in_system[c];
  s.tally->unfinished = left;
}

// Run one simulation to completion (arrivals stop at duration_s; requests in flight drain).
FLEETSIM_HD inline void simulate(const SimParams& p, uint32_t replication, uint8_t* workspace, Tally& tally) {
  Sim s = sim_begin(p, replication, workspace, tally);
  sim_advance<false>(s);
  sim_end(s, p.duration_s);
}

// After a simulation: every replica empty, every KV block back, every queue empty.
FLEETSIM_HD inline bool sim_drained(const SimParams& p, uint8_t* base) {
  const WorkspaceLayout l = workspace_layout(p);
  const Replica* rep = reinterpret_cast<const Replica*>(base + l.rep);
  const Queue* q = reinterpret_cast<const Queue*>(base + l.q);
  for (int32_t r = 0; r < int32_t(l.n_replicas); ++r) {
    if (rep[r].n_running != 0 || rep[r].n_decode != 0 || rep[r].heap_n != 0) return false;
    if (rep[r].host_n != 0 || rep[r].host_busy != 0 || rep[r].hq.size != 0) return false;
    if (rep[r].cache_held != 0) return false;  // no cached block still held by a request
    const PoolParams& P = p.pools[rep[r].pool];
    if (P.batching == Batching::continuous &&
        rep[r].free_blocks + rep[r].pinned_blocks + rep[r].cache_blocks != P.kv_total_blocks)
      return false;
  }
  for (int32_t i = 0; i < int32_t(l.nq); ++i)
    if (q[i].size != 0) return false;
  return true;
}

}  // namespace fleetsim
