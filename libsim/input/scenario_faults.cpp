// Scenario files: a pool's faults (fleet.failures, fleet.faults.cpu_fallback, fleet.thermal).
#include <string>

#include "base/error.hpp"
#include "input/scenario_internal.hpp"

namespace fleetsim::detail {

void parse_faults(const N& fl, PoolSpec& P) {
  if (fl.has("failures")) {
    const N fa = fl.at("failures");
    fa.allow_keys({"mtbf_hours"});
    P.mtbf_hours = fa.req("mtbf_hours").pos(1e7);
  }
  if (fl.has("faults")) {
    const N fa = fl.at("faults");
    fa.allow_keys({"cpu_fallback"});
    const N cf = fa.req("cpu_fallback");
    cf.allow_keys({"share", "slowdown", "at_s"});
    P.fallback_share = cf.req("share").num_in(0, 1, "share");
    if (P.fallback_share > 0.0 && cpu_instance(P.device))
      cf.fail("a CPU fallback moves a replica off its GPU onto the host; " + P.device.name +
                  " is a CPU instance already (remove fleet.faults)",
              ErrorKind::inconsistent);
    P.fallback_slowdown = cf.has("slowdown") ? cf.at("slowdown").num_in(1, 10000, "slowdown") : 50.0;
    P.fallback_at_s = cf.has("at_s") ? cf.at("at_s").num_in(0, 1e9) : 0.0;
  }
  if (fl.has("thermal")) {
    const N th = fl.at("thermal");
    th.allow_keys({"time_constant_s", "throttle_above", "clock_drop"});
    P.thermal_tau_s = th.req("time_constant_s").pos(1e8);
    P.thermal_above = th.req("throttle_above").num_in(0.001, 0.999, "throttle_above");
    P.thermal_clock_drop = th.req("clock_drop").num_in(0.001, 0.9, "clock_drop");
    // the proxy is one replica's busy time: a device shared with others heats from their work too
    const bool slices = !P.partition.empty() && P.replicas_per_device > 1;  // 7g.80gb is the whole device
    if (slices || P.shared_by() > 1)
      th.fail(std::string("thermal throttling is modelled for replicas that have their device to themselves; with ") +
                  (slices              ? "MIG slices"
                   : P.mps_clients > 1 ? "mps"
                                       : "time_slicing") +
                  " the device's heat would come from its other replicas' work too (drop thermal, or the sharing)",
              ErrorKind::inconsistent);
  }
}

}  // namespace fleetsim::detail
