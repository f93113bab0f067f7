// The newer-device view (pricing.owned.newer): the variant is exactly the scenario with the
// pool moved by overrides, each year's cost per 1M tokens follows from the two owned lines by
// hand, a device compared with itself is never cheaper, and bad inputs are located errors.
#include <doctest/doctest.h>

#include <cmath>

#include "helpers.hpp"
#include "libsim/cost/refresh.hpp"
#include "libsim/report/html.hpp"
#include "libsim/report/svg.hpp"

using namespace fleetsim;

namespace {

double num(const Json& j) { return j.get<double>(); }

const std::string kEstate =
    "name: estate\nseed: 11\nduration_s: 900\nwarmup_s: 60\ndevice: a100-80gb\nmodel: llama-3.1-8b\n"
    "fleet:\n  replicas: 6\n  pricing:\n    owned:\n      node_capex_usd: 150000\n      refresh_years: 5\n      years: "
    "6\n"
    "      power: {idle_kw_per_device: 0.06, busy_kw_per_device: 0.4, host_kw_per_node: 2.5, pue: 1.4, usd_per_kwh: "
    "0.12}\n"
    "      space_usd_per_node_month: 600\n"
    "      newer: {device: h100-sxm-80gb, replicas: 3, node_capex_usd: 400000, capex_change_per_year: -0.15}\n"
    "workload:\n  arrival: {process: poisson, rate_per_s: 12}\n  prompt_tokens: {dist: lognormal, median: 800, p99: "
    "4000}\n"
    "  output_tokens: {dist: lognormal, median: 120, p99: 600}\n";

struct Viewed {
  Json report;
  Json view;
};

Viewed run_with_view(const std::string& yaml, const std::vector<std::string>& sets = {}) {
  const ScenarioSource src =
      ScenarioSource::from_text(yaml, "<test>", FLEETSIM_SOURCE_DIR).with_overrides(parse_sets(sets));
  const Scenario s = src.instantiate();
  auto r = test::run(s);
  add_newer_device_views(r.report, src, s, *r.tally, 0);
  return {r.report, r.report["ledger"]["pools"]["default"]["ownership"]["newer_device"]};
}

}  // namespace

TEST_CASE("newer device: the variant is the same scenario with the pool moved, and each year follows by hand") {
  const Viewed v = run_with_view(kEstate);
  const Json& cur = v.view["current"];
  const Json& nw = v.view["newer"];
  // the current fleet is the run itself: its owned line, its tokens
  const Json& own = v.report["ledger"]["pools"]["default"]["ownership"];
  CHECK(num(cur["owned_usd"]) == doctest::Approx(num(own["usd"])).epsilon(1e-12));
  CHECK(cur["nodes"] == 1);
  CHECK(nw["nodes"] == 1);
  CHECK(cur["replicas"] == 6);
  CHECK(nw["replicas"] == 3);
  // the newer fleet is exactly the scenario with these overrides (its idle draw at the current
  // device's share of busy, 0.06 / 0.4 x 0.7 kW): the same owned line and tokens
  const auto m = test::run(test::scenario(
      kEstate, {"device=h100-sxm-80gb", "fleet.replicas=3", "fleet.pricing.owned.replicas=3",
                "fleet.pricing.owned.node_capex_usd=400000", "fleet.pricing.owned.power.busy_kw_per_device=0.7",
                "fleet.pricing.owned.power.idle_kw_per_device=0.105"}));
  const Json& mo = m.report["ledger"]["pools"]["default"]["ownership"];
  CHECK(num(nw["owned_usd"]) == doctest::Approx(num(mo["usd"])).epsilon(1e-12));
  CHECK(num(nw["tokens"]) == m.all->input_tokens + m.all->output_tokens);
  // both served the same arrivals
  CHECK(num(nw["completed"]) + num(nw["rejected"]) + num(nw["failed"]) ==
        num(cur["completed"]) + num(cur["rejected"]) + num(cur["failed"]));

  // year y: the newer fleet all-in with its capex at 400,000 x 0.85^(y-1); the current all-in
  // and on running costs alone
  const double tc = num(cur["tokens"]), tn = num(nw["tokens"]);
  const double cur_all = num(cur["owned_usd"]) / tc * 1e6;
  const double cur_run = (num(cur["owned_usd"]) - num(cur["capex_usd"])) / tc * 1e6;
  REQUIRE(v.view["years"].size() == 6);
  int cheaper = 0;
  for (const Json& y : v.view["years"]) {
    const int k = y["year"].get<int>();
    const double f = std::pow(0.85, k - 1);
    const double expect = (num(nw["owned_usd"]) - num(nw["capex_usd"]) + num(nw["capex_usd"]) * f) / tn * 1e6;
    CHECK(num(y["newer_node_capex_usd"]) == doctest::Approx(400000 * f).epsilon(1e-12));
    CHECK(num(y["newer_usd_per_million_tokens"]) == doctest::Approx(expect).epsilon(1e-12));
    CHECK(num(y["current_usd_per_million_tokens"]) == doctest::Approx(cur_all).epsilon(1e-12));
    CHECK(num(y["current_running_usd_per_million_tokens"]) == doctest::Approx(cur_run).epsilon(1e-12));
    if (!cheaper && expect < cur_all) cheaper = k;
  }
  // a falling price: the newer fleet's cost per token falls every year
  for (size_t k = 1; k < v.view["years"].size(); ++k)
    CHECK(num(v.view["years"][k]["newer_usd_per_million_tokens"]) <
          num(v.view["years"][k - 1]["newer_usd_per_million_tokens"]));
  if (cheaper)
    CHECK(v.view["newer_cheaper_from_year"] == cheaper);
  else
    CHECK(v.view["newer_cheaper_from_year"].is_null());
  // the faster device holds the tail at half the replicas
  CHECK(num(nw["p99_ttft_s"]) < num(cur["p99_ttft_s"]));
}

TEST_CASE("newer device: the same device, replicas and price is never cheaper, and costs what the run costs") {
  const Viewed v =
      run_with_view(kEstate, {"fleet.pricing.owned.newer.device=a100-80gb", "fleet.pricing.owned.newer.replicas=6",
                              "fleet.pricing.owned.newer.node_capex_usd=150000",
                              "fleet.pricing.owned.newer.capex_change_per_year=0"});
  CHECK(num(v.view["newer"]["owned_usd"]) == doctest::Approx(num(v.view["current"]["owned_usd"])).epsilon(1e-12));
  CHECK(num(v.view["newer"]["tokens"]) == num(v.view["current"]["tokens"]));
  for (const Json& y : v.view["years"])
    CHECK(num(y["newer_usd_per_million_tokens"]) ==
          doctest::Approx(num(y["current_usd_per_million_tokens"])).epsilon(1e-12));
  CHECK(v.view["newer_cheaper_from_year"].is_null());
  CHECK(v.view["replacing_pays_from_year"].is_null());  // all-in never beats running costs alone
}

TEST_CASE("newer device: located errors for what cannot be compared") {
  CHECK(test::error_of(kEstate, {"fleet.pricing.owned.newer.device=h100"}).find("unknown device 'h100'") !=
        std::string::npos);
  CHECK(test::error_of(kEstate, {"fleet.pricing.owned.replicas=3"})
            .find("a fixed-size pool whose replicas are all owned") != std::string::npos);
  CHECK(test::error_of(kEstate, {"fleet.autoscale.min_replicas=2", "fleet.autoscale.max_replicas=6",
                                 "fleet.autoscale.signal=queue_depth", "fleet.autoscale.target=4"})
            .find("a fixed-size pool whose replicas are all owned") != std::string::npos);
  CHECK(test::error_of(kEstate, {"fleet.pricing.owned.newer.idle_kw_per_device=2"})
            .find("idle_kw_per_device must be <=") != std::string::npos);
  // a variant that is not a valid fleet is an error at `newer:`, saying why
  try {
    run_with_view(kEstate,
                  {"model=llama-3.1-70b", "engine.tensor_parallel=2", "fleet.pricing.owned.newer.device=l4-24gb"});
    FAIL("expected an input error");
  } catch (const InputError& e) {
    CHECK(e.where().file == "<test>");
    CHECK(e.where().line == 16);
    CHECK(std::string(e.what()).find("l4-24gb (newer:) is not a valid fleet") != std::string::npos);
    CHECK(std::string(e.what()).find("does not fit") != std::string::npos);
  }
  // ... and its tensor_parallel makes it one
  const Viewed tp =
      run_with_view(kEstate, {"model=llama-3.1-70b", "engine.tensor_parallel=2", "fleet.replicas=4",
                              "fleet.pricing.owned.newer.replicas=2", "fleet.pricing.owned.newer.tensor_parallel=4",
                              "fleet.pricing.owned.newer.device=h100-sxm-80gb", "workload.arrival.rate_per_s=1"});
  CHECK(tp.view["newer"]["nodes"] == 1);
}

TEST_CASE("newer device: the HTML report draws the years and tabulates them, a rented pool has no Owning section") {
  const Viewed v = run_with_view(kEstate);
  const std::string html = html_report(Json::parse(v.report.dump()));
  REQUIRE(html.find("<h2>Owning</h2>") != std::string::npos);
  const size_t f = html.find("<figure id=\"newer-device-default\">");
  REQUIRE(f != std::string::npos);
  CHECK(html.find("<svg", f) < html.find("</figure>", f));
  {  // a pool's name is escaped once in the figure's id
    Json doc = Json::parse(v.report.dump());
    Json& pools = doc["ledger"]["pools"];
    pools["a&b"] = pools["default"];
    pools.erase("default");
    CHECK(html_report(doc).find("<figure id=\"newer-device-a&amp;b\">") != std::string::npos);
  }
  // one row per year, each with the figures of the JSON
  const size_t t = html.find("Newer device, pool default");
  REQUIRE(t != std::string::npos);
  const std::string tab = html.substr(t, html.find("</table>", t) - t);
  size_t rows = 0;
  for (size_t i = tab.find("<tr"); i != std::string::npos; i = tab.find("<tr", i + 1)) ++rows;
  CHECK(rows == 1 + v.view["years"].size());  // the header and the years
  for (const Json& y : v.view["years"])
    CHECK(tab.find(svg::usd(num(y["newer_usd_per_million_tokens"]))) != std::string::npos);
  const auto rented = test::run(test::scenario(
      "duration_s: 300\nwarmup_s: 30\ndevice: h100-sxm-80gb\nmodel: llama-3.1-8b\nfleet: {replicas: 1}\n"
      "workload:\n  arrival: {process: poisson, rate_per_s: 2}\n  prompt_tokens: 500\n  output_tokens: 50\n"));
  CHECK(html_report(Json::parse(rented.report.dump())).find("<h2>Owning</h2>") == std::string::npos);
}

TEST_CASE("newer device: 'cheaper from year N' holds to the end of the view, not for a year or two") {
  // a price that rises 60% a year: the newer fleet is the cheaper early and the dearer late
  const Viewed v = run_with_view(kEstate, {"fleet.pricing.owned.newer.node_capex_usd=100000",
                                           "fleet.pricing.owned.newer.capex_change_per_year=0.6"});
  const Json& ys = v.view["years"];
  REQUIRE(ys.size() == 6);
  auto cheaper = [&](size_t k) {
    return num(ys[k]["newer_usd_per_million_tokens"]) < num(ys[k]["current_usd_per_million_tokens"]);
  };
  REQUIRE(cheaper(0));
  REQUIRE(!cheaper(5));
  CHECK(v.view["newer_cheaper_from_year"].is_null());
}
