// The CUDA entry points when this build has no CUDA backend.
#include <stdexcept>

#include "backend/backend.hpp"

namespace fleetsim {

bool cuda_available(std::string* why) {
  if (why) *why = "this build of fleetsim has no CUDA backend (built with FLEETSIM_CUDA=OFF, or nvcc was not found)";
  return false;
}
std::string cuda_device_name() { return ""; }
CudaLaunchStats cuda_last_launch() { return {}; }
CompactTallies cuda_simulate_compact(const std::vector<SimJob>&, CudaLaunchStats*) {
  throw std::runtime_error("this build of fleetsim has no CUDA backend");
}

}  // namespace fleetsim
