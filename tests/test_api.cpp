// The public C++ API (include/fleetsim/fleetsim.hpp): what it promises its callers beyond the
// documents the CLI writes, and that it refuses what the CLI and the Python module refuse.
#include <doctest/doctest.h>

#include <stdexcept>
#include <string>
#include <utility>

#include "fleetsim/fleetsim.hpp"
#include "libsim/base/json.hpp"

namespace {

std::string input_error(const std::function<void()>& f) {
  try {
    f();
  } catch (const fleetsim::Error& e) {
    return e.kind() == fleetsim::Error::Kind::input ? e.what() : std::string("(not an input error) ") + e.what();
  }
  return "(no error)";
}

}  // namespace

TEST_CASE("api: a run is the CLI's document, timeline included where the fleet autoscales") {
  const auto s = fleetsim::ScenarioHandle::from_file(FLEETSIM_SOURCE_DIR "/scenarios/scale-to-zero.yaml");
  const auto doc = fleetsim::Json::parse(fleetsim::run(s).json);
  REQUIRE(doc.contains("timeline"));
  CHECK(doc["timeline"].size() > 0);
  const auto plain = fleetsim::Json::parse(fleetsim::run(fleetsim::ScenarioHandle::builtin_default()).json);
  CHECK_FALSE(plain.contains("timeline"));
}

TEST_CASE("api: a replication's newer-device view serves that replication's arrivals") {
  const auto s = fleetsim::ScenarioHandle::from_file(FLEETSIM_SOURCE_DIR "/scenarios/newer-device.yaml");
  for (uint32_t rep : {0u, 1u}) {
    CAPTURE(rep);
    const auto doc = fleetsim::Json::parse(fleetsim::run(s, rep).json);
    const auto& v = doc["ledger"]["pools"]["default"]["ownership"]["newer_device"];
    CHECK(v["current"]["tokens"] == v["newer"]["tokens"]);  // every request served by both fleets
  }
}

TEST_CASE("api: a run with a seed lists it among the overrides, as `fleetsim run --seed` does") {
  const auto s = fleetsim::ScenarioHandle::from_file(FLEETSIM_SOURCE_DIR "/scenarios/chat-default.yaml");
  const auto doc = fleetsim::Json::parse(fleetsim::run(s, uint64_t(7), 0).json);
  CHECK(doc["scenario"]["seed"] == 7);
  CHECK(doc["scenario"]["overrides"] == fleetsim::Json::array({"seed=7"}));
}

TEST_CASE("api: capacity refuses what the CLI's flags refuse, as a located input error") {
  fleetsim::CapacityQuery q;
  q.model = "llama-3.1-8b";
  q.device = "h100-sxm-80gb";
  CHECK(fleetsim::capacity(q).fits);
  auto with = [&](auto set) {
    fleetsim::CapacityQuery x = q;
    set(x);
    return input_error([&] { fleetsim::capacity(x); });
  };
  CHECK(with([](auto& x) { x.kv_block_tokens = 0; }) ==
        "--kv-block-tokens: error: --kv-block-tokens 0: expected a number in [1, 1024]");
  CHECK(with([](auto& x) { x.gpu_memory_utilization = 5; }) ==
        "--gpu-memory-utilization: error: --gpu-memory-utilization 5: expected a number in [0.01, 1]");
  CHECK(with([](auto& x) { x.tensor_parallel = 0; }) == "--tp: error: --tp 0: expected a number in [1, 64]");
  CHECK(with([](auto& x) { x.pipeline_parallel = 0; }) == "--pp: error: --pp 0: expected a number in [1, 64]");
  // gpt-oss as shipped: MXFP4 experts, as the CLI's --expert-weight-dtype asks
  fleetsim::CapacityQuery oss;
  oss.model = "gpt-oss-20b";
  oss.device = "h100-sxm-80gb";
  const double bf16 = fleetsim::capacity(oss).weights_gib;
  oss.expert_weight_dtype = "mxfp4";
  CHECK(fleetsim::capacity(oss).weights_gib < bf16 / 2);
  // without CUDA graphs their memory goes to the KV cache
  const double graphs = fleetsim::capacity(oss).kv_gib;
  oss.enforce_eager = true;
  CHECK(fleetsim::capacity(oss).kv_gib > graphs);
}

TEST_CASE("api: a progress callback that throws stops the sweep, and the caller gets the error") {
  const auto s = fleetsim::ScenarioHandle::from_file(FLEETSIM_SOURCE_DIR "/tests/data/tiny-sweep.yaml");
  fleetsim::SweepSettings settings;
  settings.threads = 2;
  settings.progress = [](uint64_t, uint64_t) { throw std::runtime_error("cancelled by the caller"); };
  std::string what;
  try {
    fleetsim::sweep_json(s, settings);
  } catch (const fleetsim::Error& e) {
    what = e.what();
  }
  CHECK(what == "cancelled by the caller");
  // something thrown that is no std::exception is an Error all the same
  settings.progress = [](uint64_t, uint64_t) { throw 42; };
  bool error = false;
  try {
    fleetsim::sweep_json(s, settings);
  } catch (const fleetsim::Error& e) {
    error = e.kind() == fleetsim::Error::Kind::failure;
  }
  CHECK(error);
  settings.progress = nullptr;
  settings.threads = 5000;
  CHECK(input_error([&] { fleetsim::sweep_json(s, settings); }) ==
        "SweepSettings.threads: error: 5000 threads: expected 0 (every hardware thread) to 4096");
}

TEST_CASE("api: a handle moved from is an error to use, not a crash, a bad sweep fails where it is loaded") {
  auto s = fleetsim::ScenarioHandle::builtin_default();
  const auto t = std::move(s);
  CHECK(t.name() == "chat-default");
  std::string what;
  try {
    (void)s.name();  // NOLINT(bugprone-use-after-move): the point of the test
  } catch (const fleetsim::Error& e) {
    what = e.what();
  }
  CHECK(what == "fleetsim: an empty ScenarioHandle (moved from)");
  const std::string bad = input_error([] {
    fleetsim::ScenarioHandle::from_yaml(
        "name: x\nduration_s: 60\nmodel: llama-3.1-8b\ndevice: h100-sxm-80gb\nfleet: {replicas: 1}\n"
        "workload: {arrival: {process: poisson, rate_per_s: 1}, prompt_tokens: 100, output_tokens: 10}\n"
        "sweep: {parameters: {fleet.replcas: [1, 2]}}\n");
  });
  CHECK(bad.find("fleet.replcas") != std::string::npos);
}
