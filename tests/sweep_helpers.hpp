// The small sweep the sweep tests share: one H100 replica of Llama 3.1 8B at 4 requests/s,
// completed by a `sweep:` section, and run on CPU threads.
#pragma once
#include <cstdint>
#include <string>

#include "libsim/sweep/sweep.hpp"

namespace fleetsim::test {

inline const std::string kSweepBase =
    "name: sw\nduration_s: 900\nwarmup_s: 100\nseed: 3\ndevice: h100-sxm-80gb\nmodel: llama-3.1-8b\n"
    "fleet: {replicas: 1}\n"
    "workload:\n  arrival: {process: poisson, rate_per_s: 4}\n"
    "  prompt_tokens: {dist: lognormal, median: 800, p99: 4000}\n"
    "  output_tokens: {dist: lognormal, median: 120, p99: 600}\n";

inline ScenarioSource sweep_source(const std::string& sweep) {
  return ScenarioSource::from_text(kSweepBase + sweep, "<sweep>", FLEETSIM_SOURCE_DIR);
}

inline Json run_sweep_cpu(const ScenarioSource& src, int threads = 2, uint32_t k = 0, uint32_t n = 1) {
  const SweepSpec spec = parse_sweep(src);
  SweepOptions o;
  o.backend = Backend::cpu;
  o.threads = threads;
  o.shard_index = k;
  o.shard_count = n;
  return run_sweep(src, spec, o);
}

}  // namespace fleetsim::test
