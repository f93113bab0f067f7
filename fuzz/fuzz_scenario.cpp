// libFuzzer harness: scenario YAML text -> load_scenario_text (and the text as a --set value), and
// for a scenario that loads, one
// short simulation and its report in every output format. An InputError is the expected answer
// to a bad scenario; anything else (a crash, a sanitizer report, another exception, a hang) is a
// finding.
//
// Each execution is kept short: the simulated duration is capped (arrival windows scaled with
// it), and so are the event budget and the simulation state.
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "libsim/backend/runner.hpp"
#include "libsim/base/error.hpp"
#include "libsim/input/scenario.hpp"
#include "libsim/report/report.hpp"

#ifndef FLEETSIM_SOURCE_DIR
#error "FLEETSIM_SOURCE_DIR must name the source tree (relative trace paths resolve in its scenarios/)"
#endif

namespace {

constexpr double kMaxDurationS = 60.0;           // simulated seconds of arrivals
constexpr int64_t kMaxEvents = 20000;            // events per simulation
constexpr uint64_t kMaxWorkspace = 64ull << 20;  // bytes of simulation state

void cap(fleetsim::Scenario& s) {
  if (s.duration_s <= kMaxDurationS) return;
  const double f = kMaxDurationS / s.duration_s;
  s.duration_s = kMaxDurationS;
  s.warmup_s *= f;
  for (auto& c : s.classes) {
    c.start_s *= f;
    c.stop_s = std::min(c.stop_s * f, s.duration_s);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace fleetsim;
  const std::string text(reinterpret_cast<const char*>(data), size);
  // the same text as a --set value: an override's tree is walked (aliases, repeated keys) on its own
  try {
    (void)load_default_scenario({"catalog=" + text});
  } catch (const InputError& e) {
    (void)e.one_line();
  }
  Scenario s;
  try {
    s = load_scenario_text(text, "fuzz.yaml", FLEETSIM_SOURCE_DIR "/scenarios");
  } catch (const InputError& e) {
    (void)e.one_line();  // the message and caret are part of the contract
    (void)e.caret();
    return 0;
  }
  cap(s);
  SimParams p = s.params();
  p.max_events = std::min<int64_t>(p.max_events, kMaxEvents);
  if (workspace_layout(p).total > kMaxWorkspace) return 0;
  HostWorkspace ws;
  const auto t = simulate_once(p, 0, ws);
  try {
    check_status(*t, s.source);
  } catch (const InputError&) {
    return 0;  // the event budget ran out (expected with the cap), or requests never finished
  }
  const Json r = run_report(s, *t);
  (void)r.dump();
  (void)format_run_table(r);
  (void)json_to_csv(r);
  return 0;
}
