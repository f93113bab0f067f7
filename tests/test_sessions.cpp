// Multi-turn sessions (arrival process `concurrency` with `turns`): each turn sends the
// conversation so far plus a new message, after the previous answer and a think time; a session of
// n turns is n requests; the history is the prefix cache's; a conversation that outgrows the
// context starts a new session. Hand-computed values on a linear step model.
#include <doctest/doctest.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "helpers.hpp"
#include "libsim/core/engine.hpp"

using namespace fleetsim;
using test::error_of;

namespace {

// One replica whose every step takes 10 ms: a request alone takes output steps (the prefill step
// emits the first token).
std::string sessions(int clients, const std::string& think, const std::string& turns, int prompt, int output,
                     const std::string& extra_arrival = "", const std::string& engine_extra = "") {
  return "duration_s: 3000\nwarmup_s: 0\ndevice: h100-sxm-80gb\nmodel: llama-3.1-8b\n"
         "engine: {perf_model: linear, step_base_s: 0.01, max_num_seqs: 256" +
         engine_extra +
         "}\nfleet: {replicas: 1, queue_limit: 100000}\n"
         "workload:\n  arrival: {process: concurrency, clients: " +
         std::to_string(clients) + ", think_time_s: " + think + ", turns: " + turns + extra_arrival +
         "}\n  prompt_tokens: " + std::to_string(prompt) + "\n  output_tokens: " + std::to_string(output) + "\n";
}

}  // namespace

TEST_CASE("sessions: a session of n turns is n requests, each sent a think time after the previous answer") {
  for (const bool caching : {true, false}) {
    CAPTURE(caching);
    // one user, 4 turns, 1 s of thought, 100 new tokens and 10 out per turn, and 4 requests in all
    const Scenario s =
        test::scenario(sessions(1, "1", "4", 100, 10, ", requests: 4", caching ? "" : ", prefix_caching: false"));
    const auto r = test::run(s);
    CHECK(r.drained);
    const ClassTally& t = *r.all;
    CHECK(t.arrived == 4);
    CHECK(t.completed == 4);
    // prompts: 100, then each turn the conversation so far (prompt + answer) plus 100 new tokens
    CHECK(t.input_tokens == doctest::Approx(100 + 210 + 320 + 430));
    CHECK(t.output_tokens == doctest::Approx(40));
    // the history is what the cache holds: the full 16-token blocks of what each turn computed
    // (110, 220, 330 tokens less the last answer token, which no step fed back): 96 + 208 + 320
    CHECK(t.prefix_tokens_reused == (caching ? 624 : 0));
    CHECK(t.prefix_hits == (caching ? 3 : 0));
    // each request alone: 10 steps of 10 ms; the session from the first send to the last answer
    CHECK(t.e2e.min == doctest::Approx(0.1).epsilon(1e-9));
    CHECK(t.e2e.max == doctest::Approx(0.1).epsilon(1e-9));
    CHECK(t.sessions == 1);
    CHECK(t.session_turns == doctest::Approx(4));
    CHECK(t.session_s == doctest::Approx(4 * 0.1 + 3 * 1.0).epsilon(1e-9));
    CHECK(t.session_turn_s == doctest::Approx((4 * 0.1 + 3 * 1.0) / 4).epsilon(1e-9));
    const Json& se = r.report["closed_loop"]["sessions"];
    CHECK(se["completed"].get<int>() == 1);
    CHECK(se["turns_per_session"].get<double>() == doctest::Approx(4));
    CHECK(se["mean_session_s"].get<double>() == doctest::Approx(3.4));
    CHECK(se["configured_turns_per_session"].get<double>() == doctest::Approx(4));
  }
  // the configured mean is the distribution's, not an estimate from draws
  const std::string sessions = std::string(FLEETSIM_SOURCE_DIR) + "/scenarios/chat-sessions.yaml";
  const auto g = test::run(load_scenario_file(sessions, {"duration_s=120", "warmup_s=0"}));
  CHECK(g.report["closed_loop"]["sessions"]["configured_turns_per_session"].get<double>() == 6.0);
  const auto u = test::run(load_scenario_file(
      sessions, {"duration_s=120", "warmup_s=0", "workload.arrival.turns={dist: uniform, min: 1, max: 5}"}));
  CHECK(u.report["closed_loop"]["sessions"]["configured_turns_per_session"].get<double>() == 3.0);
}

TEST_CASE("sessions: a turn the response cache answers grows the conversation, not what a replica holds") {
  // one user, 5 turns of 100 in and 50 out; seed 5 sends the third turn to the response cache.
  // Served turns reuse the full blocks of what the replica last computed: turn 2 144 of turn 1's
  // 150 tokens, turn 4 288 of turn 2's 300 (not of turn 3's 450, which no device computed), turn 5
  // 592 of turn 4's 600
  const Scenario s = test::scenario(
      "name: sess\nseed: 5\nduration_s: 600\nwarmup_s: 0\ndevice: h100-sxm-80gb\nmodel: llama-3.1-8b\n"
      "fleet: {replicas: 1}\n"
      "workload:\n  arrival: {process: concurrency, clients: 1, think_time_s: 1, turns: 5, requests: 5}\n"
      "  prompt_tokens: 100\n  output_tokens: 50\n  response_cache: {hit_rate: 0.5, latency_s: 0.01}\n");
  const auto r = test::run(s);
  CHECK(r.drained);
  REQUIRE(r.all->cache_hits == 1);
  CHECK(r.all->prefix_hits == 3);
  CHECK(r.all->prefix_tokens_reused == 144 + 288 + 592);
}

TEST_CASE("sessions: every user's conversation is its own, however their requests interleave") {
  // 7 users with random think times share one replica; a turn adds 50 new + 10 output tokens, so a
  // user's history is 60 x the turns it completed, unless another user's answer were credited to it
  const Scenario sc = test::scenario(sessions(7, "{dist: exponential, mean: 0.3}", "3", 50, 10));
  const SimParams p = sc.params();
  HostWorkspace ws;
  auto tally = std::make_unique<Tally>();
  Sim s = sim_begin(p, 0, ws.for_params(p), *tally);
  sim_advance<false>(s);
  sim_end(s, p.duration_s);
  const ClassTally& t = tally->classes[0];
  CHECK(t.sessions > 1000);
  CHECK(t.session_turns == doctest::Approx(3.0 * double(t.sessions)));
  for (int u = 0; u < 7; ++u) {
    const SessionUser& su = s.session_user[u];
    CAPTURE(u);
    CHECK(su.history == 60 * int64_t(su.turn));
    CHECK(su.turn < 3);
  }
  // prompts are 50, 110 and 170 tokens; the first turn of a session reuses nothing, the others the
  // full blocks of the 59 and 119 tokens computed before, 48 and 112: per completed session exactly
  // 160 tokens reused
  const double started_turns = double(t.arrived);
  CHECK(started_turns > 3.0 * double(t.sessions));
  CHECK(t.prefix_tokens_reused >= 160 * t.sessions);
  CHECK(t.prefix_tokens_reused <= 160 * t.sessions + 7 * 160);  // sessions still open at the end
}

TEST_CASE("sessions: a conversation that would not leave room for an answer starts a new session") {
  // a 1,000-token context: 300 new and 20 out per turn make prompts of 300, 620 and 940 tokens;
  // a fourth turn (1,260) does not fit, so every session has 3 turns though 10 were drawn
  const std::string base = sessions(2, "0.5", "10", 300, 20);
  const Scenario s = test::scenario(base + "catalog:\n  models:\n    llama-3.1-8b: {max_context: 1000}\n");
  const auto r = test::run(s);
  CHECK(r.drained);
  const ClassTally& t = *r.all;
  CHECK(t.sessions > 100);
  CHECK(t.session_turns == doctest::Approx(3.0 * double(t.sessions)));
  CHECK(t.rejected_too_long == 0);
}

TEST_CASE("sessions: a conversation that outgrows the KV cache ends, its user starts a new one") {
  // 2,000 new and 2,000 out per turn: the seventh turn's conversation (26,000 tokens) and its answer
  // need more than the 27,488 KV tokens a 0.25 memory fraction leaves, so it is turned away; the
  // session ends after 6 turns and the user starts another, which fits again. A running turn holds
  // its whole conversation, cached or not: the same with prefix caching on
  for (const bool caching : {false, true}) {
    CAPTURE(caching);
    const Scenario s = test::scenario(
        sessions(1, "1", "1000", 2000, 2000, "",
                 std::string(caching ? "" : ", prefix_caching: false") + ", gpu_memory_utilization: 0.25"),
        {"duration_s=600"});
    const auto r = test::run(s);
    const ClassTally& t = *r.all;
    REQUIRE(t.rejected_too_long > 0);
    CHECK(t.rejected_too_long < 10);  // once per session, not at every retry
    CHECK(t.sessions >= 2);
    CHECK(t.session_turns == doctest::Approx(6.0 * double(t.sessions)));
    if (caching) CHECK(t.prefix_tokens_reused > 0);
  }
}

TEST_CASE("sessions: a turn retried after its replica was lost prefills its history again") {
  test::Started f(test::scenario(sessions(1, "1", "4", 100, 10)));
  Sim& s = f.s;
  Request& q = s.req[0];
  q.cls = 0;
  q.cached = 500;  // its conversation, in the lost replica's cache
  q.retries = 0;
  q.in_window = 0;
  requeue_lost(s, s.q[s.rep[0].queue], 0, 1.0);
  CHECK(q.cached == 0);
  CHECK(q.retries == 1);
}

TEST_CASE("sessions: the prefill the cache saved is priced at the busy prefill it spared, not idle time") {
  // one user, 3 turns of 100 new tokens: each step costs 1 ms and 0.1 ms per prompt token computed
  const std::string yaml =
      "duration_s: 100\nwarmup_s: 0\nseed: 1\ndevice: h100-sxm-80gb\nmodel: llama-3.1-8b\n"
      "engine: {perf_model: linear, step_base_s: 0.001, per_prefill_token_s: 0.0001, latency_at: engine}\n"
      "fleet: {replicas: 1}\nworkload:\n  arrival: {process: concurrency, clients: 1, think_time_s: 1, turns: 3}\n"
      "  prompt_tokens: 100\n  output_tokens: 10\n";
  const auto on = test::run(test::scenario(yaml));
  const auto off = test::run(test::scenario(yaml, {"engine.prefix_caching=false"}));
  const double saved = on.report["prefix_cache"]["saved_prefill_usd"].get<double>();
  auto prefill_usd = [](const test::Result& r) {
    return r.report["ledger"]["buckets"]["busy_prefill"]["usd"].get<double>();
  };
  const double spared = prefill_usd(off) - prefill_usd(on);
  MESSAGE("saved " << saved << " USD; busy prefill without the cache less with it: " << spared);
  REQUIRE(spared > 0);
  // within a factor of 1.5 of what turning the cache off costs (the computed tokens' average price
  // carries the prefill steps' fixed 1 ms), and nothing like the idle dollars around it
  CHECK(saved > spared / 1.5);
  CHECK(saved < spared * 1.5);
}

TEST_CASE("sessions: a first turn sent again keeps its session's length and start") {
  // three users, one sequence at a time, a queue of one: most first turns are turned away and sent
  // again a second later; each session of one turn is timed from its first send
  const Scenario s = test::scenario(sessions(3, "0", "1", 100, 20),
                                    {"engine.max_num_seqs=1", "fleet.queue_limit=1", "duration_s=300"});
  const auto r = test::run(s);
  const ClassTally& t = *r.all;
  REQUIRE(t.rejected_queue_full > 100);
  CHECK(t.session_s > 1.1 * t.e2e.sum);  // the retries' waits are in the sessions' time
}

TEST_CASE("sessions: bad turns are located errors") {
  const std::string base =
      "duration_s: 100\ndevice: h100-sxm-80gb\nmodel: llama-3.1-8b\nfleet: {replicas: 1}\n"
      "workload:\n  prompt_tokens: 10\n  output_tokens: 10\n";
  CHECK(error_of(base + "  arrival: {process: poisson, rate_per_s: 3, turns: 4}\n") ==
        "<test>:8:53: error: workload.arrival.turns: 'turns' does not apply to process: poisson");
  CHECK(error_of(base + "  arrival: {process: concurrency, clients: 2, turns: 0}\n").find("workload.arrival.turns") !=
        std::string::npos);
  CHECK(error_of(base + "  arrival: {process: concurrency, clients: 2, turns: {dist: geometric}}\n")
            .find("workload.arrival.turns") != std::string::npos);
  CHECK(error_of(base + "  arrival: {process: concurrency, clients: 2, turns: 3}\n", {"model=bge-large-en-v1.5"})
            .find("sessions need a generative model") != std::string::npos);
}

TEST_CASE("sessions: the shipped chat-sessions scenario shows what its comment says") {
  const std::string path = std::string(FLEETSIM_SOURCE_DIR) + "/scenarios/chat-sessions.yaml";
  const auto on = test::run(load_scenario_file(path));
  const auto off = test::run(load_scenario_file(path, {"engine.prefix_caching=false"}));
  const ClassTally &a = *on.all, &b = *off.all;
  // 92% of prompt tokens from the cache; none without it
  CHECK(a.prefix_tokens_reused / a.input_tokens == doctest::Approx(0.920).epsilon(0.01));
  CHECK(b.prefix_tokens_reused == 0);
  // TTFT 39 -> 202 ms mean, 70 -> 856 ms p99; TPOT 11.4 -> 23.1 ms
  CHECK(a.ttft.sum / double(a.ttft.n) == doctest::Approx(0.03897).epsilon(0.005).scale(0));
  CHECK(b.ttft.sum / double(b.ttft.n) == doctest::Approx(0.2024).epsilon(0.005).scale(0));
  CHECK(hist_quantile(a.ttft, 0.99) < 0.1);
  CHECK(hist_quantile(b.ttft, 0.99) > 10 * hist_quantile(a.ttft, 0.99));
  CHECK(a.tpot.sum / double(a.tpot.n) == doctest::Approx(0.01137).epsilon(0.005).scale(0));
  CHECK(b.tpot.sum / double(b.tpot.n) == doctest::Approx(0.02311).epsilon(0.005).scale(0));
  // the same users get through fewer requests and conversations
  CHECK(a.completed == 10688);
  CHECK(b.completed == 8440);
  CHECK(a.sessions == 1739);
  CHECK(b.sessions == 1369);
  CHECK(on.report["closed_loop"]["sessions"]["mean_session_s"].get<double>() == doctest::Approx(73.44).epsilon(0.01));
  CHECK(off.report["closed_loop"]["sessions"]["mean_session_s"].get<double>() == doctest::Approx(96.20).epsilon(0.01));
}

TEST_CASE("sessions: a conversation is cached where its last turn ran, session_affinity keeps it there") {
  // one user, 4 turns, on 2 replicas: round robin sends turns to replicas 0, 1, 0, 1, where the
  // conversation so far never is, so every turn prefills it; session_affinity and (one user, ties
  // to the lowest index) least_outstanding keep it on one replica and reuse 96 + 208 + 320 tokens
  for (const auto& [router, reused] : std::vector<std::pair<std::string, int64_t>>{
           {"round_robin", 0}, {"session_affinity", 624}, {"least_outstanding", 624}}) {
    CAPTURE(router);
    std::string y = sessions(1, "1", "4", 100, 10, ", requests: 4");
    y.replace(y.find("fleet: {replicas: 1"), 19, "fleet: {replicas: 2, router: " + router);
    const auto r = test::run(test::scenario(y));
    CHECK(r.drained);
    CHECK(r.all->completed == 4);
    CHECK(r.all->input_tokens == doctest::Approx(1060));
    CHECK(r.all->prefix_tokens_reused == reused);
    CHECK(r.all->sessions == 1);
    // the context a sequence holds is the conversation's: (1060 prompt + 4 x 10 output) / 4 turns
    CHECK(r.report["capacity"]["mean_context_tokens"] == 275);
  }
}

TEST_CASE("sessions: with many users on 4 replicas, session_affinity reuses what least_outstanding prefills") {
  const std::string path = std::string(FLEETSIM_SOURCE_DIR) + "/scenarios/chat-sessions.yaml";
  auto run = [&](const std::string& router) {
    return test::run(load_scenario_file(
        path, {"fleet.replicas=4", "workload.arrival.clients=384", "fleet.router=" + router, "duration_s=900"}));
  };
  const auto lo = run("least_outstanding"), sa = run("session_affinity");
  const double share_lo = lo.all->prefix_tokens_reused / lo.all->input_tokens;
  const double share_sa = sa.all->prefix_tokens_reused / sa.all->input_tokens;
  MESSAGE("reused: least_outstanding " << share_lo << ", session_affinity " << share_sa);
  CHECK(share_sa > 0.9);
  CHECK(share_lo < 0.3);
  CHECK(hist_quantile(sa.all->ttft, 0.99) < 0.5 * hist_quantile(lo.all->ttft, 0.99));
  CHECK(sa.all->completed > lo.all->completed);
}
