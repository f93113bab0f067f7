// Sweep values: how each listed value reaches its configuration, as the text of an override that
// reads back as what was written, and what a configuration reads of the scenario.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "helpers.hpp"
#include "libsim/sweep/sweep.hpp"
#include "sweep_helpers.hpp"

using namespace fleetsim;

namespace {

ScenarioSource source(const std::string& sweep) { return test::sweep_source(sweep); }
Json run(const ScenarioSource& src) { return test::run_sweep_cpu(src); }

std::string error_of(const std::string& sweep) {
  return test::input_error([&] { parse_sweep(source(sweep)); });
}

}  // namespace

TEST_CASE("a quoted value in a sweep's list is the string it is, however numeric it looks") {
  const SweepSpec spec = parse_sweep(source("sweep:\n  parameters:\n    name: [\"1.10\", \"1.1\", \"007\"]\n"));
  REQUIRE(spec.params.size() == 1);
  const auto& v = spec.params[0].json_values;
  REQUIRE(v.size() == 3);
  CHECK(v[0] == Json("1.10"));
  CHECK(v[1] == Json("1.1"));
  CHECK(v[2] == Json("007"));
  // unquoted, 1.10 and 1.1 are one number, listed twice
  CHECK_THROWS_AS(parse_sweep(source("sweep:\n  parameters:\n    engine.max_num_seqs: [1.10, 1.1]\n")), InputError);
  // a quoted number or switch is refused where a number or a switch is expected, as --set refuses it
  CHECK(error_of("sweep:\n  parameters:\n    fleet.replicas: [1, \"2\"]\n") ==
        "<sweep>:14:25: error: fleet.replicas: expected an integer, got the string \"2\" (remove "
        "the quotes)");
  CHECK(error_of("sweep:\n  parameters:\n    engine.prefix_caching: [true, \"false\"]\n")
            .find("got the string \"false\"") != std::string::npos);
}

TEST_CASE("a sweep's values come out as JSON reads them back for a run: null, booleans, mappings and lists") {
  const SweepSpec spec = parse_sweep(source(
      "sweep:\n  parameters:\n    engine.enforce_eager: [true, false]\n    fleet.autoscale: [~, {min_replicas: 1, "
      "max_replicas: 2, signal: inflight, target: 8}]\n    engine.max_num_seqs: [64]\n"));
  REQUIRE(spec.params.size() == 3);
  CHECK(spec.params[0].json_values == std::vector<Json>{Json(true), Json(false)});
  const auto& a = spec.params[1].json_values;
  REQUIRE(a.size() == 2);
  CHECK(a[0].is_null());
  CHECK(a[1] == Json::parse(R"({"min_replicas": 1, "max_replicas": 2, "signal": "inflight", "target": 8})"));
  CHECK(spec.params[2].json_values == std::vector<Json>{Json(64)});
  // and a row's parameters, given back as overrides, run that row's configuration
  const Json doc = run(source("sweep:\n  parameters:\n    engine.enforce_eager: [true, false]\n"));
  REQUIRE(doc["rows"].size() == 2);
  CHECK(doc["rows"][0]["parameters"]["engine.enforce_eager"] == Json(true));
  CHECK(doc["sweep"]["parameters"][0]["values"] == Json::parse("[true, false]"));
}

TEST_CASE("a sweep none of whose configurations can run says so, not that none meets an SLO it does not have") {
  // trtllm's memory fraction on a vLLM pool: every row inconsistent, with its reason
  const Json doc = run(source("sweep:\n  parameters:\n    engine.free_gpu_memory_fraction: [0.8, 0.9]\n"));
  REQUIRE(doc["rows"].size() == 2);
  for (const auto& r : doc["rows"]) CHECK(r["metrics"].is_null());
  CHECK(doc["summary"]["infeasible_config"] == 2);
  CHECK(doc["summary"]["message"] == "no configuration can run (each row says why)");
}

TEST_CASE("a configuration leaves out --set of the sweep section, and runs as the sweep's rows do") {
  const auto src = source("sweep:\n  parameters:\n    fleet.replicas: [1, 2]\n")
                       .with_overrides(parse_sets({"sweep.parameters={fleet.replicas: [1, 3]}", "seed=5"}));
  const Scenario c = src.instantiate_configuration(parse_sets({"fleet.replicas=3"}));
  CHECK(c.overrides == std::vector<std::string>{"seed=5", "fleet.replicas=3"});
  CHECK(src.instantiate().overrides == std::vector<std::string>{"sweep.parameters={fleet.replicas: [1, 3]}", "seed=5"});
  // the row of replicas=3 is that configuration's run
  const Json doc = run(src);
  REQUIRE(doc["rows"].size() == 2);
  const test::Result r = test::run(c);
  CHECK(doc["rows"][1]["parameters"]["fleet.replicas"] == 3);
  for (const char* path : {"/requests/completed", "/latency_s/ttft/p99", "/cost/per_million_output_tokens_usd"}) {
    CAPTURE(path);
    const Json::json_pointer ptr(path);
    CHECK(doc["rows"][1]["metrics"][ptr].get<double>() == r.report[ptr].get<double>());
  }
}
