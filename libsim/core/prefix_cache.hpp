// A replica's bounded prefix cache (engine.prefix_cache: {scope: replica}): the trace's hashed
// prompt blocks a replica computed, kept in its free KV memory and evicted least recently used
// first when a step or an admission needs the blocks, as vLLM's block pool does. A request that
// finds its leading blocks here attends to them without computing them and holds them (they cannot
// be evicted) until it leaves; when it leaves, its prompt's full blocks join the cache.
//
// Per replica: `cache_entries` entries (each holds `cache_block_kv` KV blocks), found through an
// open-addressing table of `cache_table` slots (a power of two, linear probing, deletion by
// backward shift). Unreferenced entries sit on a list, oldest first; free entries on another.
#pragma once
#include "accounting.hpp"
#include "containers.hpp"
#include "state.hpp"
#include "tally.hpp"

namespace fleetsim {

FLEETSIM_HD FLEETSIM_FORCEINLINE uint32_t cache_home(int32_t key, int32_t table) {
  uint32_t x = uint32_t(key);
  x = ((x >> 16) ^ x) * 0x45d9f3bu;
  x = ((x >> 16) ^ x) * 0x45d9f3bu;
  x = (x >> 16) ^ x;
  return x & uint32_t(table - 1);
}

// The request's full prompt blocks in its trace (0 where the cache does not apply), and where
// their ids are.
FLEETSIM_HD inline int32_t request_blocks(const Sim& s, const Request& q, const int32_t*& ids) {
  ids = nullptr;
  if (q.trace_row < 0) return 0;
  const ArrivalParams& a = s.p->classes[q.cls].arrivals;
  if (!a.trace_block_off) return 0;
  const int64_t b0 = a.trace_block_off[q.trace_row], b1 = a.trace_block_off[q.trace_row + 1];
  ids = a.trace_blocks + b0;
  const int64_t full = int64_t(q.prompt) / a.trace_block_tokens;
  return int32_t(min_of<int64_t>(b1 - b0, full));
}

// The replica's entry holding block `key`, or kNone.
FLEETSIM_HD inline int32_t cache_find(const Sim& s, int32_t r, int32_t key) {
  const Replica& R = s.rep[r];
  const int32_t T = s.p->pools[R.pool].cache_table;
  const int32_t* tab = s.cache_tab + R.tab_base;
  const int32_t* keys = s.cache_key + R.cache_base;
  for (uint32_t i = cache_home(key, T);; i = (i + 1) & uint32_t(T - 1)) {
    const int32_t e = tab[i];
    if (e == kNone) return kNone;
    if (keys[e] == key) return e;
  }
}

// How many of the leading blocks `ids[0, n)` replica r holds.
FLEETSIM_HD inline int32_t cache_leading_hits(const Sim& s, int32_t r, const int32_t* ids, int32_t n) {
  int32_t h = 0;
  while (h < n && cache_find(s, r, ids[h]) != kNone) ++h;
  return h;
}

FLEETSIM_HD FLEETSIM_FORCEINLINE void lru_unlink(Sim& s, Replica& R, int32_t e) {
  int32_t* prev = s.cache_prev + R.cache_base;
  int32_t* next = s.cache_next + R.cache_base;
  if (prev[e] != kNone)
    next[prev[e]] = next[e];
  else
    R.lru_head = next[e];
  if (next[e] != kNone)
    prev[next[e]] = prev[e];
  else
    R.lru_tail = prev[e];
}

FLEETSIM_HD FLEETSIM_FORCEINLINE void lru_append(Sim& s, Replica& R, int32_t e) {
  int32_t* prev = s.cache_prev + R.cache_base;
  int32_t* next = s.cache_next + R.cache_base;
  prev[e] = R.lru_tail;
  next[e] = kNone;
  if (R.lru_tail != kNone)
    next[R.lru_tail] = e;
  else
    R.lru_head = e;
  R.lru_tail = e;
}

// A running request holds its leading `h` blocks (they leave the eviction list) ...
FLEETSIM_HD inline void cache_ref(Sim& s, int32_t r, const int32_t* ids, int32_t h) {
  Replica& R = s.rep[r];
  int32_t* ref = s.cache_ref + R.cache_base;
  for (int32_t i = 0; i < h; ++i) {
    const int32_t e = cache_find(s, r, ids[i]);
    if (ref[e]++ == 0) lru_unlink(s, R, e);
  }
}

// ... and lets them go: the last holder puts each back as the most recently used.
FLEETSIM_HD inline void cache_unref(Sim& s, int32_t r, const int32_t* ids, int32_t h) {
  Replica& R = s.rep[r];
  int32_t* ref = s.cache_ref + R.cache_base;
  for (int32_t i = 0; i < h; ++i) {
    const int32_t e = cache_find(s, r, ids[i]);
    if (--ref[e] == 0) lru_append(s, R, e);
  }
}

// Evict the least recently used entry nobody holds; false when there is none.
FLEETSIM_HD inline bool cache_evict_one(Sim& s, int32_t r, double t) {
  Replica& R = s.rep[r];
  const int32_t e = R.lru_head;
  if (e == kNone) return false;
  const PoolParams& P = s.p->pools[R.pool];
  lru_unlink(s, R, e);
  int32_t* tab = s.cache_tab + R.tab_base;
  const int32_t* keys = s.cache_key + R.cache_base;
  const uint32_t m = uint32_t(P.cache_table - 1);
  uint32_t i = cache_home(keys[e], P.cache_table);
  while (tab[i] != e) i = (i + 1) & m;
  // backward-shift deletion: later entries of the probe run move up so that none is cut off
  for (uint32_t j = (i + 1) & m; tab[j] != kNone; j = (j + 1) & m) {
    const uint32_t k = cache_home(keys[tab[j]], P.cache_table);
    const bool stays = i <= j ? (i < k && k <= j) : (i < k || k <= j);
    if (stays) continue;
    tab[i] = tab[j];
    i = j;
  }
  tab[i] = kNone;
  s.cache_next[R.cache_base + e] = R.ent_free;
  R.ent_free = e;
  R.cache_n--;
  R.free_blocks += P.cache_block_kv;
  R.cache_blocks -= P.cache_block_kv;
  s.tally->pools[R.pool].cache_evicted += in_window(s, t);
  return true;
}

// Evict until `blocks` are free, or nothing more can go; whether any was evicted.
FLEETSIM_HD inline bool cache_make_room(Sim& s, int32_t r, int64_t blocks, double t) {
  bool any = false;
  while (s.rep[r].free_blocks < blocks && cache_evict_one(s, r, t)) any = true;
  return any;
}

// Request blocks ids[0, n) were computed on replica r and are now free: each joins the cache (or,
// already there, becomes the most recently used), taking the oldest entries' room where needed.
FLEETSIM_HD inline void cache_insert(Sim& s, int32_t r, const int32_t* ids, int32_t n, double t) {
  Replica& R = s.rep[r];
  const PoolParams& P = s.p->pools[R.pool];
  int32_t* ref = s.cache_ref + R.cache_base;
  int32_t* keys = s.cache_key + R.cache_base;
  int32_t* tab = s.cache_tab + R.tab_base;
  for (int32_t b = 0; b < n; ++b) {
    const int32_t found = cache_find(s, r, ids[b]);
    if (found != kNone) {
      if (ref[found] == 0) {
        lru_unlink(s, R, found);
        lru_append(s, R, found);
      }
      continue;
    }
    if (R.ent_free == kNone && !cache_evict_one(s, r, t)) return;
    if (R.free_blocks - P.kv_watermark_blocks < P.cache_block_kv) {
      cache_make_room(s, r, P.kv_watermark_blocks + P.cache_block_kv, t);
      if (R.free_blocks - P.kv_watermark_blocks < P.cache_block_kv) return;
    }
    const int32_t e = R.ent_free;
    R.ent_free = s.cache_next[R.cache_base + e];
    keys[e] = ids[b];
    ref[e] = 0;
    uint32_t i = cache_home(ids[b], P.cache_table);
    while (tab[i] != kNone) i = (i + 1) & uint32_t(P.cache_table - 1);
    tab[i] = e;
    lru_append(s, R, e);
    R.cache_n++;
    R.free_blocks -= P.cache_block_kv;
    R.cache_blocks += P.cache_block_kv;
  }
}

// Empty replica r's cache (it starts, or lost its memory): its blocks are back with the free ones.
FLEETSIM_HD inline void cache_clear(Sim& s, int32_t r) {
  Replica& R = s.rep[r];
  const PoolParams& P = s.p->pools[R.pool];
  if (P.cache_entries == 0) return;
  for (int32_t i = 0; i < P.cache_table; ++i) s.cache_tab[R.tab_base + i] = kNone;
  for (int32_t e = 0; e < P.cache_entries; ++e) {
    s.cache_next[R.cache_base + e] = e + 1 < P.cache_entries ? e + 1 : kNone;
    s.cache_ref[R.cache_base + e] = 0;
  }
  R.ent_free = 0;
  R.lru_head = R.lru_tail = kNone;
  R.cache_n = 0;
  R.free_blocks += R.cache_blocks;
  R.cache_blocks = 0;
}

}  // namespace fleetsim
