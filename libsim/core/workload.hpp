// Request generation: arrival times and prompt/output lengths, as pure functions of the RNG
// counter so that request i has the same lengths whatever the fleet configuration is.
#pragma once
#include "params.hpp"
#include "philox.hpp"

namespace fleetsim {

// Gamma(shape, 1) by Marsaglia and Tsang (2000); shape < 1 uses the U^(1/shape) boost.
FLEETSIM_HD inline double sample_gamma1(const Rng& rng, Stream s, uint32_t cls, uint64_t index, double shape) {
  double boost = 1.0;
  if (shape < 1.0) {
    const double u = rng.uniform(s, cls, index, 255);
    boost = dm::exp(dm::log(u) / shape);
    shape += 1.0;
  }
  const double d = shape - 1.0 / 3.0;
  const double c = 1.0 / dm::sqrt(9.0 * d);
  for (uint32_t attempt = 0; attempt < 200; ++attempt) {
    double u1, u2;
    rng.uniform2(s, cls, index, attempt, u1, u2);
    const double x = normal_quantile(u1);
    double v = 1.0 + c * x;
    if (v <= 0.0) continue;
    v = v * v * v;
    const double x2 = x * x;
    if (u2 < 1.0 - 0.0331 * x2 * x2) return d * v * boost;
    if (dm::log(u2) < 0.5 * x2 + d * (1.0 - v + dm::log(v))) return d * v * boost;
  }
  return (shape - (boost < 1.0 ? 1.0 : 0.0)) * boost;  // unreachable in practice (p < 1e-300)
}

// A draw from d, unrounded.
FLEETSIM_HD inline double sample_value(const DistParams& d, const Rng& rng, Stream s, uint32_t cls, uint64_t index) {
  double x = 0.0;
  switch (d.kind) {
    case DistKind::fixed: x = d.a; break;
    case DistKind::uniform: {
      // integer uniform on [a, b]
      const double u = rng.uniform(s, cls, index, 0);
      x = d.a + dm::floor(u * (d.b - d.a + 1.0));
      if (x > d.b) x = d.b;
      break;
    }
    case DistKind::lognormal: {
      const double u = rng.uniform(s, cls, index, 0);
      x = dm::exp(d.a + d.b * normal_quantile(u));
      break;
    }
    case DistKind::geometric: {
      // number of trials to the first success, success probability 1/mean
      if (d.a <= 1.0) {
        x = 1.0;
      } else {
        const double u = rng.uniform(s, cls, index, 0);
        x = 1.0 + dm::floor(dm::log(u) * d.b);
      }
      break;
    }
    case DistKind::exponential: {
      const double u = rng.uniform(s, cls, index, 0);
      x = -d.a * dm::log(u);
      break;
    }
    case DistKind::empirical: {
      const double u = rng.uniform(s, cls, index, 0);
      int64_t lo = 0, hi = d.n - 1;
      while (lo < hi) {  // first cdf >= u
        const int64_t mid = (lo + hi) / 2;
        if (d.cdf[mid] >= u)
          hi = mid;
        else
          lo = mid + 1;
      }
      x = d.values[lo];
      break;
    }
  }
  return x;
}

// A length draw, rounded to the nearest integer and at least 1.
FLEETSIM_HD inline int64_t sample_length(const DistParams& d, const Rng& rng, Stream s, uint32_t cls, uint64_t index) {
  double x = sample_value(d, rng, s, cls, index);
  if (x > 1.0e9) x = 1.0e9;
  int64_t n = dm::lround(x);
  return n < 1 ? 1 : n;
}

// Arrival process state: the next arrival time and how many candidates were drawn.
struct ArrivalCursor {
  double next_t;
  uint64_t candidate;  // counter of the arrival stream
  uint64_t index;      // index of the next request
};

// Advance to the arrival after time `t` (the previous arrival). Returns kInf past the class's
// stop time or the horizon.
FLEETSIM_HD inline double next_arrival(const ArrivalParams& a, const Rng& rng, uint32_t cls, ArrivalCursor& c, double t,
                                       double horizon_s) {
  const double stop = min_of(horizon_s, a.stop_s);
  switch (a.kind) {
    case ArrivalKind::poisson: {
      const double u = rng.uniform(Stream::arrival, cls, c.candidate++, 0);
      t += -dm::log(u) / a.rate_per_s;
      break;
    }
    case ArrivalKind::gamma:
      t += sample_gamma1(rng, Stream::arrival, cls, c.candidate++, a.gamma_shape) * a.gamma_scale_s;
      break;
    case ArrivalKind::diurnal: {
      // thinning of a Poisson process at the peak rate
      const double peak = a.rate_per_s * (1.0 + a.diurnal_amplitude);
      const double two_pi = 2.0 * dm::kPi;
      for (;;) {
        double u1, u2;
        rng.uniform2(Stream::arrival, cls, c.candidate++, 0, u1, u2);
        t += -dm::log(u1) / peak;
        if (t >= stop) break;
        const double phase = two_pi * (t - a.diurnal_peak_at_s) / a.diurnal_period_s + 0.5 * dm::kPi;
        const double rate = a.rate_per_s * (1.0 + a.diurnal_amplitude * dm::sin(phase));
        if (u2 * peak <= rate) break;
      }
      break;
    }
    case ArrivalKind::trace:
      t = c.candidate < uint64_t(a.trace_n) ? a.trace_t_s[c.candidate] + a.start_s : kInf;
      c.candidate++;
      break;
    case ArrivalKind::constant:
      // the n-th arrival at start + n / rate (a product, so no rounding error accumulates)
      t = a.start_s + double(c.candidate++) / a.rate_per_s;
      break;
    case ArrivalKind::burst:
      t = c.candidate < uint64_t(a.clients) ? a.start_s : kInf;
      c.candidate++;
      break;
    case ArrivalKind::concurrency:
      t = kInf;  // users send when their previous response ends (the engine's client heap)
      break;
  }
  return t < stop ? t : kInf;
}

// The first arrival of a class: its process started at start_s.
FLEETSIM_HD inline double first_arrival(const ArrivalParams& a, const Rng& rng, uint32_t cls, ArrivalCursor& c,
                                        double horizon_s) {
  return next_arrival(a, rng, cls, c, a.kind == ArrivalKind::trace ? 0.0 : a.start_s, horizon_s);
}

// A closed-loop user's think time before its next request (seconds, at least 0). Real-valued: a
// uniform think time is continuous on [a, b], not an integer draw as a length is.
FLEETSIM_HD inline double sample_think_s(const DistParams& d, const Rng& rng, uint32_t cls, uint64_t index) {
  if (d.kind == DistKind::fixed) return d.a > 0.0 ? d.a : 0.0;
  if (d.kind == DistKind::uniform) return d.a + (d.b - d.a) * rng.uniform(Stream::think, cls, index, 0);
  const double x = sample_value(d, rng, Stream::think, cls, index);
  return x > 0.0 ? x : 0.0;
}

}  // namespace fleetsim
