// Per-replica step-time slowdowns (docs/model.md, "Slowdowns"): a server that falls back to the
// host CPU after a node image update, and thermal throttling under sustained load. Both are a
// factor on the replica's step times, fixed for a run when the run is planned (a run's steps
// follow a line in closed form, steptime.hpp); a decode run that would outlast a change of the
// factor is cut at the first step boundary at or after it, so the next run gets the new factor.
#pragma once
#include "accounting.hpp"
#include "detmath.hpp"
#include "state.hpp"
#include "steptime.hpp"

namespace fleetsim {

FLEETSIM_HD FLEETSIM_FORCEINLINE void scale_line(Line& l, double f) {
  l.o *= f;
  l.a1 *= f;
  l.b1 *= f;
  l.a2 *= f;
  l.b2 *= f;
}

// Mark the run of busy replica r as computed on the CPU or at the throttled clock, keeping the
// pool's counts (their time integrals are the tallies' cpu_busy_s and throttled_s).
FLEETSIM_HD inline void set_run_flags(Sim& s, int32_t r, int32_t cpu, int32_t hot, double t) {
  Replica& R = s.rep[r];
  if (R.run_cpu == cpu && R.run_hot == hot) return;
  pool_advance(s, R.pool, t);
  PoolState& ps = s.pool[R.pool];
  ps.n_cpu_busy += cpu - R.run_cpu;
  ps.n_hot_busy += hot - R.run_hot;
  R.run_cpu = cpu;
  R.run_hot = hot;
}

// A fallback slot after the image update: its server found no device and runs on the host CPU,
// holding none of the device's memory, taking no turn on it, on no MPS server.
FLEETSIM_HD FLEETSIM_FORCEINLINE bool fallen_back(const PoolParams& P, const Replica& R, double t) {
  return R.fb_slot && P.fallback_share > 0.0 && t >= P.fallback_at_s;
}

// The step-time factor of the run busy replica r starts at t: a fallen-back server's slowdown (its
// device idles), else the throttled clock's while the temperature proxy is above the threshold,
// else exactly 1.
FLEETSIM_HD inline double run_factor(Sim& s, int32_t r, double t) {
  const PoolParams& P = s.p->pools[s.rep[r].pool];
  if (!(P.fallback_share > 0.0) && !(P.thermal_tau_s > 0.0)) return 1.0;
  Replica& R = s.rep[r];
  heat_update(s, R, t);  // the time up to t under the previous run's flags
  const int32_t cpu = R.fb_slot && t >= P.fallback_at_s ? 1 : 0;
  const int32_t hot = !cpu && P.thermal_tau_s > 0.0 && R.heat > P.thermal_above ? 1 : 0;
  set_run_flags(s, r, cpu, hot, t);
  return cpu ? P.fallback_slowdown : hot ? P.thermal_factor : 1.0;
}

// Cut replica r's decode run, planned at t, at the first step boundary at or after the time its
// factor would change: the image update for a fallback slot, or the temperature proxy reaching
// the threshold on a busy device, h(t + x) = 1 - (1 - h) exp(-x / tau), at x = tau ln((1 - h) /
// (1 - threshold)). Busy, the proxy only rises, so a throttled run never needs a cut.
FLEETSIM_HD inline void cut_at_change(Sim& s, int32_t r, double t) {
  Replica& R = s.rep[r];
  const PoolParams& P = s.p->pools[R.pool];
  double dt = kInf;
  if (R.fb_slot && t < P.fallback_at_s) dt = P.fallback_at_s - t;
  if (P.thermal_tau_s > 0.0 && !R.run_cpu && !R.run_hot)
    dt = min_of(dt, P.thermal_tau_s * dm::log((1.0 - R.heat) / (1.0 - P.thermal_above)));
  if (dt < kInf && line_sum(R.run_line, R.run_k) > dt) R.run_k = line_steps_until(R.run_line, R.run_k, dt);
}

}  // namespace fleetsim
