// The CUDA backend: one simulation per GPU thread, running the same core functions as the CPU.
// Parameters are mirrored to the device (arrays relocated), per-simulation state lives in one
// flat workspace sized before the launch, and jobs run in waves that fit in device memory.
#include <cuda_runtime.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "libsim/backend.hpp"
#include "libsim/core/engine.hpp"
#include "libsim/mirror.hpp"

namespace fleetsim {

namespace {

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw std::runtime_error(std::string("CUDA: ") + what + ": " + cudaGetErrorString(e));
}

// A device allocation that frees itself (move-only owner).
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(size_t bytes) : bytes_(bytes) {
    if (bytes) check(cudaMalloc(&ptr_, bytes), "cudaMalloc");
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  DeviceBuffer(DeviceBuffer&& o) noexcept : ptr_(o.ptr_), bytes_(o.bytes_) { o.ptr_ = nullptr; }
  ~DeviceBuffer() {
    if (ptr_) cudaFree(ptr_);
  }
  template <class T>
  T* as() const { return static_cast<T*>(ptr_); }
  void upload(const void* src, size_t n, size_t offset = 0) {
    check(cudaMemcpy(static_cast<char*>(ptr_) + offset, src, n, cudaMemcpyHostToDevice), "upload");
  }

 private:
  void* ptr_ = nullptr;
  size_t bytes_ = 0;
};

__global__ void simulate_jobs(const SimParams* params, const uint32_t* param_index, const uint32_t* replication,
                              const uint64_t* workspace_offset, uint8_t* workspace, Tally* out, uint32_t n) {
  const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  simulate(params[param_index[i]], replication[i], workspace + workspace_offset[i], out[i]);
}

}  // namespace

bool cuda_available(std::string* why) {
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess || n == 0) {
    if (why) *why = e != cudaSuccess ? std::string("no CUDA device (") + cudaGetErrorString(e) + ")" : "no CUDA device";
    cudaGetLastError();
    return false;
  }
  return true;
}

std::string cuda_device_name() {
  cudaDeviceProp prop;
  if (cudaGetDeviceProperties(&prop, 0) != cudaSuccess) return "unknown device";
  return prop.name;
}

void cuda_simulate(const std::vector<SimJob>& jobs, Tally* out) {
  if (jobs.empty()) return;
  // 1. parameters and the arrays they point to, mirrored to the device
  const Mirror mirror(jobs);
  DeviceBuffer d_arrays(mirror.array_bytes);
  mirror.pack([&](size_t offset, const void* src, size_t bytes) { d_arrays.upload(src, bytes, offset); });
  const std::vector<SimParams> params = mirror.relocated(d_arrays.as<void>());
  DeviceBuffer d_params(sizeof(SimParams) * params.size());
  d_params.upload(params.data(), sizeof(SimParams) * params.size());

  // 2. waves of jobs whose workspaces and tallies fit in a share of free device memory
  size_t free_bytes = 0, total_bytes = 0;
  check(cudaMemGetInfo(&free_bytes, &total_bytes), "cudaMemGetInfo");
  for (const Wave& w : plan_waves(jobs, uint64_t(double(free_bytes) * 0.6))) {
    const uint32_t n = uint32_t(w.last - w.first);
    std::vector<uint32_t> pidx(n), reps(n);
    for (uint32_t i = 0; i < n; ++i) {
      pidx[i] = mirror.job_params[w.first + i];
      reps[i] = jobs[w.first + i].replication;
    }
    DeviceBuffer d_ws(w.workspace_bytes), d_tally(sizeof(Tally) * n), d_pidx(4 * n), d_reps(4 * n), d_off(8 * n);
    d_pidx.upload(pidx.data(), 4 * n);
    d_reps.upload(reps.data(), 4 * n);
    d_off.upload(w.workspace_offset.data(), 8 * n);
    const uint32_t block = 64;
    simulate_jobs<<<(n + block - 1) / block, block>>>(d_params.as<SimParams>(), d_pidx.as<uint32_t>(),
                                                      d_reps.as<uint32_t>(), d_off.as<uint64_t>(), d_ws.as<uint8_t>(),
                                                      d_tally.as<Tally>(), n);
    check(cudaGetLastError(), "launch");
    check(cudaDeviceSynchronize(), "simulate_jobs");
    check(cudaMemcpy(out + w.first, d_tally.as<Tally>(), sizeof(Tally) * n, cudaMemcpyDeviceToHost), "download");
  }
}

}  // namespace fleetsim
