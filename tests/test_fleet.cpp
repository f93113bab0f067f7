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
