// Sweep throughput: simulated requests per wall second on 1 CPU thread, on all CPU threads, and
// on CUDA where a device is present, with the scaling ratios and whether the results agree.
// Built with the tests, never run as one.
// Usage: bench_sweep [SCENARIO] [PATH=VALUE ...]   (default: tests/data/gpu-check.yaml, 64 sampled configurations)
#include <fmt/format.h>

#include <chrono>
#include <thread>

#include "libsim/sweep.hpp"

using namespace fleetsim;

namespace {

struct Measure {
  std::string name;
  double wall = 0, requests = 0;
  std::string json;
};

Measure measure(const std::string& name, const ScenarioSource& src, const SweepSpec& spec, Backend b, int threads) {
  SweepOptions o;
  o.backend = b;
  o.threads = threads;
  const auto t0 = std::chrono::steady_clock::now();
  const Json doc = run_sweep(src, spec, o);
  Measure m;
  m.name = name;
  m.wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const Scenario base = src.instantiate();
  const double scale = base.duration_s / (base.duration_s - base.warmup_s);  // warm-up requests run too
  for (const auto& r : doc["rows"])
    if (r["metrics"].is_object())
      m.requests += r["metrics"]["requests"]["arrived"].get<double>() * spec.replications * scale;
  m.json = doc.dump();
  return m;
}

}  // namespace

int main(int argc, char** argv) {
  std::string path = std::string(FLEETSIM_SOURCE_DIR) + "/tests/data/gpu-check.yaml";
  std::vector<std::string> sets;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a.find('=') != std::string::npos) sets.push_back(a);
    else path = a;
  }
  if (sets.empty()) sets.push_back("sweep.sample=64");
  try {
    const ScenarioSource src = ScenarioSource::from_file(path).with_overrides(parse_sets(sets));
    const SweepSpec spec = parse_sweep(src);
    const int all = int(std::max(1u, std::thread::hardware_concurrency()));
    fmt::print("sweep {}: {} configurations x {} replications\n\n", path, spec.count(), spec.replications);
    std::vector<Measure> ms;
    measure("warm-up", src, spec, Backend::cpu, all);  // caches, page faults, CPU clocks
    ms.push_back(measure("cpu, 1 thread", src, spec, Backend::cpu, 1));
    ms.push_back(measure(fmt::format("cpu, {} threads", all), src, spec, Backend::cpu, all));
    std::string why;
    const bool cuda = cuda_available(&why);
    if (cuda) ms.push_back(measure("cuda (" + cuda_device_name() + ")", src, spec, Backend::cuda, all));
    fmt::print("{:<34} {:>10} {:>14} {:>16}\n", "backend", "wall s", "requests", "requests/s");
    for (const auto& m : ms)
      fmt::print("{:<34} {:>10.3f} {:>14.0f} {:>16.4g}\n", m.name, m.wall, m.requests, m.requests / m.wall);
    fmt::print("\nscaling, {} threads / 1 thread: {:.2f}x\n", all, ms[0].wall / ms[1].wall);
    fmt::print("results identical across thread counts: {}\n", ms[0].json == ms[1].json ? "yes" : "NO");
    if (cuda) {
      fmt::print("cuda / cpu ({} threads): {:.2f}x\n", all, ms[1].wall / ms[2].wall);
      fmt::print("results identical, cuda and cpu: {}\n", ms[2].json == ms[1].json ? "yes" : "NO");
    } else {
      fmt::print("cuda: not measured ({})\n", why);
    }
    return 0;
  } catch (const InputError& e) {
    fmt::print(stderr, "{}\n", e.one_line());
    return 2;
  }
}
