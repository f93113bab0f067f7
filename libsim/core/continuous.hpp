// Continuous batching: finish the run in flight (completions, prefills that become decodes), start
// the next step (KV blocks, prefill chunks, admissions, the run's plan), and kick a replica that
// has new work.
#pragma once
#include "accounting.hpp"
#include "calendar.hpp"
#include "containers.hpp"
#include "decls.hpp"
#include "kv.hpp"
#include "mps.hpp"
#include "prefix_cache.hpp"
#include "slots.hpp"
#include "slowdown.hpp"
#include "state.hpp"
#include "steptime.hpp"
#include "stepwork.hpp"

namespace fleetsim {

// Sequence x of replica r has computed its prompt: its full blocks join the replica's bounded
// prefix cache now, as vLLM caches each block once it is full (KVCacheManager.cache_blocks), so
// that requests running beside it find them, not only those after it. The blocks it computed move
// from its own KV to the cache's, which it holds (as it holds those it found there) until it
// leaves or is preempted; a block another request put there meanwhile is held, its own copy kept.
// The host tier and the shared store keep them too. Where a trace block is not a whole number of
// KV blocks, or no entry is free, what is left joins when it leaves (device_done).
FLEETSIM_HD inline void cache_adopt(Sim& s, int32_t r, Seq& x, Request& q, double t) {
  Replica& R = s.rep[r];
  const PoolParams& P = pool_of(s, r);
  const int32_t bt = s.p->classes[q.cls].arrivals.trace_block_tokens;
  const int32_t* ids = nullptr;
  const int32_t n = request_blocks(s, q, ids);
  if (n <= q.cache_hits || bt % R.bs != 0) return;
  if (P.cpu_entries > 0) tier_keep(cpu_tier(s, r), ids, n);
  if (P.remote_entries > 0) tier_keep(remote_tier(s, R.pool), ids, n);
  const CacheTier T = gpu_tier(s, r);
  int32_t m = q.cache_hits;
  int32_t moved = 0;  // tokens of its own KV the cache takes over (whole KV blocks)
  for (; m < n; ++m) {
    int32_t e = tier_find(T.key, T.tab, T.table, ids[m]);
    if (e == kNone) {
      if (R.ent_free == kNone && !cache_evict_one(s, r, t)) break;
      e = tier_add(T, ids[m]);
      R.cache_blocks += P.cache_block_kv;  // its own blocks: the same KV, held by the cache now
      moved += bt;
    }
    if (T.ref[e]++ == 0) {
      tier_unlink(T, e);
      R.cache_held++;
    }
  }
  q.cache_hits = m;
  x.adopted = moved;
  x.L0 -= moved;
  x.ctx_extra += moved;
}

FLEETSIM_HD inline void finish_decoding_at(Sim& s, int32_t r, int64_t last_step, double t) {
  Replica& R = s.rep[r];
  const FKey* h = fheap_of(s, r);
  while (R.heap_n > 0 && h[0].finish <= last_step) {
    const int32_t sl = h[0].slot;
    Seq& x = slot(s, r, sl);
    R.free_blocks += ceil_div(x.L0 + (x.finish - x.s0) + 1, R.bs) + pool_of(s, r).window_blocks;
    const int32_t ri = x.req;
    stop_decoding(s, r, sl);
    release_slot(s, r, sl);
    device_done(s, r, ri, t);
  }
}

// Apply the run in flight (it ended at t).
FLEETSIM_HD inline void cont_finish_run(Sim& s, int32_t r, double t) {
  Replica& R = s.rep[r];
  const PoolParams& P = pool_of(s, r);
  const int64_t k = R.run_k;
  if (k == 0) return;
  const int64_t st = R.step;
  account_run(s, R, k, R.run_t0, t);
  if (R.run_prefill) {
    finish_decoding_at(s, r, st, t);
    int32_t sl = R.pf_head;
    while (sl != kNone) {
      Seq& x = slot(s, r, sl);
      const int32_t nxt = x.pf_next;
      if (x.chunk > 0) {
        x.prefill_done += x.chunk;
        x.chunk = 0;
        if (x.prefill_done == x.prefill_total) {
          list_remove_pf(s, r, sl);
          Request& q = s.req[x.req];
          if (q.t_first < 0.0) q.t_first = t;
          if (!P.disagg) note_first_token(s, r, x.req, t);  // (a prefill pool's is not the client's)
          // the first request with a shared prefix leaves it cached here (if the blocks are free)
          if (q.has_prefix && P.prefix_caching && !((R.prefix_ready >> q.cls) & 1)) {
            const int64_t pin = ceil_div(s.p->classes[q.cls].prefix_tokens, R.bs);
            note_room(s.tally->limits.pools[R.pool].kv_room_mark, R.free_blocks - P.kv_watermark_blocks - pin);
            if (R.free_blocks - P.kv_watermark_blocks >= pin) {
              R.free_blocks -= pin;
              R.pinned_blocks += pin;
              R.prefix_ready |= 1 << q.cls;
            }
          }
          if (!P.generative || x.out_left <= 1) {
            // a prefill pool's request carries the tokens it computed here to its handoff
            q.generated = P.disagg ? x.prefill_total - x.loaded : q.output;
            R.free_blocks += x.blocks;
            const int32_t ri = x.req;
            release_slot(s, r, sl);
            device_done(s, r, ri, t);
          } else {
            q.generated += 1;
            x.decoding = 1;
            x.s0 = st + 1;
            x.L0 = x.prefill_total;
            if (P.cache_entries > 0) cache_adopt(s, r, x, q, t);
            x.finish = x.s0 + x.out_left - 2;
            x.residue = int16_t(mod_count(mod_count(x.s0 - x.L0, R.bs) + R.bs, R.bs));
            // blocks for the prompt were taken at admission and are now tracked by length
            rescnt_of(s, r)[x.residue]++;
            R.A += x.L0 + x.ctx_extra - x.s0;
            R.n_decode++;
            R.n_decode_class[q.cls]++;
            fh_push(s, r, sl);
          }
        }
      }
      sl = nxt;
    }
  } else {
    // blocks for steps st+1 .. st+k-1 were taken as those steps started
    R.free_blocks -= blocks_needed(s, r, st + 1, k - 1);
    finish_decoding_at(s, r, st + k - 1, t);
  }
  R.last_start = t - line_step(R.run_line, k - 1);
  R.step = st + k;
  R.run_k = 0;
}

// Start the next step of replica r at time t: allocate, admit, and plan the run.
FLEETSIM_HD inline void cont_start_step(Sim& s, int32_t r, double t) {
  const SimParams& p = *s.p;
  const PoolParams& P = pool_of(s, r);
  Replica& R = s.rep[r];
  Queue& Q = s.q[R.queue];
  const int64_t st = R.step;
  advance_clock(s, t);
  cq_clear_note(s, r);  // this is its step boundary: an offer it was noted for is taken up here

  // 1. a KV slot for every decoding sequence, preempting the newest while blocks are short
  const int32_t res_now = int32_t(mod_count(st, R.bs));
  int64_t need = R.n_decode > 0 ? rescnt_of(s, r)[res_now] : 0;
  LimitUse& use = s.tally->limits.pools[R.pool];
  note_room(use.kv_room, R.free_blocks - need);
  int32_t changed = 0;  // queue head changed: preemptions pushed to it, or admissions took from it
  // time slicing and MPS: the device's memory is shared without isolation; time-sliced replicas
  // take its compute in turns (MPS clients share it at once: mps.hpp)
  double device_free = kInf, slowdown = 1.0;
  const double block_bytes = P.work.kv_bytes_per_token * double(R.bs);
  const int32_t shared = shared_per_device(P);
  if (shared > 1 && !fallen_back(P, R, t)) {
    int32_t d0 = 0, d1 = 0;
    device_of(s, r, &d0, &d1);
    // a place nobody holds has no process and no context in it
    double used = P.server_context_bytes;
    for (int32_t k = d0; k < d1; ++k) {
      if (s.rep[k].state == kOff || fallen_back(P, s.rep[k], t)) continue;
      used += P.tenant_context_bytes + P.fixed_memory_bytes +
              double(P.kv_total_blocks - s.rep[k].free_blocks) * block_bytes;
      if (P.time_slicing > 1 && k != r && s.rep[k].busy && !s.rep[k].run_cpu) slowdown += 1.0;
    }
    device_free = P.device_memory_bytes - used;
    if (R.n_decode > 0 && double(rescnt_of(s, r)[res_now]) * block_bytes > device_free &&
        rescnt_of(s, r)[res_now] <= R.free_blocks) {
      // this engine has blocks to spare, the device does not: CUDA out of memory
      s.tally->pools[R.pool].crashes += in_window(s, t);
      replica_fail(s, r, t, false, kNone);
      return;
    }
  }
  if (need > R.free_blocks && P.crash_on_kv_exhausted) {  // a naive server dies instead of preempting
    s.tally->pools[R.pool].crashes += in_window(s, t);
    replica_fail(s, r, t, false, kNone);
    return;
  }
  if (need > R.free_blocks && P.cache_entries > 0) cache_make_room(s, r, need, t);
  if (need > R.free_blocks) evict_prefixes(s, r);
  while (need > R.free_blocks) {
    need -= preempt_newest(s, r, st);
    changed = 1;
  }
  R.free_blocks -= need;
  device_free -= double(need) * block_bytes;

  // 2. prefill chunks: running prefills first, then admissions, within the token budget
  // (a decoding sequence verifies its draft tokens too: they count, as vLLM's scheduler counts them)
  int64_t budget = int64_t(P.max_batched_tokens) - R.n_decode * (1 + int64_t(P.spec.k));
  double ptoks = 0.0, ppairs = 0.0, pread = 0.0, pseqs = 0.0;
  double load_s = 0.0;  // KV loaded from a host tier or a shared store before this step computes
  double pclass[kMaxClasses];
  for (int32_t c = 0; c < kMaxClasses; ++c) pclass[c] = 0.0;
  for (int32_t sl = R.pf_head; sl != kNone; sl = slot(s, r, sl).pf_next) {
    Seq& x = slot(s, r, sl);
    const int64_t want = x.prefill_total - x.prefill_done;
    const int64_t c = min_of<int64_t>(budget, want);
    if (want > 0) note_room(use.budget_room, budget - want);
    x.chunk = int32_t(c);
    if (c <= 0) continue;
    budget -= c;
    pseqs += 1.0;
    const double c0 = double(x.prefill_done + x.ctx_extra), cd = double(c);
    ptoks += cd;
    pclass[s.req[x.req].cls] += cd;
    ppairs += cd * c0 + cd * (cd + 1.0) * 0.5;
    pread += c0;
  }
  const bool admit = R.state == kReady || (R.state == kDraining && P.router != Router::central_queue);
  // an engine that schedules ahead formed this step while the last one ran: a request queued since
  // waits for the next (unless nothing else runs, when the engine would have waited for it)
  const bool gate = P.async_admit && R.n_running > 0;
  int32_t deferred = 0;
  while (admit && budget > 0 && R.n_running < R.S && Q.size > 0) {
    note_room(use.budget_room, budget - 1);  // a smaller budget could have stopped admitting here
    const int32_t ri = q_at(s, Q, 0);
    Request& q = s.req[ri];
    if (gate && q.t_queued > R.last_start) {
      deferred = 1;
      break;
    }
    // a prompt whose KV came from a prefill pool (handoff.hpp) holds all of it and computes its
    // last token again; it takes nothing from this replica's caches
    int32_t loaded = q.kv_in ? q.prompt - 1 : 0;
    int32_t shared = q.has_prefix && !q.kv_in && ((R.prefix_ready >> q.cls) & 1)
                         ? min_of(s.p->classes[q.cls].prefix_tokens, q.prompt - 1)
                         : 0;
    // a trace's cached prefix: an unbounded pool-wide cache holds it, so it is attended to, not
    // computed or held (docs/model.md, "Caching"); never together with a shared prefix. A bounded
    // cache per replica holds what it holds: the leading blocks found here, kept from eviction
    // from now on (prefix_cache.hpp)
    const int32_t* ids = nullptr;
    int32_t hits = 0, from_cpu = 0, from_rem = 0;
    if (P.cache_entries > 0 && !q.kv_in) {
      const int32_t nb = request_blocks(s, q, ids);
      hits = cache_leading_hits(s, r, ids, nb);
      from_cpu = cpu_leading_hits(s, r, ids, hits, nb);
      from_rem = remote_leading_hits(s, R.pool, ids, hits + from_cpu, nb);
      cache_ref(s, r, ids, hits);
    }
    const int32_t bt = s.p->classes[q.cls].arrivals.trace_block_tokens;
    const int32_t reused = P.cache_entries > 0            ? (hits > 0 ? min_of(hits * bt, q.prompt - 1) : 0)
                           : P.prefix_caching && !q.kv_in ? q.cached
                                                          : 0;
    // blocks found in the host tier after the device's, then in the shared store, are loaded into
    // blocks it holds, not computed (the prompt's last token always is)
    const int32_t from_host = from_cpu > 0 ? min_of(from_cpu * bt, q.prompt - 1 - reused) : 0;
    const int32_t from_store = from_rem > 0 ? min_of(from_rem * bt, q.prompt - 1 - reused - from_host) : 0;
    if (from_host + from_store > 0) loaded = from_host + from_store;
    // a session's conversation so far is its own, in this replica's cache: not computed again, but
    // held while the turn runs, as every running sequence holds its context (a trace's prefix and a
    // class's shared prefix are held once, by the cache)
    const int32_t own = (s.session_classes >> q.cls) & 1 ? reused : 0;
    loaded += own;
    int32_t total = q.prompt + (P.generative ? q.generated : 0) - shared - (reused - own);
    int64_t blocks = ceil_div(total, R.bs) + P.window_blocks;
    if (P.crash_on_kv_exhausted && blocks > P.kv_total_blocks - P.kv_watermark_blocks) {
      // a naive server tries the prompt and runs out of memory on it
      q_pop_front(s, Q);
      s.waiting[q.cls]--;
      s.tally->pools[R.pool].crashes += in_window(s, t);
      replica_fail(s, r, t, false, ri);
      return;
    }
    note_room(use.kv_room_mark, R.free_blocks - P.kv_watermark_blocks - blocks);
    // cached blocks go only where evicting them (with the shared prefixes below) lets it in, as
    // vLLM allocates nothing, and evicts nothing, for a request its free and evictable blocks
    // cannot hold (KVCacheManager.allocate_slots)
    if (blocks > R.free_blocks - P.kv_watermark_blocks && P.cache_entries > 0 &&
        blocks <= R.free_blocks + cache_evictable_blocks(s, r) + R.pinned_blocks - P.kv_watermark_blocks)
      cache_make_room(s, r, blocks + P.kv_watermark_blocks, t);
    if (blocks > R.free_blocks - P.kv_watermark_blocks) {
      if (!evict_prefixes(s, r)) {
        cache_unref(s, r, ids, hits);
        break;
      }
      if (shared > 0 && !((R.prefix_ready >> q.cls) & 1)) {  // its own prefix went too: it computes it
        shared = 0;
        total = q.prompt + (P.generative ? q.generated : 0) - (reused - own);
        blocks = ceil_div(total, R.bs) + P.window_blocks;
      }
      if (blocks > R.free_blocks - P.kv_watermark_blocks) {
        cache_unref(s, r, ids, hits);
        break;
      }
    }
    if (double(blocks) * block_bytes > device_free) {  // time slicing: a neighbour holds the memory
      q_pop_front(s, Q);
      s.waiting[q.cls]--;
      s.tally->pools[R.pool].crashes += in_window(s, t);
      replica_fail(s, r, t, false, ri);
      return;
    }
    device_free -= double(blocks) * block_bytes;
    q_pop_front_to_batch(s, Q);  // the index is touched below, with n_running
    s.waiting[q.cls]--;
    changed = 1;
    if (q.t_admit < 0.0) q.t_admit = t;
    q.kv_in = 0;
    q.cache_hits = hits;  // preempted or lost from here on, it computes its prompt again
    const int32_t sl = R.free_head;
    Seq& x = slot(s, r, sl);
    R.free_head = x.next;
    x.req = ri;
    x.prev = R.run_tail;
    x.next = kNone;
    if (R.run_tail != kNone)
      slot(s, r, R.run_tail).next = sl;
    else
      R.run_head = sl;
    R.run_tail = sl;
    x.pf_prev = R.pf_tail;
    x.pf_next = kNone;
    if (R.pf_tail != kNone)
      slot(s, r, R.pf_tail).pf_next = sl;
    else
      R.pf_head = sl;
    R.pf_tail = sl;
    x.decoding = 0;
    x.ctx_extra = shared + reused - own;
    x.adopted = 0;
    if (shared > 0) R.prefix_users[q.cls]++;
    if ((reused + shared > 0 || from_host + from_store > 0) && q.in_window && q.t_admit == t) {
      s.tally->classes[q.cls].prefix_hits++;
      s.tally->classes[q.cls].prefix_tokens_reused += x.ctx_extra + own + from_host + from_store;
      s.tally->classes[q.cls].prefix_tokens_loaded += from_host + from_store;
      s.tally->pools[R.pool].remote_loaded += double(from_store);
    }
    load_s += double(from_host) * P.cpu_load_s_per_token;
    if (from_store > 0) load_s += P.remote_latency_s + double(from_store) * P.remote_load_s_per_token;
    x.prefill_total = total;
    x.prefill_done = loaded;
    x.loaded = loaded;
    // a prefill pool's request ends with its prompt (its first token stays unsent)
    x.out_left = P.disagg ? 1 : q.output - q.generated;
    x.blocks = blocks;
    R.free_blocks -= blocks;
    R.n_running++;
    lo_touch(s, R);
    const int64_t c = min_of<int64_t>(budget, total - loaded);
    note_room(use.budget_room, budget - (total - loaded));
    x.chunk = int32_t(c);
    budget -= c;
    pseqs += 1.0;
    const double cd = double(c), c0 = double(x.ctx_extra + loaded);
    ptoks += cd;
    pclass[q.cls] += cd;
    ppairs += cd * c0 + cd * (cd + 1.0) * 0.5;
    pread += c0;
  }
  // the budget, not the queue or the batch, ended admission: a larger one would have gone on
  if (admit && budget <= 0 && R.n_running < R.S && Q.size > 0) note_room(use.budget_room, -1);
  if (R.n_running > use.peak_running) use.peak_running = R.n_running;

  // With a shared queue, work this replica left behind (or sent back) is offered to the others;
  // work it could not take goes on to the next replica noted for an earlier offer.
  if (P.router == Router::central_queue && Q.size > 0) {
    if (changed)
      cq_offer(s, R.pool, r, t);
    else
      cq_wake_next(s, R.pool, t);
  }

  if (R.n_running == 0) {  // nothing to do: idle until work arrives
    set_busy(s, r, 0, t);
    R.run_k = 0;
    set_next(s, r, kInf);
    if (R.state == kDraining && (P.router == Router::central_queue || Q.size == 0) && R.host_n == 0)
      replica_off(s, r, t);
    return;
  }

  // 3. plan the run
  const double n = double(R.n_decode);
  const double T0 = double(R.A) + n * double(st);
  // allocated: a cached block no running request holds counts as free, as vLLM's usage counts it
  // (its block pool's free queue holds it until it is evicted)
  const int64_t used = P.kv_total_blocks - R.free_blocks - (P.cache_entries > 0 ? cache_evictable_blocks(s, r) : 0);
  R.run_blocks0 = double(used);
  set_busy(s, r, 1, t);
  R.run_t0 = t;
  if (ptoks > 0.0) {
    set_single_step(P, R, ptoks, ppairs, pread, n, T0, pseqs + n);
    R.run_prefill = 1;
    R.run_k = 1;
    R.run_blocks_rate = 0.0;
  } else {
    const int64_t k_line = set_decode_run(P, R, n, T0);
    R.run_prefill = 0;
    const int64_t k_fin = fheap_of(s, r)[0].finish - st + 1;
    const int64_t k_blk = 1 + steps_covered(s, r, st + 1, R.free_blocks, k_fin - 1);
    // the run ends at the first finish unless the blocks run out first (then the KV decided); the
    // room is bounded below by a block per sequence per bs steps begun, not counted residue by residue
    note_room(use.kv_room,
              k_blk < k_fin ? -1 : R.free_blocks - div_count(k_fin - 2 + R.bs, R.bs) * int64_t(R.n_decode));
    R.run_k = min_of(min_of(k_fin, k_blk), k_line);
    if (p.max_run_steps > 0 && R.run_k > p.max_run_steps) R.run_k = p.max_run_steps;
    if (shared > 1 || deferred)
      R.run_k = 1;  // neighbours' memory and turns change step by step; a
                    // deferred request joins at the next boundary
    R.run_blocks_rate = n / double(R.bs);
  }
  // a CPU fallback or a throttled clock (exactly 1 without); MPS clients share the device at once,
  // time-sliced ones take turns with busy neighbours
  const double factor = run_factor(s, r, t);
  if (P.mps_clients > 1) mps_share_device(s, r, ptoks, ppairs, pread, n, T0, pseqs + n);
  slowdown *= factor;
  if (slowdown > 1.0) scale_line(R.run_line, slowdown);
  if (!R.run_prefill && R.run_k > 1) cut_at_change(s, r, t);
  if (load_s > 0.0) {  // the step waits for its loads (a slowdown of the device does not stretch them)
    R.run_line.o += load_s;
    s.tally->pools[R.pool].cache_load_s += load_s * in_window(s, t);
  }
  set_class_shares(s, R, pclass, ptoks);
  set_next(s, r, t + line_sum(R.run_line, R.run_k));
}

// New work is waiting for replica r: wake it, or end its decode run at the next step boundary.
FLEETSIM_HD inline void cont_kick(Sim& s, int32_t r, double t) {
  Replica& R = s.rep[r];
  if (R.state != kReady && R.state != kDraining) return;  // a starting replica looks at its queue when ready
  if (!R.busy) {
    set_busy(s, r, 1, t);
    R.run_k = 0;
    R.run_t0 = t;
    R.last_start = kInf;
    set_next(s, r, t);
    return;
  }
  if (R.run_prefill || R.run_k <= 1 || R.n_running >= R.S) return;
  // the first boundary at or after t; scheduling ahead, the step there was formed when the one
  // before it started: work queued since then (the queue's oldest says) waits a boundary more
  int64_t j = line_steps_until(R.run_line, R.run_k, t - R.run_t0);
  if (pool_of(s, r).async_admit && s.q[R.queue].size > 0 &&
      s.req[q_at(s, s.q[R.queue], 0)].t_queued > R.run_t0 + line_sum(R.run_line, j - 1))
    j += 1;
  if (j < R.run_k) {
    R.run_k = j;
    set_next(s, r, max_of(t, R.run_t0 + line_sum(R.run_line, j)));
  }
}

// A shared queue's note of replica r: its step boundary `at` (kInf: none), kept in its pool's
// note calendar; a replica left without one goes on the pool's pending list (cq_offer).
FLEETSIM_HD inline void cq_set_note(Sim& s, int32_t r, double at) {
  Replica& R = s.rep[r];
  PoolState& ps = s.pool[R.pool];
  if (R.wake_at != at) cal_set(s, ps, r, at);  // an unchanged note stays where it is filed
  if (!(at < kInf) && !R.cq_pending) {
    R.cq_pending = 1;
    s.cq_pend[ps.first_replica + ps.cq_pend_n++] = r;
  }
}
FLEETSIM_HD inline void cq_clear_note(Sim& s, int32_t r) {
  if (pool_of(s, r).router == Router::central_queue)
    cq_set_note(s, r, kInf);
  else
    s.rep[r].wake_at = kInf;
}
// A busy replica that an offer notes: serving, in a decode run of more than one step, a slot free.
FLEETSIM_HD FLEETSIM_FORCEINLINE bool cq_eligible(const Replica& O) {
  return O.busy && (O.state == kReady || O.state == kDraining) && !O.run_prefill && O.run_k > 1 && O.n_running < O.S;
}
// A note that can still be woken: its replica busy and serving, its run a decode run that reaches it.
FLEETSIM_HD FLEETSIM_FORCEINLINE bool cq_eligible_note(const Replica& O) {
  return O.busy && (O.state == kReady || O.state == kDraining) && !O.run_prefill && O.wake_k < O.run_k;
}
// Note replica o's first step boundary at or after t; false if its run has none left. `passed`:
// its note is one of this run's boundaries and lies before t, so every step before that one ended
// before t too. The answer is found by stepping on from there, or from the run's first step (a
// step or two, where the search would take a dozen line sums; the same j, as line_sum rises with
// j), and searched for only when a few steps do not reach it.
FLEETSIM_HD inline bool cq_note(Sim& s, int32_t o, double t, bool passed = false) {
  Replica& O = s.rep[o];
  const double dt = t - O.run_t0;
  int64_t j = 1;
  double sum_j = -1.0;  // line_sum(run_line, j), where the steps found it
  if (passed && O.wake_k >= 1 && O.wake_k < O.run_k) j = O.wake_k;
  for (int32_t tries = 0; j < O.run_k; ++j) {
    const double sj = line_sum(O.run_line, j);
    if (!(sj < dt)) {
      sum_j = sj;
      break;
    }
    if (++tries == 4) {
      j = kNone;
      break;
    }
  }
  if (j == kNone) j = line_steps_until(O.run_line, O.run_k, dt);
  if (j >= O.run_k) return false;
  O.wake_k = j;
  if (sum_j < 0.0) sum_j = line_sum(O.run_line, j);
  cq_set_note(s, o, max_of(t, O.run_t0 + sum_j));
  return true;
}

// A note of replica o that lies before t moves to its first boundary at or after t, or goes.
FLEETSIM_HD FLEETSIM_FORCEINLINE void cq_renote(Sim& s, int32_t o, int32_t except, double t) {
  if (o == except || !cq_eligible(s.rep[o]) || !cq_note(s, o, t, true)) cq_set_note(s, o, kInf);
}

// Work in pool pi's shared queue is offered to every replica but `except`, as cont_kick would to
// each. An idle replica wakes now; a busy one is only noted with its next step boundary, and the
// earliest of those is woken (cq_wake_next): a replica whose boundary comes later would find the
// work taken, so waking it would only split its run (which changes rounding, not what happens).
// A step start that leaves work behind wakes the next noted replica, so every replica that waking
// all would have reached with work waiting is still reached, at the same step.
FLEETSIM_HD inline void cq_offer(Sim& s, int32_t pi, int32_t except, double t) {
  PoolState& ps = s.pool[pi];
  const int32_t r0 = ps.first_replica, r1 = ps.first_replica + ps.n_replicas;
  // a cap on run length restarts at every split, so there every split counts
  const bool all = s.p->wake_all || s.p->max_run_steps > 1;
  if (all) {
    for (int32_t o = r0; o < r1; ++o)
      if (o != except) cont_kick(s, o, t);
    return;
  }
  // idle replicas wake now (only where the pool has one: the busy-and-serving count says)
  if (ps.n_busy_serving < ps.n_ready + ps.n_draining)
    for (int32_t o = r0; o < r1; ++o)
      if (o != except && !s.rep[o].busy) cont_kick(s, o, t);
  // A busy replica is noted with its first step boundary at or after t. Those to look at: the
  // ones whose note went (a run start, a note dropped or taken up: the pending list) and the ones
  // whose note is in the past (the earliest in the calendar). Every other note is still its
  // first boundary at or after t.
  int32_t* pend = s.cq_pend + r0;
  int32_t keep = 0;
  for (int32_t i = 0; i < ps.cq_pend_n; ++i) {
    const int32_t o = pend[i];
    Replica& O = s.rep[o];
    if (o == except) {  // a replica starting its step is looked at after it
      pend[keep++] = o;
      continue;
    }
    if (cq_eligible(O) && !(O.wake_at < kInf) && !cq_note(s, o, t)) {
      pend[keep++] = o;  // no boundary left before its run ends: looked at again next time
      continue;
    }
    O.cq_pending = 0;  // noted, or not eligible until its next run
  }
  ps.cq_pend_n = keep;
  // (in any order: each is noted from its own run alone)
  if (ps.cq_mask == 0) {
    for (int32_t o = r0; o < r1; ++o)
      if (s.rep[o].wake_at < t) cq_renote(s, o, except, t);
  } else {
    for (int32_t o = cal_take_before(s, ps, t), next; o != kNone; o = next) {
      next = s.cq_note[o].next;
      cq_renote(s, o, except, t);
    }
  }
  cq_wake_next(s, pi, t);
}

// Wake the noted replica of pool pi with the earliest step boundary (ties: the lower index, as
// the event heap orders them); a note whose boundary or run has gone is dropped.
FLEETSIM_HD inline void cq_wake_next(Sim& s, int32_t pi, double t) {
  PoolState& ps = s.pool[pi];
  int32_t best = kNone;
  for (int32_t o = cal_min(s, ps); o != kNone; o = cal_min(s, ps)) {
    const Replica& O = s.rep[o];
    if (O.wake_at < t || !cq_eligible_note(O)) {
      cq_set_note(s, o, kInf);
      continue;
    }
    best = o;
    break;
  }
  if (best == kNone) return;
  Replica& B = s.rep[best];
  const double at = B.wake_at;
  B.run_k = B.wake_k;
  cq_set_note(s, best, kInf);
  set_next(s, best, at);
}

}  // namespace fleetsim
