// Inputs that once crashed, hung or were silently misread: each now a located input error.
#include <doctest/doctest.h>

#include <string>

#include "helpers.hpp"
#include "libsim/base/error.hpp"
#include "libsim/core/workspace.hpp"
#include "libsim/input/input_file.hpp"
#include "libsim/input/profile.hpp"
#include "libsim/input/trace.hpp"
#include "libsim/input/yaml_node.hpp"
#include "libsim/sweep/sweep.hpp"

using namespace fleetsim;

namespace {
std::string trace_error(const std::string& path) {
  try {
    load_trace(path);
  } catch (const InputError& e) {
    return e.one_line();
  }
  return "no error";
}
}  // namespace

TEST_CASE("trace timestamps: hex numbers and impossible dates are errors on their own row") {
  const std::string hex = test::write_temp("hex.csv", "timestamp_s,prompt_tokens,output_tokens\n0,5,5\n0x10,5,5\n");
  CHECK(trace_error(hex).find(":3:1: error: bad timestamp '0x10'") != std::string::npos);
  const std::string inf = test::write_temp("inf.csv", "timestamp_s,prompt_tokens,output_tokens\ninf,5,5\n");
  CHECK(trace_error(inf).find(":2:1: error: bad timestamp 'inf'") != std::string::npos);
  const std::string feb = test::write_temp("feb.csv",
                                           "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-02-28 "
                                           "00:00:00,5,5\n2023-02-31 00:00:00,5,5\n2023-03-01 00:00:00,5,5\n");
  CHECK(trace_error(feb).find(":3:1: error: bad TIMESTAMP '2023-02-31 00:00:00'") != std::string::npos);
  // 29 February exists in a leap year only
  const std::string leap = test::write_temp(
      "leap.csv", "TIMESTAMP,ContextTokens,GeneratedTokens\n2024-02-29 00:00:00,5,5\n2024-03-01 00:00:00,5,5\n");
  CHECK(load_trace(leap).t_s.back() == 86400.0);
  const std::string noleap =
      test::write_temp("noleap.csv", "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-02-29 00:00:00,5,5\n");
  CHECK(trace_error(noleap).find("bad TIMESTAMP") != std::string::npos);
}

TEST_CASE("a trace path that is not a regular file is refused before any read (no unbounded /dev/zero line)") {
  CHECK(trace_error("/dev/zero").find("not a regular file") != std::string::npos);
  CHECK(trace_error("/tmp").find("not a regular file") != std::string::npos);
  CHECK(trace_error("/nonexistent/trace.csv").find("cannot open file") != std::string::npos);
}

// Every input file (scenario, budgets, profile, shard, report input, benchmark) is read by
// read_text_file: a path that cannot be one is an input error, never a filesystem exception
// (exit 1), an endless read (/dev/zero) or a silent default (an empty path).
TEST_CASE("input files: directories, devices, unresolvable and over-long paths, and size limits are input errors") {
  auto err = [](const std::string& path, uint64_t max = kMaxTextInputBytes) {
    return test::input_error([&] { read_text_file(path, "scenario file", max); });
  };
  CHECK(err("/tmp") == "/tmp: error: is a directory, not a scenario file");
  CHECK(err("/dev/zero") == "/dev/zero: error: not a regular file or a pipe (a scenario file is expected)");
  CHECK(err("") == "fleetsim: error: an empty path names no scenario file");
  CHECK(err("/nonexistent/x.yaml") ==
        "/nonexistent/x.yaml: error: cannot open scenario file (No such file or directory; does it exist and is it "
        "readable?)");
  const std::string long_name = "/tmp/" + std::string(300, 'a');
  CHECK(err(long_name).find("(File name too long;") != std::string::npos);
  const std::string two_mib = test::write_temp("two_mib.yaml", std::string(2 << 20, '#'));
  CHECK(err(two_mib, 1 << 20) == two_mib + ": error: larger than 1 MiB, more than a scenario file can be");
  CHECK(err(two_mib, 4 << 20) == "(no error)");
  // the callers go through it
  CHECK_THROWS_AS(load_scenario_file("/dev/zero"), InputError);
  CHECK_THROWS_AS(load_scenario_file(long_name), InputError);
  CHECK_THROWS_AS(read_json_file("/dev/zero"), InputError);
  CHECK_THROWS_AS(load_profile("/dev/zero", ""), InputError);
}

TEST_CASE("an output that names an input, by any path, is refused before anything is written") {
  const std::string in = test::write_temp("in.yaml", "seed: 1\n");
  const std::string dir = in.substr(0, in.rfind('/'));
  auto err = [](const std::string& out, const std::vector<std::string>& inputs) {
    return test::input_error([&] { refuse_overwriting_input(out, "--junit", inputs); });
  };
  CHECK(err(dir + "/./in.yaml", {"", in}) == dir + "/./in.yaml: error: --junit names an input of this command (" + in +
                                                 "): writing there would overwrite it");
  CHECK(err(dir + "/other.xml", {in}) == "(no error)");  // not there yet
  CHECK(err("-", {in}) == "(no error)");
  CHECK(err("", {in}) == "(no error)");
}

TEST_CASE("engine and autoscaler figures that can only stall a simulation are refused where they are written") {
  auto err = [](const std::vector<std::string>& sets) {
    try {
      load_default_scenario(sets);
    } catch (const InputError& e) {
      return e.one_line();
    }
    return std::string("no error");
  };
  CHECK(err({"engine.perf_profile=none", "engine.mfu=1e-300"})
            .find("engine.mfu: value 1e-300 is out of range (expected mfu in [0.001, 1])") != std::string::npos);
  CHECK(err({"engine.perf_profile=none", "engine.mbu=0"}).find("engine.mbu: value 0 is out of range") !=
        std::string::npos);
  CHECK(err({"fleet.autoscale={min_replicas: 1, max_replicas: 4, signal: queue_depth, target: 4, interval_s: 1e-9}"})
            .find("interval_s: value 1e-9 is out of range") != std::string::npos);
  CHECK(err({"engine.perf_profile=none", "engine.mfu=0.001"}) == "no error");
}

TEST_CASE("a shared prefix longer than the model's context is refused, not cut to fit") {
  auto err = [](const std::string& tokens) {
    try {
      load_default_scenario({"workload.prefix={share: 1, tokens: " + tokens + "}"});
    } catch (const InputError& e) {
      return e.one_line();
    }
    return std::string("no error");
  };
  CHECK(err("1000000").find("a prefix of 1000000 tokens leaves no room for the rest of a prompt in llama-3.1-8b's "
                            "context of 131072 tokens") != std::string::npos);
  CHECK(err("131072").find("leaves no room") != std::string::npos);
  CHECK(err("131071") == "no error");
}

TEST_CASE("a cap of zero node starts is refused, not read as no cap") {
  auto err = [](const std::string& cap) {
    try {
      load_default_scenario(
          {"fleet.autoscale={min_replicas: 0, max_replicas: 4, signal: inflight, target: 8, " + cap + "}"});
    } catch (const InputError& e) {
      return e.one_line();
    }
    return std::string("no error");
  };
  CHECK(err("max_starts: 0").find("max_starts: value 0 is out of range") != std::string::npos);
  CHECK(err("max_starts_per_hour: 0").find("max_starts_per_hour: value 0 is out of range") != std::string::npos);
  CHECK(err("max_starts: 1") == "no error");
  // a fraction would round up (the cap counts whole starts in the last hour): refused
  CHECK(err("max_starts_per_hour: 0.5").find("max_starts_per_hour: expected an integer, got '0.5'") !=
        std::string::npos);
  CHECK(err("max_starts_per_hour: 2") == "no error");
}

TEST_CASE("a simulation that hits its event budget is an input error naming the scenario, not an internal one") {
  Tally t{};
  t.status = int32_t(SimStatus::event_limit);
  t.events = 123;
  try {
    check_status(t, "my.yaml");
    FAIL("expected an error");
  } catch (const InputError& e) {
    CHECK(e.one_line().find("my.yaml: error: the simulation stopped after 123 events") == 0);
  }
  t.status = 0;
  t.unfinished = 7;
  CHECK_THROWS_AS(check_status(t, "my.yaml"), InputError);
  t.unfinished = 0;
  CHECK_NOTHROW(check_status(t, "my.yaml"));
}

TEST_CASE("--set: an empty value is an error at the --set, and catalog names with dots stay whole") {
  try {
    load_default_scenario({"fleet.replicas="});
    FAIL("expected an error");
  } catch (const InputError& e) {
    CHECK(e.one_line().find("--set fleet.replicas=: error: no value after '='") == 0);
  }
  // llama-3.1-8b is one name, not llama-3 / 1-8b
  const Scenario s = load_default_scenario({"catalog.models.llama-3.1-8b.params_b=8.5"});
  CHECK(s.pools[0].model.params_b == 8.5);
  const Scenario d = load_default_scenario({"catalog.devices.h100-sxm-80gb.usd_per_hour=2"});
  CHECK(d.pools[0].device.usd_per_hour == 2.0);
}

TEST_CASE("invalid UTF-8 is refused where it is, before a whole sweep could fail on its JSON") {
  CHECK(detail::invalid_utf8_at("plain") == std::string::npos);
  CHECK(detail::invalid_utf8_at("caf\xc3\xa9 \xe2\x9c\x93") == std::string::npos);
  CHECK(detail::invalid_utf8_at("caf\xe9") == 3);             // Latin-1
  CHECK(detail::invalid_utf8_at("\xc0\xaf") == 0);            // overlong '/'
  CHECK(detail::invalid_utf8_at("\xed\xa0\x80") == 0);        // a surrogate
  CHECK(detail::invalid_utf8_at("ok\xf4\x90\x80\x80") == 2);  // past U+10FFFF
  CHECK(detail::invalid_utf8_at("ok\xe2\x9c") == 2);          // truncated
  try {
    test::scenario("name: ok\ndescription: \"caf\xe9\"\n");
    FAIL("expected an error");
  } catch (const InputError& e) {
    CHECK(e.one_line().find("<test>:2:18: error: not valid UTF-8") == 0);
  }
}

TEST_CASE("a fleet whose request slots overflow 32 bits is refused with its true size (it once segfaulted)") {
  const std::string yaml =
      "duration_s: 60\ndevice: h100-sxm-80gb\nmodel: llama-3.1-8b\nfleet: {replicas: 4096, queue_limit: 973000}\n"
      "workload: {arrival: {process: poisson, rate_per_s: 1}, prompt_tokens: 10, output_tokens: 10}\n";
  try {
    test::scenario(yaml);
    FAIL("expected an error");
  } catch (const InputError& e) {
    // 4096 queues x 973,000 + 4096 replicas x 256 slots = 3,986,456,576: past int32
    CHECK(e.one_line().find("for 3986456576 request slots") != std::string::npos);
    CHECK(e.one_line().find("at most 2048 MiB") != std::string::npos);
  }
  // the layout's counts are exact in 64 bits and the int32 check sees the overflow
  SimParams p{};
  p.n_pools = 1;
  p.pools[0].max_num_seqs = 256;
  p.pools[0].max_replicas = 4096;
  p.pools[0].queue_limit = 973000;
  p.pools[0].kv_block_tokens = 16;
  const WorkspaceLayout l = workspace_layout(p);
  CHECK(l.req_cap == int64_t(4096) * 973000 + int64_t(4096) * 256);
  CHECK_FALSE(layout_fits(p, l));
  p.pools[0].queue_limit = 1000;
  CHECK(layout_fits(p, workspace_layout(p)));
}

namespace {
std::string with_sweep(const std::string& sweep) { return std::string(default_scenario_text()) + "sweep:\n" + sweep; }
}  // namespace

TEST_CASE("long sweep lists and ranges are checked without re-reading the scenario for every value") {
  // 2,000 list values (a value may be listed once) and a range of 100,000: each list value and the
  // ends of the range are instantiated, each from a text whose sweep section is blanked
  std::string list = "  max_configurations: 100000\n  parameters:\n    engine.max_num_seqs: [";
  for (int i = 0; i < 2000; ++i) list += (i ? "," : "") + std::to_string(16 + i);
  list += "]\n";
  const SweepSpec a = parse_sweep(ScenarioSource::from_text(with_sweep(list), "<test>", FLEETSIM_SOURCE_DIR));
  CHECK(a.params[0].values.size() == 2000);
  CHECK(a.params[0].origins[1999].source_line.empty());  // a 10 KB line is not copied per value
  const SweepSpec r = parse_sweep(ScenarioSource::from_text(
      with_sweep(
          "  max_configurations: 100000\n  parameters:\n    workload.arrival.rate_per_s: {from: 1, to: 100000}\n"),
      "<test>", FLEETSIM_SOURCE_DIR));
  CHECK(r.count() == 100000);
  // a bad end of a range is still caught where it is written
  try {
    parse_sweep(ScenarioSource::from_text(with_sweep("  parameters:\n    fleet.replicas: {from: 1, to: 5000}\n"),
                                          "<test>", FLEETSIM_SOURCE_DIR));
    FAIL("expected an error");
  } catch (const InputError& e) {
    CHECK(e.one_line().find("fleet.replicas") != std::string::npos);
    CHECK(e.one_line().find("out of range") != std::string::npos);
  }
  // the scenario's own errors keep their line numbers with the sweep section blanked
  try {
    ScenarioSource::from_text(with_sweep("  parameters:\n    fleet.replicas: [1, 2]\n"), "<test>", ".")
        .instantiate({parse_set("fleet.routr=x")});
    FAIL("expected an error");
  } catch (const InputError& e) {
    CHECK(e.one_line().find("routr") != std::string::npos);
  }
}

TEST_CASE("a key that is a list is a located error, not an internal one") {
  try {
    parse_sweep(ScenarioSource::from_text(with_sweep("  parameters:\n    [a, b]: [1, 2]\n"), "<test>", "."));
    FAIL("expected an error");
  } catch (const InputError& e) {
    CHECK(e.one_line().find(":37:5: error: sweep.parameters: a key must be a plain name") != std::string::npos);
  }
  try {
    test::scenario("name: x\n? [a, b]\n: 1\n");
    FAIL("expected an error");
  } catch (const InputError& e) {
    CHECK(e.one_line().find("a key must be a plain name") != std::string::npos);
  }
}

TEST_CASE("a vanishing diurnal period and a sample beyond any sweep's memory are range errors") {
  try {
    load_default_scenario({"workload.arrival={process: diurnal, rate_per_s: 10, peak_to_mean: 1.5, period_s: 1e-300}"});
    FAIL("expected an error");
  } catch (const InputError& e) {
    CHECK(e.one_line().find("period_s: value 1e-300 is out of range") != std::string::npos);
  }
  try {
    parse_sweep(ScenarioSource::from_text(
        with_sweep("  sample: 100000000\n  max_configurations: 100000000\n  parameters:\n"
                   "    workload.arrival.rate_per_s: {from: 1, to: 100000}\n    fleet.replicas: {from: 1, to: 1000}\n"),
        "<test>", FLEETSIM_SOURCE_DIR));
    FAIL("expected an error");
  } catch (const InputError& e) {
    CHECK(e.one_line().find("max_configurations") != std::string::npos);
  }
}

TEST_CASE("trace edges: blank lines before the header, a time zone after the seconds, hash ids past 64 signed bits") {
  const std::string blank =
      test::write_temp("lead_blank.csv", "\n\r\ntimestamp_s,prompt_tokens,output_tokens\n0,5,5\n1,6,5\n");
  CHECK(load_trace(blank).t_s.size() == 2);
  // an offset would move the row hours; the file says UTC or nothing
  const std::string tz = test::write_temp(
      "tz.csv",
      "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.68Z,5,5\n2023-11-16 18:15:47+05:00,5,5\n");
  CHECK(trace_error(tz).find(":3:1: error: bad TIMESTAMP '2023-11-16 18:15:47+05:00'") != std::string::npos);
  const std::string big = test::write_temp(
      "big_ids.jsonl",
      "{\"timestamp\": 0, \"input_length\": 20, \"output_length\": 2, \"hash_ids\": [-1]}\n"
      "{\"timestamp\": 1, \"input_length\": 20, \"output_length\": 2, \"hash_ids\": [18446744073709551615]}\n");
  CHECK(trace_error(big).find("within the signed 64-bit range; found 18446744073709551615") != std::string::npos);
}
