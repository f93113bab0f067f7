// The CUDA backend: one simulation per GPU thread, running the same core functions as the CPU.
// Parameters are mirrored to the device (arrays relocated), per-simulation state lives in one
// flat workspace sized before the launch, and jobs run in waves that fit in device memory.
#include <cuda_runtime.h>

#include <cstring>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "libsim/backend.hpp"
#include "libsim/core/engine.hpp"

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
  check(cudaDeviceSetLimit(cudaLimitStackSize, 8192), "stack size");

  // 1. the distinct parameter sets, and the distinct arrays they point to
  std::map<const SimParams*, uint32_t> index_of;
  std::vector<SimParams> params;
  for (const auto& j : jobs)
    if (index_of.emplace(j.params, uint32_t(params.size())).second) params.push_back(*j.params);
  std::map<const void*, size_t> array_offset;  // host array -> offset in the device array buffer
  std::vector<std::pair<const void*, size_t>> arrays;
  size_t array_bytes = 0;
  auto note = [&](const void* p, size_t bytes) {
    if (!p || !bytes || array_offset.count(p)) return;
    array_offset[p] = array_bytes;
    arrays.emplace_back(p, bytes);
    array_bytes += (bytes + 15) & ~size_t(15);
  };
  for (const auto& p : params) {
    note(p.arrivals.trace_t_s, sizeof(double) * size_t(p.arrivals.trace_n));
    note(p.arrivals.trace_prompt, sizeof(int32_t) * size_t(p.arrivals.trace_n));
    note(p.arrivals.trace_output, sizeof(int32_t) * size_t(p.arrivals.trace_n));
    note(p.prompt.values, sizeof(double) * size_t(p.prompt.n));
    note(p.prompt.cdf, sizeof(double) * size_t(p.prompt.n));
    note(p.output.values, sizeof(double) * size_t(p.output.n));
    note(p.output.cdf, sizeof(double) * size_t(p.output.n));
  }
  DeviceBuffer d_arrays(array_bytes);
  for (const auto& [p, bytes] : arrays) d_arrays.upload(p, bytes, array_offset[p]);
  auto relocate = [&](auto*& ptr) {
    if (!ptr) return;
    using T = std::remove_pointer_t<std::remove_reference_t<decltype(ptr)>>;
    ptr = reinterpret_cast<T*>(d_arrays.as<char>() + array_offset.at(static_cast<const void*>(ptr)));
  };
  for (auto& p : params) {
    relocate(p.arrivals.trace_t_s);
    relocate(p.arrivals.trace_prompt);
    relocate(p.arrivals.trace_output);
    relocate(p.prompt.values);
    relocate(p.prompt.cdf);
    relocate(p.output.values);
    relocate(p.output.cdf);
  }
  DeviceBuffer d_params(sizeof(SimParams) * params.size());
  d_params.upload(params.data(), sizeof(SimParams) * params.size());

  // 2. waves of jobs whose workspaces and tallies fit in (a share of) free device memory
  size_t free_bytes = 0, total_bytes = 0;
  check(cudaMemGetInfo(&free_bytes, &total_bytes), "cudaMemGetInfo");
  const uint64_t budget = uint64_t(double(free_bytes) * 0.6);
  size_t first = 0;
  while (first < jobs.size()) {
    std::vector<uint32_t> pidx, reps;
    std::vector<uint64_t> offset;
    uint64_t bytes = 0;
    size_t last = first;
    while (last < jobs.size()) {
      const uint64_t need = align_up(workspace_layout(*jobs[last].params).total);
      if (last > first && bytes + need + sizeof(Tally) * (last - first + 1) > budget) break;
      pidx.push_back(index_of[jobs[last].params]);
      reps.push_back(jobs[last].replication);
      offset.push_back(bytes);
      bytes += need;
      ++last;
    }
    const uint32_t n = uint32_t(last - first);
    DeviceBuffer d_ws(bytes), d_tally(sizeof(Tally) * n), d_pidx(4 * n), d_reps(4 * n), d_off(8 * n);
    d_pidx.upload(pidx.data(), 4 * n);
    d_reps.upload(reps.data(), 4 * n);
    d_off.upload(offset.data(), 8 * n);
    const uint32_t block = 64;
    simulate_jobs<<<(n + block - 1) / block, block>>>(d_params.as<SimParams>(), d_pidx.as<uint32_t>(),
                                                      d_reps.as<uint32_t>(), d_off.as<uint64_t>(), d_ws.as<uint8_t>(),
                                                      d_tally.as<Tally>(), n);
    check(cudaGetLastError(), "launch");
    check(cudaDeviceSynchronize(), "simulate_jobs");
    check(cudaMemcpy(out + first, d_tally.as<Tally>(), sizeof(Tally) * n, cudaMemcpyDeviceToHost), "download");
    first = last;
  }
}

}  // namespace fleetsim
