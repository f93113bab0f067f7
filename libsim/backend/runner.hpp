// Host entry points into the simulation core.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/engine.hpp"
#include "input/scenario.hpp"

namespace fleetsim {

// A reusable per-thread workspace for the core (sized for the largest parameters seen). It is
// never zero-filled: sim_bind sets what a run reads first, and the request slots are handed out
// as requests arrive, so the pages a run never reaches are never touched.
class HostWorkspace {
 public:
  uint8_t* for_params(const SimParams& p);

 private:
  std::unique_ptr<uint8_t[]> buf_;
  uint64_t size_ = 0;
};

// job(i, workspace) for every i in [0, n), on up to `threads` threads with a workspace each; the
// first exception stops the rest and is rethrown here.
void parallel_jobs(size_t n, int threads, const std::function<void(size_t, HostWorkspace&)>& job);

// One simulation of a scenario: replication r of its seed.
std::unique_ptr<Tally> simulate_once(const SimParams& p, uint32_t replication, HostWorkspace& ws);

// Throws InputError (exit 2, naming the scenario file and the likely cause) if the simulation hit
// its event budget or left requests unfinished.
void check_status(const Tally& t, const std::string& source);

}  // namespace fleetsim
