// Sweeps: the rule that stops a run once its SLO miss is certain (settle.hpp).
#include "sweep/settle.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <mutex>

#include "core/histogram.hpp"
#include "sweep/streams.hpp"

namespace fleetsim {

namespace {

// Draws past this many arrivals in one replication's window give no bound (and cost no more).
constexpr int64_t kMaxDrawnBound = 4000000;
// Workloads whose counts are kept at once: a notebook that sweeps workload after workload keeps
// at most this many (about 100 bytes each), the oldest dropped with the rest when it fills.
constexpr size_t kMaxKeptBounds = 4096;

// The most arrivals of class c in [w0, w1) over replications 0 .. replications - 1, as the core
// draws them (core/workload.hpp, keyed by the seed and the replication: the same in every run of
// them); -1 past kMaxDrawnBound. Kept per workload: a sweep asks once per configuration.
int64_t drawn_bound(const SimParams& p, int32_t c, uint32_t replications, double w0, double w1) {
  static std::mutex mutex;
  static std::map<std::string, int64_t> kept;
  std::string key = arrivals_key(p, c);
  for (double x : {w0, w1}) key.append(reinterpret_cast<const char*>(&x), sizeof x);
  key.append(reinterpret_cast<const char*>(&replications), sizeof replications);
  {
    std::lock_guard<std::mutex> lock(mutex);
    auto it = kept.find(key);
    if (it != kept.end()) return it->second;
  }
  int64_t most = 0;
  for (uint32_t r = 0; r < replications && most >= 0; ++r) {
    int64_t n = 0;
    each_drawn_arrival(p, c, r, [&](double t, const Rng&, uint64_t i) {
      if (t >= w1) return false;
      if (int64_t(i) >= kMaxDrawnBound) {
        n = -1;
        return false;
      }
      n += t >= w0;
      return true;
    });
    most = n < 0 ? -1 : std::max(most, n);
  }
  std::lock_guard<std::mutex> lock(mutex);
  if (kept.size() >= kMaxKeptBounds) kept.clear();
  kept.emplace(key, most);
  return most;
}

}  // namespace

int64_t settle_request_bound(const SimParams& p, uint32_t replications) {
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
    } else if (drawn_in_core(a.kind)) {
      // drawn arrivals are a pure function of the seed and the replication: counted before the run
      const int64_t m = drawn_bound(p, c, replications, w0, w1);
      if (m < 0) return 0;
      n += m;
    } else {
      return 0;  // closed-loop users, whose retries are new requests
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

bool settle_may_apply(const SweepSpec& spec) {
  Quantile unused{};
  return spec.stop_certain_misses && std::any_of(spec.slo.begin(), spec.slo.end(), [&](const SloTerm& t) {
           return t.is_max && (t.metric == "requests.rejection_fraction" || parse_latency(t.metric, unused));
         });
}

double settle_factor(const SweepSpec& spec) {
  if (!spec.feasible_on_bound) return double(spec.replications);
  // A row of n replications, one of them x and the others anything >= 0, has mean + t s / sqrt(n)
  // at least x min(1, (1 + t) / n): the others equal at their least sum give the least spread
  // (variance (x - y)^2 / n), and the bound is linear in that y, least at y = 0 or y = x. The row
  // holds 1 to R replications (sequential stopping), so the largest n / (1 + t) of those counts.
  double f = 1.0;
  for (uint32_t n = 2; n <= spec.replications; ++n) f = std::max(f, double(n) / (1.0 + t_critical_95(n - 1)));
  return f * (1.0 + 1e-9);  // and the bound's rounding
}

SettleRule settle_rule(const SweepSpec& spec, const SimParams& p, std::vector<size_t>* slo_of) {
  SettleRule rule{};
  if (slo_of) slo_of->clear();
  // (no upper bound, no rule: the requests are not counted)
  const int64_t n = settle_may_apply(spec) ? settle_request_bound(p, spec.replications) : 0;
  if (n <= 0) return rule;
  const double factor = settle_factor(spec);
  for (size_t i = 0; i < spec.slo.size() && rule.n < kMaxSettleTerms; ++i) {
    const SloTerm& t = spec.slo[i];
    if (!t.is_max || !(t.limit >= 0.0)) continue;
    const double bound = factor * t.limit;  // one replication's figure above it: the row misses the limit
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
  const int64_t n = settle_request_bound(p, spec.replications);
  const std::string when = fmt::format("the run stopped at {:.6g} s", t.settled_s);
  if (term.kind == SettleKind::rejections)
    return fmt::format("{} > {:.6g} certainly: {} of at most {} requests in the window rejected ({})", slo.metric,
                       slo.limit, term.allowed + 1, n, when);
  return fmt::format("{} > {:.6g} certainly: {} of at most {} requests in the window at {:.6g} s or more ({})",
                     slo.metric, slo.limit, term.allowed + 1, n, term.at_least, when);
}

}  // namespace fleetsim
