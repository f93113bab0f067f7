// One run measured over many windows: the report's timeline and `fleetsim check`'s budget windows.
// Each window's tally is the one a whole run measured over that window gives, bit for bit, but
// the run is simulated once and paused at each window's start; a copy of its state goes on with
// the window as its measurement window until nothing later can change it (sim_window_closed).
#pragma once
#include <functional>
#include <vector>

#include "core/tally.hpp"
#include "input/scenario.hpp"

namespace fleetsim {

struct MeasureWindow {
  double from_s, to_s;
};

// use(i, tally) for each window i of replication r of s, from up to `threads` threads (in no
// particular order); the first exception (check_status on a window's run) is rethrown here.
// Every figure the window clips is exact. The few it does not (the run's events, the most replicas
// it ever had) describe the copy, up to where it stopped: unclipped_from sets them from the whole
// run.
// With `whole`, the run measured over the scenario's own window goes there: the same simulation
// carries on to its end (one run, not two).
void measure_windows(const Scenario& s, uint32_t replication, const std::vector<MeasureWindow>& windows, int threads,
                     const std::function<void(size_t, const Tally&)>& use, Tally* whole = nullptr);

// Copy into a window's tally the figures no measurement window clips, from the whole run's.
void unclipped_from(Tally& window, const Tally& whole);

}  // namespace fleetsim
