// Simulated requests per second of wall time for a scenario (default: the built-in one, one
// simulated hour). Built with the tests, never run as one. Usage: bench_run [SCENARIO] [REPEATS]
#include <fmt/format.h>

#include <chrono>
#include <cstdlib>

#include "libsim/runner.hpp"
#include "libsim/scenario.hpp"

int main(int argc, char** argv) {
  using namespace fleetsim;
  const Scenario s = argc > 1 && std::string(argv[1]) != "-" ? load_scenario_file(argv[1]) : load_default_scenario();
  const int repeats = argc > 2 ? std::atoi(argv[2]) : 20;
  const SimParams p = s.params();
  HostWorkspace ws;
  double requests = 0, events = 0;
  simulate_once(p, 999, ws);  // warm the workspace and caches
  const auto t0 = std::chrono::steady_clock::now();
  for (int r = 0; r < repeats; ++r) {
    const auto t = simulate_once(p, uint32_t(r), ws);
    check_status(*t, s.source);
    // every request the run generated, warm-up included
    for (int32_t c = 0; c < t->n_classes; ++c)
      requests += double(t->classes[c].arrived) * s.duration_s / (s.duration_s - s.warmup_s);
    events += double(t->events);
  }
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  fmt::print("scenario            {} ({} s simulated, {} replications)\n", s.name, s.duration_s, repeats);
  fmt::print("requests simulated  {:.0f}\n", requests);
  fmt::print("events              {:.0f} ({:.2f} per request)\n", events, events / requests);
  fmt::print("wall time           {:.3f} s\n", wall);
  fmt::print("requests per second {:.3g}  ({:.0f} ns per request)\n", requests / wall, wall / requests * 1e9);
  fmt::print("simulated/wall time {:.3g}x\n", s.duration_s * repeats / wall);
  return 0;
}
