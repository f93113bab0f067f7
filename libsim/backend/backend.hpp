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

// How many CPU threads one GPU is worth on a sweep of `simulations` (configurations x
// replications), from the only figures measured so far: on one H200 the 10,000-configuration Azure
// sweep ran at 0.44x 16 host cores (7.0 threads) and a 2,000-configuration sample at 0.22x (3.5),
// scripts/gpu-check.sh, 2026-11-30. Between them the worth is interpolated in log(simulations);
// below 2,000 it falls in proportion (too few simulations to fill the device); above 10,000 it is
// held at 7.0, since no larger sweep was measured.
double gpu_worth_in_threads(uint64_t simulations);
// `auto`'s choice given a usable device: CUDA only where the GPU is worth more than the threads the
// CPU backend would use; `why` says so with the figures.
bool auto_picks_cuda(uint64_t simulations, unsigned threads, std::string* why);

// Results of a call as the device left them: each job's tally with only its pools and classes
// (libsim/backend/backend_launch.hpp), `stride` bytes apart.
struct CompactTallies {
  std::vector<uint8_t> bytes;
  uint64_t stride = 0;
  // Job i's tally into `out`, which must be value-initialised (zero).
  void expand(size_t i, Tally& out) const;
};

// How the last call laid out its launches, for benchmarks and the GPU check.
struct CudaLaunchStats {
  uint32_t jobs = 0, launches = 0, grid = 0, block = 0, slots = 0;
  double occupancy = 0;                       // resident warps / the SM's maximum
  uint64_t slot_bytes = 0, result_bytes = 0;  // per simulation in flight; per job's result
  uint64_t device_bytes = 0;                  // all the launch's buffers
  // the kernel as compiled: registers per thread, and local memory per thread (its stack and
  // whatever did not fit the registers: spills, arrays indexed at run time)
  uint32_t registers = 0;
  uint64_t local_bytes = 0;
};

// Run every job on the GPU. Throws std::runtime_error on a CUDA failure. Device memory is bounded
// by the plan (backend_launch.hpp): slots for the simulations in flight, results per launch.
CompactTallies cuda_simulate_compact(const std::vector<SimJob>& jobs, CudaLaunchStats* stats = nullptr);
// The plan of the last cuda_simulate_compact call (zeros before any).
CudaLaunchStats cuda_last_launch();
// The same, expanded: out[i] receives job i's tally.
void cuda_simulate(const std::vector<SimJob>& jobs, Tally* out);

}  // namespace fleetsim
