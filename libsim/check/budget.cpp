#include "check/budget.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>

#include "backend/runner.hpp"
#include "backend/windows.hpp"
#include "input/input_file.hpp"
#include "input/yaml_node.hpp"
#include "sweep/internal.hpp"
#include "sweep/sweep.hpp"

namespace fleetsim {

using detail::N;
using detail::Source;

namespace {

// Friendly names for the figures CI budgets most often hold.
const std::map<std::string, std::string>& aliases() {
  static const std::map<std::string, std::string> a = {
      {"monthly_spend_usd", "ledger.projection_30d.effective_usd"},
      {"p99_ttft_s", "latency_s.ttft.p99"},
      {"p99_e2e_s", "latency_s.e2e.p99"},
      {"cost_per_million_output_tokens_usd", "cost.per_million_output_tokens_usd"},
      {"rejection_fraction", "requests.rejection_fraction"},
      {"goodput_per_s", "throughput.goodput_per_s"},
      {"busy_fraction", "utilization.busy_fraction"},
  };
  return a;
}

std::string resolve(const std::string& metric) {
  const auto it = aliases().find(metric);
  return it == aliases().end() ? metric : it->second;
}

}  // namespace

std::string Budget::path() const { return cls.empty() ? resolve(metric) : "classes." + cls + "." + resolve(metric); }

namespace {
// `budgets.NAME.KEY=...`, or the whole section: `budgets={...}`
bool is_budgets_set(const std::string& text) {
  return text.rfind("budgets.", 0) == 0 || text.rfind("budgets=", 0) == 0;
}
}  // namespace

std::vector<std::string> scenario_sets(const std::vector<std::string>& sets) {
  std::vector<std::string> out;
  for (const auto& s : sets)
    if (!is_budgets_set(s)) out.push_back(s);
  return out;
}

BudgetSpec parse_budgets(const std::string& file, const std::vector<std::string>& sets, bool require,
                         bool budgets_only) {
  return parse_budgets_text(read_text_file(file, "budgets file", kMaxTextInputBytes), file, sets, require,
                            budgets_only);
}

BudgetSpec parse_budgets_text(const std::string& text, const std::string& file, const std::vector<std::string>& sets,
                              bool require, bool budgets_only) {
  Source src;
  src.file = file;
  src.lines = detail::split_lines(text);
  YAML::Node root = detail::load_located(text, src);
  BudgetSpec spec;
  spec.source = file;
  const N r{root, "", &src};
  if (root.IsMap())
    for (const auto& text : sets)
      if (is_budgets_set(text)) detail::apply_override(root, parse_set(text), src);
  if (!root.IsMap() || !r.has("budgets")) {
    if (!require) return spec;
    r.fail("no budgets section: add e.g. `budgets: {p99-ttft: {metric: latency_s.ttft.p99, max: 1.0}}`");
  }
  // a budgets file holds nothing else: a misspelt key there would drop budgets without a word
  if (budgets_only) r.allow_keys({"budgets"});
  const N b = r.at("budgets");
  b.require_map();
  for (auto it = b.node.begin(); it != b.node.end(); ++it) {
    const std::string key = b.key_name(it->first);
    if (key.find_first_not_of(" \t") == std::string::npos)
      N{it->first, b.path, &src}.fail(
          "expected a budget name, got an empty one (it names the budget's line, its JUnit test case and --set "
          "budgets.NAME.KEY)");
    const N e{it->second, b.path + "." + key, &src};
    if (key == "replications") {
      spec.replications = int(e.integer(1, 1000));
      continue;
    }
    e.require_map();
    e.allow_keys({"metric", "max", "min", "class", "window_s"});
    Budget bu;
    bu.name = key;
    bu.where = e.where();
    bu.metric = e.req("metric").str();
    bu.metric_at = e.at("metric").where();
    if (e.has("max") == e.has("min"))
      e.fail("give exactly one of max (the value must stay at or below) and min (at or above)");
    bu.is_max = e.has("max");
    bu.limit = e.at(bu.is_max ? "max" : "min").num();
    if (!std::isfinite(bu.limit)) e.at(bu.is_max ? "max" : "min").fail("expected a finite number");
    if (bu.is_max && bu.limit < 0 && sweep_detail::never_negative(resolve(bu.metric)))
      e.at("max").fail(fmt::format("{} is never negative, so at most {:g} can never be met", bu.metric, bu.limit));
    // the budget is reported where its limit was written (a --set that changed it, or the file)
    bu.where = e.at(bu.is_max ? "max" : "min").where();
    if (e.has("class")) bu.cls = e.at("class").name(), bu.class_at = e.at("class").where();
    if (e.has("window_s")) bu.window_s = e.at("window_s").pos(30.0 * 86400), bu.window_at = e.at("window_s").where();
    spec.budgets.push_back(bu);
  }
  if (spec.budgets.empty()) b.fail("no budgets (expected e.g. p99-ttft: {metric: latency_s.ttft.p99, max: 1.0})");
  return spec;
}

namespace {

// The figure a budget reads in a run report: a class's under classes.<name>, the name taken whole
// (a class name may hold a dot, which a joined path would split).
const Json* budget_value(const Json& rep, const Budget& b) {
  if (b.cls.empty()) return sweep_detail::at_path(rep, resolve(b.metric));
  const auto classes = rep.find("classes");
  if (classes == rep.end() || !classes->is_object()) return nullptr;
  const auto c = classes->find(b.cls);
  return c == classes->end() ? nullptr : sweep_detail::at_path(*c, resolve(b.metric));
}

// The report path a budget reads, checked against the scenario's report shape.
void check_against(const Budget& b, const Scenario& s, const Json& shape) {
  if (!b.cls.empty()) {
    const bool known = std::any_of(s.classes.begin(), s.classes.end(), [&](const auto& c) { return c.name == b.cls; });
    if (!known) {
      std::string all;
      for (const auto& c : s.classes) all += (all.empty() ? "" : ", ") + c.name;
      throw InputError(b.class_at, fmt::format("budgets.{}: no request class '{}' in {} (expected one of: {})", b.name,
                                               b.cls, s.source, all));
    }
  }
  const Json* v = budget_value(shape, b);
  if (!v || !(v->is_number() || v->is_null()))
    throw InputError(b.metric_at,
                     fmt::format("budgets.{}: '{}' is not a number in the run report (expected a path such as "
                                 "latency_s.ttft.p99, cost.per_million_output_tokens_usd or monthly_spend_usd; "
                                 "docs/output-schema.md lists them)",
                                 b.name, b.metric));
  const double span = s.duration_s - s.warmup_s;
  if (b.window_s > span * (1.0 + 1e-12))  // (a window of the span itself, however duration_s - warmup_s rounds)
    throw InputError(b.window_at,
                     fmt::format("budgets.{}: window_s {:g} is longer than the measured {:g} s (duration_s - "
                                 "warmup_s)",
                                 b.name, b.window_s, span));
  // each window is measured on a copy of every replication's run: their count is bounded
  if (b.window_s > 0 && span / b.window_s > kMaxBudgetWindows)
    throw InputError(b.window_at,
                     fmt::format("budgets.{}: window_s {:g} cuts the measured {:g} s into {:.0f} windows; at "
                                 "most {} (window_s >= {:g})",
                                 b.name, b.window_s, span, std::floor(span / b.window_s), kMaxBudgetWindows,
                                 span / kMaxBudgetWindows));
}

// A single-class scenario's report has no `classes`: its one class is the whole report.
Budget normalized(Budget b, const Scenario& s) {
  if (!s.multi && !b.cls.empty() && s.classes.size() == 1 && b.cls == s.classes[0].name) b.cls.clear();
  return b;
}

// Every budget's values by measurement window and replication.
struct Values {
  std::vector<std::vector<std::vector<double>>> v;  // [budget][window][replication] (NaN: no value)
  std::vector<std::vector<double>> from_s;          // [budget][window]: where it starts (-1: the whole run)
};

Values evaluate(const Scenario& s, const std::vector<Budget>& budgets, int reps, int threads, int& sims,
                const CheckProgress& progress, const std::string& stage) {
  // the measurement windows each budget needs
  std::vector<double> lengths;  // 0: the whole run
  for (const auto& b : budgets)
    if (std::find(lengths.begin(), lengths.end(), b.window_s) == lengths.end()) lengths.push_back(b.window_s);
  struct Window {
    double length, from, to;
  };
  std::vector<Window> windows;
  for (double len : lengths) {
    if (len == 0) {
      windows.push_back({0, s.warmup_s, s.duration_s});
      continue;
    }
    const int n = std::max(1, int(std::floor((s.duration_s - s.warmup_s) / len + 1e-9)));
    for (int k = 0; k < n; ++k)
      windows.push_back({len, s.warmup_s + k * len, std::min(s.duration_s, s.warmup_s + (k + 1) * len)});
    // a remainder shorter than a window is judged too, in the window that ends with the span
    if (s.warmup_s + n * len < s.duration_s - 1e-9 * len) windows.push_back({len, s.duration_s - len, s.duration_s});
  }
  // the sub-windows (a budget's window_s) are measured on copies of each replication's run
  std::vector<MeasureWindow> sub;
  std::vector<size_t> sub_slot;
  for (size_t w = 0; w < windows.size(); ++w)
    if (windows[w].length > 0) {
      sub.push_back({windows[w].from, windows[w].to});
      sub_slot.push_back(w);
    }

  Values out;
  out.v.assign(budgets.size(),
               std::vector<std::vector<double>>(windows.size(), std::vector<double>(size_t(reps), std::nan(""))));
  std::mutex progress_mutex;
  size_t done = 0;
  auto record = [&](size_t w, size_t r, const Tally& t) {
    const Json rep = run_report(s, t);
    for (size_t b = 0; b < budgets.size(); ++b) {
      if (budgets[b].window_s != windows[w].length) continue;
      const Json* v = budget_value(rep, budgets[b]);
      if (v && v->is_number()) out.v[b][w][r] = v->get<double>();
    }
    if (progress) {
      std::lock_guard<std::mutex> lock(progress_mutex);
      progress(sims + int(++done), stage);
    }
  };
  // replications side by side; each is run whole once (the whole-run window, and the figures no
  // window clips: max_replicas, events), and its sub-windows measured on copies of a second run
  const int outer = std::max(1, std::min(threads, reps));
  const int inner = std::max(1, threads / outer);
  parallel_jobs(size_t(reps), outer, [&](size_t r, HostWorkspace& ws) {
    const auto whole = simulate_once(s.params(), uint32_t(r), ws);
    check_status(*whole, s.source);
    for (size_t w = 0; w < windows.size(); ++w)
      if (windows[w].length == 0) record(w, r, *whole);
    if (sub.empty()) return;
    measure_windows(s, uint32_t(r), sub, inner, [&](size_t k, const Tally& t) {
      auto patched = std::make_unique<Tally>(t);
      unclipped_from(*patched, *whole);
      record(sub_slot[k], r, *patched);
    });
  });
  sims += int(windows.size()) * reps;
  // keep, for each budget, only its own windows (in order), with their start times
  out.from_s.assign(budgets.size(), {});
  for (size_t b = 0; b < budgets.size(); ++b) {
    std::vector<std::vector<double>> mine;
    for (size_t w = 0; w < windows.size(); ++w)
      if (windows[w].length == budgets[b].window_s) {
        mine.push_back(out.v[b][w]);
        out.from_s[b].push_back(windows[w].length > 0 ? windows[w].from : -1.0);
      }
    out.v[b] = mine;
  }
  return out;
}

std::vector<BudgetOutcome> judge(const std::vector<Budget>& budgets, const Values& values) {
  std::vector<BudgetOutcome> out;
  for (size_t b = 0; b < budgets.size(); ++b) {
    BudgetOutcome o;
    o.budget = budgets[b];
    o.windows = int(values.v[b].size());
    bool first = true;
    for (size_t w = 0; w < values.v[b].size(); ++w) {
      std::vector<double> xs;
      bool missing = false;
      for (double x : values.v[b][w]) {
        if (std::isnan(x))
          missing = true;
        else
          xs.push_back(x);
      }
      if (missing || xs.empty()) {  // a window (or run) without a value cannot pass
        o.has_value = false;
        o.window_start_s = values.from_s[b][w];
        break;
      }
      const MeanCI m = mean_ci(xs);
      o.interval = xs.size() >= 2;
      const double bound = o.budget.is_max ? m.mean + m.half_width : m.mean - m.half_width;
      if (first || (o.budget.is_max ? bound > o.bound : bound < o.bound)) {
        o.mean = m.mean;
        o.half_width = m.half_width;
        o.bound = bound;
        o.window_start_s = values.from_s[b][w];
      }
      first = false;
    }
    o.pass = o.has_value && (o.budget.is_max ? o.bound <= o.budget.limit : o.bound >= o.budget.limit);
    out.push_back(o);
  }
  return out;
}

// The scenario with every class's load multiplied by m (rates and closed-loop users).
Scenario scaled(const Scenario& s, double m) {
  Scenario x = s;
  for (auto& c : x.classes) {
    c.rate_per_s *= m;
    if (c.arrival == ArrivalKind::concurrency || c.arrival == ArrivalKind::burst)
      c.clients = std::max(1, int(std::lround(double(c.clients) * m)));
  }
  return x;
}

}  // namespace

void validate_budgets(const Scenario& s, const BudgetSpec& spec) {
  // the report's shape, from an empty tally: every budget's path is checked without a simulation
  auto empty = std::make_unique<Tally>();
  tally_clear(*empty, int32_t(s.pools.size()), int32_t(s.classes.size()));
  empty->window_s = s.duration_s - s.warmup_s;
  const Json shape = run_report(s, *empty);
  for (const auto& b : spec.budgets) check_against(normalized(b, s), s, shape);
}

CheckResult check_budgets(const Scenario& s, const BudgetSpec& spec, const Scenario* baseline, int threads,
                          bool headroom, const CheckProgress& progress) {
  validate_budgets(s, spec);
  std::vector<Budget> budgets;
  for (const auto& b : spec.budgets) budgets.push_back(normalized(b, s));
  CheckResult r;
  r.outcomes = judge(budgets, evaluate(s, budgets, spec.replications, threads, r.simulations, progress, "budgets"));
  r.pass = std::all_of(r.outcomes.begin(), r.outcomes.end(), [](const BudgetOutcome& o) { return o.pass; });

  if (baseline) {
    std::vector<Budget> bb;
    for (const auto& b : spec.budgets) bb.push_back(normalized(b, *baseline));
    auto empty = std::make_unique<Tally>();
    tally_clear(*empty, int32_t(baseline->pools.size()), int32_t(baseline->classes.size()));
    const Json shape = run_report(*baseline, *empty);
    for (const auto& b : bb) try {
        check_against(b, *baseline, shape);
      } catch (const InputError& e) {
        // the budgets held against the scenario: what fails is the baseline's
        throw InputError(e.where(), "the baseline " + baseline->source + ": " + e.what(), e.kind());
      }
    const auto base =
        judge(bb, evaluate(*baseline, bb, spec.replications, threads, r.simulations, progress, "baseline"));
    for (size_t i = 0; i < base.size(); ++i) {
      r.outcomes[i].has_baseline = base[i].has_value;
      r.outcomes[i].baseline = base[i].mean;
    }
  }

  if (!headroom) return r;
  const bool trace =
      std::any_of(s.classes.begin(), s.classes.end(), [](const auto& c) { return c.arrival == ArrivalKind::trace; });
  if (trace) {
    r.headroom_note = "not measured: a class replays a trace (scale it with time_scale to try more load)";
    return r;
  }
  if (!r.pass) {
    r.headroom_note = "not measured: the budgets do not hold at today's load";
    return r;
  }
  // bisection on the arrival multiplier; the same seeds at every multiplier (common random numbers)
  auto holds = [&](double m) {
    const Scenario x = scaled(s, m);
    const auto o = judge(budgets, evaluate(x, budgets, spec.replications, threads, r.simulations, progress,
                                           fmt::format("headroom at {:.2f}x", m)));
    return std::all_of(o.begin(), o.end(), [](const BudgetOutcome& b) { return b.pass; });
  };
  constexpr double kCap = 16.0;
  double lo = 1.0, hi = 2.0;
  while (holds(hi)) {
    lo = hi;
    if (hi >= kCap) {
      r.headroom = lo;
      r.headroom_capped = true;
      return r;
    }
    hi *= 2.0;
  }
  while ((hi - lo) / lo > 0.02) {
    const double mid = 0.5 * (lo + hi);
    (holds(mid) ? lo : hi) = mid;
  }
  // closed-loop users (and a burst's requests) come in whole numbers: the load that held is what
  // they were rounded to, and the least such multiplier is the one every class bore
  double held = lo;
  for (const auto& c : s.classes)
    if (c.arrival == ArrivalKind::concurrency || c.arrival == ArrivalKind::burst)
      held = std::min(held, double(scaled(s, lo).classes[size_t(&c - s.classes.data())].clients) / double(c.clients));
  r.headroom = held;
  return r;
}

}  // namespace fleetsim
