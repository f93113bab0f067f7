// MPS (docs/model.md, "Sharing a device"): memory per client against time slicing, concurrent
// steps against hand computations, and shared fate -- a fault takes down its device's clients
// and no others.
#include <doctest/doctest.h>

#include <memory>
#include <string>
#include <vector>

#include "helpers.hpp"
#include "libsim/core/engine.hpp"

using namespace fleetsim;

namespace {
// Four replicas of a small model on one H100, each engine at a fifth of the device.
std::string four_clients(const std::string& sharing, const std::string& engine_extra = "") {
  return "duration_s: 600\nwarmup_s: 0\ndevice: h100-sxm-80gb\nmodel: llama-3.2-1b\n" + sharing +
         "\nengine: {gpu_memory_utilization: 0.2, max_num_seqs: 64, max_batched_tokens: 4096" + engine_extra +
         "}\nfleet: {replicas: 4, router: round_robin}\n"
         "workload:\n  arrival: {process: poisson, rate_per_s: 4}\n  prompt_tokens: 500\n  output_tokens: 50\n";
}

// Eight replicas of four_clients(sharing), two devices of four, started and driven by hand.
struct Started : test::Started {
  explicit Started(const std::string& sharing)
      : test::Started(test::scenario(four_clients(sharing), {"fleet.replicas=8"})) {}
};

// Two linear-model replicas (5 ms of host time per step, 10 us of compute per prompt token)
// sharing one device, and two 1,000-token prompts at t = 0, one each.
std::string two_prompts(const std::string& sharing, const std::string& output = "1") {
  return "duration_s: 10\nwarmup_s: 0\ndevice: h100-sxm-80gb\nmodel: llama-3.2-1b\n" + sharing +
         "\nengine: {perf_model: linear, step_base_s: 0.005, per_prefill_token_s: 0.00001, per_decode_seq_s: 0.001, "
         "gpu_memory_utilization: 0.3}\n"
         "fleet: {replicas: 2, router: round_robin}\n"
         "workload:\n  arrival: {process: burst, requests: 2}\n  prompt_tokens: 1000\n  output_tokens: " +
         output + "\n";
}
// Whether two scenarios report the same, byte for byte (the overrides that made them apart).
bool same(const Scenario& a, const Scenario& b) {
  Json ja = test::run(a).report, jb = test::run(b).report;
  ja["scenario"].erase("overrides");
  jb["scenario"].erase("overrides");
  return ja.dump() == jb.dump();
}
}  // namespace

TEST_CASE("MPS memory: one CUDA context per device instead of one per replica, and the KV each client can hold") {
  // Llama 3.2 1B: 2 x 16 layers x 8 KV heads x 64 x 2 B = 32 KiB per token, 0.5 MiB per 16-token block
  const Scenario mps = test::scenario(four_clients("mps: 4", ", cuda_context_gib: 0.5"));
  const Scenario ts = test::scenario(four_clients("time_slicing: 4", ", cuda_context_gib: 0.5"));
  const Capacity& c = mps.pools[0].capacity;
  REQUIRE(c.kv_bytes_per_token == 32768.0);
  // each engine budgets its KV alone, from its own gpu_memory_utilization: the same either way
  CHECK(c.kv_blocks == ts.pools[0].capacity.kv_blocks);
  CHECK(c.kv_blocks == 26246);  // (79.22 x 0.2 - 2.310 weights - 0.485 runtime - 0.234 activations) GiB / 0.5 MiB
  // the device holds four contexts under time slicing, the server's one under MPS
  CHECK(ts.params().pools[0].tenant_context_bytes == doctest::Approx(0.5 * 1073741824.0));
  CHECK(ts.params().pools[0].server_context_bytes == 0.0);
  CHECK(mps.params().pools[0].server_context_bytes == doctest::Approx(0.5 * 1073741824.0));
  CHECK(mps.params().pools[0].tenant_context_bytes == 0.0);
  // the KV each of the four can hold when all hold the same and the device is full:
  // (79.22 - contexts) / 4 - (2.3097 + 0.4847 + 0.234)
  const Json sm = test::run(mps).report["capacity"]["sharing"];
  const Json st = test::run(ts).report["capacity"]["sharing"];
  const double fixed = c.weights_gib + c.runtime_overhead_gib + c.activation_gib;
  CHECK(fixed == doctest::Approx(3.0283675).epsilon(1e-7));
  CHECK(sm["kv_gib_per_replica_on_device"].get<double>() == doctest::Approx((79.22 - 0.5) / 4 - fixed).epsilon(1e-12));
  CHECK(st["kv_gib_per_replica_on_device"].get<double>() == doctest::Approx((79.22 - 2.0) / 4 - fixed).epsilon(1e-12));
  CHECK(sm["kv_blocks_per_replica_on_device"] == 34102);  // 16.6516 GiB x 2048 blocks per GiB
  CHECK(st["kv_blocks_per_replica_on_device"] == 33334);  // 16.2766 GiB x 2048
  // three contexts saved, shared by four clients: 0.375 GiB = 768 blocks = 12,288 tokens each
  CHECK(sm["kv_blocks_per_replica_on_device"].get<int64_t>() - st["kv_blocks_per_replica_on_device"].get<int64_t>() ==
        768);
  CHECK(sm["mode"] == "mps");
  CHECK(st["mode"] == "time_slicing");
  CHECK(sm["oversubscribed"] == false);
  // MPS clients that cannot all fit are refused up front, like time-sliced replicas
  CHECK(test::error_of(four_clients("mps: 4"),
                       {"model=qwen2.5-7b", "mps=6", "fleet.replicas=6", "engine.gpu_memory_utilization=0.9"})
            .find("6 MPS clients") != std::string::npos);
}

TEST_CASE("MPS step time: the smallest stretch at which the device carries every busy client's work, by hand") {
  // k identical memory-bound decode steps, h = 2 ms on the host, y = 4 ms of traffic, x = 1 ms of compute
  for (int k = 1; k <= 6; ++k) {
    double h[6], g[6], x[6], y[6];
    for (int j = 0; j < k; ++j) {
      h[j] = 0.002;
      g[j] = 0.004;  // roofline: the larger of compute and traffic
      x[j] = 0.001;
      y[j] = 0.004;
    }
    const double S = mps_slowdown(h, g, x, y, k);
    // k y / (h + S y) = 1: S = k - h / y, at least 1; the step is h + S y = max(h + y, k y)
    const double expect = std::max(1.0, k - 0.002 / 0.004);
    CHECK(S == doctest::Approx(expect).epsilon(1e-11));
    CHECK(0.002 + S * 0.004 == doctest::Approx(std::max(0.006, k * 0.004)).epsilon(1e-11));
  }
  {
    // a prefill (compute-bound) beside a decode (memory-bound), no host time: the compute they
    // need per second is 10/10 + 3/6 = 1.5 devices' worth, the traffic 1/10 + 6/6 = 1.1: S = 1.5
    const double h[2] = {0, 0}, g[2] = {0.010, 0.006}, x[2] = {0.010, 0.003}, y[2] = {0.001, 0.006};
    CHECK(mps_slowdown(h, g, x, y, 2) == doctest::Approx(1.5).epsilon(1e-11));
  }
  {
    // the same two with 2 ms of host time each: 10/12 + 3/8 > 1 at S = 1; 10/(2+10S) + 3/(2+6S) = 1
    const double h[2] = {0.002, 0.002}, g[2] = {0.010, 0.006}, x[2] = {0.010, 0.003}, y[2] = {0.001, 0.006};
    const double S = mps_slowdown(h, g, x, y, 2);
    CHECK(0.010 / (0.002 + 0.010 * S) + 0.003 / (0.002 + 0.006 * S) == doctest::Approx(1.0).epsilon(1e-11));
    CHECK(S > 1.0);
    CHECK(S < 1.5);
  }
  {
    // a decode that leaves the device mostly idle beside a prefill: they overlap entirely
    const double h[2] = {0.002, 0.002}, g[2] = {0.010, 0.001}, x[2] = {0.010, 0.0002}, y[2] = {0.002, 0.001};
    CHECK(mps_slowdown(h, g, x, y, 2) == 1.0);  // 10/12 + 0.2/3 = 0.9 of the compute
  }
}

TEST_CASE("MPS in a run: two prompts at once share the device's compute, time slicing takes turns") {
  // client 0 starts alone: 5 ms + 10 ms. Client 1 starts beside it: both need 10 ms of compute
  // every (5 ms + S x 10 ms), 2 x 10 / (5 + 10 S) = 1 gives S = 1.5: 5 + 15 = 20 ms
  const auto mps = test::run(test::scenario(two_prompts("mps: 2")));
  REQUIRE(mps.drained);
  CHECK(mps.all->completed == 2);
  CHECK(mps.all->ttft.min == doctest::Approx(0.015).epsilon(1e-12));
  CHECK(mps.all->ttft.max == doctest::Approx(0.020).epsilon(1e-12));
  CHECK(mps.tally->pools[0].busy_s == doctest::Approx(0.035).epsilon(1e-12));
  // time slicing: the second step takes turns with the first, twice 15 ms
  const auto ts = test::run(test::scenario(two_prompts("time_slicing: 2")));
  CHECK(ts.all->ttft.max == doctest::Approx(0.030).epsilon(1e-12));
  // one client alone on its device runs as on a whole device
  const auto alone = test::run(test::scenario(two_prompts("mps: 2"), {"workload.arrival.requests=1"}));
  CHECK(alone.all->ttft.max == doctest::Approx(0.015).epsilon(1e-12));
  // half the SMs: the prompt's compute takes twice as long, its decode steps (memory) do not:
  // 5 + 2 x 10 = 25 ms to the first token, then 10 steps of 5 + 1 ms
  const auto capped = test::run(test::scenario(two_prompts("mps: {clients: 1, active_thread_percentage: 50}", "11"),
                                               {"workload.arrival.requests=1", "fleet.replicas=1"}));
  CHECK(capped.all->ttft.max == doctest::Approx(0.025).epsilon(1e-12));
  CHECK(capped.all->e2e.max == doctest::Approx(0.025 + 10 * 0.006).epsilon(1e-12));
  CHECK(capped.report["capacity"]["sharing"]["active_thread_percentage"] == 50.0);
}

TEST_CASE("MPS beside a CPU fallback: a client computing on the host CPU asks nothing of the device") {
  // of two slots at share 0.5, slot 1 falls back (ten times slower). Client 0 plans its prompt
  // alone: 15 ms. Client 1's prompt runs on the CPU beside it: 10 x 15 ms, not stretched by
  // client 0 and not stretching it; its device time is idle
  const auto r = test::run(test::scenario(
      two_prompts("mps: 2"), {"fleet.faults.cpu_fallback.share=0.5", "fleet.faults.cpu_fallback.slowdown=10"}));
  REQUIRE(r.drained);
  CHECK(r.all->completed == 2);
  CHECK(r.all->ttft.min == doctest::Approx(0.015).epsilon(1e-12));
  CHECK(r.all->ttft.max == doctest::Approx(0.150).epsilon(1e-12));
  CHECK(r.tally->pools[0].busy_s == doctest::Approx(0.015).epsilon(1e-12));
  CHECK(r.tally->pools[0].cpu_busy_s == doctest::Approx(0.150).epsilon(1e-12));
}

TEST_CASE("time slicing beside a CPU fallback: a replica on the host CPU takes no turn on the device") {
  // slot 1 falls back (ten times slower): its prompt takes 10 x 15 ms whatever client 0 does, and
  // client 0's takes 15 ms, as alone (both were 30 ms turns before the fix of the CPU side)
  const auto r = test::run(test::scenario(two_prompts("time_slicing: 2"), {"fleet.faults.cpu_fallback.share=0.5",
                                                                           "fleet.faults.cpu_fallback.slowdown=10"}));
  REQUIRE(r.drained);
  CHECK(r.all->completed == 2);
  CHECK(r.all->ttft.min == doctest::Approx(0.015).epsilon(1e-12));
  CHECK(r.all->ttft.max == doctest::Approx(0.150).epsilon(1e-12));
}

TEST_CASE("a replica started on a device another holds is on a node that is up: no provisioning, no max_starts") {
  for (const char* sharing : {"time_slicing: 4", "mps: 4"}) {
    CAPTURE(sharing);
    Started f(sharing);
    Sim& s = f.s;
    // one replica left on the first device: a start there needs no new node, even with no starts left
    for (int r : {1, 2, 3, 4, 5, 6, 7}) replica_off(s, r, 1.0);
    s.pool[0].starts = 0;
    f.p.pools[0].autoscale.max_starts = 1;
    const double up = s.tally->pools[0].cold_stage_s[0];
    REQUIRE(replica_start(s, 0, 2.0));
    CHECK(s.rep[1].state == kStarting);  // the free place beside replica 0
    CHECK(s.pool[0].starts == 0);
    CHECK(s.tally->pools[0].cold_stage_s[0] == up);  // no provisioning
    // the first device full, the next start is a new device: it counts, and it is the last one
    REQUIRE(replica_start(s, 0, 3.0));
    REQUIRE(replica_start(s, 0, 4.0));
    REQUIRE(replica_start(s, 0, 5.0));
    CHECK(s.rep[4].state == kStarting);
    CHECK(s.pool[0].starts == 1);
    CHECK(s.tally->pools[0].cold_stage_s[0] > up);
    // no starts left: a place on a device that is up still takes a replica, a new device none
    REQUIRE(replica_start(s, 0, 6.0));
    CHECK(s.rep[5].state == kStarting);
    for (int r : {5}) replica_off(s, r, 7.0);
    for (int r : {4}) replica_off(s, r, 7.0);
    CHECK_FALSE(replica_start(s, 0, 8.0));
  }
}

TEST_CASE("MPS with one client per device is no sharing at all, byte for byte") {
  const std::string dir = std::string(FLEETSIM_SOURCE_DIR) + "/scenarios/";
  for (const char* name : {"chat-default", "oom-restart-loop", "spot-vs-on-demand"}) {
    CAPTURE(name);
    const std::string f = dir + name + ".yaml";
    CHECK(same(load_scenario_file(f), load_scenario_file(f, {"mps=1"})));
    CHECK(same(load_scenario_file(f), load_scenario_file(f, {"mps={clients: 1, active_thread_percentage: 100}"})));
  }
}

TEST_CASE("MPS shared fate: a fault takes down exactly the clients of its device") {
  // eight clients, two devices of four; client 5 (on the second) dies
  for (const char* sharing : {"mps: 4", "time_slicing: 4"}) {
    CAPTURE(sharing);
    Started f(sharing);
    Sim& s = f.s;
    Tally* tally = f.tally.get();
    replica_fail(s, 5, 1.0, false, kNone);
    const bool mps = std::string(sharing) == "mps: 4";
    for (int r = 0; r < 8; ++r) {
      CAPTURE(r);
      const bool down = r == 5 || (mps && r >= 4);
      CHECK(s.rep[r].state == (down ? kStarting : kReady));
    }
    CHECK(tally->pools[0].neighbour_failures == (mps ? 3.0 : 0.0));
  }
  {
    // a client still starting is not on the server yet: a neighbour's crash leaves its start as it
    // was; a lost device restarts it on the new node with the others
    Started f("mps: 4");
    Sim& s = f.s;
    Tally* tally = f.tally.get();
    replica_fail_one(s, 6, 1.0, true, kNone, -1.0);  // replica 6 alone, on a new node
    const double ready6 = s.rep[6].t_next;
    replica_fail(s, 5, 2.0, false, kNone);  // a crash of 5: 4 and 7 restart with it
    CHECK(s.rep[6].t_next == ready6);
    CHECK(s.rep[4].state == kStarting);
    CHECK(s.rep[7].state == kStarting);
    CHECK(tally->pools[0].neighbour_failures == 2.0);
    const int32_t starts = s.pool[0].starts;
    replica_fail(s, 7, 3.0, true, kNone);  // the device is lost: 4, 5 and 6 go too, 6 included
    CHECK(s.rep[6].t_next != ready6);
    CHECK(tally->pools[0].neighbour_failures == 5.0);
    CHECK(s.pool[0].starts == starts + 1);  // one new node for the four clients
  }
  // over a run: every crash and interruption takes the three other clients of its device along
  const Scenario flaky =
      test::scenario(four_clients("mps: 4"),
                     {"fleet.replicas=8", "fleet.failures={mtbf_hours: 0.05}",
                      "workload.prompt_tokens={dist: lognormal, median: 500, p99: 60000}",
                      "engine.on_kv_exhausted=crash", "engine.gpu_memory_utilization=0.06", "duration_s=3600"});
  const auto r = test::run(flaky);
  REQUIRE(r.drained);
  const PoolTally& t = r.tally->pools[0];
  MESSAGE("8 MPS clients on 2 devices: " << t.crashes << " crashes and " << t.interruptions
                                         << " interruptions took down " << t.neighbour_failures << " neighbours; "
                                         << r.all->retried << " requests retried");
  CHECK(t.crashes > 0);
  CHECK(t.interruptions > 0);
  // a lost device takes its three other clients; a crash those of them not still starting
  CHECK(t.neighbour_failures >= 3.0 * t.interruptions);
  CHECK(t.neighbour_failures <= 3.0 * (t.crashes + t.interruptions));
  CHECK(t.neighbour_failures > 3.0 * t.interruptions);
  CHECK(r.report["fleet"]["neighbour_failures"].get<double>() == t.neighbour_failures);
  // a device fails at mtbf, and all four go together
  CHECK(flaky.params().pools[0].interruptions_per_s == doctest::Approx(1.0 / (0.05 * 3600)));
}

TEST_CASE("MPS shared fate spares a client fallen back to the host CPU: it is on no server") {
  // eight clients, two devices of four, share 0.5: slots 1, 3, 5 and 7 run on the host CPU
  test::Started f(test::scenario(four_clients("mps: 4"), {"fleet.replicas=8", "fleet.faults.cpu_fallback.share=0.5"}));
  Sim& s = f.s;
  for (int r = 0; r < 8; ++r) REQUIRE(s.rep[r].fb_slot == (r % 2 == 1));
  replica_fail(s, 4, 1.0, false, kNone);  // a crash of the server's client 4 takes client 6, not 5 or 7
  for (int r = 0; r < 8; ++r) CHECK(s.rep[r].state == (r == 4 || r == 6 ? kStarting : kReady));
  CHECK(f.tally->pools[0].neighbour_failures == 1.0);
  replica_fail(s, 1, 2.0, false, kNone);  // a crash on the host CPU is its own
  for (int r = 0; r < 4; ++r) CHECK(s.rep[r].state == (r == 1 ? kStarting : kReady));
  CHECK(f.tally->pools[0].neighbour_failures == 1.0);
  replica_fail(s, 2, 3.0, true, kNone);  // a lost node takes its CPU's processes too
  for (int r = 0; r < 4; ++r) CHECK(s.rep[r].state == kStarting);
  CHECK(f.tally->pools[0].neighbour_failures == 4.0);  // 0, 1 and 3: a lost node restarts 1 too
}

TEST_CASE("time slicing: a place nobody holds holds no CUDA context") {
  // one replica on a device time-sliced four ways, 10 GiB a context, its engine at 0.8 of the
  // device: with its own context it never exceeds 10 + 0.8 x 79.22 = 73.4 GiB and cannot run the
  // device out of memory; counting the three empty places' contexts too (40 GiB) it did, 3 times
  const std::string one =
      "duration_s: 120\nwarmup_s: 0\ndevice: h100-sxm-80gb\nmodel: llama-3.2-1b\ntime_slicing: 4\n"
      "engine: {gpu_memory_utilization: 0.8, cuda_context_gib: 10, max_num_seqs: 256, max_batched_tokens: 16384}\n"
      "fleet: {replicas: 1}\n"
      "workload: {arrival: {process: burst, requests: 256}, prompt_tokens: 6000, output_tokens: 500}\n";
  const auto r = test::run(test::scenario(one));
  REQUIRE(r.drained);
  CHECK(r.tally->pools[0].crashes == 0.0);
  CHECK(r.all->completed == 256);
  // the capacity report still plans for every place held
  CHECK(r.report["capacity"]["sharing"]["device_context_gib"] == 40.0);
  // four replicas fill its places and hold four contexts: the same KV demand now runs it out
  const auto four = test::run(test::scenario(one, {"fleet.replicas=4", "workload.arrival.requests=1024"}));
  CHECK(four.tally->pools[0].crashes > 0.0);
}

TEST_CASE(
    "a lost device takes every replica on it, time-sliced ones and MIG slices too, their crashes stay their own") {
  // eight replicas, two devices of four (time-sliced four ways, or four 1g.20gb slices of an H100)
  for (const char* sharing : {"time_slicing: 4", "partition: 1g.20gb"}) {
    CAPTURE(sharing);
    const bool mig = std::string(sharing) == "partition: 1g.20gb";
    const Scenario sc = test::scenario(four_clients(sharing),
                                       {"fleet.replicas=8", mig ? "engine.gpu_memory_utilization=0.9" : "seed=1"});
    REQUIRE(sc.params().pools[0].device_tenants == 4);
    test::Started f(sc);
    Sim& s = f.s;
    replica_fail(s, 1, 1.0, false, kNone);  // a crash of 1: only 1
    for (int r = 0; r < 8; ++r) CHECK(s.rep[r].state == (r == 1 ? kStarting : kReady));
    CHECK(f.tally->pools[0].neighbour_failures == 0.0);
    const int32_t starts = s.pool[0].starts;
    replica_fail(s, 6, 2.0, true, kNone);  // the second device is lost: 4 to 7 restart on a new node
    for (int r = 0; r < 8; ++r) CHECK(s.rep[r].state == (r == 1 || r >= 4 ? kStarting : kReady));
    CHECK(f.tally->pools[0].neighbour_failures == 3.0);
    CHECK(s.pool[0].starts == starts + 1);
    // the pool loses a device in use at the device's rate, however many of its places are held
    for (int n : {1, 3, 5, 8}) {
      CAPTURE(n);
      test::Started g(test::scenario(four_clients(sharing), {"fleet.replicas=" + std::to_string(n),
                                                             mig ? "engine.gpu_memory_utilization=0.9" : "seed=1"}));
      CHECK(loss_units(g.s, 0) == (n + 3) / 4);
    }
    // over a run: the device fails at its MTBF, and every failure takes its three other replicas
    const Scenario flaky =
        test::scenario(four_clients(sharing), {"fleet.replicas=8", mig ? "engine.gpu_memory_utilization=0.9" : "seed=1",
                                               "fleet.failures={mtbf_hours: 0.05}", "duration_s=3600"});
    CHECK(flaky.params().pools[0].interruptions_per_s == doctest::Approx(1.0 / (0.05 * 3600)));
    const auto r = test::run(flaky);
    REQUIRE(r.drained);
    const PoolTally& t = r.tally->pools[0];
    CHECK(t.interruptions > 0);
    CHECK(t.neighbour_failures == 3.0 * t.interruptions);
    // one replica alone on its device meets the device's every failure: about 18 in the hour
    const auto alone = test::run(
        test::scenario(four_clients(sharing), {"fleet.replicas=1", mig ? "engine.gpu_memory_utilization=0.9" : "seed=1",
                                               "fleet.failures={mtbf_hours: 0.05}", "duration_s=3600", "warmup_s=0"}));
    CHECK(alone.tally->pools[0].interruptions >= 8);
    CHECK(alone.tally->pools[0].interruptions <= 30);
  }
}

TEST_CASE("time_slicing: 1 and mps: 1 share nothing, on a MIG slice or a time-sliced device too") {
  const std::string dir = std::string(FLEETSIM_SOURCE_DIR) + "/scenarios/";
  const std::vector<std::string> node_billed = {"duration_s=600", "fleet.pricing.billing=node"};
  const Scenario mig = load_scenario_file(dir + "mig-small-model.yaml", node_billed);
  for (const char* key : {"time_slicing=1", "mps=1"}) {
    CAPTURE(key);
    std::vector<std::string> sets = node_billed;
    sets.push_back(key);
    const Scenario with = load_scenario_file(dir + "mig-small-model.yaml", sets);
    CHECK(with.pools[0].replicas_per_device == mig.pools[0].replicas_per_device);
    CHECK(same(mig, with));
  }
  const Scenario ts = load_scenario_file(dir + "time-slicing.yaml", {"duration_s=600"});
  CHECK(same(ts, load_scenario_file(dir + "time-slicing.yaml", {"duration_s=600", "mps=1"})));
  // a cap on one client's threads is MPS too: not on a slice
  CHECK(test::input_error([&] {
          load_scenario_file(dir + "mig-small-model.yaml", {"mps={clients: 1, active_thread_percentage: 50}"});
        }).find("partition and mps are different ways") != std::string::npos);
}

TEST_CASE("MPS memory is not isolated: one client's KV growth OOMs the device, and its neighbours with it") {
  const std::string f = std::string(FLEETSIM_SOURCE_DIR) + "/scenarios/time-slicing.yaml";
  // at the scenario's 1 req/s MPS serves fast enough that the caches never meet; at 1.5 they do
  const auto r = test::run(load_scenario_file(f, {"time_slicing=1", "mps=2", "workload.arrival.rate_per_s=1.5"}));
  REQUIRE(r.drained);
  const PoolTally& t = r.tally->pools[0];
  MESSAGE("two MPS clients at 0.9 each: " << t.crashes << " OOM crashes, " << t.neighbour_failures
                                          << " neighbours taken down");
  CHECK(t.crashes > 0);
  CHECK(t.neighbour_failures == t.crashes);
  // at 0.45 each the budgets fit the device together: no crash
  const auto split = test::run(load_scenario_file(
      f, {"time_slicing=1", "mps=2", "workload.arrival.rate_per_s=1.5", "engine.gpu_memory_utilization=0.45"}));
  CHECK(split.tally->pools[0].crashes == 0);
  CHECK(split.tally->pools[0].neighbour_failures == 0);
}

TEST_CASE("MPS input errors are located") {
  const std::string base = four_clients("mps: 4");
  CHECK(test::error_of(base, {"time_slicing=2"}).find("time_slicing and mps are different ways") != std::string::npos);
  CHECK(test::error_of(base, {"partition=1g.10gb"}).find("partition and mps") != std::string::npos);
  CHECK(test::error_of(base, {"mps=49"}).find("mps") != std::string::npos);
  CHECK(test::error_of(base, {"mps={clients: 2, active_thread_percentage: 0}"}).find("active_thread_percentage") !=
        std::string::npos);
  CHECK(test::error_of(base, {"mps={clients: 2, threads: 50}"}).find("unknown key 'threads'") != std::string::npos);
  CHECK(test::error_of(base, {"device=mi300x-192gb"}).find("is an AMD GPU, which has no MPS") != std::string::npos);
  CHECK(test::error_of(base, {"engine.tensor_parallel=2"}).find("cannot also share a device") != std::string::npos);
  CHECK(test::error_of(base, {"engine.batching=static"}).find("MPS is modelled for continuous batching") !=
        std::string::npos);
  CHECK(test::error_of(base, {"engine.cuda_context_gib=-1"}).find("cuda_context_gib") != std::string::npos);
  CHECK(test::error_of(base).find("(no error)") != std::string::npos);
  // one client is no sharing: beside a partition or time slicing it is no conflict
  CHECK(test::error_of(base, {"mps=1", "partition=1g.10gb", "engine.gpu_memory_utilization=0.9"}) == "(no error)");
  CHECK(test::error_of(base, {"mps=1", "time_slicing=2"}) == "(no error)");
}

TEST_CASE(
    "the shipped comparison: MPS serves near a whole device's latency at a quarter of its price, and shares a fate") {
  const std::string f = std::string(FLEETSIM_SOURCE_DIR) + "/scenarios/mps-shared-fate.yaml";
  const auto calm =
      test::run(load_scenario_file(f, {"engine.on_kv_exhausted=preempt"}));  // documents refused, no crash
  const auto crashy = test::run(load_scenario_file(f));
  REQUIRE(calm.drained);
  REQUIRE(crashy.drained);
  auto p99 = [](const test::Result& r, const char* c) {
    return r.report["classes"][c]["latency_s"]["ttft"]["p99"].get<double>();
  };
  auto pool = [](const test::Result& r, const char* p) { return r.report["pools"][p]; };
  auto out_usd = [&](const test::Result& r, const char* p) {
    return pool(r, p)["cost"]["per_million_output_tokens_usd"].get<double>();
  };
  MESSAGE("p99 TTFT whole " << p99(calm, "chat_whole") << " s, MIG " << p99(calm, "chat_mig") << ", time slicing "
                            << p99(calm, "chat_ts") << ", MPS " << p99(calm, "chat_mps") << "; $/1M output "
                            << out_usd(calm, "whole") << ", " << out_usd(calm, "mig") << ", "
                            << out_usd(calm, "time_sliced") << ", " << out_usd(calm, "mps"));
  CHECK(p99(calm, "chat_mps") < 1.5 * p99(calm, "chat_whole"));
  CHECK(p99(calm, "chat_mps") < p99(calm, "chat_ts") / 3);
  CHECK(out_usd(calm, "mps") < out_usd(calm, "whole") / 3.5);
  // one device's price for four clients, whatever shares it
  CHECK(pool(calm, "mps")["cost"]["device_hours"].get<double>() == doctest::Approx(3300 / 3600.0));
  CHECK(pool(calm, "time_sliced")["cost"]["device_hours"].get<double>() == doctest::Approx(3300 / 3600.0));
  // the same four documents crash every pool's naive servers as often; only under MPS does each
  // crash take the device's three other clients, and their requests, with it
  for (const char* p : {"whole", "mig", "time_sliced", "mps"}) {
    CAPTURE(p);
    CHECK(pool(crashy, p)["fleet"]["crashes"].get<double>() == 16);
    CHECK(pool(crashy, p)["fleet"]["neighbour_failures"].get<double>() == (std::string(p) == "mps" ? 48 : 0));
  }
  auto retried = [&](const char* c) { return crashy.report["classes"][c]["requests"]["retried"].get<double>(); };
  MESSAGE("chat requests retried: whole " << retried("chat_whole") << ", MIG " << retried("chat_mig")
                                          << ", time slicing " << retried("chat_ts") << ", MPS "
                                          << retried("chat_mps"));
  CHECK(retried("chat_mps") > 5 * retried("chat_ts"));
  CHECK(p99(crashy, "chat_mps") > 2 * p99(crashy, "chat_ts"));
}

TEST_CASE("a shared device is paid while any replica is on it: a scale-down leaves two on two devices, both paid") {
  for (const char* sharing : {"time_slicing: 4", "mps: 4"}) {
    CAPTURE(sharing);
    Started f(sharing);
    Sim& s = f.s;
    Tally* tally = f.tally.get();
    const PoolTally& T = tally->pools[0];
    auto gap_over = [&](double t0, double t1) {  // share-gap replica-seconds accrued over [t0, t1)
      pool_advance(s, 0, t0);
      const double before = T.share_gap_s;
      pool_advance(s, 0, t1);
      return T.share_gap_s - before;
    };
    CHECK(gap_over(1.0, 11.0) == 0.0);  // two devices, full
    // the replicas removed are not device by device: one is left on each device
    for (int r : {1, 2, 3, 5, 6, 7}) replica_off(s, r, 11.0);
    CHECK(s.pool[0].n_prov == 2);
    CHECK(gap_over(11.0, 21.0) == doctest::Approx(10.0 * (2 * 4 - 2)));  // both devices paid whole
    replica_off(s, 4, 21.0);
    CHECK(gap_over(21.0, 31.0) == doctest::Approx(10.0 * (4 - 1)));  // one device
  }
}

TEST_CASE("a device shared five ways by a pool of two replicas needs room for two, not five") {
  // five 8B engines' weights, runtimes and activations (81.4 GiB) pass an H100; two do not
  const std::string path = std::string(FLEETSIM_SOURCE_DIR) + "/scenarios/time-slicing.yaml";
  CHECK_NOTHROW(load_scenario_file(path, {"time_slicing=5", "fleet.replicas=2"}));
  CHECK(test::input_error([&] {
          load_scenario_file(path, {"time_slicing=5", "fleet.replicas=5"});
        }).find("5 time-sliced replicas of llama-3.1-8b need 81.4 GiB") != std::string::npos);
  CHECK(test::input_error([&] {
          load_scenario_file(path, {"time_slicing=8", "fleet.replicas=5"});
        })
            .find("5 time-sliced replicas of llama-3.1-8b need 81.4 GiB for their weights, runtimes and activations "
                  "alone; h100-sxm-80gb has 79.2 (the pool's most replicas on one device's 8 places)") !=
        std::string::npos);
  // an autoscaled pool: its maximum
  CHECK(test::input_error([&] {
          load_scenario_file(path, {"time_slicing=5",
                                    "fleet.autoscale={min_replicas: 1, max_replicas: 5, signal: inflight, target: 8}"});
        }).find("5 time-sliced replicas") != std::string::npos);
}
