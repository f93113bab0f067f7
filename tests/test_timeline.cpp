// The timeline (timeline.cpp) runs the simulation once and measures each interval on a copy of its
// state from the interval's start, stopping once the interval's window is closed. Every row must
// equal the row of a whole run measured over that interval, bit for bit, whatever the scenario
// uses: autoscaling, nodes, a host CPU stage, static batching, failures and repairs, MPS,
// closed-loop users, traces.
#include <doctest/doctest.h>

#include <memory>
#include <string>
#include <vector>

#include "libsim/backend/runner.hpp"
#include "libsim/input/scenario.hpp"
#include "libsim/report/timeline.hpp"

using namespace fleetsim;

namespace {

Json rows_by_whole_runs(const Scenario& s, int n, uint32_t replication = 0) {
  const double len = (s.duration_s - s.warmup_s) / n;
  HostWorkspace ws;
  Json out = Json::array();
  for (int i = 0; i < n; ++i) {
    SimParams p = s.params();
    p.measure_from_s = s.warmup_s + double(i) * len;
    p.measure_to_s = i + 1 == n ? s.duration_s : s.warmup_s + double(i + 1) * len;
    const auto t = simulate_once(p, replication, ws);
    check_status(*t, s.source);
    out.push_back(timeline_row(s, *t, p.measure_from_s, p.measure_to_s));
  }
  return out;
}

void check_same_rows(const std::string& file, const std::vector<std::string>& sets, int n) {
  CAPTURE(file);
  const Scenario s = load_scenario_file(std::string(FLEETSIM_SOURCE_DIR) + "/scenarios/" + file, sets);
  const Json want = rows_by_whole_runs(s, n);
  for (int threads : {1, 3}) {
    CAPTURE(threads);
    const Json got = run_timeline(s, n, threads);
    REQUIRE(got.size() == want.size());
    for (size_t i = 0; i < want.size(); ++i) {
      CAPTURE(i);
      CHECK(got[i].dump() == want[i].dump());
    }
  }
}

}  // namespace

TEST_CASE("timeline rows equal whole runs measured over each interval: autoscaling, nodes, host CPU") {
  check_same_rows("node-autoscaling.yaml", {"duration_s=10800", "workload.arrival.period_s=10800"}, 9);
  check_same_rows("scale-to-zero.yaml", {}, 12);
  check_same_rows("autoscale-host-cpu.yaml", {}, 7);
  check_same_rows("cpu-bound-tokenizer.yaml", {}, 5);
}

TEST_CASE("timeline rows equal whole runs: failures, repairs, fallbacks, MPS, static batches") {
  check_same_rows("owned-repair.yaml", {}, 6);
  check_same_rows("spot-vs-on-demand.yaml", {}, 6);
  check_same_rows("oom-restart-loop.yaml", {}, 6);
  check_same_rows("cpu-fallback.yaml", {}, 5);
  check_same_rows("mps-shared-fate.yaml", {}, 4);
  check_same_rows("static-batching.yaml", {}, 6);
}

TEST_CASE("timeline rows equal whole runs: closed-loop users, a trace, several classes") {
  check_same_rows("closed-loop-benchmark.yaml", {}, 6);
  check_same_rows("azure-conv-replay.yaml", {}, 6);
  check_same_rows("interactive-and-batch.yaml", {}, 6);
  check_same_rows("chat-default.yaml", {}, 10);
}

TEST_CASE("a simulation paused and resumed gives the run it would have given in one go") {
  const Scenario s = load_scenario_file(std::string(FLEETSIM_SOURCE_DIR) + "/scenarios/autoscale-host-cpu.yaml");
  const SimParams p = s.params();
  HostWorkspace ws;
  const auto whole = simulate_once(p, 0, ws);
  auto paused = std::make_unique<Tally>();
  std::vector<uint8_t> buf(workspace_layout(p).total);
  Sim sim = sim_begin(p, 0, buf.data(), *paused);
  for (double t : {0.0, 1.0, 37.5, 600.0, 601.0, 1799.25})
    CHECK(sim_advance<true>(sim, t) >= t);  // the next event is not before the pause
  CHECK(sim_advance<true>(sim) == kInf);
  sim_end(sim, p.duration_s);
  CHECK(paused->events == whole->events);
  CHECK(run_report(s, *paused).dump() == run_report(s, *whole).dump());
}

TEST_CASE("the run a timeline carries is the run itself, for any replication") {
  for (const char* file : {"scale-to-zero.yaml", "autoscale-host-cpu.yaml", "static-batching.yaml"}) {
    CAPTURE(file);
    const Scenario s = load_scenario_file(std::string(FLEETSIM_SOURCE_DIR) + "/scenarios/" + file);
    HostWorkspace ws;
    for (uint32_t r : {0u, 2u}) {
      CAPTURE(r);
      const auto alone = simulate_once(s.params(), r, ws);
      for (int threads : {1, 2}) {
        auto carried = std::make_unique<Tally>();
        const Json rows = run_timeline(s, 6, threads, r, carried.get());
        CHECK(rows.dump() == rows_by_whole_runs(s, 6, r).dump());
        CHECK(carried->events == alone->events);
        CHECK(carried->pools[0].max_replicas == alone->pools[0].max_replicas);
        CHECK(run_report(s, *carried).dump() == run_report(s, *alone).dump());
      }
    }
  }
}
