// Size a chat fleet with the fleetsim library: for 1..4 H100s, the cost per 1M tokens (in and out) and
// p99 TTFT of the built-in chat scenario, and the cheapest fleet under a 1 s p99 TTFT.
#include <fleetsim/fleetsim.hpp>

#include <cstdio>
#include <string>

int main() {
  try {
    int best = 0;
    double best_usd = 0;
    for (int n = 1; n <= 4; ++n) {
      const auto s = fleetsim::ScenarioHandle::builtin_default({"fleet.replicas=" + std::to_string(n)});
      const fleetsim::RunResult r = fleetsim::run(s);
      const auto& m = r.summary;
      std::printf("%d x H100: p99 TTFT %.3f s, $%.3f per 1M tokens in and out, busy %.0f%%\n", n, m.ttft_p99_s,
                  m.per_million_tokens_usd, 100 * m.busy_fraction);
      if (m.ttft_p99_s <= 1.0 && (best == 0 || m.per_million_tokens_usd < best_usd)) {
        best = n;
        best_usd = m.per_million_tokens_usd;
      }
    }
    if (best == 0) {
      std::printf("no fleet of up to 4 meets the SLO\n");
      return 1;
    }
    std::printf("cheapest under a 1 s p99 TTFT: %d x H100 at $%.3f per 1M tokens in and out\n", best, best_usd);
    // errors carry their location
    try {
      fleetsim::ScenarioHandle::from_yaml(
          "name: x\nduration_s: 60\nmodel: llama-3.1-8b\ndevice: h100-sxm-80gb\nfleet: {replicas: 2, routr: x}\n"
          "workload: {arrival: {process: poisson, rate_per_s: 1}, prompt_tokens: {dist: fixed, value: 100}, "
          "output_tokens: {dist: fixed, value: 10}}\n");
    } catch (const fleetsim::Error& e) {
      std::printf("a bad scenario says: %s\n", e.what());
    }
    return 0;
  } catch (const fleetsim::Error& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 2;
  }
}
