// Scenario files: length distributions (parse_dist) and their means (mean_of).
#include <fmt/format.h>

#include <cmath>
#include <filesystem>
#include <mutex>
#include <sstream>

#include "base/error.hpp"
#include "core/philox.hpp"
#include "core/workload.hpp"
#include "input/scenario_internal.hpp"
#include "input/trace.hpp"

namespace fleetsim::detail {

DistSpec parse_dist(const N& n, const std::string& base_dir, bool seconds) {
  DistSpec d;
  // a value: a token count (an integer >= 1), or with `seconds` a time (a number >= 0)
  auto value = [&](const N& v) { return seconds ? v.num_in(0, 1e7, "seconds") : double(v.integer(1, 10000000)); };
  if (n.node.IsScalar()) {  // shorthand for fixed
    d.kind = DistKind::fixed;
    d.a = value(n);
    d.describe = "fixed(" + n.node.Scalar() + ")";
    return d;
  }
  n.require_map();
  const std::string kind =
      n.req("dist").choice({"fixed", "uniform", "lognormal", "geometric", "exponential", "empirical"});
  std::ostringstream desc;
  if (kind == "fixed") {
    n.allow_keys({"dist", "value"});
    d.kind = DistKind::fixed;
    d.a = value(n.req("value"));
    desc << "fixed(" << d.a << ")";
  } else if (kind == "uniform") {
    n.allow_keys({"dist", "min", "max"});
    d.kind = DistKind::uniform;
    d.a = value(n.req("min"));
    d.b = value(n.req("max"));
    if (d.b < d.a) n.at("max").fail("max must be >= min", ErrorKind::inconsistent);
    desc << "uniform(" << d.a << ".." << d.b << ")";
  } else if (kind == "lognormal") {
    n.allow_keys({"dist", "median", "p99", "mu", "sigma"});
    d.kind = DistKind::lognormal;
    if (n.has("median") || n.has("p99")) {
      if (n.has("mu") || n.has("sigma")) n.fail("give either median and p99, or mu and sigma, not both");
      const double med = n.req("median").pos(1e7);
      const double p99 = n.req("p99").pos(1e8);
      if (p99 < med) n.at("p99").fail("p99 must be >= median", ErrorKind::inconsistent);
      d.a = std::log(med);
      d.b = std::log(p99 / med) / 2.326;
      desc << "lognormal(median=" << med << ", p99=" << p99 << ")";
    } else {
      d.a = n.req("mu").num_in(-10, 20, "mu");
      d.b = n.req("sigma").num_in(0, 5, "sigma");
      desc << "lognormal(mu=" << d.a << ", sigma=" << d.b << ")";
    }
  } else if (kind == "geometric") {
    n.allow_keys({"dist", "mean"});
    d.kind = DistKind::geometric;
    d.a = n.req("mean").num_in(1, 1e7, "mean");
    d.b = d.a > 1 ? 1.0 / std::log(1.0 - 1.0 / d.a) : 0.0;
    desc << "geometric(mean=" << d.a << ")";
  } else if (kind == "exponential") {
    n.allow_keys({"dist", "mean"});
    d.kind = DistKind::exponential;
    d.a = n.req("mean").pos(1e7);
    desc << "exponential(mean=" << d.a << ")";
  } else {
    n.allow_keys({"dist", "values", "weights", "csv", "column"});
    d.kind = DistKind::empirical;
    std::vector<double> vals, w;
    if ((n.has("csv") || n.has("column")) && (n.has("values") || n.has("weights")))
      n.fail("give either csv and column, or values (and weights), not both");
    if (n.has("csv")) {
      std::string path = n.at("csv").str();
      if (!std::filesystem::path(path).is_absolute()) path = (std::filesystem::path(base_dir) / path).string();
      const std::string col = n.req("column").str();
      n.src->files_read.push_back(path);
      try {
        vals = load_csv_column(path, col);
      } catch (const InputError& e) {
        n.at("csv").fail(e.one_line());
      }
      // each value meets the rules an inline one does
      for (size_t i = 0; i < vals.size(); ++i) {
        const double x = vals[i];
        const bool ok = seconds ? x >= 0 && x <= 1e7 : x >= 1 && x <= 1e7 && x == std::floor(x);
        if (!ok)
          n.at("csv").fail(fmt::format("{}: value {} of column '{}' (its value {} of {}) is out of range (expected {})",
                                       path, x, col, i + 1, vals.size(),
                                       seconds ? "seconds in [0, 10000000]" : "an integer in [1, 10000000]"));
      }
      w.assign(vals.size(), 1.0);
      desc << "empirical(" << n.at("csv").str() << ":" << col << ", " << vals.size() << " values)";
    } else {
      const N v = n.req("values");
      if (!v.node.IsSequence() || v.node.size() == 0)
        v.fail(seconds ? "expected a non-empty list of seconds" : "expected a non-empty list of token counts");
      for (size_t i = 0; i < v.node.size(); ++i)
        vals.push_back(value(N{v.node[i], v.path + "[" + std::to_string(i) + "]", v.src}));
      if (n.has("weights")) {
        const N wn = n.at("weights");
        if (!wn.node.IsSequence() || wn.node.size() != vals.size())
          wn.fail("expected a list of " + std::to_string(vals.size()) + " weights, one per value");
        for (size_t i = 0; i < wn.node.size(); ++i)
          w.push_back(N{wn.node[i], wn.path + "[" + std::to_string(i) + "]", wn.src}.num_in(0, 1e12, "weight"));
      } else {
        w.assign(vals.size(), 1.0);
      }
      desc << "empirical(" << vals.size() << " values)";
    }
    double total = 0;
    for (double x : w) total += x;
    if (!(total > 0)) n.fail("weights must not all be zero");
    double acc = 0;
    for (size_t i = 0; i < vals.size(); ++i) {
      if (vals[i] < 0) n.fail("token counts must be >= 0");
      acc += w[i];
      d.values.push_back(vals[i]);
      d.cdf.push_back(acc / total);
    }
    d.cdf.back() = 1.0;
  }
  d.describe = desc.str();
  return d;
}

double mean_seconds(const DistSpec& d) {
  switch (d.kind) {
    case DistKind::fixed: return d.a;
    case DistKind::uniform: return 0.5 * (d.a + d.b);
    case DistKind::lognormal: return std::exp(d.a + 0.5 * d.b * d.b);
    case DistKind::geometric:
    case DistKind::exponential: return d.a;
    case DistKind::empirical: {
      double m = 0, prev = 0;
      for (size_t i = 0; i < d.values.size(); ++i) {
        m += d.values[i] * (d.cdf[i] - prev);
        prev = d.cdf[i];
      }
      return m;
    }
  }
  return 0;
}

double mean_of(const DistSpec& d, int max_context, LoadCache* cache) {
  // by sampling the core's own sampler, so truncation and rounding are counted
  std::string key;
  if (cache) {
    std::ostringstream k;
    k.precision(17);
    k << int(d.kind) << ' ' << d.a << ' ' << d.b << ' ' << max_context;
    for (size_t i = 0; i < d.values.size(); ++i) k << ' ' << d.values[i] << ':' << d.cdf[i];
    key = k.str();
    std::lock_guard<std::mutex> lock(cache->mutex);
    auto it = cache->means.find(key);
    if (it != cache->means.end()) return it->second;
  }
  SimParams dummy{};
  DistParams p{d.kind, d.a, d.b, d.values.data(), d.cdf.data(), int64_t(d.values.size())};
  const Rng rng = make_rng(0x5eed, 0);
  double sum = 0;
  const int n = 20000;
  for (int i = 0; i < n; ++i) {
    int64_t x = sample_length(p, rng, Stream::prompt, 0, uint64_t(i));
    if (x > max_context) x = max_context;
    sum += double(x);
  }
  (void)dummy;
  const double mean = sum / n;
  if (cache) {
    std::lock_guard<std::mutex> lock(cache->mutex);
    cache->means[key] = mean;
  }
  return mean;
}

}  // namespace fleetsim::detail
