#include "backend/windows.hpp"

#include <algorithm>
#include <deque>
#include <future>
#include <memory>
#include <numeric>

#include "backend/runner.hpp"
#include "core/engine.hpp"

namespace fleetsim {

namespace {

// A static batch is tallied when it forms, ahead of its time: a copy taken after a batch formed
// would miss the part of it inside the window. Such a scenario takes a whole run per window.
bool can_pause(const Scenario& s) {
  return std::all_of(s.pools.begin(), s.pools.end(),
                     [](const PoolSpec& p) { return p.batching == Batching::continuous; });
}

// One window: a copy of the simulation as it stood at the window's start, run on with the window
// as its measurement window until the window is closed.
struct Copy {
  SimParams p;
  std::vector<uint8_t> ws;
  Tally tally;
};

void run_copy(const Scenario& s, Copy& c, Sim sim) {
  sim_point(sim, c.p, c.ws.data());
  sim.p = &c.p;
  sim.tally = &c.tally;
  sim.W0 = c.p.measure_from_s;
  sim.W1 = c.p.measure_to_s;
  // every request in the system arrived before the window (free entries are set on arrival)
  for (int32_t i = 0; i < sim.req_hwm; ++i) sim.req[i].in_window = 0;
  tally_clear(c.tally, c.p.n_pools, c.p.n_classes);
  c.tally.window_s = sim.W1 - sim.W0;
  const double stopped = sim_advance<true>(sim, kInf, true);
  const bool early = stopped < kInf && c.tally.status == 0;
  sim_end(sim, early ? stopped : c.p.duration_s);
  // requests still in the system then arrived outside the window; the whole run finishes them
  if (early) c.tally.unfinished = 0;
  check_status(c.tally, s.source);
}

}  // namespace

void unclipped_from(Tally& window, const Tally& whole) {
  window.status = whole.status;
  window.events = whole.events;
  window.unfinished = whole.unfinished;
  for (int32_t i = 0; i < kMaxPools; ++i) window.pools[i].max_replicas = whole.pools[i].max_replicas;
}

void measure_windows(const Scenario& s, uint32_t replication, const std::vector<MeasureWindow>& windows, int threads,
                     const std::function<void(size_t, const Tally&)>& use, Tally* whole) {
  if (!can_pause(s)) {
    parallel_jobs(windows.size(), threads, [&](size_t i, HostWorkspace& ws) {
      SimParams p = s.params();
      p.measure_from_s = windows[i].from_s;
      p.measure_to_s = windows[i].to_s;
      const auto t = simulate_once(p, replication, ws);
      check_status(*t, s.source);
      use(i, *t);
    });
    if (whole) {
      HostWorkspace ws;
      *whole = *simulate_once(s.params(), replication, ws);
      check_status(*whole, s.source);
    }
    return;
  }
  std::vector<size_t> order(windows.size());
  std::iota(order.begin(), order.end(), size_t(0));
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return windows[a].from_s < windows[b].from_s; });
  // the run that carries the state is the scenario's own run, measured over its own window
  const SimParams mp = s.params();
  std::vector<uint8_t> mws(workspace_layout(mp).total);
  auto mt = std::make_unique<Tally>();
  Sim m = sim_begin(mp, replication, mws.data(), *mt);
  std::deque<std::future<void>> running;
  const size_t in_flight = size_t(std::max(1, threads - 1));
  for (size_t i : order) {
    sim_advance<true>(m, windows[i].from_s);
    if (mt->status != 0) {  // the run itself ran out of events: its error, as a whole run gives it
      sim_end(m, mp.duration_s);
      check_status(*mt, s.source);
    }
    auto c = std::make_shared<Copy>();
    c->p = mp;
    c->p.measure_from_s = windows[i].from_s;
    c->p.measure_to_s = windows[i].to_s;
    c->ws = mws;
    const Sim at = m;
    auto job = [&s, &use, i, c, at]() {
      run_copy(s, *c, at);
      use(i, c->tally);
    };
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
  if (whole) {  // the rest of the run, beside the last copies
    sim_advance<true>(m);
    sim_end(m, mp.duration_s);
  }
  while (!running.empty()) {
    running.front().get();
    running.pop_front();
  }
  if (whole) {
    *whole = *mt;
    check_status(*whole, s.source);
  }
}

}  // namespace fleetsim
