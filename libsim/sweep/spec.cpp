// Sweeps: the sweep section of a scenario parsed into a SweepSpec, and each configuration's overrides and parameters.
#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <set>

#include "core/philox.hpp"
#include "input/yaml_node.hpp"
#include "sweep/internal.hpp"
#include "sweep/settle.hpp"

namespace fleetsim {

using detail::N;
using detail::Source;
using sweep_detail::fnv1a;
using sweep_detail::grid_point;
using sweep_detail::kMetricSections;
using sweep_detail::numeric_leaves;

uint64_t sweep_detail::fnv1a(const std::string& s, uint64_t h) {
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  return h;
}

namespace {

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

// A list value as the text of its override: the scalar as written, unless it was quoted (a
// string, which a number or a switch refuses as --set does) or its text would read back as
// something else ("a: b" is a mapping, "#x" nothing): then double-quoted, as a scenario file
// would have to write it.
std::string scalar_text(const YAML::Node& n) {
  const std::string& s = n.Scalar();
  if (n.Tag() != "!") {
    try {
      const YAML::Node back = YAML::Load(s);
      if (back.IsScalar() && back.Scalar() == s) return s;
    } catch (const YAML::Exception&) {
    }
  }
  YAML::Emitter e;
  e << YAML::DoubleQuoted << s;
  return e.c_str();
}

Json yaml_to_json(const YAML::Node& n) {
  // a value as the scenario reads it, and as a JSON reader takes it back for a run: null (`~`, a
  // sweep's default), a boolean, a number, a string, a mapping or a list of them
  if (n.IsNull()) return Json(nullptr);
  if (n.IsMap()) {
    Json o = Json::object();
    for (auto it = n.begin(); it != n.end(); ++it) o[it->first.Scalar()] = yaml_to_json(it->second);
    return o;
  }
  if (n.IsSequence()) {
    Json a = Json::array();
    for (const auto& x : n) a.push_back(yaml_to_json(x));
    return a;
  }
  // a quoted scalar is a string whatever it looks like ("007", "1.10", "true"), as the scenario reads it
  if (n.IsScalar() && n.Tag() == "!") return Json(n.Scalar());
  if (n.IsScalar()) {
    const std::string& s = n.Scalar();
    if (s == "true") return Json(true);  // (yes, no, on, off stay strings: a run reads them back alike)
    if (s == "false") return Json(false);
    char* end = nullptr;
    // an integer is kept whole (a 64-bit seed would not survive a double)
    if (!s.empty() && s.find_first_of(".eExXpP") == std::string::npos) {
      errno = 0;
      const long long i = std::strtoll(s.c_str(), &end, 10);
      if (end && *end == '\0' && errno == 0) return Json(int64_t(i));
      errno = 0;
      const unsigned long long u = std::strtoull(s.c_str(), &end, 10);
      if (s[0] != '-' && end && *end == '\0' && errno == 0) return Json(uint64_t(u));
    }
    const double d = std::strtod(s.c_str(), &end);
    if (!s.empty() && end && *end == '\0' && std::isfinite(d)) {
      if (d == std::floor(d) && std::fabs(d) < 9.0e15 && s.find_first_of(".eE") == std::string::npos)
        return Json(int64_t(d));
      return Json(d);
    }
    return Json(s);
  }
  return Json(yaml_flow(n));  // (not reached: a node is null, a scalar, a mapping or a list)
}

std::string fmt_value(double v) { return fmt::format("{}", v); }

// The decimal places a number is written with: 10000.1 has 1, 1e-3 has 3, 1e300 none; -1 past 12.
int decimals(double x) {
  for (int k = 0; k <= 12; ++k) {
    const double y = x * std::pow(10.0, k);
    if (!std::isfinite(y) || std::fabs(y - std::round(y)) <= 1e-9 * std::max(1.0, std::fabs(y))) return k;
  }
  return -1;
}

}  // namespace

std::vector<Override> SweepSpec::overrides(uint64_t config) const {
  const auto idx =
      grid_point(sample ? sampled[config] : config, params.size(), [&](size_t k) { return params[k].values.size(); });
  std::vector<Override> out;
  for (size_t k = 0; k < params.size(); ++k) {
    const auto& p = params[k];
    out.push_back(Override{p.path, p.values[idx[k]], p.origins[idx[k]], p.path + "=" + p.values[idx[k]]});
  }
  return out;
}

Json SweepSpec::parameters_json(uint64_t config) const {
  const auto idx =
      grid_point(sample ? sampled[config] : config, params.size(), [&](size_t k) { return params[k].values.size(); });
  Json j = Json::object();
  for (size_t k = 0; k < params.size(); ++k) j[params[k].path] = params[k].json_values[idx[k]];
  return j;
}

namespace {
// The scenario's YAML with its base overrides applied.
YAML::Node load_with_overrides(const ScenarioSource& scenario, Source& src) {
  src.file = scenario.name();
  src.base_dir = scenario.base_dir();
  src.lines = detail::split_lines(scenario.text());
  YAML::Node root = detail::load_located(scenario.text(), src);
  if (root.IsMap())
    for (const auto& o : scenario.base_overrides()) detail::apply_override(root, o, src);
  return root;
}
}  // namespace

bool has_sweep_section(const ScenarioSource& scenario) {
  Source src;
  const YAML::Node root = load_with_overrides(scenario, src);
  return N{root, "", &src}.has("sweep");
}

SweepSpec parse_sweep(const ScenarioSource& scenario) {
  Source src;
  YAML::Node root = load_with_overrides(scenario, src);
  const N r{root, "", &src};
  if (!root.IsMap() || !r.has("sweep"))
    r.fail("no sweep section: add `sweep: {parameters: {fleet.replicas: [1, 2, 4]}, replications: 4}`");
  const N sw = r.at("sweep");
  sw.allow_keys({"parameters", "sample", "replications", "max_configurations", "slo", "objective", "seed",
                 "feasible_on", "sequential", "stop_certain_misses"});

  // the base scenario must be valid by itself
  const Scenario base = scenario.instantiate();

  SweepSpec spec;
  spec.replications = sw.has("replications") ? uint32_t(sw.at("replications").integer(1, 10000)) : 1;
  spec.max_configurations =
      sw.has("max_configurations") ? uint64_t(sw.at("max_configurations").integer(1, 1000000)) : 100000;
  spec.sample_seed = sw.has("seed") ? sw.at("seed").unsigned_integer() : base.seed;

  const N ps = sw.req("parameters");
  ps.require_map();
  if (ps.node.size() == 0) ps.fail("no parameters to sweep (expected e.g. fleet.replicas: [1, 2, 4])");
  for (auto it = ps.node.begin(); it != ps.node.end(); ++it) {
    SweepParam p;
    p.path = ps.key_name(it->first);
    const N v{it->second, ps.path + "." + p.path, &src};
    // the sweep's own settings and the budgets are read once, not per configuration: sweeping
    // them would only repeat configurations
    for (const char* own : {"sweep", "budgets"})
      if (p.path == own || p.path.rfind(std::string(own) + ".", 0) == 0)
        N{it->first, v.path, &src}.fail(
            fmt::format("cannot be swept: a parameter overrides a scenario key in each "
                        "configuration, and the {}: section is read once for the whole sweep",
                        own));
    auto add = [&](const YAML::Node& node, const std::string& text, Json json) {
      // the value's place in the file, or the --set that gave it
      Location l = N{node, v.path, &src}.where();
      // (a long one-line list would otherwise be copied once per value)
      if (l.source_line.size() > 240) l.source_line.clear();
      p.values.push_back(text);
      p.json_values.push_back(std::move(json));
      p.origins.push_back(l);
    };
    if (v.node.IsSequence()) {
      if (v.node.size() == 0) v.fail("empty list of values (give at least one)");
      if (v.node.size() > kMaxSweepListValues)
        v.fail(fmt::format("{} values; a list takes at most {} (a range {{from, to, step}} takes {})", v.node.size(),
                           kMaxSweepListValues, kMaxSweepRangeValues));
      for (size_t i = 0; i < v.node.size(); ++i) {
        const YAML::Node x = v.node[i];
        add(x, x.IsScalar() ? scalar_text(x) : yaml_flow(x), yaml_to_json(x));
      }
    } else if (v.node.IsMap() && v.has("from")) {
      p.is_range = true;
      v.allow_keys({"from", "to", "step"});
      const double from = v.at("from").num(), to = v.req("to").num();
      const double step = v.has("step") ? v.at("step").num() : 1.0;
      if (!(step > 0)) v.at("step").fail("step must be > 0");
      if (to < from) v.at("to").fail("to must be >= from");
      const double n = std::floor((to - from) / step + 1e-9) + 1;
      if (n > double(kMaxSweepRangeValues))
        v.fail(fmt::format("the range has {} values; a range takes at most {} (raise step)",
                           n < 1e15 ? fmt::format("{:.0f}", n) : fmt::format("{:.3g}", n), kMaxSweepRangeValues));
      // each value to the decimals its ends and step are written with: 0.1 steps stay printable
      const int places = std::min(decimals(from), decimals(step)) < 0 ? -1 : std::max(decimals(from), decimals(step));
      const double unit = places < 0 ? 0.0 : std::pow(10.0, places);
      for (int64_t i = 0; i < int64_t(n); ++i) {
        const double x = from + double(i) * step;
        const double xr = unit > 0 && std::isfinite(x * unit) ? std::round(x * unit) / unit : x;
        const bool integral = xr == std::floor(xr) && std::fabs(xr) < 9e15;
        add(v.node, fmt_value(xr), integral ? Json(int64_t(xr)) : Json(xr));
      }
    } else {
      v.fail("expected a list of values or a range {from, to, step}");
    }
    std::set<std::string> seen;  // by value: 1 and 1.0 are one number
    for (size_t i = 0; i < p.json_values.size(); ++i) {
      const Json& x = p.json_values[i];
      const std::string key = x.is_number_integer() ? x.dump()
                              : x.is_number()       ? fmt::format("{}", x.get<double>())
                                                    : x.dump();
      if (!seen.insert(key).second)
        throw InputError(p.origins[i],
                         fmt::format("{}: value {} is listed twice (each configuration once)", v.path, p.values[i]));
    }
    // one parameter inside another's value would be overridden by it, or override it, in every
    // configuration: rows would name values that never ran
    for (const SweepParam& q : spec.params)
      if (q.path == p.path || p.path.rfind(q.path + ".", 0) == 0 || q.path.rfind(p.path + ".", 0) == 0)
        N{it->first, v.path, &src}.fail(
            fmt::format("overlaps the parameter {}: sweep a key or the block that holds it, not both", q.path));
    spec.params.push_back(std::move(p));
  }
  // grid size, guarding overflow
  long double grid = 1;
  for (const auto& p : spec.params) grid *= (long double)p.values.size();
  if (grid > 1e18L)
    ps.fail(sw.has("sample") ? "the grid is over 10^18 points, too many to number even when sampled: sweep fewer values"
                             : "the grid is astronomically large; use sample: N");
  spec.grid_size = uint64_t(grid);
  if (sw.has("sample")) {
    spec.sample = uint64_t(sw.at("sample").integer(1, 100000000));
    if (spec.sample >= spec.grid_size) spec.sample = 0;  // the whole grid
  }
  // (the sample is not drawn yet: count() would read its empty set)
  const uint64_t configurations = spec.sample ? spec.sample : spec.grid_size;
  if (configurations > spec.max_configurations) {
    const N where = sw.has("sample") ? sw.at("sample") : ps;
    where.fail(
        fmt::format("{} configurations exceed the limit of {} (raise sweep.max_configurations, or sample: N "
                    "random points of the grid)",
                    configurations, spec.max_configurations));
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
        scenario.instantiate_configuration({Override{p.path, p.values[i], p.origins[i], p.path + "=" + p.values[i]}});
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
                 (s.empty() ? " (use a numeric path of the run report, e.g. latency_s.ttft.p99)"
                            : " (did you mean '" + s + "'?)"));
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
      if (t.is_max && t.limit < 0 && sweep_detail::never_negative(m))
        (vn.node.IsMap() ? vn.at("max") : vn)
            .fail(fmt::format("{} is never negative, so at most {:g} can never be met", m, t.limit));
      spec.slo.push_back(t);
    }
  }
  const bool generative = base.pools[0].model.kind == ModelKind::generate;
  // the whole spend per unit of work: every dollar over every token in and out (the decode share,
  // cost.per_million_output_tokens_usd, ranks a fleet with costly prefill as cheap)
  spec.objective = generative ? "cost.per_million_tokens_usd" : "cost.per_request_usd";
  if (sw.has("sequential")) spec.sequential = sw.at("sequential").boolean();
  if (sw.has("stop_certain_misses")) spec.stop_certain_misses = sw.at("stop_certain_misses").boolean();
  if (sw.has("feasible_on")) spec.feasible_on_bound = sw.at("feasible_on").choice({"bound", "mean"}) == "bound";
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
  if (!spec.feasible_on_bound) canon += "\nfeasible_on mean";
  if (!spec.sequential) canon += "\nsequential off";
  if (!spec.stop_certain_misses) canon += "\nstop_certain_misses off";
  // where runs may stop early its rows differ from a sweep's that ran them all to their end (a
  // journal from before the rule): the base scenario's requests bounded, or arrivals swept
  bool may_stop = false;
  for (const auto& p : spec.params) may_stop = may_stop || p.path.find("arrival") != std::string::npos;
  may_stop = settle_may_apply(spec) && (may_stop || settle_request_bound(base.params(), spec.replications) > 0);
  if (may_stop) canon += "\nstop_certain_misses on";
  for (const auto& t : spec.slo) canon += fmt::format("\n{} {} {}", t.metric, t.is_max, t.limit);
  // the files the scenario reads (traces, length columns, profiles), by their bytes: a trace changed
  // between two shards, or before a resume, is another sweep
  for (const auto& f : base.inputs) {
    std::ifstream in(f, std::ios::binary);
    uint64_t h = 1469598103934665603ULL;
    char buf[1 << 16];
    while (in.read(buf, sizeof buf) || in.gcount() > 0) h = fnv1a(std::string(buf, size_t(in.gcount())), h);
    canon += fmt::format("\ninput {:016x}", h);
  }
  spec.fingerprint = fmt::format("{:016x}", fnv1a(canon));
  return spec;
}

}  // namespace fleetsim
