#include "timeline.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <deque>
#include <future>
#include <vector>

#include "core/engine.hpp"
#include "runner.hpp"

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

namespace {

// One interval: a copy of the simulation as it stood at the interval's start, run on with the
// interval as its measurement window until nothing more can land in it.
struct Interval {
  SimParams p;
  std::vector<uint8_t> ws;
  Tally tally;
};

Json run_interval(const Scenario& s, Interval& iv, Sim sim) {
  sim_point(sim, iv.p, iv.ws.data());
  sim.p = &iv.p;
  sim.tally = &iv.tally;
  sim.W0 = iv.p.measure_from_s;
  sim.W1 = iv.p.measure_to_s;
  tally_clear(iv.tally, iv.p.n_pools, iv.p.n_classes);
  iv.tally.window_s = sim.W1 - sim.W0;
  const double stopped = sim_advance<true>(sim, kInf, true);
  const bool early = stopped < kInf && iv.tally.status == 0;
  sim_end(sim, early ? stopped : iv.p.duration_s);
  // requests still in the system then arrived outside the window; the whole run finishes them
  if (early) iv.tally.unfinished = 0;
  check_status(iv.tally, s.source);
  return timeline_row(s, iv.tally, sim.W0, sim.W1);
}

// A whole run per interval, each measured over its interval.
Json rows_by_whole_runs(const Scenario& s, int n, double len, int threads) {
  std::vector<Json> rows(static_cast<size_t>(n), Json());
  parallel_jobs(size_t(n), threads, [&](size_t i, HostWorkspace& ws) {
    SimParams p = s.params();
    p.measure_from_s = s.warmup_s + double(i) * len;
    p.measure_to_s = int(i) + 1 == n ? s.duration_s : s.warmup_s + double(i + 1) * len;
    const auto t = simulate_once(p, 0, ws);
    check_status(*t, s.source);
    rows[i] = timeline_row(s, *t, p.measure_from_s, p.measure_to_s);
  });
  Json out = Json::array();
  for (auto& r : rows) out.push_back(std::move(r));
  return out;
}

}  // namespace

// One simulation is run once to each interval's start; from there a copy of its state goes on
// with that interval as its window until the window is closed (sim_window_closed). Every figure
// is the one a whole run measured over that interval gives, bit for bit, at about twice the cost
// of one run rather than one run per interval. A static batch is tallied when it forms, ahead of
// its time, so one formed before an interval's start would be missed by the copy: a scenario with
// static batching takes a whole run per interval instead.
Json run_timeline(const Scenario& s, int intervals, int threads) {
  const double span = s.duration_s - s.warmup_s;
  const int n = std::max(1, std::min(intervals, int(std::floor(span / 10.0))));
  const double len = span / n;
  if (std::any_of(s.pools.begin(), s.pools.end(), [](const PoolSpec& p) { return p.batching != Batching::continuous; }))
    return rows_by_whole_runs(s, n, len, threads);
  // the run that carries the state measures nothing: its window is empty
  SimParams mp = s.params();
  mp.measure_from_s = mp.measure_to_s = s.duration_s;
  const WorkspaceLayout layout = workspace_layout(mp);
  std::vector<uint8_t> mws(layout.total);
  auto mt = std::make_unique<Tally>();
  Sim m = sim_begin(mp, 0, mws.data(), *mt);

  std::vector<Json> rows(static_cast<size_t>(n), Json());
  std::deque<std::future<void>> running;
  const size_t in_flight = size_t(std::max(1, threads - 1));
  for (int i = 0; i < n; ++i) {
    const double t0 = s.warmup_s + double(i) * len;
    const double t1 = i + 1 == n ? s.duration_s : s.warmup_s + double(i + 1) * len;
    sim_advance<true>(m, t0);
    auto iv = std::make_shared<Interval>();
    iv->p = mp;
    iv->p.measure_from_s = t0;
    iv->p.measure_to_s = t1;
    iv->ws = mws;
    const Sim at = m;
    auto job = [&s, &rows, i, iv, at]() { rows[size_t(i)] = run_interval(s, *iv, at); };
    if (threads <= 1) {
      job();
      continue;
    }
    while (running.size() >= in_flight) {
      running.front().get();
      running.pop_front();
    }
    running.push_back(std::async(std::launch::async, job));
  }
  for (auto& f : running) f.get();
  Json out = Json::array();
  for (auto& r : rows) out.push_back(std::move(r));
  return out;
}

}  // namespace fleetsim
