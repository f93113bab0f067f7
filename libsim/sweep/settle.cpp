// Sweeps: the rule that stops a run once its SLO miss is certain (settle.hpp).
#include "sweep/settle.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/histogram.hpp"

namespace fleetsim {

int64_t settle_request_bound(const SimParams& p) {
  const double w0 = window_from_s(p), w1 = window_to_s(p);
  int64_t n = 0;
  for (int32_t c = 0; c < p.n_classes; ++c) {
    const ArrivalParams& a = p.classes[c].arrivals;
    if (a.kind == ArrivalKind::trace) {
      // a row arrives at its time (ascending, as is the sum the core forms); a session's follow-up
      // may be held past it, never sent before it
      const double* end = a.trace_t_s + a.trace_n;
      const double* to = std::partition_point(a.trace_t_s, end, [&](double t) { return t + a.start_s < w1; });
      const double* from = a.trace_parent
                               ? a.trace_t_s
                               : std::partition_point(a.trace_t_s, to, [&](double t) { return t + a.start_s < w0; });
      n += to - from;
    } else if (a.kind == ArrivalKind::burst) {
      n += a.clients;
    } else {
      return 0;  // open-ended arrivals, or closed-loop users whose retries are new requests
    }
  }
  return n;
}

namespace {

struct Quantile {
  SettleKind kind;
  double q;  // in [0, 1]; 1: the maximum
};

bool parse_latency(const std::string& metric, Quantile& out) {
  static const std::pair<const char*, SettleKind> kinds[] = {{"ttft", SettleKind::ttft},
                                                             {"tpot", SettleKind::tpot},
                                                             {"e2e", SettleKind::e2e},
                                                             {"queue_wait", SettleKind::queue_wait}};
  static const std::pair<const char*, double> qs[] = {{"p50", 0.50}, {"p90", 0.90},   {"p95", 0.95},
                                                      {"p99", 0.99}, {"p999", 0.999}, {"max", 1.0}};
  for (const auto& [k, kind] : kinds)
    for (const auto& [qn, q] : qs)
      if (metric == fmt::format("latency_s.{}.{}", k, qn)) {
        out = {kind, q};
        return true;
      }
  return false;
}

}  // namespace

SettleRule settle_rule(const SweepSpec& spec, const SimParams& p, std::vector<size_t>* slo_of) {
  SettleRule rule{};
  if (slo_of) slo_of->clear();
  const int64_t n = spec.stop_certain_misses ? settle_request_bound(p) : 0;
  if (n <= 0) return rule;
  const double reps = double(spec.replications);
  for (size_t i = 0; i < spec.slo.size() && rule.n < kMaxSettleTerms; ++i) {
    const SloTerm& t = spec.slo[i];
    if (!t.is_max || !(t.limit >= 0.0)) continue;
    const double bound = reps * t.limit;  // one replication's figure above it: the mean is above the limit
    SettleTerm term{};
    Quantile lq{};
    if (t.metric == "requests.rejection_fraction") {
      // rejected / arrived >= rejected / n > R L, with a margin for the rounding of the row's mean
      const double allowed = std::floor(bound * double(n) * (1.0 + 1e-9));
      if (!(allowed < double(n))) continue;
      term.kind = SettleKind::rejections;
      term.at_least = 0.0;
      term.allowed = int64_t(allowed);
    } else if (parse_latency(t.metric, lq)) {
      term.kind = lq.kind;
      const double margin = bound * (1.0 + 1e-9);
      if (lq.q >= 1.0) {  // the maximum is exact
        term.at_least = std::nextafter(margin, std::numeric_limits<double>::infinity());
        term.allowed = 0;
      } else {
        // the first bucket wholly above the bound: a quantile whose rank falls in it or above
        // reports more than the bound (its midpoint, or the maximum, clamped to the observed range)
        const int b = hist_bucket(margin) + 1;
        if (!(margin > 0.0) || b >= kHistBuckets) continue;
        double lo, hi;
        hist_bucket_bounds(b, lo, hi);
        term.at_least = lo;
        // with m <= n values, the rank-th smallest is among the top m - rank + 1; m - rank grows with m
        term.allowed = int64_t(uint64_t(n) - hist_rank(lq.q, uint64_t(n)));
      }
    } else {
      continue;
    }
    rule.terms[rule.n++] = term;
    if (slo_of) slo_of->push_back(i);
  }
  return rule;
}

std::string settled_violation(const SweepSpec& spec, const SimParams& p, const Tally& t) {
  std::vector<size_t> slo_of;
  const SettleRule rule = settle_rule(spec, p, &slo_of);
  if (t.settled_term < 0 || t.settled_term >= rule.n) return "the run stopped on a rule this sweep does not have";
  const SettleTerm& term = rule.terms[t.settled_term];
  const SloTerm& slo = spec.slo[slo_of[size_t(t.settled_term)]];
  const int64_t n = settle_request_bound(p);
  const std::string when = fmt::format("the run stopped at {:.6g} s", t.settled_s);
  if (term.kind == SettleKind::rejections)
    return fmt::format("{} > {:.6g} certainly: {} of at most {} requests in the window rejected ({})", slo.metric,
                       slo.limit, term.allowed + 1, n, when);
  return fmt::format("{} > {:.6g} certainly: {} of at most {} requests in the window at {:.6g} s or more ({})",
                     slo.metric, slo.limit, term.allowed + 1, n, term.at_least, when);
}

}  // namespace fleetsim
