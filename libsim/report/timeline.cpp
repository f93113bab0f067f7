#include "report/timeline.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

#include "backend/windows.hpp"

namespace fleetsim {

bool wants_timeline(const Scenario& s) {
  return std::any_of(s.pools.begin(), s.pools.end(), [](const PoolSpec& p) { return p.autoscale.enabled != 0; });
}

Json timeline_row(const Scenario& s, const Tally& t, double t0, double t1) {
  const Json r = run_report(s, t);
  Json row;
  row["t0_s"] = t0;
  row["t1_s"] = t1;
  row["mean_replicas"] = r["fleet"]["mean_replicas"];
  row["busy_fraction"] = r["utilization"]["busy_fraction"];
  row["idle_fraction"] = r["utilization"]["idle_fraction"];
  row["cold_start_fraction"] = r["utilization"]["cold_start_fraction"];
  row["mean_waiting"] = r["requests"]["mean_waiting"];
  row["arrived"] = r["requests"]["arrived"];
  row["ttft_p99_s"] = r["latency_s"]["ttft"]["p99"];
  row["usd"] = r["cost"]["total_usd"];
  return row;
}

Json run_timeline(const Scenario& s, int intervals, int threads, uint32_t replication, Tally* whole) {
  const double span = s.duration_s - s.warmup_s;
  const int n = std::max(1, std::min(intervals, int(std::floor(span / 10.0))));
  const double len = span / n;
  std::vector<MeasureWindow> windows;
  for (int i = 0; i < n; ++i)
    windows.push_back({s.warmup_s + double(i) * len, i + 1 == n ? s.duration_s : s.warmup_s + double(i + 1) * len});
  std::vector<Json> rows(windows.size(), Json());
  measure_windows(
      s, replication, windows, threads,
      [&](size_t i, const Tally& t) { rows[i] = timeline_row(s, t, windows[i].from_s, windows[i].to_s); }, whole);
  Json out = Json::array();
  for (auto& r : rows) out.push_back(std::move(r));
  return out;
}

}  // namespace fleetsim
