// The discrete-event simulation of one serving pool: the single simulation core, compiled for
// the host and (unchanged) for the device. Plain structs over a flat workspace sized from the
// parameters before the run; no allocation, exceptions, virtual calls or containers in here.
//
// Events are request arrivals and replica "run ends". A run is either one step that carries
// prefill work, or a stretch of decode-only steps during which the batch does not change; its
// length and duration are computed in closed form (steptime.hpp), so the cost of a simulation
// scales with requests and batch changes, not with generated tokens.
#pragma once
#include "params.hpp"
#include "philox.hpp"
#include "steptime.hpp"
#include "tally.hpp"
#include "workload.hpp"

namespace fleetsim {

constexpr int32_t kNone = -1;

struct Request {
  double t_arrive;
  double t_first;  // first output token (or result, for non-generative models); < 0 if none yet
  double t_admit;  // first admission into a batch; < 0 if none yet
  int32_t prompt;
  int32_t output;
  int32_t generated;  // output tokens emitted before the current prefill of this request
  int16_t in_window;
  int16_t cls;        // request class
  int16_t retries;    // times its replica was lost under it
  int16_t has_prefix; // starts with its class's shared prefix
};

// A running sequence (a batch slot of a replica).
struct Seq {
  int32_t req;
  int32_t prev, next;        // admission order; `next` also links the free slots
  int32_t pf_prev, pf_next;  // sequences still in prefill, admission order
  int32_t heap_pos;          // position in the finish heap while decoding
  int32_t decoding;
  int32_t residue;           // decode steps s with s % block == residue need a new KV block
  int32_t prefill_total;     // tokens this prefill computes (prompt, plus output so far after preemption)
  int32_t prefill_done;
  int32_t chunk;             // prefill tokens scheduled in the step in flight
  int32_t out_left;          // output tokens still to emit, counting the one the prefill emits
  int64_t blocks;            // KV blocks held while prefilling (the whole prefill)
  int64_t s0;                // first decode step
  int64_t L0;                // KV tokens of its own before step s0
  int32_t ctx_extra;         // shared-prefix tokens it attends to but does not hold
  int64_t finish;            // last decode step
};

struct Queue {
  int32_t base, cap, head, size;
};

enum ReplicaState : int32_t { kOff = 0, kStarting = 1, kReady = 2, kDraining = 3 };

struct Replica {
  double t_next;  // end of the run in flight, a static-batching timer, the end of a cold start, or kInf
  int32_t busy;   // a run (possibly of zero steps: a wake-up) is in flight
  int32_t state;  // ReplicaState
  int32_t starts; // cold starts so far (keys its random draws)
  int32_t pool;
  int32_t queue;
  int32_t S;          // batch slots
  int32_t bs;         // KV block tokens
  int64_t slot_base;  // first slot in the seq and finish-heap arrays
  int64_t res_base;   // first counter in the residue array
  int64_t step;   // index of the next step to start
  int32_t n_running, n_decode;
  int32_t n_decode_class[kMaxClasses];
  int32_t run_head, run_tail, pf_head, pf_tail, free_head;
  int32_t heap_n;
  int64_t A;  // sum over decoding sequences of (L0 + ctx_extra - s0): context tokens at step s are A + n s
  int64_t free_blocks;
  int64_t pinned_blocks;  // held by cached shared prefixes
  int32_t prefix_ready;   // bit c: class c's prefix is cached here
  int32_t prefix_users[kMaxClasses];  // running sequences attending to class c's cached prefix
  // run in flight
  double run_t0;
  int64_t run_k;
  int32_t run_prefill;
  Line run_line;
  double run_fa, run_fb, run_ba, run_bb;  // FLOPs and bytes of step j: a + b j
  double run_in_share;                    // fraction of the run's time attributed to input tokens
  double run_seqs;                        // sequences in each step of the run
  double run_blocks0, run_blocks_rate;    // allocated KV blocks at j = 0, and growth per step
  double run_class_share[kMaxClasses];    // share of the run's time spent on each class
  // static batching
  int32_t batch_n;
  double batch_t_first;
};

// The flat workspace of one simulation.
constexpr int32_t kScaleHistory = 64;
constexpr int32_t kTtftSamples = 128;

// Per-pool state: replica counts for the time integrals, and the autoscaler's memory.
struct PoolState {
  int32_t first_replica, n_replicas;  // replica slots [first, first + n)
  int32_t first_queue, n_queues;
  int32_t rr_next;
  int32_t n_prov, n_ready, n_starting, n_draining, n_busy;  // provisioned = starting + ready + draining
  double t_clock;                                            // integrals are up to here
  double busy_acc;                                           // busy replica-seconds since the last evaluation
  double arrivals_since;                                     // arrivals since the last evaluation
  double next_eval, last_eval, last_scale;
  int32_t hist_n, hist_head;
  double hist_t[kScaleHistory];
  int32_t hist_d[kScaleHistory];
  int32_t ttft_n, ttft_head;
  double ttft_t[kTtftSamples], ttft_v[kTtftSamples];
  int32_t starts;  // replicas started so far
  int32_t start_head;
  double next_fail;    // the next spot reclaim or hardware failure among the pool's replicas
  int64_t fail_draws;  // random draws for failures so far
  double start_t[kScaleHistory];  // times of the latest starts (for the per-hour cap)
};

struct Sim {
  const SimParams* p;
  Tally* tally;
  PoolState* pool;
  Rng rng;
  Request* req;
  int32_t* req_free;
  int32_t req_free_n;
  int32_t* qbuf;
  Queue* q;
  int32_t nq;
  Replica* rep;
  Seq* seq;
  int32_t* fheap;
  int32_t* rescnt;
  int32_t* rheap;
  int32_t* rheap_pos;
  int32_t n_replicas;
  double W0, W1;
  double t_clock;
  int64_t in_system[kMaxClasses], waiting[kMaxClasses];
  ArrivalCursor arr[kMaxClasses];
  double next_arrival[kMaxClasses];
  int32_t class_priority[kMaxClasses];
  int32_t prioritized;  // classes differ in priority
};

// ---------------------------------------------------------------- workspace layout

struct WorkspaceLayout {
  uint64_t pools, req, req_free, qbuf, q, rep, seq, fheap, rescnt, rheap, rheap_pos, total;
  int32_t n_replicas, nq, req_cap;
  int64_t slots, residues, qbuf_len;
};

FLEETSIM_HD inline uint64_t align_up(uint64_t x) { return (x + 15) & ~uint64_t(15); }

FLEETSIM_HD FLEETSIM_FORCEINLINE int32_t pool_slots(const PoolParams& P) {
  return P.batching == Batching::continuous ? P.max_num_seqs : P.max_batch;
}
FLEETSIM_HD FLEETSIM_FORCEINLINE int32_t pool_queues(const PoolParams& P) {
  return P.router == Router::central_queue ? 1 : P.max_replicas;
}
// A queue holds at most queue_limit fresh requests plus, per replica it feeds, as many preempted
// ones as that replica has slots (running + preempted-waiting <= slots, see docs/model.md).
FLEETSIM_HD FLEETSIM_FORCEINLINE int32_t pool_queue_cap(const PoolParams& P) {
  return P.queue_limit + (P.router == Router::central_queue ? P.max_replicas : 1) * pool_slots(P);
}

FLEETSIM_HD inline WorkspaceLayout workspace_layout(const SimParams& p) {
  WorkspaceLayout l;
  l.n_replicas = 0;
  l.nq = 0;
  l.req_cap = 0;
  l.slots = l.residues = l.qbuf_len = 0;
  for (int32_t i = 0; i < p.n_pools; ++i) {
    const PoolParams& P = p.pools[i];
    const int32_t S = pool_slots(P), nq = pool_queues(P);
    l.n_replicas += P.max_replicas;
    l.nq += nq;
    l.req_cap += nq * P.queue_limit + P.max_replicas * S;
    l.slots += int64_t(P.max_replicas) * S;
    l.residues += int64_t(P.max_replicas) * P.kv_block_tokens;
    l.qbuf_len += int64_t(nq) * pool_queue_cap(P);
  }
  uint64_t off = 0;
  l.pools = off;     off = align_up(off + sizeof(PoolState) * uint64_t(p.n_pools));
  l.req = off;       off = align_up(off + sizeof(Request) * uint64_t(l.req_cap));
  l.req_free = off;  off = align_up(off + sizeof(int32_t) * uint64_t(l.req_cap));
  l.qbuf = off;      off = align_up(off + sizeof(int32_t) * uint64_t(l.qbuf_len));
  l.q = off;         off = align_up(off + sizeof(Queue) * uint64_t(l.nq));
  l.rep = off;       off = align_up(off + sizeof(Replica) * uint64_t(l.n_replicas));
  l.seq = off;       off = align_up(off + sizeof(Seq) * uint64_t(l.slots));
  l.fheap = off;     off = align_up(off + sizeof(int32_t) * uint64_t(l.slots));
  l.rescnt = off;    off = align_up(off + sizeof(int32_t) * uint64_t(l.residues));
  l.rheap = off;     off = align_up(off + sizeof(int32_t) * uint64_t(l.n_replicas));
  l.rheap_pos = off; off = align_up(off + sizeof(int32_t) * uint64_t(l.n_replicas));
  l.total = off;
  return l;
}

// ---------------------------------------------------------------- small containers

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
}
FLEETSIM_HD FLEETSIM_FORCEINLINE void q_push_front(Sim& s, Queue& q, int32_t v) {
  q.head = q.head == 0 ? q.cap - 1 : q.head - 1;
  s.qbuf[q.base + q.head] = v;
  q.size++;
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

FLEETSIM_HD FLEETSIM_FORCEINLINE int32_t q_pop_front(Sim& s, Queue& q) {
  const int32_t v = s.qbuf[q.base + q.head];
  q.head = q.head + 1 == q.cap ? 0 : q.head + 1;
  q.size--;
  return v;
}

// Replica event heap, ordered by (t_next, index) so that ties resolve the same everywhere.
FLEETSIM_HD FLEETSIM_FORCEINLINE bool rh_less(const Sim& s, int32_t a, int32_t b) {
  const double ta = s.rep[a].t_next, tb = s.rep[b].t_next;
  return ta < tb || (ta == tb && a < b);
}
FLEETSIM_HD inline void rh_update(Sim& s, int32_t r) {
  int32_t i = s.rheap_pos[r];
  const int32_t n = s.n_replicas;
  while (i > 0) {  // sift up
    const int32_t parent = (i - 1) / 2;
    if (!rh_less(s, s.rheap[i], s.rheap[parent])) break;
    const int32_t a = s.rheap[i], b = s.rheap[parent];
    s.rheap[i] = b; s.rheap_pos[b] = i;
    s.rheap[parent] = a; s.rheap_pos[a] = parent;
    i = parent;
  }
  for (;;) {  // sift down
    const int32_t l = 2 * i + 1, rr = l + 1;
    int32_t m = i;
    if (l < n && rh_less(s, s.rheap[l], s.rheap[m])) m = l;
    if (rr < n && rh_less(s, s.rheap[rr], s.rheap[m])) m = rr;
    if (m == i) break;
    const int32_t a = s.rheap[i], b = s.rheap[m];
    s.rheap[i] = b; s.rheap_pos[b] = i;
    s.rheap[m] = a; s.rheap_pos[a] = m;
    i = m;
  }
}
FLEETSIM_HD FLEETSIM_FORCEINLINE void set_next(Sim& s, int32_t r, double t) {
  s.rep[r].t_next = t;
  rh_update(s, r);
}

FLEETSIM_HD FLEETSIM_FORCEINLINE const PoolParams& pool_of(const Sim& s, int32_t r) { return s.p->pools[s.rep[r].pool]; }

// Per-replica finish heap of decoding slots, ordered by (finish step, slot).
FLEETSIM_HD FLEETSIM_FORCEINLINE Seq& slot(Sim& s, int32_t r, int32_t i) { return s.seq[s.rep[r].slot_base + i]; }
FLEETSIM_HD FLEETSIM_FORCEINLINE int32_t* fheap_of(Sim& s, int32_t r) { return s.fheap + s.rep[r].slot_base; }
FLEETSIM_HD FLEETSIM_FORCEINLINE int32_t* rescnt_of(Sim& s, int32_t r) { return s.rescnt + s.rep[r].res_base; }
FLEETSIM_HD FLEETSIM_FORCEINLINE bool fh_less(Sim& s, int32_t r, int32_t a, int32_t b) {
  const int64_t fa = slot(s, r, a).finish, fb = slot(s, r, b).finish;
  return fa < fb || (fa == fb && a < b);
}
FLEETSIM_HD FLEETSIM_FORCEINLINE void fh_swap(Sim& s, int32_t r, int32_t* h, int32_t i, int32_t j) {
  const int32_t a = h[i], b = h[j];
  h[i] = b; slot(s, r, b).heap_pos = i;
  h[j] = a; slot(s, r, a).heap_pos = j;
}
FLEETSIM_HD inline void fh_fix(Sim& s, int32_t r, int32_t i) {
  int32_t* h = fheap_of(s, r);
  const int32_t n = s.rep[r].heap_n;
  while (i > 0 && fh_less(s, r, h[i], h[(i - 1) / 2])) {
    fh_swap(s, r, h, i, (i - 1) / 2);
    i = (i - 1) / 2;
  }
  for (;;) {
    const int32_t l = 2 * i + 1, rr = l + 1;
    int32_t m = i;
    if (l < n && fh_less(s, r, h[l], h[m])) m = l;
    if (rr < n && fh_less(s, r, h[rr], h[m])) m = rr;
    if (m == i) break;
    fh_swap(s, r, h, i, m);
    i = m;
  }
}
FLEETSIM_HD inline void fh_push(Sim& s, int32_t r, int32_t sl) {
  int32_t* h = fheap_of(s, r);
  const int32_t i = s.rep[r].heap_n++;
  h[i] = sl;
  slot(s, r, sl).heap_pos = i;
  fh_fix(s, r, i);
}
FLEETSIM_HD inline void fh_remove(Sim& s, int32_t r, int32_t sl) {
  int32_t* h = fheap_of(s, r);
  const int32_t i = slot(s, r, sl).heap_pos;
  const int32_t last = --s.rep[r].heap_n;
  if (i != last) {
    h[i] = h[last];
    slot(s, r, h[i]).heap_pos = i;
    fh_fix(s, r, i);
  }
  slot(s, r, sl).heap_pos = kNone;
}

// ---------------------------------------------------------------- accounting

FLEETSIM_HD FLEETSIM_FORCEINLINE int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// 1 for an event inside the measurement window, else 0 (event counts are the window's, like rates).
FLEETSIM_HD FLEETSIM_FORCEINLINE double in_window(const Sim& s, double t) { return t >= s.W0 && t < s.W1 ? 1.0 : 0.0; }

// Integrate the request counts up to time t (clipped to the window).
FLEETSIM_HD inline void advance_clock(Sim& s, double t) {
  const double a = max_of(s.t_clock, s.W0), b = min_of(t, s.W1);
  if (b > a) {
    for (int32_t c = 0; c < s.p->n_classes; ++c) {
      s.tally->classes[c].in_system_s += double(s.in_system[c]) * (b - a);
      s.tally->classes[c].queue_len_s += double(s.waiting[c]) * (b - a);
    }
  }
  if (t > s.t_clock) s.t_clock = t;
}

// Add the in-flight run of replica r, k steps over [t0, t1], to the tallies (pro rata inside
// the window for a run that straddles its edges).
FLEETSIM_HD inline void account_run(Sim& s, const Replica& R, int64_t k, double t0, double t1) {
  if (k <= 0 || !(t1 > t0)) return;
  const double a = max_of(t0, s.W0), b = min_of(t1, s.W1);
  if (!(b > a)) return;
  const double overlap = b - a;
  const double f = overlap / (t1 - t0);
  PoolTally& T = s.tally->pools[R.pool];
  T.busy_s += overlap;
  T.input_busy_s += overlap * R.run_in_share;
  T.flops += f * arith_sum(R.run_fa, R.run_fb, 0, k);
  T.bytes += f * arith_sum(R.run_ba, R.run_bb, 0, k);
  T.seq_steps += f * double(k) * R.run_seqs;
  T.steps += f * double(k);
  T.kv_block_s += overlap * (R.run_blocks0 + 0.5 * R.run_blocks_rate * double(k));
  for (int32_t c = 0; c < s.p->n_classes; ++c) s.tally->classes[c].busy_s += overlap * R.run_class_share[c];
}

FLEETSIM_HD inline void record_done(Sim& s, int32_t ri, double t) {
  Request& q = s.req[ri];
  advance_clock(s, t);
  s.in_system[q.cls]--;
  {
    PoolState& ps = s.pool[s.p->classes[q.cls].pool];
    ps.ttft_t[ps.ttft_head] = t;
    ps.ttft_v[ps.ttft_head] = (q.t_first < 0.0 ? t : q.t_first) - q.t_arrive;
    ps.ttft_head = ps.ttft_head + 1 == kTtftSamples ? 0 : ps.ttft_head + 1;
    if (ps.ttft_n < kTtftSamples) ps.ttft_n++;
  }
  if (q.in_window) {
    ClassTally& T = s.tally->classes[q.cls];
    T.completed++;
    T.input_tokens += q.prompt;
    T.output_tokens += q.output;
    if (q.t_first < 0.0) q.t_first = t;
    hist_add(T.e2e, t - q.t_arrive);
    hist_add(T.ttft, q.t_first - q.t_arrive);
    hist_add(T.queue_wait, q.t_admit - q.t_arrive);
    if (q.output >= 2) hist_add(T.tpot, (t - q.t_first) / double(q.output - 1));
  }
  s.req_free[s.req_free_n++] = ri;
}

// Integrate the pool's replica counts up to time t: billed time, cold starts, idle time split
// into chosen headroom and waste (clipped to the window), and busy time for the autoscaler.
FLEETSIM_HD inline void pool_advance(Sim& s, int32_t pi, double t) {
  PoolState& ps = s.pool[pi];
  const double t0 = ps.t_clock;
  if (!(t > t0)) return;
  ps.busy_acc += double(ps.n_busy) * (t - t0);
  const double a = max_of(t0, s.W0), b = min_of(t, s.W1);
  if (b > a) {
    const double dt = b - a;
    PoolTally& T = s.tally->pools[pi];
    T.replica_s += double(ps.n_prov) * dt;
    T.excess_s += double(max_of(0, ps.n_prov - s.p->pools[pi].committed_replicas)) * dt;
    T.cold_s += double(ps.n_starting) * dt;
    const int32_t idle = ps.n_ready + ps.n_draining - ps.n_busy;
    const int32_t head = min_of(idle, s.p->pools[pi].headroom_replicas);
    T.headroom_s += double(head) * dt;
    T.waste_s += double(idle - head) * dt;
  }
  ps.t_clock = t;
}

FLEETSIM_HD inline void set_busy(Sim& s, int32_t r, int32_t busy, double t) {
  Replica& R = s.rep[r];
  if (R.busy == busy) return;
  pool_advance(s, R.pool, t);
  s.pool[R.pool].n_busy += busy ? 1 : -1;
  R.busy = busy;
}

FLEETSIM_HD inline void set_state(Sim& s, int32_t r, int32_t state, double t) {
  Replica& R = s.rep[r];
  if (R.state == state) return;
  pool_advance(s, R.pool, t);
  PoolState& ps = s.pool[R.pool];
  auto count = [&](int32_t st, int32_t d) {
    if (st == kReady) ps.n_ready += d;
    if (st == kStarting) ps.n_starting += d;
    if (st == kDraining) ps.n_draining += d;
    if (st != kOff) ps.n_prov += d;
  };
  const int32_t before = ps.n_prov;
  count(R.state, -1);
  count(state, +1);
  R.state = state;
  PoolTally& T = s.tally->pools[R.pool];
  if (double(ps.n_prov) > T.max_replicas) T.max_replicas = double(ps.n_prov);
  // failures are a Poisson process per provisioned replica: memoryless, so redraw the pool's next one
  const double rate = s.p->pools[R.pool].interruptions_per_s * double(ps.n_prov);
  if (ps.n_prov != before) {
    if (rate > 0.0) {
      const double u = s.rng.uniform(Stream::lifecycle, uint32_t(16 + R.pool), uint64_t(ps.fail_draws++), 1);
      ps.next_fail = t - dm::log(u) / rate;
    } else {
      ps.next_fail = kInf;
    }
  }
}

// Step time of a step with the given work.
FLEETSIM_HD inline double step_time(const PoolParams& P, double flops, double bytes, double prefill_tokens,
                                    double decode_seqs, double decode_ctx) {
  if (P.perf.kind == PerfKind::roofline)
    return P.perf.overhead_s + max_of(flops / P.perf.flops_per_s, bytes / P.perf.bytes_per_s);
  return P.perf.overhead_s + P.perf.per_prefill_token_s * prefill_tokens + P.perf.per_decode_seq_s * decode_seqs +
         P.perf.per_context_token_s * decode_ctx;
}

// Decode-only run of n sequences whose context before step j is T0 + n j.
FLEETSIM_HD inline void set_decode_run(const PoolParams& P, Replica& R, double n, double T0) {
  const WorkParams& w = P.work;
  R.run_fa = w.matmul_flops_per_token * n + w.attn_flops_per_pair * (T0 + n);
  R.run_fb = w.attn_flops_per_pair * n;
  R.run_ba = w.weight_bytes + w.kv_bytes_per_token * (T0 + n);
  R.run_bb = w.kv_bytes_per_token * n;
  Line l;
  l.o = P.perf.overhead_s;
  if (P.perf.kind == PerfKind::roofline) {
    l.a1 = R.run_fa / P.perf.flops_per_s;
    l.b1 = R.run_fb / P.perf.flops_per_s;
    l.a2 = R.run_ba / P.perf.bytes_per_s;
    l.b2 = R.run_bb / P.perf.bytes_per_s;
  } else {
    l.a1 = P.perf.per_decode_seq_s * n + P.perf.per_context_token_s * (T0 + n);
    l.b1 = P.perf.per_context_token_s * n;
    l.a2 = 0.0;
    l.b2 = 0.0;
  }
  R.run_line = l;
  R.run_in_share = 0.0;
  R.run_seqs = n;
}

// A single step with prefill work: FLOPs and bytes of its prefill and decode parts.
FLEETSIM_HD inline void set_single_step(const PoolParams& P, Replica& R, double ptoks, double ppairs, double pread,
                                        double n, double T0, double seqs) {
  const WorkParams& w = P.work;
  const double f_in = w.matmul_flops_per_token * ptoks + w.attn_flops_per_pair * ppairs;
  const double f_out = n > 0.0 ? w.matmul_flops_per_token * n + w.attn_flops_per_pair * (T0 + n) : 0.0;
  const double bytes = w.weight_bytes + w.kv_bytes_per_token * (pread + ptoks + (n > 0.0 ? T0 + n : 0.0));
  const double dt = step_time(P, f_in + f_out, bytes, ptoks, n, n > 0.0 ? T0 + n : 0.0);
  R.run_fa = f_in + f_out;
  R.run_fb = 0.0;
  R.run_ba = bytes;
  R.run_bb = 0.0;
  Line l;
  l.o = dt;
  l.a1 = l.b1 = l.a2 = l.b2 = 0.0;
  R.run_line = l;
  if (P.perf.kind == PerfKind::roofline) {
    R.run_in_share = f_in / (f_in + f_out);
  } else {
    const double ci = P.perf.per_prefill_token_s * ptoks;
    const double co = P.perf.per_decode_seq_s * n + P.perf.per_context_token_s * (n > 0.0 ? T0 + n : 0.0);
    R.run_in_share = ci + co > 0.0 ? ci / (ci + co) : ptoks / (ptoks + n);
  }
  R.run_seqs = seqs;
}

// Each class's share of a run: prefill time by prefill tokens, decode time by sequences.
FLEETSIM_HD inline void set_class_shares(const Sim& s, Replica& R, const double* prefill_by_class, double ptoks) {
  const double n = double(R.n_decode);
  for (int32_t c = 0; c < s.p->n_classes; ++c) {
    const double in = ptoks > 0.0 ? prefill_by_class[c] / ptoks : 0.0;
    const double out = n > 0.0 ? double(R.n_decode_class[c]) / n : 0.0;
    R.run_class_share[c] = R.run_in_share * in + (1.0 - R.run_in_share) * out;
  }
}

// ---------------------------------------------------------------- KV blocks (continuous batching)

// Blocks the decoding sequences of replica r allocate over steps [st, st + k).
FLEETSIM_HD inline int64_t blocks_needed(Sim& s, int32_t r, int64_t st, int64_t k) {
  if (k <= 0) return 0;
  const int32_t* cnt = rescnt_of(s, r);
  const int32_t bs = s.rep[r].bs;
  const int64_t n = s.rep[r].n_decode;
  int64_t total = (k / bs) * n;
  const int64_t rem = k % bs;
  for (int64_t j = 0; j < rem; ++j) total += cnt[(st + (k - rem) + j) % bs];
  return total;
}

// Number of steps from st on that the free blocks cover (kInf-like large if no decoding).
FLEETSIM_HD inline int64_t steps_covered(Sim& s, int32_t r, int64_t st, int64_t free_blocks) {
  const int64_t n = s.rep[r].n_decode;
  if (n == 0) return int64_t(1) << 60;
  const int32_t* cnt = rescnt_of(s, r);
  const int32_t bs = s.rep[r].bs;
  const int64_t cycles = free_blocks / n;
  int64_t left = free_blocks - cycles * n;
  int64_t j = cycles * bs;
  for (int32_t i = 0; i < bs; ++i) {
    const int64_t need = cnt[(st + j) % bs];
    if (need > left) return j;
    left -= need;
    ++j;
  }
  return j;  // unreachable: a full cycle needs n > left blocks
}

// ---------------------------------------------------------------- continuous batching

FLEETSIM_HD inline void list_remove_run(Sim& s, int32_t r, int32_t sl) {
  Replica& R = s.rep[r];
  Seq& x = slot(s, r, sl);
  if (x.prev != kNone) slot(s, r, x.prev).next = x.next; else R.run_head = x.next;
  if (x.next != kNone) slot(s, r, x.next).prev = x.prev; else R.run_tail = x.prev;
}
FLEETSIM_HD inline void list_remove_pf(Sim& s, int32_t r, int32_t sl) {
  Replica& R = s.rep[r];
  Seq& x = slot(s, r, sl);
  if (x.pf_prev != kNone) slot(s, r, x.pf_prev).pf_next = x.pf_next; else R.pf_head = x.pf_next;
  if (x.pf_next != kNone) slot(s, r, x.pf_next).pf_prev = x.pf_prev; else R.pf_tail = x.pf_prev;
}
FLEETSIM_HD inline void release_slot(Sim& s, int32_t r, int32_t sl) {
  Replica& R = s.rep[r];
  if (slot(s, r, sl).ctx_extra > 0) R.prefix_users[s.req[slot(s, r, sl).req].cls]--;
  list_remove_run(s, r, sl);
  slot(s, r, sl).next = R.free_head;
  R.free_head = sl;
  R.n_running--;
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

FLEETSIM_HD inline void stop_decoding(Sim& s, int32_t r, int32_t sl) {
  Replica& R = s.rep[r];
  Seq& x = slot(s, r, sl);
  fh_remove(s, r, sl);
  rescnt_of(s, r)[x.residue]--;
  R.A -= x.L0 + x.ctx_extra - x.s0;
  R.n_decode--;
  R.n_decode_class[s.req[x.req].cls]--;
  x.decoding = 0;
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
  if (x.decoding) {
    R.free_blocks += ceil_div(x.L0 + (st - x.s0), R.bs);
    needed_now = (x.residue == int32_t(st % R.bs)) ? 1 : 0;
    q.generated += int32_t(st - x.s0);
    stop_decoding(s, r, sl);
  } else {
    R.free_blocks += x.blocks;
    list_remove_pf(s, r, sl);
  }
  const int32_t ri = x.req;
  release_slot(s, r, sl);
  Queue& Q = s.q[R.queue];
  q_push_front(s, Q, ri);
  s.waiting[q.cls]++;
  if (q.in_window) s.tally->classes[q.cls].preempted++;
  return needed_now;
}

FLEETSIM_HD inline void finish_decoding_at(Sim& s, int32_t r, int64_t last_step, double t) {
  Replica& R = s.rep[r];
  int32_t* h = fheap_of(s, r);
  while (R.heap_n > 0 && slot(s, r, h[0]).finish <= last_step) {
    const int32_t sl = h[0];
    Seq& x = slot(s, r, sl);
    R.free_blocks += ceil_div(x.L0 + (x.finish - x.s0) + 1, R.bs);
    const int32_t ri = x.req;
    stop_decoding(s, r, sl);
    release_slot(s, r, sl);
    record_done(s, ri, t);
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
          // the first request with a shared prefix leaves it cached here (if the blocks are free)
          if (q.has_prefix && P.prefix_caching && !((R.prefix_ready >> q.cls) & 1)) {
            const int64_t pin = ceil_div(s.p->classes[q.cls].prefix_tokens, R.bs);
            if (R.free_blocks - P.kv_watermark_blocks >= pin) {
              R.free_blocks -= pin;
              R.pinned_blocks += pin;
              R.prefix_ready |= 1 << q.cls;
            }
          }
          if (!P.generative || x.out_left <= 1) {
            q.generated = q.output;
            R.free_blocks += x.blocks;
            const int32_t ri = x.req;
            release_slot(s, r, sl);
            record_done(s, ri, t);
          } else {
            q.generated += 1;
            x.decoding = 1;
            x.s0 = st + 1;
            x.L0 = x.prefill_total;
            x.finish = x.s0 + x.out_left - 2;
            x.residue = int32_t((((x.s0 - x.L0) % R.bs) + R.bs) % R.bs);
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
  R.step = st + k;
  R.run_k = 0;
}

FLEETSIM_HD inline void cont_kick(Sim& s, int32_t r, double t);
FLEETSIM_HD inline void replica_off(Sim& s, int32_t r, double t);
FLEETSIM_HD inline void replica_fail(Sim& s, int32_t r, double t, bool new_node, int32_t culprit);

// Start the next step of replica r at time t: allocate, admit, and plan the run.
FLEETSIM_HD inline void cont_start_step(Sim& s, int32_t r, double t) {
  const SimParams& p = *s.p;
  const PoolParams& P = pool_of(s, r);
  Replica& R = s.rep[r];
  Queue& Q = s.q[R.queue];
  const int64_t st = R.step;
  advance_clock(s, t);

  // 1. a KV slot for every decoding sequence, preempting the newest while blocks are short
  int64_t need = R.n_decode > 0 ? rescnt_of(s, r)[int32_t(st % R.bs)] : 0;
  int32_t changed = 0;  // queue head changed: preemptions pushed to it, or admissions took from it
  // time slicing: the device's memory is shared without isolation, its compute taken in turns
  double device_free = kInf, slowdown = 1.0;
  const double block_bytes = P.work.kv_bytes_per_token * double(R.bs);
  if (P.time_slicing > 1) {
    const PoolState& ps = s.pool[R.pool];
    const int32_t d0 = ps.first_replica + ((r - ps.first_replica) / P.time_slicing) * P.time_slicing;
    const int32_t d1 = min_of(d0 + P.time_slicing, ps.first_replica + ps.n_replicas);
    double used = 0.0;
    for (int32_t k = d0; k < d1; ++k) {
      if (s.rep[k].state == kOff) continue;
      used += P.fixed_memory_bytes + double(P.kv_total_blocks - s.rep[k].free_blocks) * block_bytes;
      if (k != r && s.rep[k].busy) slowdown += 1.0;
    }
    device_free = P.device_memory_bytes - used;
    if (R.n_decode > 0 && double(rescnt_of(s, r)[int32_t(st % R.bs)]) * block_bytes > device_free &&
        rescnt_of(s, r)[int32_t(st % R.bs)] <= R.free_blocks) {
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
  if (need > R.free_blocks) evict_prefixes(s, r);
  while (need > R.free_blocks) {
    need -= preempt_newest(s, r, st);
    changed = 1;
  }
  R.free_blocks -= need;
  device_free -= double(need) * block_bytes;

  // 2. prefill chunks: running prefills first, then admissions, within the token budget
  int64_t budget = int64_t(P.max_batched_tokens) - R.n_decode;
  double ptoks = 0.0, ppairs = 0.0, pread = 0.0, pseqs = 0.0;
  double pclass[kMaxClasses];
  for (int32_t c = 0; c < kMaxClasses; ++c) pclass[c] = 0.0;
  for (int32_t sl = R.pf_head; sl != kNone; sl = slot(s, r, sl).pf_next) {
    Seq& x = slot(s, r, sl);
    const int64_t c = min_of<int64_t>(budget, x.prefill_total - x.prefill_done);
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
  while (admit && budget > 0 && R.n_running < R.S && Q.size > 0) {
    const int32_t ri = q_at(s, Q, 0);
    Request& q = s.req[ri];
    int32_t shared =
        q.has_prefix && ((R.prefix_ready >> q.cls) & 1) ? min_of(s.p->classes[q.cls].prefix_tokens, q.prompt - 1) : 0;
    int32_t total = q.prompt + (P.generative ? q.generated : 0) - shared;
    int64_t blocks = ceil_div(total, R.bs);
    if (P.crash_on_kv_exhausted && blocks > P.kv_total_blocks - P.kv_watermark_blocks) {
      // a naive server tries the prompt and runs out of memory on it
      q_pop_front(s, Q);
      s.waiting[q.cls]--;
      s.tally->pools[R.pool].crashes += in_window(s, t);
      replica_fail(s, r, t, false, ri);
      return;
    }
    if (blocks > R.free_blocks - P.kv_watermark_blocks) {
      if (!evict_prefixes(s, r)) break;
      if (shared > 0 && !((R.prefix_ready >> q.cls) & 1)) {  // its own prefix went too: it computes it
        shared = 0;
        total = q.prompt + (P.generative ? q.generated : 0);
        blocks = ceil_div(total, R.bs);
      }
      if (blocks > R.free_blocks - P.kv_watermark_blocks) break;
    }
    if (double(blocks) * block_bytes > device_free) {  // time slicing: a neighbour holds the memory
      q_pop_front(s, Q);
      s.waiting[q.cls]--;
      s.tally->pools[R.pool].crashes += in_window(s, t);
      replica_fail(s, r, t, false, ri);
      return;
    }
    device_free -= double(blocks) * block_bytes;
    q_pop_front(s, Q);
    s.waiting[q.cls]--;
    changed = 1;
    if (q.t_admit < 0.0) q.t_admit = t;
    const int32_t sl = R.free_head;
    Seq& x = slot(s, r, sl);
    R.free_head = x.next;
    x.req = ri;
    x.prev = R.run_tail;
    x.next = kNone;
    if (R.run_tail != kNone) slot(s, r, R.run_tail).next = sl; else R.run_head = sl;
    R.run_tail = sl;
    x.pf_prev = R.pf_tail;
    x.pf_next = kNone;
    if (R.pf_tail != kNone) slot(s, r, R.pf_tail).pf_next = sl; else R.pf_head = sl;
    R.pf_tail = sl;
    x.heap_pos = kNone;
    x.decoding = 0;
    x.ctx_extra = shared;
    if (shared > 0) R.prefix_users[q.cls]++;
    if (shared > 0 && q.in_window && q.t_admit == t) s.tally->classes[q.cls].prefix_hits++;
    x.prefill_total = total;
    x.prefill_done = 0;
    x.out_left = q.output - q.generated;
    x.blocks = blocks;
    R.free_blocks -= blocks;
    R.n_running++;
    const int64_t c = min_of<int64_t>(budget, total);
    x.chunk = int32_t(c);
    budget -= c;
    pseqs += 1.0;
    const double cd = double(c), c0 = double(shared);
    ptoks += cd;
    pclass[q.cls] += cd;
    ppairs += cd * c0 + cd * (cd + 1.0) * 0.5;
    pread += c0;
  }

  // With a shared queue, work this replica left behind (or sent back) is offered to the others.
  if (changed && P.router == Router::central_queue && Q.size > 0) {
    const PoolState& ps = s.pool[R.pool];
    for (int32_t o = ps.first_replica; o < ps.first_replica + ps.n_replicas; ++o)
      if (o != r) cont_kick(s, o, t);
  }

  if (R.n_running == 0) {  // nothing to do: idle until work arrives
    set_busy(s, r, 0, t);
    R.run_k = 0;
    set_next(s, r, kInf);
    if (R.state == kDraining && (P.router == Router::central_queue || Q.size == 0)) replica_off(s, r, t);
    return;
  }

  // 3. plan the run
  const double n = double(R.n_decode);
  const double T0 = double(R.A) + n * double(st);
  const int64_t used = P.kv_total_blocks - R.free_blocks;
  R.run_blocks0 = double(used);
  set_busy(s, r, 1, t);
  R.run_t0 = t;
  if (ptoks > 0.0) {
    set_single_step(P, R, ptoks, ppairs, pread, n, T0, pseqs + n);
    R.run_prefill = 1;
    R.run_k = 1;
    R.run_blocks_rate = 0.0;
  } else {
    set_decode_run(P, R, n, T0);
    R.run_prefill = 0;
    const int64_t k_fin = slot(s, r, fheap_of(s, r)[0]).finish - st + 1;
    const int64_t k_blk = 1 + steps_covered(s, r, st + 1, R.free_blocks);
    R.run_k = min_of(k_fin, k_blk);
    if (p.max_run_steps > 0 && R.run_k > p.max_run_steps) R.run_k = p.max_run_steps;
    if (P.time_slicing > 1) R.run_k = 1;  // neighbours' memory and turns change step by step
    R.run_blocks_rate = n / double(R.bs);
  }
  if (slowdown > 1.0) {  // busy neighbours take turns on the device
    Line& l = R.run_line;
    l.o *= slowdown;
    l.a1 *= slowdown;
    l.b1 *= slowdown;
    l.a2 *= slowdown;
    l.b2 *= slowdown;
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
    set_next(s, r, t);
    return;
  }
  if (R.run_prefill || R.run_k <= 1 || R.n_running >= R.S) return;
  const int64_t j = line_steps_until(R.run_line, R.run_k, t - R.run_t0);
  if (j < R.run_k) {
    R.run_k = j;
    set_next(s, r, max_of(t, R.run_t0 + line_sum(R.run_line, j)));
  }
}

// ---------------------------------------------------------------- static batching

FLEETSIM_HD inline void static_try_start(Sim& s, int32_t r, double t) {
  const PoolParams& P = pool_of(s, r);
  Replica& R = s.rep[r];
  if (R.busy || R.state == kOff || R.state == kStarting) return;
  if (R.state == kDraining && P.router == Router::central_queue) {
    replica_off(s, r, t);
    return;
  }
  Queue& Q = s.q[R.queue];
  if (Q.size == 0) {
    if (R.state == kDraining) {
      replica_off(s, r, t);
      return;
    }
    if (R.t_next != kInf) set_next(s, r, kInf);
    return;
  }
  const double deadline = s.req[q_at(s, Q, 0)].t_arrive + P.batch_window_s;
  if (Q.size < P.max_batch && t < deadline) {
    if (R.t_next != deadline) set_next(s, r, deadline);
    return;
  }
  // form the batch: FCFS while the padded batch fits in the KV cache
  const int64_t cap = P.kv_total_blocks * R.bs;
  int64_t n = 0, pmax = 0, omax = 0;
  double nclass[kMaxClasses];
  for (int32_t c = 0; c < kMaxClasses; ++c) nclass[c] = 0.0;
  while (n < P.max_batch && Q.size > 0) {
    const Request& q = s.req[q_at(s, Q, 0)];
    const int64_t np = max_of<int64_t>(pmax, q.prompt), no = max_of<int64_t>(omax, q.output);
    if ((n + 1) * (np + no) > cap) break;
    const int32_t ri = q_pop_front(s, Q);
    advance_clock(s, t);
    s.waiting[q.cls]--;
    s.req[ri].t_admit = t;
    slot(s, r, int32_t(n)).req = ri;
    nclass[q.cls] += 1.0;
    pmax = np;
    omax = no;
    ++n;
  }
  const double dn = double(n), dp = double(pmax);
  // prefill of the padded batch
  set_single_step(P, R, dn * dp, dn * dp * (dp + 1.0) * 0.5, 0.0, 0.0, 0.0, dn);
  for (int32_t c = 0; c < s.p->n_classes; ++c) R.run_class_share[c] = nclass[c] / dn;
  R.run_blocks0 = double(ceil_div(n * (pmax + omax), R.bs));
  R.run_blocks_rate = 0.0;
  const double t_first = t + R.run_line.o;
  account_run(s, R, 1, t, t_first);
  double t_end = t_first;
  if (P.generative && omax >= 2) {
    set_decode_run(P, R, dn, dn * dp);
    const int64_t k = omax - 1;
    t_end = t_first + line_sum(R.run_line, k);
    account_run(s, R, k, t_first, t_end);
  }
  R.batch_n = int32_t(n);
  R.batch_t_first = t_first;
  set_busy(s, r, 1, t);
  set_next(s, r, t_end);
}

FLEETSIM_HD inline void static_finish(Sim& s, int32_t r, double t) {
  Replica& R = s.rep[r];
  for (int32_t i = 0; i < R.batch_n; ++i) {
    const int32_t ri = slot(s, r, i).req;
    Request& q = s.req[ri];
    q.t_first = R.batch_t_first;
    q.generated = q.output;
    record_done(s, ri, t);
  }
  R.batch_n = 0;
  set_busy(s, r, 0, t);
  set_next(s, r, kInf);
}

// ---------------------------------------------------------------- replica lifecycle and autoscaling

FLEETSIM_HD inline int32_t outstanding(const Sim& s, int32_t r) {
  const Replica& R = s.rep[r];
  const int32_t running = s.p->pools[R.pool].batching == Batching::continuous ? R.n_running : R.batch_n;
  return s.q[R.queue].size + running;
}


// A stage's duration: its median, spread lognormally by sigma (0: exactly the median).
FLEETSIM_HD inline double stage_s(const Sim& s, int32_t r, double median, double sigma, uint32_t sub) {
  if (sigma <= 0.0 || median <= 0.0) return median;
  const Replica& R = s.rep[r];
  const double u = s.rng.uniform(Stream::lifecycle, uint32_t(R.pool), uint64_t(r) * 1000003ULL + uint64_t(R.starts), sub);
  return median * dm::exp(sigma * normal_quantile(u));
}

// Seconds from asking for a replica to its first request: every stage of a cold start.
FLEETSIM_HD inline double cold_start_s(const Sim& s, int32_t r) {
  const Replica& R = s.rep[r];
  const ColdStartParams& c = s.p->pools[R.pool].cold;
  const double u = s.rng.uniform(Stream::lifecycle, uint32_t(R.pool), uint64_t(r) * 1000003ULL + uint64_t(R.starts), 0);
  const bool hit = u < c.cache_hit_probability;
  const double fetch = hit ? c.weights_bytes / c.cache_bytes_per_s : c.weights_bytes / c.download_bytes_per_s;
  return stage_s(s, r, c.provision_s, c.provision_sigma, 10) + stage_s(s, r, c.image_pull_s, c.image_pull_sigma, 11) +
         fetch + c.weights_bytes / c.load_bytes_per_s + stage_s(s, r, c.warmup_s, c.warmup_sigma, 12);
}

// Seconds for a crashed server to come back on the same node: weights (node-local cache, if it
// hits) and loading, and warm-up; no new node and no image pull.
FLEETSIM_HD inline double restart_s(const Sim& s, int32_t r) {
  const Replica& R = s.rep[r];
  const ColdStartParams& c = s.p->pools[R.pool].cold;
  const double u = s.rng.uniform(Stream::lifecycle, uint32_t(R.pool), uint64_t(r) * 1000003ULL + uint64_t(R.starts), 2);
  const double fetch = u < c.cache_hit_probability ? c.weights_bytes / c.cache_bytes_per_s : c.weights_bytes / c.download_bytes_per_s;
  return fetch + c.weights_bytes / c.load_bytes_per_s + stage_s(s, r, c.warmup_s, c.warmup_sigma, 12);
}

// A request whose replica was lost: back to the front of the queue to be retried (a checkpointed
// class keeps its progress), or given up after max_retries.
FLEETSIM_HD inline void requeue_lost(Sim& s, Queue& Q, int32_t ri, double t) {
  Request& q = s.req[ri];
  const ClassParams& C = s.p->classes[q.cls];
  ClassTally& T = s.tally->classes[q.cls];
  if (!C.checkpointed) q.generated = 0;
  q.retries++;
  advance_clock(s, t);
  if (q.retries > C.max_retries) {
    s.in_system[q.cls]--;
    if (q.in_window) T.failed++;
    s.req_free[s.req_free_n++] = ri;
    return;
  }
  if (q.in_window) T.retried++;
  q_push_front(s, Q, ri);
  s.waiting[q.cls]++;
}

// Lose replica r at time t (a crash, a spot reclaim, a hardware failure): its requests are
// retried, its KV state is gone, and it comes back after a restart on the same node or a full
// cold start on a new one. `culprit` is a request the replica was taking when it died (or kNone).
FLEETSIM_HD inline void replica_fail(Sim& s, int32_t r, double t, bool new_node, int32_t culprit) {
  Replica& R = s.rep[r];
  const PoolParams& P = pool_of(s, r);
  Queue& Q = s.q[R.queue];
  double wasted_from = t;  // work in flight since then is lost; its time still counts as busy
  if (R.busy && P.batching == Batching::continuous && R.run_k > 0) {
    wasted_from = R.run_t0;
    if (!R.run_prefill) {  // the decode steps that completed before t happened: apply them
      int64_t j = line_steps_until(R.run_line, R.run_k, t - R.run_t0);
      if (R.run_t0 + line_sum(R.run_line, j) > t) j -= 1;
      if (j > 0) {
        const double tj = R.run_t0 + line_sum(R.run_line, j);
        R.run_k = j;
        cont_finish_run(s, r, tj);
        wasted_from = tj;
      }
    }
  } else if (R.busy && P.batching == Batching::fixed_batch && R.batch_n > 0) {
    // a static batch was accounted when it formed: take back the part that will not run
    const double a = max_of(t, s.W0), b = min_of(R.t_next, s.W1);
    if (b > a) {
      s.tally->pools[R.pool].busy_s -= b - a;
      for (int32_t c = 0; c < s.p->n_classes; ++c) s.tally->classes[c].busy_s -= (b - a) * R.run_class_share[c];
    }
  }
  if (t > wasted_from) {
    const double a = max_of(wasted_from, s.W0), b = min_of(t, s.W1);
    if (b > a) {
      s.tally->pools[R.pool].busy_s += b - a;
      for (int32_t c = 0; c < s.p->n_classes; ++c) s.tally->classes[c].busy_s += (b - a) * R.run_class_share[c];
    }
  }
  if (culprit != kNone) requeue_lost(s, Q, culprit, t);
  if (P.batching == Batching::continuous) {
    while (R.run_tail != kNone) {  // newest first, so the oldest ends up at the front
      const int32_t sl = R.run_tail;
      Seq& x = slot(s, r, sl);
      if (x.decoding) {
        s.req[x.req].generated += int32_t(R.step - x.s0);
        stop_decoding(s, r, sl);
      } else {
        list_remove_pf(s, r, sl);
      }
      const int32_t ri = x.req;
      release_slot(s, r, sl);
      requeue_lost(s, Q, ri, t);
    }
    R.free_blocks = P.kv_total_blocks;
    R.pinned_blocks = 0;
    R.prefix_ready = 0;
  } else {
    for (int32_t i = R.batch_n - 1; i >= 0; --i) requeue_lost(s, Q, slot(s, r, i).req, t);
    R.batch_n = 0;
  }
  set_busy(s, r, 0, t);
  R.run_k = 0;
  R.run_prefill = 0;
  const bool was_draining = R.state == kDraining;
  if (P.router != Router::central_queue) {
    // the load balancer sends the lost requests, and those queued here, to ready replicas
    const PoolState& ps = s.pool[R.pool];
    while (Q.size > 0) {
      int32_t best = kNone, best_out = 0;
      for (int32_t o = ps.first_replica; o < ps.first_replica + ps.n_replicas; ++o) {
        // keep room in its queue for everything it runs: a preemption or failure pushes those back
        const int32_t out = outstanding(s, o);
        if (o == r || s.rep[o].state != kReady || out >= s.q[s.rep[o].queue].cap) continue;
        if (best == kNone || out < best_out) {
          best = o;
          best_out = out;
        }
      }
      if (best == kNone) break;
      Queue& O = s.q[s.rep[best].queue];
      const bool was_empty = O.size == 0;
      q_push_back(s, O, q_pop_front(s, Q));
      if (was_empty) {
        if (P.batching == Batching::continuous) cont_kick(s, best, t);
        else static_try_start(s, best, t);
      }
    }
  }
  if (was_draining && Q.size == 0) {  // it was leaving anyway
    replica_off(s, r, t);
    return;
  }
  const double back = new_node ? cold_start_s(s, r) : restart_s(s, r);
  R.starts++;
  if (new_node) {  // a replacement node counts against the nodes obtainable
    PoolState& ps = s.pool[R.pool];
    ps.start_t[ps.start_head] = t;
    ps.start_head = ps.start_head + 1 == kScaleHistory ? 0 : ps.start_head + 1;
    ps.starts++;
  }
  set_state(s, r, kStarting, t);
  set_next(s, r, t + back);
  if (P.router == Router::central_queue && Q.size > 0) {  // the others can take the retried work now
    const PoolState& ps = s.pool[R.pool];
    for (int32_t o = ps.first_replica; o < ps.first_replica + ps.n_replicas; ++o)
      if (o != r) {
        if (P.batching == Batching::continuous) cont_kick(s, o, t);
        else static_try_start(s, o, t);
      }
  }
}

// A spot reclaim or hardware failure hits one provisioned replica of pool pi, chosen uniformly.
FLEETSIM_HD inline void pool_interrupt(Sim& s, int32_t pi, double t) {
  PoolState& ps = s.pool[pi];
  const double u = s.rng.uniform(Stream::lifecycle, uint32_t(16 + pi), uint64_t(ps.fail_draws++), 3);
  int32_t k = int32_t(u * double(ps.n_prov));
  int32_t victim = kNone;
  for (int32_t r = ps.first_replica; r < ps.first_replica + ps.n_replicas && victim == kNone; ++r)
    if (s.rep[r].state != kOff && k-- == 0) victim = r;
  s.tally->pools[pi].interruptions += in_window(s, t);
  ps.next_fail = kInf;
  if (victim != kNone) replica_fail(s, victim, t, true, kNone);
  // the next one (set_state redraws only when the provisioned count changes)
  const double rate = s.p->pools[pi].interruptions_per_s * double(ps.n_prov);
  if (rate > 0.0) {
    const double v = s.rng.uniform(Stream::lifecycle, uint32_t(16 + pi), uint64_t(ps.fail_draws++), 1);
    ps.next_fail = t - dm::log(v) / rate;
  }
}

// Ask for a new replica in a free slot of pool pi; false if none is free or capacity is capped.
FLEETSIM_HD inline bool replica_start(Sim& s, int32_t pi, double t) {
  PoolState& ps = s.pool[pi];
  const AutoscaleParams& A = s.p->pools[pi].autoscale;
  if (A.max_starts > 0 && ps.starts >= A.max_starts) return false;
  if (A.max_starts_per_hour > 0.0) {
    int32_t recent = 0;  // starts within the last hour (the ring keeps the latest kScaleHistory)
    for (int32_t i = 0; i < min_of(ps.starts, kScaleHistory); ++i)
      if (t - ps.start_t[i] < 3600.0) ++recent;
    if (double(recent) >= A.max_starts_per_hour) return false;
  }
  for (int32_t r = ps.first_replica; r < ps.first_replica + ps.n_replicas; ++r) {
    Replica& R = s.rep[r];
    if (R.state != kOff) continue;
    set_state(s, r, kStarting, t);
    set_next(s, r, t + cold_start_s(s, r));
    R.starts++;
    ps.start_t[ps.start_head] = t;
    ps.start_head = ps.start_head + 1 == kScaleHistory ? 0 : ps.start_head + 1;
    ps.starts++;
    ps.last_scale = t;
    s.tally->pools[pi].scale_ups += in_window(s, t);
    return true;
  }
  return false;
}

// A replica stops billing: it has drained, or it was idle when the autoscaler removed it.
FLEETSIM_HD inline void replica_off(Sim& s, int32_t r, double t) {
  Replica& R = s.rep[r];
  R.free_blocks += R.pinned_blocks;  // the node and its cache are gone
  R.pinned_blocks = 0;
  R.prefix_ready = 0;
  set_busy(s, r, 0, t);
  set_state(s, r, kOff, t);
  R.run_k = 0;
  set_next(s, r, kInf);
}

// The end of a cold start: the replica serves from now on.
FLEETSIM_HD inline void replica_ready(Sim& s, int32_t r, double t) {
  Replica& R = s.rep[r];
  const PoolParams& P = pool_of(s, r);
  set_state(s, r, kReady, t);
  R.t_next = kInf;
  rh_update(s, r);
  if (P.batching == Batching::continuous) {
    if (s.q[R.queue].size > 0) cont_kick(s, r, t);
  } else {
    static_try_start(s, r, t);
  }
}

// Remove one replica: an idle one at once, else drain the least loaded (highest index on ties).
FLEETSIM_HD inline void scale_down_one(Sim& s, int32_t pi, double t) {
  PoolState& ps = s.pool[pi];
  int32_t victim = kNone, best = 0;
  const bool central = s.p->pools[pi].router == Router::central_queue;
  for (int32_t r = ps.first_replica + ps.n_replicas - 1; r >= ps.first_replica; --r) {
    const Replica& R = s.rep[r];
    // a start not yet finished is the cheapest to cancel, unless requests already wait for it
    if (R.state == kStarting && (central || s.q[R.queue].size == 0)) {
      victim = r;
      break;
    }
    if (R.state != kReady) continue;
    const int32_t o = outstanding(s, r);
    if (victim == kNone || o < best) {
      victim = r;
      best = o;
    }
  }
  if (victim == kNone) return;
  if (ps.n_ready + ps.n_starting == 1) {
    for (int32_t qi = ps.first_queue; qi < ps.first_queue + ps.n_queues; ++qi)
      if (s.q[qi].size > 0) return;  // the last replica stays while requests wait
  }
  s.tally->pools[pi].scale_downs += in_window(s, t);
  ps.last_scale = t;
  const Replica& V = s.rep[victim];
  const bool idle = V.state == kStarting ||
                    (!V.busy && (s.p->pools[pi].router == Router::central_queue || s.q[V.queue].size == 0) &&
                     (s.p->pools[pi].batching == Batching::continuous ? V.n_running == 0 : V.batch_n == 0));
  if (idle) {
    replica_off(s, victim, t);
  } else {
    set_state(s, victim, kDraining, t);
  }
}

// The autoscaler's metric and the replica count it asks for.
FLEETSIM_HD inline int32_t autoscale_desired(Sim& s, int32_t pi, double t, int32_t current) {
  const PoolParams& P = s.p->pools[pi];
  const AutoscaleParams& A = P.autoscale;
  PoolState& ps = s.pool[pi];
  int64_t waiting = 0, running = 0;
  for (int32_t qi = ps.first_queue; qi < ps.first_queue + ps.n_queues; ++qi) waiting += s.q[qi].size;
  for (int32_t r = ps.first_replica; r < ps.first_replica + ps.n_replicas; ++r)
    running += P.batching == Batching::continuous ? s.rep[r].n_running : s.rep[r].batch_n;
  const double interval = max_of(t - ps.last_eval, 1e-9);
  double ratio = -1.0;  // metric / target, for the signals that scale the current count
  switch (A.signal) {
    case ScaleSignal::queue_depth:
      return int32_t(min_of(1.0e6, dm::ceil(double(waiting) / A.target)));
    case ScaleSignal::inflight:
      return int32_t(min_of(1.0e6, dm::ceil(double(waiting + running) / A.target)));
    case ScaleSignal::ttft: {
      // the chosen percentile of first-token times completed within the window
      int32_t n = 0;
      double value = 0.0;
      for (int32_t i = 0; i < ps.ttft_n; ++i)
        if (t - ps.ttft_t[i] <= A.ttft_window_s) ++n;
      if (n == 0) return waiting + running > 0 ? max_of(current, 1) : 0;
      const int32_t rank = max_of(1, int32_t(dm::ceil(A.ttft_quantile * double(n))));
      for (int32_t i = 0; i < ps.ttft_n; ++i) {
        if (t - ps.ttft_t[i] > A.ttft_window_s) continue;
        int32_t below = 0, equal = 0;
        for (int32_t j = 0; j < ps.ttft_n; ++j) {
          if (t - ps.ttft_t[j] > A.ttft_window_s) continue;
          below += ps.ttft_v[j] < ps.ttft_v[i] ? 1 : 0;
          equal += ps.ttft_v[j] == ps.ttft_v[i] ? 1 : 0;
        }
        if (below < rank && below + equal >= rank) {
          value = ps.ttft_v[i];
          break;
        }
      }
      ratio = value / A.target;
      break;
    }
    case ScaleSignal::busy: {
      const double ready = max_of(double(ps.n_ready + ps.n_draining), 1.0);
      ratio = (ps.busy_acc / interval / ready) / A.target;
      break;
    }
    case ScaleSignal::host_cpu: {
      // the host CPU only tokenizes and serves HTTP: it stays low while the device saturates
      const double ready = max_of(double(ps.n_ready + ps.n_draining), 1.0);
      const double cpu = min_of(1.0, A.cpu_base + A.cpu_per_request_s * ps.arrivals_since / interval / ready);
      ratio = cpu / A.target;
      break;
    }
  }
  const int32_t floor = waiting + running > 0 ? 1 : 0;  // work is waiting: never ask for none
  if (current == 0) return ratio > 0.0 ? 1 : floor;
  if (ratio >= 1.0 - A.tolerance && ratio <= 1.0 + A.tolerance) return current;
  return max_of(floor, int32_t(min_of(1.0e6, dm::ceil(double(current) * ratio))));
}

FLEETSIM_HD inline void autoscale_eval(Sim& s, int32_t pi, double t) {
  const PoolParams& P = s.p->pools[pi];
  const AutoscaleParams& A = P.autoscale;
  PoolState& ps = s.pool[pi];
  pool_advance(s, pi, t);
  const int32_t current = ps.n_ready + ps.n_starting;  // draining replicas are already leaving
  int32_t desired = autoscale_desired(s, pi, t, current);
  desired = max_of(P.min_replicas, min_of(P.max_replicas, desired));
  // stabilization: remember recommendations; scale up to the lowest of the up window, down to
  // the highest of the down window
  ps.hist_t[ps.hist_head] = t;
  ps.hist_d[ps.hist_head] = desired;
  ps.hist_head = ps.hist_head + 1 == kScaleHistory ? 0 : ps.hist_head + 1;
  if (ps.hist_n < kScaleHistory) ps.hist_n++;
  int32_t up = desired, down = desired;
  for (int32_t i = 0; i < ps.hist_n; ++i) {
    if (t - ps.hist_t[i] <= A.up_window_s) up = min_of(up, ps.hist_d[i]);
    if (t - ps.hist_t[i] <= A.down_window_s) down = max_of(down, ps.hist_d[i]);
  }
  if (up > current) {
    for (int32_t k = current; k < up; ++k)
      if (!replica_start(s, pi, t)) break;
  } else if (down < current && t - ps.last_scale >= A.cooldown_s) {
    for (int32_t k = down; k < current; ++k) scale_down_one(s, pi, t);
  }
  ps.busy_acc = 0.0;
  ps.arrivals_since = 0.0;
  ps.last_eval = t;
  ps.next_eval = t + A.interval_s;
}

// ---------------------------------------------------------------- arrivals and routing

FLEETSIM_HD inline void handle_arrival(Sim& s, int32_t cls, double t) {
  const ClassParams& C = s.p->classes[cls];
  const PoolParams& P = s.p->pools[C.pool];
  PoolState& ps = s.pool[C.pool];
  ClassTally& T = s.tally->classes[cls];
  const uint64_t idx = s.arr[cls].index++;
  int64_t prompt, output;
  if (C.arrivals.kind == ArrivalKind::trace) {
    prompt = C.arrivals.trace_prompt[idx];
    output = C.arrivals.trace_output[idx];
  } else {
    prompt = sample_length(C.prompt, s.rng, Stream::prompt, uint32_t(cls), idx);
    output = sample_length(C.output, s.rng, Stream::output, uint32_t(cls), idx);
  }
  if (prompt < 1) prompt = 1;
  double u_prefix, u_cache;
  s.rng.uniform2(Stream::accept, uint32_t(cls), idx, 1, u_prefix, u_cache);
  const bool has_prefix = u_prefix < C.prefix_share && C.prefix_tokens > 0;
  if (has_prefix && prompt <= C.prefix_tokens) prompt = C.prefix_tokens + 1;  // it starts with the prefix
  if (P.generative) {
    if (prompt > P.max_context - 1) prompt = P.max_context - 1;
    if (output < 1) output = 1;
    if (output > P.max_context - prompt) output = P.max_context - prompt;
  } else {
    if (prompt > P.max_context) prompt = P.max_context;
    output = 0;
  }
  const bool in_window = t >= s.W0;
  if (in_window) T.arrived++;
  if (u_cache < C.response_cache_hit_rate) {  // answered from the cache: no queue, no device
    if (in_window) {
      T.completed++;
      T.cache_hits++;
      T.input_tokens += double(prompt);
      T.output_tokens += double(output);
      hist_add(T.e2e, C.response_cache_latency_s);
      hist_add(T.ttft, C.response_cache_latency_s);
      hist_add(T.queue_wait, 0.0);
    }
    return;
  }

  // a request that cannot fit in KV even alone
  bool too_long;
  if (P.batching == Batching::continuous) {
    const int64_t kv_tokens = P.generative ? prompt + output - 1 : prompt;
    // a naive server has no such check: it takes the request and runs out of memory on it
    too_long = !P.crash_on_kv_exhausted && ceil_div(kv_tokens, P.kv_block_tokens) > P.kv_total_blocks - P.kv_watermark_blocks;
  } else {
    too_long = prompt + output > P.kv_total_blocks * P.kv_block_tokens;
  }
  if (too_long) {
    if (in_window) T.rejected_too_long++;
    return;
  }

  // only replicas that are ready or starting take new requests; scale-to-zero wakes one
  ps.arrivals_since += 1.0;
  if (ps.n_ready + ps.n_starting == 0 && !replica_start(s, C.pool, t)) {
    if (in_window) T.rejected_queue_full++;  // no replica and none obtainable
    return;
  }
  // route to ready replicas; only when none is ready, to one still starting (it holds the queue)
  const int32_t want = ps.n_ready > 0 ? int32_t(kReady) : int32_t(kStarting);
  auto active = [&](int32_t r) { return s.rep[r].state == want; };
  int32_t target = kNone;  // the replica whose queue takes it (any active replica of a central queue)
  if (P.router == Router::round_robin) {
    for (int32_t k = 0; k < ps.n_replicas && target == kNone; ++k) {
      const int32_t r = ps.first_replica + ps.rr_next;
      ps.rr_next = ps.rr_next + 1 == ps.n_replicas ? 0 : ps.rr_next + 1;
      if (active(r)) target = r;
    }
  } else {
    int32_t best = 0;
    for (int32_t r = ps.first_replica; r < ps.first_replica + ps.n_replicas; ++r) {
      if (!active(r)) continue;
      const int32_t o = outstanding(s, r);
      if (target == kNone || o < best) { best = o; target = r; }
      if (P.router == Router::central_queue) break;
    }
  }
  Queue& Q = s.q[s.rep[target].queue];
  if (Q.size >= P.queue_limit || s.req_free_n == 0) {
    if (in_window) T.rejected_queue_full++;
    return;
  }
  const int32_t ri = s.req_free[--s.req_free_n];
  Request& q = s.req[ri];
  q.t_arrive = t;
  q.t_first = -1.0;
  q.t_admit = -1.0;
  q.prompt = int32_t(prompt);
  q.output = int32_t(output);
  q.generated = 0;
  q.in_window = in_window ? 1 : 0;
  q.cls = int16_t(cls);
  q.retries = 0;
  q.has_prefix = has_prefix ? 1 : 0;
  const bool was_empty = Q.size == 0;
  advance_clock(s, t);
  if (s.prioritized) q_insert_by_priority(s, Q, ri, C.priority, s.class_priority);
  else q_push_back(s, Q, ri);
  s.waiting[cls]++;
  s.in_system[cls]++;

  const int32_t r0 = ps.first_replica, r1 = ps.first_replica + ps.n_replicas;
  if (P.batching == Batching::continuous) {
    if (P.router != Router::central_queue) {
      if (was_empty || !s.rep[target].busy) cont_kick(s, target, t);
    } else if (was_empty) {
      int32_t idle = kNone;
      for (int32_t r = r0; r < r1; ++r)
        if (!s.rep[r].busy && s.rep[r].state == kReady) { idle = r; break; }
      if (idle != kNone) {
        cont_kick(s, idle, t);
      } else {
        for (int32_t r = r0; r < r1; ++r) cont_kick(s, r, t);
      }
    }
  } else {
    if (P.router != Router::central_queue) {
      static_try_start(s, target, t);
    } else {
      for (int32_t r = r0; r < r1; ++r) static_try_start(s, r, t);
    }
  }
}

// ---------------------------------------------------------------- the simulation

// Bind the workspace at `base` (workspace_layout(p).total bytes) and reset it.
FLEETSIM_HD inline Sim sim_bind(const SimParams& p, uint32_t replication, uint8_t* base, Tally* tally) {
  const WorkspaceLayout l = workspace_layout(p);
  Sim s;
  s.p = &p;
  s.tally = tally;
  s.rng = make_rng(p.seed, replication);
  s.req = reinterpret_cast<Request*>(base + l.req);
  s.req_free = reinterpret_cast<int32_t*>(base + l.req_free);
  s.qbuf = reinterpret_cast<int32_t*>(base + l.qbuf);
  s.q = reinterpret_cast<Queue*>(base + l.q);
  s.rep = reinterpret_cast<Replica*>(base + l.rep);
  s.seq = reinterpret_cast<Seq*>(base + l.seq);
  s.fheap = reinterpret_cast<int32_t*>(base + l.fheap);
  s.rescnt = reinterpret_cast<int32_t*>(base + l.rescnt);
  s.rheap = reinterpret_cast<int32_t*>(base + l.rheap);
  s.rheap_pos = reinterpret_cast<int32_t*>(base + l.rheap_pos);
  s.pool = reinterpret_cast<PoolState*>(base + l.pools);
  s.n_replicas = l.n_replicas;
  s.nq = l.nq;
  s.W0 = p.warmup_s;
  s.W1 = p.duration_s;
  s.t_clock = 0.0;
  for (int32_t c = 0; c < kMaxClasses; ++c) {
    s.in_system[c] = 0;
    s.waiting[c] = 0;
  }
  s.req_free_n = l.req_cap;
  for (int32_t i = 0; i < l.req_cap; ++i) s.req_free[i] = l.req_cap - 1 - i;
  int32_t r = 0, qi = 0, qbase = 0;
  int64_t slot_base = 0, res_base = 0;
  for (int32_t pi = 0; pi < p.n_pools; ++pi) {
    const PoolParams& P = p.pools[pi];
    PoolState& ps = s.pool[pi];
    ps.first_replica = r;
    ps.n_replicas = P.max_replicas;
    ps.first_queue = qi;
    ps.n_queues = pool_queues(P);
    ps.rr_next = 0;
    ps.n_prov = ps.n_ready = ps.n_starting = ps.n_draining = ps.n_busy = 0;
    ps.t_clock = 0.0;
    ps.busy_acc = ps.arrivals_since = 0.0;
    ps.next_eval = P.autoscale.enabled ? P.autoscale.interval_s : kInf;
    ps.last_eval = 0.0;
    ps.last_scale = -kInf;
    ps.hist_n = ps.hist_head = ps.ttft_n = ps.ttft_head = 0;
    ps.starts = ps.start_head = 0;
    ps.next_fail = kInf;
    ps.fail_draws = 0;
    const int32_t qcap = pool_queue_cap(P);
    for (int32_t i = 0; i < ps.n_queues; ++i, ++qi) {
      s.q[qi].base = qbase;
      s.q[qi].cap = qcap;
      s.q[qi].head = 0;
      s.q[qi].size = 0;
      qbase += qcap;
    }
    const int32_t S = pool_slots(P);
    for (int32_t k = 0; k < P.max_replicas; ++k, ++r) {
      Replica& R = s.rep[r];
      R.t_next = kInf;
      R.busy = 0;
      R.state = kOff;
      R.starts = 0;
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
      }
      R.run_head = R.run_tail = R.pf_head = R.pf_tail = kNone;
      R.free_head = 0;
      for (int32_t i = 0; i < S; ++i) {
        Seq& x = s.seq[R.slot_base + i];
        x.next = i + 1 < S ? i + 1 : kNone;
        x.heap_pos = kNone;
        x.decoding = 0;
        x.chunk = 0;
        x.ctx_extra = 0;
      }
      R.heap_n = 0;
      R.A = 0;
      R.free_blocks = P.kv_total_blocks;
      R.pinned_blocks = 0;
      R.prefix_ready = 0;
      for (int32_t c = 0; c < kMaxClasses; ++c) R.prefix_users[c] = 0;
      R.run_t0 = 0.0;
      R.run_k = 0;
      R.run_prefill = 0;
      R.batch_n = 0;
      R.batch_t_first = 0.0;
      for (int32_t i = 0; i < P.kv_block_tokens; ++i) s.rescnt[R.res_base + i] = 0;
      s.rheap[r] = r;
      s.rheap_pos[r] = r;
    }
  }
  s.prioritized = 0;
  for (int32_t c = 0; c < p.n_classes; ++c) {
    s.arr[c].candidate = 0;
    s.arr[c].index = 0;
    s.arr[c].next_t = 0.0;
    s.class_priority[c] = p.classes[c].priority;
    if (p.classes[c].priority != p.classes[0].priority) s.prioritized = 1;
  }
  return s;
}

// The replicas each pool starts with are warm at t = 0.
FLEETSIM_HD inline void sim_start_fleet(Sim& s, const SimParams& p) {
  for (int32_t pi = 0; pi < p.n_pools; ++pi) {
    const PoolState& ps = s.pool[pi];
    for (int32_t k = 0; k < p.pools[pi].replicas; ++k) set_state(s, ps.first_replica + k, kReady, 0.0);
  }
}

// Run one simulation to completion (arrivals stop at duration_s; requests in flight drain).
FLEETSIM_HD inline void simulate(const SimParams& p, uint32_t replication, uint8_t* workspace, Tally& tally) {
  tally_clear(tally, p.n_pools, p.n_classes);
  Sim s = sim_bind(p, replication, workspace, &tally);
  tally.window_s = p.duration_s - p.warmup_s;
  sim_start_fleet(s, p);
  for (int32_t c = 0; c < p.n_classes; ++c)
    s.next_arrival[c] = first_arrival(p.classes[c].arrivals, s.rng, uint32_t(c), s.arr[c], p.duration_s);
  int64_t events = 0;
  for (;;) {
    // the next event: a replica's, then an autoscaler evaluation, then an arrival (ties in that order)
    const int32_t r = s.rheap[0];
    const double tr = s.rep[r].t_next;
    int32_t cls = 0, pe = 0, pf = 0;
    double ta = s.next_arrival[0], te = s.pool[0].next_eval, tf = s.pool[0].next_fail;
    for (int32_t c = 1; c < p.n_classes; ++c)
      if (s.next_arrival[c] < ta) { ta = s.next_arrival[c]; cls = c; }
    for (int32_t pi = 1; pi < p.n_pools; ++pi) {
      if (s.pool[pi].next_eval < te) { te = s.pool[pi].next_eval; pe = pi; }
      if (s.pool[pi].next_fail < tf) { tf = s.pool[pi].next_fail; pf = pi; }
    }
    // the fleet stays as it is while the last requests drain
    if (te >= p.duration_s) te = kInf;
    if (tf >= p.duration_s) tf = kInf;
    if (tr >= kInf && ta >= kInf && te >= kInf && tf >= kInf) break;
    if (++events > p.max_events) {
      tally.status = int32_t(SimStatus::event_limit);
      break;
    }
    if (tr <= ta && tr <= te && tr <= tf) {
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
    } else if (te <= ta && te <= tf) {
      autoscale_eval(s, pe, te);
    } else if (tf <= ta) {
      pool_interrupt(s, pf, tf);
    } else {
      handle_arrival(s, cls, ta);
      s.next_arrival[cls] = next_arrival(p.classes[cls].arrivals, s.rng, uint32_t(cls), s.arr[cls], ta, p.duration_s);
    }
  }
  advance_clock(s, p.duration_s);
  for (int32_t pi = 0; pi < p.n_pools; ++pi) pool_advance(s, pi, p.duration_s);
  tally.events = events;
  int64_t left = 0;
  for (int32_t c = 0; c < p.n_classes; ++c) left += s.in_system[c];
  tally.unfinished = left;
}

// After a simulation: every replica empty, every KV block back, every queue empty.
FLEETSIM_HD inline bool sim_drained(const SimParams& p, uint8_t* base) {
  const WorkspaceLayout l = workspace_layout(p);
  const Replica* rep = reinterpret_cast<const Replica*>(base + l.rep);
  const Queue* q = reinterpret_cast<const Queue*>(base + l.q);
  for (int32_t r = 0; r < l.n_replicas; ++r) {
    if (rep[r].n_running != 0 || rep[r].n_decode != 0 || rep[r].heap_n != 0) return false;
    const PoolParams& P = p.pools[rep[r].pool];
    if (P.batching == Batching::continuous && rep[r].free_blocks + rep[r].pinned_blocks != P.kv_total_blocks) return false;
  }
  for (int32_t i = 0; i < l.nq; ++i)
    if (q[i].size != 0) return false;
  return true;
}

}  // namespace fleetsim
