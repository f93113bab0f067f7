// The run over time: replicas, busy and idle, queue and p99 TTFT per interval, for the report's
// timeline chart. Each interval is the same simulation measured over that interval only (the
// trajectory does not depend on the measurement window), so every figure is exact, not sampled.
// The simulation runs once; the intervals are measured on copies of it (windows.hpp).
#pragma once
#include "input/scenario.hpp"
#include "report/report.hpp"

namespace fleetsim {

// Up to `intervals` equal intervals of the measured span (at least 10 s each) of replication r.
// With `whole`, the run itself (measured over its own window) goes there, from the same simulation.
Json run_timeline(const Scenario& s, int intervals, int threads, uint32_t replication = 0, Tally* whole = nullptr);

// The row of the interval [t0, t1) from a run measured over it (tally.window_s = t1 - t0).
Json timeline_row(const Scenario& s, const Tally& t, double t0, double t1);

// Whether a timeline says something a single figure does not: a pool autoscales.
bool wants_timeline(const Scenario& s);

}  // namespace fleetsim
