// Sharing a device between replicas: which replicas share one (time slicing, MPS), and how MPS
// clients' concurrent steps share its compute and memory bandwidth (docs/model.md, "Sharing a
// device"). A step alone takes h + g: h on the host (scheduling, sampling, launches: the device
// idles), g on the device, which needs x of compute and y of memory traffic (each as time on
// the whole device). Busy clients run their steps at once; each is stretched to h + S g, with
// the smallest S >= 1 at which the compute and traffic all of them ask for per unit of time fit
// the device: sum_j x_j / (h_j + S g_j) <= 1, and likewise for y.
#pragma once
#include "containers.hpp"
#include "state.hpp"
#include "stepwork.hpp"

namespace fleetsim {

constexpr int32_t kMaxMpsClients = 48;  // clients per device of one MPS server (Volta and later)

// Replicas per device: the time-sliced ones, the MPS clients, else 1.
FLEETSIM_HD FLEETSIM_FORCEINLINE int32_t shared_per_device(const PoolParams& P) {
  return P.time_slicing > 1 ? P.time_slicing : P.mps_clients > 1 ? P.mps_clients : 1;
}

// The replica slots [d0, d1) on replica r's device, MIG slices included: what a lost device takes.
FLEETSIM_HD inline void tenants_of(const Sim& s, int32_t r, int32_t* d0, int32_t* d1) {
  const PoolState& ps = s.pool[s.rep[r].pool];
  const int32_t n = s.p->pools[s.rep[r].pool].device_tenants;
  *d0 = ps.first_replica + ((r - ps.first_replica) / n) * n;
  *d1 = min_of(*d0 + n, ps.first_replica + ps.n_replicas);
}

// The replica slots [d0, d1) on replica r's device.
FLEETSIM_HD inline void device_of(const Sim& s, int32_t r, int32_t* d0, int32_t* d1) {
  const PoolState& ps = s.pool[s.rep[r].pool];
  const int32_t n = shared_per_device(s.p->pools[s.rep[r].pool]);
  *d0 = ps.first_replica + ((r - ps.first_replica) / n) * n;
  *d1 = min_of(*d0 + n, ps.first_replica + ps.n_replicas);
}

// The smallest S >= 1 with sum_j w_j / (h_j + S g_j) <= 1 for w = x and w = y, over k steps
// (parts(j, h, g, x, y) gives step j's; all zero: no step): 1 while the device has room for them
// all. The sums fall as S grows, and at S = sum_j w_j / g_j they are at most 1, so bisection
// finds it (to 1e-12 relative).
template <class Parts>
FLEETSIM_HD inline double mps_slowdown(const Parts& parts, int32_t k) {
  auto demand = [&](double S) {
    double ux = 0.0, uy = 0.0;
    for (int32_t j = 0; j < k; ++j) {
      double h, g, x, y;
      parts(j, h, g, x, y);
      const double d = h + S * g;
      if (d > 0.0) {
        ux += x / d;
        uy += y / d;
      }
    }
    return max_of(ux, uy);
  };
  if (demand(1.0) <= 1.0) return 1.0;
  double sx = 0.0, sy = 0.0;
  for (int32_t j = 0; j < k; ++j) {
    double h, g, x, y;
    parts(j, h, g, x, y);
    if (g > 0.0) {
      sx += x / g;
      sy += y / g;
    }
  }
  double lo = 1.0, hi = max_of(1.0, max_of(sx, sy));
  for (int32_t it = 0; it < 200 && hi - lo > 1e-12 * hi; ++it) {
    const double mid = 0.5 * (lo + hi);
    if (demand(mid) <= 1.0)
      hi = mid;
    else
      lo = mid;
  }
  return hi;
}

FLEETSIM_HD inline double mps_slowdown(const double* h, const double* g, const double* x, const double* y, int32_t k) {
  return mps_slowdown(
      [&](int32_t j, double& hj, double& gj, double& xj, double& yj) {
        hj = h[j];
        gj = g[j];
        xj = x[j];
        yj = y[j];
      },
      k);
}

// Keep, of a step-time model, its host part and (part 1) its compute or (part 2) its memory
// part; part 0 keeps the host part alone.
FLEETSIM_HD inline void keep_step_part(PerfParams& f, int32_t part) {
  if (f.kind == PerfKind::roofline) {
    if (part != 1) f.flops_per_s = kInf;
    if (part != 2) f.bytes_per_s = kInf;
  } else if (f.kind == PerfKind::calibrated) {
    if (part != 1) f.matmul_s_per_flop = f.attn_s_per_flop = 0.0;
    if (part != 2) f.weight_s_per_byte = f.kv_s_per_byte = 0.0;
  } else {
    if (part != 1) f.per_prefill_token_s = 0.0;
    if (part != 2) f.per_decode_seq_s = f.per_context_token_s = 0.0;
  }
}

// An MPS client has planned its next step (one step: run_k = 1) alone: record its parts, and
// stretch it by the slowdown its device's busy clients share. The parts come from the pool's
// own step-time model with the other parts taken out: each at most the step alone, and together
// the step alone, or more where a kernel's bytes and FLOPs overlap (PerfParams::kernel_overlap).
FLEETSIM_HD inline void mps_share_device(Sim& s, int32_t r, double ptoks, double ppairs, double pread, double n,
                                         double T0, double seqs) {
  Replica& R = s.rep[r];
  const PoolParams& P = pool_of(s, r);
  const double T = line_step(R.run_line, 0);
  if (R.run_cpu) {  // a step computed on the host CPU asks nothing of the device
    R.mps_h = T;
    R.mps_g = R.mps_x = R.mps_y = 0.0;
    return;
  }
  double part_s[3];
  {
    PoolParams Q = P;
    Replica tmp = R;
    for (int32_t part = 0; part < 3; ++part) {
      Q.perf = P.perf;
      keep_step_part(Q.perf, part);
      if (R.run_prefill)
        set_single_step(Q, tmp, ptoks, ppairs, pread, n, T0, seqs);
      else
        set_decode_run(Q, tmp, n, T0);
      part_s[part] = line_step(tmp.run_line, 0);
    }
  }
  R.mps_h = part_s[0];
  R.mps_g = T - part_s[0];
  R.mps_x = (part_s[1] - part_s[0]) * P.mps_thread_share;  // as time on the whole device, not the client's share
  R.mps_y = part_s[2] - part_s[0];
  int32_t d0 = 0, d1 = 0;
  device_of(s, r, &d0, &d1);
  // this step and the steps in flight of the device's other busy clients
  const double S = mps_slowdown(
      [&](int32_t j, double& h, double& g, double& x, double& y) {
        const Replica& O = s.rep[d0 + j];
        const bool in = d0 + j == r || (O.busy && O.run_k > 0 && (O.state == kReady || O.state == kDraining));
        h = in ? O.mps_h : 0.0;
        g = in ? O.mps_g : 0.0;
        x = in ? O.mps_x : 0.0;
        y = in ? O.mps_y : 0.0;
      },
      d1 - d0);
  if (S > 1.0) {
    Line l;
    l.o = R.mps_h + S * R.mps_g;
    l.a1 = l.b1 = l.a2 = l.b2 = 0.0;
    R.run_line = l;
  }
}

}  // namespace fleetsim
