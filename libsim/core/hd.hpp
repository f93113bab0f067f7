// One macro makes the simulation core compile for both the host compiler and nvcc.
#pragma once

#if defined(__CUDACC__)
#define FLEETSIM_HD __host__ __device__
#define FLEETSIM_FORCEINLINE __forceinline__
#else
#define FLEETSIM_HD
#define FLEETSIM_FORCEINLINE inline __attribute__((always_inline))
#endif

#include <stdint.h>

namespace fleetsim {

constexpr double kInf = 1.0e300;  // "never" for event times; finite so comparisons stay exact

template <class T>
FLEETSIM_HD FLEETSIM_FORCEINLINE T min_of(T a, T b) {
  return b < a ? b : a;
}
template <class T>
FLEETSIM_HD FLEETSIM_FORCEINLINE T max_of(T a, T b) {
  return a < b ? b : a;
}

}  // namespace fleetsim
