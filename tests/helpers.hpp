// Shared helpers for the tests: scenarios from inline YAML, and one-call simulations.
#pragma once
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "libsim/report.hpp"
#include "libsim/runner.hpp"
#include "libsim/scenario.hpp"

namespace fleetsim::test {

inline Scenario scenario(const std::string& yaml, const std::vector<std::string>& sets = {}) {
  return load_scenario_text(yaml, "<test>", FLEETSIM_SOURCE_DIR, sets);
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

inline std::string write_temp(const std::string& name, const std::string& text) {
  const std::string path = std::string("/tmp/fleetsim_test_") + name;
  std::ofstream(path) << text;
  return path;
}

}  // namespace fleetsim::test
