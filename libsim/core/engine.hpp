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
  int32_t in_window;
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
  int64_t L0;                // KV tokens before step s0
  int64_t finish;            // last decode step
};

struct Queue {
  int32_t base, cap, head, size;
};

struct Replica {
  double t_next;  // end of the run in flight, a static-batching timer, or kInf
  int32_t busy;   // a run (possibly of zero steps: a wake-up) is in flight
  int32_t queue;
  int64_t step;   // index of the next step to start
  int32_t n_running, n_decode;
  int32_t run_head, run_tail, pf_head, pf_tail, free_head;
  int32_t heap_n;
  int64_t A;  // sum over decoding sequences of (L0 - s0): context tokens at step s are A + n s
  int64_t free_blocks;
  // run in flight
  double run_t0;
  int64_t run_k;
  int32_t run_prefill;
  Line run_line;
  double run_fa, run_fb, run_ba, run_bb;  // FLOPs and bytes of step j: a + b j
  double run_in_share;                    // fraction of the run's time attributed to input tokens
  double run_seqs;                        // sequences in each step of the run
  double run_blocks0, run_blocks_rate;    // allocated KV blocks at j = 0, and growth per step
  // static batching
  int32_t batch_n;
  double batch_t_first;
};

// The flat workspace of one simulation.
struct Sim {
  const SimParams* p;
  Tally* tally;
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
  int32_t S;   // batch slots per replica
  int32_t bs;  // KV block tokens
  double W0, W1;
  double t_clock;
  int64_t in_system, waiting;
  int32_t rr_next;
  ArrivalCursor arr;
};

// ---------------------------------------------------------------- workspace layout

struct WorkspaceLayout {
  uint64_t req, req_free, qbuf, q, rep, seq, fheap, rescnt, rheap, rheap_pos, total;
  int32_t S, nq, req_cap, qcap;
};

FLEETSIM_HD inline uint64_t align_up(uint64_t x) { return (x + 15) & ~uint64_t(15); }

FLEETSIM_HD inline WorkspaceLayout workspace_layout(const SimParams& p) {
  WorkspaceLayout l;
  l.S = p.batching == Batching::continuous ? p.max_num_seqs : p.max_batch;
  l.nq = p.router == Router::central_queue ? 1 : p.replicas;
  const int32_t feeders = p.router == Router::central_queue ? p.replicas : 1;
  // fresh waiting <= queue_limit; running + preempted-waiting <= slots (see docs/model.md)
  l.qcap = p.queue_limit + feeders * l.S;
  l.req_cap = l.nq * p.queue_limit + p.replicas * l.S;
  uint64_t off = 0;
  l.req = off;       off = align_up(off + sizeof(Request) * uint64_t(l.req_cap));
  l.req_free = off;  off = align_up(off + sizeof(int32_t) * uint64_t(l.req_cap));
  l.qbuf = off;      off = align_up(off + sizeof(int32_t) * uint64_t(l.nq) * uint64_t(l.qcap));
  l.q = off;         off = align_up(off + sizeof(Queue) * uint64_t(l.nq));
  l.rep = off;       off = align_up(off + sizeof(Replica) * uint64_t(p.replicas));
  l.seq = off;       off = align_up(off + sizeof(Seq) * uint64_t(p.replicas) * uint64_t(l.S));
  l.fheap = off;     off = align_up(off + sizeof(int32_t) * uint64_t(p.replicas) * uint64_t(l.S));
  l.rescnt = off;    off = align_up(off + sizeof(int32_t) * uint64_t(p.replicas) * uint64_t(p.kv_block_tokens));
  l.rheap = off;     off = align_up(off + sizeof(int32_t) * uint64_t(p.replicas));
  l.rheap_pos = off; off = align_up(off + sizeof(int32_t) * uint64_t(p.replicas));
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
  const int32_t n = s.p->replicas;
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

// Per-replica finish heap of decoding slots, ordered by (finish step, slot).
FLEETSIM_HD FLEETSIM_FORCEINLINE Seq& slot(Sim& s, int32_t r, int32_t i) { return s.seq[r * s.S + i]; }
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
  int32_t* h = s.fheap + r * s.S;
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
  int32_t* h = s.fheap + r * s.S;
  const int32_t i = s.rep[r].heap_n++;
  h[i] = sl;
  slot(s, r, sl).heap_pos = i;
  fh_fix(s, r, i);
}
FLEETSIM_HD inline void fh_remove(Sim& s, int32_t r, int32_t sl) {
  int32_t* h = s.fheap + r * s.S;
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

// Integrate the request counts up to time t (clipped to the window).
FLEETSIM_HD inline void advance_clock(Sim& s, double t) {
  const double a = max_of(s.t_clock, s.W0), b = min_of(t, s.W1);
  if (b > a) {
    s.tally->in_system_s += double(s.in_system) * (b - a);
    s.tally->queue_len_s += double(s.waiting) * (b - a);
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
  Tally& T = *s.tally;
  T.busy_s += overlap;
  T.input_busy_s += overlap * R.run_in_share;
  T.flops += f * arith_sum(R.run_fa, R.run_fb, 0, k);
  T.bytes += f * arith_sum(R.run_ba, R.run_bb, 0, k);
  T.seq_steps += f * double(k) * R.run_seqs;
  T.steps += int64_t(dm::lround(f * double(k)));
  T.kv_block_s += overlap * (R.run_blocks0 + 0.5 * R.run_blocks_rate * double(k));
}

FLEETSIM_HD inline void record_done(Sim& s, int32_t ri, double t) {
  Request& q = s.req[ri];
  advance_clock(s, t);
  s.in_system--;
  if (q.in_window) {
    Tally& T = *s.tally;
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

// Step time of a step with the given work.
FLEETSIM_HD inline double step_time(const SimParams& p, double flops, double bytes, double prefill_tokens,
                                    double decode_seqs, double decode_ctx) {
  if (p.perf.kind == PerfKind::roofline)
    return p.perf.overhead_s + max_of(flops / p.perf.flops_per_s, bytes / p.perf.bytes_per_s);
  return p.perf.overhead_s + p.perf.per_prefill_token_s * prefill_tokens + p.perf.per_decode_seq_s * decode_seqs +
         p.perf.per_context_token_s * decode_ctx;
}

// Decode-only run of n sequences whose context before step j is T0 + n j.
FLEETSIM_HD inline void set_decode_run(const SimParams& p, Replica& R, double n, double T0) {
  const WorkParams& w = p.work;
  R.run_fa = w.matmul_flops_per_token * n + w.attn_flops_per_pair * (T0 + n);
  R.run_fb = w.attn_flops_per_pair * n;
  R.run_ba = w.weight_bytes + w.kv_bytes_per_token * (T0 + n);
  R.run_bb = w.kv_bytes_per_token * n;
  Line l;
  l.o = p.perf.overhead_s;
  if (p.perf.kind == PerfKind::roofline) {
    l.a1 = R.run_fa / p.perf.flops_per_s;
    l.b1 = R.run_fb / p.perf.flops_per_s;
    l.a2 = R.run_ba / p.perf.bytes_per_s;
    l.b2 = R.run_bb / p.perf.bytes_per_s;
  } else {
    l.a1 = p.perf.per_decode_seq_s * n + p.perf.per_context_token_s * (T0 + n);
    l.b1 = p.perf.per_context_token_s * n;
    l.a2 = 0.0;
    l.b2 = 0.0;
  }
  R.run_line = l;
  R.run_in_share = 0.0;
  R.run_seqs = n;
}

// A single step with prefill work: FLOPs and bytes of its prefill and decode parts.
FLEETSIM_HD inline void set_single_step(const SimParams& p, Replica& R, double ptoks, double ppairs, double pread,
                                        double n, double T0, double seqs) {
  const WorkParams& w = p.work;
  const double f_in = w.matmul_flops_per_token * ptoks + w.attn_flops_per_pair * ppairs;
  const double f_out = n > 0.0 ? w.matmul_flops_per_token * n + w.attn_flops_per_pair * (T0 + n) : 0.0;
  const double bytes = w.weight_bytes + w.kv_bytes_per_token * (pread + ptoks + (n > 0.0 ? T0 + n : 0.0));
  const double dt = step_time(p, f_in + f_out, bytes, ptoks, n, n > 0.0 ? T0 + n : 0.0);
  R.run_fa = f_in + f_out;
  R.run_fb = 0.0;
  R.run_ba = bytes;
  R.run_bb = 0.0;
  Line l;
  l.o = dt;
  l.a1 = l.b1 = l.a2 = l.b2 = 0.0;
  R.run_line = l;
  if (p.perf.kind == PerfKind::roofline) {
    R.run_in_share = f_in / (f_in + f_out);
  } else {
    const double ci = p.perf.per_prefill_token_s * ptoks;
    const double co = p.perf.per_decode_seq_s * n + p.perf.per_context_token_s * (n > 0.0 ? T0 + n : 0.0);
    R.run_in_share = ci + co > 0.0 ? ci / (ci + co) : ptoks / (ptoks + n);
  }
  R.run_seqs = seqs;
}

// ---------------------------------------------------------------- KV blocks (continuous batching)

// Blocks the decoding sequences of replica r allocate over steps [st, st + k).
FLEETSIM_HD inline int64_t blocks_needed(const Sim& s, int32_t r, int64_t st, int64_t k) {
  if (k <= 0) return 0;
  const int32_t* cnt = s.rescnt + r * s.bs;
  const int64_t n = s.rep[r].n_decode;
  int64_t total = (k / s.bs) * n;
  const int64_t rem = k % s.bs;
  for (int64_t j = 0; j < rem; ++j) total += cnt[(st + (k - rem) + j) % s.bs];
  return total;
}

// Number of steps from st on that the free blocks cover (kInf-like large if no decoding).
FLEETSIM_HD inline int64_t steps_covered(const Sim& s, int32_t r, int64_t st, int64_t free_blocks) {
  const int64_t n = s.rep[r].n_decode;
  if (n == 0) return int64_t(1) << 60;
  const int32_t* cnt = s.rescnt + r * s.bs;
  const int64_t cycles = free_blocks / n;
  int64_t left = free_blocks - cycles * n;
  int64_t j = cycles * s.bs;
  for (int32_t i = 0; i < s.bs; ++i) {
    const int64_t need = cnt[(st + j) % s.bs];
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
  list_remove_run(s, r, sl);
  slot(s, r, sl).next = R.free_head;
  R.free_head = sl;
  R.n_running--;
}

FLEETSIM_HD inline void stop_decoding(Sim& s, int32_t r, int32_t sl) {
  Replica& R = s.rep[r];
  Seq& x = slot(s, r, sl);
  fh_remove(s, r, sl);
  s.rescnt[r * s.bs + x.residue]--;
  R.A -= x.L0 - x.s0;
  R.n_decode--;
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
    R.free_blocks += ceil_div(x.L0 + (st - x.s0), s.bs);
    needed_now = (x.residue == int32_t(st % s.bs)) ? 1 : 0;
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
  s.waiting++;
  if (q.in_window) s.tally->preempted++;
  return needed_now;
}

FLEETSIM_HD inline void finish_decoding_at(Sim& s, int32_t r, int64_t last_step, double t) {
  Replica& R = s.rep[r];
  int32_t* h = s.fheap + r * s.S;
  while (R.heap_n > 0 && slot(s, r, h[0]).finish <= last_step) {
    const int32_t sl = h[0];
    Seq& x = slot(s, r, sl);
    R.free_blocks += ceil_div(x.L0 + (x.finish - x.s0) + 1, s.bs);
    const int32_t ri = x.req;
    stop_decoding(s, r, sl);
    release_slot(s, r, sl);
    record_done(s, ri, t);
  }
}

// Apply the run in flight (it ended at t).
FLEETSIM_HD inline void cont_finish_run(Sim& s, int32_t r, double t) {
  Replica& R = s.rep[r];
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
          if (!s.p->generative || x.out_left <= 1) {
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
            x.residue = int32_t((((x.s0 - x.L0) % s.bs) + s.bs) % s.bs);
            // blocks for the prompt were taken at admission and are now tracked by length
            s.rescnt[r * s.bs + x.residue]++;
            R.A += x.L0 - x.s0;
            R.n_decode++;
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

// Start the next step of replica r at time t: allocate, admit, and plan the run.
FLEETSIM_HD inline void cont_start_step(Sim& s, int32_t r, double t) {
  const SimParams& p = *s.p;
  Replica& R = s.rep[r];
  Queue& Q = s.q[R.queue];
  const int64_t st = R.step;
  advance_clock(s, t);

  // 1. a KV slot for every decoding sequence, preempting the newest while blocks are short
  int64_t need = R.n_decode > 0 ? s.rescnt[r * s.bs + int32_t(st % s.bs)] : 0;
  int32_t changed = 0;  // queue head changed: preemptions pushed to it, or admissions took from it
  while (need > R.free_blocks) {
    need -= preempt_newest(s, r, st);
    changed = 1;
  }
  R.free_blocks -= need;

  // 2. prefill chunks: running prefills first, then admissions, within the token budget
  int64_t budget = int64_t(p.max_batched_tokens) - R.n_decode;
  double ptoks = 0.0, ppairs = 0.0, pread = 0.0, pseqs = 0.0;
  for (int32_t sl = R.pf_head; sl != kNone; sl = slot(s, r, sl).pf_next) {
    Seq& x = slot(s, r, sl);
    const int64_t c = min_of<int64_t>(budget, x.prefill_total - x.prefill_done);
    x.chunk = int32_t(c);
    if (c <= 0) continue;
    budget -= c;
    pseqs += 1.0;
    const double c0 = x.prefill_done, cd = double(c);
    ptoks += cd;
    ppairs += cd * c0 + cd * (cd + 1.0) * 0.5;
    pread += c0;
  }
  while (budget > 0 && R.n_running < s.S && Q.size > 0) {
    const int32_t ri = q_at(s, Q, 0);
    Request& q = s.req[ri];
    const int32_t total = q.prompt + (p.generative ? q.generated : 0);
    const int64_t blocks = ceil_div(total, s.bs);
    if (blocks > R.free_blocks - p.kv_watermark_blocks) break;
    q_pop_front(s, Q);
    s.waiting--;
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
    const double cd = double(c);
    ptoks += cd;
    ppairs += cd * (cd + 1.0) * 0.5;
  }

  // With a shared queue, work this replica left behind (or sent back) is offered to the others.
  if (changed && p.router == Router::central_queue && Q.size > 0)
    for (int32_t o = 0; o < p.replicas; ++o)
      if (o != r) cont_kick(s, o, t);

  if (R.n_running == 0) {  // nothing to do: idle until work arrives
    R.busy = 0;
    R.run_k = 0;
    set_next(s, r, kInf);
    return;
  }

  // 3. plan the run
  const double n = double(R.n_decode);
  const double T0 = double(R.A) + n * double(st);
  const int64_t used = p.kv_total_blocks - R.free_blocks;
  R.run_blocks0 = double(used);
  R.busy = 1;
  R.run_t0 = t;
  if (ptoks > 0.0) {
    set_single_step(p, R, ptoks, ppairs, pread, n, T0, pseqs + n);
    R.run_prefill = 1;
    R.run_k = 1;
    R.run_blocks_rate = 0.0;
  } else {
    set_decode_run(p, R, n, T0);
    R.run_prefill = 0;
    const int64_t k_fin = slot(s, r, s.fheap[r * s.S]).finish - st + 1;
    const int64_t k_blk = 1 + steps_covered(s, r, st + 1, R.free_blocks);
    R.run_k = min_of(k_fin, k_blk);
    if (p.max_run_steps > 0 && R.run_k > p.max_run_steps) R.run_k = p.max_run_steps;
    R.run_blocks_rate = n / double(s.bs);
  }
  set_next(s, r, t + line_sum(R.run_line, R.run_k));
}

// New work is waiting for replica r: wake it, or end its decode run at the next step boundary.
FLEETSIM_HD inline void cont_kick(Sim& s, int32_t r, double t) {
  Replica& R = s.rep[r];
  if (!R.busy) {
    R.busy = 1;
    R.run_k = 0;
    R.run_t0 = t;
    set_next(s, r, t);
    return;
  }
  if (R.run_prefill || R.run_k <= 1 || R.n_running >= s.S) return;
  const int64_t j = line_steps_until(R.run_line, R.run_k, t - R.run_t0);
  if (j < R.run_k) {
    R.run_k = j;
    set_next(s, r, max_of(t, R.run_t0 + line_sum(R.run_line, j)));
  }
}

// ---------------------------------------------------------------- static batching

FLEETSIM_HD inline void static_try_start(Sim& s, int32_t r, double t) {
  const SimParams& p = *s.p;
  Replica& R = s.rep[r];
  if (R.busy) return;
  Queue& Q = s.q[R.queue];
  if (Q.size == 0) {
    if (R.t_next != kInf) set_next(s, r, kInf);
    return;
  }
  const double deadline = s.req[q_at(s, Q, 0)].t_arrive + p.batch_window_s;
  if (Q.size < p.max_batch && t < deadline) {
    if (R.t_next != deadline) set_next(s, r, deadline);
    return;
  }
  // form the batch: FCFS while the padded batch fits in the KV cache
  const int64_t cap = p.kv_total_blocks * s.bs;
  int64_t n = 0, pmax = 0, omax = 0;
  while (n < p.max_batch && Q.size > 0) {
    const Request& q = s.req[q_at(s, Q, 0)];
    const int64_t np = max_of<int64_t>(pmax, q.prompt), no = max_of<int64_t>(omax, q.output);
    if ((n + 1) * (np + no) > cap) break;
    const int32_t ri = q_pop_front(s, Q);
    advance_clock(s, t);
    s.waiting--;
    s.req[ri].t_admit = t;
    slot(s, r, int32_t(n)).req = ri;
    pmax = np;
    omax = no;
    ++n;
  }
  const double dn = double(n), dp = double(pmax);
  // prefill of the padded batch
  set_single_step(p, R, dn * dp, dn * dp * (dp + 1.0) * 0.5, 0.0, 0.0, 0.0, dn);
  R.run_blocks0 = double(ceil_div(n * (pmax + omax), s.bs));
  R.run_blocks_rate = 0.0;
  const double t_first = t + R.run_line.o;
  account_run(s, R, 1, t, t_first);
  double t_end = t_first;
  if (p.generative && omax >= 2) {
    set_decode_run(p, R, dn, dn * dp);
    const int64_t k = omax - 1;
    t_end = t_first + line_sum(R.run_line, k);
    account_run(s, R, k, t_first, t_end);
  }
  R.batch_n = int32_t(n);
  R.batch_t_first = t_first;
  R.busy = 1;
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
  R.busy = 0;
  set_next(s, r, kInf);
}

// ---------------------------------------------------------------- arrivals and routing

FLEETSIM_HD inline int32_t outstanding(const Sim& s, int32_t r) {
  const Replica& R = s.rep[r];
  const int32_t running = s.p->batching == Batching::continuous ? R.n_running : R.batch_n;
  return s.q[R.queue].size + running;
}

FLEETSIM_HD inline void handle_arrival(Sim& s, double t) {
  const SimParams& p = *s.p;
  Tally& T = *s.tally;
  const uint64_t idx = s.arr.index++;
  int64_t prompt, output;
  if (p.arrivals.kind == ArrivalKind::trace) {
    prompt = p.arrivals.trace_prompt[idx];
    output = p.arrivals.trace_output[idx];
  } else {
    prompt = sample_length(p.prompt, s.rng, Stream::prompt, idx);
    output = sample_length(p.output, s.rng, Stream::output, idx);
  }
  if (prompt < 1) prompt = 1;
  if (p.generative) {
    if (prompt > p.max_context - 1) prompt = p.max_context - 1;
    if (output < 1) output = 1;
    if (output > p.max_context - prompt) output = p.max_context - prompt;
  } else {
    if (prompt > p.max_context) prompt = p.max_context;
    output = 0;
  }
  const bool in_window = t >= s.W0;
  if (in_window) T.arrived++;

  // a request that cannot fit in KV even alone
  bool too_long;
  if (p.batching == Batching::continuous) {
    const int64_t kv_tokens = p.generative ? prompt + output - 1 : prompt;
    too_long = ceil_div(kv_tokens, s.bs) > p.kv_total_blocks - p.kv_watermark_blocks;
  } else {
    too_long = prompt + output > p.kv_total_blocks * s.bs;
  }
  if (too_long) {
    if (in_window) T.rejected_too_long++;
    return;
  }

  int32_t target = 0;  // queue index
  if (p.router == Router::round_robin) {
    target = s.rr_next;
    s.rr_next = s.rr_next + 1 == p.replicas ? 0 : s.rr_next + 1;
  } else if (p.router == Router::least_outstanding) {
    int32_t best = outstanding(s, 0);
    for (int32_t r = 1; r < p.replicas; ++r) {
      const int32_t o = outstanding(s, r);
      if (o < best) { best = o; target = r; }
    }
  }
  Queue& Q = s.q[target];
  if (Q.size >= p.queue_limit || s.req_free_n == 0) {
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
  const bool was_empty = Q.size == 0;
  advance_clock(s, t);
  q_push_back(s, Q, ri);
  s.waiting++;
  s.in_system++;

  if (p.batching == Batching::continuous) {
    if (p.router != Router::central_queue) {
      if (was_empty || !s.rep[target].busy) cont_kick(s, target, t);
    } else if (was_empty) {
      int32_t idle = kNone;
      for (int32_t r = 0; r < p.replicas; ++r)
        if (!s.rep[r].busy) { idle = r; break; }
      if (idle != kNone) {
        cont_kick(s, idle, t);
      } else {
        for (int32_t r = 0; r < p.replicas; ++r) cont_kick(s, r, t);
      }
    }
  } else {
    if (p.router != Router::central_queue) {
      static_try_start(s, target, t);
    } else {
      for (int32_t r = 0; r < p.replicas; ++r) static_try_start(s, r, t);
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
  s.S = l.S;
  s.bs = p.kv_block_tokens;
  s.nq = l.nq;
  s.W0 = p.warmup_s;
  s.W1 = p.duration_s;
  s.t_clock = 0.0;
  s.in_system = 0;
  s.waiting = 0;
  s.rr_next = 0;
  s.req_free_n = l.req_cap;
  for (int32_t i = 0; i < l.req_cap; ++i) s.req_free[i] = l.req_cap - 1 - i;
  for (int32_t i = 0; i < l.nq; ++i) {
    s.q[i].base = i * l.qcap;
    s.q[i].cap = l.qcap;
    s.q[i].head = 0;
    s.q[i].size = 0;
  }
  for (int32_t r = 0; r < p.replicas; ++r) {
    Replica& R = s.rep[r];
    R.t_next = kInf;
    R.busy = 0;
    R.queue = p.router == Router::central_queue ? 0 : r;
    R.step = 0;
    R.n_running = R.n_decode = 0;
    R.run_head = R.run_tail = R.pf_head = R.pf_tail = kNone;
    R.free_head = 0;
    for (int32_t i = 0; i < l.S; ++i) {
      Seq& x = slot(s, r, i);
      x.next = i + 1 < l.S ? i + 1 : kNone;
      x.heap_pos = kNone;
      x.decoding = 0;
      x.chunk = 0;
    }
    R.heap_n = 0;
    R.A = 0;
    R.free_blocks = p.kv_total_blocks;
    R.run_t0 = 0.0;
    R.run_k = 0;
    R.run_prefill = 0;
    R.batch_n = 0;
    R.batch_t_first = 0.0;
    for (int32_t i = 0; i < p.kv_block_tokens; ++i) s.rescnt[r * p.kv_block_tokens + i] = 0;
    s.rheap[r] = r;
    s.rheap_pos[r] = r;
  }
  s.arr.candidate = 0;
  s.arr.index = 0;
  s.arr.next_t = 0.0;
  return s;
}

// Run one simulation to completion (arrivals stop at duration_s; requests in flight drain).
FLEETSIM_HD inline void simulate(const SimParams& p, uint32_t replication, uint8_t* workspace, Tally& tally) {
  tally_clear(tally);
  Sim s = sim_bind(p, replication, workspace, &tally);
  tally.window_s = p.duration_s - p.warmup_s;
  double ta = next_arrival(p.arrivals, s.rng, s.arr, 0.0, p.duration_s);
  int64_t events = 0;
  for (;;) {
    const int32_t r = s.rheap[0];
    const double tr = s.rep[r].t_next;
    if (tr >= kInf && ta >= kInf) break;
    if (++events > p.max_events) {
      tally.status = int32_t(SimStatus::event_limit);
      break;
    }
    if (tr <= ta) {
      if (p.batching == Batching::continuous) {
        cont_finish_run(s, r, tr);
        cont_start_step(s, r, tr);
      } else if (s.rep[r].busy) {
        static_finish(s, r, tr);
        static_try_start(s, r, tr);
        if (p.router == Router::central_queue)
          for (int32_t o = 0; o < p.replicas; ++o) static_try_start(s, o, tr);
      } else {
        static_try_start(s, r, tr);
      }
    } else {
      handle_arrival(s, ta);
      ta = next_arrival(p.arrivals, s.rng, s.arr, ta, p.duration_s);
    }
  }
  advance_clock(s, p.duration_s);
  tally.events = events;
  tally.unfinished = s.in_system;
}

// After a simulation: every replica empty, every KV block back, every queue empty.
FLEETSIM_HD inline bool sim_drained(const SimParams& p, uint8_t* base) {
  const WorkspaceLayout l = workspace_layout(p);
  const Replica* rep = reinterpret_cast<const Replica*>(base + l.rep);
  const Queue* q = reinterpret_cast<const Queue*>(base + l.q);
  for (int32_t r = 0; r < p.replicas; ++r) {
    if (rep[r].n_running != 0 || rep[r].n_decode != 0 || rep[r].heap_n != 0) return false;
    if (p.batching == Batching::continuous && rep[r].free_blocks != p.kv_total_blocks) return false;
  }
  for (int32_t i = 0; i < l.nq; ++i)
    if (q[i].size != 0) return false;
  return true;
}

}  // namespace fleetsim
