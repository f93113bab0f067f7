// The CUDA backend: the same core functions as the CPU, one simulation per GPU thread. Parameters
// are mirrored to the device (arrays relocated); the launch is planned on the host
// (libsim/backend/backend_launch.hpp, checked by the CPU tests): a persistent grid sized by occupancy and
// memory, each thread a workspace slot, jobs taken most-work-first, compact results per job.
// Launches alternate two result buffers so each one's copy to the host overlaps the next's compute.
#include <cuda_runtime.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "libsim/backend/backend.hpp"
#include "libsim/backend/backend_launch.hpp"
#include "libsim/backend/mirror.hpp"
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
  explicit DeviceBuffer(size_t bytes) {
    if (bytes) check(cudaMalloc(&ptr_, bytes), "cudaMalloc");
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  DeviceBuffer(DeviceBuffer&& o) noexcept : ptr_(o.ptr_) { o.ptr_ = nullptr; }
  ~DeviceBuffer() {
    if (ptr_) cudaFree(ptr_);
  }
  template <class T>
  T* as() const {
    return static_cast<T*>(ptr_);
  }
  void upload(const void* src, size_t n, size_t offset = 0) {
    check(cudaMemcpy(static_cast<char*>(ptr_) + offset, src, n, cudaMemcpyHostToDevice), "upload");
  }

 private:
  void* ptr_ = nullptr;
};

// Page-locked host memory (async copies need it), move-only.
class PinnedBuffer {
 public:
  explicit PinnedBuffer(size_t bytes) {
    if (bytes) check(cudaMallocHost(&ptr_, bytes), "cudaMallocHost");
  }
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;
  ~PinnedBuffer() {
    if (ptr_) cudaFreeHost(ptr_);
  }
  uint8_t* data() const { return static_cast<uint8_t*>(ptr_); }

 private:
  void* ptr_ = nullptr;
};

class CudaStream {
 public:
  CudaStream() { check(cudaStreamCreateWithFlags(&s_, cudaStreamNonBlocking), "cudaStreamCreate"); }
  CudaStream(const CudaStream&) = delete;
  CudaStream& operator=(const CudaStream&) = delete;
  ~CudaStream() { cudaStreamDestroy(s_); }
  operator cudaStream_t() const { return s_; }

 private:
  cudaStream_t s_{};
};

class Event {
 public:
  Event() { check(cudaEventCreateWithFlags(&e_, cudaEventDisableTiming), "cudaEventCreate"); }
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  ~Event() { cudaEventDestroy(e_); }
  operator cudaEvent_t() const { return e_; }

 private:
  cudaEvent_t e_{};
};

// What the kernel sees of one launch (trivially copyable view).
struct LaunchView {
  const SimParams* params;
  const uint32_t* param_index;  // by job
  const uint32_t* replication;  // by job
  const uint32_t* jobs;         // this launch's jobs, most work first
  uint32_t n_jobs;
  uint32_t* next;  // the next job to take
  uint8_t* slots;
  uint64_t slot_stride, tally_offset;
  uint8_t* results;  // by position in `jobs`
  uint64_t result_stride;
  uint32_t n_slots;
};

// Persistent threads: each owns a slot and takes jobs until none are left.
__global__ void simulate_jobs(LaunchView v) {
  const uint32_t slot = blockIdx.x * blockDim.x + threadIdx.x;
  if (slot >= v.n_slots) return;
  uint8_t* ws = v.slots + slot * v.slot_stride;
  Tally* tally = reinterpret_cast<Tally*>(ws + v.tally_offset);
  for (uint32_t k; (k = atomicAdd(v.next, 1u)) < v.n_jobs;) {
    const uint32_t job = v.jobs[k];
    simulate(v.params[v.param_index[job]], v.replication[job], ws, *tally);
    compact_store(*tally, v.results + k * v.result_stride);
  }
}

CudaLaunchStats g_last;

}  // namespace

bool cuda_available(std::string* why) {
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess || n == 0) {
    // the runtime's own words for a machine without a driver ("CUDA driver version is
    // insufficient") read as a version problem; say what they mean here
    if (why)
      *why = e == cudaErrorInsufficientDriver ? "no CUDA device (no NVIDIA driver is loaded, or it is older than this "
                                                "build's CUDA runtime)"
             : e != cudaSuccess               ? std::string("no CUDA device (") + cudaGetErrorString(e) + ")"
                                              : "no CUDA device";
    cudaGetLastError();
    return false;
  }
  // a device this build has no kernel image for (it is built for CMAKE_CUDA_ARCHITECTURES)
  cudaFuncAttributes a;
  const cudaError_t k = cudaFuncGetAttributes(&a, simulate_jobs);
  if (k != cudaSuccess) {
    if (why)
      *why = std::string("no usable CUDA device (") + cudaGetErrorString(k) +
             ": this build's kernel is for another GPU architecture)";
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

CudaLaunchStats cuda_last_launch() { return g_last; }

CompactTallies cuda_simulate_compact(const std::vector<SimJob>& jobs, CudaLaunchStats* stats) {
  CompactTallies out;
  if (jobs.empty()) return out;
  // 1. parameters and the arrays they point to, mirrored to the device
  const Mirror mirror(jobs);
  DeviceBuffer d_arrays(mirror.array_bytes);
  mirror.pack([&](size_t offset, const void* src, size_t bytes) { d_arrays.upload(src, bytes, offset); });
  const std::vector<SimParams> params = mirror.relocated(d_arrays.as<void>());
  DeviceBuffer d_params(sizeof(SimParams) * params.size());
  d_params.upload(params.data(), sizeof(SimParams) * params.size());
  const uint32_t n = uint32_t(jobs.size());
  std::vector<uint32_t> reps(n);
  for (uint32_t i = 0; i < n; ++i) reps[i] = jobs[i].replication;
  DeviceBuffer d_pidx(4 * n), d_reps(4 * n);
  d_pidx.upload(mirror.job_params.data(), 4 * n);
  d_reps.upload(reps.data(), 4 * n);

  // 2. the plan, from the device's occupancy and a share of its free memory
  int dev = 0;
  check(cudaGetDevice(&dev), "cudaGetDevice");
  cudaDeviceProp prop;
  check(cudaGetDeviceProperties(&prop, dev), "cudaGetDeviceProperties");
  DeviceLimits d;
  d.sms = prop.multiProcessorCount;
  d.max_threads_per_sm = prop.maxThreadsPerMultiProcessor;
  d.block = 64;
  check(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&d.blocks_per_sm, simulate_jobs, d.block, 0), "occupancy");
  cudaFuncAttributes kernel;
  check(cudaFuncGetAttributes(&kernel, simulate_jobs), "cudaFuncGetAttributes");
  size_t free_bytes = 0, total_bytes = 0;
  check(cudaMemGetInfo(&free_bytes, &total_bytes), "cudaMemGetInfo");
  d.memory_budget = uint64_t(double(free_bytes) * 0.6);
  const LaunchPlan plan = plan_launch(jobs, d);
  const uint64_t rstride = plan.result.bytes();

  // 3. launches of `chunk` jobs: kernel k writes result buffer k % 2 on `compute`; `copy` brings it
  // home while kernel k + 1 runs; kernel k + 2 waits for that copy before reusing the buffer
  DeviceBuffer d_slots(plan.slot_bytes()), d_order(4 * size_t(n)), d_next(4 * 2);
  DeviceBuffer d_results[2] = {DeviceBuffer(plan.chunk * rstride), DeviceBuffer(plan.chunk * rstride)};
  d_order.upload(plan.order.data(), 4 * size_t(n));
  // a cudaMemcpy from pageable memory may return before its DMA lands, and the non-blocking
  // streams below do not wait for the legacy stream it ran on
  check(cudaDeviceSynchronize(), "upload");
  PinnedBuffer host(size_t(n) * rstride);
  CudaStream compute, copy;
  Event done[2], copied[2];
  uint32_t launches = 0;
  for (uint32_t first = 0; first < n; first += plan.chunk, ++launches) {
    const uint32_t b = launches % 2, count = std::min(plan.chunk, n - first);
    if (launches >= 2) check(cudaStreamWaitEvent(compute, copied[b], 0), "wait");
    check(cudaMemsetAsync(d_next.as<uint32_t>() + b, 0, 4, compute), "memset");
    const LaunchView v{d_params.as<SimParams>(),
                       d_pidx.as<uint32_t>(),
                       d_reps.as<uint32_t>(),
                       d_order.as<uint32_t>() + first,
                       count,
                       d_next.as<uint32_t>() + b,
                       d_slots.as<uint8_t>(),
                       plan.slot_stride,
                       plan.tally_offset,
                       d_results[b].as<uint8_t>(),
                       rstride,
                       plan.slots};
    simulate_jobs<<<plan.grid, plan.block, 0, compute>>>(v);
    check(cudaGetLastError(), "launch");
    check(cudaEventRecord(done[b], compute), "record");
    check(cudaStreamWaitEvent(copy, done[b], 0), "wait");
    check(cudaMemcpyAsync(host.data() + size_t(first) * rstride, d_results[b].as<uint8_t>(), count * rstride,
                          cudaMemcpyDeviceToHost, copy),
          "download");
    check(cudaEventRecord(copied[b], copy), "record");
  }
  // wait without spinning: the host threads summarise the previous wave meanwhile
  cudaEvent_t all_done;
  check(cudaEventCreateWithFlags(&all_done, cudaEventBlockingSync | cudaEventDisableTiming), "cudaEventCreate");
  check(cudaEventRecord(all_done, copy), "record");
  const cudaError_t waited = cudaEventSynchronize(all_done);
  cudaEventDestroy(all_done);
  check(waited, "simulate_jobs");
  check(cudaStreamSynchronize(compute), "simulate_jobs");

  // 4. results back in job order
  out.stride = rstride;
  out.bytes.resize(size_t(n) * rstride);
  for (uint32_t k = 0; k < n; ++k)
    std::memcpy(out.bytes.data() + size_t(plan.order[k]) * rstride, host.data() + size_t(k) * rstride, rstride);
  g_last = CudaLaunchStats{n,
                           launches,
                           plan.grid,
                           plan.block,
                           plan.slots,
                           plan.occupancy,
                           plan.slot_stride,
                           rstride,
                           plan.device_bytes() + mirror.array_bytes + sizeof(SimParams) * params.size() + 8 * size_t(n),
                           uint32_t(kernel.numRegs),
                           uint64_t(kernel.localSizeBytes)};
  if (stats) *stats = g_last;
  return out;
}

}  // namespace fleetsim
