// The autoscaler against Kubernetes' HPA semantics, by hand: its tolerance, its stabilization
// windows (exact monotone queues) and its rate policies (docs/model.md, "Replica lifecycle, cold
// starts and autoscaling").
#include <doctest/doctest.h>

#include <algorithm>
#include <random>

#include "helpers.hpp"
#include "libsim/core/autoscale.hpp"

using namespace fleetsim;

namespace {
// 3,000 long requests at once on one replica: the inflight signal asks for the 50-replica maximum
// at once; cold starts of 3 s, so each evaluation sees the replicas of the one before.
std::string burst(const std::string& extra = "") {
  return "name: hpa\nduration_s: 100\nwarmup_s: 0\ndevice: h100-sxm-80gb\nmodel: llama-3.1-8b\n"
         "engine: {max_num_seqs: 8}\n"
         "fleet:\n  replicas: 1\n  cold_start: {provision_s: 1, image_pull_s: 1, warmup_s: 1}\n"
         "  autoscale: {min_replicas: 1, max_replicas: 50, signal: inflight, target: 10, interval_s: 15, "
         "scale_down_window_s: 0, cooldown_s: 0" +
         extra +
         "}\n"
         "workload:\n  arrival: {process: burst, requests: 3000}\n  prompt_tokens: 2000\n  output_tokens: 2000\n";
}
double fleet(const test::Result& r, const char* key) { return r.report["fleet"][key].get<double>(); }
}  // namespace

TEST_CASE("rate policies: scale up by 4 pods or 100% per 15 s, whichever is more, as Kubernetes' default") {
  // evaluations at 15, 30, 45, 60, 75 s: 1 -> max(1 + 4, 2) = 5 -> max(9, 10) = 10 -> 20 -> 40 -> 50 (the maximum)
  const int starts[] = {4, 9, 19, 39, 49};
  for (int i = 0; i < 5; ++i) {
    const double d = 16 + 15 * i;
    const test::Result r = test::run(test::scenario(burst(), {"duration_s=" + std::to_string(d)}));
    INFO("after " << d << " s");
    CHECK(fleet(r, "scale_ups") == starts[i]);
  }
  // `none` lifts the limit: all 49 at the first evaluation
  CHECK(fleet(test::run(test::scenario(burst(", scale_up_policy: none"), {"duration_s=16"})), "scale_ups") == 49);
  // 2 pods per 30 s (and no percentage): 1 -> 3 at 15 s, nothing more at 30 s (2 already added within
  // the period), 3 -> 5 at 45 s
  const std::string two = ", scale_up_policy: {pods: 2, period_s: 30}";
  CHECK(fleet(test::run(test::scenario(burst(two), {"duration_s=16"})), "scale_ups") == 2);
  CHECK(fleet(test::run(test::scenario(burst(two), {"duration_s=31"})), "scale_ups") == 2);
  CHECK(fleet(test::run(test::scenario(burst(two), {"duration_s=46"})), "scale_ups") == 4);
}

TEST_CASE("rate policies: scale down by at most half per 15 s halves the fleet each evaluation") {
  // 40 idle replicas, one tiny request: the recommendation is 1 at every evaluation; each takes
  // half off, truncated as Kubernetes' int32(start x 0.5): 40 -> 20 -> 10 -> 5 -> 2 -> 1
  const std::string y =
      "name: down\nduration_s: 200\nwarmup_s: 0\ndevice: h100-sxm-80gb\nmodel: llama-3.1-8b\n"
      "fleet:\n  replicas: 40\n  autoscale: {min_replicas: 1, max_replicas: 40, signal: inflight, target: 10, "
      "interval_s: 15, scale_down_window_s: 0, cooldown_s: 0, scale_down_policy: {percent: 50}}\n"
      "workload:\n  arrival: {process: burst, requests: 1}\n  prompt_tokens: 10\n  output_tokens: 10\n";
  const int downs[] = {20, 30, 35, 38, 39, 39};
  for (int i = 0; i < 6; ++i) {
    const double d = 16 + 15 * i;
    INFO("after " << d << " s");
    CHECK(fleet(test::run(test::scenario(y, {"duration_s=" + std::to_string(d)})), "scale_downs") == downs[i]);
  }
}

TEST_CASE("tolerance: an average within 10% of the target keeps the count, as for every Kubernetes metric") {
  // 21 closed-loop users always in the system on 2 replicas with a target of 10 each: 21 / 20 = 1.05
  const std::string y =
      "name: tol\nduration_s: 600\nwarmup_s: 0\ndevice: h100-sxm-80gb\nmodel: llama-3.1-8b\n"
      "fleet:\n  replicas: 2\n  autoscale: {min_replicas: 1, max_replicas: 8, signal: inflight, target: 10, "
      "interval_s: 15}\n"
      "workload:\n  arrival: {process: concurrency, clients: 21}\n  prompt_tokens: 200\n  output_tokens: 100\n";
  const test::Result within = test::run(test::scenario(y));
  CHECK(fleet(within, "scale_ups") == 0);
  CHECK(fleet(within, "scale_downs") == 0);
  // a tolerance of 1%: ceil(21 / 10) = 3 replicas
  const test::Result strict = test::run(test::scenario(y, {"fleet.autoscale.tolerance=0.01"}));
  CHECK(fleet(strict, "scale_ups") == 1);
  CHECK(fleet(strict, "max_replicas") == 3);
}

TEST_CASE("stabilization windows: the monotone queues give the brute-force extreme of any window") {
  std::mt19937 gen(3);
  for (const double window : {0.0, 15.0, 300.0, 900.0, 3600.0}) {
    WindowExtreme hi{}, lo{};
    std::vector<std::pair<double, int>> seen;
    for (int i = 0; i < 2000; ++i) {
      const double t = 15.0 * (i + 1);
      // mostly small jumps, so long monotone runs occur but stay below 64 distinct records
      const int v = int(gen() % 7) + (i / 50) % 5;
      seen.emplace_back(t, v);
      int want_hi = v, want_lo = v;
      for (const auto& [ts, x] : seen)
        if (t - ts < window) want_hi = std::max(want_hi, x), want_lo = std::min(want_lo, x);  // newer than t - window
      INFO("window " << window << " at " << t);
      REQUIRE(window_push(hi, t, v, window, true) == want_hi);
      REQUIRE(window_push(lo, t, v, window, false) == want_lo);
    }
  }
  // more strictly falling records than the queue holds: the two oldest merge, keeping the older
  // (higher) value longer, so a scale-down window can only wait longer than exact, never less
  WindowExtreme hi{};
  for (int i = 0; i < 200; ++i) {
    const double t = 15.0 * (i + 1);
    const int exact = 1000 - std::max(0, i - 58);  // the value 58 evaluations (870 s) ago: 885 s is out
    CHECK(window_push(hi, t, 1000 - i, 885.0, true) >= exact);
  }
}

TEST_CASE("the host-CPU scenario on queue depth: a scale-down window as long as the run never scales down") {
  const std::vector<std::string> q = {"fleet.autoscale.signal=queue_depth", "fleet.autoscale.target=5"};
  const auto flaps = test::run(load_scenario_file(FLEETSIM_SOURCE_DIR "/scenarios/autoscale-host-cpu.yaml", q));
  std::vector<std::string> held = q;
  held.push_back("fleet.autoscale.scale_down_window_s=3600");
  const auto steady = test::run(load_scenario_file(FLEETSIM_SOURCE_DIR "/scenarios/autoscale-host-cpu.yaml", held));
  MESSAGE("queue depth: " << fleet(flaps, "scale_ups") << " starts, " << fleet(flaps, "scale_downs")
                          << " stops; with a 3600 s window " << fleet(steady, "scale_ups") << " and "
                          << fleet(steady, "scale_downs"));
  CHECK(fleet(flaps, "scale_downs") >= 10);  // the queue empties, the signal asks for the minimum
  CHECK(fleet(steady, "scale_downs") == 0);
  CHECK(fleet(steady, "scale_ups") >= 1);
}

TEST_CASE("the ttft signal reads vLLM's TTFT histogram as Prometheus' histogram_quantile does") {
  int64_t count[kTtftBuckets] = {};
  // 10 first tokens in (0.1, 0.25] s and 10 in (0.25, 0.5] s: p95 is the 19th of 20, 9/10 into the second
  count[8] = 10;
  count[9] = 10;
  CHECK(ttft_histogram_quantile(count, 20, 0.95) == doctest::Approx(0.25 + 0.25 * 9.0 / 10.0));
  // the median is the top of the first of them
  CHECK(ttft_histogram_quantile(count, 20, 0.5) == doctest::Approx(0.25));
  // in the first bucket, from 0; in +Inf, the highest finite edge
  int64_t low[kTtftBuckets] = {};
  low[0] = 4;
  CHECK(ttft_histogram_quantile(low, 4, 0.75) == doctest::Approx(0.001 * 0.75));
  int64_t high[kTtftBuckets] = {};
  high[kTtftBuckets - 1] = 3;
  CHECK(ttft_histogram_quantile(high, 3, 0.95) == 2560.0);
  // the buckets are vLLM's: 22 edges from 1 ms to 2,560 s, increasing
  CHECK(ttft_edge(0) == 0.001);
  CHECK(ttft_edge(kTtftBuckets - 2) == 2560.0);
  for (int32_t b = 1; b < kTtftBuckets - 1; ++b) CHECK(ttft_edge(b) > ttft_edge(b - 1));
}

TEST_CASE("the ttft signal scales up when first tokens are slower than its target, and not when they are faster") {
  const std::string ttft = ", ttft_window_s: 60";
  auto signal = [&](double target) {
    std::string y = burst(ttft);
    const std::string from = "signal: inflight, target: 10";
    y.replace(y.find(from), from.size(), "signal: ttft, target: " + std::to_string(target));
    return test::run(test::scenario(y));
  };
  const auto slow = signal(1.0), fast = signal(1e5);
  MESSAGE("ttft signal: " << fleet(slow, "scale_ups") << " starts at a 1 s target, " << fleet(fast, "scale_ups")
                          << " at 1e5 s");
  CHECK(fleet(slow, "scale_ups") >= 1);
  CHECK(fleet(fast, "scale_ups") == 0);
}

TEST_CASE("busy and host_cpu: replicas still starting count as reporting nothing, so a cold start does not compound") {
  // one saturated replica (busy 1.0) at a target of 0.5 asks for 2; the second takes 300 s to
  // start, and while it starts the ratio over both (0.5 / 0.5 = 1) changes nothing: 2 replicas at
  // most, not a doubling every 15 s to the maximum
  const std::string y =
      "name: busy\nduration_s: 250\nwarmup_s: 0\ndevice: h100-sxm-80gb\nmodel: llama-3.1-8b\n"
      "fleet:\n  replicas: 1\n  cold_start: {provision_s: 300, image_pull_s: 0, warmup_s: 0}\n"
      "  autoscale: {min_replicas: 1, max_replicas: 64, signal: busy, target: 0.5, interval_s: 15}\n"
      "workload:\n  arrival: {process: poisson, rate_per_s: 40}\n  prompt_tokens: 2000\n  output_tokens: 300\n";
  const test::Result r = test::run(test::scenario(y));
  CHECK(fleet(r, "max_replicas") == 2);
  CHECK(fleet(r, "scale_ups") == 1);
  // host_cpu: 0.05 + 4 ms x 40 req/s = 0.21 on one replica, at a target of 0.1: ceil(2.1) = 3
  const test::Result h =
      test::run(test::scenario(y, {"fleet.autoscale.signal=host_cpu", "fleet.autoscale.target=0.1"}));
  CHECK(fleet(h, "max_replicas") == 3);
}

TEST_CASE("scale to zero: host_cpu with no traffic starts nothing, queue_depth keeps a replica with work running") {
  const std::string zero =
      "name: zero\nduration_s: 3600\nwarmup_s: 0\ndevice: h100-sxm-80gb\nmodel: llama-3.1-8b\n"
      "fleet:\n  replicas: 0\n  autoscale: {min_replicas: 0, max_replicas: 4, signal: host_cpu, target: 0.6}\n"
      "workload:\n  arrival: {process: poisson, rate_per_s: 0.0001, start_s: 3500}\n  prompt_tokens: 100\n"
      "  output_tokens: 10\n";
  const test::Result h = test::run(test::scenario(zero));
  REQUIRE(h.all->arrived == 0);
  CHECK(fleet(h, "scale_ups") == 0);
  // one long answer every 20 s: between arrivals nothing waits, but a request is running; a
  // queue_depth of 0 must not drain the only replica under it
  const test::Result q = test::run(
      test::scenario(zero, {"fleet.autoscale.signal=queue_depth", "fleet.autoscale.target=1",
                            "workload.arrival={process: constant, rate_per_s: 0.05}", "workload.output_tokens=2000"}));
  CHECK(q.all->arrived > 150);
  CHECK(q.all->rejected_queue_full == 0);
  CHECK(q.all->completed + 2 >= q.all->arrived);
}

TEST_CASE("stabilization: a recommendation exactly a window old is out of it, as the HPA's After(cutoff)") {
  // evaluations every 15 s; a 30 s scale-up window holds the recommendations of t - 15 and t, not
  // t - 30: the burst at 100 s is first seen at 105 s, and the up window's lowest is 1 until the
  // evaluation of 120 s, which scales up (at 135 s with the window one evaluation too long)
  const std::string y =
      "name: win\nduration_s: 200\nwarmup_s: 0\ndevice: h100-sxm-80gb\nmodel: llama-3.1-8b\n"
      "engine: {max_num_seqs: 8}\n"
      "fleet:\n  replicas: 1\n  cold_start: {provision_s: 1, image_pull_s: 1, warmup_s: 1}\n"
      "  autoscale: {min_replicas: 1, max_replicas: 50, signal: inflight, target: 10, interval_s: 15, "
      "scale_up_window_s: 30, cooldown_s: 0}\n"
      "workload:\n  arrival: {process: burst, requests: 1500, start_s: 100}\n  prompt_tokens: 2000\n"
      "  output_tokens: 2000\n";
  CHECK(fleet(test::run(test::scenario(y, {"duration_s=119"})), "scale_ups") == 0);
  CHECK(fleet(test::run(test::scenario(y, {"duration_s=121"})), "scale_ups") > 0);
}

TEST_CASE("busy: a draining replica's busy time is left out, as the HPA leaves out pods being deleted") {
  // at 0 a one-token request, at 10 s a 1,500-token one (~10 s) and a 20,000-token one (~140 s),
  // one on each replica. At 15 s the fleet is busy a third of the interval against a target of
  // 0.8: one replica, and the scale-down drains the long request's. At 30 s the ready replica was
  // busy about 5 s of 15: a third, so one replica stays. Counting the draining one (busy all 15 s)
  // as the HPA does not, the average would be about 0.68, ratio 0.85: two replicas, a scale-up
  // while one drains
  const std::string trace = test::write_temp("drain_busy.csv",
                                             "Timestamp,Model,Request tokens,Response tokens,"
                                             "Total tokens,Log Type\n"
                                             "0,ChatGPT,100,1,101,API log\n"
                                             "10,ChatGPT,100,1500,1600,API log\n"
                                             "10,ChatGPT,100,20000,20100,API log\n");
  const std::string y =
      "name: drain\nduration_s: 200\nwarmup_s: 0\ndevice: h100-sxm-80gb\nmodel: llama-3.1-8b\n"
      "fleet:\n  replicas: 2\n  router: least_outstanding\n"
      "  autoscale: {min_replicas: 1, max_replicas: 2, signal: busy, target: 0.8, interval_s: 15, "
      "scale_down_window_s: 0, cooldown_s: 0}\n"
      "workload: {arrival: {process: trace, path: " +
      trace + "}}\n";
  const test::Result r = test::run(test::scenario(y));
  REQUIRE(r.all->completed == 3);
  CHECK(r.all->e2e.max > 100.0);  // the long request outlives the drain's first evaluations
  CHECK(fleet(r, "scale_downs") == 1);
  CHECK(fleet(r, "scale_ups") == 0);
}
