// The prefix_cache section of a run report: what a pool's caches reused, what it saved, and
// what each tier behind the device loaded.
#include <algorithm>

#include "cost/ledger.hpp"
#include "report/report.hpp"

namespace fleetsim {

// What prefix caching saved pool i: the prompt tokens it did not compute, priced at what the ones
// it computed cost: its busy prefill dollars, less the share its steps spent loading blocks from
// the tiers behind the device, over the prompt tokens it computed (not those reused or answered
// from the response cache); null where the pool reused nothing and has no cache of its own.
Json prefix_cache_json(const Scenario& s, const Tally& t, const Ledger& ledger, size_t i) {
  auto ratio = [](double n, double d) { return d > 0 ? Json(n / d) : Json(nullptr); };
  const PoolSpec& P = s.pools[i];
  double reused = 0, input = 0, answered = 0;
  for (size_t c = 0; c < s.classes.size(); ++c)
    if (size_t(s.classes[c].pool) == i) {
      reused += double(t.classes[c].prefix_tokens_reused);
      input += t.classes[c].input_tokens;
      answered += t.classes[c].answered_input_tokens;
    }
  if (!(reused > 0) && !P.cache_per_replica) return Json(nullptr);
  const double computed = input - reused - answered;
  const CostBlock& cb = ledger.pools[i].cost;
  const double loading = cb.input_busy_s > 0 ? std::min(1.0, t.pools[i].cache_load_s / cb.input_busy_s) : 0.0;
  const double prefill_usd = cb.usd[size_t(Bucket::busy_prefill)] * (1.0 - loading);
  Json pc = {{"scope", P.cache_per_replica ? "replica" : "unbounded"},
             {"reused_tokens", reused},
             {"reuse_share", ratio(reused, input)},
             {"saved_prefill_usd", computed > 0 ? Json(prefill_usd * reused / computed) : Json(nullptr)}};
  if (P.cache_per_replica) {
    const SimParams p = s.params();
    pc["entries_per_replica"] = p.pools[i].cache_entries;
    pc["block_tokens"] = P.cache_block_tokens;
    pc["evicted_blocks"] = t.pools[i].cache_evicted;
    if (P.cache_cpu_gib > 0) pc["cpu_entries_per_replica"] = p.pools[i].cpu_entries;
    if (P.cache_cpu_gib > 0 || P.cache_remote_gib > 0) {  // what the tiers behind the device loaded
      double loaded = 0;
      for (size_t c = 0; c < s.classes.size(); ++c)
        if (size_t(s.classes[c].pool) == i) loaded += double(t.classes[c].prefix_tokens_loaded);
      pc["loaded_tokens"] = loaded;
      pc["load_s"] = t.pools[i].cache_load_s;
    }
    if (P.cache_remote_gib > 0)
      pc["remote"] = Json{{"gib", P.cache_remote_gib},
                          {"gb_s", P.cache_remote_gb_s},
                          {"latency_us", P.cache_remote_latency_us},
                          {"entries", p.pools[i].remote_entries},
                          {"loaded_tokens", t.pools[i].remote_loaded}};
  }
  return pc;
}

}  // namespace fleetsim
