// Closed-loop users (arrival process `concurrency`): each of a class's `clients` users sends its
// next request when its previous one ends, after a think time, as benchmarks run at a fixed
// concurrency. A class keeps a min-heap of its users' pending send times in the workspace; its
// next arrival is the heap's top. A user is either in the system (its request waits or runs) or in
// the heap (thinking), so N = in_system + heap size at every moment.
//
// The thinking population (the heap's size) is integrated over the window where it changes, in
// client_push and client_pop, rather than in advance_clock, so open-loop classes pay nothing.
#pragma once
#include "state.hpp"
#include "trace_sessions.hpp"
#include "workload.hpp"

namespace fleetsim {

// Integrate class c's thinking users up to time t (clipped to the window).
FLEETSIM_HD inline void client_integrate(Sim& s, int32_t c, double t) {
  const double a = max_of(s.client_t[c], s.W0), b = min_of(t, s.W1);
  if (b > a) s.tally->classes[c].thinking_s += double(s.client_n[c]) * (b - a);
  if (t > s.client_t[c]) s.client_t[c] = t;
}

// The next send time of class c's users, or kInf when none is due before its stop time.
FLEETSIM_HD FLEETSIM_FORCEINLINE double client_next(const Sim& s, int32_t c) {
  if (s.client_n[c] == 0) return kInf;
  const double t = s.client_heap[s.client_base[c]];
  return t < s.client_stop[c] ? t : kInf;
}

// A user starts thinking now (the clock's time) and will send at t. A session class keeps each
// entry's user beside it.
FLEETSIM_HD inline void client_push(Sim& s, int32_t c, double t, int32_t user) {
  client_integrate(s, c, s.t_clock);
  double* h = s.client_heap + s.client_base[c];
  int32_t* id = s.client_user + s.client_base[c];
  const bool ids = (s.session_classes >> c) & 1;
  int32_t i = s.client_n[c]++;
  while (i > 0) {
    const int32_t up = (i - 1) / 2;
    if (!(t < h[up])) break;
    h[i] = h[up];
    if (ids) id[i] = id[up];
    i = up;
  }
  h[i] = t;
  if (ids) id[i] = user;
}

// A user sends at time t (the heap's top): it leaves the thinking population. Returns the user
// (session classes; 0 otherwise).
FLEETSIM_HD inline int32_t client_pop(Sim& s, int32_t c, double t) {
  client_integrate(s, c, t);
  double* h = s.client_heap + s.client_base[c];
  int32_t* id = s.client_user + s.client_base[c];
  const bool ids = (s.session_classes >> c) & 1;
  const int32_t top = ids ? id[0] : 0;
  const int32_t n = --s.client_n[c];
  const double x = h[n];
  const int32_t xid = ids ? id[n] : 0;
  int32_t i = 0;
  for (;;) {
    int32_t k = 2 * i + 1;
    if (k >= n) break;
    if (k + 1 < n && h[k + 1] < h[k]) ++k;
    if (!(h[k] < x)) break;
    h[i] = h[k];
    if (ids) id[i] = id[k];
    i = k;
  }
  if (n > 0) {
    h[i] = x;
    if (ids) id[i] = xid;
  }
  s.next_arrival[c] = client_next(s, c);
  return top;
}

// A closed-loop user of class c whose request ended at t_end thinks, then sends its next request.
FLEETSIM_HD inline void client_think(Sim& s, int32_t c, double t_end, bool rejected, int32_t user) {
  const ClassParams& C = s.p->classes[c];
  const uint64_t k = s.client_thinks[c]++;
  // a benchmark of max_requests requests: once all are sent, a user whose response ends leaves
  if (C.arrivals.max_requests > 0 && int64_t(k) + C.arrivals.clients >= C.arrivals.max_requests) {
    s.next_arrival[c] = client_next(s, c);
    return;
  }
  double z = sample_think_s(C.think, s.rng, uint32_t(c), k);
  // a rejection is answered at once: a user that would send again at the same instant would find
  // the same full queue, so it waits at least retry_after_s
  if (rejected && z < C.retry_after_s) z = C.retry_after_s;
  client_push(s, c, t_end + z, user);
  // counted from the clock's time on, it still waits for its response until t_end: not thinking
  const double a = max_of(s.t_clock, s.W0), b = min_of(t_end, s.W1);
  if (b > a) s.tally->classes[c].thinking_s -= b - a;
  s.next_arrival[c] = client_next(s, c);
}

// Sessions: a user's session ends after its last turn (or when the conversation no longer fits
// the model's context); the window counts it by the end of its last response.
FLEETSIM_HD inline void session_end(Sim& s, int32_t c, SessionUser& u, double t_end) {
  if (u.turn > 0 && t_end >= s.W0 && t_end < s.W1) {
    ClassTally& T = s.tally->classes[c];
    const double d = t_end - u.t_start;
    T.sessions++;
    T.session_turns += double(u.turn);
    T.session_s += d;
    T.session_turn_s += d / double(u.turn);
  }
  u.turn = 0;
  u.turns = 0;
  u.history = u.held = 0;
  u.replica = kNone;
}

// A session user's next turn at time t, with `fresh` new prompt tokens: the prompt it sends (the
// conversation so far plus the new message) and the part of it an earlier turn computed. A turn
// that would leave no room in the context for one output token starts a new session instead.
FLEETSIM_HD inline int64_t session_turn(Sim& s, int32_t c, int32_t user, double t, int64_t fresh, int64_t max_context,
                                        int64_t& cached) {
  SessionUser& u = s.session_user[s.client_base[c] + user];
  if (u.turn > 0 && u.history + fresh > max_context - 1) session_end(s, c, u, u.t_last);
  // a new session's length and start are drawn once: a first turn sent again (turned away) keeps them
  if (u.turn == 0 && u.turns == 0) {
    const ClassParams& C = s.p->classes[c];
    u.turns = int32_t(sample_length(C.turns, s.rng, Stream::session, uint32_t(c), s.sessions_started[c]++));
    u.t_start = t;
    u.history = u.held = 0;
  }
  cached = u.held;  // where it is served from: session_cached, once the request is routed
  return u.history + fresh;
}

// The replica that holds a session user's conversation in its prefix cache, or kNone.
FLEETSIM_HD FLEETSIM_FORCEINLINE int32_t session_replica(const Sim& s, int32_t c, int32_t user) {
  const SessionUser& u = s.session_user[s.client_base[c] + user];
  return u.replica != kNone && s.rep[u.replica].starts == u.epoch ? u.replica : kNone;
}

// A session user's request ended: a completed turn extends the conversation to `context` tokens
// (its prompt and output), `computed` of them with their KV computed on `replica` (kNone: none,
// the response cache answered); a turned-away or failed one is sent again. Its prefix cache holds
// the full blocks of those, as vLLM caches only full blocks.
FLEETSIM_HD inline void session_done(Sim& s, int32_t c, int32_t user, double t_end, int64_t context, int32_t replica,
                                     int64_t computed) {
  if (context < 0) return;
  SessionUser& u = s.session_user[s.client_base[c] + user];
  u.history = context;
  if (replica != kNone) {
    const int64_t bs = s.p->pools[s.rep[replica].pool].kv_block_tokens;
    computed = computed / bs * bs;
  }
  u.held = computed;
  u.replica = replica;
  u.epoch = replica == kNone ? 0 : s.rep[replica].starts;
  u.turn++;
  u.t_last = t_end;
  if (u.turn >= u.turns) session_end(s, c, u, t_end);
}

// A request of class c ended at t_end (completed, answered by the response cache, failed or, with
// `rejected`, turned away). Nothing to do for an open-loop class but one whose trace is replayed as
// sessions. The clock must already be at the present (advance_clock): the thinking population
// changes now.
// `user`, `context` and `replica` matter to session classes only: who sent it, and for a completed
// request its prompt plus output (-1: not completed), the replica whose cache holds the
// conversation and how much of it it computed (-1: all but the last answer token, whose KV no step
// computed; a prefill replica computed only the prompt).
// `row`: its trace row (-1: none), for sessions read from a trace.
FLEETSIM_HD FLEETSIM_FORCEINLINE void client_done(Sim& s, int32_t c, double t_end, bool rejected = false,
                                                  int32_t user = 0, int64_t context = -1, int32_t replica = kNone,
                                                  int64_t held = -1, int64_t row = -1) {
  if ((s.trace_session_classes >> c) & 1) trace_turn_done(s, c, row, t_end, context >= 0, replica);
  if (!((s.closed_classes >> c) & 1)) return;
  if ((s.session_classes >> c) & 1) session_done(s, c, user, t_end, context, replica, held < 0 ? context - 1 : held);
  client_think(s, c, t_end, rejected, user);
}

}  // namespace fleetsim
