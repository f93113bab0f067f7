// Disaggregated prefill: a prefill pool computes a prompt (its first token is not sent), frees the
// prompt's KV and sends it to its decode pool over a link; the request reaches a decode replica
// latency + prompt tokens x KV bytes / bandwidth later (routing.hpp, handoff_arrive), waits there
// for KV memory, and emits every output token. Requests in transit wait in a binary min-heap by
// arrival time, one entry per request slot at most.
#pragma once
#include "accounting.hpp"
#include "containers.hpp"
#include "state.hpp"
#include "tally.hpp"

namespace fleetsim {

FLEETSIM_HD FLEETSIM_FORCEINLINE void xheap_push(Sim& s, double t, int32_t ri) { key_push(s.xheap, s.xheap_n, t, ri); }

// Remove the earliest entry and return its request.
FLEETSIM_HD FLEETSIM_FORCEINLINE int32_t xheap_pop(Sim& s) { return key_pop(s.xheap, s.xheap_n); }

// Request ri, its prompt computed on prefill replica r, finds no room in its decode pool at t:
// turned away as a full queue, its slot freed; the prompt's KV, computed for nothing, is lost work
// of the prefill pool.
FLEETSIM_HD inline void handoff_turn_away(Sim& s, int32_t r, int32_t ri, double t) {
  advance_clock(s, t);  // the request was in the system until now
  const Request& q = s.req[ri];
  if (q.in_window) {
    count_rejection(s, s.tally->classes[q.cls].rejected_queue_full, t);
    s.tally->classes[q.cls].lost_tokens += double(q.generated);
    s.tally->pools[s.rep[r].pool].lost_tokens += double(q.generated);
  }
  s.in_system[q.cls]--;
  s.req_free[s.req_free_n++] = ri;
  client_done(s, q.cls, t, true, q.user, -1, kNone, -1, q.trace_row);
}

// Prefill replica r finished request ri's prompt at t: its KV leaves for the decode pool. The
// decode replica computes the prompt's last token again for the first output token's logits (as
// vLLM does when a prompt's KV is all loaded), so the request starts there with nothing generated
// (until it arrives, `generated` holds the prompt tokens computed here).
// Transfers in flight count against the decode pool's queues: past transit_cap, the prompt is
// turned away now, as it would be on arrival at a full queue.
FLEETSIM_HD inline void handoff_send(Sim& s, int32_t r, int32_t ri, double t) {
  const PoolParams& P = s.p->pools[s.rep[r].pool];
  Request& q = s.req[ri];
  PoolState& ds = s.pool[P.decode_pool];
  // the prefill engine's own first token (it is not sent): its TTFT, for its `ttft` signal, even
  // if the decode pool turns the request away; the decode engine's starts here too
  note_ttft(s, s.rep[r].pool, t - q.t_arrive + client_ttft_s(s, q), t);
  q.t_handoff = t;
  if (int64_t(ds.in_transit) >= transit_cap(s.p->pools[P.decode_pool])) {
    handoff_turn_away(s, r, ri, t);
    return;
  }
  ds.in_transit++;
  const double win = double(min_of(q.prompt, P.handoff_window_tokens));
  const double dt = P.handoff_latency_s + P.handoff_s_per_token * double(q.prompt) + P.handoff_window_s_per_token * win;
  if (q.in_window) {
    PoolTally& T = s.tally->pools[s.rep[r].pool];
    T.kv_sent += 1.0;
    T.kv_sent_bytes += P.handoff_bytes_per_token * double(q.prompt) + P.handoff_window_bytes_per_token * win;
    T.kv_sent_s += dt;
  }
  q.t_first = -1.0;
  q.kv_in = 1;
  q.cached = 0;  // what the prefill pool's cache held; a decode replica that computes it again has none of it
  q.prefilled_on = r;
  xheap_push(s, t + dt, ri);
}

}  // namespace fleetsim
