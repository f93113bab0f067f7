// fleet.autoscale: the HPA's signal, target, windows, tolerance and rate policies
// (docs/model.md, "Replica lifecycle, cold starts and autoscaling").
#include "input/scenario_internal.hpp"

namespace fleetsim::detail {

void parse_autoscale(const N& fl, PoolSpec& P) {
  const N as = fl.at("autoscale");
  as.allow_keys({"min_replicas", "max_replicas", "signal", "target", "interval_s", "scale_up_window_s",
                 "scale_down_window_s", "cooldown_s", "tolerance", "ttft_window_s", "ttft_quantile", "cpu_base",
                 "cpu_per_request_s", "max_starts", "max_starts_per_hour", "scale_up_policy", "scale_down_policy"});
  AutoscaleParams& A = P.autoscale;
  A.enabled = 1;
  P.min_replicas = int(as.req("min_replicas").integer(0, 4096));
  P.max_replicas = int(as.req("max_replicas").integer(1, 4096));
  if (P.max_replicas < P.min_replicas)
    as.at("max_replicas").fail("max_replicas must be >= min_replicas", ErrorKind::inconsistent);
  if (P.replicas < 0) P.replicas = P.min_replicas;
  if (P.replicas < P.min_replicas || P.replicas > P.max_replicas)
    fl.at("replicas")
        .fail("replicas (the starting count) must lie in [min_replicas, max_replicas]", ErrorKind::inconsistent);
  const std::string sig = as.req("signal").choice({"queue_depth", "inflight", "ttft", "busy", "host_cpu"});
  A.signal = sig == "queue_depth" ? ScaleSignal::queue_depth
             : sig == "inflight"  ? ScaleSignal::inflight
             : sig == "ttft"      ? ScaleSignal::ttft
             : sig == "busy"      ? ScaleSignal::busy
                                  : ScaleSignal::host_cpu;
  A.target = as.req("target").pos(1e6);
  if ((A.signal == ScaleSignal::busy || A.signal == ScaleSignal::host_cpu) && A.target > 1.0)
    as.at("target").fail("a " + sig + " target is a fraction in (0, 1]");
  // controllers poll every few seconds; sub-100 ms evaluation only multiplies events
  A.interval_s = as.has("interval_s") ? as.at("interval_s").num_in(0.1, 3600, "interval_s") : 15.0;
  A.up_window_s = as.has("scale_up_window_s") ? as.at("scale_up_window_s").num_in(0, 86400) : 0.0;
  A.down_window_s = as.has("scale_down_window_s") ? as.at("scale_down_window_s").num_in(0, 86400) : 300.0;
  A.cooldown_s = as.has("cooldown_s") ? as.at("cooldown_s").num_in(0, 86400) : 300.0;
  A.tolerance = as.has("tolerance") ? as.at("tolerance").num_in(0, 1) : 0.1;
  A.ttft_window_s = as.has("ttft_window_s") ? as.at("ttft_window_s").pos(86400) : 60.0;
  A.ttft_quantile = as.has("ttft_quantile") ? as.at("ttft_quantile").num_in(0.5, 1.0) : 0.95;
  A.cpu_base = as.has("cpu_base") ? as.at("cpu_base").num_in(0, 1) : 0.05;
  A.cpu_per_request_s = as.has("cpu_per_request_s") ? as.at("cpu_per_request_s").num_in(0, 10) : 0.004;
  // (0 inside means no cap: a cap written as 0 would read as none, so a written one is at least 1)
  A.max_starts = as.has("max_starts") ? int(as.at("max_starts").integer(1, 1000000)) : 0;
  // whole starts in any hour (a fraction would round up: the cap counts the starts in the last hour)
  A.max_starts_per_hour = as.has("max_starts_per_hour") ? double(as.at("max_starts_per_hour").integer(1, 64)) : 0.0;
  // rate policies: Kubernetes' defaults (scale up by 4 pods or 100% per 15 s, whichever is more;
  // scale down by up to 100% per 15 s); `none` lifts the limit
  auto policy = [&](const char* key, int32_t pods, double percent, int32_t& pods_out, double& percent_out,
                    double& period_out) {
    pods_out = pods;
    percent_out = percent;
    period_out = 15.0;
    if (!as.has(key)) return;
    const N pn = as.at(key);
    if (pn.node.IsScalar()) {
      if (pn.str() != "none")
        pn.fail(std::string(key) + ": expected {pods, percent, period_s} or `none` (no limit), not '" + pn.str() + "'");
      pods_out = 0;
      percent_out = 0.0;
      return;
    }
    pn.allow_keys({"pods", "percent", "period_s"});
    pods_out = pn.has("pods") ? int32_t(pn.at("pods").integer(0, 4096)) : 0;
    percent_out = pn.has("percent") ? pn.at("percent").num_in(0, 1000) : 0.0;
    period_out = pn.has("period_s") ? pn.at("period_s").num_in(1, 1800) : 15.0;
    if (pods_out == 0 && percent_out == 0)
      pn.fail(std::string(key) + " allows no change: give pods or percent above 0, or `none` for no limit",
              ErrorKind::inconsistent);
    if (period_out > 64.0 * A.interval_s)
      pn.at("period_s")
          .fail("period_s is longer than 64 evaluations (64 x interval_s); lengthen interval_s",
                ErrorKind::inconsistent);
  };
  policy("scale_up_policy", 4, 100.0, A.up_pods, A.up_percent, A.up_period_s);
  policy("scale_down_policy", 0, 100.0, A.down_pods, A.down_percent, A.down_period_s);
  if (!fl.has("headroom_replicas")) P.headroom_replicas = P.min_replicas;  // the warm floor is chosen headroom
}

}  // namespace fleetsim::detail
