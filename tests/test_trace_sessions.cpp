// Sessions read from a trace (workload.arrival.sessions): which request follows up which, read
// from the block hashes; a follow-up sent at its trace time or when the answer it replies to ends,
// whichever is later; session metrics; routing a conversation back to its replica. Hand-computed
// values on a linear step model.
#include <doctest/doctest.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "helpers.hpp"
#include "libsim/backend/mirror.hpp"
#include "libsim/input/trace.hpp"

using namespace fleetsim;

namespace {

std::string line(int ms, int in, int out, const std::string& ids) {
  return "{\"timestamp\": " + std::to_string(ms) + ", \"input_length\": " + std::to_string(in) +
         ", \"output_length\": " + std::to_string(out) + ", \"hash_ids\": [" + ids + "]}\n";
}

// One conversation of three turns, 1 ms apart in the trace (far less than an answer takes), in
// blocks of 100 tokens: each prompt begins with all of the previous prompt's blocks but its last,
// and holds the previous prompt and answer.
std::string three_turns(int gap_ms) {
  return line(0, 250, 50, "1, 2, 3") + line(gap_ms, 400, 50, "1, 2, 4, 5") +
         line(2 * gap_ms, 600, 50, "1, 2, 4, 6, 7, 8");
}

// One replica whose steps take 10 ms plus 1 ms per prompt token computed; arrivals (and the
// window) run 100 s, so that turns held past the trace's last row are measured.
std::string replay(const std::string& path, const std::string& extra_arrival = "", int replicas = 1,
                   const std::string& extra = "") {
  return "duration_s: 100\nwarmup_s: 0\ndevice: h100-sxm-80gb\nmodel: llama-3.1-8b\n"
         "engine: {perf_model: linear, step_base_s: 0.01, per_prefill_token_s: 0.001" +
         extra + "}\nfleet: {replicas: " + std::to_string(replicas) +
         "}\nworkload: {arrival: {process: trace, path: " + path + ", block_tokens: 100" + extra_arrival + "}}\n";
}

// The tally without what only a session replay records.
std::unique_ptr<Tally> without_sessions(const Tally& t) {
  auto c = std::make_unique<Tally>();
  std::memcpy(c.get(), &t, sizeof(Tally));
  for (auto& k : c->classes) {
    k.sessions = 0;
    k.session_turns = k.session_s = k.session_turn_s = 0.0;
    k.follow_ups = k.turns_held = 0;
    k.turn_hold_s = 0.0;
  }
  return c;
}

}  // namespace

TEST_CASE("trace sessions: a follow-up is the request whose blocks begin with all of another's but its last") {
  const std::string path = test::write_temp(
      "links.jsonl", line(0, 1100, 100, "0, 1, 2, 3") +  // 0
                         line(0, 600, 10, "0, 9") +      // 1: two blocks, the first shared by all: no one's parent
                         line(5000, 1300, 50, "0, 1, 2, 7, 8") +      // 2: follows 0
                         line(6000, 1400, 10, "0, 1, 2, 5, 6") +      // 3: would follow 0, which 2 already follows
                         line(7000, 1200, 10, "0, 1, 2, 7, 9, 10") +  // 4: begins with 2's blocks, but 1200 < 1300 + 50
                         line(9000, 1500, 10, "0, 1, 2, 7, 8, 11") +  // 5: follows 2
                         // 6: begins with 5's blocks but arrived with it; 2 is taken
                         line(9000, 2000, 10, "0, 1, 2, 7, 8, 11, 12") +
                         line(9500, 700, 5, "0, 9, 13"));  // 7: shares only the first block with 1
  const TraceData t = load_trace(path);
  CHECK(t.parent == std::vector<int32_t>{-1, -1, 0, -1, -1, 2, -1, -1});
  CHECK(t.child == std::vector<int32_t>{2, -1, 5, -1, -1, -1, -1, -1});
  CHECK(t.follow_ups == 2);
  // a CSV trace has no hashes, so no links
  const std::string csv = test::write_temp("links.csv", "timestamp_s,prompt_tokens,output_tokens\n0,10,10\n1,20,10\n");
  CHECK(load_trace(csv).parent.empty());
}

TEST_CASE("trace sessions: the Mooncake hour holds 8,472 conversations (up to 43 turns), 3,559 follow-ups") {
  const TraceData t = load_trace(std::string(FLEETSIM_SOURCE_DIR) + "/scenarios/traces/mooncake-conversation.jsonl");
  REQUIRE(t.prompt.size() == 12031);
  CHECK(t.follow_ups == 3559);
  int64_t roots = 0, longest = 0;
  for (size_t i = 0; i < t.parent.size(); ++i) {
    if (t.parent[i] >= 0) {
      // a link goes back in time, and each request is followed up at most once
      CHECK(t.parent[i] < int32_t(i));
      CHECK(t.t_s[size_t(t.parent[i])] < t.t_s[i]);
      CHECK(t.child[size_t(t.parent[i])] == int32_t(i));
      CHECK(t.prompt[i] >= t.prompt[size_t(t.parent[i])] + t.output[size_t(t.parent[i])]);
      continue;
    }
    ++roots;
    int64_t n = 1;
    for (int32_t c = t.child[i]; c >= 0; c = t.child[size_t(c)]) ++n;
    longest = std::max(longest, n);
  }
  CHECK(roots == 8472);
  CHECK(longest == 43);
}

TEST_CASE("trace sessions: a follow-up waits for the answer it replies to, the session is its turns back to back") {
  const std::string path = test::write_temp("three_turns.jsonl", three_turns(1));
  const Scenario s = test::scenario(replay(path, ", sessions: true"));
  REQUIRE(s.classes[0].trace->parent == std::vector<int32_t>{-1, 0, 1});
  const auto r = test::run(s);
  REQUIRE(r.drained);
  const ClassTally& t = *r.all;
  CHECK(t.arrived == 3);
  CHECK(t.completed == 3);
  // each turn alone on the replica: a prefill step of 10 ms + 1 ms per token computed (the
  // cache holds the blocks an earlier turn sent: 0, 200 and 300 tokens), then 49 steps of 10 ms
  const double e1 = 0.01 + 0.250 + 0.49, e2 = 0.01 + 0.200 + 0.49, e3 = 0.01 + 0.300 + 0.49;
  CHECK(t.prefix_tokens_reused == 500);
  CHECK(t.e2e.sum == doctest::Approx(e1 + e2 + e3).epsilon(1e-12));
  CHECK(t.e2e.max == doctest::Approx(e3).epsilon(1e-12));
  CHECK(t.queue_wait.max == doctest::Approx(0.0));
  // turn 2 is sent when turn 1's answer ends, turn 3 when turn 2's does
  CHECK(t.follow_ups == 2);
  CHECK(t.turns_held == 2);
  CHECK(t.turn_hold_s == doctest::Approx((e1 - 0.001) + (e1 + e2 - 0.002)).epsilon(1e-12));
  CHECK(t.sessions == 1);
  CHECK(t.session_turns == doctest::Approx(3));
  CHECK(t.session_s == doctest::Approx(e1 + e2 + e3).epsilon(1e-12));
  CHECK(t.session_turn_s == doctest::Approx((e1 + e2 + e3) / 3).epsilon(1e-12));
  const Json& se = r.report["sessions"];
  CHECK(se["completed"].get<int>() == 1);
  CHECK(se["follow_ups_held"].get<int>() == 2);
  CHECK(se["held_fraction"].get<double>() == doctest::Approx(1.0));
  CHECK(se["mean_session_s"].get<double>() == doctest::Approx(e1 + e2 + e3).epsilon(1e-12));

  // replayed as recorded, the three are sent within 2 ms and share the replica's steps
  const auto plain = test::run(test::scenario(replay(path)));
  REQUIRE(plain.drained);
  CHECK(plain.all->completed == 3);
  CHECK(plain.all->follow_ups == 0);
  CHECK(!plain.report.contains("sessions"));
  CHECK(plain.all->e2e.max < e1 + e2 + e3 - 0.5);
}

TEST_CASE("trace sessions: answers that end before the trace's next turn change nothing but the session figures") {
  const std::string path = test::write_temp("three_turns_slow.jsonl", three_turns(10000));
  const auto on = test::run(test::scenario(replay(path, ", sessions: true")));
  const auto off = test::run(test::scenario(replay(path, ", sessions: false")));
  REQUIRE(on.drained);
  CHECK(on.all->follow_ups == 2);
  CHECK(on.all->turns_held == 0);
  CHECK(on.all->sessions == 1);
  // the session: from the first send to the last answer, 20 s later plus turn 3's e2e
  CHECK(on.all->session_s == doctest::Approx(20.0 + 0.01 + 0.300 + 0.49).epsilon(1e-12));
  CHECK(std::memcmp(without_sessions(*on.tally).get(), without_sessions(*off.tally).get(), sizeof(Tally)) == 0);
}

TEST_CASE("trace sessions: session_affinity sends a turn to the replica that holds the conversation") {
  // per-replica caches: round robin puts turn 2 on the other replica, which holds none of it, and
  // turn 3 back on the first, which holds turn 1's blocks (200 tokens); session_affinity keeps all
  // three on one replica (200 + 300 tokens)
  const std::string path = test::write_temp("three_turns_affinity.jsonl", three_turns(1));
  auto reused = [&](const std::string& router) {
    const Scenario s = test::scenario(replay(path, ", sessions: true", 2, ", prefix_cache: {scope: replica}"),
                                      {"fleet.router=" + router});
    const auto r = test::run(s);
    REQUIRE(r.drained);
    CHECK(r.all->completed == 3);
    return r.all->prefix_tokens_reused;
  };
  CHECK(reused("round_robin") == 200);
  CHECK(reused("session_affinity") == 500);
}

TEST_CASE("trace sessions: relocated parameters (the CUDA data path) reproduce the host result") {
  // the Mooncake excerpt on one replica, which cannot keep up: many follow-ups are held
  const Scenario s = test::scenario(
      "duration_s: trace_end\nwarmup_s: 30\ndevice: h100-sxm-80gb\nmodel: llama-3.1-8b\nfleet: {replicas: 1, "
      "queue_limit: 4096}\nworkload: {arrival: {process: trace, path: "
      "scenarios/traces/mooncake-conversation-5min.jsonl, "
      "sessions: true}}\n");
  const SimParams p = s.params();
  REQUIRE(p.classes[0].arrivals.trace_parent != nullptr);
  const std::vector<SimJob> jobs{SimJob{&p, 0}};
  const Mirror m(jobs);
  std::vector<char> device(m.array_bytes);
  m.pack([&](size_t off, const void* src, size_t bytes) { std::memcpy(device.data() + off, src, bytes); });
  const std::vector<SimParams> moved = m.relocated(device.data());
  CHECK(moved[0].classes[0].arrivals.trace_parent != p.classes[0].arrivals.trace_parent);
  CHECK(moved[0].classes[0].arrivals.trace_child != p.classes[0].arrivals.trace_child);
  std::vector<uint8_t> ws(workspace_layout(p).total);
  auto from_mirror = std::make_unique<Tally>();
  simulate(moved[0], 0, ws.data(), *from_mirror);
  HostWorkspace host;
  const auto direct = simulate_once(p, 0, host);
  CHECK(std::memcmp(from_mirror.get(), direct.get(), sizeof(Tally)) == 0);
  CHECK(direct->classes[0].follow_ups > 50);
  CHECK(direct->classes[0].turns_held > 0);
}

TEST_CASE("trace sessions: bad values are located errors") {
  const std::string head = "duration_s: 10\ndevice: h100-sxm-80gb\nmodel: llama-3.1-8b\nfleet: {replicas: 1}\n";
  const std::string csv = test::write_temp("sessions.csv", "timestamp_s,prompt_tokens,output_tokens\n0,10,10\n");
  const std::string e =
      test::error_of(head + "workload: {arrival: {process: trace, path: " + csv + ", sessions: true}}\n");
  CHECK(e.find("<test>:5:") == 0);
  CHECK(e.find("workload.arrival.sessions: sessions are read from a trace's block hashes") != std::string::npos);
  CHECK(e.find(csv + " is a timestamp_s,prompt_tokens,output_tokens trace, with none") != std::string::npos);
  CHECK(test::error_of(head + "workload:\n  arrival: {process: poisson, rate_per_s: 1, sessions: true}\n"
                              "  prompt_tokens: 10\n  output_tokens: 10\n") ==
        "<test>:6:56: error: workload.arrival.sessions: 'sessions' applies to process: trace only");
  const std::string mc = test::write_temp("sessions_bad.jsonl", three_turns(1));
  const std::string b = test::error_of(head + "workload: {arrival: {process: trace, path: " + mc +
                                       ", block_tokens: 100, sessions: 3}}\n");
  CHECK(b.find("<test>:5:") == 0);
  CHECK(b.find("workload.arrival.sessions: expected true or false") != std::string::npos);
}
