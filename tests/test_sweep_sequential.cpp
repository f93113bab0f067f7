// Sequential stopping in sweeps: a configuration stops replicating once its SLO verdict is
// settled (every term's 95% interval on one side of its limit), never before kSequentialMin
// replications; the answer a sweep gives is the one it gives with every replication run.
#include <doctest/doctest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "libsim/sweep/sweep.hpp"

using namespace fleetsim;

namespace {

Json sweep(const ScenarioSource& src) {
  SweepOptions o;
  o.backend = Backend::cpu;
  o.threads = 2;
  return run_sweep(src, parse_sweep(src), o);
}

Json sweep_text(const std::string& yaml) {
  return sweep(ScenarioSource::from_text(yaml, "<sweep>", FLEETSIM_SOURCE_DIR));
}

// One replica cannot keep up with 40 requests/s; eight serve them with room to spare. Its runs
// go to their end (a run stopped once its miss is certain ends its configuration at once:
// test_sweep_settle.cpp), so that replications alone settle the verdict here.
std::string two_fleets(int replications, const std::string& extra) {
  return "name: seq\nduration_s: 300\nwarmup_s: 30\nseed: 3\ndevice: h100-sxm-80gb\nmodel: llama-3.1-8b\n"
         "engine: {perf_profile: none}\nfleet: {replicas: 1, queue_limit: 64}\n"
         "workload:\n  arrival: {process: poisson, rate_per_s: 40}\n"
         "  prompt_tokens: {dist: lognormal, median: 1000, p99: 4000}\n"
         "  output_tokens: {dist: lognormal, median: 120, p99: 600}\n"
         "sweep:\n  parameters:\n    fleet.replicas: [1, 8]\n  replications: " +
         std::to_string(replications) + "\n  stop_certain_misses: false\n  slo:\n" + extra;
}

const std::string kSlo = "    latency_s.ttft.p99: 2.0\n    requests.rejection_fraction: 0.01\n";

}  // namespace

TEST_CASE("the 95% interval's t is Student's t(R - 1, 0.975) to ten digits, not a rounded table") {
  // R's qt(0.975, df); the table of three decimals it replaces was 3.182 at 3 (a bound of 1.00044
  // met where the exact t misses it) and 0.1% low past 30
  for (const auto& [dof, t] : std::vector<std::pair<uint32_t, double>>{{1, 12.7062047362},
                                                                       {2, 4.3026527297},
                                                                       {3, 3.1824463053},
                                                                       {4, 2.7764451052},
                                                                       {10, 2.2281388520},
                                                                       {30, 2.0422724563},
                                                                       {31, 2.0395134464},
                                                                       {100, 1.9839715185},
                                                                       {1000, 1.9623390808}}) {
    CAPTURE(dof);
    CHECK(t_critical_95(dof) == doctest::Approx(t).epsilon(1e-10));
  }
  CHECK(t_critical_95(0) == 0.0);
}

TEST_CASE("a verdict settled either way stops at the minimum, and its row is that of the first replications") {
  const Json d = sweep_text(two_fleets(8, kSlo));
  REQUIRE(d["rows"].size() == 2);
  const Json& one = d["rows"][0];
  const Json& eight = d["rows"][1];
  CHECK(one["feasible"] == false);
  CHECK(eight["feasible"] == true);
  CHECK(one["replications"] == kSequentialMin);
  CHECK(eight["replications"] == kSequentialMin);
  CHECK(d["summary"]["replications_run"] == 2 * kSequentialMin);
  CHECK(d["summary"]["replications_full"] == 16);
  // replication r is keyed by r alone: the first three of eight are the three of a 3-replication sweep
  const Json three = sweep_text(two_fleets(3, kSlo));
  CHECK(three["rows"][0]["metrics"] == one["metrics"]);
  CHECK(three["rows"][1]["metrics"] == eight["metrics"]);
  CHECK(three["rows"][1]["ci95"] == eight["ci95"]);
}

TEST_CASE("sequential: false runs every replication, an interval across the limit keeps replicating") {
  const Json all = sweep_text(two_fleets(8, kSlo) + "  sequential: false\n");
  CHECK(all["rows"][0]["replications"] == 8);
  CHECK(all["rows"][1]["replications"] == 8);
  CHECK(all["sweep"]["sequential"] == false);
  CHECK(format_sweep_table(all).find("replications run") == std::string::npos);
  // a limit at the eight-replica fleet's own mean p99 TTFT over its first three replications: the
  // interval there straddles it, so three are not enough
  const Json three = sweep_text(two_fleets(3, kSlo));
  const double mean = three["rows"][1]["metrics"]["latency_s"]["ttft"]["p99"];
  REQUIRE(three["rows"][1]["ci95"]["latency_s.ttft.p99"].get<double>() > 0.0);
  std::ostringstream limit;
  limit.precision(17);
  limit << "    latency_s.ttft.p99: " << mean << "\n";
  const Json edge = sweep_text(two_fleets(8, limit.str()));
  CHECK(edge["rows"][1]["replications"].get<uint32_t>() > kSequentialMin);
  CHECK(format_sweep_table(edge).find("replications run: a configuration stops once its replications so far decide "
                                      "its verdict at 95% (sweep.sequential: false runs them all)") !=
        std::string::npos);
}

TEST_CASE("a sweep without an SLO, or of fewer replications than the minimum, runs them all") {
  const std::string no_slo = two_fleets(5, "");
  const Json d = sweep_text(no_slo.substr(0, no_slo.rfind("  slo:\n")));
  CHECK(d["rows"][0]["replications"] == 5);
  const Json two = sweep_text(two_fleets(2, kSlo));
  CHECK(two["rows"][0]["replications"] == 2);
}

// The shipped sweeps: every verdict and the cheapest feasible configuration as with every
// replication run (sweep-fleet on a 60-configuration sample of its 2,000: a minute of CPU otherwise).
TEST_CASE("on the shipped sweeps, sequential stopping gives the full sweep's verdicts and cheapest") {
  for (const char* path : {"scenarios/sweep-70b.yaml", "scenarios/sweep-fleet.yaml"}) {
    CAPTURE(path);
    std::vector<std::string> sets;
    if (std::string(path).find("fleet") != std::string::npos) sets.push_back("sweep.sample=60");
    const ScenarioSource base =
        ScenarioSource::from_file(std::string(FLEETSIM_SOURCE_DIR) + "/" + path).with_overrides(parse_sets(sets));
    std::vector<std::string> off = sets;
    off.push_back("sweep.sequential=false");
    const Json seq = sweep(base);
    const Json full =
        sweep(ScenarioSource::from_file(std::string(FLEETSIM_SOURCE_DIR) + "/" + path).with_overrides(parse_sets(off)));
    REQUIRE(seq["rows"].size() == full["rows"].size());
    for (size_t i = 0; i < seq["rows"].size(); ++i) {
      CAPTURE(i);
      CHECK(seq["rows"][i]["feasible"] == full["rows"][i]["feasible"]);
    }
    CHECK(seq["summary"]["cheapest"]["index"] == full["summary"]["cheapest"]["index"]);
    CHECK(seq["summary"]["feasible"] == full["summary"]["feasible"]);
    // and it saved work
    CHECK(seq["summary"]["replications_run"].get<uint64_t>() < full["summary"]["replications_run"].get<uint64_t>());
    // without sequential stopping every configuration runs all its replications, unless one stopped
    // on a certain miss, which decides it whatever follows
    const auto reps = full["sweep"]["replications"].get<uint64_t>();
    for (const Json& row : full["rows"])
      if (row.contains("replications") && row["replications"] != 0 && !row.contains("stopped_at_s"))
        CHECK(row["replications"] == reps);
  }
}

TEST_CASE("a replication stopped on a certain miss ends its configuration, sequential stopping or not") {
  // two replications (too few for sequential stopping) and an SLO the first replication misses for
  // certain: the second cannot change the verdict, with sweep.sequential on or off
  for (const char* seq : {"true", "false"}) {
    CAPTURE(seq);
    const Json d = sweep_text(
        std::string("name: sw\nduration_s: 900\nwarmup_s: 100\nseed: 3\ndevice: h100-sxm-80gb\nmodel: llama-3.1-8b\n"
                    "fleet: {replicas: 1}\nworkload:\n  arrival: {process: poisson, rate_per_s: 4}\n"
                    "  prompt_tokens: 800\n  output_tokens: 120\n"
                    "sweep:\n  parameters:\n    fleet.replicas: [1]\n  replications: 2\n  sequential: ") +
        seq + "\n  slo: {latency_s.ttft.p99: 0.001}\n");
    REQUIRE(d["rows"].size() == 1);
    CHECK(d["rows"][0]["feasible"] == false);
    CHECK(d["rows"][0]["replications"] == 1);
    CHECK(d["summary"]["replications_run"] == 1);
  }
}
