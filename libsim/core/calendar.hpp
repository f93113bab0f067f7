// A shared queue's notes (continuous.hpp) as a calendar queue: each busy replica's next step
// boundary, wake_at, filed under its day, floor(wake_at / width), in one of a pool's buckets (a
// power of two, at least twice its replicas, day modulo their count). The earliest note is found
// from a cursor day no note lies before; a note moves in O(1), where a binary heap sifts through
// log2 n levels. With many replicas a note moves at almost every step boundary between two
// arrivals, so the sift was what grew with the fleet.
//
// The order is exact, (wake_at, index) as a heap orders them: the day is monotone in the time
// (a product by a positive constant, rounded, then truncated), so the earliest day holds the
// earliest note, and within it every note is compared. The width only decides how many days and
// notes a search looks at; it is refitted to the notes' spread when searches look at too many.
// A pool of kCalScan replicas or fewer files nothing: one pass over them is cheaper.
#pragma once
#include "state.hpp"

namespace fleetsim {

// A pool's buckets start at 4 × its first replica: 2n rounded up to a power of two is below 4n.
FLEETSIM_HD FLEETSIM_FORCEINLINE int32_t* cal_buckets(Sim& s, const PoolState& ps) {
  return s.cq_bucket + 4 * int64_t(ps.first_replica);
}
// Pools of up to kCalScan replicas have no buckets: their notes are found by one pass.
constexpr int32_t kCalScan = 8;
FLEETSIM_HD FLEETSIM_FORCEINLINE int32_t cal_bucket_count(int32_t replicas) {
  if (replicas <= kCalScan) return 1;
  int32_t nb = 2;
  while (nb < 2 * replicas) nb *= 2;
  return nb;
}
// (held below int64's range, which keeps it monotone: a held day only holds more notes)
FLEETSIM_HD FLEETSIM_FORCEINLINE int64_t cal_day(const PoolState& ps, double t) {
  const double d = t * ps.cq_inv_w;
  return d < 4e18 ? int64_t(d) : int64_t(4e18);
}
FLEETSIM_HD FLEETSIM_FORCEINLINE bool cal_less(const Sim& s, int32_t a, int32_t b) {
  const double ta = s.rep[a].wake_at, tb = s.rep[b].wake_at;
  return ta < tb || (ta == tb && a < b);
}

FLEETSIM_HD inline void cal_link(Sim& s, PoolState& ps, int32_t r) {
  CalNote& e = s.cq_note[r];
  e.day = cal_day(ps, s.rep[r].wake_at);
  int32_t* head = cal_buckets(s, ps) + (e.day & ps.cq_mask);
  e.prev = kNone;
  e.next = *head;
  if (*head != kNone) s.cq_note[*head].prev = r;
  *head = r;
  if (ps.cq_n++ == 0 || e.day < ps.cq_day) ps.cq_day = e.day;
}
FLEETSIM_HD inline void cal_unlink(Sim& s, PoolState& ps, int32_t r) {
  const CalNote& e = s.cq_note[r];
  if (e.prev != kNone)
    s.cq_note[e.prev].next = e.next;
  else
    cal_buckets(s, ps)[e.day & ps.cq_mask] = e.next;
  if (e.next != kNone) s.cq_note[e.next].prev = e.prev;
  ps.cq_n--;
}

// Refile every note under a width fitted to their spread: about one note a day, the notes within
// one lap of the buckets.
FLEETSIM_HD inline void cal_refit(Sim& s, PoolState& ps) {
  const int32_t r0 = ps.first_replica, r1 = ps.first_replica + ps.n_replicas;
  double lo = kInf, hi = -kInf;
  for (int32_t r = r0; r < r1; ++r) {
    const double w = s.rep[r].wake_at;
    if (w < kInf) {
      lo = min_of(lo, w);
      hi = max_of(hi, w);
    }
  }
  ps.cq_finds = ps.cq_work = 0;
  if (!(hi > lo)) return;
  double width = (hi - lo) / double(ps.cq_n);
  width = min_of(max_of(width, 1e-7), 1e4);
  if (width == ps.cq_w) return;
  ps.cq_w = width;
  ps.cq_inv_w = 1.0 / width;
  int32_t* head = cal_buckets(s, ps);
  for (int32_t b = 0; b <= ps.cq_mask; ++b) head[b] = kNone;
  ps.cq_n = 0;
  for (int32_t r = r0; r < r1; ++r)
    if (s.rep[r].wake_at < kInf) cal_link(s, ps, r);
}

// Replica r's note becomes wake_at = at (kInf: none). A pool without buckets (a few replicas,
// where one pass over them is cheaper than any filing) only counts its notes.
FLEETSIM_HD inline void cal_set(Sim& s, PoolState& ps, int32_t r, double at) {
  if (ps.cq_mask == 0) {
    ps.cq_n += (at < kInf) - (s.rep[r].wake_at < kInf);
    s.rep[r].wake_at = at;
    return;
  }
  if (s.rep[r].wake_at < kInf) cal_unlink(s, ps, r);
  s.rep[r].wake_at = at;
  if (at < kInf) cal_link(s, ps, r);
}

// Take every note before t out of the calendar, in one pass over the days from the cursor to
// t's (a lap at most), and chain them through their `next` (kNone ends it). A note taken has no
// time (wake_at = kInf) until it is noted again. Afterwards no note lies before t's day.
FLEETSIM_HD inline int32_t cal_take_before(Sim& s, PoolState& ps, double t) {
  const int64_t last = cal_day(ps, t);
  if (ps.cq_n == 0 || ps.cq_day > last) return kNone;
  int32_t* head = cal_buckets(s, ps);
  const int64_t days = min_of<int64_t>(last - ps.cq_day, ps.cq_mask) + 1;
  int32_t chain = kNone;
  for (int64_t d = ps.cq_day; d < ps.cq_day + days; ++d) {
    for (int32_t r = head[d & ps.cq_mask], next; r != kNone; r = next) {
      const CalNote& e = s.cq_note[r];
      next = e.next;
      // (the day alone says, but on t's own day: a note's day is monotone in its time)
      if (e.day > last || (e.day == last && !(s.rep[r].wake_at < t))) continue;
      cal_unlink(s, ps, r);
      s.rep[r].wake_at = kInf;
      s.cq_note[r].next = chain;
      chain = r;
    }
  }
  ps.cq_day = last;
  return chain;
}

// The replica with the earliest note, by (wake_at, index); kNone if none.
FLEETSIM_HD inline int32_t cal_min(Sim& s, PoolState& ps) {
  if (ps.cq_n == 0) return kNone;
  if (ps.cq_mask == 0) {
    int32_t best = kNone;
    for (int32_t r = ps.first_replica; r < ps.first_replica + ps.n_replicas; ++r)
      if (s.rep[r].wake_at < kInf && (best == kNone || s.rep[r].wake_at < s.rep[best].wake_at)) best = r;
    return best;
  }
  // searches that looked at more than a few days and notes each: the width no longer fits the notes
  if (ps.cq_finds >= 64) {
    if (ps.cq_work > 8 * ps.cq_finds)
      cal_refit(s, ps);
    else
      ps.cq_finds = ps.cq_work = 0;
  }
  const int32_t* head = cal_buckets(s, ps);
  int32_t work = 0, best = kNone;
  int64_t d = ps.cq_day;
  for (int32_t lap = 0; lap <= ps.cq_mask && best == kNone; ++lap, ++d) {
    for (int32_t r = head[d & ps.cq_mask]; r != kNone; r = s.cq_note[r].next) {
      ++work;
      if (s.cq_note[r].day == d && (best == kNone || cal_less(s, r, best))) best = r;
    }
    ++work;
  }
  if (best == kNone) {  // every note lies a lap or more ahead: the earliest day among them all
    int64_t first = 0;
    for (int32_t b = 0; b <= ps.cq_mask; ++b)
      for (int32_t r = head[b]; r != kNone; r = s.cq_note[r].next, ++work)
        if (best == kNone || s.cq_note[r].day < first || (s.cq_note[r].day == first && cal_less(s, r, best))) {
          first = s.cq_note[r].day;
          best = r;
        }
    d = first + 1;
  }
  ps.cq_day = d - 1;  // no note lies before the day it was found on
  ps.cq_finds++;
  ps.cq_work += work;
  return best;
}

}  // namespace fleetsim
