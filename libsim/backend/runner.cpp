#include "backend/runner.hpp"

#include "base/error.hpp"

#include <algorithm>
#include <atomic>
#include <exception>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>

namespace fleetsim {

uint8_t* HostWorkspace::for_params(const SimParams& p) {
  const uint64_t need = workspace_layout(p).total;
  if (size_ < need) {
    buf_.reset();
    buf_.reset(new uint8_t[need]);  // default-initialised: no pass over the pages
    size_ = need;
  }
  return buf_.get();
}

void parallel_jobs(size_t n, int threads, const std::function<void(size_t, HostWorkspace&)>& job) {
  std::atomic<size_t> next{0};
  std::mutex m;
  std::exception_ptr error;
  auto work = [&]() {
    HostWorkspace ws;
    for (size_t i; (i = next.fetch_add(1)) < n;) {
      try {
        job(i, ws);
      } catch (...) {
        std::lock_guard<std::mutex> lock(m);
        if (!error) error = std::current_exception();
        next = n;
      }
    }
  };
  const size_t k = std::max<size_t>(1, std::min<size_t>(size_t(std::max(1, threads)), n));
  std::vector<std::thread> pool;
  for (size_t i = 1; i < k; ++i) pool.emplace_back(work);
  work();
  for (auto& t : pool) t.join();
  if (error) std::rethrow_exception(error);
}

std::unique_ptr<Tally> simulate_once(const SimParams& p, uint32_t replication, HostWorkspace& ws) {
  auto t = std::make_unique<Tally>();
  simulate(p, replication, ws.for_params(p), *t);
  return t;
}

void check_status(const Tally& t, const std::string& source) {
  const Location where{source, 0, 0, ""};
  if (t.status == int32_t(SimStatus::event_limit))
    throw InputError(where,
                     "the simulation stopped after " + std::to_string(t.events) +
                         " events, its budget for this scenario: an overloaded fleet whose queue keeps growing "
                         "(lower queue_limit or the arrival rate, or add replicas), step times too short to "
                         "advance time (check the engine's step costs), or closed-loop users answered without the "
                         "device almost every time (a response_cache hit_rate near 1 with no think time), who send "
                         "faster than simulated time moves",
                     ErrorKind::inconsistent);
  if (t.status == 0 && t.unfinished != 0)
    throw InputError(where,
                     std::to_string(t.unfinished) +
                         " requests never finished: a step took longer than any simulated time can hold (check "
                         "the engine's mfu, mbu and step costs)",
                     ErrorKind::inconsistent);
  if (t.status != 0) throw std::runtime_error("simulation failed with status " + std::to_string(t.status));
}

}  // namespace fleetsim
