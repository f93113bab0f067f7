// Small containers over the workspace: each queue's ring of request indices, the replica event
// heap, and each replica's heap of decoding slots by finish step; and a replica's load.
#pragma once
#include "state.hpp"

namespace fleetsim {

// Requests queued for replica r plus those it runs (and those at its host CPU stage).
// (`continuous`: its pool batches continuously; a router scanning a pool passes it once)
FLEETSIM_HD FLEETSIM_FORCEINLINE int32_t outstanding(const Sim& s, int32_t r, bool continuous) {
  const Replica& R = s.rep[r];
  return s.q[R.queue].size + (continuous ? R.n_running : R.batch_n) + R.host_n;
}
FLEETSIM_HD inline int32_t outstanding(const Sim& s, int32_t r) {
  return outstanding(s, r, s.p->pools[s.rep[r].pool].batching == Batching::continuous);
}

// A binary min-heap of (time, index) keys, ties by the lower index: KV transfers in flight
// (handoff.hpp) and turns held for their parent's answer (trace_sessions.hpp).
FLEETSIM_HD FLEETSIM_FORCEINLINE bool key_less(const RKey& a, const RKey& b) {
  return a.t < b.t || (a.t == b.t && a.r < b.r);
}

FLEETSIM_HD inline void key_push(RKey* h, int32_t& n, double t, int32_t r) {
  int32_t i = n++;
  const RKey k{t, r, 0};
  while (i > 0) {
    const int32_t parent = (i - 1) / 2;
    if (!key_less(k, h[parent])) break;
    h[i] = h[parent];
    i = parent;
  }
  h[i] = k;
}

// Remove the earliest key and return its index.
FLEETSIM_HD inline int32_t key_pop(RKey* h, int32_t& n) {
  const int32_t top = h[0].r;
  const RKey last = h[--n];
  int32_t i = 0;
  for (;;) {
    int32_t c = 2 * i + 1;
    if (c >= n) break;
    if (c + 1 < n && key_less(h[c + 1], h[c])) ++c;
    if (!key_less(h[c], last)) break;
    h[i] = h[c];
    i = c;
  }
  if (n > 0) h[i] = last;
  return top;
}

// A least-outstanding pool of many replicas keeps a tournament tree over them: each leaf keyed by
// the replica's outstanding requests while it is ready (kLoOut otherwise), each node the better
// of its two (fewer, then the lower index: the left one), so the root is the replica a scan would
// pick. Called wherever a replica's queue, batch, host jobs or state change.
FLEETSIM_HD inline void lo_touch(Sim& s, int32_t r) {
  const Replica& R = s.rep[r];
  const PoolState& ps = s.pool[R.pool];
  if (ps.lo_leaves == 0) return;
  const int32_t key = R.state == kReady ? outstanding(s, r) : kLoOut;
  if (s.lo_key[r] == key) return;
  s.lo_key[r] = key;
  int32_t* tree = s.lo_tree + ps.lo_base;
  for (int32_t i = (ps.lo_leaves + r - ps.first_replica) >> 1; i >= 1; i >>= 1) {
    const int32_t a = tree[2 * i], b = tree[2 * i + 1];
    const int32_t w = b == kNone || s.lo_key[a] <= s.lo_key[b] ? a : b;
    // a node whose winner is still another replica leaves everything above it as it was
    if (w == tree[i] && w != r) break;
    tree[i] = w;
  }
}

FLEETSIM_HD FLEETSIM_FORCEINLINE void lo_touch(Sim& s, const Replica& R) { lo_touch(s, int32_t(&R - s.rep)); }

FLEETSIM_HD FLEETSIM_FORCEINLINE int32_t q_at(const Sim& s, const Queue& q, int32_t i) {
  int32_t k = q.head + i;
  if (k >= q.cap) k -= q.cap;
  return s.qbuf[q.base + k];
}
FLEETSIM_HD FLEETSIM_FORCEINLINE void q_push_back(Sim& s, Queue& q, int32_t v) {
  int32_t k = q.head + q.size;
  if (k >= q.cap) k -= q.cap;
  s.qbuf[q.base + k] = v;
  q.size++;
  if (q.owner != kNone) lo_touch(s, q.owner);
}
FLEETSIM_HD FLEETSIM_FORCEINLINE void q_push_front(Sim& s, Queue& q, int32_t v) {
  q.head = q.head == 0 ? q.cap - 1 : q.head - 1;
  s.qbuf[q.base + q.head] = v;
  q.size++;
  if (q.owner != kNone) lo_touch(s, q.owner);
}
// Insert behind every waiting request of the same or a higher priority (FCFS within a priority).
FLEETSIM_HD inline void q_insert_by_priority(Sim& s, Queue& q, int32_t v, int32_t prio, const int32_t* class_prio) {
  int32_t pos = q.size;
  q_push_back(s, q, v);
  while (pos > 0) {
    int32_t k = q.head + pos - 1;
    if (k >= q.cap) k -= q.cap;
    int32_t kk = k + 1 == q.cap ? 0 : k + 1;
    if (class_prio[s.req[s.qbuf[q.base + k]].cls] >= prio) break;
    const int32_t tmp = s.qbuf[q.base + k];
    s.qbuf[q.base + k] = s.qbuf[q.base + kk];
    s.qbuf[q.base + kk] = tmp;
    --pos;
  }
}

// Pops without touching the least-outstanding index: for a caller that puts the request in its
// replica's batch at once and touches the index then (admission leaves the count as it was; two
// walks up the tree that cancel would be a tenth of a 128-replica run).
FLEETSIM_HD FLEETSIM_FORCEINLINE int32_t q_pop_front_to_batch(Sim& s, Queue& q) {
  const int32_t v = s.qbuf[q.base + q.head];
  q.head = q.head + 1 == q.cap ? 0 : q.head + 1;
  q.size--;
  return v;
}
FLEETSIM_HD FLEETSIM_FORCEINLINE int32_t q_pop_front(Sim& s, Queue& q) {
  const int32_t v = q_pop_front_to_batch(s, q);
  if (q.owner != kNone) lo_touch(s, q.owner);
  return v;
}

// An indexed binary heap of replicas (heap[] holds them, pos[] where each is), restored after
// replica r's key changed; less(a, b) orders two replicas.
template <class Less>
FLEETSIM_HD FLEETSIM_FORCEINLINE void heap_fix(int32_t* heap, int32_t* pos, int32_t n, int32_t r, const Less& less) {
  int32_t i = pos[r];
  while (i > 0) {  // sift up
    const int32_t parent = (i - 1) / 2;
    if (!less(heap[i], heap[parent])) break;
    const int32_t a = heap[i], b = heap[parent];
    heap[i] = b;
    pos[b] = i;
    heap[parent] = a;
    pos[a] = parent;
    i = parent;
  }
  for (;;) {  // sift down
    const int32_t l = 2 * i + 1, rr = l + 1;
    int32_t m = i;
    if (l < n && less(heap[l], heap[m])) m = l;
    if (rr < n && less(heap[rr], heap[m])) m = rr;
    if (m == i) break;
    const int32_t a = heap[i], b = heap[m];
    heap[i] = b;
    pos[b] = i;
    heap[m] = a;
    pos[a] = m;
    i = m;
  }
}

// An indexed heap of RKey entries ordered by (t, r): entry r's key becomes t and the heap is
// restored by moving a hole (pos[r]: where entry r is, relative to h). Only the front is ever read,
// and it is the same whatever the layout below it.
FLEETSIM_HD FLEETSIM_FORCEINLINE bool rk_less(const RKey& a, const RKey& b) {
  return (a.t < b.t) | ((a.t == b.t) & (a.r < b.r));  // no branch: these compares are coin tosses
}
FLEETSIM_HD inline void kheap_set(RKey* h, int32_t* pos, int32_t n, int32_t r, double t) {
  const RKey k{t, r, 0};
  int32_t i = pos[r];
  if (i > 0 && rk_less(k, h[(i - 1) / 2])) {  // it came earlier: sift up
    do {
      const int32_t parent = (i - 1) / 2;
      h[i] = h[parent];
      pos[h[i].r] = i;
      i = parent;
    } while (i > 0 && rk_less(k, h[(i - 1) / 2]));
    h[i] = k;
    pos[r] = i;
    return;
  }
  // it went later: sift down along the earlier child
  for (;;) {
    const int32_t l = 2 * i + 1;
    if (l >= n) break;
    const int32_t m = l + int32_t(l + 1 < n && rk_less(h[l + 1], h[l]));
    if (!rk_less(h[m], k)) break;
    h[i] = h[m];
    pos[h[i].r] = i;
    i = m;
  }
  h[i] = k;
  pos[r] = i;
}

// Replica event heap, ordered by (t_next, index) so that ties resolve the same everywhere.
FLEETSIM_HD inline void rh_update(Sim& s, int32_t r) {
  kheap_set(s.rheap, s.rheap_pos, s.n_replicas, r, s.rep[r].t_next);
}
FLEETSIM_HD FLEETSIM_FORCEINLINE void set_next(Sim& s, int32_t r, double t) {
  if (s.rep[r].t_next == t) return;  // the heap holds t_next already
  s.rep[r].t_next = t;
  rh_update(s, r);
}

FLEETSIM_HD FLEETSIM_FORCEINLINE const PoolParams& pool_of(const Sim& s, int32_t r) {
  return s.p->pools[s.rep[r].pool];
}

// Per-replica finish heap of decoding slots, ordered by (finish step, slot).
FLEETSIM_HD FLEETSIM_FORCEINLINE Seq& slot(Sim& s, int32_t r, int32_t i) { return s.seq[s.rep[r].slot_base + i]; }
FLEETSIM_HD FLEETSIM_FORCEINLINE FKey* fheap_of(Sim& s, int32_t r) { return s.fheap + s.rep[r].slot_base; }
FLEETSIM_HD FLEETSIM_FORCEINLINE int32_t* rescnt_of(Sim& s, int32_t r) { return s.rescnt + s.rep[r].res_base; }
FLEETSIM_HD FLEETSIM_FORCEINLINE bool fh_less(const FKey& a, const FKey& b) {
  return a.finish < b.finish || (a.finish == b.finish && a.slot < b.slot);
}
// Restore the heap order around position i (its key changed or arrived there), moving the key up
// or down through a hole: the keys are distinct (ties by slot), so the layout is the one a swap
// at each level would leave.
FLEETSIM_HD inline void fh_fix(Sim& s, int32_t r, int32_t i) {
  FKey* h = fheap_of(s, r);
  int32_t* pos = s.fpos + s.rep[r].slot_base;
  const int32_t n = s.rep[r].heap_n;
  const FKey k = h[i];
  bool up = false;
  while (i > 0) {
    const int32_t parent = (i - 1) / 2;
    if (!fh_less(k, h[parent])) break;
    h[i] = h[parent];
    pos[h[i].slot] = i;
    i = parent;
    up = true;
  }
  if (!up) {
    for (;;) {
      int32_t c = 2 * i + 1;
      if (c >= n) break;
      if (c + 1 < n && fh_less(h[c + 1], h[c])) ++c;
      if (!fh_less(h[c], k)) break;
      h[i] = h[c];
      pos[h[i].slot] = i;
      i = c;
    }
  }
  h[i] = k;
  pos[k.slot] = i;
}
FLEETSIM_HD inline void fh_push(Sim& s, int32_t r, int32_t sl) {
  const int32_t i = s.rep[r].heap_n++;
  fheap_of(s, r)[i] = FKey{slot(s, r, sl).finish, sl, 0};
  fh_fix(s, r, i);
}
FLEETSIM_HD inline void fh_remove(Sim& s, int32_t r, int32_t sl) {
  FKey* h = fheap_of(s, r);
  const int32_t i = s.fpos[s.rep[r].slot_base + sl];
  const int32_t last = --s.rep[r].heap_n;
  if (i != last) {
    h[i] = h[last];
    fh_fix(s, r, i);
  }
}

}  // namespace fleetsim
