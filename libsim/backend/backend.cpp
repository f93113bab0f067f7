// Backend code shared by every build: expanding compact results, and the expanded CUDA call.
#include "backend/backend.hpp"

#include <cstring>

#include "backend/backend_launch.hpp"

namespace fleetsim {

void CompactTallies::expand(size_t i, Tally& out) const { compact_expand(bytes.data() + i * stride, out); }

void cuda_simulate(const std::vector<SimJob>& jobs, Tally* out) {
  const CompactTallies r = cuda_simulate_compact(jobs);
  for (size_t i = 0; i < jobs.size(); ++i) {
    std::memset(&out[i], 0, sizeof(Tally));
    r.expand(i, out[i]);
  }
}

}  // namespace fleetsim
