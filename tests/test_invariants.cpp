// Conservation laws over many random fleets: every request that arrives is completed or
// rejected, every KV block comes back, tallies stay within physical bounds.
#include <doctest/doctest.h>

#include <random>

#include "helpers.hpp"

using namespace fleetsim;

TEST_CASE("random fleets conserve requests and KV blocks") {
  std::mt19937 g(20261130);
  auto pick = [&](std::initializer_list<const char*> xs) {
    std::uniform_int_distribution<size_t> d(0, xs.size() - 1);
    return std::string(*(xs.begin() + d(g)));
  };
  auto uni = [&](double a, double b) { return std::uniform_real_distribution<double>(a, b)(g); };
  auto iuni = [&](int a, int b) { return std::uniform_int_distribution<int>(a, b)(g); };
  for (int i = 0; i < 150; ++i) {
    const bool is_static = iuni(0, 3) == 0;
    std::string engine = is_static
                             ? "{batching: static, max_batch: " + std::to_string(iuni(1, 32)) +
                                   ", batch_window_s: " + std::to_string(uni(0, 0.2)) + "}"
                             : "{max_num_seqs: " + std::to_string(iuni(1, 64)) +
                                   ", max_batched_tokens: " + std::to_string(iuni(256, 4096)) +
                                   ", kv_block_tokens: " + std::to_string(iuni(1, 32)) +
                                   ", gpu_memory_utilization: " + std::to_string(uni(0.25, 0.9)) + "}";
    const std::string arrival = pick({"poisson", "gamma"});
    const std::string yaml =
        "duration_s: 300\nwarmup_s: " + std::to_string(uni(0, 100)) + "\nseed: " + std::to_string(i) +
        "\ndevice: h100-sxm-80gb\nmodel: llama-3.1-8b\nengine: " + engine +
        "\nfleet: {replicas: " + std::to_string(iuni(1, 6)) + ", router: " +
        pick({"round_robin", "least_outstanding", "central_queue"}) +
        ", queue_limit: " + std::to_string(iuni(1, 300)) + "}\nworkload:\n  arrival: {process: " + arrival +
        ", rate_per_s: " + std::to_string(uni(0.5, 30)) + (arrival == "gamma" ? ", cv: 3" : "") +
        "}\n  prompt_tokens: {dist: lognormal, median: " + std::to_string(iuni(50, 2000)) +
        ", p99: 12000}\n  output_tokens: {dist: geometric, mean: " + std::to_string(iuni(1, 600)) + "}\n";
    CAPTURE(yaml);
    const auto r = test::run(test::scenario(yaml));
    const Tally& t = *r.tally;
    REQUIRE(t.status == 0);
    CHECK(t.arrived == t.completed + t.rejected_queue_full + t.rejected_too_long);
    CHECK(r.drained);
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
