#include "sweep.hpp"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <thread>
#include <utility>

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

// The value index of each parameter at grid point g (the last parameter varies fastest).
template <class Count>
std::vector<size_t> grid_point(uint64_t g, size_t n, Count&& count) {
  std::vector<size_t> idx(n);
  for (size_t k = n; k-- > 0;) {
    idx[k] = size_t(g % count(k));
    g /= count(k);
  }
  return idx;
}

std::vector<Override> SweepSpec::overrides(uint64_t config) const {
  const auto idx = grid_point(sample ? sampled[config] : config, params.size(),
                              [&](size_t k) { return params[k].values.size(); });
  std::vector<Override> out;
  for (size_t k = 0; k < params.size(); ++k) {
    const auto& p = params[k];
    out.push_back(Override{p.path, p.values[idx[k]], p.origins[idx[k]], p.path + "=" + p.values[idx[k]]});
  }
  return out;
}

Json SweepSpec::parameters_json(uint64_t config) const {
  const auto idx = grid_point(sample ? sampled[config] : config, params.size(),
                              [&](size_t k) { return params[k].values.size(); });
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
  spec.max_configurations = sw.has("max_configurations") ? uint64_t(sw.at("max_configurations").integer(1, 1000000)) : 100000;
  spec.sample_seed = sw.has("seed") ? sw.at("seed").unsigned_integer() : base.seed;

  const N ps = sw.req("parameters");
  ps.require_map();
  if (ps.node.size() == 0) ps.fail("no parameters to sweep (expected e.g. fleet.replicas: [1, 2, 4])");
  for (auto it = ps.node.begin(); it != ps.node.end(); ++it) {
    SweepParam p;
    p.path = ps.key_name(it->first);
    const N v{it->second, ps.path + "." + p.path, &src};
    auto add = [&](const YAML::Node& node, const std::string& text, Json json) {
      Location l;
      l.file = src.file;
      const YAML::Mark m = node.Mark();
      if (m.line >= 0) {
        l.line = m.line + 1;
        l.column = m.column + 1;
        // (a long one-line list would otherwise be copied once per value)
        if (size_t(m.line) < src.lines.size() && src.lines[size_t(m.line)].size() <= 240)
          l.source_line = src.lines[size_t(m.line)];
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
      p.is_range = true;
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

  // every value must work on the base scenario, unless it only clashes with other values: each
  // distinct value of a list once; of a range, its ends and its second value (a range's values
  // share a type, and the scenario's limits are intervals)
  for (const auto& p : spec.params) {
    std::set<std::string> seen;
    const size_t n = p.values.size();
    for (size_t i = 0; i < n; ++i) {
      if (p.is_range && i > 1 && i + 1 < n) continue;
      if (!seen.insert(p.values[i]).second) continue;
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
      const std::string m = slo.key_name(it->first);
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
  // configurations finished earlier (a journal) are not run again
  std::set<uint64_t> finished;
  for (const Json& r : opt.finished) {
    const uint64_t i = r.at("index").get<uint64_t>();
    if (i >= spec.count() || i % opt.shard_count != opt.shard_index || !finished.insert(i).second)
      throw InputError(Location{"--resume", 0, 0, ""}, fmt::format("configuration {} does not belong here", i));
  }
  std::vector<uint64_t> configs;
  for (uint64_t c = opt.shard_index; c < spec.count(); c += opt.shard_count)
    if (!finished.count(c)) configs.push_back(c);
  std::vector<Json> rows(configs.size());
  const unsigned hw = std::max(1u, std::thread::hardware_concurrency());
  const unsigned threads = opt.threads > 0 ? unsigned(opt.threads) : hw;
  std::atomic<uint64_t> next{0}, done{0}, reps_done{0};
  const uint64_t total = configs.size() + finished.size();
  auto stopping = [&] { return opt.stop && opt.stop->load(std::memory_order_relaxed); };

  // Instantiate configuration `pos`; returns nullptr with a reason when it cannot run.
  auto prepare = [&](size_t pos, std::string& reason) -> std::unique_ptr<Scenario> {
    try {
      return std::make_unique<Scenario>(src.instantiate(spec.overrides(configs[pos])));
    } catch (const InputError& e) {
      reason = reason_of(e);
      return nullptr;
    }
  };
  std::mutex row_mutex;
  auto finish = [&](size_t pos, const Scenario* s, const std::vector<const Tally*>& reps, std::string reason) {
    for (const Tally* t : reps)
      if (reason.empty() && (t->status != 0 || t->unfinished != 0))
        reason = "simulation did not finish: the configuration is so overloaded that its queues never drain";
    if (!s) reps_done.fetch_add(spec.replications);  // nothing to run counts as done
    rows[pos] = sweep_row(spec, configs[pos], reason.empty() ? s : nullptr, reason.empty() ? reps : std::vector<const Tally*>{},
                          reason);
    if (opt.on_row) {
      std::lock_guard<std::mutex> lock(row_mutex);
      opt.on_row(rows[pos]);
    }
    done.fetch_add(1);
  };

  auto snapshot = [&] {
    SweepProgress p;
    p.resumed = finished.size();
    p.configurations_total = total;
    p.configurations_done = finished.size() + done.load();
    p.replications_total = total * spec.replications;
    p.replications_done = (finished.size() * spec.replications) + reps_done.load();
    return p;
  };
  std::mutex stop_mutex;
  std::condition_variable stop_cv;
  bool stop_progress = false;
  auto report_progress = [&]() {
    std::unique_lock<std::mutex> lock(stop_mutex);
    while (!stop_progress) {
      lock.unlock();
      opt.progress(snapshot());
      lock.lock();
      stop_cv.wait_for(lock, std::chrono::milliseconds(200), [&] { return stop_progress; });
    }
  };
  std::thread progress_thread;
  if (opt.progress) progress_thread = std::thread(report_progress);

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
          if (stopping()) return;
          const uint64_t pos = next.fetch_add(1);
          if (pos >= configs.size()) return;
          std::string reason;
          auto s = prepare(pos, reason);
          std::vector<const Tally*> reps;
          if (s) {
            const SimParams p = s->params();
            for (uint32_t r = 0; r < spec.replications; ++r) {
              if (stopping()) return;  // this configuration is dropped; a resumed sweep runs it again
              if (!tallies[r]) tallies[r] = std::make_unique<Tally>();
              simulate(p, r, ws.for_params(p), *tallies[r]);
              reps.push_back(tallies[r].get());
              reps_done.fetch_add(1);
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
    for (size_t w0 = 0; w0 < configs.size() && !failure && !stopping(); w0 += wave) {
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
      reps_done.fetch_add(jobs.size());
      guarded([&] {
        for (size_t i = 0; i < w1 - w0; ++i) {
          std::vector<const Tally*> reps;
          if (sc[i])
            for (uint32_t r = 0; r < spec.replications; ++r) reps.push_back(&tallies[first_job[i] + r]);
          finish(w0 + i, sc[i].get(), reps, reasons[i]);
        }
      });
    }
  }
  {
    std::lock_guard<std::mutex> lock(stop_mutex);
    stop_progress = true;
  }
  stop_cv.notify_all();
  if (progress_thread.joinable()) progress_thread.join();
  if (opt.progress) opt.progress(snapshot());
  if (failure) std::rethrow_exception(failure);
  if (done.load() < configs.size()) throw SweepInterrupted(finished.size() + done.load(), total);
  rows.insert(rows.end(), opt.finished.begin(), opt.finished.end());
  return assemble(sweep_header(src, spec, base, opt.shard_index, opt.shard_count), std::move(rows));
}

namespace {

// ---- checking sweep documents (merge) and journal rows against docs/output-schema.md ----

// A value as an error message shows it: strings quoted and cut short, containers by kind.
std::string describe(const Json& v) {
  switch (v.type()) {
    case Json::value_t::null: return "null";
    case Json::value_t::discarded: return "nothing";
    case Json::value_t::object:
    case Json::value_t::array: {
      const std::string s = v.dump(-1, ' ', false, Json::error_handler_t::replace);
      if (s.size() <= 48) return s;
      return v.is_object() ? "an object" : "an array";
    }
    default: {
      std::string s = v.dump(-1, ' ', false, Json::error_handler_t::replace);
      if (s.size() > 48) s = s.substr(0, 44) + (v.is_string() ? "...\"" : "...");
      return s;
    }
  }
}

std::string pointer_token(const std::string& key) {
  std::string out;
  for (char c : key) out += c == '~' ? std::string("~0") : c == '/' ? std::string("~1") : std::string(1, c);
  return out;
}

// Throws the located error for a JSON pointer within the document being checked.
using Fail = std::function<void(const std::string& pointer, const std::string& message)>;

// A value of the document being checked, with its JSON pointer.
struct At {
  const Json& v;
  std::string ptr;
  const Fail* fail_;

  [[noreturn]] void fail(const std::string& msg) const {
    (*fail_)(ptr, msg);
    throw std::logic_error("unreachable: " + msg);
  }
  const Json& object() const {
    if (!v.is_object()) fail("expected an object, got " + describe(v));
    return v;
  }
  const Json& array() const {
    if (!v.is_array()) fail("expected an array, got " + describe(v));
    return v;
  }
  bool has(const char* k) const { return object().contains(k); }
  At operator[](const std::string& k) const {
    const auto it = object().find(k);
    if (it == v.end()) fail(fmt::format("missing key \"{}\"", k));
    return At{*it, ptr + "/" + pointer_token(k), fail_};
  }
  At item(size_t i) const { return At{array()[i], ptr + "/" + std::to_string(i), fail_}; }
  uint64_t uint(uint64_t lo = 0, uint64_t hi = std::numeric_limits<uint64_t>::max()) const {
    if (!v.is_number_integer()) fail("expected an integer, got " + describe(v));
    if (v.is_number_unsigned() || v.get<int64_t>() >= 0) {
      const uint64_t u = v.get<uint64_t>();
      if (u >= lo && u <= hi) return u;
    }
    if (hi == std::numeric_limits<uint64_t>::max()) fail(fmt::format("expected an integer >= {}, got {}", lo, describe(v)));
    fail(fmt::format("expected an integer in [{}, {}], got {}", lo, hi, describe(v)));
  }
  const std::string& str() const {
    if (!v.is_string()) fail("expected a string, got " + describe(v));
    return v.get_ref<const std::string&>();
  }
  bool boolean() const {
    if (!v.is_boolean()) fail("expected true or false, got " + describe(v));
    return v.get<bool>();
  }
  double number() const {
    if (!v.is_number()) fail("expected a number, got " + describe(v));
    return v.get<double>();
  }
  void string_or_null() const {
    if (!v.is_string() && !v.is_null()) fail("expected a string or null, got " + describe(v));
  }
};

// What the rows of one document (or journal) must agree with.
struct SweepShape {
  std::vector<std::pair<std::string, std::vector<Json>>> params;  // path, values
  uint64_t grid_size = 1, configurations = 0;
  bool sampled = false;
  uint32_t shard_index = 0, shard_count = 1;
  // the parameters of configuration i, when known exactly (else each value is checked to be one
  // of the parameter's values)
  std::function<Json(uint64_t)> expected_parameters;
};

// The parameters of grid point g (the last parameter varies fastest).
Json grid_parameters(const std::vector<std::pair<std::string, std::vector<Json>>>& params, uint64_t g) {
  const auto idx = grid_point(g, params.size(), [&](size_t k) { return params[k].second.size(); });
  Json j = Json::object();
  for (size_t k = 0; k < params.size(); ++k) j[params[k].first] = params[k].second[idx[k]];
  return j;
}

void check_metrics(const At& m, int depth) {
  if (depth > 8) m.fail("nested too deeply for a metrics section");
  for (auto it = m.object().begin(); it != m.v.end(); ++it) {
    const At x = m[it.key()];
    if (x.v.is_object()) check_metrics(x, depth + 1);
    else if (!x.v.is_number() && !x.v.is_null()) x.fail("expected a number, null or an object, got " + describe(x.v));
  }
}

// One row (docs/output-schema.md, rows[]); returns its configuration index.
uint64_t check_row(const At& row, const SweepShape& sh) {
  row.object();
  const At index = row["index"];
  const uint64_t i = index.uint();
  if (i >= sh.configurations)
    index.fail(fmt::format("configuration {} is out of range: the sweep has {} configurations (0..{})", i,
                           sh.configurations, sh.configurations - 1));
  if (i % sh.shard_count != sh.shard_index)
    index.fail(fmt::format("configuration {} belongs to shard {} of {}, not to shard {}", i, i % sh.shard_count,
                           sh.shard_count, sh.shard_index));
  const At params = row["parameters"];
  params.object();
  const Json expected = sh.expected_parameters ? sh.expected_parameters(i) : Json(nullptr);
  for (const auto& [path, values] : sh.params) {
    const At v = params[path];
    if (expected.is_object()) {
      if (v.v != expected[path])
        v.fail(fmt::format("{}, but configuration {} of the sweep has {}", describe(v.v), i, describe(expected[path])));
    } else if (std::find(values.begin(), values.end(), v.v) == values.end()) {
      v.fail(fmt::format("{} is not one of the values swept for {}", describe(v.v), path));
    }
  }
  if (params.v.size() != sh.params.size())
    for (auto it = params.v.begin(); it != params.v.end(); ++it)
      if (std::none_of(sh.params.begin(), sh.params.end(), [&](const auto& p) { return p.first == it.key(); }))
        params[it.key()].fail("not a parameter of the sweep");
  const bool feasible = row["feasible"].boolean();
  const At reason = row["reason"];
  reason.string_or_null();
  const At violations = row["violations"];
  for (size_t k = 0; k < violations.array().size(); ++k) violations.item(k).str();
  const At metrics = row["metrics"], ci = row["ci95"];
  if (metrics.v.is_null()) {
    // a configuration that cannot run
    if (feasible) row["feasible"].fail("true, but a configuration without metrics cannot be feasible");
    reason.str();
    if (!ci.v.is_null()) ci.fail("expected null (the configuration has no metrics), got " + describe(ci.v));
  } else {
    check_metrics(metrics, 0);
    ci.object();
    for (const char* h : kHeadline) {
      const At c = ci[h];
      if (!c.v.is_number() && !c.v.is_null()) c.fail("expected a number or null, got " + describe(c.v));
    }
    if (ci.v.size() != std::size(kHeadline))
      for (auto it = ci.v.begin(); it != ci.v.end(); ++it)
        if (std::none_of(std::begin(kHeadline), std::end(kHeadline), [&](const char* h) { return it.key() == h; }))
          ci[it.key()].fail("not a metric with a confidence interval");
    if (feasible != violations.v.empty())
      row["feasible"].fail(feasible ? fmt::format("true, but violations lists {} missed SLO bounds", violations.v.size())
                                    : "false, but the configuration ran and violations is empty");
    if (!feasible) reason.str();
  }
  return i;
}

// The header of a sweep document: everything but rows and summary (the summary is recomputed).
SweepShape check_header(const At& doc) {
  doc.object();
  if (!doc.has("kind")) doc.fail("missing key \"kind\": not a fleetsim sweep document");
  if (doc["kind"].v != "sweep") doc["kind"].fail(describe(doc["kind"].v) + ": not a fleetsim sweep document (kind \"sweep\")");
  const At ver = doc["schema_version"];
  if (!ver.v.is_number_integer() || ver.v != kSchemaVersion)
    ver.fail(fmt::format("{}: this fleetsim reads schema_version {}", describe(ver.v), kSchemaVersion));
  const At sc = doc["scenario"];
  sc["name"].str();
  sc["source"].str();
  sc["seed"].uint();

  SweepShape sh;
  const At sw = doc["sweep"];
  const At ps = sw["parameters"];
  if (ps.array().empty()) ps.fail("expected at least one parameter, got an empty array");
  long double grid = 1;
  for (size_t k = 0; k < ps.v.size(); ++k) {
    const At p = ps.item(k);
    const std::string& path = p["path"].str();
    if (path.empty()) p["path"].fail("expected a parameter path, got an empty string");
    for (const auto& q : sh.params)
      if (q.first == path) p["path"].fail(fmt::format("parameter \"{}\" appears twice", path));
    const At vals = p["values"];
    if (vals.array().empty()) vals.fail("expected at least one value, got an empty array");
    for (size_t j = 0; j < vals.v.size(); ++j)
      if (!vals.v[j].is_number() && !vals.v[j].is_string())
        vals.item(j).fail("expected a number or a string, got " + describe(vals.v[j]));
    sh.params.emplace_back(path, std::vector<Json>(vals.v.begin(), vals.v.end()));
    grid *= (long double)vals.v.size();
  }
  const At gs = sw["grid_size"];
  sh.grid_size = gs.uint(1);
  if ((long double)sh.grid_size != grid)
    gs.fail(fmt::format("{}, but the parameters' values make a grid of {}", sh.grid_size, double(grid)));
  const At sample = sw["sample"];
  sh.sampled = !sample.v.is_null();
  if (sh.sampled && sh.grid_size < 2) sample.fail(fmt::format("expected null for a grid of {}, got {}", sh.grid_size, describe(sample.v)));
  const uint64_t n = sh.sampled ? sample.uint(1, sh.grid_size - 1) : sh.grid_size;
  const At cf = sw["configurations"];
  sh.configurations = cf.uint(1);
  if (sh.configurations != n)
    cf.fail(fmt::format("{}, but the {} has {}", sh.configurations, sh.sampled ? "sample" : "grid", n));
  sw["replications"].uint(1, 10000);
  sw["objective"].str();
  const At slo = sw["slo"];
  for (size_t k = 0; k < slo.array().size(); ++k) {
    const At t = slo.item(k);
    t["metric"].str();
    const At b = t["bound"];
    if (b.v != "max" && b.v != "min") b.fail("expected \"max\" or \"min\", got " + describe(b.v));
    t["limit"].number();
  }
  sw["fingerprint"].str();
  if (!sh.sampled) sh.expected_parameters = [params = sh.params](uint64_t i) { return grid_parameters(params, i); };

  const At shard = doc["shard"];
  sh.shard_count = uint32_t(shard["count"].uint(1, std::numeric_limits<uint32_t>::max()));
  const At si = shard["index"];
  sh.shard_index = uint32_t(si.uint());
  if (si.v.get<uint64_t>() >= sh.shard_count)
    si.fail(fmt::format("shard {} is out of range for {} shards (0..{})", si.v.get<uint64_t>(), sh.shard_count,
                        sh.shard_count - 1));
  return sh;
}

// Configurations k, k+n, k+2n, ... below `total`: how many.
uint64_t shard_size(uint64_t total, uint32_t k, uint32_t n) { return total > k ? (total - 1 - k) / n + 1 : 0; }

// The first configuration of shard k/n missing from `seen` (ascending), which holds fewer.
uint64_t first_missing(const std::set<uint64_t>& seen, uint32_t k, uint32_t n) {
  uint64_t want = k;
  for (uint64_t i : seen) {
    if (i != want) return want;
    want += n;
  }
  return want;
}

// Check one shard document; returns its shape and rows (already checked).
SweepShape check_shard(const std::string& file, const Json& doc) {
  const Fail fail = [&](const std::string& ptr, const std::string& msg) {
    throw InputError(Location{file, 0, 0, ""}, (ptr.empty() ? "/" : ptr) + ": " + msg);
  };
  const At root{doc, "", &fail};
  SweepShape sh = check_header(root);
  const At rows = root["rows"];
  std::map<uint64_t, size_t> seen;
  for (size_t r = 0; r < rows.array().size(); ++r) {
    const At row = rows.item(r);
    const uint64_t i = check_row(row, sh);
    const auto [it, fresh] = seen.emplace(i, r);
    if (!fresh) row["index"].fail(fmt::format("configuration {} appears twice (also at /rows/{})", i, it->second));
  }
  const uint64_t want = shard_size(sh.configurations, sh.shard_index, sh.shard_count);
  if (seen.size() != want) {
    std::set<uint64_t> ids;
    for (const auto& [i, _] : seen) ids.insert(i);
    rows.fail(fmt::format("configuration {} is missing: shard {} of {} holds {} configurations, this file has {}",
                          first_missing(ids, sh.shard_index, sh.shard_count), sh.shard_index, sh.shard_count, want,
                          seen.size()));
  }
  return sh;
}

// The first place where two checked headers differ, as a JSON pointer, or "".
std::string first_difference(const Json& a, const Json& b, const std::string& ptr) {
  if (a.is_object() && b.is_object()) {
    for (auto it = a.begin(); it != a.end(); ++it) {
      const std::string p = ptr + "/" + pointer_token(it.key());
      if (!b.contains(it.key())) return p;
      const std::string d = first_difference(it.value(), b[it.key()], p);
      if (!d.empty()) return d;
    }
    for (auto it = b.begin(); it != b.end(); ++it)
      if (!a.contains(it.key())) return ptr + "/" + pointer_token(it.key());
    return "";
  }
  if (a.is_array() && b.is_array() && a.size() == b.size()) {
    for (size_t i = 0; i < a.size(); ++i) {
      const std::string d = first_difference(a[i], b[i], ptr + "/" + std::to_string(i));
      if (!d.empty()) return d;
    }
    return "";
  }
  return a == b ? "" : ptr;
}

std::string value_at(const Json& doc, const std::string& ptr) {
  const Json::json_pointer p(ptr);
  return doc.contains(p) ? describe(doc.at(p)) : std::string("nothing");
}

}  // namespace

Json merge_sweeps(const std::vector<std::pair<std::string, Json>>& shards) {
  if (shards.empty()) throw InputError(Location{"fleetsim merge", 0, 0, ""}, "no shard files given");
  auto bad = [](const std::string& file, const std::string& msg) { throw InputError(Location{file, 0, 0, ""}, msg); };
  const auto& [first_file, first] = shards[0];
  std::map<uint32_t, std::string> seen;
  std::vector<Json> rows;
  uint32_t count = 0;
  for (const auto& [file, doc] : shards) {
    const SweepShape sh = check_shard(file, doc);
    // the same sweep: every field of scenario (but where the file was read from) and of sweep
    // equal to the first shard's; the fingerprint (of the scenario text and overrides) last
    Json a = {{"scenario", doc["scenario"]}, {"sweep", doc["sweep"]}};
    Json b = {{"scenario", first["scenario"]}, {"sweep", first["sweep"]}};
    for (Json* j : {&a, &b}) {
      (*j)["scenario"].erase("source");
      (*j)["sweep"].erase("fingerprint");
    }
    std::string d = first_difference(a["scenario"], b["scenario"], "/scenario");
    if (d.empty()) d = first_difference(a["sweep"], b["sweep"], "/sweep");
    if (d.empty() && doc["sweep"]["fingerprint"] != first["sweep"]["fingerprint"]) d = "/sweep/fingerprint";
    if (!d.empty())
      bad(file, fmt::format("{}: {}, but {} has {}: the shards are of different sweeps{}", d, value_at(doc, d), first_file,
                            value_at(first, d),
                            d == "/sweep/fingerprint" ? " (the scenario's text or its --set overrides differ)" : ""));
    const uint32_t k = sh.shard_index, n = sh.shard_count;
    if (count == 0) count = n;
    if (n != count)
      bad(file, fmt::format("/shard/count: {}, but {} has {}: the shards are of different splits", n, first_file, count));
    if (seen.count(k)) bad(file, fmt::format("/shard/index: shard {} appears twice (also {})", k, seen[k]));
    seen[k] = file;
    for (const auto& r : doc["rows"]) rows.push_back(r);
  }
  if (seen.size() != count) {
    std::string missing;
    int listed = 0;
    for (uint32_t k = 0; k < count; ++k) {
      if (seen.count(k)) continue;
      if (listed++ == 8) {
        missing += ", ...";
        break;
      }
      missing += (missing.empty() ? "" : ", ") + std::to_string(k);
    }
    bad(first_file, fmt::format("incomplete: {} of {} shards given; missing shard {}", seen.size(), count, missing));
  }
  Json header = first;
  header.erase("rows");
  header.erase("summary");
  header["shard"] = {{"index", 0}, {"count", 1}};
  return assemble(header, std::move(rows));
}

namespace {

// Finds where nlohmann's parser gave up: the byte offset and what went wrong.
struct ErrorLocator : nlohmann::json_sax<Json> {
  size_t position = 0;
  std::string token, message;
  int id = 0;
  bool null() override { return true; }
  bool boolean(bool) override { return true; }
  bool number_integer(number_integer_t) override { return true; }
  bool number_unsigned(number_unsigned_t) override { return true; }
  bool number_float(number_float_t, const string_t&) override { return true; }
  bool string(string_t&) override { return true; }
  bool binary(binary_t&) override { return true; }
  bool start_object(std::size_t) override { return true; }
  bool key(string_t&) override { return true; }
  bool end_object() override { return true; }
  bool start_array(std::size_t) override { return true; }
  bool end_array() override { return true; }
  bool parse_error(std::size_t pos, const std::string& last_token, const nlohmann::detail::exception& ex) override {
    position = pos;
    token = last_token;
    message = ex.what();
    id = ex.id;
    return false;
  }
};

// nlohmann's message without its "[json.exception...] parse error at line L, column C: " prefix.
std::string plain_message(std::string m) {
  if (!m.empty() && m[0] == '[') {
    const size_t close = m.find("] ");
    if (close != std::string::npos) m = m.substr(close + 2);
  }
  if (m.rfind("parse error", 0) == 0) {
    const size_t colon = m.find(": ");
    if (colon != std::string::npos) m = m.substr(colon + 2);
  }
  return m;
}

}  // namespace

Json parse_json_located(const std::string& text, const std::string& file, int first_line) {
  try {
    return Json::parse(text);
  } catch (const Json::exception&) {
  }
  ErrorLocator loc;
  Json::sax_parse(text, &loc);
  // the offending character (a syntax error) or the start of the offending number, as line and column
  size_t at = loc.id == 406 ? loc.position - std::min(loc.position, loc.token.size()) : loc.position > 0 ? loc.position - 1 : 0;
  at = std::min(at, text.size());
  int line = first_line, column = 1;
  size_t line_start = 0;
  for (size_t i = 0; i < at; ++i)
    if (text[i] == '\n') {
      ++line;
      line_start = i + 1;
    }
  column = int(at - line_start) + 1;
  const size_t line_end = std::min(text.find('\n', line_start), text.size());
  std::string src_line = text.substr(line_start, std::min<size_t>(line_end - line_start, 200));
  std::string msg = loc.id == 406 ? fmt::format("number out of range (beyond a double): {}", loc.token)
                                  : "not valid JSON: " + plain_message(loc.message);
  for (char& c : msg)
    if ((unsigned char)c < 0x20 || (unsigned char)c >= 0x7f) c = '?';  // one printable line
  throw InputError(Location{file, line, column, src_line}, msg);
}

namespace {

// The whole of a regular file, or an InputError saying why not.
std::string read_text_file(const std::string& path, const char* what) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0)
    throw InputError(Location{path, 0, 0, ""},
                     fmt::format("cannot open {} ({}; does it exist and is it readable?)", what, std::strerror(errno)));
  if (S_ISDIR(st.st_mode)) throw InputError(Location{path, 0, 0, ""}, fmt::format("is a directory, not a {}", what));
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f)
    throw InputError(Location{path, 0, 0, ""},
                     fmt::format("cannot open {} ({}; does it exist and is it readable?)", what, std::strerror(errno)));
  std::string text;
  char buf[1 << 16];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) text.append(buf, n);
  const bool failed = std::ferror(f);
  const int err = errno;
  std::fclose(f);
  if (failed) throw InputError(Location{path, 0, 0, ""}, fmt::format("cannot read {}: {}", what, std::strerror(err)));
  return text;
}

}  // namespace

Json read_json_file(const std::string& path) { return parse_json_located(read_text_file(path, "shard file"), path); }

// ---- the journal ----

namespace {

constexpr int kJournalVersion = 1;

Json journal_header(const ScenarioSource& src, const SweepSpec& spec, uint32_t shard_index, uint32_t shard_count) {
  const Scenario base = src.instantiate();
  const Json doc = sweep_header(src, spec, base, shard_index, shard_count);
  Json overrides = Json::array();
  for (const auto& o : src.base_overrides()) overrides.push_back(o.label);
  Json h;
  h["fleetsim_journal"] = "sweep";
  h["version"] = kJournalVersion;
  h["scenario"] = {{"source", src.name()},
                   {"text_fnv1a64", fmt::format("{:016x}", fnv1a(src.text()))},
                   {"overrides", overrides},
                   {"seed", base.seed}};
  h["sweep"] = {{"parameters", doc["sweep"]["parameters"]},
                {"replications", spec.replications},
                {"sample", doc["sweep"]["sample"]},
                {"configurations", spec.count()},
                {"fingerprint", spec.fingerprint}};
  h["shard"] = doc["shard"];
  return h;
}

// Why a journal's header does not match this run, or "" when it does.
std::string header_mismatch(const Json& got, const Json& want) {
  if (!got.is_object() || got.value("fleetsim_journal", Json()) != "sweep")
    return "not a fleetsim sweep journal (its first line should name the sweep)";
  if (got.value("version", Json()) != kJournalVersion)
    return fmt::format("/version: {}: this fleetsim reads journal version {}", value_at(got, "/version"), kJournalVersion);
  struct Field {
    const char* ptr;
    const char* what;
  };
  static const Field fields[] = {
      {"/scenario/text_fnv1a64", "the scenario's text has changed since the journal was written"},
      {"/scenario/overrides", "the journal was written with other --set, --seed or --duration overrides"},
      {"/scenario/seed", "the journal was written with another seed"},
      {"/sweep/parameters", "the journal was written for other sweep parameters"},
      {"/sweep/replications", "the journal was written for another number of replications"},
      {"/sweep/sample", "the journal was written for another sample"},
      {"/sweep/configurations", "the journal was written for another number of configurations"},
      {"/sweep/fingerprint", "the journal was written for another sweep section (sample seed, objective or slo)"},
      {"/shard", "the journal was written for another shard"},
  };
  for (const auto& f : fields) {
    const Json::json_pointer p(f.ptr);
    if (!got.contains(p) || got.at(p) != want.at(p)) {
      const std::string d = got.contains(p) ? first_difference(got.at(p), want.at(p), f.ptr) : std::string(f.ptr);
      return fmt::format("{}: {} (journal: {}, this run: {}); resume with the same scenario file and flags", d, f.what,
                         value_at(got, d), value_at(want, d));
    }
  }
  return "";
}

[[noreturn]] void write_failed(const std::string& path, int err) {
  throw OutputError(fmt::format("{}: error: writing the journal failed: {}", path, std::strerror(err)), err);
}

}  // namespace

namespace {

struct FdCloser {
  int fd = -1;
  ~FdCloser() {
    if (fd >= 0) ::close(fd);
  }
  int release() { return std::exchange(fd, -1); }
};

// Open a journal and lock it (flock, a regular file) for this process alone: a second sweep
// resuming or restarting the same journal is refused instead of interleaving its rows.
int open_journal(const std::string& path, int flags) {
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode))
    throw InputError(Location{path, 0, 0, ""}, "is a directory, not a journal file");
  const int fd = ::open(path.c_str(), flags | O_CLOEXEC, 0666);
  if (fd < 0) throw InputError(Location{path, 0, 0, ""}, fmt::format("cannot open the journal: {}", std::strerror(errno)));
  struct stat fst {};
  if (::fstat(fd, &fst) == 0 && !S_ISREG(fst.st_mode)) return fd;  // a device or a pipe: nothing to lock
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    ::close(fd);
    throw InputError(Location{path, 0, 0, ""}, err == EWOULDBLOCK ? std::string("the journal is in use by another running sweep")
                                                                  : fmt::format("cannot lock the journal: {}", std::strerror(err)));
  }
  return fd;
}

std::FILE* append_stream(FdCloser& fd, const std::string& path) {
  std::FILE* f = ::fdopen(fd.fd, "a");
  if (!f) throw InputError(Location{path, 0, 0, ""}, fmt::format("cannot open the journal: {}", std::strerror(errno)));
  fd.release();
  return f;
}

}  // namespace

SweepJournal SweepJournal::create(const std::string& path, const ScenarioSource& src, const SweepSpec& spec,
                                  uint32_t shard_index, uint32_t shard_count) {
  const Json header = journal_header(src, spec, shard_index, shard_count);
  FdCloser fd{open_journal(path, O_RDWR | O_CREAT)};
  struct stat st {};
  if (::fstat(fd.fd, &st) == 0 && st.st_size > 0)
    throw InputError(Location{path, 0, 0, ""},
                     fmt::format("the journal exists and may hold finished configurations: continue it with --resume {}, "
                                 "or remove it to start afresh",
                                 path));
  SweepJournal j;
  j.path_ = path;
  j.file_.reset(append_stream(fd, path));
  const std::string line = header.dump() + "\n";
  if (std::fwrite(line.data(), 1, line.size(), j.file_.get()) != line.size() || std::fflush(j.file_.get()) != 0)
    write_failed(path, errno);
  return j;
}

SweepJournal SweepJournal::resume(const std::string& path, const ScenarioSource& src, const SweepSpec& spec,
                                  uint32_t shard_index, uint32_t shard_count) {
  FdCloser fd{open_journal(path, O_RDWR)};
  std::string text;
  char buf[1 << 16];
  for (;;) {
    const ssize_t n = ::read(fd.fd, buf, sizeof buf);
    if (n == 0) break;
    if (n < 0) {
      if (errno == EINTR) continue;
      throw InputError(Location{path, 0, 0, ""}, fmt::format("cannot read the journal: {}", std::strerror(errno)));
    }
    text.append(buf, size_t(n));
  }
  const size_t complete = text.rfind('\n') == std::string::npos ? 0 : text.rfind('\n') + 1;  // a cut-short tail is dropped
  if (complete == 0)
    throw InputError(Location{path, 0, 0, ""},
                     "the journal has no complete first line (it was cut short before the sweep started): remove it and "
                     "start again with --journal");
  const Json want = journal_header(src, spec, shard_index, shard_count);

  SweepShape sh;
  for (const auto& p : spec.params) sh.params.emplace_back(p.path, p.json_values);
  sh.grid_size = spec.grid_size;
  sh.configurations = spec.count();
  sh.sampled = spec.sample != 0;
  sh.shard_index = shard_index;
  sh.shard_count = shard_count;
  sh.expected_parameters = [&spec](uint64_t i) { return spec.parameters_json(i); };

  SweepJournal j;
  j.path_ = path;
  std::map<uint64_t, int> seen;  // configuration -> line
  int line_no = 0;
  for (size_t start = 0; start < complete;) {
    const size_t end = text.find('\n', start);
    const std::string line = text.substr(start, end - start);
    start = end + 1;
    ++line_no;
    const Json v = parse_json_located(line, path, line_no);
    if (line_no == 1) {
      const std::string why = header_mismatch(v, want);
      if (!why.empty()) throw InputError(Location{path, 1, 0, ""}, why);
      continue;
    }
    const Fail fail = [&](const std::string& ptr, const std::string& msg) {
      throw InputError(Location{path, line_no, 0, ""}, (ptr.empty() ? "/" : ptr) + ": " + msg);
    };
    const At row{v, "", &fail};
    const uint64_t i = check_row(row, sh);
    const auto [it, fresh] = seen.emplace(i, line_no);
    if (!fresh) row["index"].fail(fmt::format("configuration {} is already on line {}", i, it->second));
    j.finished_.push_back(v);
  }
  if (complete < text.size() && ::ftruncate(fd.fd, off_t(complete)) != 0) write_failed(path, errno);
  j.file_.reset(append_stream(fd, path));
  return j;
}

void SweepJournal::append(const Json& row) {
  const std::string line = row.dump() + "\n";
  if (std::fwrite(line.data(), 1, line.size(), file_.get()) != line.size() || std::fflush(file_.get()) != 0)
    write_failed(path_, errno);
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
