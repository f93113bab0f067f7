// The simulation core as device code: one simulation per thread, the same functions the CPU
// runs. Each thread gets its own slice of a flat workspace sized before the launch.
#include "libsim/core/engine.hpp"

namespace fleetsim {

__global__ void simulate_kernel(const SimParams p, uint32_t first_replication, uint32_t count, uint8_t* workspace,
                                uint64_t workspace_stride, Tally* tallies) {
  const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= count) return;
  simulate(p, first_replication + i, workspace + uint64_t(i) * workspace_stride, tallies[i]);
}

}  // namespace fleetsim
