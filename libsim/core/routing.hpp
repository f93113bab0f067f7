// An arrival: its lengths, the response cache, admission control (too long, no replica, queue
// full), which replica takes it, and its host CPU stage or the device queue (host.hpp).
#pragma once
#include "accounting.hpp"
#include "containers.hpp"
#include "continuous.hpp"
#include "host.hpp"
#include "lifecycle.hpp"
#include "philox.hpp"
#include "state.hpp"
#include "static_batching.hpp"
#include "tally.hpp"
#include "workload.hpp"

namespace fleetsim {

// The replica of pool pi whose queue takes a request (any active replica of a central queue):
// ready replicas, or only when none is ready one still starting (it holds the queue). `home`: the
// replica that holds its session's conversation (kNone: none); `by_host`: by host jobs, not by
// outstanding requests; `ids[0, n)`: its prompt's blocks, for prefix_aware. The pool has a ready
// or starting replica.
FLEETSIM_HD inline int32_t pick_replica(Sim& s, int32_t pi, int32_t home, bool by_host, const int32_t* ids = nullptr,
                                        int32_t n = 0) {
  const PoolParams& P = s.p->pools[pi];
  PoolState& ps = s.pool[pi];
  const int32_t want = ps.n_ready > 0 ? int32_t(kReady) : int32_t(kStarting);
  auto active = [&](int32_t r) { return s.rep[r].state == want; };
  const bool cont = P.batching == Batching::continuous;
  int32_t target = kNone;
  if (P.router == Router::session_affinity && home != kNone && active(home)) {
    target = home;
  } else if (P.router == Router::prefix_aware && n > 0) {
    // llm-d's prefix-cache routing weighs a prefix score (the share of the request's blocks a
    // replica holds) at 3 against a queue score at 2 (the fewest waiting requests 1, the most 0;
    // the queue scorer reads vLLM's waiting count, not the running ones: WaitingQueueSize in
    // gateway-api-inference-extension, pkg/epp/scheduling/framework/plugins/scorer/queue.go) and a
    // KV-utilization score at 2 (1 - vLLM's KV usage, cached blocks no request holds counted
    // free): the best sum wins, the lowest index on a tie
    auto waiting = [&](int32_t r) { return s.q[s.rep[r].queue].size; };
    auto kv_free = [&](int32_t r) {
      return double(s.rep[r].free_blocks + cache_evictable_blocks(s, r)) / double(P.kv_total_blocks);
    };
    int32_t qmin = 0, qmax = 0;
    bool first = true;
    for (int32_t r = ps.first_replica; r < ps.first_replica + ps.n_replicas; ++r) {
      if (!active(r)) continue;
      const int32_t o = waiting(r);
      qmin = first || o < qmin ? o : qmin;
      qmax = first || o > qmax ? o : qmax;
      first = false;
    }
    double best = -1.0;
    for (int32_t r = ps.first_replica; r < ps.first_replica + ps.n_replicas; ++r) {
      if (!active(r)) continue;
      const double load = qmax > qmin ? double(qmax - waiting(r)) / double(qmax - qmin) : 1.0;
      const double score = 3.0 * double(cache_leading_hits(s, r, ids, n)) / double(n) + 2.0 * load + 2.0 * kv_free(r);
      if (score > best) {
        best = score;
        target = r;
      }
    }
  } else if (P.router == Router::round_robin) {
    for (int32_t k = 0; k < ps.n_replicas && target == kNone; ++k) {
      const int32_t r = ps.first_replica + ps.rr_next;
      ps.rr_next = ps.rr_next + 1 == ps.n_replicas ? 0 : ps.rr_next + 1;
      if (active(r)) target = r;
    }
  } else if (ps.lo_leaves > 0 && want == kReady) {  // least outstanding, kept in a tree (containers.hpp)
    target = s.lo_tree[ps.lo_base + 1];
  } else {
    int32_t best = 0;
    for (int32_t r = ps.first_replica; r < ps.first_replica + ps.n_replicas; ++r) {
      if (!active(r)) continue;
      const int32_t o = by_host ? s.rep[r].host_n : outstanding(s, r, cont);
      if (target == kNone || o < best) {
        best = o;
        target = r;
      }
      if (P.router == Router::central_queue && !by_host) break;
    }
  }
  return target;
}

// Whether the queue replica `target` takes from is full: its waiting requests and those at the
// host stage headed for it (for a central queue, the whole pool's host jobs) reach queue_limit.
FLEETSIM_HD inline bool queue_full_at(const Sim& s, int32_t target) {
  const Replica& R = s.rep[target];
  const PoolParams& P = s.p->pools[R.pool];
  const int32_t at_host = P.router == Router::central_queue ? s.pool[R.pool].host_jobs : R.host_n;
  return s.q[R.queue].size + at_host >= P.queue_limit;
}

// `user`: the closed-loop user of a session class that sends it (clients.hpp); `row`: the trace row
// it is, where the class's trace is replayed as sessions (else the next).
FLEETSIM_HD inline void handle_arrival(Sim& s, int32_t cls, double t, int32_t user = 0, int64_t row = -1) {
  const ClassParams& C = s.p->classes[cls];
  const PoolParams& P = s.p->pools[C.pool];
  PoolState& ps = s.pool[C.pool];
  ClassTally& T = s.tally->classes[cls];
  const uint64_t idx = row >= 0 ? uint64_t(row) : s.arr[cls].index++;
  if (C.arrivals.kind == ArrivalKind::trace) row = int64_t(idx);
  int64_t prompt, output, cached = 0;
  if (C.arrivals.kind == ArrivalKind::trace) {
    prompt = C.arrivals.trace_prompt[idx];
    output = C.arrivals.trace_output[idx];
    if (C.arrivals.trace_cached && P.cache_entries == 0) cached = C.arrivals.trace_cached[idx];
  } else {
    prompt = sample_length(C.prompt, s.rng, Stream::prompt, uint32_t(cls), idx);
    output = sample_length(C.output, s.rng, Stream::output, uint32_t(cls), idx);
    // a session's turn sends the conversation so far, which an earlier turn computed
    if ((s.session_classes >> cls) & 1) prompt = session_turn(s, cls, user, t, prompt, P.max_context, cached);
  }
  if (prompt < 1) prompt = 1;
  // the acceptance draw only where a shared prefix or the response cache can take it (the draw is
  // keyed by the request, so skipping it changes no other number)
  double u_prefix = 1.0, u_cache = 1.0;
  if ((C.prefix_share > 0.0 && C.prefix_tokens > 0 && cached == 0) || C.response_cache_hit_rate > 0.0)
    s.rng.uniform2(Stream::accept, uint32_t(cls), idx, 1, u_prefix, u_cache);
  // a request whose trace names its cached prefix does not also take the class's (the loader forbids both)
  const bool has_prefix = u_prefix < C.prefix_share && C.prefix_tokens > 0 && cached == 0;
  if (has_prefix && prompt <= C.prefix_tokens) prompt = C.prefix_tokens + 1;  // it starts with the prefix
  // the host tokenizes the prompt as sent, before any truncation
  const double host_s = P.host.cores > 0 ? P.host.per_request_s + P.host.tokenize_s_per_token * double(prompt) : 0.0;
  if (P.generative) {
    if (prompt > P.max_context - 1) prompt = P.max_context - 1;
    if (output < 1) output = 1;
    if (output > P.max_context - prompt) output = P.max_context - prompt;
  } else {
    if (prompt > P.max_context) prompt = P.max_context;
    output = 0;
  }
  if (cached > prompt - 1) cached = prompt - 1;  // a truncated prompt: at least one token is computed
  const bool in_window = t >= s.W0 && t < s.W1;
  if (in_window) T.arrived++;
  if (u_cache < C.response_cache_hit_rate) {  // answered from the cache: no queue, no device
    if (in_window) {
      T.completed++;
      T.cache_hits++;
      T.input_tokens += double(prompt);
      T.answered_input_tokens += double(prompt);
      T.output_tokens += double(output);
      hist_add(T.e2e, C.response_cache_latency_s);
      hist_add(T.ttft, C.response_cache_latency_s);
      hist_add(T.queue_wait, 0.0);
      if (s.p->settle.n > 0) {
        settle_note(s, SettleKind::ttft, C.response_cache_latency_s, t);
        settle_note(s, SettleKind::e2e, C.response_cache_latency_s, t);
        settle_note(s, SettleKind::queue_wait, 0.0, t);
      }
      const double z = C.response_cache_latency_s;  // TTFT = e2e, TPOT 0
      if (z <= C.good_ttft_s && z <= C.good_e2e_s) T.good++;
    }
    // in the system for the cache's latency, so that mean_in_system is throughput x mean e2e (a
    // closed-loop user thinks from the answer on: client_think)
    const double a = max_of(t, s.W0), b = min_of(t + C.response_cache_latency_s, s.W1);
    if (b > a) T.in_system_s += b - a;
    const bool session = (s.session_classes >> cls) & 1;
    // the conversation grows, but no device computed this turn: its replica holds what it held
    client_done(s, cls, t + C.response_cache_latency_s, false, user, prompt + output,
                session ? session_replica(s, cls, user) : kNone,
                session ? s.session_user[s.client_base[cls] + user].held : -1, row);
    return;
  }

  // a request that cannot fit in KV even alone
  auto too_long_with = [&](int64_t reused) {
    if (P.batching != Batching::continuous)
      return prompt + output + P.window_blocks * P.kv_block_tokens > P.kv_total_blocks * P.kv_block_tokens;
    // (a prefix the cache holds is attended to, not held: docs/model.md, "Caching"; a session's own
    // conversation is held while its turn runs); a prefill pool holds the prompt, its decode pool
    // all of it
    const bool own = (s.session_classes >> cls) & 1;
    const int64_t kv_tokens =
        (P.generative && !P.disagg ? prompt + output - 1 : prompt) - (P.prefix_caching && !own ? reused : 0);
    auto over = [&](int32_t pool, int64_t tokens) {
      const PoolParams& Q = s.p->pools[pool];
      const int64_t room =
          Q.kv_total_blocks - Q.kv_watermark_blocks - (ceil_div(tokens, Q.kv_block_tokens) + Q.window_blocks);
      note_room(s.tally->limits.pools[pool].kv_room_mark, room);
      return room < 0;
    };
    if (P.disagg && over(P.decode_pool, prompt + output - 1)) return true;
    // a naive server has no such check: it takes the request and runs out of memory on it
    return !P.crash_on_kv_exhausted && over(C.pool, kv_tokens);
  };
  // too long for the KV cache: turned away; a session whose conversation has outgrown it ends, and
  // its user starts a new one (as at the model's context limit), rather than sending it forever
  auto turn_away_too_long = [&]() {
    if (in_window) count_rejection(s, T.rejected_too_long, t);
    if ((s.session_classes >> cls) & 1) {
      SessionUser& u = s.session_user[s.client_base[cls] + user];
      if (u.turn > 0) session_end(s, cls, u, u.t_last);
    }
    client_done(s, cls, t, true, user, -1, kNone, -1, row);
  };
  if (too_long_with(cached)) {
    turn_away_too_long();
    return;
  }

  // only replicas that are ready or starting take new requests; scale-to-zero wakes one
  ps.arrivals_since += 1.0;
  if (ps.n_ready + ps.n_starting == 0 && !replica_start(s, C.pool, t)) {
    if (in_window) count_rejection(s, T.rejected_queue_full, t);  // no replica and none obtainable
    client_done(s, cls, t, true, user, -1, kNone, -1, row);
    return;
  }
  // a session's conversation is in the prefix cache of the replica that served its last turn
  const bool session = (s.session_classes >> cls) & 1;
  // (a turn of a trace's session: the replica that served the turn it follows up)
  const int32_t home = session && cached > 0                  ? session_replica(s, cls, user)
                       : (s.trace_session_classes >> cls) & 1 ? trace_session_home(s, cls, row)
                                                              : kNone;
  // a central queue's requests are tokenized on the host with the fewest jobs
  const bool by_host = P.router == Router::central_queue && P.host.cores > 0;
  // a bounded cache per replica: the prompt's blocks (the router may look for them)
  int32_t nb = 0;
  const int32_t* ids = nullptr;
  if (P.cache_entries > 0 && C.arrivals.trace_block_off) {
    const int64_t b0 = C.arrivals.trace_block_off[idx], b1 = C.arrivals.trace_block_off[idx + 1];
    ids = C.arrivals.trace_blocks + b0;
    nb = int32_t(min_of<int64_t>(b1 - b0, prompt / C.arrivals.trace_block_tokens));
  }
  const int32_t target = pick_replica(s, C.pool, home, by_host, ids, nb);
  // elsewhere the conversation is prefilled again (a central queue does not know which replica
  // will serve it: its sessions reuse the history wherever it was, as a pool-wide cache would)
  if (session && cached > 0 && P.router != Router::central_queue && target != home) {
    cached = 0;
    if (too_long_with(0)) {
      turn_away_too_long();
      return;
    }
  }
  const bool queue_full = queue_full_at(s, target);
  if (!queue_full) note_room(s.tally->limits.request_room, int64_t(s.req_cap) - 1 - (s.req_hwm - s.req_free_n));
  if (queue_full || (s.req_free_n == 0 && s.req_hwm == s.req_cap)) {
    if (in_window) count_rejection(s, T.rejected_queue_full, t);
    client_done(s, cls, t, true, user, -1, kNone, -1, row);
    return;
  }
  // the router picks a request's decode end at arrival too (llm-d's P/D routing): a decode pool at
  // zero starts a replica now, its cold start beside the prefill, not after the KV arrives
  if (P.disagg && s.pool[P.decode_pool].n_ready + s.pool[P.decode_pool].n_starting == 0)
    replica_start(s, P.decode_pool, t);
  const int32_t ri = s.req_free_n > 0 ? s.req_free[--s.req_free_n] : s.req_hwm++;
  Request& q = s.req[ri];
  q.t_arrive = t;
  q.t_first = -1.0;
  q.t_admit = -1.0;
  q.t_queued = t;
  q.t_host = t;
  q.wait_s = 0.0;
  q.t_handoff = 0.0;
  q.host_s = host_s;
  q.host_stage = 0;
  q.prompt = int32_t(prompt);
  q.output = int32_t(output);
  q.generated = 0;
  q.cached = int32_t(cached);
  q.in_window = in_window ? 1 : 0;
  q.cls = int16_t(cls);
  q.retries = 0;
  q.has_prefix = has_prefix ? 1 : 0;
  q.kv_in = 0;
  q.ttft_noted = 0;
  q.user = user;
  q.prefilled_on = kNone;
  q.trace_row = C.arrivals.kind == ArrivalKind::trace ? int32_t(idx) : -1;
  q.cache_hits = 0;
  advance_clock(s, t);
  s.in_system[cls]++;
  if (P.host.cores > 0)
    host_submit(s, target, ri, kHostPre, t);
  else
    enqueue_device(s, target, ri, t);
}

// The earliest KV transfer (handoff.hpp) reached the decode pool at t: the request joins a decode
// replica's queue (routed by the decode pool's router; no host stage: it was tokenized), or is
// turned away as a full queue where none can take it.
FLEETSIM_HD inline void handoff_arrive(Sim& s, double t) {
  const int32_t ri = xheap_pop(s);
  const Request& q = s.req[ri];
  const int32_t pi = s.p->pools[s.rep[q.prefilled_on].pool].decode_pool;
  PoolState& ds = s.pool[pi];
  ds.in_transit--;
  advance_clock(s, t);
  ds.arrivals_since += 1.0;
  int32_t target = kNone;
  if (ds.n_ready + ds.n_starting > 0 || replica_start(s, pi, t)) target = pick_replica(s, pi, kNone, false);
  if (target == kNone || queue_full_at(s, target)) {
    handoff_turn_away(s, q.prefilled_on, ri, t);
    return;
  }
  // it waits again, in the decode replica's queue: its wait so far is kept, the clock restarts
  Request& w = s.req[ri];
  w.wait_s += w.t_admit - w.t_queued;
  w.t_queued = t;
  w.t_admit = -1.0;
  w.generated = 0;
  enqueue_device(s, target, ri, t);
}

// The next send of a class whose trace is replayed as sessions (trace_sessions.hpp), at t: a turn
// whose parent's answer has ended (before the trace's next row at the same time), or the trace's
// next row, which is held instead if it follows up a request that has not ended.
FLEETSIM_HD inline void trace_session_arrival(Sim& s, int32_t cls, double t) {
  const ArrivalParams& A = s.p->classes[cls].arrivals;
  ClassTally& T = s.tally->classes[cls];
  const bool in_window = t >= s.W0 && t < s.W1;
  if (s.held_n[cls] > 0 && s.held[s.held_base[cls]].t <= s.arr[cls].next_t) {
    const int32_t row = key_pop(s.held + s.held_base[cls], s.held_n[cls]);
    if (in_window) {
      T.follow_ups++;
      T.turns_held++;
      T.turn_hold_s += t - (A.trace_t_s[row] + A.start_s);
    }
    handle_arrival(s, cls, t, 0, row);
  } else {
    const int64_t row = int64_t(s.arr[cls].index++);
    const int32_t parent = A.trace_parent[row];
    s.arr[cls].next_t = next_arrival(A, s.rng, uint32_t(cls), s.arr[cls], t, s.p->duration_s);
    if (parent >= 0 && !(s.turn_state[s.turn_base[cls] + parent] & kTurnEnded)) {
      s.turn_state[s.turn_base[cls] + row] |= kTurnHeld;
    } else {
      if (parent >= 0 && in_window) T.follow_ups++;
      handle_arrival(s, cls, t, 0, row);
    }
  }
  s.next_arrival[cls] = trace_session_next(s, cls);
}

}  // namespace fleetsim
