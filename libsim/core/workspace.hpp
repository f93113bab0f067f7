// The flat workspace of one simulation: its layout from the parameters (every array sized before
// the run), and binding a Sim to it.
#pragma once
#include "calendar.hpp"
#include "prefix_cache.hpp"
#include "state.hpp"

namespace fleetsim {

// Counts are 64-bit so that no product overflows; the core indexes with int32, so the host checks
// layout_fits() before a run (scenario validation refuses a fleet that does not).
struct WorkspaceLayout {
  uint64_t pools, req, req_free, qbuf, q, rep, seq, fheap, fpos, rescnt, rheap, rheap_pos, clients, client_user,
      session_user, total;
  uint64_t cq_note, cq_bucket, cq_pend;
  uint64_t core_free, core_start, core_job, hheap, hheap_pos;
  uint64_t xheap;
  uint64_t lo_tree, lo_key;
  int64_t lo_nodes, lo_keys;  // tree nodes of all indexed pools; keys (one per replica where any)
  int64_t handoffs;           // entries of the handoff heap (request slots, where a pool hands off; else 0)
  uint64_t cache_key, cache_prev, cache_next, cache_ref, cache_tab, cpu_key, cpu_prev, cpu_next, cpu_tab;
  uint64_t rem_key, rem_prev, rem_next, rem_tab;
  uint64_t turn_state, held;
  int64_t turn_rows, held_slots;  // sessions from traces: rows of those traces; rows with a parent
  // bounded prefix caches: entries and table slots of all replicas' device and host tiers, and of
  // the pools' shared stores
  int64_t cache_entries, cache_slots, cpu_entries, cpu_slots, rem_entries, rem_slots;
  int64_t n_replicas, nq, req_cap, client_slots, session_slots;
  int64_t slots, residues, qbuf_len;
  int64_t cores, host_qlen, host_heap;  // host CPU stage: cores, FIFO entries (in qbuf), heap entries
};

FLEETSIM_HD inline uint64_t align_up(uint64_t x) { return (x + 15) & ~uint64_t(15); }

FLEETSIM_HD inline WorkspaceLayout workspace_layout(const SimParams& p) {
  WorkspaceLayout l;
  l.n_replicas = 0;
  l.nq = 0;
  l.req_cap = 0;
  l.slots = l.residues = l.qbuf_len = 0;
  l.cores = l.host_qlen = l.host_heap = 0;
  for (int32_t i = 0; i < p.n_pools; ++i) {
    const PoolParams& P = p.pools[i];
    const int64_t S = pool_slots(P), nq = pool_queues(P);
    l.n_replicas += P.max_replicas;
    l.nq += nq;
    l.req_cap += nq * int64_t(P.queue_limit) + int64_t(P.max_replicas) * S;
    if (P.disagg) l.req_cap += transit_cap(p.pools[P.decode_pool]);  // its prompts' KV in flight (handoff.hpp)
    l.slots += int64_t(P.max_replicas) * S;
    l.residues += int64_t(P.max_replicas) * P.kv_block_tokens;
    l.qbuf_len += nq * (int64_t(P.queue_limit) + (P.router == Router::central_queue ? P.max_replicas : 1) * S);
    // a replica's host FIFO never holds more than its pool's device queue can (host.hpp)
    if (P.host.cores > 0) {
      l.cores += int64_t(P.max_replicas) * P.host.cores;
      l.host_qlen += int64_t(P.max_replicas) * pool_queue_cap(P);
    }
  }
  if (l.cores > 0) l.host_heap = l.n_replicas;
  l.lo_nodes = l.lo_keys = 0;
  for (int32_t i = 0; i < p.n_pools; ++i)
    if (p.pools[i].lo_index) l.lo_nodes += 2 * int64_t(lo_leaves(p.pools[i].max_replicas));
  if (l.lo_nodes > 0) l.lo_keys = l.n_replicas;
  l.handoffs = 0;
  l.cache_entries = l.cache_slots = l.cpu_entries = l.cpu_slots = l.rem_entries = l.rem_slots = 0;
  for (int32_t i = 0; i < p.n_pools; ++i) {
    if (p.pools[i].disagg) l.handoffs = l.req_cap;
    l.cache_entries += int64_t(p.pools[i].max_replicas) * p.pools[i].cache_entries;
    l.cache_slots += int64_t(p.pools[i].max_replicas) * p.pools[i].cache_table;
    l.cpu_entries += int64_t(p.pools[i].max_replicas) * p.pools[i].cpu_entries;
    l.cpu_slots += int64_t(p.pools[i].max_replicas) * p.pools[i].cpu_table;
    l.rem_entries += p.pools[i].remote_entries;
    l.rem_slots += p.pools[i].remote_table;
  }
  l.client_slots = 0;
  bool sessions = false;
  for (int32_t c = 0; c < p.n_classes; ++c)
    if (p.classes[c].arrivals.kind == ArrivalKind::concurrency) {
      l.client_slots += int64_t(p.classes[c].arrivals.clients);
      sessions = sessions || p.classes[c].sessions != 0;
    }
  // indexed as the client heap, so sized as it when any class runs sessions
  l.session_slots = sessions ? l.client_slots : 0;
  l.turn_rows = l.held_slots = 0;
  for (int32_t c = 0; c < p.n_classes; ++c)
    if (p.classes[c].arrivals.trace_parent) {
      l.turn_rows += p.classes[c].arrivals.trace_n;
      l.held_slots += p.classes[c].arrivals.trace_follow_ups;  // each is held at most once
    }
  uint64_t off = 0;
  l.pools = off;
  off = align_up(off + sizeof(PoolState) * uint64_t(p.n_pools));
  l.req = off;
  off = align_up(off + sizeof(Request) * uint64_t(l.req_cap));
  l.req_free = off;
  off = align_up(off + sizeof(int32_t) * uint64_t(l.req_cap));
  l.qbuf = off;
  off = align_up(off + sizeof(int32_t) * uint64_t(l.qbuf_len + l.host_qlen));
  l.q = off;
  off = align_up(off + sizeof(Queue) * uint64_t(l.nq));
  l.rep = off;
  off = align_up(off + sizeof(Replica) * uint64_t(l.n_replicas));
  l.seq = off;
  off = align_up(off + sizeof(Seq) * uint64_t(l.slots));
  l.fheap = off;
  off = align_up(off + sizeof(FKey) * uint64_t(l.slots));
  l.fpos = off;
  off = align_up(off + sizeof(int32_t) * uint64_t(l.slots));
  l.rescnt = off;
  off = align_up(off + sizeof(int32_t) * uint64_t(l.residues));
  l.rheap = off;
  off = align_up(off + sizeof(RKey) * uint64_t(l.n_replicas));
  l.rheap_pos = off;
  off = align_up(off + sizeof(int32_t) * uint64_t(l.n_replicas));
  l.cq_note = off;
  off = align_up(off + sizeof(CalNote) * uint64_t(l.n_replicas));
  l.cq_bucket = off;
  off = align_up(off + sizeof(int32_t) * 4 * uint64_t(l.n_replicas));
  l.cq_pend = off;
  off = align_up(off + sizeof(int32_t) * uint64_t(l.n_replicas));
  l.clients = off;
  off = align_up(off + sizeof(double) * uint64_t(l.client_slots));
  l.client_user = off;
  off = align_up(off + sizeof(int32_t) * uint64_t(l.session_slots));
  l.session_user = off;
  off = align_up(off + sizeof(SessionUser) * uint64_t(l.session_slots));
  l.core_free = off;
  off = align_up(off + sizeof(double) * uint64_t(l.cores));
  l.core_start = off;
  off = align_up(off + sizeof(double) * uint64_t(l.cores));
  l.core_job = off;
  off = align_up(off + sizeof(int32_t) * uint64_t(l.cores));
  l.hheap = off;
  off = align_up(off + sizeof(int32_t) * uint64_t(l.host_heap));
  l.hheap_pos = off;
  off = align_up(off + sizeof(int32_t) * uint64_t(l.host_heap));
  l.xheap = off;
  off = align_up(off + sizeof(RKey) * uint64_t(l.handoffs));
  l.lo_tree = off;
  off = align_up(off + sizeof(int32_t) * uint64_t(l.lo_nodes));
  l.lo_key = off;
  off = align_up(off + sizeof(int32_t) * uint64_t(l.lo_keys));
  l.cache_key = off;
  off = align_up(off + sizeof(int32_t) * uint64_t(l.cache_entries));
  l.cache_prev = off;
  off = align_up(off + sizeof(int32_t) * uint64_t(l.cache_entries));
  l.cache_next = off;
  off = align_up(off + sizeof(int32_t) * uint64_t(l.cache_entries));
  l.cache_ref = off;
  off = align_up(off + sizeof(int32_t) * uint64_t(l.cache_entries));
  l.cache_tab = off;
  off = align_up(off + sizeof(int32_t) * uint64_t(l.cache_slots));
  l.cpu_key = off;
  off = align_up(off + sizeof(int32_t) * uint64_t(l.cpu_entries));
  l.cpu_prev = off;
  off = align_up(off + sizeof(int32_t) * uint64_t(l.cpu_entries));
  l.cpu_next = off;
  off = align_up(off + sizeof(int32_t) * uint64_t(l.cpu_entries));
  l.cpu_tab = off;
  off = align_up(off + sizeof(int32_t) * uint64_t(l.cpu_slots));
  l.rem_key = off;
  off = align_up(off + sizeof(int32_t) * uint64_t(l.rem_entries));
  l.rem_prev = off;
  off = align_up(off + sizeof(int32_t) * uint64_t(l.rem_entries));
  l.rem_next = off;
  off = align_up(off + sizeof(int32_t) * uint64_t(l.rem_entries));
  l.rem_tab = off;
  off = align_up(off + sizeof(int32_t) * uint64_t(l.rem_slots));
  l.turn_state = off;
  off = align_up(off + sizeof(int32_t) * uint64_t(l.turn_rows));
  l.held = off;
  off = align_up(off + sizeof(RKey) * uint64_t(l.held_slots));
  l.total = off;
  return l;
}

// Every count the core indexes with int32 fits one (a pool's queue capacity included).
FLEETSIM_HD inline bool layout_fits(const SimParams& p, const WorkspaceLayout& l) {
  const int64_t lim = 2147483647;
  for (int32_t i = 0; i < p.n_pools; ++i) {
    const PoolParams& P = p.pools[i];
    if (int64_t(P.queue_limit) + (P.router == Router::central_queue ? P.max_replicas : 1) * int64_t(pool_slots(P)) >
        lim)
      return false;
  }
  return l.n_replicas <= lim && l.nq <= lim && l.req_cap <= lim && l.client_slots <= lim && l.slots <= lim &&
         l.residues <= lim && l.qbuf_len + l.host_qlen <= lim && l.cores <= lim && l.cache_entries <= lim &&
         l.cache_slots <= lim && l.cpu_entries <= lim && l.cpu_slots <= lim && l.rem_entries <= lim &&
         l.rem_slots <= lim && l.lo_nodes <= lim && l.held_slots <= lim;
}

// Point s at the workspace at `base` (its arrays only; nothing is reset). A copy of a workspace
// with a copy of its Sim, pointed at the copy, continues the same simulation (backend/windows.cpp).
FLEETSIM_HD inline void sim_point(Sim& s, const SimParams& p, uint8_t* base) {
  const WorkspaceLayout l = workspace_layout(p);
  s.req = reinterpret_cast<Request*>(base + l.req);
  s.req_free = reinterpret_cast<int32_t*>(base + l.req_free);
  s.qbuf = reinterpret_cast<int32_t*>(base + l.qbuf);
  s.q = reinterpret_cast<Queue*>(base + l.q);
  s.rep = reinterpret_cast<Replica*>(base + l.rep);
  s.seq = reinterpret_cast<Seq*>(base + l.seq);
  s.fheap = reinterpret_cast<FKey*>(base + l.fheap);
  s.fpos = reinterpret_cast<int32_t*>(base + l.fpos);
  s.rescnt = reinterpret_cast<int32_t*>(base + l.rescnt);
  s.rheap = reinterpret_cast<RKey*>(base + l.rheap);
  s.rheap_pos = reinterpret_cast<int32_t*>(base + l.rheap_pos);
  s.cq_note = reinterpret_cast<CalNote*>(base + l.cq_note);
  s.cq_bucket = reinterpret_cast<int32_t*>(base + l.cq_bucket);
  s.cq_pend = reinterpret_cast<int32_t*>(base + l.cq_pend);
  s.core_free = reinterpret_cast<double*>(base + l.core_free);
  s.core_start = reinterpret_cast<double*>(base + l.core_start);
  s.core_job = reinterpret_cast<int32_t*>(base + l.core_job);
  s.hheap = reinterpret_cast<int32_t*>(base + l.hheap);
  s.hheap_pos = reinterpret_cast<int32_t*>(base + l.hheap_pos);
  s.xheap = reinterpret_cast<RKey*>(base + l.xheap);
  s.lo_tree = reinterpret_cast<int32_t*>(base + l.lo_tree);
  s.lo_key = reinterpret_cast<int32_t*>(base + l.lo_key);
  s.cache_key = reinterpret_cast<int32_t*>(base + l.cache_key);
  s.cache_prev = reinterpret_cast<int32_t*>(base + l.cache_prev);
  s.cache_next = reinterpret_cast<int32_t*>(base + l.cache_next);
  s.cache_ref = reinterpret_cast<int32_t*>(base + l.cache_ref);
  s.cache_tab = reinterpret_cast<int32_t*>(base + l.cache_tab);
  s.cpu_key = reinterpret_cast<int32_t*>(base + l.cpu_key);
  s.cpu_prev = reinterpret_cast<int32_t*>(base + l.cpu_prev);
  s.cpu_next = reinterpret_cast<int32_t*>(base + l.cpu_next);
  s.cpu_tab = reinterpret_cast<int32_t*>(base + l.cpu_tab);
  s.rem_key = reinterpret_cast<int32_t*>(base + l.rem_key);
  s.rem_prev = reinterpret_cast<int32_t*>(base + l.rem_prev);
  s.rem_next = reinterpret_cast<int32_t*>(base + l.rem_next);
  s.rem_tab = reinterpret_cast<int32_t*>(base + l.rem_tab);
  s.pool = reinterpret_cast<PoolState*>(base + l.pools);
  s.client_heap = reinterpret_cast<double*>(base + l.clients);
  s.client_user = reinterpret_cast<int32_t*>(base + l.client_user);
  s.session_user = reinterpret_cast<SessionUser*>(base + l.session_user);
  s.turn_state = reinterpret_cast<int32_t*>(base + l.turn_state);
  s.held = reinterpret_cast<RKey*>(base + l.held);
}

// Bind the workspace at `base` (workspace_layout(p).total bytes) and reset it.
FLEETSIM_HD inline Sim sim_bind(const SimParams& p, uint32_t replication, uint8_t* base, Tally* tally) {
  const WorkspaceLayout l = workspace_layout(p);
  Sim s;
  s.p = &p;
  s.tally = tally;
  s.rng = make_rng(p.seed, replication);
  sim_point(s, p, base);
  s.host_on = l.cores > 0 ? 1 : 0;
  for (int64_t i = 0; i < l.cores; ++i) s.core_job[i] = kNone;
  s.n_replicas = int32_t(l.n_replicas);
  s.nq = int32_t(l.nq);
  s.W0 = window_from_s(p);
  s.W1 = window_to_s(p);
  s.t_clock = 0.0;
  s.events = 0;
  for (int32_t i = 0; i < kMaxSettleTerms; ++i) s.settle_seen[i] = 0;
  s.settled = kNone;
  s.settled_t = 0.0;
  s.xheap_n = 0;
  s.handoff_on = l.handoffs > 0 ? 1 : 0;
  for (int32_t c = 0; c < kMaxClasses; ++c) {
    s.in_system[c] = 0;
    s.waiting[c] = 0;
  }
  // slots are handed out as requests arrive (handle_arrival), so a run touches only as many as it has in flight
  s.req_free_n = 0;
  s.req_hwm = 0;
  s.req_cap = int32_t(l.req_cap);
  int32_t r = 0, qi = 0, qbase = 0;
  int32_t hqbase = int32_t(l.qbuf_len);  // host FIFOs follow the device queues in qbuf
  int64_t slot_base = 0, res_base = 0, core_base = 0, cache_base = 0, tab_base = 0, cpu_base = 0, cpu_tab_base = 0;
  int32_t rem_base = 0, rem_tab_base = 0;
  for (int32_t pi = 0; pi < p.n_pools; ++pi) {
    const PoolParams& P = p.pools[pi];
    PoolState& ps = s.pool[pi];
    ps.first_replica = r;
    ps.n_replicas = P.max_replicas;
    ps.first_queue = qi;
    ps.n_queues = pool_queues(P);
    ps.rr_next = 0;
    ps.n_prov = ps.n_ready = ps.n_starting = ps.n_draining = ps.n_busy = 0;
    ps.n_busy_serving = ps.n_busy_ready = ps.cq_pend_n = ps.n_dev_used = 0;
    // an empty note calendar; its first width, a millisecond, is refitted once notes spread
    ps.cq_n = ps.cq_finds = ps.cq_work = 0;
    ps.cq_mask = P.router == Router::central_queue ? cal_bucket_count(P.max_replicas) - 1 : 0;
    ps.cq_w = 1e-3;
    ps.cq_inv_w = 1e3;
    ps.cq_day = 0;
    for (int32_t b = 0; b <= ps.cq_mask; ++b) cal_buckets(s, ps)[b] = kNone;
    ps.t_clock = 0.0;
    ps.busy_acc = ps.arrivals_since = 0.0;
    ps.next_eval = P.autoscale.enabled ? P.autoscale.interval_s : kInf;
    ps.last_eval = 0.0;
    ps.last_scale = -kInf;
    ps.up_q.n = ps.up_q.head = ps.down_q.n = ps.down_q.head = 0;
    for (int32_t k = 0; k < kTtftSlices; ++k) {
      ps.ttft_slice[k] = -1;
      for (int32_t b = 0; b < kTtftBuckets; ++b) ps.ttft_count[k][b] = 0;
    }
    ps.starts = ps.start_head = 0;
    ps.change_n = ps.change_head = 0;
    ps.next_fail = kInf;
    ps.fail_draws = 0;
    ps.shelf = P.spares;
    ps.n_repair = 0;
    ps.nodes_up = ps.nodes_pinned_empty = ps.nodes_unneeded = 0;
    ps.next_node_release = kInf;
    ps.n_fb = ps.n_cpu_busy = ps.n_hot_busy = 0;
    ps.host_jobs = ps.host_busy = ps.host_busy_draining = 0;
    ps.in_transit = 0;
    ps.host_t = 0.0;
    ps.host_busy_acc = 0.0;
    // the shared store starts empty, and outlives every replica
    ps.rem_base = rem_base;
    ps.rem_tab_base = rem_tab_base;
    for (int32_t i = 0; i < P.remote_table; ++i) s.rem_tab[rem_tab_base + i] = kNone;
    for (int32_t e = 0; e < P.remote_entries; ++e) s.rem_next[rem_base + e] = e + 1 < P.remote_entries ? e + 1 : kNone;
    ps.rem_free = P.remote_entries > 0 ? 0 : kNone;
    ps.rem_head = ps.rem_tail = kNone;
    ps.rem_n = 0;
    rem_base += P.remote_entries;
    rem_tab_base += P.remote_table;
    const int32_t qcap = pool_queue_cap(P);
    for (int32_t i = 0; i < ps.n_queues; ++i, ++qi) {
      s.q[qi].base = qbase;
      s.q[qi].cap = qcap;
      s.q[qi].head = 0;
      s.q[qi].size = 0;
      s.q[qi].owner = P.lo_index ? r + i : kNone;  // a replica's own queue (r: the pool's first)
      qbase += qcap;
    }
    const int32_t S = pool_slots(P);
    for (int32_t k = 0; k < P.max_replicas; ++k, ++r) {
      Replica& R = s.rep[r];
      R.t_next = kInf;
      R.busy = 0;
      R.state = kOff;
      R.starts = 0;
      R.node_until = -1.0;
      R.node_prov_at = R.node_up_at = -kInf;
      R.node_wait_prov_s = R.node_wait_pull_s = 0.0;
      R.pool = pi;
      R.queue = ps.first_queue + (P.router == Router::central_queue ? 0 : k);
      R.S = S;
      R.bs = P.kv_block_tokens;
      R.slot_base = slot_base;
      R.res_base = res_base;
      slot_base += S;
      res_base += P.kv_block_tokens;
      R.step = 0;
      R.n_running = R.n_decode = 0;
      for (int32_t c = 0; c < kMaxClasses; ++c) {
        R.n_decode_class[c] = 0;
        R.run_class_share[c] = 0.0;
        R.run_class_in_share[c] = 0.0;
      }
      R.run_head = R.run_tail = R.pf_head = R.pf_tail = kNone;
      R.free_head = 0;
      for (int32_t i = 0; i < S; ++i) {
        Seq& x = s.seq[R.slot_base + i];
        x.next = i + 1 < S ? i + 1 : kNone;
        x.decoding = 0;
        x.chunk = 0;
        x.ctx_extra = 0;
      }
      R.heap_n = 0;
      R.A = 0;
      R.free_blocks = P.kv_total_blocks;
      R.pinned_blocks = 0;
      R.cache_base = cache_base;
      R.tab_base = tab_base;
      cache_base += P.cache_entries;
      tab_base += P.cache_table;
      R.cpu_base = cpu_base;
      R.cpu_tab_base = cpu_tab_base;
      cpu_base += P.cpu_entries;
      cpu_tab_base += P.cpu_table;
      R.cache_blocks = 0;
      cache_clear(s, r);
      R.prefix_ready = 0;
      for (int32_t c = 0; c < kMaxClasses; ++c) R.prefix_users[c] = 0;
      R.run_t0 = 0.0;
      R.run_k = 0;
      R.run_prefill = 0;
      R.wake_at = kInf;
      R.cq_pending = 0;
      s.cq_note[r].next = s.cq_note[r].prev = kNone;
      s.cq_note[r].day = 0;
      R.wake_k = 0;
      R.device_at = 0.0;
      R.start_asked = R.start_from = 0.0;
      R.start_no = R.start_new_node = 0;
      R.mps_h = R.mps_g = R.mps_x = R.mps_y = 0.0;
      R.batch_n = 0;
      R.batch_t_first = 0.0;
      // slot k of n falls back when floor((k + 1) share) > floor(k share): floor(n share) of the
      // first n slots, evenly spread (a share written in decimal, 0.29, is a hair under it in
      // binary: 100 x 0.29 is 28.999999999999996, which is 29 slots)
      R.fb_slot = P.fallback_share > 0.0 &&
                  int64_t(double(k + 1) * P.fallback_share + 1e-9) > int64_t(double(k) * P.fallback_share + 1e-9);
      R.run_cpu = R.run_hot = 0;
      R.heat = R.heat_t = 0.0;
      R.hq.base = hqbase;
      R.hq.cap = P.host.cores > 0 ? qcap : 0;
      R.hq.head = R.hq.size = 0;
      R.hq.owner = kNone;  // its jobs count through host_n
      hqbase += R.hq.cap;
      R.host_n = R.host_busy = 0;
      R.host_base = core_base;
      core_base += P.host.cores;
      R.host_next = kInf;
      if (s.host_on) {
        s.hheap[r] = r;
        s.hheap_pos[r] = r;
      }
      for (int32_t i = 0; i < P.kv_block_tokens; ++i) s.rescnt[R.res_base + i] = 0;
      s.rheap[r].t = kInf;
      s.rheap[r].r = r;
      s.rheap_pos[r] = r;
    }
  }
  // least-outstanding trees: every replica is off, so keyed out; the leaves are the replicas
  int32_t lo_base = 0;
  for (int32_t pi = 0; pi < p.n_pools; ++pi) {
    PoolState& ps = s.pool[pi];
    ps.lo_base = lo_base;
    ps.lo_leaves = p.pools[pi].lo_index ? lo_leaves(p.pools[pi].max_replicas) : 0;
    if (ps.lo_leaves == 0) continue;
    int32_t* tree = s.lo_tree + lo_base;
    for (int32_t k = 0; k < ps.n_replicas; ++k) s.lo_key[ps.first_replica + k] = kLoOut;
    for (int32_t k = 0; k < ps.lo_leaves; ++k)
      tree[ps.lo_leaves + k] = k < ps.n_replicas ? ps.first_replica + k : kNone;
    for (int32_t i = ps.lo_leaves - 1; i >= 1; --i) tree[i] = tree[2 * i];
    tree[0] = kNone;
    lo_base += 2 * ps.lo_leaves;
  }
  s.prioritized = 0;
  s.goodput_classes = 0;
  for (int32_t c = 0; c < p.n_classes; ++c) {
    const ClassParams& C = p.classes[c];
    if (C.good_ttft_s < kInf || C.good_tpot_s < kInf || C.good_e2e_s < kInf) s.goodput_classes |= 1 << c;
    s.arr[c].candidate = 0;
    s.arr[c].index = 0;
    s.arr[c].next_t = 0.0;
    s.class_priority[c] = p.classes[c].priority;
    if (p.classes[c].priority != p.classes[0].priority) s.prioritized = 1;
  }
  // closed-loop users all send their first request at start_s
  s.closed_classes = 0;
  s.session_classes = 0;
  int32_t cb = 0;
  for (int32_t c = 0; c < kMaxClasses; ++c) {
    s.client_base[c] = cb;
    s.client_n[c] = 0;
    s.client_stop[c] = kInf;
    s.client_t[c] = 0.0;
    s.client_thinks[c] = 0;
    s.sessions_started[c] = 0;
    if (c >= p.n_classes || p.classes[c].arrivals.kind != ArrivalKind::concurrency) continue;
    const ArrivalParams& a = p.classes[c].arrivals;
    s.closed_classes |= 1 << c;
    s.client_n[c] = a.clients;
    s.client_stop[c] = min_of(a.stop_s, p.duration_s);
    // ascending, so already a min-heap
    for (int32_t i = 0; i < a.clients; ++i)
      s.client_heap[cb + i] = a.start_s + a.ramp_s * double(i) / double(a.clients);
    if (p.classes[c].sessions) {
      s.session_classes |= 1 << c;
      for (int32_t i = 0; i < a.clients; ++i) {
        s.client_user[cb + i] = i;
        SessionUser& u = s.session_user[cb + i];
        u.t_start = u.t_last = 0.0;
        u.history = u.held = 0;
        u.turn = 0;
        u.turns = 0;  // drawn when its first session starts
        u.replica = kNone;
        u.epoch = 0;
      }
    }
    cb += a.clients;
  }
  // sessions from traces: no row has ended or is held
  s.trace_session_classes = 0;
  int64_t tb = 0;
  int32_t hb = 0;
  for (int32_t c = 0; c < kMaxClasses; ++c) {
    s.turn_base[c] = tb;
    s.held_base[c] = hb;
    s.held_n[c] = 0;
    if (c >= p.n_classes || !p.classes[c].arrivals.trace_parent) continue;
    s.trace_session_classes |= 1 << c;
    for (int64_t i = 0; i < p.classes[c].arrivals.trace_n; ++i) s.turn_state[tb + i] = 0;
    tb += p.classes[c].arrivals.trace_n;
    hb += int32_t(p.classes[c].arrivals.trace_follow_ups);
  }
  return s;
}

}  // namespace fleetsim
