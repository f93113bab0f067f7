// Sweeps: one configuration's row from its replications' tallies (means, 95% intervals, the SLO
// verdict), and sequential stopping's rule.
#include <fmt/format.h>

#include <cmath>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "report/report.hpp"
#include "sweep/internal.hpp"
#include "sweep/settle.hpp"

namespace fleetsim {

namespace sweep_detail {

void numeric_leaves(const Json& j, const std::string& prefix, std::vector<std::pair<std::string, const Json*>>& out) {
  if (j.is_object()) {
    for (auto it = j.begin(); it != j.end(); ++it)
      numeric_leaves(it.value(), prefix.empty() ? it.key() : prefix + "." + it.key(), out);
  } else if (j.is_number() || j.is_null()) {
    out.emplace_back(prefix, &j);
  }
}

const Json* at_path(const Json& j, const std::string& path) {
  const Json* cur = &j;
  size_t start = 0;
  while (start <= path.size()) {
    const size_t dot = path.find('.', start);
    const std::string key = path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    if (!cur->is_object() || !cur->contains(key)) return nullptr;
    cur = &(*cur)[key];
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  return cur;
}

double num_or_nan(const Json& row, const std::string& path) {
  if (!row["metrics"].is_object()) return std::nan("");
  const Json* v = at_path(row["metrics"], path);
  return v && v->is_number() ? v->get<double>() : std::nan("");
}

bool never_negative(const std::string& path) {
  std::string p = path;
  for (const char* scope : {"classes.", "pools."})
    if (p.rfind(scope, 0) == 0) {
      const size_t dot = p.find('.', std::string(scope).size());
      p = dot == std::string::npos ? "" : p.substr(dot + 1);
    }
  for (const char* section : {"latency_s.", "requests.", "throughput.", "utilization.", "cost.", "capacity.", "fleet."})
    if (p.rfind(section, 0) == 0) return true;
  // the ledger's hours and dollars (not the ownership view, whose price changes may fall) and teams'
  for (const char* section :
       {"ledger.window_s", "ledger.billed_device_hours", "ledger.list_usd", "ledger.effective_usd",
        "ledger.usd_per_device_hour", "ledger.buckets.", "ledger.idle_usd", "ledger.projection_30d.", "teams."})
    if (p.rfind(section, 0) == 0) return true;
  // a pool's or a class's ledger, but for the ownership view
  for (const char* section : {"ledger.pools.", "ledger.classes."})
    if (p.rfind(section, 0) == 0 && p.find(".ownership.") == std::string::npos) return true;
  return false;
}

}  // namespace sweep_detail

using sweep_detail::at_path;
using sweep_detail::kHeadline;
using sweep_detail::kMetricSections;
using sweep_detail::numeric_leaves;

namespace {

void set_path(Json& j, const std::string& path, Json v) {
  Json* cur = &j;
  size_t start = 0;
  for (;;) {
    const size_t dot = path.find('.', start);
    if (dot == std::string::npos) {
      (*cur)[path.substr(start)] = std::move(v);
      return;
    }
    cur = &(*cur)[path.substr(start, dot - start)];
    start = dot + 1;
  }
}

}  // namespace

namespace {

// The regularized incomplete beta function I_x(a, b), by its continued fraction (modified Lentz),
// taken on the side of x where it converges fast.
double incomplete_beta(double a, double b, double x) {
  if (x <= 0) return 0;
  if (x >= 1) return 1;
  if (x > (a + 1) / (a + b + 2)) return 1 - incomplete_beta(b, a, 1 - x);
  const double front =
      std::exp(std::lgamma(a + b) - std::lgamma(a) - std::lgamma(b) + a * std::log(x) + b * std::log1p(-x)) / a;
  const double tiny = 1e-300;
  double f = 1, c = 1, d = 0;
  for (int i = 0; i <= 400; ++i) {
    const int m = i / 2;
    double num;
    if (i == 0)
      num = 1;
    else if (i % 2 == 0)
      num = m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m));
    else
      num = -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1));
    d = 1 + num * d;
    d = std::fabs(d) < tiny ? tiny : d;
    d = 1 / d;
    c = 1 + num / c;
    c = std::fabs(c) < tiny ? tiny : c;
    const double cd = c * d;
    f *= cd;
    if (std::fabs(1 - cd) < 1e-15) break;
  }
  return front * (f - 1);
}

// P(T > t) for Student's t with dof degrees of freedom, t >= 0.
double t_upper_tail(double t, double dof) { return 0.5 * incomplete_beta(dof / 2, 0.5, dof / (dof + t * t)); }

}  // namespace

double t_critical_95(uint32_t dof) {
  if (dof == 0) return 0;
  // t(dof, 0.975): the upper tail is 0.025, found by bisection between the normal's 1.96 and the
  // Cauchy's 12.71 (the quantile falls with dof), to the last bits a double holds
  double lo = 1.959, hi = 12.71;
  for (int i = 0; i < 200 && hi - lo > 1e-13; ++i) {
    const double mid = 0.5 * (lo + hi);
    (t_upper_tail(mid, double(dof)) > 0.025 ? lo : hi) = mid;
  }
  return 0.5 * (lo + hi);
}

MeanCI mean_ci(const std::vector<double>& xs) {
  MeanCI r;
  r.n = uint32_t(xs.size());
  if (xs.empty()) return r;
  double s = 0;
  for (double x : xs) s += x;
  r.mean = s / double(xs.size());
  if (xs.size() < 2) return r;
  double ss = 0;
  for (double x : xs) ss += (x - r.mean) * (x - r.mean);
  const double sd = std::sqrt(ss / double(xs.size() - 1));
  r.half_width = t_critical_95(uint32_t(xs.size() - 1)) * sd / std::sqrt(double(xs.size()));
  return r;
}

namespace {

// An SLO term's value in every replication's report, into xs; false if one lacks it.
bool term_values(const std::vector<Json>& reports, const std::string& metric, std::vector<double>& xs) {
  for (const auto& rep : reports) {
    const Json* v = at_path(rep, metric);
    if (!v || !v->is_number()) return false;
    xs.push_back(v->get<double>());
  }
  return !xs.empty();
}

}  // namespace

Json sweep_row(const SweepSpec& spec, uint64_t config, const Scenario* s, const std::vector<const Tally*>& reps,
               const std::string& infeasible_reason, std::vector<Json>* given) {
  Json row;
  row["index"] = config;
  row["parameters"] = spec.parameters_json(config);
  if (!infeasible_reason.empty() || !s) {
    row["feasible"] = false;
    row["reason"] = infeasible_reason;
    row["violations"] = Json::array();
    row["metrics"] = nullptr;
    row["ci95"] = nullptr;
    row["replications"] = reps.size();
    return row;
  }
  // which step-time model priced it, and how sure that is (as a run's table says it)
  row["step_time"] = step_time_line(*s);
  // a replication stopped once its miss was certain (sweep/settle.hpp): the row gives the miss
  for (const Tally* t : reps)
    if (t->status == int32_t(SimStatus::settled)) {
      row["feasible"] = false;
      row["reason"] = "misses the SLO";
      row["violations"] = Json::array({settled_violation(spec, s->params(), *t)});
      row["metrics"] = nullptr;
      row["ci95"] = nullptr;
      row["replications"] = reps.size();
      row["stopped_at_s"] = t->settled_s;
      return row;
    }
  // per-replication reports -> means over replications (nulls skipped)
  std::vector<Json> own;
  std::vector<Json>& reports = given ? *given : own;
  for (size_t i = reports.size(); i < reps.size(); ++i) reports.push_back(run_report(*s, *reps[i]));
  reports.resize(reps.size());
  // every metric any replication reports, in the order they first appear; one a replication leaves
  // out is of something that did not happen in it (a pool's prefix_cache block where nothing was
  // reused): it counts as 0, so the row is the mean over every replication
  std::vector<std::pair<std::string, const Json*>> leaves;
  for (const auto& rep : reports)
    for (const char* sec : kMetricSections)
      if (rep.contains(sec)) numeric_leaves(rep[sec], sec, leaves);
  std::vector<std::string> paths;
  std::set<std::string> seen;
  for (const auto& [path, _] : leaves)
    if (seen.insert(path).second) paths.push_back(path);
  Json metrics = Json::object();
  for (const auto& path : paths) {
    std::vector<double> xs;
    for (const auto& rep : reports) {
      const Json* v = at_path(rep, path);
      if (!v)
        xs.push_back(0.0);
      else if (v->is_number())
        xs.push_back(v->get<double>());
    }
    set_path(metrics, path, xs.empty() ? Json(nullptr) : Json(mean_ci(xs).mean));
  }
  Json ci = Json::object();
  for (const char* h : kHeadline) {
    std::vector<double> xs;
    for (const auto& rep : reports) {
      const Json* v = at_path(rep, h);
      if (v && v->is_number()) xs.push_back(v->get<double>());
    }
    ci[h] = xs.size() >= 2 && xs.size() == reports.size() ? Json(mean_ci(xs).half_width) : Json(nullptr);
  }
  // each SLO term judged on its 95% confidence bound over the replications (the side of the
  // interval towards the limit), as `fleetsim check` judges a budget; or on the mean alone
  Json violations = Json::array();
  for (const auto& t : spec.slo) {
    std::vector<double> xs;
    if (!term_values(reports, t.metric, xs)) {
      violations.push_back(fmt::format("{} has no value", t.metric));
      continue;
    }
    const MeanCI m = mean_ci(xs);
    // every SLO term's interval beside the headline ones: the closest miss is judged on it
    if (!ci.contains(t.metric)) ci[t.metric] = xs.size() >= 2 ? Json(m.half_width) : Json(nullptr);
    const double hw = spec.feasible_on_bound ? m.half_width : 0.0;
    const double x = t.is_max ? m.mean + hw : m.mean - hw;
    if (t.is_max ? !(x <= t.limit) : !(x >= t.limit)) {
      if (hw > 0)
        violations.push_back(fmt::format("{} 95% bound {:.6g} {} {:.6g} (mean {:.6g} ± {:.3g})", t.metric, x,
                                         t.is_max ? ">" : "<", t.limit, m.mean, hw));
      else
        violations.push_back(fmt::format("{} = {:.6g} {} {:.6g}", t.metric, x, t.is_max ? ">" : "<", t.limit));
    }
  }
  row["feasible"] = violations.empty();
  row["reason"] = violations.empty() ? Json(nullptr) : Json("misses the SLO");
  row["violations"] = violations;
  row["metrics"] = metrics;
  row["ci95"] = ci;
  row["replications"] = reps.size();
  return row;
}

bool settled_after(const SweepSpec& spec, const Scenario& s, const std::vector<const Tally*>& reps,
                   std::vector<Json>& reports) {
  if (spec.slo.empty() || reps.size() >= spec.replications) return false;
  // a replication stopped on a certain miss (stop_certain_misses), or one that did not finish,
  // decides the row whatever follows, with or without sequential stopping
  for (const Tally* t : reps)
    if (t->status != 0 || t->unfinished != 0) return true;
  if (!spec.sequential) return false;
  if (reps.size() < kSequentialMin) return false;
  for (size_t i = reports.size(); i < reps.size(); ++i) reports.push_back(run_report(s, *reps[i]));
  bool all_met = true;
  for (const auto& t : spec.slo) {
    std::vector<double> xs;
    if (!term_values(reports, t.metric, xs)) return true;  // "has no value" whatever follows
    const MeanCI m = mean_ci(xs);
    const double lo = m.mean - m.half_width, hi = m.mean + m.half_width;
    const bool met = t.is_max ? hi <= t.limit : lo >= t.limit;
    const bool missed = t.is_max ? lo > t.limit : hi < t.limit;
    if (missed) return true;
    if (!met) all_met = false;
  }
  return all_met;
}

}  // namespace fleetsim
