// Input that was taken but not run as written: values that make a run spin without end, defaults
// that apply to nothing, a comparison checked only after the run, a billing rule overridden, and
// errors located somewhere other than where the value came from. Each is an exact error here.
#include <doctest/doctest.h>

#include <string>

#include "helpers.hpp"
#include "libsim/check/budget.hpp"
#include "libsim/cost/refresh.hpp"

using namespace fleetsim;
using test::error_of;

namespace {

const std::string kHead = "duration_s: 600\ndevice: h100-sxm-80gb\nmodel: llama-3.1-8b\n";

// One owned replica: `pricing` lines before `owned:`, `owned` lines inside it (each indented).
std::string owned_scenario(const std::string& pricing, const std::string& owned) {
  return kHead + "fleet:\n  replicas: 1\n  pricing:\n" + pricing +
         "    owned:\n      node_capex_usd: 300000\n      refresh_years: 4\n" + owned +
         "workload: {arrival: {process: poisson, rate_per_s: 2}, prompt_tokens: 500, output_tokens: 100}\n";
}

}  // namespace

TEST_CASE("input edges: closed-loop users the cache answers at once, or who retry at once, are refused") {
  const std::string rc = kHead +
                         "fleet: {replicas: 1}\nworkload:\n  arrival: {process: concurrency, clients: 100}\n"
                         "  prompt_tokens: 500\n  output_tokens: 100\n"
                         "  response_cache: {hit_rate: 0.999999, latency_s: 0}\n";
  CHECK(error_of(rc) ==
        "<test>:9:30: error: workload.response_cache.hit_rate: closed-loop users with no think time, answered by the "
        "cache in 0 s, would send about 1e+06 requests at once for each the fleet serves (hit_rate / (1 - "
        "hit_rate)): give response_cache.latency_s (a lookup's round trip, 0.001 or more) or a think time, or a "
        "hit_rate of 0.999 or less");
  // a lookup's round trip, a think time or a lower rate each lets time pass
  CHECK(error_of(rc, {"workload.response_cache.latency_s=0.001"}) == "(no error)");
  CHECK(error_of(rc, {"workload.arrival.think_time_s=1"}) == "(no error)");
  CHECK(error_of(rc, {"workload.response_cache.hit_rate=0.999"}) == "(no error)");
  // a back-off under a millisecond only spins against a full queue
  CHECK(error_of(rc, {"workload.response_cache=~", "workload.arrival.retry_after_s=1e-9"}) ==
        "--set workload.arrival.retry_after_s=1e-9: error: workload.arrival.retry_after_s: value 1e-9 is out of range "
        "(expected retry_after_s in [0.001, 86400])");
}

TEST_CASE("input edges: a facility that powers millions of nodes, or nodes drawing nothing, is no overflow") {
  const std::string owned =
      owned_scenario("",
                     "      power: {idle_kw_per_device: 0, busy_kw_per_device: 0.00025, usd_per_kwh: 0.1}\n"
                     "      facility: {rack_kw: 10000, racks: 500}\n");
  CHECK(error_of(owned) == "(no error)");
  // 10,000 kW over 8 x 0.25 W: 5,000,000 nodes a rack, 2.5e9 in 500 racks, past an int
  const Json f = test::run(test::scenario(owned, {"duration_s=120", "warmup_s=0"}))
                     .report["ledger"]["pools"]["default"]["ownership"]["facility"];
  CHECK(f["nodes_per_rack"].get<int64_t>() == 5000000);
  CHECK(f["nodes_obtainable"].get<int64_t>() == 2500000000LL);
  CHECK(error_of(owned, {"fleet.pricing.owned.power.busy_kw_per_device=0",
                         "fleet.pricing.owned.power.usd_per_kwh=0"}) == "(no error)");
  // and a small one still refuses what it cannot power
  CHECK(
      error_of(owned, {"fleet.pricing.owned.power.busy_kw_per_device=1", "fleet.pricing.owned.facility.racks=1",
                       "fleet.pricing.owned.facility.rack_kw=5", "fleet.replicas=9", "fleet.pricing.owned.replicas=9"})
          .find("the facility powers 0 nodes of h100-sxm-80gb") != std::string::npos);
}

TEST_CASE("input edges: an owned pool billed by the device, and a newer fleet that cannot run, are refused up front") {
  const std::string owned =
      owned_scenario("    billing: device\n", "      power: {idle_kw_per_device: 0.1, usd_per_kwh: 0.1}\n");
  CHECK(error_of(owned) ==
        "<test>:7:14: error: fleet.pricing.billing: an owned pool is paid for by the whole node "
        "(owned.node_capex_usd): billing: device does not apply; remove it");
  CHECK(error_of(owned, {"fleet.pricing.billing=node"}) == "(no error)");
  // a newer device's fleet is checked before anything runs (validate, run, report)
  const ScenarioSource src =
      ScenarioSource::from_text(owned, "<test>", ".")
          .with_overrides(parse_sets({"fleet.pricing.billing=~",
                                      "fleet.pricing.owned.newer={device: b200-180gb, node_capex_usd: 400000, "
                                      "tensor_parallel: 3}"}));
  const Scenario s = src.instantiate();
  CHECK(test::input_error([&] { check_newer_fleets(src, s); })
            .find("error: the pool on b200-180gb (newer:) is not a valid fleet: engine.tensor_parallel: llama-3.1-8b "
                  "has 32 attention heads, which tp=3 does not divide") != std::string::npos);
}

TEST_CASE("input edges: a default every pool or class gives for itself applies to none, and is refused") {
  const std::string pools =
      "duration_s: 600\ndevice: h100-sxm-80gb\nmodel: llama-3.1-8b\nfleet: {replicas: 1}\n"
      "engine: {max_num_seqs: 32}\npools:\n"
      "  a: {device: a100-80gb, engine: {max_num_seqs: 64}}\n"
      "  b: {device: h200-141gb, fleet: {replicas: 2}}\n"
      "workload: {prompt_tokens: 500, output_tokens: 100}\n"
      "classes:\n  chat: {pool: a, arrival: {process: poisson, rate_per_s: 2}}\n"
      "  batch: {pool: b, arrival: {process: poisson, rate_per_s: 1}}\n";
  CHECK(error_of(pools) ==
        "<test>:2:9: error: device: every pool gives its own device: this default applies to none "
        "(remove it, or leave device out of a pool)");
  // a --set that makes a default dead: the default is refused where it is written
  CHECK(error_of(pools, {"pools.b.device=~", "pools.b.engine={max_num_seqs: 16}"}) ==
        "<test>:5:24: error: engine.max_num_seqs: every pool gives its own engine.max_num_seqs: this default applies "
        "to none (remove it, or leave engine.max_num_seqs out of a pool)");
  CHECK(error_of(pools, {"pools.b.device=~"}) == "(no error)");
  // a pool's key set to null is left out: the top-level default holds there
  const Scenario n = test::scenario(pools, {"pools.b.device=~", "pools.a.engine.max_num_seqs=~"});
  CHECK(n.pools[0].max_num_seqs == 32);
  // a sweep that sets pools' or classes' keys (~ among its values) may leave a default to some
  // configurations: not refused
  CHECK(error_of(pools, {"pools.b.device=~", "pools.b.engine={max_num_seqs: 16}",
                         "sweep.parameters={pools.a.engine.max_num_seqs: [~, 128]}"}) == "(no error)");
  CHECK(error_of(pools, {"pools.b.device=~", "classes.chat.output_tokens=50", "classes.batch.output_tokens=60",
                         "sweep.parameters={classes.chat.output_tokens: [~, 50]}"}) == "(no error)");
  CHECK(error_of(pools, {"pools.b.device=~", "classes.chat.output_tokens=50", "classes.batch.output_tokens=60"}) ==
        "<test>:9:47: error: workload.output_tokens: no class takes this workload.output_tokens: each gives its own or "
        "replays a trace's; remove it, or leave output_tokens out of a class");
}

TEST_CASE("input edges: a workload value a class inherits is located where it came from, a --set included") {
  const std::string y =
      "duration_s: 600\nmodel: llama-3.1-8b\ndevice: h100-sxm-80gb\nfleet: {replicas: 1}\n"
      "pools:\n  a: {fleet: {replicas: 2}}\n  b: {engine: {max_num_seqs: 64}}\n"
      "workload:\n  prompt_tokens: 500\n  output_tokens: 100\n"
      "classes:\n  chat: {pool: a, arrival: {process: poisson, rate_per_s: 2}}\n"
      "  batch: {pool: b, arrival: {process: poisson, rate_per_s: 1}, output_tokens: 50}\n";
  CHECK(error_of(y, {"workload.prompt_tokens={dist: lognormal, median: 100, p99: 10}"}) ==
        "--set workload.prompt_tokens={dist: lognormal, median: 100, p99: 10}: error: classes.chat.prompt_tokens.p99: "
        "p99 must be >= median");
  // a class whose own key a --set left out inherits the file's value: located in the file, not at
  // that --set (and with every class's own, the file's value is a default no class takes)
  std::string bad = y;
  bad.replace(bad.find("workload:\n"), 10, "workload:\n  arrival: {process: poisson, rate_per_s: -1}\n");
  CHECK(error_of(bad) ==
        "<test>:9:12: error: workload.arrival: no class takes this workload.arrival: each gives its "
        "own; remove it, or leave arrival out of a class");
  CHECK(error_of(bad, {"classes.chat.arrival=~"}) ==
        "<test>:9:43: error: classes.chat.arrival.rate_per_s: value -1 is out of range (expected a number > 0 and <= "
        "1e+06)");
}

TEST_CASE("input edges: a trace option the trace refuses is located at the option") {
  const std::string y =
      "duration_s: trace_end\ndevice: h100-sxm-80gb\nmodel: llama-3.1-8b\nfleet: {replicas: 4}\n"
      "workload:\n  arrival: {process: trace, path: " +
      std::string(FLEETSIM_SOURCE_DIR) + "/scenarios/traces/mooncake-conversation-5min.jsonl}\n";
  CHECK(error_of(y, {"workload.arrival.model=ChatGPT"})
            .rfind("--set workload.arrival.model=ChatGPT: error: workload.arrival.model: ", 0) == 0);
}

TEST_CASE("input edges: an empty budget or catalog name is refused, not made a nameless entry") {
  CHECK(test::input_error([] {
          parse_budgets_text("budgets: {\"\": {metric: latency_s.ttft.p99, max: 1}}\n", "<b>", {}, true, true);
        }) ==
        "<b>:1:11: error: budgets: expected a budget name, got an empty one (it names the budget's line, its "
        "JUnit test case and --set budgets.NAME.KEY)");
  CHECK(error_of(kHead +
                 "fleet: {replicas: 1}\n"
                 "workload: {arrival: {process: poisson, rate_per_s: 1}, prompt_tokens: 10, output_tokens: 10}\n"
                 "catalog: {devices: {\" \": {memory_gib: 80}}}\n") ==
        "<test>:6:21: error: catalog.devices: expected a name, got an empty one (a scenario's device: or model: names "
        "the entry)");
}

TEST_CASE("input edges: a pool a --set misspells is refused, not run billed idle beside the one meant") {
  const std::string y = kHead +
                        "pools:\n  prefill: {fleet: {replicas: 1}, disaggregation: {decode_pool: decode}}\n"
                        "  decode: {fleet: {replicas: 2}}\n  spare: {fleet: {replicas: 1}}\n"
                        "classes:\n  chat: {pool: prefill, arrival: {process: poisson, rate_per_s: 2},"
                        " prompt_tokens: 500, output_tokens: 100}\n";
  CHECK(error_of(y, {"pools.decdoe.fleet.replicas=3"}) ==
        "--set pools.decdoe.fleet.replicas=3: error: pools.decdoe: no pool 'decdoe' in the scenario (did you mean "
        "'decode'?): this makes one that serves nothing, as no class names it as its pool and no prefill pool hands "
        "it prompts; to add a pool, also set a class's pool to it");
  // a pool the file names stays, fed or not (a class moved off it by a --set leaves it billed idle),
  // and one a --set makes is taken once a class or a prefill pool sends it work
  CHECK(error_of(y) == "(no error)");
  CHECK(error_of(y, {"classes.chat.pool=spare"}) == "(no error)");
  CHECK(error_of(y, {"pools.big.fleet.replicas=3", "classes.chat.pool=big"}) == "(no error)");
  CHECK(error_of(y, {"pools.d2.fleet.replicas=3", "pools.prefill.disaggregation.decode_pool=d2"}) == "(no error)");
  const Scenario s = test::scenario(y, {"pools.big.fleet.replicas=3", "classes.chat.pool=big"});
  REQUIRE(s.pools.size() == 4);
  CHECK(s.pools[3].name == "big");
  CHECK(s.classes[0].pool == 3);
}

TEST_CASE("input edges: an unknown key in a pool's engine or fleet, or in the defaults they merge, is located") {
  const std::string y = kHead +
                        "fleet:\n  queue_limit: 100\npools:\n  chat:\n    fleet:\n      replicas: 2\n"
                        "      router: least_outstanding\n    engine: {max_num_seqs: 4}\n"
                        "classes:\n  chat: {pool: chat, arrival: {process: poisson, rate_per_s: 1}, prompt_tokens: 100,"
                        " output_tokens: 10}\n";
  auto with = [&](const std::string& from, const std::string& to) {
    std::string t = y;
    t.replace(t.find(from), from.size(), to);
    return t;
  };
  CHECK(error_of(y) == "(no error)");
  CHECK(error_of(with("      router:", "      routr:")) ==
        "<test>:10:7: error: pools.chat.fleet.routr: unknown key 'routr' (did you mean 'router'?)");
  CHECK(error_of(with("max_num_seqs: 4", "max_num_seqz: 4")) ==
        "<test>:11:14: error: pools.chat.engine.max_num_seqz: unknown key 'max_num_seqz' (did you mean "
        "'max_num_seqs'?)");
  CHECK(error_of(with("  queue_limit: 100", "  queue_limt: 100")) ==
        "<test>:5:3: error: pools.chat.fleet.queue_limt: unknown key 'queue_limt' (did you mean 'queue_limit'?)");
  // a key neither the pool nor the top level gives is missing at the pool
  CHECK(
      error_of(with("fleet:\n  queue_limit: 100\npools:\n  chat:\n    fleet:\n      replicas: 2\n"
                    "      router: least_outstanding\n",
                    "pools:\n  chat:\n")) ==
      "<test>:6:5: error: pools.chat: missing required key 'fleet' (give it here, or at the top level for every pool)");
}
