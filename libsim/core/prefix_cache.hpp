// A replica's bounded prefix cache (engine.prefix_cache: {scope: replica}): the trace's hashed
// prompt blocks a replica computed, kept in its free KV memory and evicted least recently used
// first when a step or an admission needs the blocks, as vLLM's block pool does. A request that
// finds its leading blocks here attends to them without computing them and holds them (they cannot
// be evicted) until it leaves; once its prompt is computed its full blocks join the cache
// (cache_adopt, continuous.hpp), and what could not join then joins when it leaves.
//
// An optional second tier in host memory (cpu_gib) keeps every block the replica computed, least
// recently used out first, whatever the device evicts; a request's leading blocks found there
// after the device's are loaded over PCIe into blocks it holds, not computed.
//
// A store the pool's replicas share (remote: LMCache's remote backend, Mooncake's store) keeps
// every block any replica computed, least recently used out first, and outlives the replicas; a
// request's leading blocks found there after the host tier's are loaded over the network: a
// latency once, then each token's KV at the link's bandwidth.
//
// Per tier (of a replica, or the pool's store): entries found through an open-addressing table (a power of two, linear
// probing, deletion by backward shift), the unheld ones on a list, oldest first, free entries on
// another.
#pragma once
#include "accounting.hpp"
#include "containers.hpp"
#include "state.hpp"
#include "tally.hpp"

namespace fleetsim {

// One tier of replica r's cache: its arrays and lists (`ref` only on the device tier).
struct CacheTier {
  int32_t *key, *prev, *next, *ref, *tab;
  int32_t entries, table;
  int32_t *head, *tail, *free, *n;
};

FLEETSIM_HD FLEETSIM_FORCEINLINE CacheTier gpu_tier(Sim& s, int32_t r) {
  Replica& R = s.rep[r];
  const PoolParams& P = s.p->pools[R.pool];
  return CacheTier{s.cache_key + R.cache_base,
                   s.cache_prev + R.cache_base,
                   s.cache_next + R.cache_base,
                   s.cache_ref + R.cache_base,
                   s.cache_tab + R.tab_base,
                   P.cache_entries,
                   P.cache_table,
                   &R.lru_head,
                   &R.lru_tail,
                   &R.ent_free,
                   &R.cache_n};
}
FLEETSIM_HD FLEETSIM_FORCEINLINE CacheTier cpu_tier(Sim& s, int32_t r) {
  Replica& R = s.rep[r];
  const PoolParams& P = s.p->pools[R.pool];
  return CacheTier{s.cpu_key + R.cpu_base,
                   s.cpu_prev + R.cpu_base,
                   s.cpu_next + R.cpu_base,
                   nullptr,
                   s.cpu_tab + R.cpu_tab_base,
                   P.cpu_entries,
                   P.cpu_table,
                   &R.cpu_head,
                   &R.cpu_tail,
                   &R.cpu_free,
                   &R.cpu_n};
}

FLEETSIM_HD FLEETSIM_FORCEINLINE CacheTier remote_tier(Sim& s, int32_t pi) {
  PoolState& ps = s.pool[pi];
  const PoolParams& P = s.p->pools[pi];
  return CacheTier{s.rem_key + ps.rem_base,
                   s.rem_prev + ps.rem_base,
                   s.rem_next + ps.rem_base,
                   nullptr,
                   s.rem_tab + ps.rem_tab_base,
                   P.remote_entries,
                   P.remote_table,
                   &ps.rem_head,
                   &ps.rem_tail,
                   &ps.rem_free,
                   &ps.rem_n};
}

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

// The entry of a tier (its keys and table) holding block `key`, or kNone.
FLEETSIM_HD inline int32_t tier_find(const int32_t* keys, const int32_t* tab, int32_t table, int32_t key) {
  for (uint32_t i = cache_home(key, table);; i = (i + 1) & uint32_t(table - 1)) {
    const int32_t e = tab[i];
    if (e == kNone) return kNone;
    if (keys[e] == key) return e;
  }
}

// Of the blocks ids[h, n), how many lead in a tier (its keys and table).
FLEETSIM_HD inline int32_t tier_leading(const int32_t* keys, const int32_t* tab, int32_t table, const int32_t* ids,
                                        int32_t h, int32_t n) {
  int32_t k = h;
  while (k < n && tier_find(keys, tab, table, ids[k]) != kNone) ++k;
  return k - h;
}

FLEETSIM_HD inline int32_t cache_find(const Sim& s, int32_t r, int32_t key) {
  const Replica& R = s.rep[r];
  return tier_find(s.cache_key + R.cache_base, s.cache_tab + R.tab_base, s.p->pools[R.pool].cache_table, key);
}

// How many of the leading blocks `ids[0, n)` replica r's device tier holds.
FLEETSIM_HD inline int32_t cache_leading_hits(const Sim& s, int32_t r, const int32_t* ids, int32_t n) {
  const Replica& R = s.rep[r];
  return tier_leading(s.cache_key + R.cache_base, s.cache_tab + R.tab_base, s.p->pools[R.pool].cache_table, ids, 0, n);
}

// Of the blocks ids[h, n) that follow, how many lead in the host tier.
FLEETSIM_HD inline int32_t cpu_leading_hits(const Sim& s, int32_t r, const int32_t* ids, int32_t h, int32_t n) {
  const Replica& R = s.rep[r];
  const PoolParams& P = s.p->pools[R.pool];
  return P.cpu_entries == 0 ? 0
                            : tier_leading(s.cpu_key + R.cpu_base, s.cpu_tab + R.cpu_tab_base, P.cpu_table, ids, h, n);
}

// Of the blocks ids[h, n) that follow, how many lead in pool pi's shared store.
FLEETSIM_HD inline int32_t remote_leading_hits(const Sim& s, int32_t pi, const int32_t* ids, int32_t h, int32_t n) {
  const PoolParams& P = s.p->pools[pi];
  const PoolState& ps = s.pool[pi];
  return P.remote_entries == 0
             ? 0
             : tier_leading(s.rem_key + ps.rem_base, s.rem_tab + ps.rem_tab_base, P.remote_table, ids, h, n);
}

FLEETSIM_HD FLEETSIM_FORCEINLINE void tier_unlink(const CacheTier& T, int32_t e) {
  if (T.prev[e] != kNone)
    T.next[T.prev[e]] = T.next[e];
  else
    *T.head = T.next[e];
  if (T.next[e] != kNone)
    T.prev[T.next[e]] = T.prev[e];
  else
    *T.tail = T.prev[e];
}

FLEETSIM_HD FLEETSIM_FORCEINLINE void tier_append(const CacheTier& T, int32_t e) {
  T.prev[e] = *T.tail;
  T.next[e] = kNone;
  if (*T.tail != kNone)
    T.next[*T.tail] = e;
  else
    *T.head = e;
  *T.tail = e;
}

// Take entry e (off the lists) out of the table, by backward shift: later entries of its probe
// run move up so that none is cut off; e joins the free entries.
FLEETSIM_HD inline void tier_remove(const CacheTier& T, int32_t e) {
  const uint32_t m = uint32_t(T.table - 1);
  uint32_t i = cache_home(T.key[e], T.table);
  while (T.tab[i] != e) i = (i + 1) & m;
  for (uint32_t j = (i + 1) & m; T.tab[j] != kNone; j = (j + 1) & m) {
    const uint32_t k = cache_home(T.key[T.tab[j]], T.table);
    const bool stays = i <= j ? (i < k && k <= j) : (i < k || k <= j);
    if (stays) continue;
    T.tab[i] = T.tab[j];
    i = j;
  }
  T.tab[i] = kNone;
  T.next[e] = *T.free;
  *T.free = e;
  (*T.n)--;
}

// Put block `key` into free entry e's place (taken from the free list) as the most recent.
FLEETSIM_HD inline int32_t tier_add(const CacheTier& T, int32_t key) {
  const int32_t e = *T.free;
  *T.free = T.next[e];
  T.key[e] = key;
  if (T.ref) T.ref[e] = 0;
  uint32_t i = cache_home(key, T.table);
  while (T.tab[i] != kNone) i = (i + 1) & uint32_t(T.table - 1);
  T.tab[i] = e;
  tier_append(T, e);
  (*T.n)++;
  return e;
}

FLEETSIM_HD inline void tier_clear(const CacheTier& T) {
  for (int32_t i = 0; i < T.table; ++i) T.tab[i] = kNone;
  for (int32_t e = 0; e < T.entries; ++e) {
    T.next[e] = e + 1 < T.entries ? e + 1 : kNone;
    if (T.ref) T.ref[e] = 0;
  }
  *T.free = T.entries > 0 ? 0 : kNone;
  *T.head = *T.tail = kNone;
  *T.n = 0;
}

// A running request holds its leading `h` device blocks (they leave the eviction list) ...
FLEETSIM_HD inline void cache_ref(Sim& s, int32_t r, const int32_t* ids, int32_t h) {
  const CacheTier T = gpu_tier(s, r);
  for (int32_t i = 0; i < h; ++i) {
    const int32_t e = tier_find(T.key, T.tab, T.table, ids[i]);
    if (T.ref[e]++ == 0) {
      tier_unlink(T, e);
      s.rep[r].cache_held++;
    }
  }
}

// ... and lets them go: the last holder puts each back as the most recently used, the tail first
// (as vLLM frees a request's blocks), so that a prefix's leading blocks are the last evicted.
FLEETSIM_HD inline void cache_unref(Sim& s, int32_t r, const int32_t* ids, int32_t h) {
  const CacheTier T = gpu_tier(s, r);
  for (int32_t i = h - 1; i >= 0; --i) {
    const int32_t e = tier_find(T.key, T.tab, T.table, ids[i]);
    if (--T.ref[e] == 0) {
      tier_append(T, e);
      s.rep[r].cache_held--;
    }
  }
}

// KV blocks of replica r's device tier that no running request holds: what evicting could free.
FLEETSIM_HD FLEETSIM_FORCEINLINE int64_t cache_evictable_blocks(const Sim& s, int32_t r) {
  const Replica& R = s.rep[r];
  return int64_t(R.cache_n - R.cache_held) * s.p->pools[R.pool].cache_block_kv;
}

// Evict the least recently used device entry nobody holds, freeing its KV blocks; false when
// there is none.
FLEETSIM_HD inline bool cache_evict_one(Sim& s, int32_t r, double t) {
  Replica& R = s.rep[r];
  const int32_t e = R.lru_head;
  if (e == kNone) return false;
  const PoolParams& P = s.p->pools[R.pool];
  const CacheTier T = gpu_tier(s, r);
  tier_unlink(T, e);
  tier_remove(T, e);
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

// Blocks ids[0, n) join a tier that keeps everything (host, shared store) as its most recent,
// the oldest going where it is full.
FLEETSIM_HD inline void tier_keep(const CacheTier& C, const int32_t* ids, int32_t n) {
  for (int32_t b = 0; b < n; ++b) {
    const int32_t found = tier_find(C.key, C.tab, C.table, ids[b]);
    if (found != kNone) {
      tier_unlink(C, found);
      tier_append(C, found);
      continue;
    }
    if (*C.free == kNone) {
      const int32_t old = *C.head;
      tier_unlink(C, old);
      tier_remove(C, old);
    }
    tier_add(C, ids[b]);
  }
}

// Request blocks ids[0, n) were computed on replica r and are now free: each joins the device tier
// (or, already there, becomes the most recently used), taking the oldest entries' room where
// needed, and the host tier and the shared store the same way (they keep what the device later
// evicts).
FLEETSIM_HD inline void cache_insert(Sim& s, int32_t r, const int32_t* ids, int32_t n, double t) {
  Replica& R = s.rep[r];
  const PoolParams& P = s.p->pools[R.pool];
  if (P.cpu_entries > 0) tier_keep(cpu_tier(s, r), ids, n);
  if (P.remote_entries > 0) tier_keep(remote_tier(s, R.pool), ids, n);
  const CacheTier T = gpu_tier(s, r);
  // the leading blocks in order (a prefix is only of use from its start), each held until all are
  // in, so that room is never made by evicting this request's own blocks
  int32_t in = 0;
  for (; in < n; ++in) {
    int32_t e = tier_find(T.key, T.tab, T.table, ids[in]);
    if (e == kNone) {
      if (R.ent_free == kNone && !cache_evict_one(s, r, t)) break;
      note_room(s.tally->limits.pools[R.pool].kv_room_mark, R.free_blocks - P.kv_watermark_blocks - P.cache_block_kv);
      if (R.free_blocks - P.kv_watermark_blocks < P.cache_block_kv) {
        cache_make_room(s, r, P.kv_watermark_blocks + P.cache_block_kv, t);
        if (R.free_blocks - P.kv_watermark_blocks < P.cache_block_kv) break;
      }
      e = tier_add(T, ids[in]);
      R.free_blocks -= P.cache_block_kv;
      R.cache_blocks += P.cache_block_kv;
    }
    if (T.ref[e]++ == 0) {
      tier_unlink(T, e);
      R.cache_held++;
    }
  }
  cache_unref(s, r, ids, in);  // let go tail first: the leading blocks the most recently used
}

// Empty replica r's cache (it starts, or lost its memory): its blocks are back with the free ones.
FLEETSIM_HD inline void cache_clear(Sim& s, int32_t r) {
  Replica& R = s.rep[r];
  const PoolParams& P = s.p->pools[R.pool];
  R.cache_held = 0;
  if (P.cache_entries == 0) return;
  tier_clear(gpu_tier(s, r));
  if (P.cpu_entries > 0) tier_clear(cpu_tier(s, r));
  R.free_blocks += R.cache_blocks;
  R.cache_blocks = 0;
}

}  // namespace fleetsim
