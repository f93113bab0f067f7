// Latency distributions for the report: the percentiles of a histogram and its CDF as points.
#include <algorithm>

#include "report/report.hpp"

namespace fleetsim {

LatencyStats latency_stats(const Histogram& h) {
  LatencyStats l;
  l.count = h.n;
  if (h.n == 0) return l;
  l.mean = h.sum / double(h.n);
  l.p50 = hist_quantile(h, 0.50);
  l.p90 = hist_quantile(h, 0.90);
  l.p95 = hist_quantile(h, 0.95);
  l.p99 = hist_quantile(h, 0.99);
  l.p999 = hist_quantile(h, 0.999);
  l.max = h.max;
  return l;
}

// The distribution as [seconds, fraction at or below] points: one pass over the buckets, a point
// wherever the cumulative fraction has moved by 1/64 (and at the tail quantiles), at bucket upper
// edges; before each, the fraction below that bucket at its lower edge, and a first point at the
// fastest request with fraction 0, so that a line through the points is flat where no request fell.
Json hist_cdf(const Histogram& h) {
  Json pts = Json::array();
  if (h.n == 0) return pts;
  uint64_t cum = 0;
  double last_x = -1.0;
  double last = 0.0;
  for (int b = 0; b < kHistBuckets; ++b) {
    if (h.counts[b] == 0) continue;
    double lo, hi;
    hist_bucket_bounds(b, lo, hi);
    const double below = double(cum) / double(h.n);
    // a bucket's edges clamped to what was seen (the first bucket also holds values below its
    // lower edge, zeros among them): x never runs backwards
    const double x0 = std::min(std::max(lo, h.min), h.max), x1 = std::max(std::min(hi, h.max), x0);
    if (last_x < 0.0) {
      last_x = x0;
      pts.push_back({last_x, 0.0});
    }
    cum += h.counts[b];
    const double f = double(cum) / double(h.n);
    if (f - last >= 1.0 / 64 || (f >= 0.99 && f - last >= 1e-3) || cum == h.n) {
      if (x0 > last_x && x0 < x1) pts.push_back({x0, below});
      pts.push_back({x1, f});
      last = f;
      last_x = x1;
    }
  }
  return pts;
}

}  // namespace fleetsim
