// KV blocks under continuous batching: how many a decode run allocates, how many steps the free
// blocks reach, giving back cached prefixes, and preempting the newest sequence when blocks run out.
#pragma once
#include "containers.hpp"
#include "prefix_cache.hpp"
#include "slots.hpp"
#include "state.hpp"

namespace fleetsim {

// Blocks the decoding sequences of replica r allocate over steps [st, st + k). The residue index
// wraps by compare, not by a 64-bit modulo per step (this runs on every decode run).
FLEETSIM_HD inline int64_t blocks_needed(Sim& s, int32_t r, int64_t st, int64_t k) {
  if (k <= 0) return 0;
  const int32_t* cnt = rescnt_of(s, r);
  const int32_t bs = s.rep[r].bs;
  const int64_t n = s.rep[r].n_decode;
  int64_t total = div_count(k, bs) * n;
  const int32_t rem = int32_t(mod_count(k, bs));
  int32_t i = int32_t(mod_count(st + (k - rem), bs));
  for (int32_t j = 0; j < rem; ++j) {
    total += cnt[i];
    if (++i == bs) i = 0;
  }
  return total;
}

// Number of steps from st on that the free blocks cover (kInf-like large if no decoding), or any
// number >= `enough` once it is known to reach that far: whole cycles of the residues are counted
// first, and the residues one by one only where the answer could fall short of `enough`.
FLEETSIM_HD inline int64_t steps_covered(Sim& s, int32_t r, int64_t st, int64_t free_blocks,
                                         int64_t enough = int64_t(1) << 62) {
  const int64_t n = s.rep[r].n_decode;
  if (n == 0) return int64_t(1) << 60;
  const int32_t* cnt = rescnt_of(s, r);
  const int32_t bs = s.rep[r].bs;
  const int64_t cycles = div_count(free_blocks, n);
  int64_t left = free_blocks - cycles * n;
  int64_t j = cycles * bs;
  if (j >= enough) return j;
  int32_t i = int32_t(mod_count(st, bs));  // (st + j) % bs: j is whole cycles
  for (int32_t m = 0; m < bs; ++m) {
    const int64_t need = cnt[i];
    if (need > left) return j;
    left -= need;
    ++j;
    if (++i == bs) i = 0;
  }
  return j;  // unreachable: a full cycle needs n > left blocks
}

// Give back the blocks of cached prefixes no running sequence attends to (vLLM evicts cached
// blocks nobody references when it needs room). Returns whether anything was freed.
FLEETSIM_HD inline bool evict_prefixes(Sim& s, int32_t r) {
  Replica& R = s.rep[r];
  bool freed = false;
  for (int32_t c = 0; c < s.p->n_classes; ++c) {
    if (!((R.prefix_ready >> c) & 1) || R.prefix_users[c] > 0) continue;
    const int64_t pin = ceil_div(s.p->classes[c].prefix_tokens, R.bs);
    R.free_blocks += pin;
    R.pinned_blocks -= pin;
    R.prefix_ready &= ~(1 << c);
    freed = true;
  }
  return freed;
}

// Preempt the most recently admitted sequence at the start of step st (before its blocks are
// allocated): free its blocks and send it to the front of its queue to be recomputed.
// Returns the blocks it would have needed in step st.
FLEETSIM_HD inline int32_t preempt_newest(Sim& s, int32_t r, int64_t st) {
  Replica& R = s.rep[r];
  const int32_t sl = R.run_tail;
  Seq& x = slot(s, r, sl);
  Request& q = s.req[x.req];
  int32_t needed_now = 0;
  // the KV it computed here is dropped, to be computed again (what it loaded cost this replica
  // nothing: it is computed again, but was not lost here)
  // (tokens its replica's cache took over stay there: not lost; what it loaded came first)
  const double lost =
      double(x.decoding ? x.L0 + (st - x.s0) - max_of<int64_t>(0, x.loaded - x.adopted) : x.prefill_done - x.loaded);
  if (q.in_window) {
    s.tally->classes[q.cls].lost_tokens += lost;
    s.tally->pools[R.pool].lost_tokens += lost;
  }
  if (x.decoding) {
    R.free_blocks += ceil_div(x.L0 + (st - x.s0), R.bs) + pool_of(s, r).window_blocks;
    needed_now = (x.residue == int32_t(mod_count(st, R.bs))) ? 1 : 0;
    q.generated += int32_t(st - x.s0);
    stop_decoding(s, r, sl);
  } else {
    R.free_blocks += x.blocks;
    list_remove_pf(s, r, sl);
  }
  const int32_t ri = x.req;
  release_slot(s, r, sl);
  if (q.cache_hits > 0) {  // the cached blocks it held may go now
    const int32_t* ids = nullptr;
    request_blocks(s, q, ids);
    cache_unref(s, r, ids, q.cache_hits);
    q.cache_hits = 0;
  }
  Queue& Q = s.q[R.queue];
  q_push_front(s, Q, ri);
  s.waiting[q.cls]++;
  if (q.in_window) s.tally->classes[q.cls].preempted++;
  return needed_now;
}

}  // namespace fleetsim
