// The published serving runs of tests/validation/ and the split between the rows profiles are
// fitted on and the rows held out (docs/validation.md, "Latency"). Shared by the validation tool
// (validate_latency) and the test that holds the shipped profiles to their recorded errors.
//
// The split, fixed before any comparison: within each group of rows (engine, model, device, tp)
// in file order, the 1st, 3rd, 5th ... benchmark (a configuration at a load: its repeats go
// together) is fitted on and the 2nd, 4th, 6th ... held out; a measurement given twice is taken
// once. A device profile is fitted on the fit rows of every vLLM group on that device.
#pragma once
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "libsim/calibrate/benchmark.hpp"
#include "libsim/calibrate/fit.hpp"
#include "libsim/input/profile.hpp"

namespace fleetsim::validation {

struct Split {
  std::vector<const BenchPoint*> fit, held;
};

struct LatencyData {
  std::vector<BenchPoint> serving;  // serving_points.csv
  std::vector<BenchPoint> holdout;  // holdout_points.csv: independent runs, never fitted on
  std::map<std::string, Split> by_group;
  std::map<std::string, Split> by_device;  // vLLM rows
};

inline LatencyData load_latency_data(const std::string& dir, const BenchProtocol& proto = {}) {
  LatencyData d;
  BenchPoint defaults;
  d.serving = read_benchmarks(dir + "/serving_points.csv", defaults);
  d.holdout = read_benchmarks(dir + "/holdout_points.csv", defaults);
  // e2e where a source gives only TTFT and TPOT: TTFT + (osl - 1) TPOT, as benchmarks define TPOT
  for (auto& p : d.serving)
    if (!std::isfinite(p.measured[kMeanE2e]) && std::isfinite(p.measured[kMeanTtft]) &&
        std::isfinite(p.measured[kMeanTpot]))
      p.measured[kMeanE2e] = p.measured[kMeanTtft] + (p.osl - 1) * p.measured[kMeanTpot];
  mark_unsimulatable(d.serving, proto);
  mark_unsimulatable(d.holdout, proto);
  // alternate by benchmark within each group: repeats of one configuration at one load fall on one
  // side; a measurement a source published twice (the same figures) is taken once
  std::map<std::string, int> seen;
  std::map<std::string, bool> side;
  std::set<std::string> taken;
  for (const auto& p : d.serving) {
    if (!p.skip.empty()) continue;
    std::string once = benchmark_key(p);
    for (double v : p.measured) {
      char b[32];
      std::snprintf(b, sizeof b, "|%.17g", v);
      once += b;
    }
    if (!taken.insert(once).second) continue;
    const auto [at, fresh] = side.emplace(benchmark_key(p), false);
    if (fresh) at->second = seen[p.group]++ % 2 == 0;
    const bool fit = at->second;
    (fit ? d.by_group[p.group].fit : d.by_group[p.group].held).push_back(&p);
    if (p.engine == "vllm") (fit ? d.by_device[p.device].fit : d.by_device[p.device].held).push_back(&p);
  }
  return d;
}

// The group a per-configuration profile covers: engine/model/device/tpN.
inline std::string profile_group(const PerfProfile& p) {
  const std::string engine = p.engine.substr(0, p.engine.find(' '));
  return engine + "/" + p.model + "/" + p.device + "/tp" + std::to_string(p.tp);
}

// The rows a shipped profile was fitted on and held out from (empty if it covers none).
inline const Split* split_for(const PerfProfile& p, const LatencyData& d) {
  if (p.model.empty()) {
    auto it = d.by_device.find(p.device);
    return it == d.by_device.end() ? nullptr : &it->second;
  }
  auto it = d.by_group.find(profile_group(p));
  return it == d.by_group.end() ? nullptr : &it->second;
}

inline std::vector<const BenchPoint*> independent_points(const LatencyData& d) {
  std::vector<const BenchPoint*> out;
  for (const auto& p : d.holdout)
    if (p.skip.empty()) out.push_back(&p);
  return out;
}

// A run saturates when the simulation leaves requests unfinished or predicts a mean TTFT over 10x
// the measured one: the real servers of every row served their load.
inline bool saturated(const PointResult& r) {
  return !r.predicted.ok || (std::isfinite(r.error[kMeanTtft]) && r.error[kMeanTtft] > 9.0);
}

}  // namespace fleetsim::validation
