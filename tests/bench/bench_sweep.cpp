// Sweep throughput and memory. Throughput: configurations per wall second on 1 CPU thread, on all
// CPU threads and on CUDA where a device is present, the projection to the whole sweep (10,000
// configurations of tests/bench/azure-conv-10k.yaml by default), the CPU time each thread count
// used (equal CPU time with no wall-time gain means no free core, not contention), and whether
// the results agree. Memory: peak RSS of a streamed sweep (rows to a sink, as --format csv/jsonl)
// and of a whole document, against the number of configurations, each in a fresh child process.
// Built with the tests, never run as one.
// Usage: bench_sweep [SCENARIO] [PATH=VALUE ...] [--sample N] [--no-memory]
#include <fmt/format.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <thread>

#include "libsim/sweep/sweep.hpp"

using namespace fleetsim;

namespace {

double cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return double(u.ru_utime.tv_sec + u.ru_stime.tv_sec) + 1e-6 * double(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
}

struct Measure {
  std::string name;
  double wall = 0, cpu = 0;
  uint64_t configs = 0;
  uint64_t shared = 0;   // replications a run of other engine limits served (sweep/share.hpp)
  std::string text;      // the rows, as streamed
  uint64_t stopped = 0;  // runs stopped once their SLO miss was certain
  CudaLaunchStats launch;
};

Measure measure(const std::string& name, const ScenarioSource& src, const SweepSpec& spec, Backend b, int threads) {
  SweepOptions o;
  o.backend = b;
  o.threads = threads;
  Measure m;
  m.name = name;
  o.ordered_row = [&m](const Json& r) {
    m.text += r.dump() + "\n";
    ++m.configs;
  };
  o.progress = [&m](const SweepProgress& p) { m.shared = p.replications_shared; };
  const double c0 = cpu_seconds();
  const auto t0 = std::chrono::steady_clock::now();
  const Json summary = run_sweep(src, spec, o)["summary"];
  m.stopped = summary.value("stopped_early", uint64_t(0));
  m.text += summary.dump();
  m.wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  m.cpu = cpu_seconds() - c0;
  if (b == Backend::cuda) m.launch = cuda_last_launch();
  return m;
}

// Peak RSS (MiB) of a child that runs the sweep of `n` configurations, streamed or kept whole.
double peak_rss_mib(const ScenarioSource& src, uint64_t n, bool streamed, int threads) {
  std::fflush(stdout);
  const pid_t pid = fork();
  if (pid == 0) {
    try {
      const ScenarioSource s = src.with_overrides(parse_sets({fmt::format("sweep.sample={}", n)}));
      SweepOptions o;
      o.backend = Backend::cpu;
      o.threads = threads;
      size_t bytes = 0;
      if (streamed) o.ordered_row = [&bytes](const Json& r) { bytes += r.dump().size(); };
      const Json doc = run_sweep(s, parse_sweep(s), o);
      _exit(doc.contains("summary") ? 0 : 1);
    } catch (...) {
      _exit(1);
    }
  }
  int status = 0;
  rusage u{};
  wait4(pid, &status, 0, &u);
  return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? double(u.ru_maxrss) / 1024.0 : -1.0;
}

// The machine's load (1, 5 and 15 minute averages): on a shared machine a wall time means little
// without it.
std::string load_average() {
  std::ifstream f("/proc/loadavg");
  double a = 0, b = 0, c = 0;
  if (!(f >> a >> b >> c)) return "unknown";
  return fmt::format("{:.2f} {:.2f} {:.2f}", a, b, c);
}

}  // namespace

int main(int argc, char** argv) {
  std::string path = std::string(FLEETSIM_SOURCE_DIR) + "/tests/bench/azure-conv-10k.yaml";
  std::vector<std::string> sets;
  uint64_t sample = 1000;  // a uniform sample (sweep.sample), not a shard: shards follow the grid order
  bool memory = true;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--sample" && i + 1 < argc)
      sample = std::stoull(argv[++i]);
    else if (a == "--no-memory")
      memory = false;
    else if (a.find('=') != std::string::npos)
      sets.push_back(a);
    else
      path = a;
  }
  try {
    const ScenarioSource whole = ScenarioSource::from_file(path).with_overrides(parse_sets(sets));
    const uint64_t full = parse_sweep(whole).count();
    std::vector<std::string> with_sample = sets;
    if (sample < full) with_sample.push_back(fmt::format("sweep.sample={}", sample));
    const ScenarioSource src = ScenarioSource::from_file(path).with_overrides(parse_sets(with_sample));
    const SweepSpec spec = parse_sweep(src);
    const int all = int(std::max(1u, std::thread::hardware_concurrency()));
    fmt::print("sweep {}: {} of its {} configurations{} x {} replications, {}{}\n", path, spec.count(), full,
               spec.count() < full ? " (a uniform sample)" : "", spec.replications,
               spec.sequential ? "sequential stopping on" : "every replication run",
               spec.stop_certain_misses ? ", certain misses stopped" : "");
    if (spec.count() < full)
      fmt::print(
          "  a sample splits the stretches of configurations that differ only in engine limits, so it shows\n"
          "  little of the runs they share (docs/model.md, \"Sweeps, replications and backends\"): --sample {} runs "
          "the whole sweep\n",
          full);
    fmt::print("load average before: {} ({} cores)\n\n", load_average(), std::thread::hardware_concurrency());
    std::vector<Measure> ms;
    measure("warm-up", src, spec, Backend::cpu, all);  // caches, page faults, CPU clocks
    ms.push_back(measure("cpu, 1 thread", src, spec, Backend::cpu, 1));
    ms.push_back(measure(fmt::format("cpu, {} threads", all), src, spec, Backend::cpu, all));
    std::string why;
    const bool cuda = cuda_available(&why);
    if (cuda) ms.push_back(measure("cuda (" + cuda_device_name() + ")", src, spec, Backend::cuda, all));
    fmt::print("{:<34} {:>9} {:>9} {:>10} {:>12} {:>16} {:>16}\n", "backend", "wall s", "cpu s", "cpu/wall",
               "configs/s", fmt::format("{} configs s", full), fmt::format("{} configs cpu s", full));
    for (const auto& m : ms) {
      const double scale = double(full) / double(std::max<uint64_t>(1, m.configs));
      fmt::print("{:<34} {:>9.3f} {:>9.3f} {:>10.2f} {:>12.1f} {:>16.1f} {:>16.1f}\n", m.name, m.wall, m.cpu,
                 m.cpu / m.wall, double(m.configs) / m.wall, m.wall * scale, m.cpu * scale);
    }
    fmt::print("load average after:  {}\n", load_average());
    fmt::print("\nscaling, {} threads / 1 thread: {:.2f}x wall, CPU time {:.2f}x (1.00x: no contention overhead)\n",
               all, ms[0].wall / ms[1].wall, ms[1].cpu / ms[0].cpu);
    if (ms[1].cpu / ms[1].wall < 0.8 * all)
      fmt::print(
          "  this process got {:.2f} of {} cores: the others are busy, so threads cannot shorten the wall time\n",
          ms[1].cpu / ms[1].wall, all);
    fmt::print("results identical across thread counts: {}\n", ms[0].text == ms[1].text ? "yes" : "NO");
    fmt::print("replications served by a run of other engine limits: {} (1 thread), {} ({} threads)\n", ms[0].shared,
               ms[1].shared, all);
    fmt::print("configurations whose run stopped once its SLO miss was certain: {}\n", ms[1].stopped);
    if (cuda) {
      const Measure& g = ms[2];
      fmt::print("cuda / cpu ({} threads): {:.2f}x configurations per second\n", all, ms[1].wall / g.wall);
      fmt::print("results identical, cuda and cpu: {}\n", g.text == ms[1].text ? "yes" : "NO");
      fmt::print(
          "cuda launch: {} jobs in {} launch(es), grid {} x block {}, {} simulations in flight, occupancy {:.1f}%\n",
          g.launch.jobs, g.launch.launches, g.launch.grid, g.launch.block, g.launch.slots, 100 * g.launch.occupancy);
      fmt::print("cuda memory: {:.2f} MiB per simulation in flight, {:.1f} KiB result per job, {:.2f} GiB in all\n",
                 double(g.launch.slot_bytes) / (1 << 20), double(g.launch.result_bytes) / 1024,
                 double(g.launch.device_bytes) / (1 << 30));
      fmt::print("cuda kernel: {} registers per thread, {} bytes of local memory per thread (stack and spills)\n",
                 g.launch.registers, g.launch.local_bytes);
    } else {
      fmt::print("cuda: not measured ({})\n", why);
    }
    if (memory) {
      // rows are the same size whatever the simulated time, so short runs measure the memory
      const ScenarioSource quick = whole.with_overrides(parse_sets({"duration_s=60", "warmup_s=6"}));
      fmt::print("\npeak RSS (MiB) against configurations, {} threads, 60 simulated seconds each\n", all);
      fmt::print("{:>14} {:>14} {:>14}\n", "configurations", "streamed", "whole document");
      for (uint64_t n : {250, 1000, 4000})
        if (n <= full)
          fmt::print("{:>14} {:>14.1f} {:>14.1f}\n", n, peak_rss_mib(quick, n, true, all),
                     peak_rss_mib(quick, n, false, all));
    }
    return 0;
  } catch (const InputError& e) {
    fmt::print(stderr, "{}\n", e.one_line());
    return 2;
  }
}
