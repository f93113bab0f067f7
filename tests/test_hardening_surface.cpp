// The second round of hostile input: YAML aliases that loop or explode, names that would inject
// into CSV, Markdown or a terminal, inputs sized to exhaust memory or time, and the rest that
// crashed, hung or was silently taken. Each is an exact error or value here.
#include <doctest/doctest.h>

#include <string>

#include "helpers.hpp"
#include "libsim/base/text.hpp"
#include "libsim/calibrate/benchmark.hpp"
#include "libsim/check/budget.hpp"
#include "libsim/cost/ledger.hpp"
#include "libsim/input/csv.hpp"
#include "libsim/input/trace.hpp"
#include "libsim/report/report.hpp"
#include "libsim/sweep/sweep.hpp"

using namespace fleetsim;

namespace {

const char* const kSmall =
    "name: small\nduration_s: 120\nwarmup_s: 10\ndevice: h100-sxm-80gb\nmodel: llama-3.1-8b\n"
    "fleet: {replicas: 1}\nworkload:\n  arrival: {process: poisson, rate_per_s: 2}\n"
    "  prompt_tokens: 200\n  output_tokens: 20\n";

// Nine levels of ten aliases each: 10^9 nodes once expanded, in nine lines.
std::string billion_laughs() {
  std::string t = "a: &a [x, x, x, x, x, x, x, x, x, x]\n";
  for (char c = 'b'; c <= 'i'; ++c) {
    t += std::string(1, c) + ": &" + c + " [";
    for (int i = 0; i < 10; ++i) t += std::string(i ? ", *" : "*") + char(c - 1);
    t += "]\n";
  }
  return t;
}

}  // namespace

TEST_CASE("an alias that refers to its own mapping is a located error, in a file and in --set") {
  CHECK(test::error_of("catalog: &c {models: *c}\n") ==
        "<test>:1:14: error: an alias (*name) refers to a mapping or list that holds it: a value cannot contain "
        "itself");
  CHECK(test::error_of("a: &l [1, *l]\n") ==
        "<test>:1:4: error: an alias (*name) refers to a mapping or list that holds it: a value cannot contain "
        "itself");
  CHECK(test::error_of(kSmall, {"catalog=&c {models: *c}"}) ==
        "--set catalog=&c {models: *c}: error: value: an alias (*name) refers to a mapping or list that holds it: a "
        "value cannot contain itself");
  // the same guard on a budgets file
  const std::string budgets = test::write_temp("loop-budgets.yaml", "budgets: &b {x: *b}\n");
  CHECK(test::input_error([&] { parse_budgets(budgets, {}); }) ==
        budgets +
            ":1:14: error: an alias (*name) refers to a mapping or list that holds it: a value cannot "
            "contain itself");
}

TEST_CASE("a billion laughs is refused at the key whose aliases expand past the cap, deep nesting too") {
  CHECK(test::error_of(billion_laughs()) ==
        "<test>:6:1: error: the document stands for more than 200000 YAML nodes once its aliases (*name) are "
        "expanded; fleetsim reads at most that");
  CHECK(test::error_of("a: " + std::string(100, '[') + std::string(100, ']') + "\n") ==
        "<test>:1:67: error: nested more than 64 levels deep");
  // an alias used more than once, within the caps, is still a plain alias
  CHECK(test::error_of(std::string(kSmall) + "description: &d text\nx_unused: *d\n").find("unknown key 'x_unused'") !=
        std::string::npos);
}

TEST_CASE("CSV cells a spreadsheet would run as formulas are written as text, numbers are not touched") {
  CHECK(csv_quote("=1+1") == "'=1+1");
  CHECK(csv_quote("+cmd|' /c calc'!A1") == "'+cmd|' /c calc'!A1");
  CHECK(csv_quote("@SUM(A1)") == "'@SUM(A1)");
  CHECK(csv_quote("-2+3") == "'-2+3");
  CHECK(csv_quote("\tx") == "'\tx");
  CHECK(csv_quote("=a,b") == "\"'=a,b\"");
  CHECK(csv_quote("-0.5") == "-0.5");
  CHECK(csv_quote("+3e-2") == "+3e-2");
  CHECK(csv_quote("-") == "'-");
  CHECK(csv_quote("a=b") == "a=b");
  // every CSV output goes through it: the run's, the ledger's and FOCUS's
  const Scenario s = test::scenario(
      "name: '=1+1'\nduration_s: 120\nmodel: llama-3.1-8b\npools:\n"
      "  '=x': {device: h100-sxm-80gb, fleet: {replicas: 1}}\nclasses:\n"
      "  '@c': {pool: '=x', team: '+t', arrival: {process: poisson, rate_per_s: 2}, prompt_tokens: 200, "
      "output_tokens: 20}\n");
  const test::Result r = test::run(s);
  CHECK(json_to_csv(r.report).find(",'=1+1,") != std::string::npos);
  const Ledger l = make_ledger(s, *r.tally);
  CHECK(ledger_csv(l).find("\npool,'=x,") != std::string::npos);
  CHECK(ledger_csv(l).find("\nclass,'@c,") != std::string::npos);
  CHECK(focus_csv(l, s, 0).find(",'=1+1/=x,'=x,") != std::string::npos);
}

TEST_CASE("control characters and line breaks never reach a terminal or a Markdown table as themselves") {
  CHECK(printable("a\nb\x1b[31m\x07") == "a\\nb\\e[31m\\x07");
  CHECK(printable("tab\there\r") == "tab\\there\\r");
  CHECK(printable("\xC2\x9B"
                  "2J caf\xC3\xA9") == "\\u{9B}2J caf\xC3\xA9");  // C1 CSI written out; é kept
  CHECK(markdown_cell("a|b\n## injected") == "a\\|b\\n## injected");
  // names are refused at load; a file name that holds one is written out in the run table
  CHECK(test::error_of("name: \"a\\nb\"\n") ==
        "<test>:1:7: error: name: a name cannot hold a line break, tab or other control character: a\\nb");
  CHECK(test::error_of(std::string(kSmall) + "catalog:\n  devices:\n    \"x\\ty\": {}\n")
            .find("a key cannot hold a line break, tab or other control character: x\\ty") != std::string::npos);
  const test::Result r = test::run(test::scenario(kSmall));
  Json doc = r.report;
  doc["scenario"]["name"] = "evil\n\x1b[2Jname";
  const std::string table = format_run_table(doc);
  CHECK(table.find("evil\\n\\e[2Jname") != std::string::npos);
  CHECK(table.find('\x1b') == std::string::npos);
  // an error message that quotes input writes it out too
  CHECK(InputError(Location{"f\x1b.yaml", 1, 1, ""}, "bad \x07").one_line() == "f\\e.yaml:1:1: error: bad \\x07");
}

TEST_CASE("sizes are bounded before anything is built: sweep values, budget windows") {
  const ScenarioSource big_range = ScenarioSource::from_text(
      std::string(kSmall) + "sweep:\n  parameters:\n    seed: {from: 0, to: 100000, step: 0.5}\n", "<test>", ".");
  CHECK(test::input_error([&] { parse_sweep(big_range); }) ==
        "<test>:13:11: error: sweep.parameters.seed: the range has 200001 values; a range takes at "
        "most 100000 (raise step)");
  const ScenarioSource tiny_step = ScenarioSource::from_text(
      std::string(kSmall) + "sweep:\n  parameters:\n    seed: {from: 1, to: 2, step: 1e-300}\n", "<test>", ".");
  CHECK(test::input_error([&] { parse_sweep(tiny_step); }).find("the range has 1e+300 values;") != std::string::npos);
  std::string list = "[1";
  for (int i = 2; i <= 10001; ++i) list += ", " + std::to_string(i);
  const ScenarioSource long_list = ScenarioSource::from_text(
      std::string(kSmall) + "sweep:\n  parameters:\n    seed: " + list + "]\n", "<test>", ".");
  CHECK(test::input_error([&] { parse_sweep(long_list); }) ==
        "<test>:13:11: error: sweep.parameters.seed: 10001 values; a list takes at most 10000 (a range {from, to, "
        "step} takes 100000)");
  const std::string budgets = test::write_temp("tiny-window.yaml",
                                               "budgets:\n  p99:\n    metric: latency_s.ttft.p99\n    max: 1\n"
                                               "    window_s: 0.005\n");
  CHECK(test::input_error([&] { validate_budgets(test::scenario(kSmall), parse_budgets(budgets, {})); }) ==
        budgets +
            ":5:15: error: budgets.p99: window_s 0.005 cuts the measured 110 s into 22000 windows; at most 1000 "
            "(window_s >= 0.11)");
}

TEST_CASE("the rest of the second round: each a located error, or the value run gives") {
  // a number beyond a double in a benchmark result
  const std::string huge = test::write_temp("huge.json", "{\"mean_ttft_ms\": 1e400}\n");
  CHECK(test::input_error([&] { read_benchmarks(huge, {}); }) ==
        huge + ":1:18: error: number out of range (beyond a double): 1e400");
  // MPS shares a GPU; a CPU instance has none
  CHECK(test::error_of(kSmall, {"device=c7i-8xlarge-amx", "mps=2"}) ==
        "--set mps=2: error: mps: MPS shares an NVIDIA GPU between processes; c7i-8xlarge-amx is a CPU instance (run "
        "more replicas, or remove mps)");
  // so does a cap on one client's threads, and time slicing; a CPU instance holds no CUDA context
  CHECK(test::error_of(kSmall, {"device=c7i-8xlarge-amx", "mps={clients: 1, active_thread_percentage: 50}"})
            .find("error: mps: MPS shares an NVIDIA GPU between processes; c7i-8xlarge-amx is a CPU instance") !=
        std::string::npos);
  CHECK(test::error_of(kSmall, {"device=c7i-8xlarge-amx", "time_slicing=2"}) ==
        "--set time_slicing=2: error: time_slicing: time slicing shares an NVIDIA GPU between pods; c7i-8xlarge-amx "
        "is a CPU instance (run more replicas, or remove time_slicing)");
  CHECK(test::error_of(kSmall, {"device=c7i-8xlarge-amx", "engine.cuda_context_gib=2"}) ==
        "--set engine.cuda_context_gib=2: error: engine.cuda_context_gib: a CUDA context takes a GPU's memory; "
        "c7i-8xlarge-amx is a CPU instance (remove cuda_context_gib)");
  // a CPU fallback moves a GPU replica onto its host; a CPU instance is there already
  CHECK(test::error_of(kSmall, {"device=c7i-8xlarge-amx", "fleet.faults={cpu_fallback: {share: 0.5}}"}) ==
        "--set fleet.faults={cpu_fallback: {share: 0.5}}: error: fleet.faults.cpu_fallback: a CPU fallback moves a "
        "replica off its GPU onto the host; c7i-8xlarge-amx is a CPU instance already (remove fleet.faults)");
  // a trace row with a field more than its header: an unquoted comma moved the columns
  const std::string extra =
      test::write_temp("extra.csv", "timestamp_s,prompt_tokens,output_tokens\n0,5,5\n1,5,5,oops\n");
  CHECK(test::input_error([&] { load_trace(extra); }) ==
        extra + ":3:1: error: 4 fields, but the header has 3 (quote a field that holds a comma)");
  // a run document whose metric is a string is refused with its JSON path
  const test::Result r = test::run(test::scenario(kSmall));
  Json doc = r.report;
  CHECK_NOTHROW(check_run_document(doc, "run.json"));
  doc["latency_s"]["ttft"]["p99"] = "fast";
  CHECK(test::input_error([&] { check_run_document(doc, "run.json"); }) ==
        "run.json: error: /latency_s/ttft/p99: expected a number or null, got \"fast\" (a run document from "
        "`fleetsim run --format json`)");
  // ... and so is a section, an array or an array's element of the wrong kind
  auto refused = [&](const char* pointer, const Json& value) {
    Json d = r.report;
    d["timeline"] = Json::array({{{"t0_s", 0.0}, {"t1_s", 1.0}, {"usd", 0.0}}});
    CHECK_NOTHROW(check_run_document(d, "run.json"));
    d[Json::json_pointer(pointer)] = value;
    return test::input_error([&] { check_run_document(d, "run.json"); });
  };
  CHECK(refused("/ledger", 5).find("/ledger: expected an object, got 5") != std::string::npos);
  CHECK(refused("/cost/total_usd", Json::object()).find("/cost/total_usd: expected a number or null, got {}") !=
        std::string::npos);
  CHECK(refused("/latency_s/ttft/cdf", "x").find("/latency_s/ttft/cdf: expected an array") != std::string::npos);
  CHECK(refused("/timeline/0/t0_s", "x").find("/timeline/0/t0_s: expected a number or null") != std::string::npos);
  CHECK(refused("/ledger/pricing/0/category", 5).find("/ledger/pricing/0/category: expected a string") !=
        std::string::npos);
  // a swept string that YAML would read as a mapping runs as the same string `run` takes
  const ScenarioSource colon = ScenarioSource::from_text(
      std::string(kSmall) + "sweep:\n  parameters:\n    name: [\"a: b\", plain]\n", "<test>", ".");
  const SweepSpec spec = parse_sweep(colon);
  CHECK(spec.params[0].values[0] == "\"a: b\"");
  CHECK(spec.params[0].values[1] == "plain");
  CHECK(colon.instantiate(spec.overrides(0)).name == "a: b");
  CHECK(test::scenario(kSmall, {"name=\"a: b\""}).name == "a: b");
  // a journal that cannot be created is an output error (exit 3), not an input error
  CHECK_THROWS_AS(SweepJournal::create(test::temp_path("no-such-dir/j.jsonl"), colon, spec, 0, 1), OutputError);
}

TEST_CASE("a key written without its unit is pointed to the key with it") {
  CHECK(did_you_mean("rate", {"process", "rate_per_s", "path", "clients"}) == "rate_per_s");
  CHECK(did_you_mean("duration", {"duration_s", "warmup_s", "seed"}) == "duration_s");
  CHECK(did_you_mean("rout", {"router", "replicas"}) == "router");  // a typo still by edit distance
  CHECK(test::error_of(kSmall, {"workload.arrival.rate=20"}) ==
        "--set workload.arrival.rate=20: error: workload.arrival.rate: unknown key 'rate' (did you mean "
        "'rate_per_s'?)");
}

TEST_CASE("an error in a long --set names it cut to a line") {
  std::string list = "[1";
  for (int i = 2; i <= 20000; ++i) list += ", " + std::to_string(i);
  const std::string e = test::error_of(kSmall, {"name=" + list + "]"});
  CHECK(e.size() < 400);
  CHECK(e.rfind("--set name=[1, 2, 3, ", 0) == 0);
  CHECK(e.find("\xe2\x80\xa6 (" + std::to_string(6 + list.size()) + " characters): error: name: ") !=
        std::string::npos);
}

TEST_CASE("the third round: empty names and settings, keys that are not names, deep nesting, traces") {
  const std::string pools = "pools:\n  \"\": {fleet: {replicas: 1}}\n";
  CHECK(test::error_of(std::string(kSmall) + pools).find("expected a pool name, got an empty one") !=
        std::string::npos);
  CHECK(test::error_of(std::string(kSmall) + "classes:\n  \" \": {arrival: {process: poisson, rate_per_s: 1}}\n")
            .find("expected a class name, got an empty one") != std::string::npos);
  CHECK(test::error_of(kSmall, {"engine.perf_profile=\"\""}) ==
        "--set engine.perf_profile=\"\": error: engine.perf_profile: expected a profile's name or file, auto or none, "
        "not an empty string");
  CHECK(test::error_of(kSmall, {"workload.prompt_tokens={dist: empirical, values: [10, 100], column: a}"})
            .find("give either csv and column, or values (and weights), not both") != std::string::npos);
  // a key that is a list, in a section merged into every pool
  CHECK(test::error_of(std::string(kSmall) + "engine: {[x]: 1}\npools: {a: {}}\n")
            .find("a key must be a plain name, not a list or a mapping") != std::string::npos);
  // nesting far past the limit meets the parser's own guard: the same message as just past it
  const std::string deep = std::string(kSmall) + "description: " + std::string(10000, '[') + std::string(10000, ']');
  CHECK(test::error_of(deep).find("nested more than 64 levels deep") != std::string::npos);
  // an empty model filter keeps nothing out: refused
  const std::string trace = test::write_temp("t3.csv", "timestamp_s,prompt_tokens,output_tokens\n0,5,5\n1,5,5\n");
  CHECK(test::error_of(std::string(kSmall), {"workload.arrival={process: trace, path: " + trace + ", model: \"\"}"})
            .find("expected the model whose rows to keep, not an empty string") != std::string::npos);
  // a trace's span is at most a year; a JSON row with a key twice is an error, not its last value
  const std::string far = test::write_temp("far.csv", "timestamp_s,prompt_tokens,output_tokens\n0,5,5\n1e308,5,5\n");
  CHECK(test::input_error([&] { load_trace(far); }) ==
        far + ":3:1: error: 1e+308 s after the first row: a trace spans at most a year");
  const std::string twice = test::write_temp(
      "twice.jsonl",
      "{\"timestamp\": 0, \"input_length\": 100, \"output_length\": 10, \"hash_ids\": [1], \"timestamp\": 5}\n");
  CHECK(test::input_error([&] { load_trace(twice); }).find("\"timestamp\" written twice in this row") !=
        std::string::npos);
}
