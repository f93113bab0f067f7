// Mergeable log-bucketed histogram: constant memory per simulation, percentiles within 0.8%.
//
// A bucket is one of 64 linear slices of a binary octave, indexed straight from the bits of the
// double (no log call), so the reported midpoint of a bucket is within 1/128 of any value in it.
// Octaves 2^-17 s (7.6 us) .. 2^22 s (48 days) cover every latency a run of up to 30 days
// produces; values outside clamp to the end buckets, and the exact min and max are kept beside
// the buckets.
#pragma once
#include "detmath.hpp"
#include "hd.hpp"

namespace fleetsim {

constexpr int kHistSubBits = 6;
constexpr int kHistSub = 1 << kHistSubBits;
constexpr int kHistMinExp = -17;
constexpr int kHistMaxExp = 22;
constexpr int kHistBuckets = (kHistMaxExp - kHistMinExp) * kHistSub;

struct Histogram {
  uint64_t n;
  double sum;
  double min;
  double max;
  uint32_t counts[kHistBuckets];
};

FLEETSIM_HD inline void hist_clear(Histogram& h) {
  h.n = 0;
  h.sum = 0.0;
  h.min = kInf;
  h.max = 0.0;
  for (int i = 0; i < kHistBuckets; ++i) h.counts[i] = 0;
}

FLEETSIM_HD FLEETSIM_FORCEINLINE int hist_bucket(double x) {
  if (!(x > 0.0)) return 0;
  const uint64_t u = dm::bits_of(x);
  const int e = int((u >> 52) & 0x7ff) - 1023;
  if (e < kHistMinExp) return 0;
  if (e >= kHistMaxExp) return kHistBuckets - 1;
  const int sub = int((u >> (52 - kHistSubBits)) & (kHistSub - 1));
  return (e - kHistMinExp) * kHistSub + sub;
}

// [lo, hi) of a bucket.
FLEETSIM_HD inline void hist_bucket_bounds(int b, double& lo, double& hi) {
  const int e = b / kHistSub + kHistMinExp;
  const int sub = b % kHistSub;
  const double base = dm::from_bits(uint64_t(int64_t(e + 1023)) << 52);
  lo = base * (1.0 + double(sub) / kHistSub);
  hi = base * (1.0 + double(sub + 1) / kHistSub);
}

FLEETSIM_HD FLEETSIM_FORCEINLINE void hist_add(Histogram& h, double x) {
  h.n += 1;
  h.sum += x;
  if (x < h.min) h.min = x;
  if (x > h.max) h.max = x;
  h.counts[hist_bucket(x)] += 1;
}

FLEETSIM_HD inline void hist_merge(Histogram& into, const Histogram& from) {
  into.n += from.n;
  into.sum += from.sum;
  if (from.min < into.min) into.min = from.min;
  if (from.max > into.max) into.max = from.max;
  for (int i = 0; i < kHistBuckets; ++i) into.counts[i] += from.counts[i];
}

// The nearest rank of quantile q among n >= 1 values: ceil(q n), within [1, n].
FLEETSIM_HD inline uint64_t hist_rank(double q, uint64_t n) {
  uint64_t rank = uint64_t(dm::ceil(q * double(n)));
  if (rank < 1) rank = 1;
  if (rank > n) rank = n;
  return rank;
}

// Nearest-rank quantile q in [0,1]: the midpoint of the bucket holding the ceil(q n)-th smallest
// value, clamped to the observed [min, max]. Returns 0 for an empty histogram.
FLEETSIM_HD inline double hist_quantile(const Histogram& h, double q) {
  if (h.n == 0) return 0.0;
  const uint64_t rank = hist_rank(q, h.n);
  if (rank == h.n) return h.max;
  if (rank == 1 && q <= 0.0) return h.min;
  uint64_t seen = 0;
  for (int b = 0; b < kHistBuckets; ++b) {
    seen += h.counts[b];
    if (seen >= rank) {
      double lo, hi;
      hist_bucket_bounds(b, lo, hi);
      double mid = 0.5 * (lo + hi);
      if (mid < h.min) mid = h.min;
      if (mid > h.max) mid = h.max;
      return mid;
    }
  }
  return h.max;
}

}  // namespace fleetsim
