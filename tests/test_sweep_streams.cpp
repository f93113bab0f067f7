// Common request streams: a sweep draws each workload's requests once per replication and shares
// them between configurations; every row is the one it is with each simulation drawing its own.
#include <doctest/doctest.h>

#include <string>

#include "libsim/core/engine.hpp"
#include "libsim/input/scenario.hpp"
#include "libsim/sweep/streams.hpp"
#include "libsim/sweep/sweep.hpp"

using namespace fleetsim;

namespace {

Json sweep(const std::string& yaml, bool common) {
  const ScenarioSource src = ScenarioSource::from_text(yaml, "<sweep>", FLEETSIM_SOURCE_DIR);
  SweepOptions o;
  o.backend = Backend::cpu;
  o.threads = 2;
  o.common_streams = common;
  return run_sweep(src, parse_sweep(src), o);
}

// Four classes, one of each process the core would draw, and a closed loop (not shared), on a
// grid that changes the fleet but not the workload.
const char* kGrid = R"(name: streams
duration_s: 200
warmup_s: 20
seed: 11
pools:
  a: {device: h100-sxm-80gb, model: llama-3.1-8b, engine: {perf_profile: none}, fleet: {replicas: 1}}
classes:
  chat: {pool: a, arrival: {process: poisson, rate_per_s: 6},
         prompt_tokens: {dist: lognormal, median: 800, p99: 4000}, output_tokens: {dist: geometric, mean: 120}}
  bursty: {pool: a, arrival: {process: gamma, rate_per_s: 2, cv: 3},
           prompt_tokens: {dist: uniform, min: 100, max: 2000}, output_tokens: 64}
  daily: {pool: a, arrival: {process: diurnal, rate_per_s: 1, peak_to_mean: 1.5, period_s: 120},
          prompt_tokens: {dist: empirical, values: [100, 400, 1600], weights: [1, 2, 1]}, output_tokens: {dist: exponential, mean: 80}}
  cron: {pool: a, arrival: {process: constant, rate_per_s: 0.5, start_s: 30, stop_s: 150},
         prompt_tokens: 3000, output_tokens: 20}
  bench: {pool: a, arrival: {process: concurrency, clients: 3, think_time_s: 2}, prompt_tokens: 200, output_tokens: 50}
sweep:
  parameters:
    pools.a.fleet.replicas: [1, 2, 3]
    pools.a.engine.max_num_seqs: [16, 256]
  replications: 3
  sequential: false
)";

}  // namespace

TEST_CASE("common request streams: every row equals the one each simulation drawing its own requests gives") {
  const Json shared = sweep(kGrid, true), own = sweep(kGrid, false);
  REQUIRE(shared["rows"].size() == 6);
  CHECK(shared["rows"].dump() == own["rows"].dump());
  CHECK(shared["summary"].dump() == own["summary"].dump());
}

TEST_CASE("common request streams: one stream per open-loop class and replication, whatever the fleet") {
  const Scenario s = load_scenario_text(kGrid, "<sweep>", FLEETSIM_SOURCE_DIR);
  const Scenario s2 = load_scenario_text(kGrid, "<sweep>", FLEETSIM_SOURCE_DIR, {"pools.a.fleet.replicas=3"});
  const SimParams p = s.params(), p2 = s2.params();
  RequestStreams streams;
  for (uint32_t r = 0; r < 2; ++r) {
    const SimParams q = streams.with_streams(p, r), q2 = streams.with_streams(p2, r);
    for (int c = 0; c < 4; ++c) {
      CAPTURE(c);
      CHECK(q.classes[c].arrivals.kind == ArrivalKind::trace);
      CHECK(q.classes[c].arrivals.trace_t_s == q2.classes[c].arrivals.trace_t_s);  // the same arrays
      CHECK(q.classes[c].arrivals.trace_n > 0);
    }
    CHECK(q.classes[4].arrivals.kind == ArrivalKind::concurrency);
  }
  CHECK(streams.streams() == 8);
  // the constant class: evenly spaced from its start, none at or after its stop
  const SimParams q = streams.with_streams(p, 0);
  const ArrivalParams& cron = q.classes[3].arrivals;
  CHECK(cron.trace_n == 60);   // 30 s to 150 s at 0.5/s
  CHECK(cron.start_s == 0.0);  // the times are kept as drawn, not from the start
  CHECK(cron.trace_t_s[0] == 30.0);
  CHECK(cron.trace_t_s[59] == doctest::Approx(148.0));
}

TEST_CASE("common request streams: a start that is not a round number changes no arrival time") {
  // (t - 12.345) + 12.345 is not t for about one time in ten: the streams keep t itself
  std::string grid = kGrid;
  const std::string from = "chat: {pool: a, arrival: {process: poisson, rate_per_s: 6}";
  grid.replace(grid.find(from), from.size(),
               "chat: {pool: a, arrival: {process: poisson, rate_per_s: 6, start_s: 12.345}");
  const Json shared = sweep(grid, true), own = sweep(grid, false);
  CHECK(shared["rows"].dump() == own["rows"].dump());
}
