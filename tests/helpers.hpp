// Shared helpers for the tests: scenarios from inline YAML, and one-call simulations.
#pragma once
#include <stdlib.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include "libsim/backend/runner.hpp"
#include "libsim/calibrate/benchmark.hpp"
#include "libsim/core/engine.hpp"
#include "libsim/input/scenario.hpp"
#include "libsim/report/report.hpp"
#include "libsim/sweep/sweep.hpp"

namespace fleetsim::test {

// A built-in catalog entry by name (a test's typo throws).
// How many times needle occurs in s, without overlaps.
inline size_t count(const std::string& s, const std::string& needle) {
  size_t n = 0;
  for (size_t p = s.find(needle); p != std::string::npos; p = s.find(needle, p + needle.size())) ++n;
  return n;
}

inline const ModelSpec& model(const char* name) {
  for (const auto& m : builtin_models())
    if (m.name == name) return m;
  throw std::runtime_error(name);
}
inline const DeviceSpec& device(const char* name) {
  for (const auto& d : builtin_devices())
    if (d.name == name) return d;
  throw std::runtime_error(name);
}

// A one-pool scenario of Llama 3.1 8B at 2 req/s on `device`, with these engine settings.
inline std::string llama8b_pool(const std::string& device, const std::string& engine = "") {
  return "duration_s: 60\ndevice: " + device + "\nmodel: llama-3.1-8b\n" +
         (engine.empty() ? std::string() : "engine: {" + engine + "}\n") +
         "fleet: {replicas: 1}\n"
         "workload: {arrival: {process: poisson, rate_per_s: 2}, prompt_tokens: 512, output_tokens: 64}\n";
}

// Closed-loop benchmark points of Llama 3.1 8B "measured" by the simulator itself under known
// coefficients: mean TTFT and TPOT as fleetsim predicts them, so a fit must recover them.
inline std::vector<BenchPoint> synthetic_points(const std::vector<const char*>& device_ids,
                                                const std::vector<int>& isls, int osl,
                                                const std::vector<int>& concurrencies, const PerfCoefficients& truth) {
  std::vector<BenchPoint> pts;
  for (const char* dev : device_ids)
    for (int isl : isls)
      for (int conc : concurrencies) {
        BenchPoint p;
        p.where = std::string("synthetic ") + dev;
        p.engine = "vllm";
        p.model_id = "meta-llama/Llama-3.1-8B-Instruct";
        p.device_id = dev;
        p.isl = isl;
        p.osl = osl;
        p.concurrency = conc;
        p.num_prompts = 4 * conc;
        for (double& v : p.measured) v = std::nan("");
        p.model = catalog_model_for(p.model_id);
        p.device = catalog_device_for(p.device_id);
        p.group = p.device;
        pts.push_back(p);
      }
  HostWorkspace ws;
  for (auto& p : pts) {
    const Prediction m = predict_point(prepare_point(p), &truth, ws);
    REQUIRE(m.ok);
    p.measured[kMeanTtft] = m.v[kMeanTtft];
    p.measured[kMeanTpot] = m.v[kMeanTpot];
  }
  return pts;
}

inline Scenario scenario(const std::string& yaml, const std::vector<std::string>& sets = {}) {
  return load_scenario_text(yaml, "<test>", FLEETSIM_SOURCE_DIR, sets);
}

// Shard k of n of the sweep in `yaml`, on the CPU backend's `threads` threads.
inline Json sweep_shard(const std::string& yaml, uint32_t k = 0, uint32_t n = 1, int threads = 1, bool share = true) {
  const ScenarioSource src = ScenarioSource::from_text(yaml, "<sweep>", FLEETSIM_SOURCE_DIR);
  SweepOptions o;
  o.backend = Backend::cpu;
  o.threads = threads;
  o.shard_index = k;
  o.shard_count = n;
  o.share_runs = share;
  return run_sweep(src, parse_sweep(src), o);
}

// The one-line InputError that f() throws, or "(no error)".
template <class F>
std::string input_error(F&& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.one_line();
  }
  return "(no error)";
}

// The one-line error a scenario gives, or "(no error)".
inline std::string error_of(const std::string& yaml, const std::vector<std::string>& sets = {}) {
  try {
    scenario(yaml, sets);
  } catch (const InputError& e) {
    return e.one_line();
  }
  return "(no error)";
}

struct Result {
  std::unique_ptr<Tally> tally;
  std::unique_ptr<ClassTally> all;  // every class merged
  Json report;
  bool drained = false;
};

inline std::unique_ptr<ClassTally> merged_classes(const Tally& t) {
  auto all = std::make_unique<ClassTally>();
  class_tally_clear(*all);
  for (int32_t c = 0; c < t.n_classes; ++c) class_tally_merge(*all, t.classes[c]);
  return all;
}

inline Result run(const Scenario& s, uint32_t replication = 0) {
  const SimParams p = s.params();
  HostWorkspace ws;
  Result r;
  r.tally = simulate_once(p, replication, ws);
  r.drained = sim_drained(p, ws.for_params(p)) && r.tally->unfinished == 0;
  r.all = merged_classes(*r.tally);
  r.report = run_report(s, *r.tally);
  return r;
}

// A simulation bound and its starting fleet up, for a test that drives the core's functions by
// hand (replica_fail, replica_start, requeue_lost, ...) at the times it chooses.
struct Started {
  SimParams p;
  HostWorkspace ws;
  std::unique_ptr<Tally> tally = std::make_unique<Tally>();
  Sim s;
  explicit Started(const Scenario& sc) : p(sc.params()) {
    tally_clear(*tally, p.n_pools, p.n_classes);
    s = sim_bind(p, 0, ws.for_params(p), tally.get());
    sim_start_fleet(s, p);
  }
};

// A run's first identities: every request accounted for, nothing left in flight, and each
// provisioned replica-second in exactly one bucket (the random-fleet tests start here).
inline void check_conserves(const Result& r) {
  REQUIRE(r.tally->status == 0);
  const ClassTally& t = *r.all;
  CHECK(t.arrived == t.completed + t.rejected_queue_full + t.rejected_too_long + t.failed);
  CHECK(r.drained);
  const PoolTally& pt = r.tally->pools[0];
  CHECK(pt.busy_s + pt.cold_s + pt.headroom_s + pt.waste_s == doctest::Approx(pt.replica_s).epsilon(1e-6));
}

// The same scenario as shipped (decode runs merged in closed form) and one step at a time.
struct MergedAndStepped {
  std::unique_ptr<Tally> merged, stepped;
};
inline MergedAndStepped merged_and_stepped(const Scenario& s) {
  SimParams merged = s.params();
  SimParams stepped = merged;
  stepped.max_run_steps = 1;
  stepped.max_events = int64_t(1) << 40;
  HostWorkspace ws;
  MergedAndStepped m;
  m.merged = simulate_once(merged, 0, ws);
  m.stepped = simulate_once(stepped, 0, ws);
  return m;
}

// Erlang C: the mean wait in queue of M/M/c, arrivals at lambda, c servers at mu each.
inline double erlang_c_wq(double lambda, double mu, int c) {
  const double a = lambda / mu, rho = a / c;
  double sum = 0, term = 1;
  for (int k = 0; k < c; ++k) {
    if (k > 0) term *= a / k;
    sum += term;
  }
  const double last = term * a / c / (1 - rho);  // a^c / (c! (1 - rho))
  return last / (sum + last) / (c * mu - lambda);
}

// A directory of this test process's own (mkdtemp: nothing else writes there, so parallel tests
// never share a file), removed with everything in it when the process exits.
inline const std::filesystem::path& temp_dir() {
  struct Dir {
    std::filesystem::path path;
    Dir() {
      std::string t = (std::filesystem::temp_directory_path() / "fleetsim-test-XXXXXX").string();
      if (mkdtemp(t.data()) == nullptr) throw std::runtime_error("mkdtemp failed in " + t);
      path = t;
    }
    ~Dir() {
      std::error_code ec;
      std::filesystem::remove_all(path, ec);
    }
  };
  static const Dir d;
  return d.path;
}

inline std::string temp_path(const std::string& name) { return (temp_dir() / name).string(); }

// `text` written byte for byte to `name` in temp_dir(); returns the path.
inline std::string write_temp(const std::string& name, const std::string& text) {
  const std::string path = temp_path(name);
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

}  // namespace fleetsim::test
