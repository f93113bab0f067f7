// Sweeps: the summary (counts, the cheapest feasible configuration, the closest miss, the Pareto
// frontier) accumulated one row at a time in index order, so a streamed sweep keeps only a few
// numbers per frontier point, not its rows; and the whole document from its header and rows.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "sweep/internal.hpp"

namespace fleetsim::sweep_detail {

SummaryAccumulator::SummaryAccumulator(const Json& header)
    : objective_(header["sweep"]["objective"].get<std::string>()),
      total_(header["sweep"]["configurations"].get<uint64_t>()),
      whole_(header["shard"]["count"].get<uint32_t>() == 1),
      replications_(header["sweep"].contains("replications") ? header["sweep"]["replications"].get<uint64_t>() : 1) {
  on_bound_ = !header["sweep"].contains("feasible_on") || header["sweep"]["feasible_on"].get<std::string>() == "bound";
  for (const auto& t : header["sweep"]["slo"])
    slo_.push_back(
        Bound{t["metric"].get<std::string>(), t["limit"].get<double>(), t["bound"].get<std::string>() == "max"});
}

void SummaryAccumulator::add(const Json& r) {
  ++rows_;
  // rows from before sequential stopping carry no count: they ran them all
  const Json* reps = r.contains("replications") ? &r["replications"] : nullptr;
  // a run stopped once its miss was certain: it ran, but its row has the miss, not figures
  const bool stopped = r.contains("stopped_at_s");
  stopped_ += stopped ? 1 : 0;
  if (!r["metrics"].is_null() || stopped)
    replications_run_ += reps && reps->is_number() ? reps->get<uint64_t>() : replications_;
  if (r.contains("step_time") && r["step_time"].is_string()) ++step_time_[r["step_time"].get<std::string>()];
  const uint64_t index = r["index"].get<uint64_t>();
  const double cost = num_or_nan(r, objective_);
  if (r["feasible"].get<bool>()) {
    ++feasible_;
    // equal spend (fleets of the same device-hours and price serve the same tokens): the faster wins
    const double ttft = num_or_nan(r, "latency_s.ttft.p99");
    const bool tie = have_cheapest_ && std::fabs(cost - best_) <= 1e-9 * std::fabs(best_);
    if (!std::isnan(cost) && (!have_cheapest_ || (cost < best_ && !tie) || (tie && ttft < best_ttft_))) {
      have_cheapest_ = true;
      best_ = cost;
      best_ttft_ = ttft;
      cheapest_ = {{"index", r["index"]}, {"parameters", r["parameters"]}, {"objective", objective_}, {"value", cost}};
    }
  } else if (r["metrics"].is_null() && !stopped) {
    ++no_fit_;
  } else {
    ++slo_miss_;
  }
  if (!r["feasible"].get<bool>() && !r["metrics"].is_null()) {
    // the closest miss: the smallest worst relative excess over an SLO limit, signed (a term within
    // its limit counts how far within), on the figure the verdict was on: the mean or its 95%
    // bound (the first on ties)
    double worst = -INFINITY;
    std::string worst_metric;
    for (const auto& t : slo_) {
      double x = num_or_nan(r, t.metric);
      if (on_bound_ && r["ci95"].is_object() && r["ci95"].contains(t.metric) && r["ci95"][t.metric].is_number())
        x += (t.is_max ? 1.0 : -1.0) * r["ci95"][t.metric].get<double>();
      const double excess =
          std::isnan(x) ? INFINITY : (t.is_max ? x - t.limit : t.limit - x) / std::max(std::fabs(t.limit), 1e-12);
      if (excess > worst) {
        worst = excess;
        worst_metric = t.metric;
      }
    }
    if (worst < closest_excess_) {
      closest_excess_ = worst;
      closest_index_ = index;
      // the violation of the term that decided it (a row's violations name their metric first)
      closest_violation_ = r["violations"].empty() ? std::string("no SLO") : r["violations"][0].get<std::string>();
      for (const auto& v : r["violations"])
        if (v.is_string() && v.get<std::string>().rfind(worst_metric + " ", 0) == 0) closest_violation_ = v;
    }
  }
  // Pareto frontier of (cost, p99 TTFT), ordered by cost, then TTFT, then index: a point is on it
  // when its TTFT is below every point before it, i.e. below the frontier point just before it.
  // Costs within 1e-9 of each other are one cost, as for the cheapest: of such points only the
  // lowest TTFT (the first of equal ones) is on the frontier.
  const double ttft = num_or_nan(r, "latency_s.ttft.p99");
  if (std::isnan(cost) || std::isnan(ttft)) return;
  const Point p{cost, ttft, index};
  const double tol = 1e-9 * std::fabs(cost);
  auto it = std::lower_bound(frontier_.begin(), frontier_.end(), p, before);
  if (it != frontier_.begin() && !(ttft < std::prev(it)->ttft)) return;
  for (auto q = it; q != frontier_.end() && q->cost <= cost + tol; ++q)  // as cheap, and as fast
    if (!(ttft < q->ttft)) return;
  auto first = it;  // points of (about) its cost before it, slower: it dominates them
  while (first != frontier_.begin() && std::prev(first)->cost >= cost - tol) --first;
  auto end = it;
  while (end != frontier_.end() && !(end->ttft < ttft)) ++end;  // points it now dominates
  it = frontier_.erase(first, end);
  frontier_.insert(it, p);
}

Json SummaryAccumulator::summary() const {
  Json s;
  s["configurations_run"] = rows_;
  // replications simulated for the rows that ran, against all of them: what sequential stopping saved
  s["replications_run"] = replications_run_;
  s["replications_full"] = (rows_ - no_fit_) * replications_;
  s["complete"] = whole_ && rows_ == total_;
  s["feasible"] = feasible_;
  s["infeasible_slo"] = slo_miss_;
  s["infeasible_config"] = no_fit_;
  // of infeasible_slo, runs stopped once their miss was certain (sweep.stop_certain_misses)
  s["stopped_early"] = stopped_;
  if (have_cheapest_) {
    s["cheapest"] = cheapest_;
    s["message"] = fmt::format("cheapest feasible configuration: #{}", cheapest_["index"].get<uint64_t>());
  } else {
    s["cheapest"] = nullptr;
    // (every configuration one that cannot run: no SLO was ever judged)
    std::string msg = rows_ == 0         ? "no configurations ran"
                      : feasible_ > 0    ? fmt::format("{} configuration{} the SLO, but none has a value for {}",
                                                       feasible_, feasible_ == 1 ? " meets" : "s meet", objective_)
                      : no_fit_ == rows_ ? "no configuration can run (each row says why)"
                                         : "no configuration meets the SLO";
    if (feasible_ == 0 && closest_excess_ < INFINITY)
      msg += fmt::format("; closest is #{} ({})", closest_index_, closest_violation_);
    else if (feasible_ == 0 && stopped_ > 0)  // every miss stopped without figures: say how to get them
      msg +=
          "; every run that ran stopped once its miss was certain (sweep.stop_certain_misses: false runs them "
          "to their end, with figures)";
    s["message"] = msg;
  }
  Json pareto = Json::array();
  for (const Point& p : frontier_) pareto.push_back(p.index);
  s["pareto"] = pareto;
  // the step-time models that priced the configurations that ran, the most used first
  std::vector<std::pair<std::string, uint64_t>> models(step_time_.begin(), step_time_.end());
  std::stable_sort(models.begin(), models.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  Json steps = Json::array();
  for (const auto& [m, n] : models) steps.push_back({{"model", m}, {"configurations", n}});
  s["step_time"] = steps;
  return s;
}

bool SummaryAccumulator::before(const Point& a, const Point& b) {
  if (a.cost != b.cost) return a.cost < b.cost;
  if (a.ttft != b.ttft) return a.ttft < b.ttft;
  return a.index < b.index;
}

// The whole document from its rows (sorted here by index). Shared by run_sweep and merge, so a
// merge of shards is byte-identical to the unsharded sweep.
Json assemble(const Json& header, std::vector<Json> rows) {
  std::sort(rows.begin(), rows.end(),
            [](const Json& a, const Json& b) { return a["index"].get<uint64_t>() < b["index"].get<uint64_t>(); });
  SummaryAccumulator acc(header);
  for (const auto& r : rows) acc.add(r);
  Json doc = header;
  doc["summary"] = acc.summary();
  doc["rows"] = std::move(rows);
  return doc;
}

}  // namespace fleetsim::sweep_detail
