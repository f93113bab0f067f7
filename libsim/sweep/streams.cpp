#include "sweep/streams.hpp"

#include <cstring>

#include "core/philox.hpp"
#include "core/workload.hpp"

namespace fleetsim {

bool drawn_in_core(ArrivalKind k) {
  return k == ArrivalKind::poisson || k == ArrivalKind::gamma || k == ArrivalKind::diurnal ||
         k == ArrivalKind::constant;
}

namespace {

void put(std::string& key, const void* p, size_t n) { key.append(static_cast<const char*>(p), n); }

void put_dist(std::string& key, const DistParams& d) {
  put(key, &d.kind, sizeof d.kind);
  put(key, &d.a, sizeof d.a);
  put(key, &d.b, sizeof d.b);
  put(key, &d.n, sizeof d.n);
  if (d.n > 0) {
    put(key, d.values, sizeof(double) * size_t(d.n));
    put(key, d.cdf, sizeof(double) * size_t(d.n));
  }
}

}  // namespace

std::string arrivals_key(const SimParams& p, int32_t c) {
  const ArrivalParams& a = p.classes[c].arrivals;
  std::string key;
  put(key, &p.seed, sizeof p.seed);
  put(key, &c, sizeof c);
  put(key, &p.duration_s, sizeof p.duration_s);
  for (double x : {a.rate_per_s, a.gamma_shape, a.gamma_scale_s, a.diurnal_amplitude, a.diurnal_period_s,
                   a.diurnal_peak_at_s, a.start_s, a.stop_s})
    put(key, &x, sizeof x);
  put(key, &a.kind, sizeof a.kind);
  return key;
}

void each_drawn_arrival(const SimParams& p, int32_t c, uint32_t r,
                        const std::function<bool(double t, const Rng& rng, uint64_t i)>& each) {
  const ArrivalParams& a = p.classes[c].arrivals;
  const Rng rng = make_rng(p.seed, r);
  ArrivalCursor cur{0.0, 0, 0};
  uint64_t i = 0;
  for (double t = first_arrival(a, rng, uint32_t(c), cur, p.duration_s); t < kInf;
       t = next_arrival(a, rng, uint32_t(c), cur, t, p.duration_s))
    if (!each(t, rng, i++)) return;
}

namespace {

// Everything a class's draws depend on (core/workload.hpp): its index keys its streams.
std::string stream_key(const SimParams& p, int32_t c, uint32_t r) {
  std::string key = arrivals_key(p, c);
  put(key, &r, sizeof r);
  put_dist(key, p.classes[c].prompt);
  put_dist(key, p.classes[c].output);
  return key;
}

}  // namespace

std::shared_ptr<const RequestStreams::Drawn> RequestStreams::get(const SimParams& p, int32_t c, uint32_t r) {
  const std::string key = stream_key(p, c, r);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = cache_.find(key);
    if (it != cache_.end()) return it->second;
    if (full_) return nullptr;
  }
  // the draws of handle_arrival and the engine's arrival loop, in the same order and keys
  const ClassParams& C = p.classes[c];
  auto s = std::make_shared<Drawn>();
  bool too_long = false;
  each_drawn_arrival(p, c, r, [&](double t, const Rng& rng, uint64_t idx) {
    if (int64_t(idx) >= max_requests) {
      too_long = true;
      return false;
    }
    s->t_s.push_back(t);  // as drawn: (t - start) + start need not give t back
    s->prompt.push_back(int32_t(sample_length(C.prompt, rng, fleetsim::Stream::prompt, uint32_t(c), idx)));
    s->output.push_back(int32_t(sample_length(C.output, rng, fleetsim::Stream::output, uint32_t(c), idx)));
    return true;
  });
  if (too_long) return nullptr;
  std::lock_guard<std::mutex> lock(mutex_);
  if (kept_ + int64_t(s->t_s.size()) > max_kept_requests) {
    full_ = true;
    return nullptr;
  }
  auto [it, added] = cache_.emplace(key, std::move(s));
  if (added) kept_ += int64_t(it->second->t_s.size());
  return it->second;
}

SimParams RequestStreams::with_streams(const SimParams& p, uint32_t r) {
  SimParams q = p;
  for (int32_t c = 0; c < p.n_classes; ++c) {
    ArrivalParams& a = q.classes[c].arrivals;
    if (!drawn_in_core(a.kind)) continue;
    const auto s = get(p, c, r);
    if (!s || s->t_s.empty()) continue;  // too long to keep, or no request at all: drawn as before
    a.kind = ArrivalKind::trace;
    a.start_s = 0.0;  // the times are absolute
    a.trace_t_s = s->t_s.data();
    a.trace_prompt = s->prompt.data();
    a.trace_output = s->output.data();
    a.trace_cached = nullptr;
    a.trace_n = int64_t(s->t_s.size());
  }
  return q;
}

size_t RequestStreams::streams() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return cache_.size();
}

}  // namespace fleetsim
