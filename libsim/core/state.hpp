// The data of one simulation: requests, batch slots, queues, replicas, per-pool state, and the Sim
// that points into a flat workspace; the workspace's layout, and sim_bind, which lays it out and
// resets it. Plain structs: no allocation, exceptions, virtual calls or containers in the core.
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
  double t_first;    // first output token (or result, for non-generative models); < 0 if none yet
  double t_admit;    // first admission into a batch; < 0 if none yet
  double t_queued;   // joined the device queue (after the host stage; = t_arrive without one)
  double t_host;     // its (last) host pre-processing started
  double host_s;     // host pre-processing time (host.hpp)
  double wait_s;     // queue wait before the queue it is in now (disaggregated: its prefill pool's)
  double t_handoff;  // disaggregated: its prefill ended, and the decode pool took it (pulling its KV)
  int32_t prompt;
  int32_t output;
  int32_t generated;  // output tokens emitted before the current prefill of this request; on its way to a
                      // decode pool, the prompt tokens its prefill computed (lost if it is turned away)
  int32_t cached;     // prompt tokens its trace says an earlier request already computed (0: none)
  int16_t cls;        // request class
  int16_t retries;    // times its replica was lost under it
  int8_t in_window;
  int8_t has_prefix;     // starts with its class's shared prefix
  int8_t host_stage;     // HostStage: waiting for or on a host core (host.hpp), or neither
  int8_t kv_in;          // disaggregated: its prompt's KV came from a prefill replica; not yet admitted
  int8_t ttft_noted;     // its first token is in the `ttft` signal's histogram (autoscale.hpp)
  int32_t user;          // a session class's user that sent it (clients.hpp); else unused
  int32_t prefilled_on;  // disaggregated: the prefill replica that computed its prompt
  int32_t trace_row;     // its row of a trace (-1: none)
  int32_t cache_hits;    // leading blocks it holds in its replica's bounded prefix cache
};

// A running sequence (a batch slot of a replica).
struct Seq {
  int32_t req;
  int32_t prev, next;        // admission order; `next` also links the free slots
  int32_t pf_prev, pf_next;  // sequences still in prefill, admission order
  int16_t decoding;
  int16_t residue;        // decode steps s with s % block == residue need a new KV block (block <= 1024)
  int32_t loaded;         // KV tokens it loaded rather than computed (a prefill pool's, a cache tier's)
  int32_t prefill_total;  // tokens this prefill computes (prompt, plus output so far after preemption)
  int32_t prefill_done;
  int32_t chunk;      // prefill tokens scheduled in the step in flight
  int32_t out_left;   // output tokens still to emit, counting the one the prefill emits
  int32_t ctx_extra;  // cached prefix tokens (shared or from its trace) it attends to but does not hold
  int32_t adopted;    // of its own prompt's leading tokens, those its replica's cache took over (cache_adopt)
  int64_t blocks;     // KV blocks held while prefilling (the whole prefill)
  int64_t s0;         // first decode step
  int64_t L0;         // KV tokens of its own before step s0
  int64_t finish;     // last decode step
};

struct Queue {
  int32_t base, cap, head, size;
  int32_t owner;  // the replica whose load it counts in a least-outstanding index (kNone: none)
};

// A closed-loop user's current session (clients.hpp).
struct SessionUser {
  double t_start;   // its first turn was sent
  double t_last;    // its last completed turn's response ended
  int64_t history;  // tokens of the conversation so far (prompts and outputs)
  int64_t held;     // of which the replica below holds (disaggregated: the last prompt only)
  int32_t turn;     // turns completed
  int32_t turns;    // turns the session has
  int32_t replica;  // the replica whose prefix cache holds the conversation (kNone: none)
  int32_t epoch;    // that replica's cold starts then: a restarted replica has lost it
};

enum ReplicaState : int32_t { kOff = 0, kStarting = 1, kReady = 2, kDraining = 3 };

struct Replica {
  // first, what routers and a shared queue's offers read of every replica: one cache line
  double t_next;  // end of the run in flight, a static-batching timer, the end of a cold start, or kInf
  int32_t busy;   // a run (possibly of zero steps: a wake-up) is in flight
  int32_t state;  // ReplicaState
  int32_t pool;
  int32_t queue;
  int32_t S;  // batch slots
  int32_t n_running, n_decode;
  int32_t host_n;   // host jobs here, waiting or on a core
  int32_t batch_n;  // static batching: requests in the batch
  int32_t run_prefill;
  int64_t run_k;
  double run_t0;
  // when the step before the one being formed started (kInf: the engine was idle). An engine that
  // schedules ahead formed the next step then, so only requests queued by then join it.
  double last_start;
  // a shared queue's offer this run has not yet been woken for: its step boundary (kInf: none)
  double wake_at;
  int64_t wake_k;      // the run's steps, cut at that boundary
  int32_t cq_pending;  // on its pool's list of replicas that may need a note (cq_offer)
  int32_t starts;      // cold starts so far (keys its random draws)
  int32_t bs;          // KV block tokens
  int64_t slot_base;   // first slot in the seq and finish-heap arrays
  int64_t res_base;    // first counter in the residue array
  int64_t step;        // index of the next step to start
  // then what a run's start and end read and write, together, so that an event touches few lines
  int32_t run_cpu;  // the run in flight computes on the host CPU (the device idles)
  int32_t run_hot;  // the run in flight is at the throttled clock
  int32_t fb_slot;  // its slot falls back to the CPU after the image update (slowdown.hpp)
  int32_t run_head, run_tail, pf_head, pf_tail, free_head;
  int32_t heap_n;
  int64_t A;  // sum over decoding sequences of (L0 + ctx_extra - s0): context tokens at step s are A + n s
  int64_t free_blocks;
  int64_t pinned_blocks;  // held by cached shared prefixes
  // run in flight (its start, steps and kind are above)
  Line run_line;
  double run_fa, run_fb, run_ba, run_bb;  // FLOPs and bytes of step j: a + b j
  double run_in_share;                    // fraction of the run's time attributed to input tokens
  double run_seqs;                        // sequences in each step of the run
  double run_blocks0, run_blocks_rate;    // allocated KV blocks at j = 0, and growth per step
  int32_t n_decode_class[kMaxClasses];
  double run_class_share[kMaxClasses];     // share of the run's time spent on each class
  double run_class_in_share[kMaxClasses];  // of which on its input tokens (prefill)
  // the rest only where a pool has the mechanism
  int32_t prefix_ready;               // bit c: class c's prefix is cached here
  int32_t prefix_users[kMaxClasses];  // running sequences attending to class c's cached prefix
  // its bounded prefix cache (prefix_cache.hpp): entries and table slots from these in the
  // cache arrays, the eviction list (oldest first), the free entries, entries in use and of them
  // those running requests hold (not evictable), KV blocks held
  int64_t cache_base, tab_base;
  int32_t lru_head, lru_tail, ent_free, cache_n, cache_held;
  int64_t cache_blocks;
  int64_t cpu_base, cpu_tab_base;  // its host-memory tier, likewise
  int32_t cpu_head, cpu_tail, cpu_free, cpu_n;
  double mps_h, mps_g, mps_x,
      mps_y;             // MPS: its step in flight alone: host and device time, compute and traffic (mps.hpp)
  double batch_t_first;  // static batching: when the batch's first request came
  // on a node's first slot, when nodes are tracked: < 0 the node is down; kInf it is up with a
  // replica or kept by a pinned pod; else the time the cluster removes it, empty
  double node_until;
  // an owned replica whose device failed: when a spare or a repaired device reaches it (until
  // then it holds no device a failure could hit)
  double device_at;
  // its cold start in progress: asked for then, its stages from then, keyed by its starts then (a
  // start cut short takes back the stages it never ran: lifecycle.hpp, cut_start)
  double start_asked, start_from;
  int32_t start_no, start_new_node;
  // a node's (or a shared device's) provisioning and image pull end at node_prov_at and node_up_at
  // (set by the start that obtained it, on every replica holding it); a start placed on it before
  // then waits out what is left of them (node_wait_prov_s, node_wait_pull_s: its own stages)
  double node_prov_at, node_up_at;
  double node_wait_prov_s, node_wait_pull_s;
  // thermal throttling (slowdown.hpp)
  double heat;    // temperature proxy: exponentially weighted device-busy fraction
  double heat_t;  // ... as of this time
  // host CPU stage (host.hpp): the jobs waiting for a core, the cores, the next core to finish
  Queue hq;
  int32_t host_busy;  // cores with a job
  int64_t host_base;  // first core in the core arrays
  double host_next;   // when its earliest core finishes (kInf: none busy)
};

// The flat workspace of one simulation.
constexpr int32_t kScaleHistory = 64;
constexpr int32_t kMaxSpares = 64;
// The `ttft` autoscaling signal reads what an HPA reading vLLM's Prometheus histogram would:
// first-token times counted in vLLM's buckets (vllm:time_to_first_token_seconds), over the window
// in kTtftSlices slices, the percentile interpolated within its bucket (histogram_quantile).
constexpr int32_t kTtftSlices = 6;
constexpr int32_t kTtftBuckets = 23;  // 22 upper edges and +Inf

// Upper edge of bucket i < kTtftBuckets - 1, in seconds (vllm-project/vllm@005a810,
// vllm/v1/metrics/loggers.py, histogram_time_to_first_token).
FLEETSIM_HD FLEETSIM_FORCEINLINE double ttft_edge(int32_t i) {
  constexpr double e[kTtftBuckets - 1] = {0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1,  0.25,  0.5,   0.75,
                                          1.0,   2.5,   5.0,  7.5,  10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0};
  return e[i];
}

// The extreme (lowest or highest) of the values recorded over a trailing window, as a monotone
// queue: entries oldest first, each strictly better than the ones before it is dropped, so the
// front is the extreme. Exact while it holds kScaleHistory entries; when more would be needed
// the two oldest merge into the older value at the newer time, which keeps that value longer:
// a stabilization window then errs towards waiting.
struct WindowExtreme {
  int32_t n, head;  // entries [head, head + n) of the ring
  double t[kScaleHistory];
  int32_t v[kScaleHistory];
};

// Per-pool state: replica counts for the time integrals, and the autoscaler's memory.
struct PoolState {
  int32_t first_replica, n_replicas;  // replica slots [first, first + n)
  int32_t first_queue, n_queues;
  int32_t rr_next;
  int32_t n_prov, n_ready, n_starting, n_draining, n_busy;  // provisioned = starting + ready + draining
  int32_t n_busy_serving;                                   // busy and ready or draining
  int32_t n_busy_ready;  // busy and ready: what the autoscaler's busy signal averages (draining ones leave)
  int32_t n_dev_used;    // devices shared by time slicing or MPS clients with a replica provisioned
  int32_t cq_pend_n;     // a shared queue's replicas that may need a note: cq_pend[first_replica ...]
  // its note calendar (calendar.hpp): notes filed, buckets - 1, the day width and its inverse, the
  // day no note lies before, and the searches and days and notes they looked at since the last refit
  int32_t cq_n, cq_mask;
  double cq_w, cq_inv_w;
  int64_t cq_day;
  int32_t cq_finds, cq_work;
  int32_t lo_base, lo_leaves;  // its least-outstanding tree: lo_tree[lo_base, + 2 lo_leaves); 0 leaves: none
  double t_clock;              // integrals are up to here
  double busy_acc;             // busy replica-seconds since the last evaluation
  double arrivals_since;       // arrivals since the last evaluation
  double next_eval, last_eval, last_scale;
  // the stabilization windows' recommendations as monotone queues (autoscale.hpp): the lowest of
  // the scale-up window, the highest of the scale-down window, each in a bounded array
  WindowExtreme up_q, down_q;
  // the `ttft` signal's histogram: slice k counts the first-token times of the completions in
  // window slice ttft_slice[k] (time / (ttft_window_s / kTtftSlices), -1: none yet)
  int64_t ttft_slice[kTtftSlices];
  int32_t ttft_count[kTtftSlices][kTtftBuckets];
  int32_t starts;  // replicas started so far
  int32_t start_head;
  double next_fail;               // the next spot reclaim or hardware failure among the pool's replicas
  int64_t fail_draws;             // random draws for failures so far
  double start_t[kScaleHistory];  // times of the latest starts (for the per-hour cap)
  // the autoscaler's latest changes (rate policies): when, and by how many replicas (+ up, - down)
  int32_t change_n, change_head;
  double change_t[kScaleHistory];
  int32_t change_d[kScaleHistory];
  // owned devices (lifecycle.hpp, await_device): spares on the shelf, and when the devices in
  // repair come back (never more than the spares: a failure without a spare waits for one)
  int32_t shelf, n_repair;
  double repair_t[kMaxSpares];
  // nodes (accounting.hpp): placement groups up, of which empty and kept by a pinned pod, or
  // empty and waiting to be removed; the next removal
  int32_t nodes_up, nodes_pinned_empty, nodes_unneeded;
  double next_node_release;
  // slowdowns: ready or draining replicas in fallback slots; busy replicas on the CPU, throttled
  int32_t n_fb, n_cpu_busy, n_hot_busy;
  // host CPU stage: jobs at the pool's hosts, busy cores (of them, draining replicas'), and their
  // integral (host.hpp)
  int32_t host_jobs, host_busy, host_busy_draining;
  // a decode pool: requests whose KV is on its way here (handoff.hpp), at most its queues' limit
  int32_t in_transit;
  double host_t;         // busy cores are integrated up to here
  double host_busy_acc;  // ready replicas' busy core-seconds since the last autoscaler evaluation
  // the store its replicas share (prefix_cache.hpp): where its arrays start, and its lists
  int32_t rem_base, rem_tab_base;
  int32_t rem_head, rem_tail, rem_free, rem_n;
};

// An entry of the replica event heap: the key is kept in the heap itself, so a sift reads one
// contiguous array instead of a Replica per comparison.
// A replica's place in its pool's note calendar (calendar.hpp): its day and its bucket's list.
struct CalNote {
  int64_t day;
  int32_t next, prev;
};

struct RKey {
  double t;  // = rep[r].t_next
  int32_t r;
  int32_t pad;
};

// An entry of a replica's finish heap, likewise: a decoding slot and its last decode step.
struct FKey {
  int64_t finish;  // = seq[slot].finish
  int32_t slot;
  int32_t pad;
};

struct Sim {
  const SimParams* p;
  Tally* tally;
  PoolState* pool;
  Rng rng;
  Request* req;
  int32_t* req_free;  // freed request slots (a stack); slots never used lie above req_hwm
  int32_t req_free_n;
  int32_t req_hwm, req_cap;  // slots [0, req_hwm) have held a request; req_cap: all there are
  int32_t* qbuf;
  Queue* q;
  int32_t nq;
  Replica* rep;
  Seq* seq;
  FKey* fheap;    // per replica (from slot_base): its decoding slots by finish step
  int32_t* fpos;  // per slot: its position in the finish heap while decoding
  int32_t* rescnt;
  RKey* rheap;  // replicas by (t_next, index), the keys beside the indices
  int32_t* rheap_pos;
  // a shared queue's notes (continuous.hpp): per replica, its place in its pool's calendar, whose
  // buckets are cq_bucket[4 first_replica, ...) (calendar.hpp); and the replicas to look at
  CalNote* cq_note;
  int32_t* cq_bucket;
  int32_t* cq_pend;
  // least-outstanding trees (containers.hpp): nodes of every indexed pool; each replica's key
  int32_t* lo_tree;
  int32_t* lo_key;
  int32_t n_replicas;
  // host CPU stage (host.hpp); unused unless host_on
  int32_t host_on;     // some pool has a host stage
  double* core_free;   // per core: when its job ends
  double* core_start;  // per core: when its job started
  int32_t* core_job;   // per core: its request (kNone: idle)
  int32_t* hheap;      // replicas by host_next, as rheap by t_next
  int32_t* hheap_pos;
  // disaggregated prefill: requests whose KV is on its way to a decode pool, by arrival time
  // (the key's r is the request); at most one per request slot
  RKey* xheap;
  int32_t xheap_n;
  int32_t handoff_on;  // some pool hands off
  // bounded prefix caches (prefix_cache.hpp), per replica slices
  int32_t *cache_key, *cache_prev, *cache_next, *cache_ref, *cache_tab;
  int32_t *cpu_key, *cpu_prev, *cpu_next, *cpu_tab;
  int32_t *rem_key, *rem_prev, *rem_next, *rem_tab;  // each pool's shared store, from its rem_base
  double W0, W1;
  double t_clock;
  int64_t events;  // processed so far
  // SettleRule counts, and the first term that passed its allowance (kNone: none yet)
  int64_t settle_seen[kMaxSettleTerms];
  int32_t settled;
  double settled_t;  // the event that passed it
  int64_t in_system[kMaxClasses], waiting[kMaxClasses];
  ArrivalCursor arr[kMaxClasses];
  double next_arrival[kMaxClasses];
  int32_t class_priority[kMaxClasses];
  int32_t prioritized;      // classes differ in priority
  int32_t goodput_classes;  // bit c: class c has a goodput bound
  // closed-loop users (clients.hpp): per class, a min-heap of pending send times
  int32_t closed_classes;   // bit c: class c is closed-loop
  int32_t session_classes;  // bit c: class c's users run sessions
  double* client_heap;
  // session classes: the user of each heap entry, and each user's session (indexed as the heap)
  int32_t* client_user;
  SessionUser* session_user;
  uint64_t sessions_started[kMaxClasses];  // keys the next session's turn count
  int32_t client_base[kMaxClasses], client_n[kMaxClasses];
  double client_stop[kMaxClasses];
  double client_t[kMaxClasses];         // the thinking population is integrated up to here
  uint64_t client_thinks[kMaxClasses];  // think times drawn so far (keys the next draw)
  // sessions read from a trace (trace_sessions.hpp): each row's state, from turn_base[c] (bit 0:
  // it ended; bit 1: it is held for its parent's answer; bits 2 and up: the replica that served it
  // + 1, 0 for none), and the held turns whose answer came, by send time, from held_base[c]
  int32_t trace_session_classes;  // bit c: class c's trace is replayed as sessions
  int32_t* turn_state;
  RKey* held;
  int64_t turn_base[kMaxClasses];
  int32_t held_base[kMaxClasses], held_n[kMaxClasses];
};

// Quotient and remainder of token and step counts: a 32-bit divide when both fit (a 64-bit one
// costs several times as much on a CPU), with the same result; negative or large values take the
// 64-bit one.
FLEETSIM_HD FLEETSIM_FORCEINLINE int64_t div_count(int64_t a, int64_t b) {
  return ((uint64_t(a) | uint64_t(b)) >> 32) == 0 ? int64_t(uint32_t(a) / uint32_t(b)) : a / b;
}
FLEETSIM_HD FLEETSIM_FORCEINLINE int64_t mod_count(int64_t a, int64_t b) {
  return ((uint64_t(a) | uint64_t(b)) >> 32) == 0 ? int64_t(uint32_t(a) % uint32_t(b)) : a % b;
}

FLEETSIM_HD FLEETSIM_FORCEINLINE int64_t ceil_div(int64_t a, int64_t b) { return div_count(a + b - 1, b); }

FLEETSIM_HD FLEETSIM_FORCEINLINE int32_t pool_slots(const PoolParams& P) {
  return P.batching == Batching::continuous ? P.max_num_seqs : P.max_batch;
}
// A least-outstanding tree's leaves: the replica slots, rounded up to a power of two.
FLEETSIM_HD FLEETSIM_FORCEINLINE int32_t lo_leaves(int32_t replicas) {
  int32_t n = 1;
  while (n < replicas) n *= 2;
  return n;
}
// The key of a replica that is not ready: no least-outstanding pick lands on it.
constexpr int32_t kLoOut = 2147483647;
FLEETSIM_HD FLEETSIM_FORCEINLINE int32_t pool_queues(const PoolParams& P) {
  return P.router == Router::central_queue ? 1 : P.max_replicas;
}
// A queue holds at most queue_limit fresh requests plus, per replica it feeds, as many preempted
// ones as that replica has slots (running + preempted-waiting <= slots, see docs/model.md).
FLEETSIM_HD FLEETSIM_FORCEINLINE int32_t pool_queue_cap(const PoolParams& P) {
  return P.queue_limit + (P.router == Router::central_queue ? P.max_replicas : 1) * pool_slots(P);
}
// Requests whose KV is on its way to decode pool D at once (handoff.hpp): as many as its queues
// hold fresh; each holds a request slot (workspace.hpp).
FLEETSIM_HD FLEETSIM_FORCEINLINE int64_t transit_cap(const PoolParams& D) {
  return int64_t(D.queue_limit) * pool_queues(D);
}

}  // namespace fleetsim
