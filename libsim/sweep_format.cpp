// Sweeps: a sweep document as a text table (the cheapest, the Pareto frontier) and as CSV.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "sweep_internal.hpp"

namespace fleetsim {

using sweep_detail::at_path;
using sweep_detail::num_or_nan;
using sweep_detail::numeric_leaves;

std::string format_sweep_table(const Json& doc, size_t max_rows) {
  const Json& sw = doc["sweep"];
  const Json& sum = doc["summary"];
  const std::string objective = sw["objective"].get<std::string>();
  std::string o;
  o += fmt::format("sweep    {}: {} configurations{} x {} replications", doc["scenario"]["name"].get<std::string>(),
                   sw["configurations"].get<uint64_t>(),
                   sw["sample"].is_null() ? " (full grid)" : fmt::format(" (random sample of a {} grid)", sw["grid_size"].get<uint64_t>()),
                   sw["replications"].get<uint32_t>());
  if (doc["shard"]["count"].get<uint32_t>() > 1)
    o += fmt::format(", shard {}/{}", doc["shard"]["index"].get<uint32_t>(), doc["shard"]["count"].get<uint32_t>());
  o += "\n";
  std::string slo;
  for (const auto& t : sw["slo"])
    slo += fmt::format("{}{} {} {}", slo.empty() ? "" : ", ", t["metric"].get<std::string>(),
                       t["bound"].get<std::string>() == "max" ? "<=" : ">=", t["limit"].get<double>());
  o += fmt::format("SLO      {}\n", slo.empty() ? "(none: every configuration that runs is feasible)" : slo);
  o += fmt::format("result   {} feasible, {} miss the SLO, {} cannot run (do not fit or inconsistent)\n",
                   sum["feasible"].get<uint64_t>(), sum["infeasible_slo"].get<uint64_t>(),
                   sum["infeasible_config"].get<uint64_t>());
  o += fmt::format("         {}\n\n", sum["message"].get<std::string>());

  std::map<uint64_t, const Json*> by_index;
  for (const auto& r : doc["rows"]) by_index[r["index"].get<uint64_t>()] = &r;
  std::vector<std::string> pnames;
  for (const auto& p : sw["parameters"]) pnames.push_back(p["path"].get<std::string>());

  auto cell = [](const Json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); };
  auto header_line = [&]() {
    std::string h = fmt::format("{:>6}", "#");
    for (const auto& p : pnames) h += fmt::format(" {:>{}}", p, std::max<size_t>(p.size(), 8));
    h += fmt::format(" {:>20} {:>20} {:>7} {:>7}  {}\n", objective.substr(objective.rfind('.') + 1), "p99 TTFT s", "busy",
                     "reject", "feasible");
    return h;
  };
  auto line = [&](const Json& r) {
    std::string l = fmt::format("{:>6}", r["index"].get<uint64_t>());
    for (const auto& p : pnames) l += fmt::format(" {:>{}}", cell(r["parameters"][p]), std::max<size_t>(p.size(), 8));
    if (r["metrics"].is_null()) {
      l += fmt::format(" {:>20} {:>20} {:>7} {:>7}  no: {}\n", "-", "-", "-", "-", r["reason"].get<std::string>());
      return l;
    }
    auto with_ci = [&](const std::string& path) {
      const double v = num_or_nan(r, path);
      if (std::isnan(v)) return std::string("-");
      const Json& c = r["ci95"].contains(path) ? r["ci95"][path] : Json(nullptr);
      return c.is_number() ? fmt::format("{:.4g} ±{:.2g}", v, c.get<double>()) : fmt::format("{:.4g}", v);
    };
    l += fmt::format(" {:>20} {:>20} {:>6.1f}% {:>6.2f}%  {}\n", with_ci(objective), with_ci("latency_s.ttft.p99"),
                     100 * num_or_nan(r, "utilization.busy_fraction"), 100 * num_or_nan(r, "requests.rejection_fraction"),
                     r["feasible"].get<bool>() ? "yes" : "no: " + r["violations"][0].get<std::string>());
    return l;
  };
  if (!sum["cheapest"].is_null()) {
    o += "cheapest feasible\n" + header_line();
    o += line(*by_index[sum["cheapest"]["index"].get<uint64_t>()]) + "\n";
  }
  o += fmt::format("Pareto frontier: {} against p99 TTFT ({} configurations)\n", objective, sum["pareto"].size());
  o += header_line();
  size_t shown = 0;
  for (const auto& i : sum["pareto"]) {
    if (shown++ >= max_rows) {
      o += fmt::format("   ... {} more (see --format json or csv)\n", sum["pareto"].size() - max_rows);
      break;
    }
    o += line(*by_index[i.get<uint64_t>()]);
  }
  // the cheapest feasible configurations
  std::vector<const Json*> feas;
  for (const auto& r : doc["rows"])
    if (r["feasible"].get<bool>() && !std::isnan(num_or_nan(r, objective))) feas.push_back(&r);
  std::stable_sort(feas.begin(), feas.end(),
                   [&](const Json* a, const Json* b) { return num_or_nan(*a, objective) < num_or_nan(*b, objective); });
  if (feas.size() > 1) {
    o += fmt::format("\nthe {} cheapest feasible configurations of {}\n", std::min(max_rows, feas.size()), feas.size());
    o += header_line();
    for (size_t i = 0; i < feas.size() && i < max_rows; ++i) o += line(*feas[i]);
  }
  const uint64_t shown_rows = doc["rows"].size();
  if (shown_rows > max_rows) o += fmt::format("\n(all {} rows: --format csv or json)\n", shown_rows);
  return o;
}

std::string sweep_to_csv(const Json& doc) {
  // one row per configuration; columns from the first measured row, so every row lines up
  std::vector<std::string> pnames;
  for (const auto& p : doc["sweep"]["parameters"]) pnames.push_back(p["path"].get<std::string>());
  std::vector<std::string> mpaths, cpaths;
  for (const auto& r : doc["rows"]) {
    if (r["metrics"].is_null()) continue;
    std::vector<std::pair<std::string, const Json*>> leaves;
    numeric_leaves(r["metrics"], "", leaves);
    for (const auto& l : leaves) mpaths.push_back(l.first);
    for (auto it = r["ci95"].begin(); it != r["ci95"].end(); ++it) cpaths.push_back(it.key());
    break;
  }
  auto q = [](const std::string& s) {
    if (s.find_first_of(",\"\n") == std::string::npos) return s;
    std::string out = "\"";
    for (char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
    return out + "\"";
  };
  std::string out = "index";
  for (const auto& p : pnames) out += "," + q(p);
  out += ",feasible,reason,violations";
  for (const auto& m : mpaths) out += "," + q(m);
  for (const auto& c : cpaths) out += "," + q("ci95." + c);
  out += "\n";
  for (const auto& r : doc["rows"]) {
    out += std::to_string(r["index"].get<uint64_t>());
    for (const auto& p : pnames) {
      const Json& v = r["parameters"][p];
      out += "," + q(v.is_string() ? v.get<std::string>() : v.dump());
    }
    out += r["feasible"].get<bool>() ? ",true," : ",false,";
    out += r["reason"].is_null() ? "" : q(r["reason"].get<std::string>());
    std::string viol;
    for (const auto& v : r["violations"]) viol += (viol.empty() ? "" : "; ") + v.get<std::string>();
    out += "," + q(viol);
    for (const auto& m : mpaths) {
      const Json* v = r["metrics"].is_null() ? nullptr : at_path(r["metrics"], m);
      out += "," + (v && v->is_number() ? v->dump() : std::string());
    }
    for (const auto& c : cpaths) {
      const Json* v = r["ci95"].is_null() ? nullptr : &r["ci95"][c];
      out += "," + (v && v->is_number() ? v->dump() : std::string());
    }
    out += "\n";
  }
  return out;
}

}  // namespace fleetsim
