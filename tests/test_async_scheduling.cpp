// Asynchronous scheduling (engine.async_scheduling; docs/model.md, "Scheduling ahead"): the
// engine forms step k + 1 while step k runs, so a request that arrives during step k joins step
// k + 2 at the earliest; an idle engine takes it at once. Hand-computed against a step model
// whose every step takes 10 ms.
#include <doctest/doctest.h>

#include "helpers.hpp"
#include "libsim/input/profile.hpp"

using namespace fleetsim;

namespace {

// One request of 1 prompt token and 100 output tokens at t = 0, and one of 2 output tokens at `t2`.
double second_ttft(double t2, bool async) {
  const std::string trace = test::write_temp(
      "async.csv", "timestamp_s,prompt_tokens,output_tokens\n0,1,100\n" + std::to_string(t2) + ",1,2\n");
  const Scenario s =
      test::scenario(std::string("duration_s: 10\nwarmup_s: 0\ndevice: h100-sxm-80gb\nmodel: llama-3.1-8b\n") +
                     "engine: {perf_model: linear, step_base_s: 0.01, async_scheduling: " + (async ? "true" : "false") +
                     "}\nfleet: {replicas: 1}\nworkload: {arrival: {process: trace, path: " + trace + "}}\n");
  const auto r = test::run(s);
  REQUIRE(r.drained);
  REQUIRE(r.all->ttft.n == 2);
  return r.all->ttft.sum - 0.01;  // the first request's TTFT is its one prefill step
}

}  // namespace

TEST_CASE("async scheduling: a request arriving during a decode step joins the step after next") {
  // it arrives at 15 ms, during the first decode step [10, 20] ms: at once, its prefill is the step
  // [20, 30]; scheduling ahead, [20, 30] was formed at 10 ms without it, so its prefill is [30, 40]
  CHECK(second_ttft(0.015, false) == doctest::Approx(0.015));
  CHECK(second_ttft(0.015, true) == doctest::Approx(0.025));
}

TEST_CASE("async scheduling: a request arriving during a prefill step waits one step more") {
  // it arrives at 5 ms, during the first request's prefill [0, 10]: at once it prefills in [10, 20];
  // scheduling ahead, [10, 20] was formed at 0 ms, so it prefills in [20, 30]
  CHECK(second_ttft(0.005, false) == doctest::Approx(0.015));
  CHECK(second_ttft(0.005, true) == doctest::Approx(0.025));
}

TEST_CASE("async scheduling: an idle engine takes a request at once") {
  // the first request is done at 1.0 s (prefill and 99 decode steps of 10 ms); the second comes later
  CHECK(second_ttft(2.0, true) == doctest::Approx(0.01));
  CHECK(second_ttft(2.0, false) == doctest::Approx(0.01));
}

TEST_CASE("async scheduling: a profile's async step costs apply only to an engine that schedules ahead") {
  PerfCoefficients c;
  c.step_s = 0.002;
  c.per_seq_s = 2e-5;
  c.weight_factor = 1;
  c.async_step_s = 0.001;
  c.async_per_seq_s = 1e-5;
  StepFacts f;
  f.peak_flops_per_s = f.bf16_flops_per_s = 1e15;
  f.peak_bytes_per_s = 3e12;
  f.layers = 32;
  PerfParams sync{}, async{};
  apply_profile(c, f, sync);
  f.async_scheduling = true;
  apply_profile(c, f, async);
  CHECK(sync.overhead_s == doctest::Approx(0.002));
  CHECK(sync.per_seq_s == doctest::Approx(2e-5));
  CHECK(async.overhead_s == doctest::Approx(0.001));
  CHECK(async.per_seq_s == doctest::Approx(1e-5));
  // a profile without them (fitted on engines that did not schedule ahead) keeps its own
  c.async_step_s = c.async_per_seq_s = 0;
  PerfParams plain{};
  apply_profile(c, f, plain);
  CHECK(plain.overhead_s == doctest::Approx(0.002));
  CHECK(plain.per_seq_s == doctest::Approx(2e-5));
}

TEST_CASE("async scheduling: a bad value is a located error") {
  const std::string e = test::error_of(test::llama8b_pool("h100-sxm-80gb", "async_scheduling: maybe"));
  CHECK(e.find("async_scheduling") != std::string::npos);
  CHECK(e.find("true or false") != std::string::npos);
}
