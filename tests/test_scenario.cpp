// Scenario parsing: located, one-line errors for bad input; overrides; trace layouts.
#include <doctest/doctest.h>

#include "helpers.hpp"
#include "libsim/base/error.hpp"
#include "libsim/sweep/sweep.hpp"

using namespace fleetsim;

namespace {

const std::string kGood =
    "name: t\n"                                        // 1
    "duration_s: 100\n"                                // 2
    "device: h100-sxm-80gb\n"                          // 3
    "model: llama-3.1-8b\n"                            // 4
    "fleet:\n"                                         // 5
    "  replicas: 2\n"                                  // 6
    "  router: central_queue\n"                        // 7
    "workload:\n"                                      // 8
    "  arrival: {process: poisson, rate_per_s: 2}\n"   // 9
    "  prompt_tokens: 100\n"                           // 10
    "  output_tokens: {dist: geometric, mean: 50}\n";  // 11

std::string error_of(const std::string& yaml, const std::vector<std::string>& sets = {}) {
  try {
    test::scenario(yaml, sets);
  } catch (const InputError& e) {
    return e.one_line();
  }
  return "(no error)";
}

std::string replace(std::string s, const std::string& from, const std::string& to) {
  const size_t p = s.find(from);
  REQUIRE(p != std::string::npos);
  return s.replace(p, from.size(), to);
}

}  // namespace

TEST_CASE("a valid scenario loads, and the default scenario is valid") {
  const Scenario s = test::scenario(kGood);
  CHECK(s.pools[0].replicas == 2);
  CHECK(s.pools[0].router == Router::central_queue);
  const Scenario d = load_default_scenario();
  CHECK(d.pools[0].model.name == "llama-3.1-8b");
  CHECK(d.pools[0].device.name == "h100-sxm-80gb");
}

TEST_CASE("errors name the file, line and column, and say what was expected") {
  CHECK(error_of(replace(kGood, "  router: central_queue", "  routr: central_queue")) ==
        "<test>:7:3: error: fleet.routr: unknown key 'routr' (did you mean 'router'?)");
  CHECK(error_of(replace(kGood, "replicas: 2", "replicas: two")) ==
        "<test>:6:13: error: fleet.replicas: expected a number, got 'two'");
  CHECK(error_of(replace(kGood, "replicas: 2", "replicas: -1")) ==
        "<test>:6:13: error: fleet.replicas: value -1 is out of range (expected an integer in [1, 4096])");
  CHECK(error_of(replace(kGood, "replicas: 2", "replicas: 2.5")) ==
        "<test>:6:13: error: fleet.replicas: expected an integer, got '2.5'");
  CHECK(error_of(replace(kGood, "duration_s: 100", "duration_s: 1e12"))
            .find("<test>:2:13: error: duration_s: value 1e12 is out of range") == 0);
  CHECK(error_of(replace(kGood, "central_queue", "centrl_queue")) ==
        "<test>:7:11: error: fleet.router: unknown value 'centrl_queue' (expected one of: round_robin, "
        "least_outstanding, central_queue, session_affinity, prefix_aware); did you mean 'central_queue'?");
  CHECK(error_of(replace(kGood, "llama-3.1-8b", "llama-3.1-9b")) ==
        "<test>:4:8: error: model: unknown model 'llama-3.1-9b' (did you mean 'llama-3.1-8b'?)");
  CHECK(error_of(replace(kGood, "duration_s: 100\n", "")) == "<test>:1:1: error: missing required key 'duration_s'");
  CHECK(error_of(replace(kGood, "mean: 50", "mean: 0.5"))
            .find("<test>:11:42: error: workload.output_tokens.mean: value 0.5 is out of range") == 0);
  CHECK(error_of(replace(kGood, "rate_per_s: 2}", "rate_per_s: 2, cv: 3}")) ==
        "<test>:9:50: error: workload.arrival.cv: 'cv' does not apply to process: poisson");
}

TEST_CASE("malformed YAML is located too") {
  const std::string e = error_of(replace(kGood, "  replicas: 2", "  replicas: [2"));
  CHECK(e.find("<test>:") == 0);
  CHECK(e.find("error: malformed YAML") != std::string::npos);
  CHECK(error_of("- 1\n- 2\n") == "<test>:1:1: error: a scenario must be a YAML mapping (key: value lines)");
  CHECK(error_of("") == "<test>:1:1: error: empty scenario file");
}

// YAML parsers keep one of two equal keys without a word; a file holds one document, and a
// broken second one used to be ignored with the first.
TEST_CASE("a key written twice and a second YAML document are located errors") {
  const std::string base = "duration_s: 60\ndevice: h100-sxm-80gb\nmodel: llama-3.1-8b\n";
  CHECK(test::error_of("seed: 42\n" + base + "seed: 7\n") ==
        "<test>:5:1: error: key 'seed' is written twice in this mapping (first on line 1); keep one");
  CHECK(test::error_of(base + "fleet:\n  replicas: 2\n  router: random\n  replicas: 3\n") ==
        "<test>:7:3: error: key 'replicas' is written twice in this mapping (first on line 5); keep one");
  CHECK(
      test::error_of(base + "---\nseed: 1\n") ==
      "<test>:4:1: error: a second YAML document (after '---' or '...'): a file holds one; remove the marker or split "
      "the file");
  CHECK(test::error_of(base + "---\n[broken\n").find("<test>:4:1: error: a second YAML document") == 0);
  CHECK(test::error_of(base + "...\nseed: 1\n").find("<test>:5:1: error: a second YAML document") == 0);
  CHECK(test::error_of(base + "...\n# a comment after the end\n").find("second YAML document") == std::string::npos);
  // text that yaml-cpp reads as no document (and on which its LoadAll loops without end) is
  // malformed, located at its first content line, not "empty"
  CHECK(test::error_of("# a comment\n,020\nseed: 1\n") ==
        "<test>:2:1: error: malformed YAML: this text reads as no "
        "document at all");
  CHECK(test::error_of("# only a comment\n").find("empty scenario file") != std::string::npos);
  CHECK(test::error_of(base, {"workload.prompt_tokens={dist: fixed, value: 3, value: 4}"}) ==
        "--set workload.prompt_tokens={dist: fixed, value: 3, value: 4}: error: key 'value' is written twice in the "
        "value; keep one");
  // the same key in different mappings, and a leading '---', are fine
  CHECK(test::error_of("---\n" + base +
                       "fleet: {replicas: 2}\nworkload: {arrival: {process: poisson, rate_per_s: 2}, "
                       "prompt_tokens: 100, output_tokens: 10}\n") == "(no error)");
}

// YAML types are the writer's: "2" is a string, so it is not taken for a number.
TEST_CASE("a quoted number or boolean, and an empty name, are located errors") {
  const std::string base =
      "duration_s: 60\ndevice: h100-sxm-80gb\nmodel: llama-3.1-8b\n"
      "workload: {arrival: {process: poisson, rate_per_s: 2}, prompt_tokens: 100, output_tokens: 10}\n";
  CHECK(test::error_of(base + "fleet: {replicas: \"2\"}\n") ==
        "<test>:5:19: error: fleet.replicas: expected an integer, got the string \"2\" (remove the quotes)");
  CHECK(test::error_of(base + "fleet: {replicas: 2}\n", {"fleet.replicas=!!str 3"}) ==
        "--set fleet.replicas=!!str 3: error: fleet.replicas: expected an integer, got the string \"3\" (remove the "
        "quotes)");
  CHECK(test::error_of(base + "fleet: {replicas: 2}\n", {"engine.prefix_caching='no'"}) ==
        "--set engine.prefix_caching='no': error: engine.prefix_caching: expected true or false, got the string \"no\" "
        "(remove the quotes)");
  CHECK(test::error_of(base + "fleet: {replicas: 2}\nname: \"\"\n") ==
        "<test>:6:7: error: name: expected a name, got an empty string");
  CHECK(test::error_of(base + "fleet: {replicas: 2}\nname: \"chat\"\n") ==
        "(no error)");  // a quoted string is a string
}

TEST_CASE("a missing file is an input error") {
  try {
    load_scenario_file("/nonexistent/scenario.yaml");
    FAIL("expected an error");
  } catch (const InputError& e) {
    CHECK(e.one_line() ==
          "/nonexistent/scenario.yaml: error: cannot open scenario file (No such file or directory; does it exist and "
          "is it readable?)");
  }
}

TEST_CASE("--set overrides apply before validation and errors name the override") {
  const Scenario s = test::scenario(kGood, {"fleet.replicas=5", "engine.max_num_seqs=64", "seed=9"});
  CHECK(s.pools[0].replicas == 5);
  CHECK(s.pools[0].max_num_seqs == 64);
  CHECK(s.seed == 9);
  CHECK(std::vector<std::string>{"fleet.replicas=5", "engine.max_num_seqs=64", "seed=9"} == s.overrides);
  CHECK(error_of(kGood, {"fleet.replicas=abc"}) ==
        "--set fleet.replicas=abc: error: fleet.replicas: expected a number, got 'abc'");
  CHECK(error_of(kGood, {"fleet.replica=3"}) ==
        "--set fleet.replica=3: error: fleet.replica: unknown key 'replica' (did you mean 'replicas'?)");
  CHECK(error_of(kGood, {"noequals"}) == "--set noequals: error: expected PATH=VALUE, e.g. fleet.replicas=4");
  // a second document in a value would be dropped unread
  CHECK(error_of(kGood, {"fleet.replicas=2\n---\n7"}).find("value holds a second YAML document") != std::string::npos);
}

TEST_CASE("a --set on a top-level key that pools inherit is where their errors point") {
  // pool a inherits engine.max_num_seqs and mps from the top level; pool b sets its own
  const std::string two =
      "duration_s: 60\nwarmup_s: 0\ndevice: h100-sxm-80gb\nmodel: llama-3.2-1b\n"
      "engine: {max_num_seqs: 64}\n"
      "pools:\n  a: {fleet: {replicas: 1}}\n"
      "  b: {mps: 2, engine: {max_num_seqs: 32}, fleet: {replicas: 1}}\n"
      "workload:\n  arrival: {process: poisson, rate_per_s: 1}\n  prompt_tokens: 100\n  output_tokens: 10\n"
      "classes: {c: {pool: a}}\n";
  CHECK(test::scenario(two).pools.size() == 2);
  CHECK(
      error_of(two, {"engine.max_num_seqs=-3"}) ==
      "--set engine.max_num_seqs=-3: error: pools.a.engine.max_num_seqs: value -3 is out of range (expected an integer "
      "in [1, 16384])");
  // b's own value stands, and its own error is at its line
  CHECK(error_of(replace(two, "max_num_seqs: 32", "max_num_seqs: 0")).rfind("<test>:8:", 0) == 0);
  CHECK(
      error_of(replace(two, "max_num_seqs: 32", "max_num_seqs: 0"), {"engine.max_num_seqs=16"}).rfind("<test>:8:", 0) ==
      0);
  // a whole top-level mapping set on the command line: the inheriting pool's error is at the --set
  CHECK(error_of(two, {"engine={max_num_seqs: 0}"}).rfind("--set engine={max_num_seqs: 0}: error: pools.a.engine", 0) ==
        0);
  CHECK(error_of(two, {"mps=400"}).rfind("--set mps=400: error: pools.a.mps:", 0) == 0);
}

TEST_CASE("--set takes a YAML flow value: a mapping or a list replaces the whole value") {
  const std::string closed = replace(kGood, "{process: poisson, rate_per_s: 2}", "{process: concurrency, clients: 8}");
  const std::string to_poisson = "workload.arrival={process: poisson, rate_per_s: 40}";
  // switching the arrival process: the old process's keys go with the old mapping
  const Scenario s = test::scenario(closed, {to_poisson});
  CHECK(s.classes[0].arrival == ArrivalKind::poisson);
  CHECK(s.classes[0].rate_per_s == 40);
  CHECK(std::vector<std::string>{to_poisson} == s.overrides);
  // a scalar sets one key and keeps the others
  CHECK(error_of(closed, {"workload.arrival.process=poisson"}) ==
        "<test>:9:44: error: workload.arrival.clients: 'clients' does not apply to process: poisson");
  // a list replaces a list
  const std::string emp = "workload.prompt_tokens={dist: empirical, values: [10, 20]}";
  CHECK(test::scenario(kGood, {emp, "workload.prompt_tokens.values=[30, 40, 50]"}).classes[0].prompt.values.size() ==
        3);
  // an error inside the new value is located at the --set that gave it
  CHECK(error_of(closed, {"workload.arrival={process: poisson, rate_per_s: 40, clients: 8}"}) ==
        "--set workload.arrival={process: poisson, rate_per_s: 40, clients: 8}: error: workload.arrival.clients: "
        "'clients' does not apply to process: poisson");
  CHECK(error_of(closed, {"workload.arrival={process: poisson}"}) ==
        "--set workload.arrival={process: poisson}: error: workload.arrival: missing required key 'rate_per_s'");
  // a required key a --set emptied is located at that --set
  CHECK(error_of(kGood, {"workload.arrival.rate_per_s=null"}) ==
        "--set workload.arrival.rate_per_s=null: error: workload.arrival: missing required key 'rate_per_s'");
  CHECK(error_of(kGood, {emp, "workload.prompt_tokens.values=[30, x]"}) ==
        "--set workload.prompt_tokens.values=[30, x]: error: workload.prompt_tokens.values[1]: expected a number, got "
        "'x'");
  // the later of two overlapping --set owns what it set
  CHECK(error_of(kGood, {"workload.arrival.rate_per_s=x", "workload.arrival={process: poisson, rate_per_s: y}"}) ==
        "--set workload.arrival={process: poisson, rate_per_s: y}: error: workload.arrival.rate_per_s: expected a "
        "number, got 'y'");
  CHECK(error_of(kGood, {to_poisson, "workload.arrival.rate_per_s=x"}) ==
        "--set workload.arrival.rate_per_s=x: error: workload.arrival.rate_per_s: expected a number, got 'x'");
  // a mapping a --set creates on its way is the --set's too
  CHECK(error_of(kGood, {"engine.nonesuch.x=1"})
            .rfind("--set engine.nonesuch.x=1: error: engine.nonesuch: unknown key", 0) == 0);
  CHECK(error_of(kGood, {"workload.arrival={process: poisson"})
            .rfind("--set workload.arrival={process: poisson: error: value is not valid YAML", 0) == 0);
  // a catalog entry by its dotted name, whole
  const Scenario c = test::scenario(
      kGood, {"catalog.models.my-3.5b={params_b: 3.5, layers: 24, hidden: 3072, heads: 24, kv_heads: 8, head_dim: 128, "
              "intermediate: 8192, vocab: 32000, max_context: 8192}",
              "model=my-3.5b"});
  CHECK(c.pools[0].model.name == "my-3.5b");
}

TEST_CASE("--set of a sweep parameter: a new dotted path, and values located at the --set") {
  const std::string yaml = kGood + "sweep:\n  parameters:\n    fleet.replicas: [1, 2]\n";
  const auto src = [&](const std::vector<std::string>& sets) {
    return ScenarioSource::from_text(yaml, "<test>", FLEETSIM_SOURCE_DIR).with_overrides(parse_sets(sets));
  };
  const SweepSpec spec = parse_sweep(src({"sweep.parameters.engine.max_num_seqs=[16, 32, 64]"}));
  REQUIRE(spec.params.size() == 2);
  CHECK(spec.params[1].path == "engine.max_num_seqs");
  CHECK(spec.count() == 6);
  const auto sweep_error = [&](const std::vector<std::string>& sets) {
    try {
      parse_sweep(src(sets));
    } catch (const InputError& e) {
      return e.one_line();
    }
    return std::string("(no error)");
  };
  CHECK(sweep_error({"sweep.parameters={fleet.replicas: [1, x]}"}) ==
        "--set sweep.parameters={fleet.replicas: [1, x]}: error: fleet.replicas: expected a number, got 'x'");
  CHECK(sweep_error({"sweep.parameters.engine.max_num_seqs=[16, x]"}) ==
        "--set sweep.parameters.engine.max_num_seqs=[16, x]: error: engine.max_num_seqs: expected a number, got 'x'");
}

TEST_CASE("whether a scenario is a sweep is read from its YAML, overrides included, not from its text") {
  const auto src = [](const std::string& yaml) { return ScenarioSource::from_text(yaml, "<test>", "."); };
  CHECK(has_sweep_section(src(kGood + "sweep:\n  parameters:\n    fleet.replicas: [1, 2]\n")));
  CHECK_FALSE(has_sweep_section(src("# not a sweep: see sweep-fleet.yaml\n" + kGood)));
  CHECK_FALSE(has_sweep_section(src(replace(kGood, "name: t", "name: 'sweep: no'"))));
  CHECK(has_sweep_section(src(kGood).with_overrides(parse_sets({"sweep={parameters: {fleet.replicas: [1, 2]}}"}))));
}

TEST_CASE("engine settings that contradict each other are refused") {
  CHECK(error_of(kGood, {"engine.max_batch=4"}).find("max_batch and batch_window_s apply to static batching only") !=
        std::string::npos);
  CHECK(error_of(kGood, {"engine.max_num_seqs=512", "engine.max_batched_tokens=256"}).find("must be >= max_num_seqs") !=
        std::string::npos);
  CHECK(error_of(kGood, {"engine.mfu=0.5", "engine.perf_model=linear", "engine.step_base_s=0.01"})
            .find("mfu belongs to perf_model: roofline") != std::string::npos);
  CHECK(error_of(kGood, {"engine.perf_model=linear"}).find("missing required key 'step_base_s'") != std::string::npos);
}

TEST_CASE("traces load in all three column layouts") {
  const std::string native =
      test::write_temp("native.csv", "timestamp_s,prompt_tokens,output_tokens\n0.5,10,5\n1.5,20,6\n");
  const std::string splitwise =
      test::write_temp("sw.csv", "arrived_at,num_prefill_tokens,num_decode_tokens\n0.5,10,5\n1.5,20,6\n");
  const std::string azure = test::write_temp(
      "az.csv",
      "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.5000000,10,5\n2023-11-16 18:15:47.5000000,20,6\n");
  for (const auto& path : {native, splitwise, azure}) {
    const Scenario s = test::scenario(
        "duration_s: 100\nwarmup_s: 0\ndevice: h100-sxm-80gb\nmodel: llama-3.1-8b\nfleet: {replicas: 1}\n"
        "workload: {arrival: {process: trace, path: " +
        path + "}}\n");
    REQUIRE(s.classes[0].trace->t_s.size() == 2);
    CHECK(s.classes[0].trace->t_s[1] - s.classes[0].trace->t_s[0] == doctest::Approx(1.0));
    CHECK(s.classes[0].trace->prompt[1] == 20);
    CHECK(s.classes[0].trace->output[0] == 5);
    const auto r = test::run(s);
    CHECK(r.all->completed == 2);
    CHECK(r.all->input_tokens == 30);
  }
  const std::string bad = test::write_temp("bad.csv", "timestamp_s,prompt_tokens,output_tokens\n0.5,10,5\n0.2,10,6\n");
  CHECK(error_of("duration_s: 100\ndevice: h100-sxm-80gb\nmodel: llama-3.1-8b\nfleet: {replicas: 1}\n"
                 "workload: {arrival: {process: trace, path: " +
                 bad + "}}\n") == "<test>:5:44: error: workload.arrival.path: " + bad +
                                      ":3:1: error: timestamps go backwards (a trace must be sorted by arrival time)");
}

TEST_CASE("the Azure conversation trace replays every request in the window") {
  const Scenario s = load_scenario_file(std::string(FLEETSIM_SOURCE_DIR) + "/scenarios/azure-conv-replay.yaml");
  const auto r = test::run(s);
  int64_t in_window = 0;
  for (double t : s.classes[0].trace->t_s) in_window += (t >= s.warmup_s && t < s.duration_s) ? 1 : 0;
  CHECK(r.all->arrived == in_window);
  CHECK(r.all->arrived == r.all->completed + r.all->rejected_queue_full + r.all->rejected_too_long);
  CHECK(r.drained);
}

TEST_CASE("every shipped scenario validates and runs") {
  for (const char* name :
       {"chat-default", "azure-conv-replay", "azure-code-bursty", "rag-embedding", "static-batching",
        "long-context-70b", "chat-azure-empirical", "interactive-and-batch", "autoscale-host-cpu", "scale-to-zero",
        "oom-restart-loop", "spot-vs-on-demand", "mig-small-model", "prefix-and-response-cache", "time-slicing",
        "lora-separate", "lora-consolidated", "mooncake-replay"}) {
    CAPTURE(name);
    const Scenario s = load_scenario_file(std::string(FLEETSIM_SOURCE_DIR) + "/scenarios/" + name + ".yaml",
                                          {"duration_s=600", "warmup_s=60"});
    const auto r = test::run(s);
    CHECK(r.tally->status == 0);
    CHECK(r.all->completed > 0);
    CHECK(r.all->arrived == r.all->completed + r.all->rejected_queue_full + r.all->rejected_too_long + r.all->failed);
    CHECK(r.drained);
  }
}

TEST_CASE("pools and classes: defaults inherited, names checked") {
  const std::string yaml =
      "duration_s: 100\nmodel: llama-3.1-8b\ndevice: h100-sxm-80gb\nengine: {max_num_seqs: 32}\n"
      "pools:\n  a: {fleet: {replicas: 1}}\n  b: {device: l4-24gb, fleet: {replicas: 3}, engine: {max_batched_tokens: "
      "2048}}\n"
      "workload: {prompt_tokens: 100, output_tokens: 10}\n"
      "classes:\n  x: {pool: a, arrival: {process: poisson, rate_per_s: 1}}\n"
      "  y: {pool: b, team: t, arrival: {process: poisson, rate_per_s: 2, start_s: 50}}\n";
  const Scenario s = test::scenario(yaml);
  REQUIRE(s.pools.size() == 2);
  CHECK(s.pools[1].device.name == "l4-24gb");
  CHECK(s.pools[1].max_num_seqs == 32);          // from the top-level engine
  CHECK(s.pools[1].max_batched_tokens == 2048);  // its own
  CHECK(s.pools[0].replicas == 1);
  CHECK(s.classes[1].pool == 1);
  CHECK(s.classes[1].team == "t");
  CHECK(s.classes[0].team == "x");
  CHECK(s.classes[1].start_s == 50);
  const auto r = test::run(s);
  CHECK(r.drained);
  CHECK(r.tally->classes[1].arrived > 50);
  CHECK(error_of(replace(yaml, "pool: b, team", "pool: c, team")).find("classes.y.pool: unknown pool 'c'") !=
        std::string::npos);
  CHECK(error_of(replace(yaml, "  x: {pool: a, ", "  x: {")).find("classes.x: missing required key 'pool'") !=
        std::string::npos);
  CHECK(error_of(replace(yaml, "  b: {device: l4-24gb,", "  b: {devic: l4-24gb,"))
            .find("pools.b.devic: unknown key 'devic'") != std::string::npos);
}

TEST_CASE("a scenario's catalog overrides built-in fields and adds devices and models") {
  const std::string yaml =
      "duration_s: 100\ndevice: my-gpu\nmodel: tiny\nfleet: {replicas: 1}\n"
      "workload: {arrival: {process: poisson, rate_per_s: 1}, prompt_tokens: 100, output_tokens: 10}\n"
      "catalog:\n"
      "  devices:\n"
      "    h100-sxm-80gb: {usd_per_hour: 2.10}\n"
      "    my-gpu: {memory_gib: 40, bandwidth_gb_s: 900, bf16_tflops: 180, usd_per_hour: 0.9}\n"
      "  models:\n"
      "    tiny: {params_b: 0.5, layers: 12, hidden: 1024, heads: 16, kv_heads: 4, head_dim: 64,\n"
      "           intermediate: 4096, vocab: 32000, max_context: 4096}\n";
  const Scenario s = test::scenario(yaml);
  CHECK(s.pools[0].device.memory_gib == 40);
  CHECK(s.pools[0].usd_per_hour == doctest::Approx(0.9));
  CHECK(s.pools[0].capacity.kv_bytes_per_token == 2.0 * 12 * 4 * 64 * 2);
  CHECK(test::scenario(yaml, {"device=h100-sxm-80gb"}).pools[0].usd_per_hour == doctest::Approx(2.10));
  CHECK(test::scenario(yaml, {"device=h100-sxm-80gb"}).pools[0].device.memory_gib == doctest::Approx(79.22));
  CHECK(error_of(replace(yaml, "bandwidth_gb_s: 900, ", "")) ==
        "<test>:9:13: error: catalog.devices.my-gpu: new device 'my-gpu' needs 'bandwidth_gb_s'");
  CHECK(error_of(yaml, {"device=my-gpx"}) ==
        "--set device=my-gpx: error: device: unknown device 'my-gpx' (did you mean 'my-gpu'?)");
}

TEST_CASE("catalog models: a layout no engine runs, or figures that change nothing, are located errors") {
  const std::string base =
      "duration_s: 100\ndevice: h100-sxm-80gb\nmodel: llama-3.1-8b\nfleet: {replicas: 1}\n"
      "workload: {arrival: {process: poisson, rate_per_s: 1}, prompt_tokens: 100, output_tokens: 10}\n";
  auto with = [&](const std::string& model) { return base + "catalog: {models: {" + model + "}}\n"; };
  CHECK(error_of(with("llama-3.1-8b: {kv_heads: 12}")) ==
        "<test>:6:34: error: catalog.models.llama-3.1-8b: heads (32) must be a multiple of kv_heads (12): each KV "
        "head serves an equal group of query heads");
  CHECK(error_of(with("llama-3.1-8b: {experts_per_token: 2}")) ==
        "<test>:6:54: error: catalog.models.llama-3.1-8b.experts_per_token: experts_per_token is for a mixture of "
        "experts; this model has none (set experts)");
  CHECK(error_of(with("llama-3.1-8b: {params_b: 0.001}")) ==
        "<test>:6:45: error: catalog.models.llama-3.1-8b.params_b: params_b 0.001 is below what the architecture "
        "holds: at least 5.63 billion (layers x (attention + MLP) + vocab x hidden)");
  // an inherited experts_per_token is reported where the user wrote experts
  CHECK(error_of(replace(with("mixtral-8x7b: {experts: 1}"), "llama-3.1-8b", "mixtral-8x7b")) ==
        "<test>:6:44: error: catalog.models.mixtral-8x7b.experts: experts_per_token (2) must be <= experts (1)");
  // a window no layer uses, a rotary key without a latent: refused, not ignored
  CHECK(error_of(with("llama-3.1-8b: {sliding_window: 4096}"))
            .find("catalog.models.llama-3.1-8b.sliding_window: sliding_window needs sliding_layers") !=
        std::string::npos);
  CHECK(error_of(with("llama-3.1-8b: {rope_head_dim: 64}"))
            .find("catalog.models.llama-3.1-8b.rope_head_dim: rope_head_dim is the rotary part") != std::string::npos);
  // every built-in model passes the checks a scenario's model must
  for (const ModelSpec& m : builtin_models())
    CHECK_MESSAGE(error_of(with(m.name + ": {notes: x}")) == "(no error)", m.name);
}

TEST_CASE("a trace class beside others takes no lengths from the workload, which are the others' default") {
  const std::string csv =
      test::write_temp("mix_trace.csv", "timestamp_s,prompt_tokens,output_tokens\n0,10,5\n1,20,6\n");
  const std::string y =
      "duration_s: 30\nwarmup_s: 0\ndevice: h100-sxm-80gb\nmodel: llama-3.1-8b\nfleet: {replicas: 1}\n"
      "workload: {prompt_tokens: 100, output_tokens: 10}\n"
      "classes:\n  chat: {arrival: {process: poisson, rate_per_s: 1}}\n"
      "  replay: {arrival: {process: trace, path: " +
      csv + "}}\n";
  CHECK(error_of(y) == "(no error)");
  const Scenario s = test::scenario(y);
  CHECK(s.classes[1].mean_output_tokens == doctest::Approx(5.5));
  // lengths given on the trace class itself are still refused
  std::string own = y;
  own.replace(own.find("path: " + csv + "}"), ("path: " + csv + "}").size(), "path: " + csv + "}, prompt_tokens: 5");
  CHECK(error_of(own).find("a trace supplies its own lengths") != std::string::npos);
}

TEST_CASE("a sweep section whose anchor the scenario uses after it is not cut from the runs' text") {
  const std::string y =
      "duration_s: 60\ndevice: h100-sxm-80gb\nmodel: llama-3.1-8b\nfleet: {replicas: 1}\n"
      "sweep:\n  parameters:\n    fleet.replicas: [1, 2]\n  seed: &s 5\n"
      "workload: {arrival: {process: poisson, rate_per_s: 1}, prompt_tokens: 100, output_tokens: *s}\n";
  CHECK(error_of(y) == "(no error)");
}

TEST_CASE("trace_end: every class is checked against the run's length, not the longest run allowed") {
  // the trace's last request at 30 s: a class starting at 1,000 s would send nothing; a closed loop
  // answered by the response cache sends 400 a second for 30 s, not for the 30 days read before
  const std::string trace = test::write_temp("te_end.csv",
                                             "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n"
                                             "100,ChatGPT,472,18,490,Conversation log\n"
                                             "130,ChatGPT,20,5,25,API log\n");
  const std::string base =
      "duration_s: trace_end\ndevice: h100-sxm-80gb\nmodel: llama-3.1-8b\nfleet: {replicas: 1}\n"
      "classes:\n  replay: {arrival: {process: trace, path: " +
      trace + "}}\n";
  CHECK(test::error_of(base + "  extra: {arrival: {process: poisson, rate_per_s: 1, start_s: 1000}, "
                              "prompt_tokens: 10, output_tokens: 10}\n")
            .find(":7:63: error: classes.extra.arrival.start_s: value 1000 is out of range (expected start_s in "
                  "[0, 30])") != std::string::npos);
  const Scenario s = test::scenario(base +
                                    "  faq: {arrival: {process: concurrency, clients: 400, think_time_s: 1}, "
                                    "response_cache: {hit_rate: 1, latency_s: 0}, prompt_tokens: 100, "
                                    "output_tokens: 10}\n");
  CHECK(s.duration_s == doctest::Approx(30.0));
  CHECK(s.inputs.size() == 1);  // read twice, listed once (a sweep's fingerprint hashes each)
  REQUIRE(s.classes.size() == 2);
  CHECK(s.classes[1].stop_s <= s.duration_s);
}
