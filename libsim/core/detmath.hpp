// Deterministic elementary functions for the simulation core.
//
// libm and CUDA's math library may round log/exp differently in the last bit, which would make
// the CPU and GPU backends diverge. These use only +, -, *, / and bit manipulation (all IEEE
// exact on both), and the core is compiled without FMA contraction, so both give identical bits.
// Accuracy is a few ulp, far below anything the simulation can resolve.
#pragma once
#include "hd.hpp"

namespace fleetsim::dm {

FLEETSIM_HD FLEETSIM_FORCEINLINE uint64_t bits_of(double x) {
  union {
    double d;
    uint64_t u;
  } v;
  v.d = x;
  return v.u;
}
FLEETSIM_HD FLEETSIM_FORCEINLINE double from_bits(uint64_t u) {
  union {
    double d;
    uint64_t u;
  } v;
  v.u = u;
  return v.d;
}

constexpr double kLn2Hi = 6.93147180369123816490e-01;
constexpr double kLn2Lo = 1.90821492927058770002e-10;
constexpr double kPi = 3.14159265358979323846;

// Natural log for x > 0 (returns -inf-like -1e300 for x <= 0).
FLEETSIM_HD inline double log(double x) {
  if (!(x > 0.0)) return -kInf;
  uint64_t u = bits_of(x);
  int e = int((u >> 52) & 0x7ff);
  if (e == 0) {                // subnormal: scale up
    x *= 18014398509481984.0;  // 2^54
    u = bits_of(x);
    e = int((u >> 52) & 0x7ff) - 54;
  }
  e -= 1023;
  double m = from_bits((u & 0x000fffffffffffffULL) | 0x3ff0000000000000ULL);  // [1,2)
  if (m > 1.4142135623730951) {
    m *= 0.5;
    e += 1;
  }
  // log(m) = 2 atanh(f), f = (m-1)/(m+1), |f| <= 0.1716. The series in f^2 is summed by
  // Estrin's scheme (independent pairs, then powers of f^2): a short dependency chain, and the same
  // operations in the same order on the host and the device.
  const double f = (m - 1.0) / (m + 1.0);
  const double f2 = f * f, f4 = f2 * f2, f8 = f4 * f4;
  const double q0 = 1.0 / 3.0 + f2 * (1.0 / 5.0), q1 = 1.0 / 7.0 + f2 * (1.0 / 9.0);
  const double q2 = 1.0 / 11.0 + f2 * (1.0 / 13.0), q3 = 1.0 / 15.0 + f2 * (1.0 / 17.0);
  const double q4 = 1.0 / 19.0 + f2 * (1.0 / 21.0);
  const double p = (q0 + f4 * q1) + f8 * ((q2 + f4 * q3) + f8 * (q4 + f4 * (1.0 / 23.0)));
  const double lm = 2.0 * f + 2.0 * f * f2 * p;
  const double de = double(e);
  return de * kLn2Hi + (lm + de * kLn2Lo);
}

FLEETSIM_HD inline double exp(double x) {
  if (x > 709.0) return kInf;
  if (x < -745.0) return 0.0;
  // n = round(x / ln2)
  const double t = x * 1.4426950408889634;
  const double n = t >= 0.0 ? double(int64_t(t + 0.5)) : -double(int64_t(-t + 0.5));
  const double r = (x - n * kLn2Hi) - n * kLn2Lo;  // |r| <= 0.3466
  // Taylor to r^13, summed by Estrin's scheme (see log)
  const double r2 = r * r, r4 = r2 * r2, r8 = r4 * r4;
  const double q1 = 0.5 + r * (1.0 / 6.0), q2 = 1.0 / 24.0 + r * (1.0 / 120.0);
  const double q3 = 1.0 / 720.0 + r * (1.0 / 5040.0), q4 = 1.0 / 40320.0 + r * (1.0 / 362880.0);
  const double q5 = 1.0 / 3628800.0 + r * (1.0 / 39916800.0), q6 = 1.0 / 479001600.0 + r * (1.0 / 6227020800.0);
  // 1 + r added last keeps the rounding of the small terms out of the leading digits
  const double p = 1.0 + (r + ((r2 * q1 + r4 * (q2 + r2 * q3)) + r8 * ((q4 + r2 * q5) + r4 * q6)));
  int ni = int(n);
  // scale by 2^ni in two halves so that subnormal results and 2^1024 are reachable
  const int n1 = ni / 2, n2 = ni - n1;
  const double s1 = from_bits(uint64_t(int64_t(n1 + 1023)) << 52);
  const double s2 = from_bits(uint64_t(int64_t(n2 + 1023)) << 52);
  return p * s1 * s2;
}

// sqrt is correctly rounded by IEEE 754 on both the host and the device.
FLEETSIM_HD FLEETSIM_FORCEINLINE double sqrt(double x) {
#if defined(__CUDA_ARCH__)
  return ::sqrt(x);
#else
  return __builtin_sqrt(x);
#endif
}

FLEETSIM_HD inline double pow(double x, double y) { return exp(y * log(x)); }

// sin for moderate arguments (|x| < 1e6), reduced to [-pi, pi].
FLEETSIM_HD inline double sin(double x) {
  // Cody-Waite reduction with 2 pi split in two parts
  const double twopi_hi = 6.28318530717958623200e+00, twopi_lo = 2.44929359829470635445e-16;
  const double k = x / twopi_hi;
  const double kr = k >= 0.0 ? double(int64_t(k + 0.5)) : -double(int64_t(-k + 0.5));
  double r = (x - kr * twopi_hi) - kr * twopi_lo;  // [-pi, pi]
  // fold into [-pi/2, pi/2]: sin(pi - r) = sin(r)
  if (r > 0.5 * kPi) r = kPi - r;
  if (r < -0.5 * kPi) r = -kPi - r;
  const double r2 = r * r;
  double p = 1.0 / 51090942171709440000.0;  // 1/21!
  p = p * r2 - 1.0 / 121645100408832000.0;  // 1/19!
  p = p * r2 + 1.0 / 355687428096000.0;     // 1/17!
  p = p * r2 - 1.0 / 1307674368000.0;       // 1/15!
  p = p * r2 + 1.0 / 6227020800.0;
  p = p * r2 - 1.0 / 39916800.0;
  p = p * r2 + 1.0 / 362880.0;
  p = p * r2 - 1.0 / 5040.0;
  p = p * r2 + 1.0 / 120.0;
  p = p * r2 - 1.0 / 6.0;
  return r + r * r2 * p;
}

FLEETSIM_HD FLEETSIM_FORCEINLINE double floor(double x) {
  const double t = double(int64_t(x));
  return (t > x) ? t - 1.0 : t;
}
FLEETSIM_HD FLEETSIM_FORCEINLINE double ceil(double x) {
  const double t = double(int64_t(x));
  return (t < x) ? t + 1.0 : t;
}
// Round half away from zero.
FLEETSIM_HD FLEETSIM_FORCEINLINE int64_t lround(double x) { return x >= 0.0 ? int64_t(x + 0.5) : -int64_t(-x + 0.5); }

}  // namespace fleetsim::dm
