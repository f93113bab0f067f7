// Sweeps: a run stops as soon as its SLO miss is certain (SimParams::settle), where the requests a
// run can have are bounded before it starts (no class is a closed loop of users). A
// configuration hopelessly short of its SLO then costs the simulated time it took to show it.
#pragma once
#include <string>
#include <vector>

#include "core/params.hpp"
#include "core/tally.hpp"
#include "sweep/sweep.hpp"

namespace fleetsim {

// Requests a run of `p` can have in its window at most, in each of replications 0 ..
// `replications` - 1 (a class replays a trace, sends a burst, or draws open-loop arrivals, which
// are counted ahead), or 0 where that is not known before it runs (closed-loop users).
int64_t settle_request_bound(const SimParams& p, uint32_t replications);

// Whether the rule can apply to any run of `spec`: stop_certain_misses on, and an SLO term it
// covers (an upper bound on the rejection fraction or on a latency quantile), below.
bool settle_may_apply(const SweepSpec& spec);

// The factor F: one replication's figure above F L misses a term `metric <= L` in the row, whatever
// the others do. Judged on the mean of R replications, F = R; on the 95% bound (the default), the
// bound of n values, one of them x, is at least x min(1, (1 + t_{n-1}) / n), so F = the largest
// max(1, n / (1 + t_{n-1})) for n <= R (2.38 for R = 8, 1 for R <= 4).
double settle_factor(const SweepSpec& spec);

// The rule for `p`'s runs in the sweep `spec` (none where it does not apply: spec.stop_certain_misses
// off, no request bound, no term it covers). For each SLO term `metric <= L`, with at most N
// requests in the window and F as above:
//   requests.rejection_fraction: more than floor(F L N) requests rejected;
//   latency_s.K.pQ (K ttft, tpot, e2e or queue_wait): more than N - ceil(Q N) requests whose figure
//     lies in a histogram bucket wholly above F L (the quantile reports its bucket's midpoint);
//   latency_s.K.max: one request whose figure is above F L.
// `slo_of`, where given, receives each rule term's index in spec.slo.
SettleRule settle_rule(const SweepSpec& spec, const SimParams& p, std::vector<size_t>* slo_of = nullptr);

// The violation a settled replication's row gives: which term, what made it certain, and when.
std::string settled_violation(const SweepSpec& spec, const SimParams& p, const Tally& t);

}  // namespace fleetsim
