// A bounded prefix cache per replica (engine.prefix_cache: {scope: replica}) and the prefix_aware
// router: least-recently-used eviction by hand (a cache of B blocks on a cyclic access of B + 1
// blocks never hits; of B blocks, hits from the second cycle on), the router's weighing of cached
// blocks against load, the unbounded pool-wide cache as the upper bound, and located errors.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "helpers.hpp"

using namespace fleetsim;

namespace {

// A Mooncake JSONL trace: one request a second, each `prompt` tokens whose full 16-token blocks
// carry the ids given (a prompt of 17 tokens: one full block).
std::string trace(const std::string& name, const std::vector<std::vector<int>>& ids, int prompt = 17, int output = 1,
                  const std::vector<int>& outputs = {}) {
  std::string t;
  for (size_t i = 0; i < ids.size(); ++i) {
    std::string h;
    for (int x : ids[i]) h += (h.empty() ? "" : ", ") + std::to_string(x);
    t += "{\"timestamp\": " + std::to_string(1000 * i) + ", \"input_length\": " + std::to_string(prompt) +
         ", \"output_length\": " + std::to_string(outputs.empty() ? output : outputs[i]) + ", \"hash_ids\": [" + h +
         "]}\n";
  }
  return test::write_temp(name, t);
}

std::string scenario(const std::string& path, const std::string& cache, int replicas = 1,
                     const std::string& router = "least_outstanding") {
  return "duration_s: trace_end\nwarmup_s: 0\nmodel: llama-3.1-8b\ndevice: h100-sxm-80gb\n"
         "engine: {perf_model: linear, step_base_s: 0.01, prefix_cache: " +
         cache + "}\nfleet: {replicas: " + std::to_string(replicas) + ", router: " + router +
         "}\n"
         "workload: {arrival: {process: trace, path: " +
         path + ", block_tokens: 16}}\n";
}

}  // namespace

TEST_CASE("prefix cache: B blocks on a cyclic access of B + 1 blocks never hit, of B, every later pass does") {
  const int B = 4, cycles = 5;
  std::vector<std::vector<int>> over, fit;
  for (int i = 0; i < cycles * (B + 1); ++i) over.push_back({i % (B + 1)});
  for (int i = 0; i < cycles * B; ++i) fit.push_back({i % B});
  const std::string lru = "{scope: replica, max_tokens: " + std::to_string(16 * B) + "}";
  const auto a = test::run(test::scenario(scenario(trace("cyclic_over.jsonl", over), lru)));
  REQUIRE(a.tally->status == 0);
  CHECK(a.drained);
  CHECK(a.all->completed == cycles * (B + 1));
  CHECK(a.all->prefix_hits == 0);
  // each request after the first B evicted the oldest block (the last one after the window, which
  // ends with the last arrival)
  CHECK(a.tally->pools[0].cache_evicted == double(cycles * (B + 1) - B - 1));
  const auto b = test::run(test::scenario(scenario(trace("cyclic_fit.jsonl", fit), lru)));
  CHECK(b.drained);
  CHECK(b.all->prefix_hits == (cycles - 1) * B);
  CHECK(b.all->prefix_tokens_reused == (cycles - 1) * B * 16);
  CHECK(b.tally->pools[0].cache_evicted == 0);
  // the unbounded pool-wide cache hits both from the second pass on: the upper bound
  const auto u = test::run(test::scenario(scenario(trace("cyclic_over_u.jsonl", over), "{scope: pool}")));
  CHECK(u.all->prefix_hits == (cycles - 1) * (B + 1));
}

TEST_CASE("prefix cache: a request's blocks are let go tail first, so its leading blocks are the last evicted") {
  // a cache of 4 blocks: A = [1, 2, 3, 4], then B = [5] evicts one of A's, then A again. With A's
  // tail evicted first (as vLLM frees a request's blocks), A finds its first three; with its head
  // evicted, none (a prefix is only of use from its start)
  const std::string path = trace("tail_first.jsonl", {{1, 2, 3, 4}, {5}, {1, 2, 3, 4}}, 65);
  const auto r = test::run(test::scenario(scenario(path, "{scope: replica, max_tokens: 64}")));
  CHECK(r.drained);
  CHECK(r.all->prefix_hits == 1);
  CHECK(r.all->prefix_tokens_reused == 3 * 16);
  // 4 by 5 (A's tail); A's second leaving, which evicts 5, is after the window (the last arrival)
  CHECK(r.tally->pools[0].cache_evicted == 1);
}

TEST_CASE("prefix cache: a host tier keeps what the device evicts, a hit there is loaded over PCIe, by hand") {
  // the device keeps B = 4 blocks, the host 10 (a 16-token block of Llama 3.1 8B is 2 MiB: 0.02 GiB
  // holds 10); on a cyclic access of 5 blocks the device never hits, the host from the second pass
  const int B = 4, cycles = 5;
  std::vector<std::vector<int>> over;
  for (int i = 0; i < cycles * (B + 1); ++i) over.push_back({i % (B + 1)});
  const auto r = test::run(
      test::scenario(scenario(trace("host_tier.jsonl", over), "{scope: replica, max_tokens: 64, cpu_gib: 0.02}")));
  REQUIRE(r.tally->status == 0);
  CHECK(r.drained);
  CHECK(r.all->prefix_hits == (cycles - 1) * (B + 1));
  CHECK(r.all->prefix_tokens_loaded == (cycles - 1) * (B + 1) * 16);
  CHECK(r.all->prefix_tokens_reused == r.all->prefix_tokens_loaded);
  // a loaded request's step waits for its 16 tokens x 131,072 bytes over the H100's PCIe link
  const double load = 16 * 131072.0 / (test::device("h100-sxm-80gb").pcie_gb_s * 1e9);
  CHECK(r.all->ttft.max == doctest::Approx(0.01 + load).epsilon(1e-9));
  CHECK(r.tally->pools[0].cache_load_s == doctest::Approx((cycles - 1) * (B + 1) * load).epsilon(1e-9));
  const Json& pc = r.report["prefix_cache"];
  CHECK(pc["cpu_entries_per_replica"] == 10);
  CHECK(pc["entries_per_replica"] == B);
}

TEST_CASE("prefix cache: a store the replicas share serves a block another replica computed, by hand") {
  // round robin sends the second request to replica 1, whose own cache is empty: the shared store
  // has replica 0's block, loaded as 100 us + 16 tokens x 131,072 bytes at 10 GB/s
  const std::string path = trace("remote.jsonl", {{7}, {7}});
  const std::string store = "{scope: replica, remote: {gib: 0.01, gb_s: 10, latency_us: 100}}";
  const auto r = test::run(test::scenario(scenario(path, store, 2, "round_robin")));
  REQUIRE(r.tally->status == 0);
  CHECK(r.drained);
  CHECK(r.all->prefix_hits == 1);
  CHECK(r.all->prefix_tokens_loaded == 16);
  CHECK(r.tally->pools[0].remote_loaded == 16);
  const double load = 100e-6 + 16 * 131072.0 / 10e9;
  CHECK(r.all->ttft.max == doctest::Approx(0.01 + load).epsilon(1e-9));
  CHECK(r.tally->pools[0].cache_load_s == doctest::Approx(load).epsilon(1e-9));
  const Json& pc = r.report["prefix_cache"];
  CHECK(pc["remote"]["entries"] == 5);  // 0.01 GiB of 2 MiB blocks
  CHECK(pc["remote"]["loaded_tokens"] == 16);
  // without the store the second replica computes it
  const auto n = test::run(test::scenario(scenario(path, "{scope: replica}", 2, "round_robin")));
  CHECK(n.all->prefix_hits == 0);
  CHECK(n.all->ttft.max == doctest::Approx(0.01).epsilon(1e-9));
  // a store of one block keeps the latest: 1, 2, then 1 on a third replica misses; of two, it hits
  const std::string abc = trace("remote_lru.jsonl", {{1}, {2}, {1}});
  const auto one =
      test::run(test::scenario(scenario(abc, "{scope: replica, remote: {gib: 0.002, gb_s: 10}}", 3, "round_robin")));
  CHECK(one.report["prefix_cache"]["remote"]["entries"] == 1);
  CHECK(one.all->prefix_hits == 0);
  const auto two =
      test::run(test::scenario(scenario(abc, "{scope: replica, remote: {gib: 0.004, gb_s: 10}}", 3, "round_robin")));
  CHECK(two.report["prefix_cache"]["remote"]["entries"] == 2);
  CHECK(two.all->prefix_hits == 1);
  CHECK(two.all->ttft.max == doctest::Approx(0.01 + 16 * 131072.0 / 10e9).epsilon(1e-9));
}

TEST_CASE("prefix cache: a hit saves the prompt's cached blocks, and a request holds them while it runs") {
  // 3 blocks of 16 tokens: the second request finds the first two (its third differs), so it
  // computes 49 - 32 = 17 tokens; a linear model's step does not depend on tokens, so check tallies
  const auto r =
      test::run(test::scenario(scenario(trace("partial.jsonl", {{7, 8, 9}, {7, 8, 10}}, 49, 1), "{scope: replica}")));
  CHECK(r.drained);
  CHECK(r.all->prefix_hits == 1);
  CHECK(r.all->prefix_tokens_reused == 32);
}

TEST_CASE("prefix_aware: cached blocks weigh 3 against a replica's queue at 2") {
  // t=0 A (short) on replica 0, which keeps its block; t=1 C (long) on replica 0 too (both idle,
  // lowest index); t=2 A again. Replica 0 holds A (prefix score 3 x 1) and runs C, but nothing
  // waits at either (the queue score counts waiting requests: 2 x 1 each): prefix_aware sends A to
  // replica 0 and hits, least outstanding sends it to replica 1 and misses.
  const std::string path = trace("aware.jsonl", {{1}, {2}, {1}}, 17, 1, {1, 2000, 1});
  const auto aware = test::run(test::scenario(scenario(path, "{scope: replica}", 2, "prefix_aware")));
  CHECK(aware.drained);
  CHECK(aware.all->prefix_hits == 1);
  const auto lo = test::run(test::scenario(scenario(path, "{scope: replica}", 2, "least_outstanding")));
  CHECK(lo.all->prefix_hits == 0);
}

TEST_CASE("prefix_aware: the queue score counts waiting requests, as llm-d's queue scorer reads vLLM's") {
  // X = [1, 2, 3, 4] at t=0 on replica 0; L (one block, 3,000 tokens out) at t=1 on replica 0 too
  // (a tie, the lower index); Y = [1, 2, 5, 6] at t=2. Nothing waits anywhere, so both queue
  // scores are 1: replica 0 scores 3 x 2/4 + 2 = 3.5 against 2, and Y finds X's first two blocks.
  // Scored by outstanding requests (L running), replica 0 would score 1.5 and Y would miss.
  const std::string path = trace("waiting.jsonl", {{1, 2, 3, 4}, {9}, {1, 2, 5, 6}}, 65, 1, {1, 3000, 1});
  const auto r = test::run(test::scenario(scenario(path, "{scope: replica}", 2, "prefix_aware")));
  CHECK(r.drained);
  CHECK(r.all->prefix_hits == 1);
  CHECK(r.all->prefix_tokens_reused == 32);
}

TEST_CASE("prefix_aware: with nothing to reuse and nothing waiting, the KV score spreads the load") {
  // 1,200 requests at 20 a second, every block new, on 4 H100s: no prefix score and (mostly) no
  // queue anywhere, so the scores tie but for free KV; without that term the lowest index would
  // take nearly everything (67 of 85 running sequences, mean e2e 1.6 times least outstanding's)
  std::string rows;
  for (int i = 0; i < 1200; ++i) {
    std::string ids;
    for (int b = 0; b < 64; ++b) ids += (b ? ", " : "") + std::to_string(64 * i + b);
    rows += "{\"timestamp\": " + std::to_string(50 * i) +
            ", \"input_length\": 1024, \"output_length\": 300, \"hash_ids\": [" + ids + "]}\n";
  }
  const std::string path = test::write_temp("spread.jsonl", rows);
  auto e2e = [&](const std::string& router) {
    const auto r = test::run(
        test::scenario("duration_s: trace_end\nwarmup_s: 10\nmodel: llama-3.1-8b\ndevice: h100-sxm-80gb\n"
                       "engine: {prefix_cache: {scope: replica}}\nfleet: {replicas: 4, router: " +
                       router + "}\nworkload: {arrival: {process: trace, path: " + path + ", block_tokens: 16}}\n"));
    CHECK(r.drained);
    return r.report["latency_s"]["e2e"]["mean"].get<double>();
  };
  const double aware = e2e("prefix_aware"), lo = e2e("least_outstanding");
  MESSAGE("mean e2e: prefix_aware " << aware << " s, least outstanding " << lo << " s");
  CHECK(aware < 1.1 * lo);
}

TEST_CASE("prefix cache: a prompt's blocks are cached once computed, so a request beside it finds them") {
  // A (4 blocks) decodes 500 steps of 10 ms from t=0; B, the same 4 blocks, comes at t=1 while A
  // still runs: it finds them all (64 tokens of its 65), as in vLLM, which caches a block once it
  // is full. Cached only when A left, B would find none.
  const std::string path = trace("beside.jsonl", {{1, 2, 3, 4}, {1, 2, 3, 4}}, 65, 1, {500, 1});
  const auto r = test::run(test::scenario(scenario(path, "{scope: replica}")));
  CHECK(r.drained);  // every KV block back, none still held
  CHECK(r.all->prefix_hits == 1);
  CHECK(r.all->prefix_tokens_reused == 64);
  // the same with a host tier: B finds them on the device, loads nothing
  const auto h = test::run(test::scenario(scenario(path, "{scope: replica, cpu_gib: 1}")));
  CHECK(h.drained);
  CHECK(h.all->prefix_tokens_reused == 64);
  CHECK(h.all->prefix_tokens_loaded == 0);
}

TEST_CASE("prefix cache: an admission that cannot fit evicts nothing, what it would have evicted is found later") {
  // K blocks of KV. B takes half and decodes 2,000 steps; A (4 blocks) leaves them cached at 1.5 s;
  // C needs 60% at 2 s: it cannot fit beside B, with or without A's blocks, so it waits for B,
  // evicting nothing; D (A again, behind C) finds A's blocks once B has left
  const std::string cache = "{scope: replica}, gpu_memory_utilization: 0.3, max_num_seqs: 8, max_batched_tokens: 8192";
  const int64_t K = test::scenario(scenario(trace("room0.jsonl", {{1}, {2}}), cache)).pools[0].params().kv_total_blocks;
  const int64_t b = K / 2 * 16, c = K * 6 / 10 * 16;
  const std::string rows =
      "{\"timestamp\": 0, \"input_length\": " + std::to_string(b) +
      ", \"output_length\": 2000, \"hash_ids\": [100]}\n"
      "{\"timestamp\": 1500, \"input_length\": 65, \"output_length\": 1, \"hash_ids\": [1, 2, 3, 4]}\n"
      "{\"timestamp\": 2000, \"input_length\": " +
      std::to_string(c) +
      ", \"output_length\": 1, \"hash_ids\": [200]}\n"
      "{\"timestamp\": 3000, \"input_length\": 65, \"output_length\": 1, \"hash_ids\": [1, 2, 3, 4]}\n";
  const auto r = test::run(test::scenario(scenario(test::write_temp("room.jsonl", rows), cache)));
  CHECK(r.drained);
  CHECK(r.all->completed == 4);
  CHECK(r.tally->pools[0].cache_evicted == 0);
  CHECK(r.all->prefix_tokens_reused == 64);
}

TEST_CASE("prefix cache: cached blocks no request holds count as free KV, as vLLM's usage counts them") {
  // A (4 blocks) leaves them cached, unheld; B (another block) then decodes for 50 s beside them.
  // The KV occupancy is B's alone, as with a pool-wide cache that holds no device blocks
  const std::string path = trace("idle_cache.jsonl", {{1, 2, 3, 4}, {5}}, 65, 1, {1, 5000});
  auto occupancy = [&](const std::string& cache) {
    const auto r = test::run(test::scenario(scenario(path, cache)));
    CHECK(r.drained);
    return r.report["utilization"]["kv_occupancy"].get<double>();
  };
  const double bounded = occupancy("{scope: replica}"), pool = occupancy("{scope: pool}");
  REQUIRE(pool > 0);
  CHECK(bounded == doctest::Approx(pool).epsilon(1e-12));
}

TEST_CASE("prefix cache: bounded per replica never reuses more than the unbounded pool-wide cache") {
  const std::string base = std::string(FLEETSIM_SOURCE_DIR) + "/scenarios/mooncake-replay.yaml";
  const std::vector<std::string> cut = {"duration_s=120"};
  auto reused = [&](std::vector<std::string> sets) {
    sets.insert(sets.end(), cut.begin(), cut.end());
    const auto r = test::run(load_scenario_file(base, sets));
    REQUIRE(r.tally->status == 0);
    CHECK(r.drained);
    return r.all->prefix_tokens_reused;
  };
  const double pool = reused({});
  const double replica = reused({"engine.prefix_cache={scope: replica}"});
  const double aware = reused({"engine.prefix_cache={scope: replica}", "fleet.router=prefix_aware"});
  const double small = reused({"engine.prefix_cache={scope: replica, max_tokens: 65536}"});
  MESSAGE("tokens reused: pool-wide " << pool << ", per replica " << replica << " (prefix_aware " << aware
                                      << "), per replica at 64k tokens " << small);
  CHECK(pool > 0);
  CHECK(replica <= pool);
  CHECK(aware <= pool);
  CHECK(small <= replica);
}

TEST_CASE("prefix cache: bad settings are located errors") {
  using test::error_of;
  const std::string path = trace("errs.jsonl", {{1}, {2}});
  CHECK(error_of(scenario(path, "{scope: replica}")) == "(no error)");
  CHECK(error_of(scenario(path, "{scope: node}")).find("node") != std::string::npos);
  CHECK(error_of(scenario(path, "{scope: pool, max_tokens: 100}")).find("bounds a cache per replica") !=
        std::string::npos);
  CHECK(error_of(scenario(path, "{scope: replica, max_tokens: 8}")).find("holds no block") != std::string::npos);
  CHECK(error_of(scenario(path, "{scope: replica, size: 3}")).find("unknown key 'size'") != std::string::npos);
  CHECK(error_of(scenario(path, "{scope: pool, cpu_gib: 4}")).find("host tier behind a cache per replica") !=
        std::string::npos);
  CHECK(error_of(scenario(path, "{scope: replica, cpu_gib: 0}")).find("cpu_gib") != std::string::npos);
  CHECK(error_of(scenario(path, "{scope: pool, remote: {gib: 4, gb_s: 10}}")).find("share behind their caches") !=
        std::string::npos);
  CHECK(error_of(scenario(path, "{scope: replica, remote: {gib: 4}}")).find("gb_s") != std::string::npos);
  CHECK(error_of(scenario(path, "{scope: replica, remote: {gib: 4, gb_s: 10, rtt: 1}}")).find("unknown key 'rtt'") !=
        std::string::npos);
  CHECK(error_of(scenario(path, "{scope: pool}", 2, "prefix_aware")).find("needs engine.prefix_cache") !=
        std::string::npos);
  // a class without hashed blocks has nothing for the cache
  CHECK(
      error_of("duration_s: 60\ndevice: h100-sxm-80gb\nmodel: llama-3.1-8b\nengine: {prefix_cache: {scope: replica}}\n"
               "fleet: {replicas: 1}\nworkload: {arrival: {process: poisson, "
               "rate_per_s: 1}, prompt_tokens: 100, output_tokens: 10}\n")
          .find("keeps a trace's hashed prompt blocks") != std::string::npos);
  CHECK(error_of(scenario(path, "{scope: replica}") + "").find("(no error)") != std::string::npos);
  std::string off = scenario(path, "{scope: replica}");
  off.replace(off.find("prefix_cache:"), 13, "prefix_caching: false, prefix_cache:");
  CHECK(error_of(off).find("needs engine.prefix_caching: true") != std::string::npos);
  // hashes of 1,000-token blocks read as 16-token ones would match prefixes at the wrong lengths
  const std::string wide = trace("wide_blocks.jsonl", {{1, 2}, {1, 3}, {4, 5}}, 2000);
  CHECK(error_of(scenario(wide, "{scope: replica}"))
            .find("3 of 3 rows have a hash_ids count that 16 tokens a block do not give (input_length / 16, rounded "
                  "either way); the rows imply about 1000 tokens a block") != std::string::npos);
}

TEST_CASE("a host tier or shared store smaller than one block is a located error") {
  // Llama 3.1 8B: a 16-token block is 2 MiB of KV (0.001953 GiB)
  const std::string path = trace("tier.jsonl", {{0, 1, 2}, {0, 1, 2}}, 49);
  CHECK(test::error_of(scenario(path, "{scope: replica, cpu_gib: 0.002}")) == "(no error)");
  const std::string host = test::error_of(scenario(path, "{scope: replica, cpu_gib: 0.001}"));
  CHECK(host.find("engine.prefix_cache.cpu_gib") != std::string::npos);
  CHECK(host.find("0.001 GiB holds no block of 16 tokens (0.001953 GiB of llama-3.1-8b's KV)") != std::string::npos);
  CHECK(test::error_of(scenario(path, "{scope: replica, remote: {gib: 0.000001, gb_s: 10}}"))
            .find("holds no block of 16 tokens") != std::string::npos);
  // a store of 16 PiB holds billions of blocks: the error says so, not "lower queue_limit or replicas"
  CHECK(test::error_of(scenario(path, "{scope: replica, remote: {gib: 16777216, gb_s: 1}}"))
            .find("16777216 GiB holds 8.59e+09 blocks of 16 tokens; at most 134217728 can be simulated") !=
        std::string::npos);
}
