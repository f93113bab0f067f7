// The fast paths of the simulation core against the plain computations they replace: the
// closed-form decode-run length against a binary search over line_sum, and a shared queue that
// wakes one replica at a time against waking every replica at once.
#include <doctest/doctest.h>

#include <cmath>
#include <random>

#include "helpers.hpp"

using namespace fleetsim;

namespace {

int64_t steps_by_search(const Line& l, int64_t k, double dt) {
  int64_t lo = 1, hi = k;
  while (lo < hi) {
    const int64_t mid = lo + (hi - lo) / 2;
    if (line_sum(l, mid) >= dt)
      hi = mid;
    else
      lo = mid + 1;
  }
  return lo;
}

// A central-queue fleet with what makes waking matter: many replicas, few slots, short KV,
// preemption, crashes, failures, draining and cold starts.
std::string random_central_fleet(std::mt19937& g, int i) {
  auto uni = [&](double a, double b) { return std::uniform_real_distribution<double>(a, b)(g); };
  auto iuni = [&](int a, int b) { return std::uniform_int_distribution<int>(a, b)(g); };
  const char* profiles[] = {"", ", perf_profile: none", ", perf_profile: h100-sxm-80gb/vllm"};
  int replicas = iuni(1, 10);
  std::string extra;
  if (iuni(0, 2) == 0) {
    const int lo = iuni(0, 2), hi = iuni(3, 10);
    replicas = iuni(lo, hi);
    extra = ", autoscale: {min_replicas: " + std::to_string(lo) + ", max_replicas: " + std::to_string(hi) +
            ", signal: queue_depth, target: " + std::to_string(uni(0.3, 3)) +
            ", interval_s: " + std::to_string(uni(5, 30)) +
            ", scale_down_window_s: 0, cooldown_s: " + std::to_string(uni(0, 30)) +
            "}, cold_start: {provision_s: " + std::to_string(uni(0, 20)) + ", image_pull_s: 1, warmup_s: 1}";
  }
  if (iuni(0, 3) == 0) extra += ", failures: {mtbf_hours: " + std::to_string(uni(0.02, 0.5)) + "}";
  return "duration_s: 300\nwarmup_s: " + std::to_string(uni(0, 100)) + "\nseed: " + std::to_string(i) +
         "\ndevice: h100-sxm-80gb\nmodel: llama-3.1-8b\nengine: {max_num_seqs: " + std::to_string(iuni(1, 48)) +
         ", max_batched_tokens: " + std::to_string(iuni(256, 8192)) +
         ", kv_block_tokens: " + std::to_string(iuni(1, 32)) +
         ", gpu_memory_utilization: " + std::to_string(uni(0.22, 0.9)) +
         (iuni(0, 5) == 0 ? ", on_kv_exhausted: crash" : "") + profiles[iuni(0, 2)] +
         "}\nfleet: {replicas: " + std::to_string(replicas) +
         ", router: central_queue, queue_limit: " + std::to_string(iuni(1, 400)) + extra +
         "}\nworkload:\n  arrival: {process: poisson, rate_per_s: " + std::to_string(uni(1, 60)) + "}\n" +
         (iuni(0, 2) == 0 ? "  prefix: {share: 0.7, tokens: " + std::to_string(iuni(16, 2000)) + "}\n" : "") +
         "  prompt_tokens: {dist: lognormal, median: " + std::to_string(iuni(50, 2000)) +
         ", p99: 12000}\n  output_tokens: {dist: geometric, mean: " + std::to_string(iuni(1, 600)) + "}\n";
}

}  // namespace

TEST_CASE("the closed-form decode-run length is the binary search's answer") {
  std::mt19937_64 g(12);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  int64_t checked = 0;
  for (int i = 0; i < 200000; ++i) {
    Line l;
    l.o = u(g) < 0.1 ? 0.0 : 1e-3 * u(g);
    l.a1 = 1e-2 * u(g);
    l.a2 = 1e-2 * u(g);
    // slopes: none, tiny, or large enough that the two lines cross inside the run
    l.b1 = u(g) < 0.2 ? 0.0 : (u(g) < 0.5 ? 1e-9 : 1e-5) * u(g);
    l.b2 = u(g) < 0.2 ? 0.0 : (u(g) < 0.5 ? 1e-9 : 1e-5) * u(g);
    const int64_t k = 1 + int64_t(u(g) * (u(g) < 0.5 ? 20.0 : 200000.0));
    const double total = line_sum(l, k);
    // times inside the run, on its step boundaries, and past its end
    double dt = u(g) * total * 1.2;
    const int64_t j = 1 + int64_t(u(g) * double(k));
    if (i % 3 == 1) dt = line_sum(l, j);
    if (i % 3 == 2) dt = std::nextafter(line_sum(l, j), 0.0);
    if (i % 7 == 0) dt = -u(g);
    CAPTURE(i);
    REQUIRE(line_steps_until(l, k, dt) == steps_by_search(l, k, dt));
    ++checked;
  }
  CHECK(checked == 200000);
}

TEST_CASE("a shared queue waking one replica at a time admits what waking them all admits") {
  std::mt19937 g(20261130);
  int64_t events_one = 0, events_all = 0;
  for (int i = 0; i < 80; ++i) {
    const std::string yaml = random_central_fleet(g, i);
    CAPTURE(yaml);
    const Scenario s = test::scenario(yaml);
    const SimParams one = s.params();
    SimParams all = one;
    all.wake_all = 1;
    HostWorkspace ws;
    const auto a = simulate_once(one, 0, ws);
    const auto b = simulate_once(all, 0, ws);
    REQUIRE(a->status == 0);
    REQUIRE(b->status == 0);
    events_one += a->events;
    events_all += b->events;
    CHECK(a->events <= b->events);
    // the same requests, admitted, preempted, lost and finished alike: counts are exact ...
    const ClassTally &x = a->classes[0], &y = b->classes[0];
    CHECK(x.arrived == y.arrived);
    CHECK(x.completed == y.completed);
    CHECK(x.rejected_queue_full == y.rejected_queue_full);
    CHECK(x.rejected_too_long == y.rejected_too_long);
    CHECK(x.preempted == y.preempted);
    CHECK(x.retried == y.retried);
    CHECK(x.failed == y.failed);
    CHECK(x.prefix_hits == y.prefix_hits);
    CHECK(x.good == y.good);
    CHECK(x.output_tokens == y.output_tokens);
    CHECK(x.e2e.n == y.e2e.n);
    CHECK(a->pools[0].crashes == b->pools[0].crashes);
    CHECK(a->pools[0].scale_ups == b->pools[0].scale_ups);
    CHECK(a->pools[0].interruptions == b->pools[0].interruptions);
    // ... and times differ only by the rounding of a run summed whole or in pieces
    CHECK(x.e2e.sum == doctest::Approx(y.e2e.sum).epsilon(1e-9));
    CHECK(x.ttft.sum == doctest::Approx(y.ttft.sum).epsilon(1e-9));
    CHECK(x.queue_wait.sum == doctest::Approx(y.queue_wait.sum).epsilon(1e-9));
    CHECK(x.lost_tokens == doctest::Approx(y.lost_tokens).epsilon(1e-12));
    CHECK(x.in_system_s == doctest::Approx(y.in_system_s).epsilon(1e-9));
    CHECK(a->pools[0].busy_s == doctest::Approx(b->pools[0].busy_s).epsilon(1e-9));
    CHECK(a->pools[0].replica_s == doctest::Approx(b->pools[0].replica_s).epsilon(1e-9));
    // a run's KV blocks are integrated as a line, and work in a run that straddles warmup_s is
    // counted pro rata by time: both follow where runs are cut, so they agree less closely
    CHECK(a->pools[0].kv_block_s == doctest::Approx(b->pools[0].kv_block_s).epsilon(1e-3));
    CHECK(a->pools[0].flops == doctest::Approx(b->pools[0].flops).epsilon(1e-3));
    CHECK(a->pools[0].steps == doctest::Approx(b->pools[0].steps).epsilon(1e-3));
  }
  MESSAGE("events: " << events_one << " waking one, " << events_all << " waking all");
  CHECK(events_one < events_all);
}

TEST_CASE("with many busy replicas, a shared queue no longer costs an event per replica per arrival") {
  const std::string yaml =
      "duration_s: 600\nwarmup_s: 60\nseed: 3\ndevice: h100-sxm-80gb\nmodel: llama-3.1-8b\n"
      "engine: {perf_profile: none}\nfleet: {replicas: 8, router: central_queue}\n"
      "workload:\n  arrival: {process: poisson, rate_per_s: 40}\n"
      "  prompt_tokens: {dist: lognormal, median: 1020, p99: 4142}\n"
      "  output_tokens: {dist: lognormal, median: 129, p99: 601}\n";
  const Scenario s = test::scenario(yaml);
  const SimParams one = s.params();
  SimParams all = one;
  all.wake_all = 1;
  HostWorkspace ws;
  const auto a = simulate_once(one, 0, ws);
  const auto b = simulate_once(all, 0, ws);
  const double per_req_one = double(a->events) / double(a->classes[0].arrived);
  const double per_req_all = double(b->events) / double(b->classes[0].arrived);
  MESSAGE("events per request: " << per_req_one << " waking one, " << per_req_all << " waking all");
  CHECK(a->classes[0].completed == b->classes[0].completed);
  // an arrival, its prefill step and its last decode step, plus a share of the batch changes;
  // waking all eight replicas costs about one more event per busy replica
  CHECK(per_req_one < 5.0);
  CHECK(per_req_all > 1.5 * per_req_one);
}
