// Sweeps: a run stops as soon as its SLO miss is certain (SimParams::settle), where the requests a
// run can have are bounded before it starts (every class replays a trace or sends a burst). A
// configuration hopelessly short of its SLO then costs the simulated time it took to show it.
#pragma once
#include <string>
#include <vector>

#include "core/params.hpp"
#include "core/tally.hpp"
#include "sweep/sweep.hpp"

namespace fleetsim {

// Requests a run of `p` can have in its window at most (every class replays a trace or sends a
// burst), or 0 where that is not known before it runs.
int64_t settle_request_bound(const SimParams& p);

// The rule for `p`'s runs in the sweep `spec` (none where it does not apply: spec.stop_certain_misses
// off, no request bound, no term it covers). For each SLO term `metric <= L`, with R replications
// and at most N requests in the window (a replication's figure above R L puts the mean of R above
// L, whatever the others do):
//   requests.rejection_fraction: more than floor(R L N) requests rejected;
//   latency_s.K.pQ (K ttft, tpot, e2e or queue_wait): more than N - ceil(Q N) requests whose figure
//     lies in a histogram bucket wholly above R L (the quantile reports its bucket's midpoint);
//   latency_s.K.max: one request whose figure is above R L.
// `slo_of`, where given, receives each rule term's index in spec.slo.
SettleRule settle_rule(const SweepSpec& spec, const SimParams& p, std::vector<size_t>* slo_of = nullptr);

// The violation a settled replication's row gives: which term, what made it certain, and when.
std::string settled_violation(const SweepSpec& spec, const SimParams& p, const Tally& t);

}  // namespace fleetsim
