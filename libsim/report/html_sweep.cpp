// The HTML report of a `fleetsim sweep` (or `merge`) document: summary, cost by configuration,
// the cost / p99 TTFT frontier, latency of the chosen configuration, and tables.
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>
#include <map>

#include "report/html_internal.hpp"

namespace fleetsim::html {

namespace {

constexpr size_t kMaxBars = 60;
constexpr size_t kMaxTableRows = 20;
const char* const kTimes = "\xc3\x97";

struct Config {
  std::string index;  // as written
  View row;
  bool feasible = false;
  bool ran = false;      // has metrics
  bool stopped = false;  // ran until its SLO miss was certain: no metrics
  double objective = kNaN;
  double ttft_p99 = kNaN;
};

// Lowest objective first (those without one last); within a run of ties (within 1e-9 of its
// first), the lower p99 TTFT first: the order of the sweep's table and of its cheapest.
void order_by_objective(std::vector<const Config*>& v) {
  std::stable_sort(v.begin(), v.end(), [](const Config* a, const Config* b) {
    if (std::isfinite(a->objective) != std::isfinite(b->objective)) return std::isfinite(a->objective);
    return a->objective < b->objective;
  });
  for (size_t i = 0; i < v.size();) {
    const double first = v[i]->objective;
    size_t j = i + 1;
    while (j < v.size() && std::isfinite(first) && std::fabs(v[j]->objective - first) <= 1e-9 * std::fabs(first)) ++j;
    std::stable_sort(v.begin() + long(i), v.begin() + long(j), [](const Config* a, const Config* b) {
      return std::isfinite(a->ttft_p99) && (!std::isfinite(b->ttft_p99) || a->ttft_p99 < b->ttft_p99);
    });
    i = j;
  }
}

struct Sweep {
  std::string objective;
  std::vector<std::pair<std::string, View>> params;  // path, values
  std::vector<std::string> varying;
  std::map<std::string, std::string> short_name;
  std::string device_param, replicas_param, tp_param;
  std::vector<Config> rows;
  const Config* chosen = nullptr;    // the cheapest feasible
  const Config* compared = nullptr;  // the cheapest feasible on another device

  std::string device_phrase(const Config& c) const {
    const View p = c.row["parameters"];
    const std::string dev = device_param.empty() ? "" : p[device_param].text();
    const std::string rep = replicas_param.empty() ? "" : p[replicas_param].text();
    // a replica of several devices is named as such: "2 replicas of 4 × h100-sxm-80gb", not "2 × h100"
    const std::string tp = tp_param.empty() ? "" : p[tp_param].text();
    if (!dev.empty() && !tp.empty() && tp != "1")
      return (rep.empty() ? std::string("replicas") : rep + (rep == "1" ? " replica" : " replicas")) + " of " + tp +
             " " + kTimes + " " + dev;
    if (!dev.empty()) return rep.empty() ? dev : rep + " " + kTimes + " " + dev;
    if (!rep.empty()) return rep + (rep == "1" ? " replica" : " replicas");
    return "";
  }
  // "#3 · 2 × h200-141gb · max_num_seqs 128"
  std::string label(const Config& c, bool with_index = true) const {
    std::string s = with_index ? "#" + c.index : "";
    auto add = [&](const std::string& part) {
      if (!part.empty()) s += (s.empty() ? "" : " \xc2\xb7 ") + part;
    };
    add(device_phrase(c));
    for (const auto& v : varying)
      if (v != device_param && v != replicas_param && (v != tp_param || device_param.empty()))
        add(short_name.at(v) + " " + c.row["parameters"][v].text());
    return s;
  }
};

bool ends_with(const std::string& s, const std::string& e) {
  return s.size() >= e.size() && s.compare(s.size() - e.size(), e.size(), e) == 0;
}

Sweep read_sweep(const View& d) {
  Sweep S;
  S.objective = d["sweep"]["objective"].str();
  if (S.objective.empty()) S.objective = "cost.per_million_tokens_usd";
  for (const View& p : d["sweep"]["parameters"].elements())
    if (!p["path"].str().empty()) S.params.emplace_back(p["path"].str(), p["values"]);
  if (S.params.empty())  // an older or partial document: the parameters the rows name
    for (const View& r : d["rows"].elements())
      for (const auto& kv : r["parameters"].items())
        if (std::none_of(S.params.begin(), S.params.end(), [&](const auto& q) { return q.first == kv.first; }))
          S.params.emplace_back(kv.first, View());
  // labels name the parameters that differ between configurations that ran
  for (const auto& [path, values] : S.params) {
    std::vector<std::string> seen;
    for (const View& r : d["rows"].elements())
      if (r["metrics"].is_object() && std::find(seen.begin(), seen.end(), r["parameters"][path].text()) == seen.end())
        seen.push_back(r["parameters"][path].text());
    if (seen.size() > 1 || (seen.empty() && values.size() != 1)) S.varying.push_back(path);
    if (S.device_param.empty() && (path == "device" || ends_with(path, ".device"))) S.device_param = path;
    if (S.replicas_param.empty() && (path == "fleet.replicas" || ends_with(path, ".fleet.replicas")))
      S.replicas_param = path;
    if (S.tp_param.empty() && (path == "engine.tensor_parallel" || ends_with(path, ".engine.tensor_parallel")))
      S.tp_param = path;
  }
  for (const auto& [path, values] : S.params) {
    const std::string last = path.substr(path.rfind('.') == std::string::npos ? 0 : path.rfind('.') + 1);
    const bool clash =
        std::count_if(S.params.begin(), S.params.end(), [&](const auto& q) {
          return q.first.substr(q.first.rfind('.') == std::string::npos ? 0 : q.first.rfind('.') + 1) == last;
        }) > 1;
    S.short_name[path] = clash ? path : last;
  }
  for (const View& r : d["rows"].elements()) {
    Config c;
    c.index = r["index"].text();
    c.row = r;
    c.ran = r["metrics"].is_object();
    c.stopped = !c.ran && r["stopped_at_s"].num().has_value();
    c.feasible = c.ran && r["feasible"].flag().value_or(false);
    c.objective = r["metrics"].path(S.objective).num_or(kNaN);
    c.ttft_p99 = r["metrics"]["latency_s"]["ttft"]["p99"].num_or(kNaN);
    S.rows.push_back(c);
  }
  // b before a: a lower objective, or a tie in it (within 1e-9) and a lower p99 TTFT, as the
  // sweep's summary picks its cheapest
  auto cheaper = [](const Config* a, const Config& b) {
    if (!a) return true;
    if (!std::isfinite(b.objective)) return false;
    if (!std::isfinite(a->objective)) return true;
    if (std::fabs(b.objective - a->objective) <= 1e-9 * std::fabs(a->objective))
      return std::isfinite(b.ttft_p99) && (!std::isfinite(a->ttft_p99) || b.ttft_p99 < a->ttft_p99);
    return b.objective < a->objective;
  };
  const std::string want = d["summary"]["cheapest"]["index"].text();
  for (const auto& c : S.rows)
    if (!want.empty() && c.index == want) S.chosen = &c;
  if (!S.chosen)
    for (const auto& c : S.rows)
      if (c.feasible && cheaper(S.chosen, c)) S.chosen = &c;
  if (S.chosen && !S.device_param.empty()) {
    const std::string dev = S.chosen->row["parameters"][S.device_param].text();
    for (const auto& c : S.rows)
      if (c.feasible && c.row["parameters"][S.device_param].text() != dev && cheaper(S.compared, c)) S.compared = &c;
  }
  return S;
}

std::string objective_phrase(const std::string& objective) {
  const std::string n = metric_name(objective);
  if (n == "total cost") return "in total";
  if (n.rfind("cost ", 0) == 0) return n.substr(5);
  return "by " + n;
}

std::string slo_text(const View& slo) {
  std::string s;
  for (const View& b : slo.elements()) {
    const std::string m = b["metric"].str();
    const auto lim = b["limit"].num();
    if (m.empty() || !lim) continue;
    s += (s.empty() ? "" : ", ") + metric_name(m) + (b["bound"].str() == "min" ? " \xe2\x89\xa5 " : " \xe2\x89\xa4 ") +
         metric_value(m, *lim);
  }
  return s;
}

std::optional<double> ttft_p99_limit(const View& slo) {
  for (const View& b : slo.elements())
    if (b["metric"].str() == "latency_s.ttft.p99" && b["bound"].str() != "min" && b["limit"].num())
      return b["limit"].num();
  return std::nullopt;
}

std::string cost_figure(const Sweep& S) {
  std::vector<const Config*> pick;
  size_t feasible = 0;
  for (const auto& c : S.rows) feasible += c.feasible;
  for (const auto& c : S.rows)
    if (feasible ? c.feasible : c.ran) pick.push_back(&c);
  if (pick.empty()) return note("No configuration ran: no costs to draw.");
  order_by_objective(pick);
  const size_t total = pick.size();
  if (pick.size() > kMaxBars) pick.resize(kMaxBars);
  const svg::Format money = [](double v) { return svg::usd(v); };
  const bool obj_out = S.objective == "cost.per_million_output_tokens_usd";
  const bool obj_in = S.objective == "cost.per_million_input_tokens_usd";
  svg::BarPanel obj{
      metric_name(S.objective), [&](double v) { return metric_value(S.objective, v); }, {}, {}, "cost-objective"};
  svg::BarPanel out{"USD per 1M output tokens", money, {}, {}, "cost-output"};
  svg::BarPanel in{"USD per 1M input tokens", money, {}, {}, "cost-input"};
  svg::BarChart ch;
  for (const Config* c : pick) {
    const View cost = c->row["metrics"]["cost"];
    const bool mark = c == S.chosen;
    ch.rows.push_back(S.label(*c));
    ch.marked.push_back(mark);
    obj.values.push_back({c->objective});
    out.values.push_back({cost["per_million_output_tokens_usd"].num_or(kNaN)});
    in.values.push_back({cost["per_million_input_tokens_usd"].num_or(kNaN)});
  }
  ch.series = {{"cost", feasible ? svg::color(0) : "#9498a0"}};
  if (!obj_out && !obj_in) ch.panels.push_back(obj);
  ch.panels.push_back(out);
  ch.panels.push_back(in);
  std::string cap = feasible
                        ? "The configurations that meet the SLO, cheapest first (by " + metric_name(S.objective) +
                              "); the cheapest is highlighted."
                        : "No configuration meets the SLO: these are the configurations that ran, cheapest first (by " +
                              metric_name(S.objective) + ").";
  cap += " Input and output tokens are priced separately (each step's device time split between prefill and decode).";
  if (total > pick.size())
    cap += " Showing the " + std::to_string(pick.size()) + " cheapest of " + std::to_string(total) + "; " +
           std::to_string(total - pick.size()) + " more expensive configurations are left out.";
  return figure("cost-per-token", svg::bar_chart(ch, "Cost per million tokens by configuration"), esc(cap));
}

std::string pareto_figure(const Sweep& S, const View& d) {
  svg::Series front{"Pareto frontier", "#efb118", {}, {}, {}, svg::Mark::line, false, 2.5, "frontier"};
  svg::Series bad{"misses the SLO", "#9498a0", {}, {}, {}, svg::Mark::cross, false, 2, "infeasible"};
  svg::Series good{"meets the SLO", svg::color(0), {}, {}, {}, svg::Mark::dots, false, 2, "feasible"};
  size_t cannot = 0, stopped = 0;
  std::map<std::string, const Config*> by_index;
  for (const auto& c : S.rows) {
    by_index[c.index] = &c;
    if (!c.ran) {
      ++(c.stopped ? stopped : cannot);
      continue;
    }
    svg::Series& s = c.feasible ? good : bad;
    s.pts.push_back({c.ttft_p99, c.objective});
    s.tips.push_back(S.label(c) + "\n" + metric_name(S.objective) + " " + metric_value(S.objective, c.objective) +
                     "\np99 TTFT " + svg::seconds(c.ttft_p99));
  }
  if (good.pts.empty() && bad.pts.empty()) return note("No configuration ran: no frontier to draw.");
  for (const View& i : d["summary"]["pareto"].elements()) {
    const auto it = by_index.find(i.text());
    if (it != by_index.end() && it->second->ran) front.pts.push_back({it->second->ttft_p99, it->second->objective});
  }
  svg::XYPanel p;
  p.title = metric_name(S.objective) + " against p99 TTFT";
  p.cls = "pareto";
  p.x.label = "p99 TTFT";  // the ticks carry their unit (ms, s)
  p.x.fmt = [](double v) { return svg::seconds_axis(v); };
  p.y.label = metric_name(S.objective);
  p.y.fmt = [&](double v) { return metric_value(S.objective, v); };
  double xlo = 1e300, xhi = 0, ylo = 1e300, yhi = 0;
  for (const auto* s : {&good, &bad})
    for (const auto& q : s->pts) {
      if (std::isfinite(q.x) && q.x > 0) xlo = std::min(xlo, q.x), xhi = std::max(xhi, q.x);
      if (std::isfinite(q.y) && q.y > 0) ylo = std::min(ylo, q.y), yhi = std::max(yhi, q.y);
    }
  if (xhi > 20 * xlo) p.x.kind = svg::ScaleKind::log, p.x.label = "p99 TTFT (log scale)";
  if (yhi > 100 * ylo) p.y.kind = svg::ScaleKind::log, p.y.label += " (log scale)";
  if (!front.pts.empty()) p.series.push_back(front);
  if (!bad.pts.empty()) p.series.push_back(bad);
  if (!good.pts.empty()) p.series.push_back(good);
  if (const auto lim = ttft_p99_limit(d["sweep"]["slo"]))
    p.refs.push_back({true, *lim, "SLO: p99 TTFT \xe2\x89\xa4 " + svg::seconds(*lim), "#b42318", std::nullopt});
  if (S.chosen && S.chosen->ran)
    p.highlights.push_back({{S.chosen->ttft_p99, S.chosen->objective}, "cheapest: #" + S.chosen->index});
  std::string cap = "Every configuration that ran: its " + metric_name(S.objective) +
                    " against its p99 TTFT. Dots meet every SLO bound, crosses miss one. The line is the Pareto "
                    "frontier: no configuration is both cheaper and faster than a point on it.";
  if (S.chosen) cap += " The ring marks the cheapest configuration that meets the SLO.";
  if (cannot) cap += " " + std::to_string(cannot) + " configurations that cannot run are not drawn.";
  if (stopped)
    cap += " " + std::to_string(stopped) +
           (stopped == 1 ? " configuration whose run stopped once its SLO miss was certain has no figures and is"
                         : " configurations whose run stopped once its SLO miss was certain have no figures and are") +
           " not drawn.";
  return figure("pareto", svg::xy_chart({p}, 1, 420, "Cost against p99 TTFT"), esc(cap));
}

std::string latency_section(const Sweep& S, const View& d) {
  const Config* a = S.chosen;
  if (!a)  // none meets the SLO: the first of the frontier
    for (const View& i : d["summary"]["pareto"].elements())
      for (const auto& c : S.rows)
        if (!a && c.ran && c.index == i.text()) a = &c;
  if (!a || !a->ran) return note("No configuration ran: no latency to draw.");
  std::vector<LatencyCurve> curves = {
      {S.label(*a) + (a->feasible ? "" : " (misses the SLO)"), svg::color(0), a->row["metrics"]["latency_s"], false}};
  if (S.compared)
    curves.push_back({S.label(*S.compared), svg::color(2), S.compared->row["metrics"]["latency_s"], true});
  std::vector<LatencyBound> bounds;
  for (const View& b : d["sweep"]["slo"].elements()) {
    const std::string m = b["metric"].str();
    const auto lim = b["limit"].num();
    if (m.rfind("latency_s.", 0) != 0 || !lim || b["bound"].str() == "min") continue;
    const size_t dot = m.find('.', 10);
    if (dot == std::string::npos) continue;
    const std::string metric = m.substr(10, dot - 10), pct = m.substr(dot + 1);
    LatencyBound lb{metric, *lim, std::nullopt,
                    "SLO " + (pct == "p999" ? std::string("p99.9") : pct) + " \xe2\x89\xa4 " + svg::seconds(*lim)};
    if (pct != "mean") {
      if (pct == "max")
        lb.level = 1.0;
      else if (pct.size() >= 2 && pct[0] == 'p')
        lb.level = std::atof(pct.c_str() + 1) / std::pow(10.0, double(pct.size() - 1));
    }
    bounds.push_back(lb);
  }
  const std::string lead = S.compared ? "Latency of the cheapest configuration that meets the SLO, and (dashed) of the "
                                        "cheapest one on another device."
                           : a->feasible ? "Latency of the cheapest configuration that meets the SLO."
                                         : "Latency of the first configuration on the frontier.";
  const std::string f = latency_figure(curves, bounds, lead);
  return f.empty() ? note("No latency in the chosen configuration's metrics.") : f;
}

std::string tables(const Sweep& S) {
  std::string o;
  std::vector<std::string> head = {"#"};
  for (const auto& v : S.varying) head.push_back(esc(S.short_name.at(v)));
  const size_t first_num = head.size();
  std::vector<const Config*> ok;
  for (const auto& c : S.rows)
    if (c.feasible) ok.push_back(&c);
  // each interval beside the figure it is of, where the rows carry one (docs/output-schema.md:
  // `ci95`): the objective's and p99 TTFT's
  const std::string ttft_path = "latency_s.ttft.p99";
  auto has_ci = [&](const std::string& path) {
    return std::any_of(ok.begin(), ok.end(), [&](const Config* c) { return c->row["ci95"][path].num().has_value(); });
  };
  const bool obj_ci = has_ci(S.objective), ttft_ci = S.objective != ttft_path && has_ci(ttft_path);
  const char* const pm = " \xc2\xb1 95%";
  const bool obj_col = S.objective != "cost.per_million_output_tokens_usd" &&
                       S.objective != "cost.per_million_input_tokens_usd" && S.objective != ttft_path;
  auto label = [&](const std::string& h, const std::string& path) {
    return h + ((path == S.objective && obj_ci) || (path == ttft_path && ttft_ci) ? pm : "");
  };
  head.push_back(label("per 1M output", "cost.per_million_output_tokens_usd"));
  head.push_back(label("per 1M input", "cost.per_million_input_tokens_usd"));
  head.push_back(label("p99 TTFT", ttft_path));
  head.push_back("p99 e2e");
  head.push_back("Busy");
  if (obj_col) head.insert(head.begin() + long(first_num), esc(metric_name(S.objective)) + (obj_ci ? pm : ""));
  order_by_objective(ok);
  std::vector<Row> rows;
  for (size_t i = 0; i < ok.size() && i < kMaxTableRows; ++i) {
    const Config& c = *ok[i];
    const View m = c.row["metrics"];
    // a figure and, where its column has intervals, "± half-width" in the figure's own format
    auto cell = [&](const std::string& path, double v, const svg::Format& f) {
      const bool with = (path == S.objective && obj_ci) || (path == ttft_path && ttft_ci);
      const auto ci = c.row["ci95"][path].num();
      return f(v) + (with ? " \xc2\xb1 " + (ci ? f(*ci) : svg::num(kNaN)) : "");
    };
    const svg::Format usd = [](double v) { return svg::usd(v); };
    const svg::Format sec = [](double v) { return svg::seconds(v); };
    Row r{{esc(c.index)}, &c == S.chosen ? "marked" : ""};
    for (const auto& v : S.varying) r.cells.push_back(esc(c.row["parameters"][v].text()));
    if (obj_col)
      r.cells.push_back(cell(S.objective, c.objective, [&](double v) { return metric_value(S.objective, v); }));
    r.cells.push_back(
        cell("cost.per_million_output_tokens_usd", m["cost"]["per_million_output_tokens_usd"].num_or(kNaN), usd));
    r.cells.push_back(
        cell("cost.per_million_input_tokens_usd", m["cost"]["per_million_input_tokens_usd"].num_or(kNaN), usd));
    r.cells.push_back(cell(ttft_path, c.ttft_p99, sec));
    r.cells.push_back(svg::seconds(m["latency_s"]["e2e"]["p99"].num_or(kNaN)));
    r.cells.push_back(svg::percent(m["utilization"]["busy_fraction"].num_or(kNaN)));
    rows.push_back(r);
  }
  std::string cap = ok.size() > kMaxTableRows ? fmt::format("The {} cheapest of {} configurations that meet the SLO",
                                                            kMaxTableRows, ok.size())
                                              : "Configurations that meet the SLO";
  o += table(head, rows, cap, first_num);

  // why the others are out, grouped by reason
  std::vector<std::pair<std::string, std::vector<const Config*>>> groups;
  for (const auto& c : S.rows) {
    if (c.feasible) continue;
    std::string reason = c.row["reason"].str();
    if (reason.empty()) reason = c.ran ? "misses the SLO" : "did not run";
    if (c.stopped) reason += " (certain before its run ended: stopped there)";
    auto it = std::find_if(groups.begin(), groups.end(), [&](const auto& g) { return g.first == reason; });
    if (it == groups.end())
      groups.push_back({reason, {&c}});
    else
      it->second.push_back(&c);
  }
  std::stable_sort(groups.begin(), groups.end(),
                   [](const auto& a, const auto& b) { return a.second.size() > b.second.size(); });
  std::vector<Row> gr;
  for (const auto& [reason, cs] : groups) {
    std::string ex;
    for (size_t i = 0; i < cs.size() && i < 5; ++i) ex += (i ? ", #" : "#") + esc(cs[i]->index);
    if (cs.size() > 5) ex += ", \xe2\x80\xa6";
    const std::string first_violation = cs[0]->row["violations"][size_t(0)].str();
    gr.push_back({{esc(reason) + (first_violation.empty() ? ""
                                                          : "<br><span class=\"note\">e.g. #" + esc(cs[0]->index) +
                                                                ": " + esc(first_violation) + "</span>"),
                   std::to_string(cs.size()), ex},
                  ""});
    if (gr.size() >= 12) break;
  }
  o += table({"Reason", "Configurations", "Which"}, gr, "Configurations that miss the SLO or cannot run");

  std::vector<Row> pr;
  for (const auto& [path, values] : S.params) {
    std::string vs;
    for (const View& v : values.elements()) vs += (vs.empty() ? "" : ", ") + esc(v.text());
    pr.push_back({{"<code>" + esc(path) + "</code>", vs}, ""});
  }
  o += table({"Parameter", "Values"}, pr, "Parameters swept", 2);
  return o;
}

}  // namespace

Page sweep_page(const Json& doc) {
  const View d(doc);
  const View sw = d["sweep"], sm = d["summary"];
  const Sweep S = read_sweep(d);
  Page p;
  p.title = d["scenario"]["name"].str().empty() ? "fleetsim sweep" : d["scenario"]["name"].str();
  std::vector<std::string> meta = {"Sweep report"};
  if (const auto src = d["scenario"]["source"].str(); !src.empty())
    meta.push_back("scenario <code>" + esc(src) + "</code>");
  if (const auto s = d["scenario"]["seed"].text(); !s.empty()) meta.push_back("seed " + esc(s));
  if (const auto n = sw["configurations"].num())
    meta.push_back(svg::num(*n) + " configurations" +
                   (sw["replications"].num()
                        ? " " + std::string(kTimes) + " " + svg::num(*sw["replications"].num()) + " replications"
                        : ""));
  meta.push_back("objective: " + esc(metric_name(S.objective)) + " (lowest wins)");
  const std::string slo = slo_text(sw["slo"]);
  if (!slo.empty()) meta.push_back("SLO: " + esc(slo));
  for (size_t i = 0; i < meta.size(); ++i) p.meta += (i ? " \xc2\xb7 " : "") + meta[i];

  size_t feasible = 0, miss = 0, cannot = 0;
  for (const auto& c : S.rows) c.feasible ? ++feasible : c.ran || c.stopped ? ++miss : ++cannot;
  std::string s = "Of " + std::to_string(S.rows.size()) + " configurations, " + std::to_string(feasible) +
                  (slo.empty() ? " ran" : " meet the SLO (" + esc(slo) + ")") + ", " + std::to_string(miss) +
                  " miss it and " + std::to_string(cannot) + " cannot run. ";
  const auto lim = ttft_p99_limit(sw["slo"]);
  const Config* a = S.chosen;
  if (a) {
    s += "The cheapest that meets it is <strong>" + esc(S.label(*a)) + "</strong> at <strong>" +
         metric_value(S.objective, a->objective) + " " + esc(objective_phrase(S.objective)) +
         "</strong>, with p99 TTFT " + svg::seconds(a->ttft_p99) + ". ";
    if (const Config* b = S.compared) {
      const std::string A = esc(S.device_phrase(*a)), B = esc(S.device_phrase(*b));
      const double save = b->objective > 0 ? 1 - a->objective / b->objective : kNaN;
      s += A +
           (std::isfinite(save) && save >= 0.005
                ? " costs <strong>" + svg::num(100 * save, 2) + "% less " + esc(objective_phrase(S.objective)) +
                      "</strong> than "
                : " costs about the same " + esc(objective_phrase(S.objective)) + " as ") +
           B + " (#" + esc(b->index) + ", the cheapest on another device)";
      if (lim && a->ttft_p99 <= *lim)
        s += " and keeps p99 TTFT under " + svg::seconds(*lim) + " (" + svg::seconds(a->ttft_p99) + " against " +
             svg::seconds(b->ttft_p99) + ").";
      else
        s += ", with p99 TTFT " + svg::seconds(a->ttft_p99) + " against " + svg::seconds(b->ttft_p99) + ".";
    } else if (!S.device_param.empty()) {
      s += "No configuration on another device meets the SLO.";
    }
  } else {
    s += "<span class=\"bad\">No configuration meets the SLO.</span> ";
    // the sweep's message starts with what the headline already says
    std::string m = sm["message"].str();
    const std::string said = "no configuration meets the SLO";
    if (m.compare(0, said.size(), said) == 0)
      m = m.substr(m.find_first_not_of(";.: ", said.size()) == std::string::npos
                       ? m.size()
                       : m.find_first_not_of(";.: ", said.size()));
    if (!m.empty()) {
      m[0] = char(std::toupper(static_cast<unsigned char>(m[0])));
      s += esc(m) + (m.back() == '.' ? "" : ".");
    }
  }
  const auto run = sm["configurations_run"].num(), all = sw["configurations"].num();
  const bool partial = (run && all && *run < *all) || !sm["complete"].flag().value_or(true);
  std::string kp = kpi("Configurations", std::to_string(S.rows.size()),
                       std::to_string(feasible) + (slo.empty() ? " ran" : " meet the SLO"));
  if (a) {
    kp += kpi("Cheapest", metric_value(S.objective, a->objective),
              esc(objective_phrase(S.objective)) + " (#" + esc(a->index) + ")");
    kp += kpi("Its p99 TTFT", svg::seconds(a->ttft_p99), lim ? "SLO " + svg::seconds(*lim) : "");
    if (S.compared && S.compared->objective > 0)
      kp += kpi("Saving", svg::percent(1 - a->objective / S.compared->objective, 2),
                "against #" + esc(S.compared->index) + " (" + esc(S.device_phrase(*S.compared)) + ")");
  }

  std::string& b = p.body;
  b += "<section id=\"summary\"><h2>Summary</h2><p class=\"lead\">" + s + "</p><dl class=\"kpis\">" + kp + "</dl>";
  if (partial)
    b += note("This document holds " + svg::num(run.value_or(double(S.rows.size()))) + " of " +
              svg::num(all.value_or(kNaN)) + " configurations" +
              (d["shard"]["count"].num_or(1) > 1
                   ? " (shard " + esc(d["shard"]["index"].text()) + " of " + esc(d["shard"]["count"].text()) + ")"
                   : std::string()) +
              ": merge the shards (<code>fleetsim merge</code>) for the whole sweep.");
  // which step-time model priced the configurations, and how sure it is (as a run's report says)
  // (a sentence may hold "; " itself: several are a list, one item each)
  std::vector<std::string> steps;
  for (const View& m : sm["step_time"].elements()) {
    const double n = m["configurations"].num_or(kNaN);
    steps.push_back(esc(m["model"].str()) + " (" + svg::num(n) + " configuration" + (n == 1 ? "" : "s") + ")");
  }
  if (steps.size() == 1) b += note("Step time: " + steps[0] + ".");
  if (steps.size() > 1) {
    b += note("Step time, by the configurations each model priced:") + "<ul class=\"steps\">";
    for (const auto& x : steps) b += "<li>" + x + "</li>";
    b += "</ul>";
  }
  b += "</section>\n";
  b += "<section><h2>Cost per token</h2>" + cost_figure(S) + "</section>\n";
  b += "<section><h2>Cost against latency</h2>" + pareto_figure(S, d) + "</section>\n";
  b += "<section><h2>Latency</h2>" + latency_section(S, d) + "</section>\n";
  b += "<section><h2>Configurations</h2>" + tables(S) + "</section>\n";
  return p;
}

}  // namespace fleetsim::html
