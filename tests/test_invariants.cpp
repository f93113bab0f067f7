// Conservation laws over many random fleets, and the cheap-event optimisation checked against
// the plain model: merging decode steps into runs must not change what happens.
#include <doctest/doctest.h>

#include <cmath>
#include <random>

#include "helpers.hpp"

using namespace fleetsim;

namespace {

std::string random_fleet(std::mt19937& g, int i, double duration = 300) {
  auto pick = [&](std::initializer_list<const char*> xs) {
    std::uniform_int_distribution<size_t> d(0, xs.size() - 1);
    return std::string(*(xs.begin() + d(g)));
  };
  auto uni = [&](double a, double b) { return std::uniform_real_distribution<double>(a, b)(g); };
  auto iuni = [&](int a, int b) { return std::uniform_int_distribution<int>(a, b)(g); };
  const bool is_static = iuni(0, 3) == 0;
  const std::string engine = is_static
                                 ? "{batching: static, max_batch: " + std::to_string(iuni(1, 32)) +
                                       ", batch_window_s: " + std::to_string(uni(0, 0.2)) + "}"
                                 : "{max_num_seqs: " + std::to_string(iuni(1, 64)) +
                                       ", max_batched_tokens: " + std::to_string(iuni(256, 4096)) +
                                       ", kv_block_tokens: " + std::to_string(iuni(1, 32)) +
                                       ", gpu_memory_utilization: " + std::to_string(uni(0.25, 0.9)) +
                                       (iuni(0, 4) == 0 ? ", on_kv_exhausted: crash" : "") +
                                       pick({"", ", perf_profile: none", ", perf_profile: h100-sxm-80gb/vllm"}) + "}";
  const std::string arrival = pick({"poisson", "gamma"});
  int replicas = iuni(1, 6);
  std::string autoscale;
  if (iuni(0, 2) == 0) {  // an autoscaled pool with short cold starts, so replicas come and go
    const int lo = iuni(0, 1), hi = iuni(2, 6);
    replicas = iuni(lo, hi);
    autoscale = ", autoscale: {min_replicas: " + std::to_string(lo) + ", max_replicas: " + std::to_string(hi) +
                ", signal: " + pick({"queue_depth", "inflight", "ttft", "busy", "host_cpu"}) +
                ", target: " + std::to_string(uni(0.3, 0.9)) + ", interval_s: " + std::to_string(uni(5, 30)) +
                ", scale_down_window_s: " + std::to_string(uni(0, 60)) + ", cooldown_s: " + std::to_string(uni(0, 60)) +
                "}, cold_start: {provision_s: " + std::to_string(uni(0, 20)) + ", image_pull_s: 1, warmup_s: 1}";
  }
  if (iuni(0, 3) == 0) autoscale += ", failures: {mtbf_hours: " + std::to_string(uni(0.02, 0.5)) + "}";
  return "duration_s: " + std::to_string(duration) + "\nwarmup_s: " + std::to_string(uni(0, duration / 3)) +
         "\nseed: " + std::to_string(i) + "\ndevice: h100-sxm-80gb\nmodel: llama-3.1-8b\nengine: " + engine +
         "\nfleet: {replicas: " + std::to_string(replicas) +
         ", router: " + pick({"round_robin", "least_outstanding", "central_queue"}) +
         ", queue_limit: " + std::to_string(iuni(1, 300)) + autoscale +
         "}\nworkload:\n  arrival: {process: " + arrival + ", rate_per_s: " + std::to_string(uni(0.5, 30)) +
         (arrival == "gamma" ? ", cv: 3" : "") + "}\n  checkpointed: " + pick({"true", "false"}) +
         (iuni(0, 2) == 0 ? "\n  prefix: {share: 0.7, tokens: " + std::to_string(iuni(16, 3000)) + "}" : "") +
         (iuni(0, 3) == 0 ? "\n  response_cache: {hit_rate: 0.2}" : "") +
         "\n  prompt_tokens: {dist: lognormal, median: " + std::to_string(iuni(50, 2000)) +
         ", p99: 12000}\n  output_tokens: {dist: geometric, mean: " + std::to_string(iuni(1, 600)) + "}\n";
}

}  // namespace

TEST_CASE("random fleets conserve requests and KV blocks") {
  std::mt19937 g(20261130);
  for (int i = 0; i < 150; ++i) {
    const std::string yaml = random_fleet(g, i);
    CAPTURE(yaml);
    const auto r = test::run(test::scenario(yaml));
    test::check_conserves(r);
    const ClassTally& t = *r.all;
    const Json& u = r.report["utilization"];
    CHECK(u["busy_fraction"].get<double>() <= 1.0 + 1e-9);
    CHECK(u["kv_occupancy"].get<double>() <= 1.0 + 1e-9);
    if (t.ttft.n > 0) {
      CHECK(t.ttft.min >= 0.0);
      CHECK(t.e2e.min >= t.ttft.min - 1e-12);
      CHECK(t.queue_wait.min >= 0.0);
    }
  }
}

TEST_CASE("decode runs in closed form give what stepping one step at a time gives") {
  std::mt19937 g(7);
  int compared = 0;
  for (int i = 0; i < 120; ++i) {
    const std::string yaml = random_fleet(g, i, 120);
    CAPTURE(yaml);
    const Scenario s = test::scenario(yaml);
    const auto m = test::merged_and_stepped(s);
    const auto& a = m.merged;
    const auto& b = m.stepped;
    REQUIRE(b->status == 0);
    CHECK(a->classes[0].arrived == b->classes[0].arrived);
    CHECK(a->classes[0].completed == b->classes[0].completed);
    CHECK(a->classes[0].failed == b->classes[0].failed);
    CHECK(a->classes[0].rejected_queue_full == b->classes[0].rejected_queue_full);
    CHECK(a->classes[0].preempted == b->classes[0].preempted);
    CHECK(a->classes[0].output_tokens == b->classes[0].output_tokens);
    // times agree to rounding: closed-form sums against step-by-step sums
    CHECK(a->classes[0].e2e.sum == doctest::Approx(b->classes[0].e2e.sum).epsilon(1e-9));
    CHECK(a->classes[0].ttft.sum == doctest::Approx(b->classes[0].ttft.sum).epsilon(1e-9));
    CHECK(a->pools[0].busy_s == doctest::Approx(b->pools[0].busy_s).epsilon(1e-9));
    // work in a run that straddles warmup_s is counted pro rata by time, not step by step
    CHECK(a->pools[0].flops == doctest::Approx(b->pools[0].flops).epsilon(1e-3));
    CHECK(a->pools[0].bytes == doctest::Approx(b->pools[0].bytes).epsilon(1e-3));
    if (s.pools[0].batching == Batching::continuous) CHECK(a->events < b->events + 1);
    ++compared;
  }
  CHECK(compared == 120);
}
