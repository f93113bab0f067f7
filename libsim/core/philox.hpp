// Philox4x32-10 counter-based generator (Salmon et al., SC'11). A draw is a pure function of
// (key, counter), so any simulation can compute any random number it needs without carrying
// generator state, and every backend and thread count sees the same numbers.
#pragma once
#include "detmath.hpp"
#include "hd.hpp"

namespace fleetsim {

struct Philox4x32 {
  uint32_t v[4];
};

FLEETSIM_HD FLEETSIM_FORCEINLINE void mulhilo32(uint32_t a, uint32_t b, uint32_t& hi, uint32_t& lo) {
  const uint64_t p = uint64_t(a) * uint64_t(b);
  hi = uint32_t(p >> 32);
  lo = uint32_t(p);
}

FLEETSIM_HD inline Philox4x32 philox4x32_10(Philox4x32 ctr, uint32_t k0, uint32_t k1) {
  for (int round = 0; round < 10; ++round) {
    uint32_t hi0, lo0, hi1, lo1;
    mulhilo32(0xD2511F53u, ctr.v[0], hi0, lo0);
    mulhilo32(0xCD9E8D57u, ctr.v[2], hi1, lo1);
    Philox4x32 next;
    next.v[0] = hi1 ^ ctr.v[1] ^ k0;
    next.v[1] = lo1;
    next.v[2] = hi0 ^ ctr.v[3] ^ k1;
    next.v[3] = lo0;
    ctr = next;
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  return ctr;
}

// Independent random streams of one simulation.
enum class Stream : uint32_t { arrival = 1, prompt = 2, output = 3, accept = 4, lifecycle = 5, think = 6, session = 7 };

// Key = seed; counter = (index low, index high, stream | class << 8 | sub << 16, replication).
// Each request class has its own streams, by its index: a class added last leaves the others' as
// they were (one inserted before them renumbers them; docs/model.md says so).
struct Rng {
  uint32_t k0, k1, replication;

  // Two uniforms in (0, 1) with 53 random bits each.
  FLEETSIM_HD inline void uniform2(Stream s, uint32_t cls, uint64_t index, uint32_t sub, double& a, double& b) const {
    Philox4x32 c;
    c.v[0] = uint32_t(index);
    c.v[1] = uint32_t(index >> 32);
    c.v[2] = uint32_t(s) | (cls << 8) | (sub << 16);
    c.v[3] = replication;
    const Philox4x32 r = philox4x32_10(c, k0, k1);
    const uint64_t u0 = (uint64_t(r.v[0]) << 32) | r.v[1];
    const uint64_t u1 = (uint64_t(r.v[2]) << 32) | r.v[3];
    const double scale = 1.0 / 9007199254740992.0;  // 2^-53
    a = (double(u0 >> 11) + 0.5) * scale;
    b = (double(u1 >> 11) + 0.5) * scale;
  }
  FLEETSIM_HD inline double uniform(Stream s, uint32_t cls, uint64_t index, uint32_t sub) const {
    double a, b;
    uniform2(s, cls, index, sub, a, b);
    return a;
  }
};

FLEETSIM_HD inline Rng make_rng(uint64_t seed, uint32_t replication) {
  Rng r;
  r.k0 = uint32_t(seed);
  r.k1 = uint32_t(seed >> 32) ^ 0x5bd1e995u;
  r.replication = replication;
  return r;
}

// Standard normal by inverse CDF (Acklam's rational approximation, relative error < 1.2e-9);
// needs only log and sqrt, which are deterministic here.
FLEETSIM_HD inline double normal_quantile(double p) {
  const double a1 = -3.969683028665376e+01, a2 = 2.209460984245205e+02, a3 = -2.759285104469687e+02,
               a4 = 1.383577518672690e+02, a5 = -3.066479806614716e+01, a6 = 2.506628277459239e+00;
  const double b1 = -5.447609879822406e+01, b2 = 1.615858368580409e+02, b3 = -1.556989798598866e+02,
               b4 = 6.680131188771972e+01, b5 = -1.328068155288572e+01;
  const double c1 = -7.784894002430293e-03, c2 = -3.223964580411365e-01, c3 = -2.400758277161838e+00,
               c4 = -2.549732539343734e+00, c5 = 4.374664141464968e+00, c6 = 2.938163982698783e+00;
  const double d1 = 7.784695709041462e-03, d2 = 3.224671290700398e-01, d3 = 2.445134137142996e+00,
               d4 = 3.754408661907416e+00;
  const double plow = 0.02425;
  if (p < plow) {
    const double q = dm::sqrt(-2.0 * dm::log(p));
    return (((((c1 * q + c2) * q + c3) * q + c4) * q + c5) * q + c6) / ((((d1 * q + d2) * q + d3) * q + d4) * q + 1.0);
  }
  if (p > 1.0 - plow) {
    const double q = dm::sqrt(-2.0 * dm::log(1.0 - p));
    return -(((((c1 * q + c2) * q + c3) * q + c4) * q + c5) * q + c6) / ((((d1 * q + d2) * q + d3) * q + d4) * q + 1.0);
  }
  // the central region (95% of draws), summed by Estrin's scheme as in detmath.hpp
  const double q = p - 0.5;
  const double r = q * q, r2 = r * r, r4 = r2 * r2;
  const double num = r4 * (a1 * r + a2) + (r2 * (a3 * r + a4) + (a5 * r + a6));
  const double den = r4 * (b1 * r + b2) + (r2 * (b3 * r + b4) + (b5 * r + 1.0));
  return num * q / den;
}

}  // namespace fleetsim
