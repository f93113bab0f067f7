// engine.prefix_cache: where a trace's hashed prompt blocks are cached (docs/model.md, "Caching"),
// read with the pool's engine, and checked once the classes say which trace each pool replays.
#include <fmt/format.h>

#include <cmath>
#include <string>

#include "input/scenario_internal.hpp"

namespace fleetsim::detail {

void parse_prefix_cache(const N& eng, PoolSpec& P) {
  if (!eng.has("prefix_cache")) return;
  const N pc = eng.at("prefix_cache");
  pc.allow_keys({"scope", "max_tokens", "cpu_gib", "remote"});
  P.cache_per_replica = pc.req("scope").choice({"pool", "replica"}) == "replica";
  if (pc.has("max_tokens")) {
    if (!P.cache_per_replica)
      pc.at("max_tokens")
          .fail("max_tokens bounds a cache per replica (scope: replica); the pool-wide cache is unbounded",
                ErrorKind::inconsistent);
    P.cache_max_tokens = pc.at("max_tokens").integer(1, int64_t(1) << 40);
  }
  if (pc.has("cpu_gib")) {
    if (!P.cache_per_replica)
      pc.at("cpu_gib").fail("cpu_gib is a host tier behind a cache per replica (scope: replica)",
                            ErrorKind::inconsistent);
    P.cache_cpu_gib = pc.at("cpu_gib").pos(65536);
    if (!(P.device.pcie_gb_s > 0))
      pc.at("cpu_gib").fail(P.device.name + " has no pcie_gb_s in the catalog: the host tier's loads cannot be priced",
                            ErrorKind::inconsistent);
  }
  if (pc.has("remote")) {
    const N rm = pc.at("remote");
    if (!P.cache_per_replica)
      rm.fail(
          "remote is a store the replicas share behind their caches (scope: replica); the pool-wide cache "
          "already is one",
          ErrorKind::inconsistent);
    rm.allow_keys({"gib", "gb_s", "latency_us"});
    P.cache_remote_gib = rm.req("gib").pos(1 << 24);
    P.cache_remote_gb_s = rm.req("gb_s").pos(1e5);
    P.cache_remote_latency_us = rm.has("latency_us") ? rm.at("latency_us").num_in(0, 1e7) : 0.0;
  }
  if (P.cache_per_replica && eng.has("prefix_caching") && !P.prefix_caching)
    pc.fail("a prefix cache per replica needs engine.prefix_caching: true", ErrorKind::inconsistent);
}

void check_prefix_caches(const N& root, Scenario& s) {
  // a prefix cache per replica keeps one trace's hashed blocks: its pool replays exactly one
  for (size_t i = 0; i < s.pools.size(); ++i) {
    PoolSpec& P = s.pools[i];
    if (!P.cache_per_replica) continue;
    const N eng = root.has("pools") && root.at("pools").has(P.name.c_str()) &&
                          root.at("pools").at(P.name.c_str()).has("engine") &&
                          root.at("pools").at(P.name.c_str()).at("engine").has("prefix_cache")
                      ? root.at("pools").at(P.name.c_str()).at("engine")
                      : root.at("engine");
    const N pc = eng.at("prefix_cache");
    int found = 0;
    for (const auto& C : s.classes) {
      if (C.pool != int(i)) continue;
      if (C.trace && !C.trace->block_off.empty()) {
        P.cache_block_tokens = C.trace->block_tokens;
        ++found;
      } else {
        pc.fail("a prefix cache per replica keeps a trace's hashed prompt blocks; class " + C.name +
                    " on this pool has none (a Mooncake JSONL trace has them; a class's shared prefix and a "
                    "session's history are cached per replica already)",
                ErrorKind::inconsistent);
      }
    }
    if (found != 1)
      pc.fail("a prefix cache per replica keeps the blocks of one trace; pool '" + P.name + "' serves " +
                  std::to_string(found),
              ErrorKind::inconsistent);
    if (P.batching != Batching::continuous)
      pc.fail("a prefix cache per replica needs continuous batching", ErrorKind::inconsistent);
    if (P.cache_max_tokens > 0 && P.cache_max_tokens < P.cache_block_tokens)
      pc.at("max_tokens")
          .fail("max_tokens " + std::to_string(P.cache_max_tokens) + " holds no block of " +
                    std::to_string(P.cache_block_tokens) + " tokens",
                ErrorKind::inconsistent);
    // a tier behind the device holds whole blocks of the replica's KV (every device's share)
    const double block_gib = kv_bytes_per_token_per_device(P.model, kv_dtype_bytes(P.kv_dtype), P.tp, P.pp) *
                             double(P.devices()) * double(P.cache_block_tokens) / kGiB;
    // and indexes each block it holds in the simulation's state: 2^27 blocks is 2 GiB of it
    constexpr double kMaxTierBlocks = 134217728.0;
    auto holds_a_block = [&](const N& at, double gib) {
      if (gib < block_gib)
        at.fail(fmt::format("{} GiB holds no block of {} tokens ({:.4g} GiB of {}'s KV)", gib, P.cache_block_tokens,
                            block_gib, P.model.name),
                ErrorKind::inconsistent);
      if (gib / block_gib > kMaxTierBlocks)
        at.fail(fmt::format("{} GiB holds {:.3g} blocks of {} tokens; at most {:.0f} can be simulated (their index "
                            "takes 16 bytes each): a smaller tier, or the trace replayed in larger blocks",
                            gib, std::floor(gib / block_gib), P.cache_block_tokens, kMaxTierBlocks),
                ErrorKind::inconsistent);
    };
    if (P.cache_cpu_gib > 0) holds_a_block(pc.at("cpu_gib"), P.cache_cpu_gib);
    if (P.cache_remote_gib > 0) holds_a_block(pc.at("remote").at("gib"), P.cache_remote_gib);
  }
}

}  // namespace fleetsim::detail
