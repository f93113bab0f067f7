// Closed-loop users (arrival process `concurrency`), constant and burst arrivals, and goodput:
// the interactive response time law, single-request latency from the step model, saturation,
// exact arrival counts, goodput fractions, a mixed pool, and located input errors.
#include <doctest/doctest.h>

#include <cmath>
#include <memory>
#include <string>

#include "helpers.hpp"
#include "libsim/base/error.hpp"
#include "libsim/core/engine.hpp"

using namespace fleetsim;

namespace {

// One replica whose every step takes `step` seconds (linear model, step_base_s only): a request
// alone takes a prefill step, which emits its first token, then output - 1 decode steps.
std::string linear_fleet(double step, int max_num_seqs = 256) {
  return "device: h100-sxm-80gb\nmodel: llama-3.1-8b\n"
         "engine: {perf_model: linear, step_base_s: " +
         std::to_string(step) + ", max_num_seqs: " + std::to_string(max_num_seqs) +
         "}\n"
         "fleet: {replicas: 1, queue_limit: 100000}\n";
}

std::string closed_loop(int clients, const std::string& think, double duration, double warmup, int output,
                        const std::string& fleet = linear_fleet(0.01)) {
  return "duration_s: " + std::to_string(duration) + "\nwarmup_s: " + std::to_string(warmup) + "\n" + fleet +
         "workload:\n  arrival: {process: concurrency, clients: " + std::to_string(clients) +
         (think.empty() ? std::string() : ", think_time_s: " + think) +
         "}\n  prompt_tokens: 64\n  output_tokens: " + std::to_string(output) + "\n";
}

using test::error_of;

double window_of(const Scenario& s) { return s.duration_s - s.warmup_s; }

}  // namespace

TEST_CASE("closed loop: users in the system plus users thinking = clients, exactly, over the window") {
  for (const std::string think : {"{dist: exponential, mean: 2}", "{dist: lognormal, median: 1.5, p99: 8}"}) {
    const int N = 12;
    const Scenario s = test::scenario(closed_loop(N, think, 4000, 200, 50));
    const auto r = test::run(s);
    CHECK(r.drained);
    const ClassTally& t = *r.all;
    const double window = window_of(s);
    CHECK(t.thinking_s > 0);
    CHECK(t.in_system_s + t.thinking_s == doctest::Approx(N * window).epsilon(1e-9));
    // the interactive response time law: X (R + Z) = N, up to edge effects
    const Json& cl = r.report["closed_loop"];
    CHECK(cl["clients"].get<int>() == N);
    CHECK(cl["mean_in_system"].get<double>() + cl["mean_thinking"].get<double>() == doctest::Approx(N).epsilon(1e-9));
    const double X = double(t.completed) / window, R = t.e2e.sum / double(t.e2e.n), Z = s.classes[0].think_mean_s;
    MESSAGE(think << ": X (R + Z) = " << X * (R + Z) << " for N = " << N);
    CHECK(X * (R + Z) == doctest::Approx(N).epsilon(0.03));
    CHECK(cl["response_time_law"].get<double>() == doctest::Approx(X * (R + Z)));
  }
}

TEST_CASE("one client without think time: every request runs alone, at the step model's latency") {
  const double step = 0.01;
  const int output = 40;
  const Scenario s = test::scenario(closed_loop(1, "0", 600, 50, output, linear_fleet(step)));
  const auto r = test::run(s);
  CHECK(r.drained);
  const ClassTally& t = *r.all;
  // a prefill step that emits the first token, then output - 1 decode steps: output steps in all
  const double e2e = output * step;
  CHECK(t.e2e.n > 0);
  CHECK(t.e2e.min == doctest::Approx(e2e).epsilon(1e-9));
  CHECK(t.e2e.max == doctest::Approx(e2e).epsilon(1e-9));
  CHECK(t.ttft.max == doctest::Approx(step).epsilon(1e-9));
  CHECK(t.queue_wait.max == doctest::Approx(0.0));
  CHECK(std::abs(double(t.completed) - window_of(s) / e2e) <= 1.0);
  CHECK(t.in_system_s == doctest::Approx(window_of(s)).epsilon(1e-9));  // always exactly one request in flight
}

TEST_CASE("zero think time: more clients never reduce throughput, one client's throughput = 1 / latency") {
  // the roofline model: a bigger batch costs more per step but less per request, until it saturates
  const std::string fleet = "device: h100-sxm-80gb\nmodel: llama-3.1-8b\nfleet: {replicas: 1}\n";
  double prev = 0;
  for (int n : {1, 2, 4, 8, 16, 32, 64, 128, 256, 384}) {
    const Scenario s = test::scenario(closed_loop(n, "", 300, 30, 128, fleet), {"workload.prompt_tokens=512"});
    const auto r = test::run(s);
    CHECK(r.drained);
    const double X = double(r.all->completed) / window_of(s);
    MESSAGE(n << " clients: " << X << " req/s, mean e2e " << r.all->e2e.sum / double(r.all->e2e.n) << " s");
    CHECK(X >= prev * 0.995);
    if (n == 1) {
      const double R = r.all->e2e.sum / double(r.all->e2e.n);
      CHECK(X == doctest::Approx(1.0 / R).epsilon(0.01));
    }
    prev = std::max(prev, X);
  }
}

TEST_CASE("constant arrivals are evenly spaced, a burst sends exactly its requests") {
  const std::string base = "duration_s: 1000\nwarmup_s: 100\n" + linear_fleet(0.001) +
                           "workload:\n  prompt_tokens: 16\n  output_tokens: 4\n";
  for (double rate : {0.7, 3.0, 12.5}) {
    const Scenario s =
        test::scenario(base + "  arrival: {process: constant, rate_per_s: " + std::to_string(rate) + "}\n");
    const auto r = test::run(s);
    CHECK(std::abs(double(r.all->arrived) - rate * window_of(s)) <= 1.0);
    CHECK(r.all->completed == r.all->arrived);
    CHECK(r.report["scenario"]["arrival"] == "constant");
  }
  const Scenario b = test::scenario(base + "  arrival: {process: burst, requests: 37, start_s: 150}\n");
  const auto r = test::run(b);
  CHECK(r.all->arrived == 37);
  CHECK(r.all->completed == 37);
  CHECK(r.drained);
  CHECK(r.report["scenario"]["requests"] == 37);
  // with one sequence at a time they queue behind each other: the last waits for 36 others
  const Scenario one =
      test::scenario(base + "  arrival: {process: burst, requests: 37}\n", {"engine.max_num_seqs=1", "warmup_s=0"});
  const auto q = test::run(one);
  CHECK(q.all->arrived == 37);
  CHECK(q.all->queue_wait.max == doctest::Approx(36 * 4 * 0.001).epsilon(1e-6));
}

TEST_CASE("goodput: every request good, none good, and half good at the median TTFT") {
  const std::vector<std::string> base = {"duration_s=1200"};
  auto good_fraction = [&](const std::vector<std::string>& extra) {
    std::vector<std::string> sets = base;
    sets.insert(sets.end(), extra.begin(), extra.end());
    const auto r = test::run(load_default_scenario(sets));
    return r.report;
  };
  const Json all = good_fraction({"workload.goodput={ttft_s: 1e6, tpot_s: 1e6, e2e_s: 1e6}"});
  CHECK(all["requests"]["good_fraction"].get<double>() == 1.0);
  CHECK(all["throughput"]["goodput_per_s"].get<double>() == all["throughput"]["requests_per_s"].get<double>());
  CHECK(all["scenario"]["goodput"] == "ttft <= 1e+06 s, tpot <= 1e+06 s, e2e <= 1e+06 s");
  const Json none = good_fraction({"workload.goodput={e2e_s: 1e-6}"});
  CHECK(none["requests"]["good_fraction"].get<double>() == 0.0);
  CHECK(none["throughput"]["goodput_per_s"].get<double>() == 0.0);
  // no bounds: every completed request is good
  const Json free = good_fraction({});
  CHECK(free["requests"]["good_fraction"].get<double>() == 1.0);
  CHECK_FALSE(free["scenario"].contains("goodput"));
  const double p50 = free["latency_s"]["ttft"]["p50"].get<double>();
  const Json half = good_fraction({"workload.goodput={ttft_s: " + std::to_string(p50) + "}"});
  MESSAGE("TTFT p50 " << p50 << " s: good fraction " << half["requests"]["good_fraction"].get<double>());
  CHECK(half["requests"]["good_fraction"].get<double>() == doctest::Approx(0.5).epsilon(0.04));
  // tok/s/user is one user's decode speed: 1 / mean TPOT
  CHECK(free["throughput"]["output_tok_per_s_per_user"].get<double>() ==
        doctest::Approx(1.0 / free["latency_s"]["tpot"]["mean"].get<double>()));
}

TEST_CASE("a pool serving open-loop traffic and closed-loop workers: the users' identity holds for their class") {
  const std::string yaml =
      "duration_s: 1500\nwarmup_s: 100\n" + linear_fleet(0.01) +
      "workload: {prompt_tokens: 128, output_tokens: {dist: geometric, mean: 30}}\n"
      "classes:\n"
      "  chat: {arrival: {process: poisson, rate_per_s: 4}, goodput: {ttft_s: 0.05}}\n"
      "  workers: {arrival: {process: concurrency, clients: 6, think_time_s: {dist: uniform, min: 0.5, max: 1.5},"
      " start_s: 50}}\n";
  const Scenario s = test::scenario(yaml);
  CHECK(s.classes[1].think_mean_s == doctest::Approx(1.0));
  const auto r = test::run(s);
  CHECK(r.drained);
  const double window = window_of(s);
  const ClassTally& chat = r.tally->classes[0];
  const ClassTally& w = r.tally->classes[1];
  CHECK(chat.completed > 0);
  CHECK(chat.thinking_s == 0.0);
  CHECK(w.in_system_s + w.thinking_s == doctest::Approx(6 * window).epsilon(1e-9));
  const Json& cw = r.report["classes"]["workers"]["closed_loop"];
  CHECK(cw["clients"] == 6);
  CHECK(cw["response_time_law"].get<double>() == doctest::Approx(6).epsilon(0.03));
  CHECK_FALSE(r.report["classes"]["chat"].contains("closed_loop"));
  CHECK(r.report["classes"]["chat"]["goodput"] == "ttft <= 0.05 s");
  CHECK(r.report["closed_loop"]["clients"] == 6);
}

TEST_CASE("closed-loop users behind a full queue are rejected and come back after retry_after_s") {
  // 40 users, one sequence at a time, room for 4 waiting: the rest are turned away (queue_full)
  const std::string yaml = closed_loop(40, "", 200, 0, 10, linear_fleet(0.01, 1));
  const Scenario s = test::scenario(yaml, {"fleet.queue_limit=4", "workload.arrival.retry_after_s=0.5"});
  const auto r = test::run(s);
  CHECK(r.drained);
  CHECK(r.tally->status == 0);
  CHECK(r.all->rejected_queue_full > 0);
  CHECK(r.all->in_system_s + r.all->thinking_s == doctest::Approx(40 * 200.0).epsilon(1e-9));
}

TEST_CASE("closed-loop users answered by the response cache and by failures after max_retries come back") {
  const std::string yaml = closed_loop(5, "0.2", 600, 0, 20) + "  response_cache: {hit_rate: 0.3, latency_s: 0.01}\n";
  const auto r = test::run(test::scenario(yaml));
  CHECK(r.all->cache_hits > 0);
  CHECK(r.drained);
  // a user waiting on the cache is in the system, not thinking: Little's law holds with half the
  // requests answered after 0.5 s (mean_in_system = completions / window x mean e2e)
  const auto slow = test::run(
      test::scenario(closed_loop(100, "1", 600, 0, 10) + "  response_cache: {hit_rate: 0.5, latency_s: 0.5}\n"));
  const ClassTally& a = *slow.all;
  CHECK(a.in_system_s == doctest::Approx(double(a.completed) * a.e2e.sum / double(a.e2e.n)).epsilon(0.01));
  CHECK(a.in_system_s + a.thinking_s == doctest::Approx(100 * 600.0).epsilon(1e-9));
  // a server that crashes on every request: each one fails after its retries, and its user goes on
  const std::string crash = closed_loop(3, "1", 2000, 0, 20) + "  max_retries: 1\n";
  const auto f = test::run(
      test::scenario(crash, {"device=l4-24gb", "engine.on_kv_exhausted=crash", "workload.prompt_tokens=30000"}));
  CHECK(f.all->failed > 1);
  CHECK(f.all->in_system_s + f.all->thinking_s == doctest::Approx(3 * 2000.0).epsilon(1e-9));
}

TEST_CASE("closed-loop, constant, burst and goodput input errors are located") {
  const std::string base =
      "duration_s: 100\n" + linear_fleet(0.01) + "workload:\n  prompt_tokens: 10\n  output_tokens: 10\n";
  CHECK(error_of(base + "  arrival: {process: concurrency, clients: 0}\n") ==
        "<test>:9:44: error: workload.arrival.clients: value 0 is out of range (expected an integer in [1, 1000000])");
  CHECK(error_of(base + "  arrival: {process: concurrency, clients: 4, think_time_s: -1}\n") ==
        "<test>:9:61: error: workload.arrival.think_time_s: value -1 is out of range (expected seconds in [0, 1e+07])");
  CHECK(
      error_of(base + "  arrival: {process: concurrency, clients: 4, think_time_s: {dist: uniform, min: -1, max: 2}}\n")
          .find("workload.arrival.think_time_s.min: value -1 is out of range") != std::string::npos);
  CHECK(error_of(base + "  arrival: {process: concurrency, clients: 4, rate_per_s: 3}\n") ==
        "<test>:9:59: error: workload.arrival.rate_per_s: 'rate_per_s' does not apply to process: concurrency");
  CHECK(error_of(base + "  arrival: {process: poisson, rate_per_s: 3, think_time_s: 1}\n") ==
        "<test>:9:60: error: workload.arrival.think_time_s: 'think_time_s' does not apply to process: poisson");
  CHECK(error_of(base + "  arrival: {process: constant}\n").find("missing required key 'rate_per_s'") !=
        std::string::npos);
  CHECK(error_of(base + "  arrival: {process: burst, requests: 2.5}\n").find("expected an integer") !=
        std::string::npos);
  CHECK(error_of(base + "  arrival: {process: constant, rate_per_s: 1}\n  goodput: {ttft_s: 1, itl_s: 2}\n") ==
        "<test>:10:24: error: workload.goodput.itl_s: unknown key 'itl_s' (expected one of: ttft_s, tpot_s, e2e_s)");
  CHECK(error_of(base + "  arrival: {process: constant, rate_per_s: 1}\n  goodput: {ttft_s: 0}\n")
            .find("workload.goodput.ttft_s: value 0 is out of range") != std::string::npos);
  CHECK(
      error_of(base + "  arrival: {process: concurrency, clients: 2}\n  response_cache: {hit_rate: 1, latency_s: 0}\n")
          .find("would send forever at one instant") != std::string::npos);
  // an empirical think time whose only value drawn is 0 (the 1 s has no weight) is no think time
  CHECK(error_of(base + "  arrival: {process: concurrency, clients: 2, think_time_s: {dist: empirical, values: [0, 1], "
                        "weights: [1, 0]}}\n  response_cache: {hit_rate: 1, latency_s: 0}\n")
            .find("would send forever at one instant") != std::string::npos);
  // a microsecond's think with every request a hit: 2 users x 100 s / 1e-7 s = 2e9 requests, past
  // the 1e9 a run may hold (the run would take hours, then stop on its event budget); a cache
  // latency, a cap on requests or a miss now and then bounds it
  const std::string quick = "  arrival: {process: concurrency, clients: 2, think_time_s: 1e-7";
  CHECK(error_of(base + quick + "}\n  response_cache: {hit_rate: 1, latency_s: 0}\n") ==
        "<test>:10:19: error: workload.response_cache: closed-loop users all answered by the cache send one request "
        "each per 1e-07 s (mean think time plus the cache's latency): about 2e+09 requests in 100 s, past the 1e9 a "
        "run may hold; lengthen think_time_s or response_cache.latency_s, lower hit_rate below 1, or cap them with "
        "arrival.requests");
  CHECK(error_of(base + quick + "}\n  response_cache: {hit_rate: 1, latency_s: 1e-6}\n") == "(no error)");
  CHECK(error_of(base + quick + ", requests: 1000}\n  response_cache: {hit_rate: 1, latency_s: 0}\n") == "(no error)");
  CHECK(error_of(base + quick + "}\n  response_cache: {hit_rate: 0.5, latency_s: 0}\n") == "(no error)");
  // judged on the cache a class ends up with: its own overrides the workload's
  const std::string classes =
      "  response_cache: {hit_rate: 1, latency_s: 0}\nclasses:\n  web: {arrival: {process: poisson, rate_per_s: 5}}\n"
      "  bench: {arrival: {process: concurrency, clients: 4}, response_cache: {hit_rate: 0.2, latency_s: 0}}\n";
  CHECK(error_of(base + classes) == "(no error)");
  CHECK(
      error_of(base + classes, {"classes.bench.response_cache.hit_rate=1"}).find("would send forever at one instant") !=
      std::string::npos);
}

// The workspace holds queue_limit x queues request slots; a run hands them out as requests
// arrive, freed ones first, so it touches as many as it ever has in the system at once: with
// closed-loop users, exactly the number of users (all send at the start), however many requests
// they send and however large the queue limit.
TEST_CASE("a run touches as many request slots as it has requests in the system at once") {
  for (int clients : {1, 7, 40}) {
    CAPTURE(clients);
    const Scenario sc = test::scenario(closed_loop(clients, "0.05", 60.0, 0.0, 20));
    const SimParams p = sc.params();
    REQUIRE(workspace_layout(p).req_cap >= 100000);
    HostWorkspace ws;
    auto tally = std::make_unique<Tally>();
    Sim s = sim_begin(p, 0, ws.for_params(p), *tally);
    sim_advance<false>(s);
    sim_end(s, p.duration_s);
    CHECK(tally->classes[0].arrived > 20 * clients);  // each user sent many requests
    CHECK(s.req_hwm == clients);
    CHECK(s.req_free_n == clients);  // all back, none lost
  }
}
