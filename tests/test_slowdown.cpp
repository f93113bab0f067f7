// Step-time slowdowns: a server fallen back to the host CPU after an image update, and thermal
// throttling. Step times by hand under each factor, where a run is cut when the factor changes,
// the temperature proxy's closed form, monotonicity in load, the off switches changing nothing,
// and every figure reconciling with the time and the ledger.
#include <doctest/doctest.h>

#include <cmath>
#include <memory>
#include <string>

#include "helpers.hpp"
#include "libsim/core/accounting.hpp"
#include "libsim/core/engine.hpp"

using namespace fleetsim;

namespace {

// One replica whose every step takes `step` seconds (linear model, step_base_s only): a request
// alone takes a prefill step, which emits its first token, then output - 1 decode steps.
std::string one_replica(double step, const std::string& extra_fleet = "", const std::string& engine = "") {
  return "device: h100-sxm-80gb\nmodel: llama-3.1-8b\n"
         "engine: {perf_model: linear, step_base_s: " +
         std::to_string(step) + engine +
         "}\n"
         "fleet: {replicas: 1, queue_limit: 100000" +
         extra_fleet + "}\n";
}

// A single request of `output` tokens at t = 0.
std::string one_request(double duration, int output, const std::string& fleet) {
  return "duration_s: " + std::to_string(duration) + "\nwarmup_s: 0\n" + fleet +
         "workload:\n  arrival: {process: burst, requests: 1}\n  prompt_tokens: 64\n  output_tokens: " +
         std::to_string(output) + "\n";
}

Scenario shipped(const std::string& name, const std::vector<std::string>& sets = {}) {
  return load_scenario_file(std::string(FLEETSIM_SOURCE_DIR) + "/scenarios/" + name + ".yaml", sets);
}

double num(const Json& j) { return j.get<double>(); }

// Time and ledger identities of one pool's tally and the report's ledger block.
void check_reconciles(const test::Result& r, int pool, const std::string& what) {
  INFO(what);
  const PoolTally& p = r.tally->pools[pool];
  CHECK(p.busy_s + p.cold_s + p.headroom_s + p.waste_s == doctest::Approx(p.replica_s).epsilon(1e-9));
  CHECK(p.fallback_s <= p.replica_s - p.cold_s + 1e-6);
  CHECK(p.cpu_busy_s <= p.fallback_s + 1e-6);
  CHECK(p.throttled_s <= p.busy_s * (1 + 1e-9) + 1e-9);
  CHECK(p.throttled_steps <= p.steps * (1 + 1e-12));
  double class_busy = 0;
  for (int32_t c = 0; c < r.tally->n_classes; ++c) class_busy += r.tally->classes[c].busy_s;
  if (r.tally->n_pools == 1) CHECK(class_busy == doctest::Approx(p.busy_s).epsilon(1e-9));
  const Json& led = r.report["ledger"];
  double hours = 0, usd = 0;
  for (auto it = led["buckets"].begin(); it != led["buckets"].end(); ++it) {
    hours += num(it.value()["device_hours"]);
    usd += num(it.value()["usd"]);
  }
  CHECK(hours == doctest::Approx(num(led["billed_device_hours"])).epsilon(1e-12));
  CHECK(usd == doctest::Approx(num(led["effective_usd"])).epsilon(1e-12));
}

}  // namespace

TEST_CASE("a fallen-back server's steps take `slowdown` times as long: e2e by hand, device idle") {
  const double step = 0.01;
  const int output = 40;
  // one user after another, always one request in flight: each alone takes output steps
  const std::string base =
      "duration_s: 600\nwarmup_s: 50\n" + one_replica(step, ", faults: {cpu_fallback: {share: 1, slowdown: 50}}") +
      "workload:\n  arrival: {process: concurrency, clients: 1}\n  prompt_tokens: 64\n  output_tokens: " +
      std::to_string(output) + "\n";
  const auto r = test::run(test::scenario(base));
  CHECK(r.drained);
  const ClassTally& t = *r.all;
  CHECK(t.e2e.n > 0);
  CHECK(t.e2e.min == doctest::Approx(output * step * 50).epsilon(1e-9));
  CHECK(t.e2e.max == doctest::Approx(output * step * 50).epsilon(1e-9));
  CHECK(t.ttft.max == doctest::Approx(step * 50).epsilon(1e-9));
  // the replica is up and stepping the whole window, on the CPU: its device did nothing
  const PoolTally& p = r.tally->pools[0];
  CHECK(p.busy_s == 0.0);
  CHECK(p.flops == 0.0);
  CHECK(p.fallback_s == doctest::Approx(550.0).epsilon(1e-12));
  CHECK(p.cpu_busy_s == doctest::Approx(550.0).epsilon(1e-9));
  CHECK(p.waste_s == doctest::Approx(550.0).epsilon(1e-9));
  CHECK(num(r.report["utilization"]["busy_fraction"]) == 0.0);
  CHECK(num(r.report["fleet"]["cpu_fallback"]["share_of_replica_hours"]) == doctest::Approx(1.0));
  const Json& led = r.report["ledger"];
  CHECK(num(led["buckets"]["idle_waste"]["device_hours"]) == doctest::Approx(num(led["billed_device_hours"])));
  CHECK(num(led["pools"]["default"]["cpu_fallback"]["device_hours"]) == doctest::Approx(550.0 / 3600));
  check_reconciles(r, 0, "all fallen back");
}

TEST_CASE("the image update cuts a decode run at the first step boundary after it") {
  const double step = 0.01;
  // 5.005 s falls inside step 501 (5.00 - 5.01): 501 steps at full speed, the other 499 at 50x
  const auto r = test::run(test::scenario(
      one_request(600, 1000, one_replica(step, ", faults: {cpu_fallback: {share: 1, slowdown: 50, at_s: 5.005}}"))));
  CHECK(r.drained);
  CHECK(r.all->e2e.max == doctest::Approx(501 * step + 499 * step * 50).epsilon(1e-9));
  const PoolTally& p = r.tally->pools[0];
  CHECK(p.busy_s == doctest::Approx(501 * step).epsilon(1e-9));
  CHECK(p.cpu_busy_s == doctest::Approx(499 * step * 50).epsilon(1e-9));
  CHECK(p.fallback_s == doctest::Approx(600 - 5.005).epsilon(1e-12));
  CHECK(p.steps == doctest::Approx(1000));
  check_reconciles(r, 0, "update mid-run");
}

TEST_CASE("static batching: a fallen-back server's batch takes `slowdown` times as long") {
  const double step = 0.01;
  const int output = 30;
  const std::string fleet = one_replica(step, ", faults: {cpu_fallback: {share: 1, slowdown: 20}}",
                                        ", batching: static, max_batch: 1, batch_window_s: 0");
  const auto r = test::run(test::scenario(one_request(100, output, fleet)));
  CHECK(r.drained);
  CHECK(r.all->e2e.max == doctest::Approx(output * step * 20).epsilon(1e-9));
  CHECK(r.all->ttft.max == doctest::Approx(step * 20).epsilon(1e-9));
  CHECK(r.tally->pools[0].busy_s == 0.0);
  CHECK(r.tally->pools[0].cpu_busy_s == doctest::Approx(output * step * 20).epsilon(1e-9));
}

TEST_CASE("a share of replica slots falls back, evenly spread: a quarter of eight is slots 3 and 7") {
  // round robin: each replica gets every eighth request, so the fallen-back ones are known
  const Scenario s = test::scenario(
      "duration_s: 400\nwarmup_s: 0\n" + std::string("device: h100-sxm-80gb\nmodel: llama-3.1-8b\n") +
      "engine: {perf_model: linear, step_base_s: 0.01}\n"
      "fleet: {replicas: 8, router: round_robin, faults: {cpu_fallback: {share: 0.25, slowdown: 10, at_s: 100}}}\n"
      "workload:\n  arrival: {process: constant, rate_per_s: 2}\n  prompt_tokens: 16\n  output_tokens: 5\n");
  const auto r = test::run(s);
  CHECK(r.drained);
  const PoolTally& p = r.tally->pools[0];
  CHECK(p.fallback_s == doctest::Approx(2 * 300.0).epsilon(1e-12));  // two replicas from t = 100
  // requests alone: 5 steps, or 50 on a fallen-back replica
  CHECK(r.all->e2e.min == doctest::Approx(0.05).epsilon(1e-9));
  CHECK(r.all->e2e.max == doctest::Approx(0.5).epsilon(1e-9));
  check_reconciles(r, 0, "a quarter");
}

TEST_CASE("a share written in decimal falls back in floor(n share) slots: 0.29 of 100 is 29") {
  const Scenario s = test::scenario(
      "duration_s: 36\nwarmup_s: 0\ndevice: h100-sxm-80gb\nmodel: llama-3.2-1b\n"
      "engine: {perf_model: linear, step_base_s: 0.01}\n"
      "fleet: {replicas: 100, faults: {cpu_fallback: {share: 0.29}}}\n"
      "workload:\n  arrival: {process: constant, rate_per_s: 1}\n  prompt_tokens: 16\n  output_tokens: 2\n");
  const auto r = test::run(s);
  CHECK(r.tally->pools[0].fallback_s == doctest::Approx(29 * 36.0).epsilon(1e-12));
}

TEST_CASE("an owned pool's failed device is replaced by a cool one: a spare has not been busy") {
  const Scenario sc = test::scenario(
      "duration_s: 3600\nwarmup_s: 0\ndevice: h100-sxm-80gb\nmodel: llama-3.1-8b\n"
      "fleet:\n  replicas: 1\n  failures: {mtbf_hours: 1000}\n"
      "  thermal: {time_constant_s: 600, throttle_above: 0.5, clock_drop: 0.5}\n"
      "  pricing: {owned: {node_capex_usd: 250000, refresh_years: 4, repair: {days: 1, spares: 4},\n"
      "    power: {idle_kw_per_device: 0.1, usd_per_kwh: 0.12}}}\n"
      "workload:\n  arrival: {process: poisson, rate_per_s: 1}\n  prompt_tokens: 100\n  output_tokens: 10\n");
  test::Started f(sc);
  Sim& s = f.s;
  s.rep[0].heat = 0.9;  // a device that has run hot
  s.rep[0].heat_t = 100.0;
  replica_fail(s, 0, 100.0, true, kNone);
  CHECK(s.rep[0].heat == 0.0);
}

TEST_CASE("the temperature proxy: h <- b + (h - b) exp(-dt / tau), by hand") {
  auto p = std::make_unique<SimParams>();
  p->n_pools = 1;
  p->pools[0].thermal_tau_s = 100.0;
  Sim s{};
  s.p = p.get();
  Replica R{};
  R.pool = 0;
  R.busy = 1;
  heat_update(s, R, 50.0);  // busy 50 s from cold
  CHECK(R.heat == doctest::Approx(1.0 - std::exp(-0.5)).epsilon(1e-14));
  R.busy = 0;
  heat_update(s, R, 80.0);  // then idle 30 s
  const double hand = (1.0 - std::exp(-0.5)) * std::exp(-0.3);
  CHECK(R.heat == doctest::Approx(hand).epsilon(1e-14));
  // two updates compose to one: the closed form does not depend on where runs end
  Replica A{}, B{};
  A.busy = B.busy = 1;
  A.heat = B.heat = 0.3;
  heat_update(s, A, 20.0);
  heat_update(s, A, 70.0);
  heat_update(s, B, 70.0);
  CHECK(A.heat == doctest::Approx(B.heat).epsilon(1e-14));
  CHECK(B.heat == doctest::Approx(1.0 - 0.7 * std::exp(-0.7)).epsilon(1e-14));
  // a CPU run leaves the device idle: it cools
  R.busy = 1;
  R.run_cpu = 1;
  heat_update(s, R, 180.0);
  CHECK(R.heat == doctest::Approx(hand * std::exp(-1.0)).epsilon(1e-14));
}

TEST_CASE("thermal throttling starts at the first step boundary after the proxy crosses its threshold") {
  const double step = 0.01;
  const int output = 2000;
  // busy from t = 0: h(t) = 1 - exp(-t / 10) passes 0.5 at 10 ln 2 = 6.931 s, inside step 694
  const auto r = test::run(test::scenario(one_request(
      600, output, one_replica(step, ", thermal: {time_constant_s: 10, throttle_above: 0.5, clock_drop: 0.2}"))));
  CHECK(r.drained);
  const int cool = 694, hot = output - cool;
  CHECK(10 * std::log(2.0) > (cool - 1) * step);
  CHECK(10 * std::log(2.0) < cool * step);
  CHECK(r.all->e2e.max == doctest::Approx(cool * step + hot * step / 0.8).epsilon(1e-9));
  const PoolTally& p = r.tally->pools[0];
  CHECK(p.throttled_steps == doctest::Approx(hot).epsilon(1e-12));
  CHECK(p.throttled_s == doctest::Approx(hot * step / 0.8).epsilon(1e-9));
  CHECK(p.busy_s == doctest::Approx(cool * step + hot * step / 0.8).epsilon(1e-9));
  CHECK(num(r.report["fleet"]["thermal"]["throttled_step_share"]) == doctest::Approx(double(hot) / output));
  check_reconciles(r, 0, "one long request");
}

TEST_CASE("more sustained load never throttles less") {
  // evenly spaced requests of 100 steps of 10 ms: the device is busy rate x 1 s of every second
  double prev_throttled = 0, prev_busy = 0;
  for (double rate : {0.3, 0.5, 0.65, 0.75, 0.85, 0.95, 1.1, 1.5}) {
    const Scenario s =
        test::scenario("duration_s: 3000\nwarmup_s: 0\n" +
                       one_replica(0.01, ", thermal: {time_constant_s: 120, throttle_above: 0.7, clock_drop: 0.3}") +
                       "workload:\n  arrival: {process: constant, rate_per_s: " + std::to_string(rate) +
                       "}\n  prompt_tokens: 16\n  output_tokens: 100\n");
    const auto r = test::run(s);
    CHECK(r.drained);
    const PoolTally& p = r.tally->pools[0];
    MESSAGE(rate << " req/s: busy " << p.busy_s / p.replica_s << ", throttled " << p.throttled_s << " s");
    // (once busy all the time, the same trajectory up to rounding)
    CHECK(p.throttled_s >= prev_throttled * (1 - 1e-12));
    CHECK(p.busy_s >= prev_busy * (1 - 1e-12));
    if (rate < 0.7) CHECK(p.throttled_s == 0.0);  // below the threshold the proxy never reaches it
    if (rate > 0.9) CHECK(p.throttled_s > 0.0);
    check_reconciles(r, 0, "rate " + std::to_string(rate));
    prev_throttled = p.throttled_s;
    prev_busy = p.busy_s;
  }
}

TEST_CASE("a fallback share of 0 gives the same report, to the byte, as no knob") {
  for (const char* name : {"chat-default", "static-batching", "time-slicing", "spot-vs-on-demand"}) {
    INFO(name);
    const Scenario a = shipped(name);
    const Scenario b = shipped(name, {"fleet.faults.cpu_fallback.share=0", "fleet.faults.cpu_fallback.at_s=10"});
    Json ja = test::run(a).report, jb = test::run(b).report;
    ja["scenario"].erase("overrides");
    jb["scenario"].erase("overrides");
    CHECK(ja.dump() == jb.dump());
  }
}

TEST_CASE("decode runs cut where a factor changes give what stepping one step at a time gives") {
  const std::string fleets[] = {
      "fleet: {replicas: 3, thermal: {time_constant_s: 300, throttle_above: 0.6, clock_drop: 0.25}}\n",
      "fleet: {replicas: 4, router: round_robin, faults: {cpu_fallback: {share: 0.5, slowdown: 8, at_s: 200}}}\n",
      "fleet: {replicas: 3, router: central_queue, faults: {cpu_fallback: {share: 0.34, slowdown: 5, at_s: 333.3}},\n"
      "        thermal: {time_constant_s: 200, throttle_above: 0.5, clock_drop: 0.4}}\n",
  };
  for (const std::string& fleet : fleets) {
    CAPTURE(fleet);
    const Scenario s =
        test::scenario("duration_s: 900\nwarmup_s: 60\ndevice: h100-sxm-80gb\nmodel: llama-3.1-8b\n" + fleet +
                       "workload:\n  arrival: {process: poisson, rate_per_s: 6}\n"
                       "  prompt_tokens: {dist: lognormal, median: 500, p99: 3000}\n"
                       "  output_tokens: {dist: lognormal, median: 150, p99: 900}\n");
    const auto m = test::merged_and_stepped(s);
    const auto& a = m.merged;
    const auto& b = m.stepped;
    REQUIRE(b->status == 0);
    CHECK(a->classes[0].completed == b->classes[0].completed);
    CHECK(a->classes[0].output_tokens == b->classes[0].output_tokens);
    CHECK(a->classes[0].e2e.sum == doctest::Approx(b->classes[0].e2e.sum).epsilon(1e-9));
    CHECK(a->pools[0].busy_s == doctest::Approx(b->pools[0].busy_s).epsilon(1e-9));
    CHECK(a->pools[0].cpu_busy_s == doctest::Approx(b->pools[0].cpu_busy_s).epsilon(1e-9));
    CHECK(a->pools[0].throttled_s == doctest::Approx(b->pools[0].throttled_s).epsilon(1e-9));
    // steps in a run that straddles warmup_s are counted pro rata by time, not step by step
    CHECK(a->pools[0].throttled_steps == doctest::Approx(b->pools[0].throttled_steps).epsilon(1e-4));
  }
}

TEST_CASE("with restarts, autoscaling and both slowdowns, every figure still reconciles") {
  const Scenario s = test::scenario(
      "duration_s: 7200\nwarmup_s: 300\nseed: 3\ndevice: h100-sxm-80gb\nmodel: llama-3.1-8b\n"
      "fleet:\n  autoscale: {min_replicas: 1, max_replicas: 6, signal: queue_depth, target: 4}\n"
      "  failures: {mtbf_hours: 2}\n"
      "  faults: {cpu_fallback: {share: 0.5, slowdown: 30, at_s: 1800}}\n"
      "  thermal: {time_constant_s: 600, throttle_above: 0.8, clock_drop: 0.3}\n"
      "workload:\n  arrival: {process: diurnal, rate_per_s: 8, peak_to_mean: 2, period_s: 3600}\n"
      "  prompt_tokens: {dist: lognormal, median: 800, p99: 4000}\n  output_tokens: {dist: lognormal, median: 120, "
      "p99: 600}\n");
  const auto r = test::run(s);
  CHECK(r.drained);
  const PoolTally& p = r.tally->pools[0];
  CHECK(p.fallback_s > 0);
  CHECK(p.cpu_busy_s > 0);
  CHECK(p.throttled_s > 0);
  CHECK(r.all->arrived == r.all->completed + r.all->rejected_queue_full + r.all->rejected_too_long + r.all->failed);
  check_reconciles(r, 0, "autoscaled, failing, falling back, throttling");
}

TEST_CASE("cpu-fallback.yaml: a quarter of the replicas fall back, every replica stays up") {
  const auto on = test::run(shipped("cpu-fallback"));
  const auto off = test::run(shipped("cpu-fallback", {"fleet.faults=null"}));
  CHECK(on.drained);
  const PoolTally& p = on.tally->pools[0];
  // two of eight replicas from the update to the end of the window, none lost or restarted
  const double window = on.tally->window_s;
  CHECK(p.fallback_s == doctest::Approx(2 * (3600 - 600.0)).epsilon(1e-12));
  CHECK(p.interruptions + p.crashes == 0.0);
  CHECK(p.replica_s == doctest::Approx(8 * window).epsilon(1e-12));
  CHECK(num(on.report["utilization"]["busy_fraction"]) < num(off.report["utilization"]["busy_fraction"]) - 0.2);
  CHECK(num(on.report["latency_s"]["ttft"]["p99"]) > 100 * num(off.report["latency_s"]["ttft"]["p99"]));
  CHECK(num(on.report["cost"]["per_million_tokens_usd"]) > 1.2 * num(off.report["cost"]["per_million_tokens_usd"]));
  check_reconciles(on, 0, "cpu-fallback.yaml");
}

TEST_CASE("slowdown knobs: located errors for values out of range and unknown keys") {
  const std::string base = one_request(100, 10, one_replica(0.01));
  CHECK(test::error_of(base, {"fleet.faults.cpu_fallback.share=1.5"}).find("share in [0, 1]") != std::string::npos);
  CHECK(test::error_of(base, {"fleet.faults.cpu_fallback.share=0.5", "fleet.faults.cpu_fallback.slowdown=0.5"})
            .find("slowdown in [1, 10000]") != std::string::npos);
  CHECK(test::error_of(base, {"fleet.faults.cpu_fallback.shares=0.5"}).find("unknown key 'shares'") !=
        std::string::npos);
  CHECK(test::error_of(base, {"fleet.thermal.time_constant_s=60"}).find("missing required key 'throttle_above'") !=
        std::string::npos);
  CHECK(test::error_of(base, {"fleet.thermal.time_constant_s=60", "fleet.thermal.throttle_above=0.8",
                              "fleet.thermal.clock_drop=1"})
            .find("clock_drop in [0.001, 0.9]") != std::string::npos);
  // the proxy is one replica's busy time: on a shared device the others' work would heat it too
  const std::vector<std::string> thermal = {
      "fleet.thermal={time_constant_s: 60, throttle_above: 0.8, clock_drop: 0.3}"};
  for (const char* sharing : {"time_slicing=2", "mps=2", "partition=1g.10gb"}) {
    std::vector<std::string> sets = thermal;
    sets.push_back(sharing);
    CHECK(test::error_of(base, sets)
              .find("thermal throttling is modelled for replicas that have their device to "
                    "themselves") != std::string::npos);
  }
  // a MIG profile that takes the whole device has it to itself
  std::vector<std::string> whole = thermal;
  whole.push_back("partition=7g.80gb");
  CHECK(test::error_of(base, whole) == "(no error)");
}

TEST_CASE("a replica fallen back to the CPU holds none of its shared device's memory: no out-of-memory there") {
  // two engines time-sliced on one H100, each at 0.9 of it; one has fallen back to the host, so the
  // device holds one engine (0.9 of it) and cannot run out. Counted on the device, the CPU
  // replica's KV and weights crashed the GPU replica four times in 900 s
  const std::vector<std::string> sets = {
      "fleet.router=round_robin", "fleet.faults={cpu_fallback: {share: 0.5, slowdown: 50, at_s: 0}}", "duration_s=900"};
  const test::Result r = test::run(shipped("time-slicing", sets));
  CHECK(r.report["fleet"]["crashes"].get<double>() == 0);
  CHECK(r.report["fleet"]["cpu_fallback"]["replica_hours"].get<double>() > 0);
  CHECK(r.all->completed > 0);
  // both on the device: the shipped scenario's crashes, for contrast
  const test::Result both = test::run(shipped("time-slicing", {"duration_s=900"}));
  CHECK(both.report["fleet"]["crashes"].get<double>() > 0);
}
