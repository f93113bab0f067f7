#include "timeline.hpp"

#include <algorithm>
#include <cmath>

#include "runner.hpp"

namespace fleetsim {

bool wants_timeline(const Scenario& s) {
  return std::any_of(s.pools.begin(), s.pools.end(), [](const PoolSpec& p) { return p.autoscale.enabled != 0; });
}

Json run_timeline(const Scenario& s, int intervals, int threads) {
  const double span = s.duration_s - s.warmup_s;
  const int n = std::max(1, std::min(intervals, int(std::floor(span / 10.0))));
  const double len = span / n;
  std::vector<Json> rows(static_cast<size_t>(n), Json());
  parallel_jobs(size_t(n), threads, [&](size_t i, HostWorkspace& ws) {
    SimParams p = s.params();
    p.measure_from_s = s.warmup_s + double(i) * len;
    p.measure_to_s = int(i) + 1 == n ? s.duration_s : s.warmup_s + double(i + 1) * len;
    const auto t = simulate_once(p, 0, ws);
    check_status(*t, s.source);
    const Json r = run_report(s, *t);
    Json row;
    row["t0_s"] = p.measure_from_s;
    row["t1_s"] = p.measure_to_s;
    row["mean_replicas"] = r["fleet"]["mean_replicas"];
    row["busy_fraction"] = r["utilization"]["busy_fraction"];
    row["idle_fraction"] = r["utilization"]["idle_fraction"];
    row["cold_start_fraction"] = r["utilization"]["cold_start_fraction"];
    row["mean_waiting"] = r["requests"]["mean_waiting"];
    row["arrived"] = r["requests"]["arrived"];
    row["ttft_p99_s"] = r["latency_s"]["ttft"]["p99"];
    row["usd"] = r["cost"]["total_usd"];
    rows[i] = row;
  });
  Json out = Json::array();
  for (auto& r : rows) out.push_back(std::move(r));
  return out;
}

}  // namespace fleetsim
