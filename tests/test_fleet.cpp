// Fleet dynamics, each against a claim of the seeds: pools and request classes, ...
#include <doctest/doctest.h>

#include "helpers.hpp"

using namespace fleetsim;

namespace {
Scenario shipped(const std::string& name, const std::vector<std::string>& sets = {}) {
  return load_scenario_file(std::string(FLEETSIM_SOURCE_DIR) + "/scenarios/" + name + ".yaml", sets);
}
}  // namespace

TEST_CASE("a batch job on the interactive pool multiplies interactive p99; separate pools fix it") {
  const auto separate = test::run(shipped("interactive-and-batch"));
  const auto mixed = test::run(shipped("interactive-and-batch", {"classes.summarize.pool=interactive"}));
  REQUIRE(separate.drained);
  REQUIRE(mixed.drained);
  const double sep = separate.report["classes"]["chat"]["latency_s"]["ttft"]["p99"].get<double>();
  const double mix = mixed.report["classes"]["chat"]["latency_s"]["ttft"]["p99"].get<double>();
  MESSAGE("chat p99 TTFT: separate pools " << sep << " s, batch on the interactive pool " << mix << " s");
  CHECK(mix > 2.0 * sep);
  // the same chat requests in both runs (each class has its own random streams)
  CHECK(separate.tally->classes[0].arrived == mixed.tally->classes[0].arrived);
}

TEST_CASE("cost is attributed to classes and teams by the device time they used") {
  const auto r = test::run(shipped("interactive-and-batch"));
  const Json& j = r.report;
  const double total = j["cost"]["total_usd"].get<double>();
  const double chat = j["classes"]["chat"]["cost"]["usd"].get<double>();
  const double summ = j["classes"]["summarize"]["cost"]["usd"].get<double>();
  CHECK(chat + summ == doctest::Approx(total));
  CHECK(j["teams"]["product"]["usd"].get<double>() == doctest::Approx(chat));
  CHECK(j["teams"]["research"]["usd"].get<double>() == doctest::Approx(summ));
  // each pool's cost: replicas x window x price
  CHECK(j["pools"]["interactive"]["cost"]["total_usd"].get<double>() == doctest::Approx(2 * 3300 / 3600.0 * 3.00));
  CHECK(j["pools"]["batch"]["cost"]["total_usd"].get<double>() == doctest::Approx(1 * 3300 / 3600.0 * 1.80));
  // on a shared pool, the split follows the busy time of each class
  const auto mixed = test::run(shipped("interactive-and-batch", {"classes.summarize.pool=interactive"}));
  const Tally& t = *mixed.tally;
  const double share = t.classes[0].busy_s / (t.classes[0].busy_s + t.classes[1].busy_s);
  CHECK(mixed.report["classes"]["chat"]["cost"]["usd"].get<double>() ==
        doctest::Approx(share * mixed.report["pools"]["interactive"]["cost"]["total_usd"].get<double>()));
  // and the class busy times add up to the pool's busy time
  CHECK(t.classes[0].busy_s + t.classes[1].busy_s == doctest::Approx(t.pools[0].busy_s).epsilon(1e-9));
}

TEST_CASE("scaling on host CPU never adds a replica while the queue grows; scaling on queue depth does") {
  const auto cpu = test::run(shipped("autoscale-host-cpu", {"duration_s=1800"}));
  const auto queue = test::run(shipped("autoscale-host-cpu", {"duration_s=1800", "fleet.autoscale.signal=queue_depth",
                                                              "fleet.autoscale.target=5"}));
  REQUIRE(cpu.drained);
  REQUIRE(queue.drained);
  const Json& c = cpu.report;
  const Json& q = queue.report;
  MESSAGE("host CPU: " << c["fleet"]["max_replicas"] << " replicas at most, p50 TTFT " << c["latency_s"]["ttft"]["p50"]
                       << " s, rejected " << c["requests"]["rejected"]);
  MESSAGE("queue depth: " << q["fleet"]["max_replicas"] << " replicas at most, p50 TTFT " << q["latency_s"]["ttft"]["p50"]
                          << " s, rejected " << q["requests"]["rejected"]);
  CHECK(c["fleet"]["scale_ups"].get<double>() == 0);
  CHECK(c["requests"]["rejected"].get<double>() > 0.1 * c["requests"]["arrived"].get<double>());  // the queue hit its limit
  CHECK(c["latency_s"]["ttft"]["p50"].get<double>() > 60.0);
  CHECK(q["fleet"]["scale_ups"].get<double>() >= 2);
  CHECK(q["requests"]["rejected"].get<double>() == 0);
  CHECK(q["latency_s"]["ttft"]["p50"].get<double>() < 1.0);
}

TEST_CASE("scale-to-zero makes the first request after idle wait for the cold start") {
  const Scenario s = shipped("scale-to-zero");
  const auto zero = test::run(s);
  const auto warm = test::run(shipped("scale-to-zero", {"fleet.autoscale.min_replicas=1", "fleet.replicas=1"}));
  // the cold start, stage by stage: node, image, 16.06 GB at 0.5 GB/s, loading at 5 GB/s, warm-up
  const double cold = 120 + 60 + 16.06 / 0.5 + 16.06 / 5 + 30;
  const Json& z = zero.report;
  MESSAGE("scale to zero: p50 TTFT " << z["latency_s"]["ttft"]["p50"] << " s (cold start " << cold << " s), cost "
                                     << z["cost"]["total_usd"] << "; kept warm: p50 TTFT "
                                     << warm.report["latency_s"]["ttft"]["p50"] << " s, cost "
                                     << warm.report["cost"]["total_usd"]);
  CHECK(z["latency_s"]["ttft"]["p50"].get<double>() == doctest::Approx(cold).epsilon(0.01));
  CHECK(warm.report["latency_s"]["ttft"]["p50"].get<double>() < 1.0);
  CHECK(z["cost"]["total_usd"].get<double>() < 0.5 * warm.report["cost"]["total_usd"].get<double>());
  CHECK(z["fleet"]["scale_ups"].get<double>() >= 10);
  // kept warm, the idle replica is the chosen headroom; scaled to zero, cold starts take the bill
  CHECK(warm.report["utilization"]["idle_headroom_fraction"].get<double>() > 0.9);
  CHECK(z["utilization"]["cold_start_fraction"].get<double>() > 0.5);
}

TEST_CASE("provisioned time splits into busy, cold start, chosen headroom and waste") {
  for (const char* name : {"scale-to-zero", "autoscale-host-cpu", "chat-default", "interactive-and-batch"}) {
    CAPTURE(name);
    const auto r = test::run(shipped(name, {"duration_s=1800"}));
    for (int32_t i = 0; i < r.tally->n_pools; ++i) {
      const PoolTally& p = r.tally->pools[i];
      CHECK(p.busy_s + p.cold_s + p.headroom_s + p.waste_s == doctest::Approx(p.replica_s).epsilon(1e-6));
    }
  }
  // a fixed fleet that declares one replica of headroom
  const auto fixed = test::run(shipped("chat-default", {"duration_s=1800", "fleet.replicas=4", "fleet.headroom_replicas=1",
                                                       "workload.arrival.rate_per_s=1"}));
  const Json& u = fixed.report["utilization"];
  CHECK(u["idle_headroom_fraction"].get<double>() > 0.1);
  CHECK(u["idle_waste_fraction"].get<double>() > 0.1);
  CHECK(u["busy_fraction"].get<double>() + u["idle_headroom_fraction"].get<double>() + u["idle_waste_fraction"].get<double>() ==
        doctest::Approx(1.0).epsilon(1e-6));
}
