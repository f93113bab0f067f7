// Sweeps: a sweep document as a text table (the cheapest, the Pareto frontier) and as CSV.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "input/csv.hpp"
#include "sweep/internal.hpp"

// What the objective counts, in words, for the metrics a reader might mistake.
static std::string objective_note(const std::string& objective) {
  if (objective == "cost.per_million_tokens_usd") return " (all the spend over every token in and out)";
  if (objective == "cost.per_request_usd") return " (all the spend per completed request)";
  if (objective == "cost.per_million_output_tokens_usd")
    return " (the decode share of the spend only: prefill's dollars are not in it)";
  if (objective == "cost.per_million_input_tokens_usd") return " (the prefill share of the spend only)";
  return "";
}

namespace fleetsim {

using sweep_detail::at_path;
using sweep_detail::num_or_nan;
using sweep_detail::numeric_leaves;

namespace {
// Columns on a terminal: UTF-8 continuation bytes take none (the ± of a confidence interval).
size_t display_width(const std::string& s) {
  size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}
}  // namespace

namespace {
std::string sweep_table(const Json& doc, size_t max_rows) {
  const Json& sw = doc["sweep"];
  const Json& sum = doc["summary"];
  const std::string objective = sw["objective"].get<std::string>();
  std::string o;
  o += fmt::format("sweep    {}: {} configurations{} x {} replications", doc["scenario"]["name"].get<std::string>(),
                   sw["configurations"].get<uint64_t>(),
                   sw["sample"].is_null()
                       ? " (full grid)"
                       : fmt::format(" (random sample of a {} grid)", sw["grid_size"].get<uint64_t>()),
                   sw["replications"].get<uint32_t>());
  if (doc["shard"]["count"].get<uint32_t>() > 1)
    o += fmt::format(", shard {}/{}", doc["shard"]["index"].get<uint32_t>(), doc["shard"]["count"].get<uint32_t>());
  o += "\n";
  std::string slo;
  for (const auto& t : sw["slo"])
    slo += fmt::format("{}{} {} {}", slo.empty() ? "" : ", ", t["metric"].get<std::string>(),
                       t["bound"].get<std::string>() == "max" ? "<=" : ">=", t["limit"].get<double>());
  const bool on_bound = !sw.contains("feasible_on") || sw["feasible_on"].get<std::string>() == "bound";
  o += fmt::format("SLO      {}{}\n", slo.empty() ? "(none: every configuration that runs is feasible)" : slo,
                   slo.empty() ? ""
                   : on_bound  ? " (met by the 95% bound over replications)"
                               : " (met by the mean over replications)");
  o += fmt::format("cheapest by {}{}\n", objective, objective_note(objective));
  // which step-time model priced the configurations, and how sure it is
  if (sum.contains("step_time") && sum["step_time"].is_array())
    for (size_t i = 0; i < sum["step_time"].size(); ++i) {
      const Json& m = sum["step_time"][i];
      const uint64_t n = m["configurations"].get<uint64_t>();
      o += fmt::format("{}{} ({} configuration{})\n", i == 0 ? "steps    " : "         ", m["model"].get<std::string>(),
                       n, n == 1 ? "" : "s");
    }
  o += fmt::format("result   {} feasible, {} miss the SLO, {} cannot run (do not fit or inconsistent)\n",
                   sum["feasible"].get<uint64_t>(), sum["infeasible_slo"].get<uint64_t>(),
                   sum["infeasible_config"].get<uint64_t>());
  o += fmt::format("         {}\n", sum["message"].get<std::string>());
  if (sum.contains("replications_run") && sum["replications_run"] != sum["replications_full"]) {
    // say only the rules this sweep ran with (a sweep without sequential stopping still stops a
    // configuration whose replication missed for certain or did not finish)
    const bool sequential =
        !sw.contains("sequential") || !sw["sequential"].is_boolean() || sw["sequential"].get<bool>();
    o += fmt::format("         {} of {} replications run: a configuration stops once {}\n",
                     sum["replications_run"].get<uint64_t>(), sum["replications_full"].get<uint64_t>(),
                     sequential ? "its replications so far decide its verdict at 95% (sweep.sequential: false runs "
                                  "them all) or a replication misses for certain"
                                : "a replication misses for certain or does not finish");
  }
  if (sum.contains("stopped_early") && sum["stopped_early"].get<uint64_t>() > 0)
    o += fmt::format(
        "         {} of the misses stopped once they were certain, without figures "
        "(sweep.stop_certain_misses)\n",
        sum["stopped_early"].get<uint64_t>());
  o += "\n";

  std::map<uint64_t, const Json*> by_index;
  for (const auto& r : doc["rows"]) by_index[r["index"].get<uint64_t>()] = &r;
  std::vector<std::string> pnames;
  for (const auto& p : sw["parameters"]) pnames.push_back(p["path"].get<std::string>());

  // A row's cells: index, parameters, objective, p99 TTFT, busy, batch, reject; then the free-text
  // verdict. Busy is the share of time a step is in flight, near 100% for any loaded continuous
  // batching server; the mean batch beside it says how much of the replica that work fills.
  using Cells = std::vector<std::string>;
  auto cell = [](const Json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); };
  Cells header{"#"};
  header.insert(header.end(), pnames.begin(), pnames.end());
  header.insert(header.end(),
                {objective.substr(objective.rfind('.') + 1), "p99 TTFT s", "busy", "batch", "reject", "feasible"});
  auto cells = [&](const Json& r) {
    Cells c{std::to_string(r["index"].get<uint64_t>())};
    for (const auto& p : pnames) c.push_back(cell(r["parameters"][p]));
    if (r["metrics"].is_null()) {
      c.insert(c.end(), {"-", "-", "-", "-", "-", "no: " + r["reason"].get<std::string>()});
      return c;
    }
    auto with_ci = [&](const std::string& path) {
      const double v = num_or_nan(r, path);
      if (std::isnan(v)) return std::string("-");
      const Json& ci = r["ci95"].contains(path) ? r["ci95"][path] : Json(nullptr);
      return ci.is_number() ? fmt::format("{:.4g} ±{:.2g}", v, ci.get<double>()) : fmt::format("{:.4g}", v);
    };
    c.insert(c.end(), {with_ci(objective), with_ci("latency_s.ttft.p99"),
                       fmt::format("{:.1f}%", 100 * num_or_nan(r, "utilization.busy_fraction")),
                       fmt::format("{:.1f}", num_or_nan(r, "utilization.mean_batch_size")),
                       fmt::format("{:.2f}%", 100 * num_or_nan(r, "requests.rejection_fraction")),
                       r["feasible"].get<bool>() ? "yes" : "no: " + r["violations"][0].get<std::string>()});
    return c;
  };
  // Columns are right-aligned, at least their usual width and wider where a cell is (a long
  // device name, a big number); the verdict comes last, as it is.
  std::vector<size_t> usual{6};
  for (const auto& p : pnames) usual.push_back(std::max<size_t>(p.size(), 8));
  usual.insert(usual.end(), {20, 20, 7, 6, 7});
  auto table = [&](const std::vector<const Json*>& rows, const std::string& after_rows = "") {
    std::vector<Cells> all{header};
    for (const Json* r : rows) all.push_back(cells(*r));
    std::vector<size_t> width = usual;
    for (const auto& c : all)
      for (size_t k = 0; k + 1 < c.size(); ++k) width[k] = std::max(width[k], display_width(c[k]));
    std::string t;
    for (const auto& c : all) {
      for (size_t k = 0; k + 1 < c.size(); ++k)
        t += std::string(width[k] - display_width(c[k]) + (k == 0 ? 0 : 1), ' ') + c[k];
      t += "  " + c.back() + "\n";
    }
    return t + after_rows;
  };

  if (!sum["cheapest"].is_null()) {
    o += "cheapest feasible\n" + table({by_index[sum["cheapest"]["index"].get<uint64_t>()]}) + "\n";
  }
  o += fmt::format("Pareto frontier: {} against p99 TTFT ({} configurations)\n", objective, sum["pareto"].size());
  std::vector<const Json*> pareto;
  for (const auto& i : sum["pareto"])
    if (pareto.size() < max_rows) pareto.push_back(by_index[i.get<uint64_t>()]);
  o += table(pareto, sum["pareto"].size() > max_rows
                         ? fmt::format("   ... {} more (see --format json or csv)\n", sum["pareto"].size() - max_rows)
                         : "");
  // the cheapest feasible configurations
  std::vector<const Json*> feas;
  for (const auto& r : doc["rows"])
    if (r["feasible"].get<bool>() && !std::isnan(num_or_nan(r, objective))) feas.push_back(&r);
  std::stable_sort(feas.begin(), feas.end(),
                   [&](const Json* a, const Json* b) { return num_or_nan(*a, objective) < num_or_nan(*b, objective); });
  // ties in the objective (within 1e-9 of the first of a run of them) go to the lower p99 TTFT, as
  // "cheapest feasible" does
  for (size_t i = 0; i < feas.size();) {
    const double first = num_or_nan(*feas[i], objective);
    size_t j = i + 1;
    while (j < feas.size() && std::fabs(num_or_nan(*feas[j], objective) - first) <= 1e-9 * std::fabs(first)) ++j;
    std::stable_sort(feas.begin() + long(i), feas.begin() + long(j), [](const Json* a, const Json* b) {
      const double x = num_or_nan(*a, "latency_s.ttft.p99"), y = num_or_nan(*b, "latency_s.ttft.p99");
      return !std::isnan(x) && (std::isnan(y) || x < y);
    });
    i = j;
  }
  if (feas.size() > 1) {
    o += fmt::format("\nthe {} cheapest feasible configurations of {}\n", std::min(max_rows, feas.size()), feas.size());
    feas.resize(std::min(max_rows, feas.size()));
    o += table(feas);
  }
  const uint64_t shown_rows = doc["rows"].size();
  if (shown_rows > max_rows) o += fmt::format("\n(all {} rows: --format csv or json)\n", shown_rows);
  return o;
}
}  // namespace

// Parameter values and names are the user's: printable() before they reach a terminal.
std::string format_sweep_table(const Json& doc, size_t max_rows) { return sweep_table(printable_json(doc), max_rows); }

SweepCsvWriter::SweepCsvWriter(const Json& header, std::function<void(const std::string&)> out) : out_(std::move(out)) {
  for (const auto& p : header["sweep"]["parameters"]) pnames_.push_back(p["path"].get<std::string>());
  const Json& sw = header["sweep"];
  stop_column_ = sw.contains("stop_certain_misses") && sw["stop_certain_misses"].is_boolean() &&
                 sw["stop_certain_misses"].get<bool>();
}

// The header line, with the metric columns of the first measured row (none if no row ran).
void SweepCsvWriter::start(const Json* measured) {
  if (measured) {
    std::vector<std::pair<std::string, const Json*>> leaves;
    numeric_leaves((*measured)["metrics"], "", leaves);
    for (const auto& l : leaves) mpaths_.push_back(l.first);
    for (auto it = (*measured)["ci95"].begin(); it != (*measured)["ci95"].end(); ++it) cpaths_.push_back(it.key());
  }
  std::string out = "index";
  for (const auto& p : pnames_) out += "," + csv_quote(p);
  out += ",feasible,reason,violations,replications";
  if (stop_column_) out += ",stopped_at_s";
  out += ",step_time";
  for (const auto& m : mpaths_) out += "," + csv_quote(m);
  for (const auto& c : cpaths_) out += "," + csv_quote("ci95." + c);
  out_(out + "\n");
  started_ = true;
  for (const auto& r : waiting_) write(r);
  waiting_.clear();
}

void SweepCsvWriter::row(const Json& r) {
  if (!started_ && r["metrics"].is_null()) {
    waiting_.push_back(r);
    return;
  }
  if (!started_) start(&r);
  write(r);
}

void SweepCsvWriter::finish() {
  if (!started_) start(nullptr);
}

void SweepCsvWriter::write(const Json& r) {
  std::string out = std::to_string(r["index"].get<uint64_t>());
  for (const auto& p : pnames_) {
    const Json& v = r["parameters"][p];
    out += "," + csv_quote(v.is_string() ? v.get<std::string>() : v.dump());
  }
  out += r["feasible"].get<bool>() ? ",true," : ",false,";
  out += r["reason"].is_null() ? "" : csv_quote(r["reason"].get<std::string>());
  std::string viol;
  for (const auto& v : r["violations"]) viol += (viol.empty() ? "" : "; ") + v.get<std::string>();
  out += "," + csv_quote(viol);
  out += "," + (r.contains("replications") ? r["replications"].dump() : std::string());
  if (stop_column_) out += "," + (r.contains("stopped_at_s") ? r["stopped_at_s"].dump() : std::string());
  out += "," + (r.contains("step_time") && r["step_time"].is_string() ? csv_quote(r["step_time"].get<std::string>())
                                                                      : std::string());
  for (const auto& m : mpaths_) {
    const Json* v = r["metrics"].is_null() ? nullptr : at_path(r["metrics"], m);
    out += "," + (v && v->is_number() ? v->dump() : std::string());
  }
  for (const auto& c : cpaths_) {
    // (a row from before an interval was added has none for it: an empty cell)
    const Json* v = r["ci95"].is_object() && r["ci95"].contains(c) ? &r["ci95"][c] : nullptr;
    out += "," + (v && v->is_number() ? v->dump() : std::string());
  }
  out_(out + "\n");
}

std::string sweep_to_csv(const Json& doc) {
  std::string out;
  SweepCsvWriter w(doc, [&out](const std::string& s) { out += s; });
  for (const auto& r : doc["rows"]) w.row(r);
  w.finish();
  return out;
}

std::string sweep_jsonl_header(const Json& doc) {
  Json h = Json::object();
  for (auto it = doc.begin(); it != doc.end(); ++it)
    if (it.key() != "summary" && it.key() != "rows") h[it.key()] = it.value();
  return h.dump() + "\n";
}

std::string sweep_jsonl_row(const Json& row) { return row.dump() + "\n"; }

std::string sweep_jsonl_summary(const Json& doc) { return Json{{"summary", doc["summary"]}}.dump() + "\n"; }

}  // namespace fleetsim
