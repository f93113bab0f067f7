// Common request streams: the arrivals and lengths of an open-loop class are pure functions of the
// seed, the class, the replication and the workload (core/workload.hpp), the same for every fleet
// configuration of a sweep. RequestStreams draws each (workload, replication) once and hands every
// configuration that shares it the same arrays, replayed as a trace: the same requests, with no
// random draws in the simulation for them.
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/params.hpp"
#include "core/philox.hpp"

namespace fleetsim {

// Whether the core draws a class of this kind's arrivals itself (a stream can replace them).
bool drawn_in_core(ArrivalKind k);

// Everything class c's arrival times depend on, as a key (its lengths excluded).
std::string arrivals_key(const SimParams& p, int32_t c);

// Class c's arrivals in replication r as the core draws them (core/workload.hpp: the same keys,
// the same order): each(t, rng, i) for the i-th at time t, until it returns false or they end.
// The rng is the replication's, for the draws keyed by i (the request's lengths).
void each_drawn_arrival(const SimParams& p, int32_t c, uint32_t r,
                        const std::function<bool(double t, const Rng& rng, uint64_t i)>& each);

class RequestStreams {
 public:
  // p with each open-loop class that draws its own arrivals (poisson, gamma, diurnal, constant)
  // replaced by its stream for replication r, drawn on first use. A class whose stream would
  // hold more than `max_requests` requests, or would take the streams kept past
  // `max_kept_requests` (a sweep whose workload changes with every configuration), keeps drawing
  // in the simulation.
  SimParams with_streams(const SimParams& p, uint32_t r);

  size_t streams() const;  // kept so far
  static constexpr int64_t max_requests = 4000000;
  static constexpr int64_t max_kept_requests = 16000000;  // 16 bytes each: 256 MB

 private:
  struct Drawn {
    std::vector<double> t_s;  // arrival times as drawn (absolute: the class starts at 0 when replayed)
    std::vector<int32_t> prompt, output;
  };
  std::shared_ptr<const Drawn> get(const SimParams& p, int32_t c, uint32_t r);
  mutable std::mutex mutex_;
  std::map<std::string, std::shared_ptr<const Drawn>> cache_;  // by workload, class and replication
  int64_t kept_ = 0;                                           // requests in cache_
  bool full_ = false;  // kept_ reached max_kept_requests: new streams are not drawn here
};

}  // namespace fleetsim
