// The host CPU stage (engine.host, libsim/core/host.hpp): hand-computed D/D/c waits, M/D/1 against
// Pollaczek-Khinchine, M/M/c against Erlang C, utilization = lambda S / c, the core-seconds it
// reports, post-processing, lost replicas, the host_cpu autoscaling signal, and a stage too small
// to matter changing nothing else.
#include <doctest/doctest.h>

#include <cmath>
#include <random>
#include <string>

#include "helpers.hpp"
#include "libsim/input/profile.hpp"

using namespace fleetsim;

namespace {

// One replica whose device takes 1 ms per step whatever it holds (a request is one prefill step
// with output 1), behind a host stage of `cores` cores at `a` seconds per prompt token.
std::string host_fleet(const std::string& arrival, int cores, double a, const std::string& prompt, double duration,
                       double warmup, const std::string& output = "1", const std::string& host_extra = "") {
  return "duration_s: " + std::to_string(duration) + "\nwarmup_s: " + std::to_string(warmup) +
         "\ndevice: h100-sxm-80gb\nmodel: llama-3.1-8b\n"
         "engine: {max_num_seqs: 256, max_batched_tokens: 65536, perf_model: linear, step_base_s: 0.001,\n"
         "         host: {cores: " +
         std::to_string(cores) + ", tokenize_s_per_token: " + std::to_string(a) + host_extra +
         "}}\n"
         "fleet: {replicas: 1, queue_limit: 200000}\n"
         "workload:\n  arrival: " +
         arrival + "\n  prompt_tokens: " + prompt + "\n  output_tokens: " + output + "\n";
}

// A random fleet with a host stage: batching, routers, autoscaling, failures, post-processing.
std::string random_host_fleet(std::mt19937& g, int i) {
  auto pick = [&](std::initializer_list<const char*> xs) {
    return std::string(*(xs.begin() + std::uniform_int_distribution<size_t>(0, xs.size() - 1)(g)));
  };
  auto uni = [&](double a, double b) { return std::uniform_real_distribution<double>(a, b)(g); };
  auto iuni = [&](int a, int b) { return std::uniform_int_distribution<int>(a, b)(g); };
  const std::string host = "host: {cores: " + std::to_string(iuni(1, 4)) +
                           ", tokenize_s_per_token: " + std::to_string(uni(1e-6, 5e-5)) +
                           ", per_request_s: " + std::to_string(uni(0, 0.01)) +
                           (iuni(0, 1) ? ", detokenize_s_per_token: " + std::to_string(uni(1e-5, 1e-3)) : "") + "}";
  const std::string engine = iuni(0, 3) == 0
                                 ? "{batching: static, max_batch: " + std::to_string(iuni(1, 16)) + ", " + host + "}"
                                 : "{max_num_seqs: " + std::to_string(iuni(1, 64)) + ", " + host + "}";
  int replicas = iuni(1, 5);
  std::string extra;
  if (iuni(0, 1) == 0) {
    const int lo = iuni(0, 1), hi = iuni(2, 5);
    replicas = iuni(lo, hi);
    extra = ", autoscale: {min_replicas: " + std::to_string(lo) + ", max_replicas: " + std::to_string(hi) +
            ", signal: " + pick({"queue_depth", "inflight", "ttft", "busy", "host_cpu"}) +
            ", target: " + std::to_string(uni(0.3, 0.9)) + ", interval_s: " + std::to_string(uni(5, 30)) +
            ", scale_down_window_s: " + std::to_string(uni(0, 60)) + ", cooldown_s: " + std::to_string(uni(0, 60)) +
            "}, cold_start: {provision_s: " + std::to_string(uni(0, 20)) + ", image_pull_s: 1, warmup_s: 1}";
  }
  if (iuni(0, 2) == 0) extra += ", failures: {mtbf_hours: " + std::to_string(uni(0.01, 0.2)) + "}";
  return "duration_s: 300\nwarmup_s: " + std::to_string(uni(0, 100)) + "\nseed: " + std::to_string(i) +
         "\ndevice: h100-sxm-80gb\nmodel: llama-3.1-8b\nengine: " + engine +
         "\nfleet: {replicas: " + std::to_string(replicas) +
         ", router: " + pick({"round_robin", "least_outstanding", "central_queue"}) +
         ", queue_limit: " + std::to_string(iuni(1, 300)) + extra +
         "}\nworkload:\n  arrival: {process: poisson, rate_per_s: " + std::to_string(uni(1, 60)) +
         "}\n  checkpointed: " + pick({"true", "false"}) +
         (iuni(0, 3) == 0 ? "\n  response_cache: {hit_rate: 0.2}" : "") +
         "\n  prompt_tokens: {dist: lognormal, median: " + std::to_string(iuni(50, 2000)) +
         ", p99: 12000}\n  output_tokens: {dist: geometric, mean: " + std::to_string(iuni(1, 300)) + "}\n";
}

}  // namespace

TEST_CASE("host stage, random fleets: every request accounted for, every core-second within what the cores had") {
  std::mt19937 g(20261201);
  for (int i = 0; i < 120; ++i) {
    const std::string yaml = random_host_fleet(g, i);
    CAPTURE(yaml);
    const auto r = test::run(test::scenario(yaml));
    test::check_conserves(r);
    const ClassTally& t = *r.all;
    const PoolTally& pt = r.tally->pools[0];
    const double cores = r.report["host"]["cores_per_replica"].get<double>();
    CHECK(pt.host_busy_s <= cores * (pt.replica_s - pt.cold_s) * (1 + 1e-9) + 1e-9);
    CHECK(pt.host_lost_s <= pt.host_busy_s + 1e-9);
    if (t.host_time.n > 0) {
      CHECK(t.host_wait.min >= 0.0);
      CHECK(t.host_time.min > 0.0);
      CHECK(t.host_time.sum >= t.host_wait.sum);
      CHECK(t.host_time.sum <= t.ttft.sum * (1 + 1e-12));
      CHECK(t.queue_wait.min >= 0.0);
      CHECK(t.e2e.min >= t.ttft.min - 1e-12);
    }
  }
}

TEST_CASE("host stage, D/D/1 below capacity: no wait, host time = service, TTFT = service + one step") {
  // 10 req/s evenly spaced, 4,000 tokens at 10 us: 40 ms of a 100 ms gap
  const auto r = test::run(test::scenario(host_fleet("{process: constant, rate_per_s: 10}", 1, 1e-5, "4000", 100, 0)));
  CHECK(r.drained);
  const ClassTally& c = r.tally->classes[0];
  REQUIRE(c.completed == 1000);
  CHECK(c.host_wait.n == 1000);
  CHECK(c.host_wait.max == 0.0);
  CHECK(c.host_time.min == doctest::Approx(0.04).epsilon(1e-12));
  CHECK(c.host_time.max == doctest::Approx(0.04).epsilon(1e-12));
  CHECK(c.ttft.min == doctest::Approx(0.041).epsilon(1e-9));
  CHECK(c.ttft.max == doctest::Approx(0.041).epsilon(1e-9));
  CHECK(c.queue_wait.max == 0.0);  // the device queue: measured from the end of the host stage
  // busy core-seconds = the jobs' service times; utilization = lambda S / c
  const PoolTally& p = r.tally->pools[0];
  CHECK(p.host_busy_s == doctest::Approx(1000 * 0.04).epsilon(1e-9));
  const Json& h = r.report["host"];
  CHECK(h["utilization"].get<double>() == doctest::Approx(10 * 0.04 / 1).epsilon(1e-9));
  CHECK(h["cores_per_replica"].get<int>() == 1);
  CHECK(h["ttft_share"].get<double>() == doctest::Approx(0.04 / 0.041).epsilon(1e-9));
  CHECK(r.report["latency_s"]["host_wait"]["count"].get<int>() == 1000);
}

TEST_CASE("host stage, D/D/1 overloaded: the n-th request waits n (S - gap), the core is busy the whole window") {
  // S = 15,000 x 10 us = 150 ms against a 100 ms gap: request n starts at n S, waits n x 50 ms
  const auto r = test::run(test::scenario(host_fleet("{process: constant, rate_per_s: 10}", 1, 1e-5, "15000", 20, 0)));
  CHECK(r.drained);
  const ClassTally& c = r.tally->classes[0];
  REQUIRE(c.completed == 200);
  CHECK(c.host_wait.min == 0.0);
  CHECK(c.host_wait.max == doctest::Approx(199 * 0.05).epsilon(1e-9));
  CHECK(c.host_wait.sum / 200 == doctest::Approx(99.5 * 0.05).epsilon(1e-9));
  CHECK(c.host_time.sum / 200 == doctest::Approx(99.5 * 0.05 + 0.15).epsilon(1e-9));
  // the core never rests inside the window (its last job ends at 30 s): utilization 1, never more
  const Json& h = r.report["host"];
  CHECK(h["utilization"].get<double>() == doctest::Approx(1.0).epsilon(1e-12));
  CHECK(h["busy_core_hours"].get<double>() == doctest::Approx(20.0 / 3600).epsilon(1e-12));
  // while the device, 1 ms per request, sits idle
  CHECK(h["device_busy_fraction"].get<double>() < 0.01);
  CHECK(h["ttft_share"].get<double>() > 0.99);
}

TEST_CASE("host stage, D/D/2: two cores take alternate requests without waiting, utilization = lambda S / c") {
  const auto r = test::run(test::scenario(host_fleet("{process: constant, rate_per_s: 10}", 2, 1e-5, "15000", 20, 0)));
  CHECK(r.drained);
  const ClassTally& c = r.tally->classes[0];
  REQUIRE(c.completed == 200);
  CHECK(c.host_wait.max == 0.0);
  CHECK(c.host_time.max == doctest::Approx(0.15).epsilon(1e-9));
  // busy core-seconds: every job's 150 ms, the last one cut at the window's end (19.9 s + 0.15 s > 20 s)
  double busy = 0;
  for (int n = 0; n < 200; ++n) busy += std::min(n * 0.1 + 0.15, 20.0) - n * 0.1;
  CHECK(r.tally->pools[0].host_busy_s == doctest::Approx(busy).epsilon(1e-9));
  CHECK(r.report["host"]["utilization"].get<double>() == doctest::Approx(busy / (2 * 20.0)).epsilon(1e-9));
  CHECK(r.report["host"]["utilization"].get<double>() == doctest::Approx(10 * 0.15 / 2).epsilon(0.002));
}

TEST_CASE("host stage, M/D/1: mean host wait = Pollaczek-Khinchine, utilization = lambda S") {
  // S = 1,000 x 10 us = 10 ms, lambda = 70/s: rho 0.7, Wq = rho S / (2 (1 - rho)) = 11.67 ms
  const double lambda = 70, S = 0.01, rho = lambda * S;
  const auto r =
      test::run(test::scenario(host_fleet("{process: poisson, rate_per_s: 70}", 1, 1e-5, "1000", 6000, 100)));
  CHECK(r.drained);
  const ClassTally& c = r.tally->classes[0];
  const double wq = c.host_wait.sum / double(c.host_wait.n);
  const double expect = rho * S / (2 * (1 - rho));
  MESSAGE("P-K Wq = " << expect << " s, simulated " << wq << " s over " << c.host_wait.n << " requests");
  CHECK(wq == doctest::Approx(expect).epsilon(0.03));
  CHECK(r.report["host"]["utilization"].get<double>() == doctest::Approx(rho).epsilon(0.01));
  // host time = wait + service, request by request
  CHECK(c.host_time.sum / double(c.host_time.n) == doctest::Approx(wq + S).epsilon(1e-9));
}

TEST_CASE("host stage, 4 cores, exponential prompt lengths: mean host wait = Erlang C") {
  // service = 10 us x prompt, prompt exponential with mean 1,000: ~exponential with mean 10 ms
  const double lambda = 320, mu = 100;
  const int c = 4;
  const auto r = test::run(test::scenario(
      host_fleet("{process: poisson, rate_per_s: 320}", c, 1e-5, "{dist: exponential, mean: 1000}", 1500, 50)));
  CHECK(r.drained);
  const ClassTally& t = r.tally->classes[0];
  const double wq = t.host_wait.sum / double(t.host_wait.n);
  const double expect = test::erlang_c_wq(lambda, mu, c);
  MESSAGE("Erlang C Wq = " << expect << " s, simulated " << wq << " s");
  CHECK(wq == doctest::Approx(expect).epsilon(0.05));
  CHECK(r.report["host"]["utilization"].get<double>() == doctest::Approx(lambda / mu / c).epsilon(0.01));
}

TEST_CASE("host stage: a response is post-processed on the host after its last token") {
  // 1,000 prompt tokens at 10 us = 10 ms; 50 output tokens at 100 us = 5 ms after the device's
  // prefill step (1 ms) and 49 decode steps (1 ms each)
  const auto r = test::run(test::scenario(host_fleet("{process: constant, rate_per_s: 10}", 1, 1e-5, "1000", 100, 0,
                                                     "50", ", detokenize_s_per_token: 1.0e-4")));
  CHECK(r.drained);
  const ClassTally& c = r.tally->classes[0];
  REQUIRE(c.completed == 1000);
  CHECK(c.ttft.max == doctest::Approx(0.011).epsilon(1e-9));
  CHECK(c.e2e.min == doctest::Approx(0.065).epsilon(1e-9));
  CHECK(c.e2e.max == doctest::Approx(0.065).epsilon(1e-9));
  CHECK(c.host_time.max == doctest::Approx(0.01).epsilon(1e-9));  // the part of TTFT: pre-processing only
  CHECK(r.tally->pools[0].host_busy_s == doctest::Approx(1000 * 0.015).epsilon(1e-9));
}

TEST_CASE("host stage: lost replicas lose no request, and their cut tokenizations are counted") {
  for (const char* router : {"least_outstanding", "round_robin", "central_queue"}) {
    CAPTURE(router);
    const Scenario s = test::scenario(
        "duration_s: 1800\nwarmup_s: 0\nseed: 5\ndevice: h100-sxm-80gb\nmodel: llama-3.1-8b\n"
        "engine: {max_num_seqs: 64, host: {cores: 1, tokenize_s_per_token: 2.0e-5, per_request_s: 0.002,"
        " detokenize_s_per_token: 1.0e-4}}\n"
        "fleet:\n  replicas: 3\n  router: " +
        std::string(router) +
        "\n  queue_limit: 500\n"
        "  failures: {mtbf_hours: 0.03}\n"
        "  cold_start: {provision_s: 5, image_pull_s: 5, warmup_s: 5}\n"
        "workload:\n  arrival: {process: poisson, rate_per_s: 25}\n"
        "  prompt_tokens: {dist: uniform, min: 500, max: 3000}\n  output_tokens: {dist: uniform, min: 10, max: 200}\n");
    const auto r = test::run(s);
    CHECK(r.drained);
    const ClassTally& c = *r.all;
    const PoolTally& p = r.tally->pools[0];
    CHECK(p.interruptions > 10);
    CHECK(c.arrived == c.completed + c.rejected_queue_full + c.rejected_too_long + c.failed);
    CHECK(c.retried > 0);
    CHECK(p.host_lost_s > 0);
    CHECK(p.host_lost_s <= p.host_busy_s);
    const double u = r.report["host"]["utilization"].get<double>();
    CHECK(u > 0.3);
    CHECK(u <= 1.0);
  }
}

TEST_CASE("host stage: a response lost in post-processing is device work lost, as a request cut on the device") {
  // post-processing (1 s a response on one core) outlasts the device's work (about 0.1 s), so
  // nearly every retried request was lost with its prompt and whole output computed
  const Scenario s = test::scenario(
      "duration_s: 3600\nwarmup_s: 0\nseed: 4\ndevice: h100-sxm-80gb\nmodel: llama-3.1-8b\n"
      "engine: {max_num_seqs: 64, perf_model: linear, step_base_s: 0.001,"
      " host: {cores: 1, tokenize_s_per_token: 1.0e-6, detokenize_s_per_token: 0.01}}\n"
      "fleet: {replicas: 2, failures: {mtbf_hours: 0.25}}\n"
      "workload: {arrival: {process: poisson, rate_per_s: 1.6}, prompt_tokens: 1000, output_tokens: 100}\n");
  const auto r = test::run(s);
  const ClassTally& c = *r.all;
  REQUIRE(c.retried > 20);
  // each retried request lost at most its 1,100 tokens, and most lost all of them
  CHECK(r.tally->pools[0].lost_tokens <= 1100.0 * double(c.retried));
  CHECK(r.tally->pools[0].lost_tokens >= 0.8 * 1100.0 * double(c.retried));
  CHECK(c.lost_tokens == r.tally->pools[0].lost_tokens);
}

TEST_CASE("host stage: an HPA on host CPU reads the modelled cores, and scales when they saturate") {
  // scenarios/autoscale-host-cpu.yaml: on its request-count model the signal reads ~13% and never
  // scales; with one core at 50 us per prompt token (~70 ms a request) at 20 req/s the host is
  // saturated, and the same HPA adds replicas
  const std::string path = std::string(FLEETSIM_SOURCE_DIR) + "/scenarios/autoscale-host-cpu.yaml";
  const auto saturated =
      test::run(load_scenario_file(path, {"duration_s=1200", "engine.host={cores: 1, tokenize_s_per_token: 5.0e-5}"}));
  CHECK(saturated.report["fleet"]["max_replicas"].get<double>() > 1);
  CHECK(saturated.drained);
  const auto idle =
      test::run(load_scenario_file(path, {"duration_s=1200", "engine.host={cores: 16, tokenize_s_per_token: 1.0e-6}"}));
  CHECK(idle.report["fleet"]["max_replicas"].get<double>() == 1);
  CHECK(idle.report["host"]["utilization"].get<double>() < 0.01);
}

TEST_CASE("host stage: a stage too small to matter changes no count and no latency beyond its own time") {
  const Scenario off = load_default_scenario({"duration_s=900"});
  const Scenario on =
      load_default_scenario({"duration_s=900", "engine.host={cores: 64, tokenize_s_per_token: 1.0e-13}"});
  const auto a = test::run(off), b = test::run(on);
  CHECK(!a.report.contains("host"));
  CHECK(!a.report["latency_s"].contains("host_wait"));
  CHECK(b.report.contains("host"));
  CHECK(a.all->completed == b.all->completed);
  CHECK(a.all->preempted == b.all->preempted);
  CHECK(a.all->output_tokens == b.all->output_tokens);
  CHECK(b.all->ttft.sum / b.all->ttft.n == doctest::Approx(a.all->ttft.sum / a.all->ttft.n).epsilon(1e-6));
  CHECK(b.all->e2e.sum / b.all->e2e.n == doctest::Approx(a.all->e2e.sum / a.all->e2e.n).epsilon(1e-6));
  CHECK(b.all->host_wait.max == 0.0);
}

TEST_CASE("the shipped cpu-bound-tokenizer scenario: one tokenizer thread leaves the device idle and TTFT host-bound") {
  const auto r =
      test::run(load_scenario_file(std::string(FLEETSIM_SOURCE_DIR) + "/scenarios/cpu-bound-tokenizer.yaml"));
  CHECK(r.drained);
  const Json& one = r.report["pools"]["one-thread"]["host"];
  const Json& eight = r.report["pools"]["eight-cores"]["host"];
  CHECK(one["utilization"].get<double>() > 0.85);
  CHECK(one["device_busy_fraction"].get<double>() < 0.4);
  CHECK(one["ttft_share"].get<double>() > 0.9);
  CHECK(one["mean_wait_s"].get<double>() > 0.1);
  CHECK(eight["utilization"].get<double>() < 0.15);
  CHECK(eight["p99_wait_s"].get<double>() < 0.001);
  const double p99_one = r.report["classes"]["pairs-one-thread"]["latency_s"]["ttft"]["p99"].get<double>();
  const double p99_eight = r.report["classes"]["pairs-eight-cores"]["latency_s"]["ttft"]["p99"].get<double>();
  CHECK(p99_one > 5 * p99_eight);
}

TEST_CASE("engine.host: a host stage that tokenizes takes the place of the step model's per-token client time") {
  const std::string base =
      "duration_s: 60\ndevice: h100-sxm-80gb\nmodel: llama-3.1-8b\nfleet: {replicas: 1}\n"
      "workload: {arrival: {process: poisson, rate_per_s: 1}, prompt_tokens: 100, output_tokens: 10}\n";
  const double per_in = physics_profile().c.client_s_per_input_token, fixed = physics_profile().c.client_ttft_s;
  REQUIRE(per_in > 0);
  const PoolSpec none = test::scenario(base).pools[0];
  CHECK(none.client_s_per_input_token == per_in);
  CHECK(none.client_ttft_s == fixed);
  // the host's tokenizer is the API server's: its per-token time goes; the HTTP time stays
  const PoolSpec tok = test::scenario(base + "engine: {host: {cores: 1, tokenize_s_per_token: 1.0e-5}}\n").pools[0];
  CHECK(tok.client_s_per_input_token == 0.0);
  CHECK(tok.client_ttft_s == fixed);
  // a stage doing only per-request work tokenizes nothing: the per-token time stays
  const PoolSpec req =
      test::scenario(base + "engine: {host: {cores: 1, tokenize_s_per_token: 0, per_request_s: 0.001}}\n").pools[0];
  CHECK(req.client_s_per_input_token == per_in);
  // a key the scenario gives is kept
  const PoolSpec given =
      test::scenario(base +
                     "engine: {client_s_per_input_token: 2.0e-6, host: {cores: 1, tokenize_s_per_token: 1.0e-5}}\n")
          .pools[0];
  CHECK(given.client_s_per_input_token == 2.0e-6);
  const PoolSpec detok = test::scenario(base +
                                        "engine: {client_s_per_output_token: 3.0e-6, host: {cores: 1, "
                                        "tokenize_s_per_token: 1.0e-5, detokenize_s_per_token: 1.0e-6}}\n")
                             .pools[0];
  CHECK(detok.client_s_per_output_token == 3.0e-6);
}

TEST_CASE("engine.host: the cores and the tokenizer's speed are required, a stage with no work is an error") {
  const std::string base =
      "duration_s: 60\ndevice: h100-sxm-80gb\nmodel: llama-3.1-8b\nfleet: {replicas: 1}\n"
      "workload: {arrival: {process: poisson, rate_per_s: 1}, prompt_tokens: 100, output_tokens: 10}\n";
  CHECK(test::error_of(base + "engine: {host: {tokenize_s_per_token: 1.0e-5}}\n")
            .find("engine.host: missing required key 'cores'") != std::string::npos);
  CHECK(test::error_of(base + "engine: {host: {cores: 2}}\n").find("missing required key 'tokenize_s_per_token'") !=
        std::string::npos);
  CHECK(test::error_of(base + "engine: {host: {cores: 2, tokenize_s_per_token: 0}}\n")
            .find("a host stage with no work") != std::string::npos);
  CHECK(test::error_of(base + "engine: {host: {cores: 0, tokenize_s_per_token: 1.0e-5}}\n").find("engine.host.cores") !=
        std::string::npos);
  CHECK(test::error_of(base + "engine: {host: {cores: 2, tokenize_s_per_token: 1.0e-5, thread: 1}}\n")
            .find("unknown key 'thread'") != std::string::npos);
  CHECK(test::error_of(base + "engine: {host: {cores: 2, tokenize_s_per_token: 1.0e-5}}\n") == "(no error)");
}
