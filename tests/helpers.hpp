// Shared helpers for the tests: scenarios from inline YAML, and one-call simulations.
#pragma once
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include "libsim/backend/runner.hpp"
#include "libsim/input/scenario.hpp"
#include "libsim/report/report.hpp"

namespace fleetsim::test {

// A built-in catalog entry by name (a test's typo throws).
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

inline Scenario scenario(const std::string& yaml, const std::vector<std::string>& sets = {}) {
  return load_scenario_text(yaml, "<test>", FLEETSIM_SOURCE_DIR, sets);
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
