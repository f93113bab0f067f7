// Simulated requests per second of wall time for a scenario (default: the built-in one on the
// uncalibrated roofline, one simulated hour), against a plain binary-heap discrete-event model
// of an M/M/c queue timed in the same run: the ratio says what the LLM model costs over the least
// a DES can do per request. Built with the tests, never run as one (no timing is asserted).
// Usage: bench_run [SCENARIO|-] [REPEATS] [KEY=VALUE ...]  (overrides as fleetsim's --set)
#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <queue>
#include <random>
#include <string>
#include <vector>

#include "libsim/backend/runner.hpp"
#include "libsim/base/error.hpp"
#include "libsim/input/scenario.hpp"

namespace {

// M/M/c by the textbook: a binary heap of (time, kind) events, FIFO waiting line. Returns the
// requests it served.
int64_t mmc_requests(double rate, double mean_service_s, int servers, double horizon_s, uint64_t seed,
                     int64_t& events) {
  std::mt19937_64 g(seed);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  auto expo = [&](double mean) { return -mean * std::log(1.0 - u(g)); };
  using Ev = std::pair<double, int>;  // time, 0 arrival / 1 departure
  std::priority_queue<Ev, std::vector<Ev>, std::greater<Ev>> heap;
  std::vector<double> waiting;  // arrival times, a ring would do as well
  size_t head = 0;
  int busy = 0;
  int64_t served = 0;
  double wait_sum = 0.0;
  heap.push({expo(1.0 / rate), 0});
  while (!heap.empty()) {
    const Ev e = heap.top();
    heap.pop();
    ++events;
    if (e.second == 0) {
      if (e.first < horizon_s) heap.push({e.first + expo(1.0 / rate), 0});
      if (busy < servers) {
        ++busy;
        heap.push({e.first + expo(mean_service_s), 1});
      } else {
        waiting.push_back(e.first);
      }
    } else {
      ++served;
      if (head < waiting.size()) {
        wait_sum += e.first - waiting[head++];
        heap.push({e.first + expo(mean_service_s), 1});
      } else {
        --busy;
      }
    }
  }
  if (wait_sum < 0.0) std::abort();  // keeps the queue's work observable
  return served;
}

}  // namespace

int bench(int argc, char** argv) {
  using namespace fleetsim;
  std::vector<std::string> sets;
  for (int i = 3; i < argc; ++i) sets.push_back(argv[i]);
  const bool builtin = argc <= 1 || std::string(argv[1]) == "-";
  if (builtin && argc <= 3) sets.push_back("engine.perf_profile=none");
  const Scenario s = builtin ? load_default_scenario(sets) : load_scenario_file(argv[1], sets);
  const int repeats = argc > 2 ? std::atoi(argv[2]) : 20;
  if (repeats < 1) {
    fmt::print(stderr, "REPEATS: '{}' is not a positive integer\n", argv[2]);
    return 2;
  }
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

  // the baseline: the same number of requests through M/M/c at the pool's size, 70% busy
  const int servers = p.pools[0].replicas > 0 ? p.pools[0].replicas : 1;
  const double rate = requests / (s.duration_s * repeats);
  int64_t base_requests = 0, base_events = 0;
  const auto b0 = std::chrono::steady_clock::now();
  for (int r = 0; r < repeats; ++r)
    base_requests += mmc_requests(rate, 0.7 * servers / rate, servers, s.duration_s, uint64_t(r) + 1, base_events);
  const double base_wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - b0).count();

  fmt::print("scenario            {} ({} s simulated, {} replications)\n", s.name, s.duration_s, repeats);
  fmt::print("requests simulated  {:.0f}\n", requests);
  fmt::print("events              {:.0f} ({:.2f} per request)\n", events, events / requests);
  fmt::print("wall time           {:.3f} s\n", wall);
  fmt::print("requests per second {:.3g}  ({:.0f} ns per request)\n", requests / wall, wall / requests * 1e9);
  fmt::print("simulated/wall time {:.3g}x\n", s.duration_s * repeats / wall);
  fmt::print("baseline M/M/{}      {:.3g} requests/s, {:.3g} events/s (binary heap, {} requests)\n", servers,
             double(base_requests) / base_wall, double(base_events) / base_wall, base_requests);
  fmt::print("ratio to baseline   {:.3f}x requests/s, {:.3f}x events/s\n",
             (requests / wall) / (double(base_requests) / base_wall),
             (events / wall) / (double(base_events) / base_wall));
  return 0;
}

int main(int argc, char** argv) {
  if (argc > 1 && (std::string(argv[1]) == "-h" || std::string(argv[1]) == "--help")) {
    fmt::print("usage: bench_run [SCENARIO|-] [REPEATS] [KEY=VALUE ...]\n");
    return 0;
  }
  try {
    return bench(argc, argv);
  } catch (const fleetsim::InputError& e) {
    fmt::print(stderr, "{}\n", e.one_line());
    return 2;
  }
}
