// merge trusts nothing in a shard file: each one is checked against the sweep document schema,
// and every problem is an InputError naming the file and the JSON path. Whatever a shard holds,
// merge gives the sweep's document or such an error, never another exception.
#include <doctest/doctest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "helpers.hpp"
#include "libsim/sweep/sweep.hpp"

using namespace fleetsim;

namespace {

const std::string kScenario =
    "name: mg\nduration_s: 300\nwarmup_s: 30\nseed: 5\ndevice: h100-sxm-80gb\nmodel: llama-3.1-8b\n"
    "fleet: {replicas: 1}\n"
    "workload:\n  arrival: {process: poisson, rate_per_s: 3}\n"
    "  prompt_tokens: {dist: lognormal, median: 800, p99: 4000}\n"
    "  output_tokens: {dist: lognormal, median: 120, p99: 600}\n"
    "sweep:\n  parameters:\n    fleet.replicas: [1, 2]\n    engine.max_batched_tokens: [128, 8192]\n"
    "  replications: 2\n  slo: {latency_s.ttft.p99: 5}\n";

using Shards = std::vector<std::pair<std::string, Json>>;

Json run_shard(const std::string& text, uint32_t k, uint32_t n) {
  return Json::parse(test::sweep_shard(text, k, n).dump());  // through text, as files
}

// Two shards of a four-configuration sweep (one of them cannot run: 128 batched tokens < 256
// sequences), and the whole sweep's document.
const Shards& shards() {
  static const Shards s = {{"shard-0.json", run_shard(kScenario, 0, 2)}, {"shard-1.json", run_shard(kScenario, 1, 2)}};
  return s;
}
const std::string& whole() {
  static const std::string w = run_shard(kScenario, 0, 1).dump(2);
  return w;
}

std::string merge_error(const Shards& s) {
  try {
    merge_sweeps(s);
  } catch (const InputError& e) {
    return e.one_line();
  }
  return "(no error)";
}

// shard 1 changed by `edit`
template <typename F>
std::string error_after(F edit) {
  Shards s = shards();
  edit(s[1].second);
  return merge_error(s);
}

}  // namespace

TEST_CASE("the shards used below merge into the whole sweep") {
  REQUIRE(shards()[0].second["rows"].size() == 2);
  CHECK(merge_sweeps(shards()).dump(2) == whole());
  CHECK(whole().find("inconsistent: ") != std::string::npos);  // a row without metrics is covered
  // in any order, and with shards read from another path: the header is shard 0's
  Shards s = shards();
  s[1].second["scenario"]["source"] = "/elsewhere/mg.yaml";
  CHECK(merge_sweeps({s[1], s[0]}).dump(2) == whole());
  CHECK(merge_sweeps({s[0], s[1]}).dump(2) == whole());
}

TEST_CASE("merge names the file and the JSON path of a bad field in a shard") {
  CHECK(error_after([](Json& d) { d["sweep"]["feasible_on"] = 5; }) ==
        "shard-1.json: error: /sweep/feasible_on: expected \"bound\" or \"mean\", got 5");
  CHECK(error_after([](Json& d) { d["sweep"]["sequential"] = "yes"; }).find("/sweep/sequential: expected") !=
        std::string::npos);
  CHECK(error_after([](Json& d) { d["rows"][0]["replications"] = -1; }).find("/rows/0/replications: expected") !=
        std::string::npos);
  CHECK(error_after([](Json& d) {
          d["rows"][0]["replications"] = d["sweep"]["replications"].get<int>() + 1;
        }).find("/rows/0/replications: expected an integer in [0, ") != std::string::npos);
  CHECK(error_after([](Json& d) { d["rows"][0].erase("index"); }) ==
        "shard-1.json: error: /rows/0: missing key \"index\"");
  CHECK(error_after([](Json& d) { d["rows"][1]["index"] = "x"; }) ==
        "shard-1.json: error: /rows/1/index: expected an integer, got \"x\"");
  CHECK(error_after([](Json& d) { d["rows"][1]["index"] = -3; }) ==
        "shard-1.json: error: /rows/1/index: expected an integer >= 0, got -3");
  CHECK(error_after([](Json& d) { d["rows"][1]["index"] = 3.0; }) ==
        "shard-1.json: error: /rows/1/index: expected an integer, got 3.0");
  CHECK(error_after([](Json& d) { d["rows"][1]["index"] = 9; }) ==
        "shard-1.json: error: /rows/1/index: configuration 9 is out of range: the sweep has 4 configurations (0..3)");
  CHECK(error_after([](Json& d) { d["rows"][0]["feasible"] = 1; }) ==
        "shard-1.json: error: /rows/0/feasible: expected true or false, got 1");
  CHECK(error_after([](Json& d) { d["rows"][0]["metrics"]["latency_s"]["ttft"]["p99"] = "fast"; }) ==
        "shard-1.json: error: /rows/0/metrics/latency_s/ttft/p99: expected a number, null or an object, got \"fast\"");
  CHECK(error_after([](Json& d) { d["rows"][0]["parameters"]["fleet.replicas"] = 2; }) ==
        "shard-1.json: error: /rows/0/parameters/fleet.replicas: 2, but configuration 1 of the sweep has 1");
  CHECK(error_after([](Json& d) { d["rows"][0]["parameters"]["fleet.replicas"] = "one"; }) ==
        "shard-1.json: error: /rows/0/parameters/fleet.replicas: \"one\", but configuration 1 of the sweep has 1");
  CHECK(error_after([](Json& d) { d["rows"][0]["ci95"].erase("latency_s.ttft.p99"); }) ==
        "shard-1.json: error: /rows/0/ci95: missing key \"latency_s.ttft.p99\"");
  CHECK(error_after([](Json& d) { d["rows"][0]["violations"] = Json::array({"made up"}); }) ==
        "shard-1.json: error: /rows/0/feasible: true, but violations lists 1 missed SLO bounds");
  CHECK(error_after([](Json& d) { d["kind"] = "run"; }) ==
        "shard-1.json: error: /kind: \"run\": not a fleetsim sweep document (kind \"sweep\")");
  CHECK(error_after([](Json& d) { d["schema_version"] = 2; }) ==
        "shard-1.json: error: /schema_version: 2: this fleetsim reads schema_version 1");
  CHECK(error_after([](Json& d) { d = Json::array(); }) == "shard-1.json: error: /: expected an object, got []");
  // a value nested as deep as a file allows is named by its kind, not written out (which would
  // recurse as deep)
  CHECK(error_after([](Json& d) {
          Json deep = Json::array();
          for (int i = 0; i < 200000; ++i) {
            Json up = Json::array();
            up.push_back(std::move(deep));
            deep = std::move(up);
          }
          d = std::move(deep);
        }) == "shard-1.json: error: /: expected an object, got an array");
  CHECK(error_after([](Json& d) {
          d = Json::array({1, Json::array({2, Json::array({3})})});
        }) == "shard-1.json: error: /: expected an object, got [1,[2,[3]]]");
  CHECK(error_after([](Json& d) { d["sweep"]["grid_size"] = 5; }) ==
        "shard-1.json: error: /sweep/grid_size: 5, but the parameters' values make a grid of 4");
  CHECK(error_after([](Json& d) { d["shard"]["count"] = 0; }) ==
        "shard-1.json: error: /shard/count: expected an integer in [1, 4294967295], got 0");
}

TEST_CASE("shards of different sweeps do not merge: the first difference is named") {
  CHECK(error_after([](Json& d) { d["sweep"]["replications"] = 3; }) ==
        "shard-1.json: error: /sweep/replications: 3, but shard-0.json has 2: the shards are of different sweeps");
  CHECK(error_after([](Json& d) { d["scenario"]["seed"] = 6; }) ==
        "shard-1.json: error: /scenario/seed: 6, but shard-0.json has 5: the shards are of different sweeps");
  CHECK(error_after([](Json& d) {
          d["sweep"]["fingerprint"] = "0000000000000000";
        }).find("shard-1.json: error: /sweep/fingerprint: \"0000000000000000\", but shard-0.json has") == 0);
  // where each shard read its scenario from does not matter
  Shards s = shards();
  s[1].second["scenario"]["source"] = "elsewhere/mg.yaml";
  CHECK(merge_sweeps(s).dump(2) == whole());
  // a shard of a sweep with other values
  const std::string other = std::string(kScenario).replace(kScenario.find("[1, 2]"), 6, "[1, 3]");
  s = shards();
  s[1].second = run_shard(other, 1, 2);
  CHECK(merge_error(s) ==
        "shard-1.json: error: /sweep/parameters/0/values/1: 3, but shard-0.json has 2: the shards are of different "
        "sweeps");
}

TEST_CASE("a copy of a shard relabelled as another does not merge") {
  Shards s = shards();
  s[1].second = s[0].second;
  CHECK(merge_error(s) == "shard-1.json: error: /shard/index: shard 0 appears twice (also shard-0.json)");
  s[1].second["shard"]["index"] = 1;
  CHECK(merge_error(s) ==
        "shard-1.json: error: /rows/0/index: configuration 0 belongs to shard 0 of 2, not to shard 1");
  s[1].second["shard"]["index"] = 7;
  CHECK(merge_error(s) == "shard-1.json: error: /shard/index: shard 7 is out of range for 2 shards (0..1)");
  // a shard of another split of the same sweep
  s[1].second = run_shard(kScenario, 1, 3);
  CHECK(merge_error(s) ==
        "shard-1.json: error: /shard/count: 3, but shard-0.json has 2: the shards are of different splits");
}

TEST_CASE("a shard with a configuration missing or twice does not merge") {
  CHECK(error_after([](Json& d) { d["rows"].erase(0); }) ==
        "shard-1.json: error: /rows: configuration 1 is missing: shard 1 of 2 holds 2 configurations, this file has 1");
  CHECK(error_after([](Json& d) { d["rows"][1] = d["rows"][0]; }) ==
        "shard-1.json: error: /rows/1/index: configuration 1 appears twice (also at /rows/0)");
  Shards one = {shards()[0]};
  CHECK(merge_error(one) == "shard-0.json: error: incomplete: 1 of 2 shards given; missing shard 1");
}

TEST_CASE("shard files: out-of-range numbers and syntax errors are located, directories are refused") {
  CHECK_THROWS_WITH_AS(parse_json_located("{\"a\": [1, 2],\n \"b\": 1e400}", "f.json"),
                       "number out of range (beyond a double): 1e400", InputError);
  try {
    parse_json_located("{\"a\": [1, 2],\n \"b\": 1e400}", "f.json");
  } catch (const InputError& e) {
    CHECK(e.one_line() == "f.json:2:7: error: number out of range (beyond a double): 1e400");
  }
  try {
    parse_json_located("{\"a\": [1, 2],\n \"b\": x}", "f.json");
  } catch (const InputError& e) {
    CHECK(e.one_line().find("f.json:2:7: error: not valid JSON: syntax error while parsing value") == 0);
  }
  const auto dir = std::filesystem::temp_directory_path();
  try {
    read_json_file(dir.string());
    FAIL("a directory was read as a shard");
  } catch (const InputError& e) {
    CHECK(e.one_line() == dir.string() + ": error: is a directory, not a shard file");
  }
  CHECK_THROWS_AS(read_json_file("/no/such/shard.json"), InputError);
  // a shard written to a file and read back merges
  const std::filesystem::path path = test::temp_path("merge-shard.json");
  std::ofstream(path) << shards()[1].second.dump(2);
  Shards s = {shards()[0], {"read", read_json_file(path.string())}};
  std::filesystem::remove(path);
  CHECK(merge_sweeps(s).dump(2) == whole());
}

namespace {

void pointers(const Json& j, const std::string& ptr, std::vector<std::string>& out) {
  out.push_back(ptr);
  if (j.is_object())
    for (auto it = j.begin(); it != j.end(); ++it) {
      std::string k;
      for (char c : it.key()) k += c == '~' ? std::string("~0") : c == '/' ? std::string("~1") : std::string(1, c);
      pointers(it.value(), ptr + "/" + k, out);
    }
  else if (j.is_array())
    for (size_t i = 0; i < j.size(); ++i) pointers(j[i], ptr + "/" + std::to_string(i), out);
}

}  // namespace

TEST_CASE("merge survives every single-value corruption of a shard: a document or a located error") {
  const Json base = shards()[1].second;
  std::vector<std::string> ptrs;
  pointers(base, "", ptrs);
  const Json replacements[] = {nullptr, "x", -1, 2.5, 1e300, true, Json::array(), Json::object(), 4294967296ULL, 0};
  size_t merged = 0, refused = 0;
  for (const auto& p : ptrs) {
    const Json::json_pointer jp(p);
    std::vector<Json> variants;
    for (const auto& r : replacements) {
      Json d = base;
      d[jp] = r;
      variants.push_back(std::move(d));
    }
    if (!p.empty()) {
      Json d = base;
      d[jp.parent_pointer()].is_object() ? (void)d[jp.parent_pointer()].erase(jp.back())
                                         : d[jp.parent_pointer()].erase(std::stoul(jp.back()));
      variants.push_back(std::move(d));
    }
    for (auto& v : variants) {
      Shards s = {shards()[0], {"shard-1.json", std::move(v)}};
      try {
        const Json doc = merge_sweeps(s);
        // whatever merged must print in every format
        (void)format_sweep_table(doc);
        (void)sweep_to_csv(doc);
        (void)doc.dump(2);
        ++merged;
      } catch (const InputError& e) {
        ++refused;
        const std::string m = e.one_line();
        if (m.rfind("shard-1.json: error: /", 0) != 0) FAIL_CHECK("at " << p << ": unlocated: " << m);
      } catch (const std::exception& e) {
        FAIL_CHECK("at " << p << ": " << e.what());
      }
    }
  }
  MESSAGE(ptrs.size() << " places, " << merged << " variants merged, " << refused << " refused");
  CHECK(refused > ptrs.size());
}
