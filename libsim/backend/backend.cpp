// Backend code shared by every build: expanding compact results, and the expanded CUDA call.
#include "backend/backend.hpp"

#include <fmt/format.h>

#include <cmath>
#include <cstring>

#include "backend/backend_launch.hpp"

namespace fleetsim {

double gpu_worth_in_threads(uint64_t simulations) {
  const double lo_n = 2000.0, lo_w = 16.0 * 0.22, hi_n = 10000.0, hi_w = 16.0 * 0.44;
  const double n = double(simulations);
  if (n <= lo_n) return lo_w * n / lo_n;
  if (n >= hi_n) return hi_w;
  return lo_w + (hi_w - lo_w) * std::log(n / lo_n) / std::log(hi_n / lo_n);
}

bool auto_picks_cuda(uint64_t simulations, unsigned threads, std::string* why) {
  const double worth = gpu_worth_in_threads(simulations);
  const bool cuda = worth > double(threads);
  if (why)
    *why = fmt::format(
        "{} simulations, where one GPU ran as {:.1f} CPU threads (measured on an H200, docs/model.md), against {} "
        "CPU thread{}",
        simulations, worth, threads, threads == 1 ? "" : "s");
  return cuda;
}

void CompactTallies::expand(size_t i, Tally& out) const { compact_expand(bytes.data() + i * stride, out); }

void cuda_simulate(const std::vector<SimJob>& jobs, Tally* out) {
  const CompactTallies r = cuda_simulate_compact(jobs);
  for (size_t i = 0; i < jobs.size(); ++i) {
    std::memset(&out[i], 0, sizeof(Tally));
    r.expand(i, out[i]);
  }
}

}  // namespace fleetsim
