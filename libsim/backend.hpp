// Where simulations run. The CPU backend runs the core on C++ threads; the CUDA backend
// (cuda/, built when nvcc is found) runs the same core one simulation per GPU thread.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/params.hpp"
#include "core/tally.hpp"

namespace fleetsim {

enum class Backend { auto_select, cpu, cuda };

// One simulation to run: parameters (host pointers) and the replication index.
struct SimJob {
  const SimParams* params;
  uint32_t replication;
};

// True when this build has the CUDA backend and a device is usable; otherwise `why` says why not.
bool cuda_available(std::string* why);
std::string cuda_device_name();

// Run every job on the GPU; out[i] receives job i's tally. Throws std::runtime_error on a CUDA
// failure. Device memory is bounded by batching the jobs in waves.
void cuda_simulate(const std::vector<SimJob>& jobs, Tally* out);

}  // namespace fleetsim
