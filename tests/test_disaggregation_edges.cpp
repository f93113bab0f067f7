// Disaggregated prefill and decode at its edges: what a decode replica holds of a prompt the
// prefill pool cached, KV in flight as work for the decode pool's autoscaler, the pool a single
// workload arrives at, and detokenization where tokens are generated.
#include <doctest/doctest.h>

#include <string>

#include "helpers.hpp"

using namespace fleetsim;

namespace {

const std::string kHead =
    "seed: 1\nmodel: llama-3.1-8b\ndevice: h100-sxm-80gb\n"
    "engine: {perf_model: linear, step_base_s: 0.01, per_prefill_token_s: 0.0001, per_decode_seq_s: 0.001, "
    "async_scheduling: false, latency_at: engine, client_ttft_s: 0}\n";

}  // namespace

TEST_CASE("disaggregation: a request preempted on its decode replica computes its whole prompt there") {
  // two users' conversations: the second turn's history is cached on the prefill replica, which
  // the decode replica (too small for both, so it preempts) never held
  const std::string yaml = kHead +
                           "duration_s: 30\npools:\n  prefill:\n    fleet: {replicas: 1, router: session_affinity}\n"
                           "    disaggregation: {decode_pool: decode, gb_s: 10, latency_us: 0}\n"
                           "  decode:\n    engine: {gpu_memory_utilization: 0.22}\n    fleet: {replicas: 1}\n"
                           "classes:\n  chat:\n    pool: prefill\n"
                           "    arrival: {process: concurrency, clients: 2, think_time_s: 0, requests: 4, turns: 2, "
                           "ramp_s: 0.5}\n    prompt_tokens: 1000\n    output_tokens: 1500\n";
  const auto cached = test::run(test::scenario(yaml, {"pools.decode.engine.prefix_caching=true"}));
  const auto plain = test::run(test::scenario(yaml, {"pools.decode.engine.prefix_caching=false"}));
  REQUIRE(cached.tally->classes[0].preempted > 0);
  CHECK(cached.tally->classes[0].preempted == plain.tally->classes[0].preempted);
  CHECK(cached.report["latency_s"]["e2e"]["max"].get<double>() ==
        plain.report["latency_s"]["e2e"]["max"].get<double>());
}

TEST_CASE("disaggregation: a decode pool does not scale to zero while a prompt's KV is on its way to it") {
  // 1,000 prompt tokens of 131,072 bytes at 2 MB/s: 65.5 s in flight (on a ttft signal, with no
  // first token in the window yet, as on inflight)
  for (const char* signal : {"inflight", "ttft"}) {
    CAPTURE(signal);
    const std::string yaml =
        kHead +
        "duration_s: 600\npools:\n  prefill:\n    fleet: {replicas: 1}\n"
        "    disaggregation: {decode_pool: decode, gb_s: 0.002, latency_us: 0}\n"
        "  decode:\n    fleet:\n      replicas: 1\n"
        "      autoscale: {min_replicas: 0, max_replicas: 1, signal: " +
        std::string(signal) +
        ", target: 1, interval_s: 15, "
        "scale_down_window_s: 0, cooldown_s: 0}\n"
        "classes:\n  chat:\n    pool: prefill\n    arrival: {process: burst, requests: 1, start_s: 1}\n"
        "    prompt_tokens: 1000\n    output_tokens: 11\n";
    const auto r = test::run(test::scenario(yaml));
    REQUIRE(r.tally->classes[0].completed == 1);
    // prefill (10 ms + 0.1 s), the transfer, the decode replica's first step: no cold start between
    const double ttft = 0.11 + 1000 * 131072 / 0.002e9 + 0.011;
    CHECK(r.report["latency_s"]["ttft"]["max"].get<double>() == doctest::Approx(ttft).epsilon(0.01));
  }
}

TEST_CASE("disaggregation: a decode pool at zero starts at the request's arrival, its cold start beside the prefill") {
  // both pools at zero: the prefill replica's cold start, the prefill and the transfer outlast the
  // decode replica's cold start, begun at arrival, so the request meets one cold start, as it would
  // with the decode replica up all along (it met two, the decode pool starting when the KV came)
  const std::string scaled =
      "autoscale: {min_replicas: 0, max_replicas: 1, signal: inflight, target: 1, "
      "interval_s: 15, scale_down_window_s: 0, cooldown_s: 0}";
  const std::string yaml =
      kHead + "duration_s: 1200\npools:\n  prefill:\n    fleet: {replicas: 0, " + scaled +
      "}\n"
      "    disaggregation: {decode_pool: decode, gb_s: 10, latency_us: 0}\n"
      "  decode:\n    fleet: {replicas: 0, " +
      scaled +
      "}\n"
      "classes:\n  chat:\n    pool: prefill\n    arrival: {process: burst, requests: 1, start_s: 1}\n"
      "    prompt_tokens: 1000\n    output_tokens: 11\n";
  const auto cold = test::run(test::scenario(yaml));
  const auto warm =
      test::run(test::scenario(yaml, {"pools.decode.fleet.replicas=1", "pools.decode.fleet.autoscale.min_replicas=1"}));
  REQUIRE(cold.tally->classes[0].completed == 1);
  REQUIRE(warm.tally->classes[0].completed == 1);
  const double e2e = cold.report["latency_s"]["e2e"]["max"].get<double>();
  CHECK(e2e > 10.0);  // a cold start
  CHECK(e2e == doctest::Approx(warm.report["latency_s"]["e2e"]["max"].get<double>()).epsilon(1e-9));
}

TEST_CASE("disaggregation: one workload arrives at the pool no other hands its prompts to") {
  const std::string pools =
      "duration_s: 60\nworkload: {arrival: {process: poisson, rate_per_s: 1}, prompt_tokens: 100, output_tokens: 10}\n"
      "pools:\n  decode: {fleet: {replicas: 1}}\n"
      "  prefill: {fleet: {replicas: 1}, disaggregation: {decode_pool: decode}}\n";
  const Scenario s = test::scenario(kHead + pools);
  REQUIRE(s.classes.size() == 1);
  CHECK(s.pools[size_t(s.classes[0].pool)].name == "prefill");
  const auto r = test::run(s);
  CHECK(r.tally->pools[0].kv_sent == 0);
  CHECK(r.tally->pools[1].kv_sent > 0);
  // two pools that both take arrivals: which one is for the user to say
  CHECK(test::error_of(kHead +
                       "duration_s: 60\nworkload: {arrival: {process: poisson, rate_per_s: 1}, "
                       "prompt_tokens: 100, output_tokens: 10}\nfleet: {replicas: 1}\npools:\n  a: {}\n  b: {}\n")
            .find("2 pools and one workload: say which pool serves it in classes:") != std::string::npos);
}

TEST_CASE("disaggregation: detokenization belongs to the pool that generates the tokens") {
  const std::string yaml =
      kHead +
      "duration_s: 60\npools:\n  prefill:\n    fleet: {replicas: 1}\n"
      "    engine: {host: {cores: 1, tokenize_s_per_token: 0.0001, detokenize_s_per_token: 0.01}}\n"
      "    disaggregation: {decode_pool: decode}\n  decode: {fleet: {replicas: 1}}\n"
      "classes:\n  chat: {pool: prefill, arrival: {process: burst, requests: 1}, prompt_tokens: 100, "
      "output_tokens: 11}\n";
  CHECK(test::error_of(yaml).find("would detokenize nothing") != std::string::npos);
  // on the decode pool too, it is charged there: 11 tokens at 10 ms on the decode replica's idle
  // core after the last token, against the same run with neither pool detokenizing
  const auto r = test::run(test::scenario(
      yaml, {"pools.decode.engine.host={cores: 1, tokenize_s_per_token: 0.0001, detokenize_s_per_token: 0.01}"}));
  const auto none =
      test::run(test::scenario(yaml, {"pools.prefill.engine.host={cores: 1, tokenize_s_per_token: 0.0001}",
                                      "pools.decode.engine.host={cores: 1, tokenize_s_per_token: 0.0001}"}));
  REQUIRE(r.tally->classes[0].completed == 1);
  REQUIRE(none.tally->classes[0].completed == 1);
  CHECK(r.report["latency_s"]["ttft"]["max"].get<double>() == none.report["latency_s"]["ttft"]["max"].get<double>());
  CHECK(r.report["latency_s"]["e2e"]["max"].get<double>() - none.report["latency_s"]["e2e"]["max"].get<double>() ==
        doctest::Approx(11 * 0.01).epsilon(1e-9));
}

TEST_CASE("disaggregation: each pool's ttft signal is its own engine's, so a slow prefill scales no decode replica") {
  // one prefill replica behind on 0.4 s prompts (3 a second), KV over 100 GB/s: the client waits
  // seconds for a first token, the decode engine (from the KV's arrival) a step or two. A decode
  // pool autoscaled on TTFT (0.3 s) starts none; scaled on the client's TTFT, it bought up to 8
  // replicas that could not make the prefill faster
  const std::string yaml =
      kHead +
      "duration_s: 300\nwarmup_s: 0\n"
      "pools:\n  prefill:\n    fleet: {replicas: 1}\n"
      "    disaggregation: {decode_pool: decode, gb_s: 100, latency_us: 20}\n"
      "  decode:\n    fleet: {replicas: 2, autoscale: {min_replicas: 1, max_replicas: 8, signal: ttft, target: 0.3, "
      "interval_s: 15}}\n"
      "classes:\n  chat: {pool: prefill, arrival: {process: poisson, rate_per_s: 3}, prompt_tokens: 4000, "
      "output_tokens: 50}\n";
  const auto r = test::run(test::scenario(yaml));
  REQUIRE(r.tally->status == 0);
  CHECK(r.report["latency_s"]["ttft"]["p95"].get<double>() > 1.0);  // the client's: the prefill is behind
  CHECK(r.tally->pools[1].scale_ups == 0);
}

TEST_CASE("disaggregation: a prompt turned away at hand-off was in the system until then") {
  // 20 users who never pause, a decode pool that holds one request a replica: prompts computed
  // and then turned away. Every user is in the system or thinking at every instant, so the two
  // time averages add up to the users
  const std::string yaml =
      "seed: 1\nduration_s: 200\nmodel: llama-3.1-8b\ndevice: h100-sxm-80gb\npools:\n"
      "  pre:\n    fleet: {replicas: 1}\n    disaggregation: {decode_pool: dec}\n"
      "  dec:\n    fleet: {replicas: 2, queue_limit: 1}\n"
      "classes:\n  c:\n    pool: pre\n    arrival: {process: concurrency, clients: 20, think_time_s: 0}\n"
      "    prompt_tokens: 200\n    output_tokens: 50\n";
  const auto r = test::run(test::scenario(yaml));
  REQUIRE(r.all->rejected_queue_full > 50);
  const Json& cl = r.report["closed_loop"];
  CHECK(cl["mean_in_system"].get<double>() + cl["mean_thinking"].get<double>() == doctest::Approx(20.0).epsilon(1e-9));
}
