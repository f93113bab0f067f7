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

// A line that holds for every step of its run (no step count a run reaches).
constexpr int64_t kLineHolds = int64_t(1) << 60;

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
  int64_t split;    // steps [0, split) follow the first line, [split, k) the other
  bool first_is_1;  // which line dominates first
  if (gb == 0.0) {
    split = k;
    first_is_1 = ga >= 0.0;
  } else {
    first_is_1 = gb < 0.0;  // g decreasing: line 1 leads, then line 2 takes over
    const double jstar = -ga / gb;
    if (jstar <= 0.0)
      split = 0;
    else if (jstar >= double(k))
      split = k;
    else
      split = int64_t(dm::ceil(jstar));
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

// Real m >= 0 with m c + d m (m - 1) / 2 = R: how many steps, the first taking c and each next
// one d longer, add up to R. The root of the quadratic in its cancellation-free form; < 0 if none.
FLEETSIM_HD inline double steps_to_cover(double c, double d, double R) {
  if (!(R > 0.0)) return 0.0;
  const double h = c - 0.5 * d;
  const double disc = h * h + 2.0 * d * R;
  if (!(disc >= 0.0)) return -1.0;
  const double den = h + dm::sqrt(disc);
  return den > 0.0 ? 2.0 * R / den : -1.0;
}

// Where line_sum reaches dt, as a real number of steps (< 0 if the quadratic gives no answer):
// the closed form of line_sum solved on the piece that reaches dt.
FLEETSIM_HD inline double line_steps_guess(const Line& l, double dt) {
  const double ga = l.a1 - l.a2, gb = l.b1 - l.b2;
  bool first_is_1;
  double split;  // as in line_sum, unbounded
  if (gb == 0.0) {
    first_is_1 = ga >= 0.0;
    split = kInf;
  } else {
    first_is_1 = gb < 0.0;
    const double jstar = -ga / gb;
    split = jstar <= 0.0 ? 0.0 : dm::ceil(jstar);
  }
  const double a = first_is_1 ? l.a1 : l.a2, b = first_is_1 ? l.b1 : l.b2;
  const double a2 = first_is_1 ? l.a2 : l.a1, b2 = first_is_1 ? l.b2 : l.b1;
  const double m = steps_to_cover(l.o + a, b, dt);
  if (m < 0.0 || m <= split) return m;
  const double done = (l.o + a) * split + b * (split * (split - 1.0) * 0.5);
  const double m2 = steps_to_cover(l.o + a2 + b2 * split, b2, dt - done);
  return m2 < 0.0 ? m2 : split + m2;
}

// Smallest j in [1, k] with line_sum(l, j) >= dt (k if none). The closed-form guess is checked
// against line_sum itself, so the answer is the one a binary search over line_sum gives; the
// search only runs, over what the checks left, when the guess is off by more than a step.
FLEETSIM_HD inline int64_t line_steps_until(const Line& l, int64_t k, double dt) {
  int64_t lo = 1, hi = k;  // the answer lies in [lo, hi]
  const double g = line_steps_guess(l, dt);
  if (g >= 0.0 && g < double(k)) {
    int64_t j = int64_t(dm::ceil(g));
    if (j < 1) j = 1;
    if (line_sum(l, j) >= dt) {
      hi = j;
      if (j > 1) {
        if (line_sum(l, j - 1) < dt)
          lo = j;
        else
          hi = j - 1;
      }
    } else {
      lo = j + 1 < k ? j + 1 : k;
      if (lo < k) {
        if (line_sum(l, lo) >= dt)
          hi = lo;
        else
          lo += 1;
      }
    }
  } else if (g >= double(k) && k > 1 && line_sum(l, k - 1) < dt) {
    lo = k;
  }
  while (lo < hi) {
    const int64_t mid = lo + (hi - lo) / 2;
    if (line_sum(l, mid) >= dt)
      hi = mid;
    else
      lo = mid + 1;
  }
  return lo;
}

}  // namespace fleetsim
