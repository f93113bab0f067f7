// Sharing runs across engine limits (sweep/share.hpp): a run records how near each engine limit
// came to deciding anything; a configuration that differs only in limits within that room has the
// same run, bit for bit, and a sweep gives the same rows with sharing as without.
#include <doctest/doctest.h>

#include <cstring>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "helpers.hpp"
#include "libsim/sweep/share.hpp"
#include "libsim/sweep/sweep.hpp"

using namespace fleetsim;

namespace {

// The tally less the record of limits (whose rooms are measured from each run's own limits).
std::unique_ptr<Tally> without_use(const Tally& t) {
  auto c = std::make_unique<Tally>();
  std::memcpy(static_cast<void*>(c.get()), &t, sizeof(Tally));
  c->limits = RunLimits{};
  return c;
}

// Bursts of long prompts on little KV memory: the small limits and the small memory decide, the
// large ones do not.
std::string bursty(const std::string& engine, const std::string& extra = "", const std::string& fleet = "") {
  return "duration_s: 120\nwarmup_s: 10\nseed: 5\ndevice: h100-sxm-80gb\nmodel: llama-3.1-8b\n"
         "engine: {perf_profile: none" +
         engine + "}\nfleet: {replicas: 2, queue_limit: 256" + fleet +
         "}\n"
         "workload:\n  arrival: {process: gamma, rate_per_s: 12, cv: 3}\n"
         "  prompt_tokens: {dist: lognormal, median: 1500, p99: 6000}\n"
         "  output_tokens: {dist: lognormal, median: 150, p99: 800}\n" +
         extra;
}

}  // namespace

TEST_CASE("a single request's record of limits, by hand") {
  // one request of 100 prompt tokens and 10 output tokens, alone on one replica: blocks of 16
  // tokens, 7 for the prompt (112 slots) cover all 109 tokens it ever holds
  const std::string trace = test::write_temp("share-one.csv", "timestamp_s,prompt_tokens,output_tokens\n1.0,100,10\n");
  const Scenario s = test::scenario(
      "duration_s: 30\nwarmup_s: 0\ndevice: h100-sxm-80gb\nmodel: llama-3.1-8b\n"
      "engine: {perf_model: linear, step_base_s: 0.01, per_prefill_token_s: 0.0001, max_num_seqs: 4, "
      "max_batched_tokens: 256, kv_block_tokens: 16}\n"
      "fleet: {replicas: 1}\nworkload: {arrival: {process: trace, path: " +
      trace + "}}\n");
  const SimParams p = s.params();
  const auto r = test::run(s);
  REQUIRE(r.tally->classes[0].completed == 1);
  const LimitUse& u = r.tally->limits.pools[0];
  const PoolParams& P = p.pools[0];
  CHECK(u.peak_running == 1);
  CHECK(u.budget_room == 256 - 100);  // its prompt in one chunk
  // decoding needs no block beyond the prompt's, but a run's growth is counted as a block per
  // sequence per 16 steps begun: its 8 further steps, one block
  CHECK(u.kv_room == P.kv_total_blocks - 7 - 1);
  CHECK(u.kv_room_mark == P.kv_total_blocks - P.kv_watermark_blocks - 7);
  CHECK(u.queue_room == kRoomUnbounded);  // no replica lost, nothing rerouted
  // its arrival found every request slot free: the queue's limit and the batch's 4
  CHECK(r.tally->limits.request_room == int64_t(P.queue_limit) + 4 - 1);
  // so any limits from 2 sequences and 100 tokens up, and 7 blocks beyond the watermark, serve it
  SimParams q = p;
  q.pools[0].max_num_seqs = 2;
  q.pools[0].max_batched_tokens = 100;
  q.pools[0].kv_total_blocks = 7 + P.kv_watermark_blocks;
  CHECK(run_serves(p, *r.tally, q));
  q.pools[0].max_batched_tokens = 99;  // its prompt would take two steps
  CHECK_FALSE(run_serves(p, *r.tally, q));
  q.pools[0].max_batched_tokens = 100;
  q.pools[0].max_num_seqs = 1;  // a full batch would no longer take arrivals into the run
  CHECK_FALSE(run_serves(p, *r.tally, q));
  q.pools[0].max_num_seqs = 2;
  q.pools[0].kv_total_blocks -= 1;
  CHECK_FALSE(run_serves(p, *r.tally, q));
  q.pools[0].kv_total_blocks += 1;
  q.pools[0].replicas = 2;  // anything but a limit: never
  CHECK_FALSE(run_serves(p, *r.tally, q));

  // a pool with a host stage is left out: its FIFOs are sized by the slots too
  SimParams hosted = p;
  hosted.pools[0].host.cores = 1;
  SimParams hosted_fewer = hosted;
  hosted_fewer.pools[0].max_num_seqs = 2;
  CHECK_FALSE(run_serves(hosted, *r.tally, hosted_fewer));

  // a run is kept for others while some limit left room; one where every limit decided serves nobody
  CHECK(limits_left_room(p, r.tally->limits));
  RunLimits all_decided{};
  all_decided.pools[0] = LimitUse{P.max_num_seqs, -1, -1, 5, kRoomUnbounded};
  CHECK_FALSE(limits_left_room(p, all_decided));
  all_decided.pools[0].kv_room = 0;  // the KV never short: a larger or slightly smaller one would do
  CHECK(limits_left_room(p, all_decided));
  all_decided.pools[0] = LimitUse{P.max_num_seqs - 1, -1, -1, -1, kRoomUnbounded};  // the batch never full
  CHECK(limits_left_room(p, all_decided));

  // fewer slots leave fewer places for rerouted requests and fewer request slots
  RunLimits tight = r.tally->limits;
  q = p;
  q.pools[0].max_num_seqs = 2;
  tight.pools[0].queue_room = 1;  // a reroute once found room for just 2 more
  CHECK_FALSE(limits_serve(p, tight, q));
  tight.pools[0].queue_room = 2;
  CHECK(limits_serve(p, tight, q));
  tight.request_room = 1;  // an arrival once found 2 request slots free
  CHECK_FALSE(limits_serve(p, tight, q));
  tight.request_room = -1;  // and one was turned away for want of one: more slots would change that
  q.pools[0].max_num_seqs = 8;
  CHECK_FALSE(limits_serve(p, tight, q));
}

// Every ordered pair of configurations: where the first's run serves the second, their runs
// must be equal; and the rule must be neither always nor never true.
static void check_pairs(const std::vector<Scenario>& sc, bool some_served = true) {
  std::vector<SimParams> ps;
  std::vector<std::unique_ptr<Tally>> ts;
  HostWorkspace ws;
  for (const Scenario& s : sc) {
    ps.push_back(s.params());
    ts.push_back(simulate_once(ps.back(), 0, ws));
  }
  int served = 0, not_served = 0, differ = 0;
  for (size_t a = 0; a < sc.size(); ++a)
    for (size_t b = 0; b < sc.size(); ++b) {
      if (a == b) continue;
      const bool same = std::memcmp(without_use(*ts[a]).get(), without_use(*ts[b]).get(), sizeof(Tally)) == 0;
      differ += !same;
      if (run_serves(ps[a], *ts[a], ps[b])) {
        ++served;
        CHECK_MESSAGE(same, "configuration ", a, " serves ", b, " but their runs differ");
      } else {
        ++not_served;
      }
    }
  MESSAGE("pairs served ", served, ", not served ", not_served, ", with different runs ", differ);
  if (some_served) CHECK(served > 0);
  CHECK(not_served > 0);
  CHECK(differ > 0);
}

TEST_CASE("every run that serves another configuration is that configuration's run, bit for bit") {
  // with a shared prefix, and with spot interruptions, whose lost replicas' requests go to the
  // others while they have room
  const std::vector<std::pair<std::string, std::string>> variants = {
      {"", ""},
      {"  prefix: {share: 0.5, tokens: 800}\n", ""},
      {"", ", pricing: {spot: {discount: 0.6, interruptions_per_hour: 100}}"}};
  for (const auto& [extra, fleet] : variants) {
    std::vector<Scenario> sc;
    for (const char* seqs : {"4", "16", "64", "512"})
      for (const char* tokens : {"1024", "4096", "32768"})
        for (const char* mem : {"0.3", "0.9"})
          sc.push_back(test::scenario(bursty(std::string(", max_num_seqs: ") + seqs +
                                                 ", max_batched_tokens: " + tokens + ", gpu_memory_utilization: " + mem,
                                             extra, fleet)));
    check_pairs(sc);
  }
}

TEST_CASE("fewer slots leave less room for a lost replica's requests: the record says so") {
  // two replicas short of KV (a batch of about twenty), a short queue, replicas lost often: the
  // survivor takes the lost one's requests while it has room for queue_limit + max_num_seqs
  auto lossy = [](const char* seqs) {
    return test::scenario(
        "duration_s: 600\nwarmup_s: 0\nseed: 9\ndevice: h100-sxm-80gb\nmodel: llama-3.1-8b\n"
        "engine: {perf_profile: none, gpu_memory_utilization: 0.26, max_num_seqs: " +
        std::string(seqs) +
        "}\nfleet: {replicas: 2, queue_limit: 16, pricing: {spot: {discount: 0.6, interruptions_per_hour: 100}}}\n"
        "workload:\n  arrival: {process: poisson, rate_per_s: 30}\n"
        "  prompt_tokens: {dist: lognormal, median: 2000, p99: 6000}\n"
        "  output_tokens: {dist: lognormal, median: 200, p99: 800}\n");
  };
  std::vector<Scenario> sc;
  for (const char* seqs : {"32", "48", "256"}) sc.push_back(lossy(seqs));
  HostWorkspace ws;
  const SimParams big = sc[2].params(), small = sc[0].params();
  const auto t_big = simulate_once(big, 0, ws), t_small = simulate_once(small, 0, ws);
  const LimitUse& u = t_big->limits.pools[0];
  MESSAGE("peak running ", u.peak_running, ", queue room ", u.queue_room, ", request room ",
          t_big->limits.request_room);
  // the batch never filled even 32 slots, yet 32 slots would have turned rerouted requests away
  REQUIRE(u.peak_running < 32);
  CHECK(u.queue_room < 256 - 32);
  CHECK(std::memcmp(without_use(*t_big).get(), without_use(*t_small).get(), sizeof(Tally)) != 0);
  CHECK_FALSE(run_serves(big, *t_big, small));
  check_pairs(sc, false);  // here every pair differs
}

TEST_CASE("bit for bit too with disaggregated prefill and decode, the limits of both pools varied") {
  std::ifstream f(std::string(FLEETSIM_SOURCE_DIR) + "/scenarios/disaggregated-prefill.yaml");
  std::stringstream text;
  text << f.rdbuf();
  std::vector<Scenario> sc;
  for (const char* seqs : {"8", "64", "512"})
    for (const char* tokens : {"2048", "16384"})
      for (const char* mem : {"0.6", "0.9"})
        sc.push_back(test::scenario(
            text.str(), {"duration_s=240", "warmup_s=20", std::string("pools.decode.engine.max_num_seqs=") + seqs,
                         std::string("pools.prefill.engine.max_batched_tokens=") + tokens,
                         std::string("pools.decode.engine.gpu_memory_utilization=") + mem}));
  check_pairs(sc);
}

TEST_CASE("a sweep over engine limits gives the same rows whether runs are shared or not") {
  const std::string yaml = "name: share\n" + bursty("") +
                           "sweep:\n  parameters:\n    fleet.replicas: [1, 3]\n"
                           "    engine.max_num_seqs: [8, 64, 256]\n"
                           "    engine.max_batched_tokens: [2048, 8192, 16384]\n"
                           "  replications: 4\n  slo:\n    latency_s.ttft.p99: 2.0\n";
  const ScenarioSource src = ScenarioSource::from_text(yaml, "<sweep>", FLEETSIM_SOURCE_DIR);
  const SweepSpec spec = parse_sweep(src);
  Json with, without;
  uint64_t shared = 0;
  for (bool share : {true, false}) {
    SweepOptions o;
    o.backend = Backend::cpu;
    o.threads = 2;
    o.share_runs = share;
    o.progress = [&](const SweepProgress& p) {
      if (share) shared = p.replications_shared;
    };
    (share ? with : without) = run_sweep(src, spec, o);
  }
  CHECK(with == without);
  CHECK(shared > 0);
  // and sharded, where each shard shares within its own configurations
  SweepOptions o;
  o.backend = Backend::cpu;
  o.threads = 1;
  o.shard_count = 2;
  std::vector<std::pair<std::string, Json>> shards;
  for (uint32_t k = 0; k < 2; ++k) {
    o.shard_index = k;
    shards.emplace_back("shard-" + std::to_string(k), run_sweep(src, spec, o));
  }
  CHECK(merge_sweeps(shards)["rows"] == without["rows"]);
}

TEST_CASE("stretches of configurations that differ only in limits") {
  const std::vector<std::string> keys = {"a", "a", "a", "b", "a", "a"};
  const auto st = limit_stretches(
      keys.size(), [&](size_t i) { return keys[i]; }, 2);
  const std::vector<std::pair<size_t, size_t>> want = {{0, 2}, {2, 3}, {3, 4}, {4, 6}};
  CHECK(st == want);
  CHECK(is_limit_path("engine.max_num_seqs"));
  CHECK(is_limit_path("pools.decode.engine.max_batched_tokens"));
  CHECK(is_limit_path("engine.gpu_memory_utilization"));
  CHECK_FALSE(is_limit_path("fleet.replicas"));
  CHECK_FALSE(is_limit_path("engine.max_num_seqs_extra"));
}
