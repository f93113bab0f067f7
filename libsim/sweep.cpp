#include "sweep.hpp"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <map>
#include <memory>
#include <set>
#include <thread>

#include "core/philox.hpp"
#include "runner.hpp"
#include "yaml_node.hpp"

namespace fleetsim {

using detail::N;
using detail::Source;

namespace {

// The metrics a sweep row reports: every numeric leaf of these sections of the run report.
const char* const kMetricSections[] = {"requests", "latency_s", "throughput", "utilization", "cost", "capacity",
                                       "fleet", "classes", "pools", "teams", "simulation"};
// Metrics with a 95% confidence interval in every row.
const char* const kHeadline[] = {"cost.per_request_usd", "cost.per_million_output_tokens_usd", "latency_s.ttft.p99",
                                 "utilization.busy_fraction"};

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

uint64_t fnv1a(const std::string& s, uint64_t h = 1469598103934665603ULL) {
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  return h;
}

// Numeric report paths a metric reference may use, from a report of the base scenario.
std::vector<std::string> metric_paths(const Json& report) {
  std::vector<std::pair<std::string, const Json*>> leaves;
  for (const char* sec : kMetricSections)
    if (report.contains(sec)) numeric_leaves(report[sec], sec, leaves);
  std::vector<std::string> out;
  for (const auto& l : leaves) out.push_back(l.first);
  return out;
}

std::string yaml_flow(const YAML::Node& n) {
  YAML::Emitter e;
  e << YAML::Flow << n;
  return e.c_str();
}

Json yaml_to_json(const YAML::Node& n) {
  if (n.IsScalar()) {
    const std::string& s = n.Scalar();
    char* end = nullptr;
    const double d = std::strtod(s.c_str(), &end);
    if (!s.empty() && end && *end == '\0' && std::isfinite(d)) {
      if (d == std::floor(d) && std::fabs(d) < 9.0e15 && s.find_first_of(".eE") == std::string::npos)
        return Json(int64_t(d));
      return Json(d);
    }
    return Json(s);
  }
  return Json(yaml_flow(n));
}

std::string fmt_value(double v) { return fmt::format("{}", v); }

}  // namespace

double t_critical_95(uint32_t dof) {
  static const double t[] = {0,      12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
                             2.201,  2.179,  2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080,
                             2.074,  2.069,  2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042};
  if (dof == 0) return 0;
  if (dof <= 30) return t[dof];
  return 1.95996 + 2.4 / double(dof);  // within 0.2% of the t quantile beyond 30
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

std::vector<Override> SweepSpec::overrides(uint64_t config) const {
  uint64_t g = sample ? sampled[config] : config;
  std::vector<size_t> idx(params.size());
  for (size_t k = params.size(); k-- > 0;) {  // the last parameter varies fastest
    idx[k] = size_t(g % params[k].values.size());
    g /= params[k].values.size();
  }
  std::vector<Override> out;
  for (size_t k = 0; k < params.size(); ++k) {
    const auto& p = params[k];
    out.push_back(Override{p.path, p.values[idx[k]], p.origins[idx[k]], p.path + "=" + p.values[idx[k]]});
  }
  return out;
}

Json SweepSpec::parameters_json(uint64_t config) const {
  uint64_t g = sample ? sampled[config] : config;
  std::vector<size_t> idx(params.size());
  for (size_t k = params.size(); k-- > 0;) {
    idx[k] = size_t(g % params[k].values.size());
    g /= params[k].values.size();
  }
  Json j = Json::object();
  for (size_t k = 0; k < params.size(); ++k) j[params[k].path] = params[k].json_values[idx[k]];
  return j;
}

SweepSpec parse_sweep(const ScenarioSource& scenario) {
  Source src;
  src.file = scenario.name();
  src.base_dir = scenario.base_dir();
  src.lines = detail::split_lines(scenario.text());
  YAML::Node root;
  try {
    root = YAML::Load(scenario.text());
  } catch (const YAML::ParserException& e) {
    throw InputError(Location{src.file, e.mark.line + 1, e.mark.column + 1, ""}, "malformed YAML: " + e.msg);
  }
  if (root.IsMap())
    for (const auto& o : scenario.base_overrides()) detail::apply_override(root, o, src);
  const N r{root, "", &src};
  if (!root.IsMap() || !r.has("sweep"))
    r.fail("no sweep section: add `sweep: {parameters: {fleet.replicas: [1, 2, 4]}, replications: 4}`");
  const N sw = r.at("sweep");
  sw.allow_keys({"parameters", "sample", "replications", "max_configurations", "slo", "objective", "seed"});

  // the base scenario must be valid by itself
  const Scenario base = scenario.instantiate();

  SweepSpec spec;
  spec.replications = sw.has("replications") ? uint32_t(sw.at("replications").integer(1, 10000)) : 1;
  spec.max_configurations = sw.has("max_configurations") ? uint64_t(sw.at("max_configurations").integer(1, 100000000)) : 100000;
  spec.sample_seed = sw.has("seed") ? sw.at("seed").unsigned_integer() : base.seed;

  const N ps = sw.req("parameters");
  ps.require_map();
  if (ps.node.size() == 0) ps.fail("no parameters to sweep (expected e.g. fleet.replicas: [1, 2, 4])");
  for (auto it = ps.node.begin(); it != ps.node.end(); ++it) {
    SweepParam p;
    p.path = it->first.as<std::string>();
    const N v{it->second, ps.path + "." + p.path, &src};
    auto add = [&](const YAML::Node& node, const std::string& text, Json json) {
      Location l;
      l.file = src.file;
      const YAML::Mark m = node.Mark();
      if (m.line >= 0) {
        l.line = m.line + 1;
        l.column = m.column + 1;
        if (size_t(m.line) < src.lines.size()) l.source_line = src.lines[size_t(m.line)];
      }
      p.values.push_back(text);
      p.json_values.push_back(std::move(json));
      p.origins.push_back(l);
    };
    if (v.node.IsSequence()) {
      if (v.node.size() == 0) v.fail("empty list of values (give at least one)");
      for (size_t i = 0; i < v.node.size(); ++i) {
        const YAML::Node x = v.node[i];
        add(x, x.IsScalar() ? x.Scalar() : yaml_flow(x), yaml_to_json(x));
      }
    } else if (v.node.IsMap() && v.has("from")) {
      v.allow_keys({"from", "to", "step"});
      const double from = v.at("from").num(), to = v.req("to").num();
      const double step = v.has("step") ? v.at("step").num() : 1.0;
      if (!(step > 0)) v.at("step").fail("step must be > 0");
      if (to < from) v.at("to").fail("to must be >= from");
      const double n = std::floor((to - from) / step + 1e-9) + 1;
      if (n > 1e7) v.fail("range has too many values");
      for (int64_t i = 0; i < int64_t(n); ++i) {
        const double x = from + double(i) * step;
        const double xr = std::round(x * 1e12) / 1e12;  // keep 0.1 steps printable
        const bool integral = xr == std::floor(xr) && std::fabs(xr) < 9e15;
        add(v.node, fmt_value(xr), integral ? Json(int64_t(xr)) : Json(xr));
      }
    } else {
      v.fail("expected a list of values or a range {from, to, step}");
    }
    spec.params.push_back(std::move(p));
  }
  // grid size, guarding overflow
  long double grid = 1;
  for (const auto& p : spec.params) grid *= (long double)p.values.size();
  if (grid > 1e18L) ps.fail("the grid is astronomically large; use sample: N");
  spec.grid_size = uint64_t(grid);
  if (sw.has("sample")) {
    spec.sample = uint64_t(sw.at("sample").integer(1, 100000000));
    if (spec.sample >= spec.grid_size) spec.sample = 0;  // the whole grid
  }
  if (spec.count() > spec.max_configurations) {
    const N where = sw.has("sample") ? sw.at("sample") : ps;
    where.fail(fmt::format("{} configurations exceed the limit of {} (raise sweep.max_configurations, or sample: N "
                           "random points of the grid)",
                           spec.count(), spec.max_configurations));
  }
  if (spec.sample) {
    // Floyd's algorithm: a uniform sample of distinct grid points, keyed by the seed
    const Rng rng = make_rng(spec.sample_seed, 0xFFFFFFFFu);
    std::set<uint64_t> chosen;
    const uint64_t n = spec.grid_size, m = spec.sample;
    for (uint64_t j = n - m; j < n; ++j) {
      const double u = rng.uniform(Stream::accept, 0, j, 77);
      uint64_t t = uint64_t(u * double(j + 1));
      if (t > j) t = j;
      if (!chosen.insert(t).second) chosen.insert(j);
    }
    spec.sampled.assign(chosen.begin(), chosen.end());
  }

  // every value must work on the base scenario, unless it only clashes with other values
  for (const auto& p : spec.params) {
    for (size_t i = 0; i < p.values.size(); ++i) {
      try {
        scenario.instantiate({Override{p.path, p.values[i], p.origins[i], p.path + "=" + p.values[i]}});
      } catch (const InputError& e) {
        if (e.kind() == ErrorKind::input) throw;
      }
    }
  }

  // SLO and objective refer to report metrics
  Tally empty{};
  tally_clear(empty);
  const std::vector<std::string> paths = metric_paths(run_report(base, empty));
  auto check_metric = [&](const N& where, const std::string& m) {
    if (std::find(paths.begin(), paths.end(), m) == paths.end()) {
      const std::string s = did_you_mean(m, paths);
      where.fail("unknown metric '" + m + "'" +
                 (s.empty() ? " (use a numeric path of the run report, e.g. latency_s.ttft.p99)" : " (did you mean '" + s + "'?)"));
    }
  };
  if (sw.has("slo")) {
    const N slo = sw.at("slo");
    slo.require_map();
    for (auto it = slo.node.begin(); it != slo.node.end(); ++it) {
      const std::string m = it->first.as<std::string>();
      const N kn{it->first, slo.path + "." + m, &src};
      check_metric(kn, m);
      const N vn{it->second, slo.path + "." + m, &src};
      SloTerm t;
      t.metric = m;
      if (vn.node.IsMap()) {
        vn.allow_keys({"max", "min"});
        if (vn.has("max") == vn.has("min")) vn.fail("give exactly one of max or min");
        t.is_max = vn.has("max");
        t.limit = vn.at(t.is_max ? "max" : "min").num();
      } else {
        t.limit = vn.num();
      }
      spec.slo.push_back(t);
    }
  }
  const bool generative = base.pools[0].model.kind == ModelKind::generate;
  spec.objective = generative ? "cost.per_million_output_tokens_usd" : "cost.per_request_usd";
  if (sw.has("objective")) {
    spec.objective = sw.at("objective").str();
    check_metric(sw.at("objective"), spec.objective);
  }

  // fingerprint: what must match for shards to merge
  std::string canon = scenario.text();
  for (const auto& o : scenario.base_overrides()) canon += "\n--set " + o.label;
  for (const auto& p : spec.params) {
    canon += "\n" + p.path;
    for (const auto& v : p.values) canon += "\x1f" + v;
  }
  canon += fmt::format("\n{} {} {} {} {}", spec.replications, spec.sample, spec.sample_seed, spec.objective,
                       spec.max_configurations);
  for (const auto& t : spec.slo) canon += fmt::format("\n{} {} {}", t.metric, t.is_max, t.limit);
  spec.fingerprint = fmt::format("{:016x}", fnv1a(canon));
  return spec;
}

Json sweep_row(const SweepSpec& spec, uint64_t config, const Scenario* s, const std::vector<const Tally*>& reps,
               const std::string& infeasible_reason) {
  Json row;
  row["index"] = config;
  row["parameters"] = spec.parameters_json(config);
  if (!infeasible_reason.empty() || !s) {
    row["feasible"] = false;
    row["reason"] = infeasible_reason;
    row["violations"] = Json::array();
    row["metrics"] = nullptr;
    row["ci95"] = nullptr;
    return row;
  }
  // per-replication reports -> means over replications (nulls skipped)
  std::vector<Json> reports;
  reports.reserve(reps.size());
  for (const Tally* t : reps) reports.push_back(run_report(*s, *t));
  std::vector<std::pair<std::string, const Json*>> leaves;
  for (const char* sec : kMetricSections)
    if (reports[0].contains(sec)) numeric_leaves(reports[0][sec], sec, leaves);
  Json metrics = Json::object();
  for (const auto& [path, _] : leaves) {
    std::vector<double> xs;
    for (const auto& rep : reports) {
      const Json* v = at_path(rep, path);
      if (v && v->is_number()) xs.push_back(v->get<double>());
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
  Json violations = Json::array();
  for (const auto& t : spec.slo) {
    const Json* v = at_path(metrics, t.metric);
    if (!v || !v->is_number()) {
      violations.push_back(fmt::format("{} has no value", t.metric));
      continue;
    }
    const double x = v->get<double>();
    if (t.is_max ? !(x <= t.limit) : !(x >= t.limit))
      violations.push_back(fmt::format("{} = {:.6g} {} {:.6g}", t.metric, x, t.is_max ? ">" : "<", t.limit));
  }
  row["feasible"] = violations.empty();
  row["reason"] = violations.empty() ? Json(nullptr) : Json("misses the SLO");
  row["violations"] = violations;
  row["metrics"] = metrics;
  row["ci95"] = ci;
  return row;
}

namespace {

double num_or_nan(const Json& row, const std::string& path) {
  if (!row["metrics"].is_object()) return std::nan("");
  const Json* v = at_path(row["metrics"], path);
  return v && v->is_number() ? v->get<double>() : std::nan("");
}

// The whole document from its rows (rows sorted by index). Shared by run_sweep and merge, so a
// merge of shards is byte-identical to the unsharded sweep.
Json assemble(const Json& header, std::vector<Json> rows) {
  std::sort(rows.begin(), rows.end(),
            [](const Json& a, const Json& b) { return a["index"].get<uint64_t>() < b["index"].get<uint64_t>(); });
  Json doc = header;
  const std::string objective = header["sweep"]["objective"].get<std::string>();
  const uint64_t total = header["sweep"]["configurations"].get<uint64_t>();
  const bool complete = header["shard"]["count"].get<uint32_t>() == 1;
  uint64_t feasible = 0, no_fit = 0, slo_miss = 0;
  const Json* cheapest = nullptr;
  double best = 0;
  for (const auto& r : rows) {
    if (r["feasible"].get<bool>()) {
      ++feasible;
      const double x = num_or_nan(r, objective);
      if (!std::isnan(x) && (!cheapest || x < best)) {
        cheapest = &r;
        best = x;
      }
    } else if (r["metrics"].is_null()) {
      ++no_fit;
    } else {
      ++slo_miss;
    }
  }
  // Pareto frontier of the objective (cost) against p99 TTFT, over every measured configuration
  std::vector<const Json*> measured;
  for (const auto& r : rows)
    if (!std::isnan(num_or_nan(r, objective)) && !std::isnan(num_or_nan(r, "latency_s.ttft.p99"))) measured.push_back(&r);
  std::stable_sort(measured.begin(), measured.end(), [&](const Json* a, const Json* b) {
    const double ca = num_or_nan(*a, objective), cb = num_or_nan(*b, objective);
    if (ca != cb) return ca < cb;
    return num_or_nan(*a, "latency_s.ttft.p99") < num_or_nan(*b, "latency_s.ttft.p99");
  });
  Json pareto = Json::array();
  double best_ttft = INFINITY;
  for (const Json* r : measured) {
    const double t = num_or_nan(*r, "latency_s.ttft.p99");
    if (t < best_ttft) {
      best_ttft = t;
      pareto.push_back((*r)["index"]);
    }
  }
  Json summary;
  summary["configurations_run"] = rows.size();
  summary["complete"] = complete && rows.size() == total;
  summary["feasible"] = feasible;
  summary["infeasible_slo"] = slo_miss;
  summary["infeasible_config"] = no_fit;
  if (cheapest) {
    summary["cheapest"] = {{"index", (*cheapest)["index"]},
                           {"parameters", (*cheapest)["parameters"]},
                           {"objective", objective},
                           {"value", best}};
    summary["message"] = fmt::format("cheapest feasible configuration: #{}", (*cheapest)["index"].get<uint64_t>());
  } else {
    summary["cheapest"] = nullptr;
    // the closest miss: the smallest worst relative excess over an SLO limit
    const Json* closest = nullptr;
    double closest_excess = INFINITY;
    for (const auto& r : rows) {
      if (r["metrics"].is_null()) continue;
      double worst = 0;
      for (const auto& t : header["sweep"]["slo"]) {
        const double x = num_or_nan(r, t["metric"].get<std::string>());
        const double lim = t["limit"].get<double>();
        const bool is_max = t["bound"].get<std::string>() == "max";
        double excess = std::isnan(x) ? INFINITY : (is_max ? x - lim : lim - x) / std::max(std::fabs(lim), 1e-12);
        worst = std::max(worst, excess);
      }
      if (worst < closest_excess) {
        closest_excess = worst;
        closest = &r;
      }
    }
    std::string msg = rows.empty() ? "no configurations ran" : "no configuration meets the SLO";
    if (closest)
      msg += fmt::format("; closest is #{} ({})", (*closest)["index"].get<uint64_t>(),
                         (*closest)["violations"].empty() ? std::string("no SLO")
                                                          : (*closest)["violations"][0].get<std::string>());
    summary["message"] = msg;
  }
  summary["pareto"] = pareto;
  doc["summary"] = summary;
  doc["rows"] = std::move(rows);
  return doc;
}

Json sweep_header(const ScenarioSource& src, const SweepSpec& spec, const Scenario& base, uint32_t shard_index,
                  uint32_t shard_count) {
  Json h;
  h["schema_version"] = kSchemaVersion;
  h["kind"] = "sweep";
  h["scenario"] = {{"name", base.name}, {"source", src.name()}, {"seed", base.seed}};
  Json params = Json::array();
  for (const auto& p : spec.params) params.push_back({{"path", p.path}, {"values", p.json_values}});
  Json slo = Json::array();
  for (const auto& t : spec.slo)
    slo.push_back({{"metric", t.metric}, {"bound", t.is_max ? "max" : "min"}, {"limit", t.limit}});
  h["sweep"] = {{"parameters", params},
                {"grid_size", spec.grid_size},
                {"sample", spec.sample ? Json(spec.sample) : Json(nullptr)},
                {"configurations", spec.count()},
                {"replications", spec.replications},
                {"objective", spec.objective},
                {"slo", slo},
                {"fingerprint", spec.fingerprint}};
  h["shard"] = {{"index", shard_index}, {"count", shard_count}};
  return h;
}

std::string reason_of(const InputError& e) {
  switch (e.kind()) {
    case ErrorKind::does_not_fit: return std::string("does not fit: ") + e.what();
    case ErrorKind::inconsistent: return std::string("inconsistent: ") + e.what();
    default: return std::string("invalid: ") + e.what();
  }
}

}  // namespace

Backend resolve_backend(Backend requested, std::string* note) {
  std::string why;
  if (requested == Backend::cpu) {
    if (note) *note = "cpu backend";
    return Backend::cpu;
  }
  const bool have = cuda_available(&why);
  if (requested == Backend::cuda) {
    if (!have) throw InputError(Location{"--backend", 0, 0, ""}, "cuda backend unavailable: " + why);
    if (note) *note = "cuda backend (" + cuda_device_name() + ")";
    return Backend::cuda;
  }
  if (have) {
    if (note) *note = "cuda backend (" + cuda_device_name() + "), picked automatically";
    return Backend::cuda;
  }
  if (note) *note = "cpu backend, picked automatically: " + why;
  return Backend::cpu;
}

Json run_sweep(const ScenarioSource& src, const SweepSpec& spec, const SweepOptions& opt) {
  if (opt.shard_count == 0 || opt.shard_index >= opt.shard_count)
    throw InputError(Location{"--shard", 0, 0, ""}, "expected K/N with 0 <= K < N");
  const Scenario base = src.instantiate();
  const Backend backend = resolve_backend(opt.backend, nullptr);
  std::vector<uint64_t> configs;
  for (uint64_t c = opt.shard_index; c < spec.count(); c += opt.shard_count) configs.push_back(c);
  std::vector<Json> rows(configs.size());
  const unsigned hw = std::max(1u, std::thread::hardware_concurrency());
  const unsigned threads = opt.threads > 0 ? unsigned(opt.threads) : hw;
  std::atomic<uint64_t> next{0}, done{0};

  // Instantiate configuration `pos`; returns nullptr with a reason when it cannot run.
  auto prepare = [&](size_t pos, std::string& reason) -> std::unique_ptr<Scenario> {
    try {
      return std::make_unique<Scenario>(src.instantiate(spec.overrides(configs[pos])));
    } catch (const InputError& e) {
      reason = reason_of(e);
      return nullptr;
    }
  };
  auto finish = [&](size_t pos, const Scenario* s, const std::vector<const Tally*>& reps, std::string reason) {
    for (const Tally* t : reps)
      if (reason.empty() && (t->status != 0 || t->unfinished != 0))
        reason = "simulation did not finish: the configuration is so overloaded that its queues never drain";
    rows[pos] = sweep_row(spec, configs[pos], reason.empty() ? s : nullptr, reason.empty() ? reps : std::vector<const Tally*>{},
                          reason);
    done.fetch_add(1);
  };

  auto report_progress = [&](std::atomic<bool>& stop) {
    while (!stop.load()) {
      opt.progress(done.load(), configs.size());
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
  };
  std::atomic<bool> stop{false};
  std::thread progress_thread;
  if (opt.progress) progress_thread = std::thread(report_progress, std::ref(stop));

  std::exception_ptr failure;
  std::mutex failure_mutex;
  auto guarded = [&](auto&& fn) {
    try {
      fn();
    } catch (...) {
      std::lock_guard<std::mutex> lock(failure_mutex);
      if (!failure) failure = std::current_exception();
      next.store(configs.size() + 1);
    }
  };

  if (backend == Backend::cpu) {
    auto worker = [&]() {
      guarded([&] {
        HostWorkspace ws;
        std::vector<std::unique_ptr<Tally>> tallies(spec.replications);
        for (;;) {
          const uint64_t pos = next.fetch_add(1);
          if (pos >= configs.size()) return;
          std::string reason;
          auto s = prepare(pos, reason);
          std::vector<const Tally*> reps;
          if (s) {
            const SimParams p = s->params();
            for (uint32_t r = 0; r < spec.replications; ++r) {
              if (!tallies[r]) tallies[r] = std::make_unique<Tally>();
              simulate(p, r, ws.for_params(p), *tallies[r]);
              reps.push_back(tallies[r].get());
            }
          }
          finish(pos, s.get(), reps, reason);
        }
      });
    };
    std::vector<std::thread> pool;
    for (unsigned i = 1; i < threads; ++i) pool.emplace_back(worker);
    worker();
    for (auto& t : pool) t.join();
  } else {
    // waves of configurations: instantiate on the host, simulate on the device, summarise
    const size_t wave = std::max<size_t>(1, 8192 / spec.replications);
    for (size_t w0 = 0; w0 < configs.size() && !failure; w0 += wave) {
      const size_t w1 = std::min(configs.size(), w0 + wave);
      std::vector<std::unique_ptr<Scenario>> sc(w1 - w0);
      std::vector<std::string> reasons(w1 - w0);
      std::vector<SimParams> params(w1 - w0);
      std::atomic<size_t> nx{w0};
      auto prep = [&]() {
        guarded([&] {
          for (size_t pos; (pos = nx.fetch_add(1)) < w1;) {
            sc[pos - w0] = prepare(pos, reasons[pos - w0]);
            if (sc[pos - w0]) params[pos - w0] = sc[pos - w0]->params();
          }
        });
      };
      std::vector<std::thread> pool;
      for (unsigned i = 1; i < threads; ++i) pool.emplace_back(prep);
      prep();
      for (auto& t : pool) t.join();
      if (failure) break;
      std::vector<SimJob> jobs;
      std::vector<size_t> first_job(w1 - w0, 0);
      for (size_t i = 0; i < w1 - w0; ++i) {
        first_job[i] = jobs.size();
        if (sc[i])
          for (uint32_t r = 0; r < spec.replications; ++r) jobs.push_back(SimJob{&params[i], r});
      }
      std::vector<Tally> tallies(jobs.size());
      if (!jobs.empty()) cuda_simulate(jobs, tallies.data());
      for (size_t i = 0; i < w1 - w0; ++i) {
        std::vector<const Tally*> reps;
        if (sc[i])
          for (uint32_t r = 0; r < spec.replications; ++r) reps.push_back(&tallies[first_job[i] + r]);
        finish(w0 + i, sc[i].get(), reps, reasons[i]);
      }
    }
  }
  stop.store(true);
  if (progress_thread.joinable()) progress_thread.join();
  if (opt.progress) opt.progress(done.load(), configs.size());
  if (failure) std::rethrow_exception(failure);
  return assemble(sweep_header(src, spec, base, opt.shard_index, opt.shard_count), std::move(rows));
}

Json merge_sweeps(const std::vector<std::pair<std::string, Json>>& shards) {
  if (shards.empty()) throw InputError(Location{"fleetsim merge", 0, 0, ""}, "no shard files given");
  auto bad = [](const std::string& file, const std::string& msg) { throw InputError(Location{file, 0, 0, ""}, msg); };
  const Json& first = shards[0].second;
  std::map<uint32_t, std::string> seen;
  std::vector<Json> rows;
  uint32_t count = 0;
  for (const auto& [file, doc] : shards) {
    if (!doc.is_object() || doc.value("kind", "") != "sweep") bad(file, "not a fleetsim sweep document (kind != sweep)");
    if (doc.value("schema_version", 0) != kSchemaVersion)
      bad(file, fmt::format("schema_version {} (this fleetsim reads {})", doc.value("schema_version", 0), kSchemaVersion));
    if (doc["sweep"]["fingerprint"] != first["sweep"]["fingerprint"])
      bad(file, "belongs to a different sweep than " + shards[0].first + " (the scenario or sweep section differs)");
    const uint32_t k = doc["shard"]["index"].get<uint32_t>(), n = doc["shard"]["count"].get<uint32_t>();
    if (count == 0) count = n;
    if (n != count) bad(file, fmt::format("is shard {}/{} but {} has {} shards", k, n, shards[0].first, count));
    if (seen.count(k)) bad(file, fmt::format("shard {} appears twice (also in {})", k, seen[k]));
    seen[k] = file;
    for (const auto& r : doc["rows"]) rows.push_back(r);
  }
  if (seen.size() != count) {
    std::string missing;
    for (uint32_t k = 0; k < count; ++k)
      if (!seen.count(k)) missing += (missing.empty() ? "" : ", ") + std::to_string(k);
    bad(shards[0].first, fmt::format("incomplete: {} of {} shards given; missing shard {}", seen.size(), count, missing));
  }
  Json header = first;
  header.erase("rows");
  header.erase("summary");
  header["shard"] = {{"index", 0}, {"count", 1}};
  return assemble(header, std::move(rows));
}

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
