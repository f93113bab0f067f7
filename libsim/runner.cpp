#include "runner.hpp"

#include <stdexcept>
#include <string>

namespace fleetsim {

uint8_t* HostWorkspace::for_params(const SimParams& p) {
  const uint64_t need = workspace_layout(p).total;
  if (buf_.size() < need) buf_.assign(need, 0);
  return buf_.data();
}

std::unique_ptr<Tally> simulate_once(const SimParams& p, uint32_t replication, HostWorkspace& ws) {
  auto t = std::make_unique<Tally>();
  simulate(p, replication, ws.for_params(p), *t);
  return t;
}

void check_status(const Tally& t) {
  if (t.status == int32_t(SimStatus::event_limit))
    throw std::runtime_error("simulation stopped after " + std::to_string(t.events) +
                             " events without finishing (an overloaded fleet with an enormous queue_limit?)");
  if (t.status == 0 && t.unfinished != 0)
    throw std::runtime_error("internal error: " + std::to_string(t.unfinished) + " requests never finished");
  if (t.status != 0) throw std::runtime_error("simulation failed with status " + std::to_string(t.status));
}

}  // namespace fleetsim
