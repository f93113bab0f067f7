// Step time along a run of decode-only steps. With the batch fixed, the context grows by one
// token per sequence per step, so FLOPs, bytes and (in both perf models) the step time of step j
// are linear in j: s_j = o + max(a1 + b1 j, a2 + b2 j). Sums over a run are then closed forms,
// which is what lets a run of thousands of steps cost one event.
#pragma once
#include "params.hpp"

namespace fleetsim {

struct Line {
  double o, a1, b1, a2, b2;
};

// Sum over j in [j0, j1) of a + b j.
FLEETSIM_HD FLEETSIM_FORCEINLINE double arith_sum(double a, double b, int64_t j0, int64_t j1) {
  if (j1 <= j0) return 0.0;
  const int64_t n = j1 - j0;
  const int64_t twice = (j0 + j1 - 1) * n;  // always even
  return double(n) * a + b * double(twice / 2);
}

FLEETSIM_HD FLEETSIM_FORCEINLINE double line_step(const Line& l, int64_t j) {
  const double dj = double(j);
  return l.o + max_of(l.a1 + l.b1 * dj, l.a2 + l.b2 * dj);
}

// Cumulative time of steps [0, k).
FLEETSIM_HD inline double line_sum(const Line& l, int64_t k) {
  if (k <= 0) return 0.0;
  // g(j) = line1 - line2 is linear; split [0, k) where its sign changes.
  const double ga = l.a1 - l.a2, gb = l.b1 - l.b2;
  int64_t split;     // steps [0, split) follow the first line, [split, k) the other
  bool first_is_1;   // which line dominates first
  if (gb == 0.0) {
    split = k;
    first_is_1 = ga >= 0.0;
  } else {
    first_is_1 = gb < 0.0;  // g decreasing: line 1 leads, then line 2 takes over
    const double jstar = -ga / gb;
    if (jstar <= 0.0) split = 0;
    else if (jstar >= double(k)) split = k;
    else split = int64_t(dm::ceil(jstar));
  }
  const double o = double(k) * l.o;
  double s1, s2;
  if (first_is_1) {
    s1 = arith_sum(l.a1, l.b1, 0, split);
    s2 = arith_sum(l.a2, l.b2, split, k);
  } else {
    s1 = arith_sum(l.a2, l.b2, 0, split);
    s2 = arith_sum(l.a1, l.b1, split, k);
  }
  return o + s1 + s2;
}

// Smallest j in [1, k] with line_sum(l, j) >= dt (k if none).
FLEETSIM_HD inline int64_t line_steps_until(const Line& l, int64_t k, double dt) {
  int64_t lo = 1, hi = k;
  while (lo < hi) {
    const int64_t mid = lo + (hi - lo) / 2;
    if (line_sum(l, mid) >= dt) hi = mid; else lo = mid + 1;
  }
  return lo;
}

}  // namespace fleetsim
