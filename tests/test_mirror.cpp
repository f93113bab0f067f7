// The CUDA backend's data path, on the CPU: parameters mirrored into another buffer with their
// arrays relocated, jobs ordered and launches planned for a device's occupancy and memory, and
// every simulation run from there (slots reused, compact results expanded) must give the tallies
// of the original parameters, bit for bit.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstring>
#include <memory>

#include "helpers.hpp"
#include "libsim/backend/mirror.hpp"

using namespace fleetsim;

TEST_CASE("relocated parameters and planned workspaces reproduce the host results exactly") {
  // a trace scenario and an empirical-length scenario: every array pointer is exercised
  const Scenario a = load_scenario_file(std::string(FLEETSIM_SOURCE_DIR) + "/scenarios/azure-code-bursty.yaml",
                                        {"duration_s=400", "warmup_s=40"});
  const Scenario b = load_scenario_file(std::string(FLEETSIM_SOURCE_DIR) + "/scenarios/chat-azure-empirical.yaml",
                                        {"duration_s=300", "warmup_s=30"});
  const Scenario c = load_default_scenario({"duration_s=300", "warmup_s=30", "engine.batching=static"});
  const Scenario d = load_scenario_file(
      std::string(FLEETSIM_SOURCE_DIR) + "/scenarios/chat-azure-empirical.yaml",
      {"duration_s=300", "warmup_s=30", "fleet.autoscale.min_replicas=1", "fleet.autoscale.max_replicas=4",
       "fleet.autoscale.signal=inflight", "fleet.autoscale.target=8", "fleet.failures.mtbf_hours=0.1"});
  const SimParams pa = a.params(), pb = b.params(), pc = c.params(), pd = d.params();
  std::vector<SimJob> jobs;
  for (uint32_t r = 0; r < 3; ++r) {
    jobs.push_back(SimJob{&pa, r});
    jobs.push_back(SimJob{&pb, r});
    jobs.push_back(SimJob{&pc, r});
    jobs.push_back(SimJob{&pd, r});
  }
  const Mirror m(jobs);
  CHECK(m.params.size() == 4);
  CHECK(m.arrays.size() == 11);  // 3 trace arrays + 2 scenarios x 2 empirical dists x (values, cdf)

  // the "device": a separate buffer holding the packed arrays; the originals are then wiped
  std::vector<char> device(m.array_bytes);
  m.pack([&](size_t off, const void* src, size_t bytes) { std::memcpy(device.data() + off, src, bytes); });
  const std::vector<SimParams> moved = m.relocated(device.data());
  CHECK(moved[0].classes[0].arrivals.trace_t_s != pa.classes[0].arrivals.trace_t_s);
  CHECK(static_cast<const void*>(moved[1].classes[0].prompt.values) >= static_cast<const void*>(device.data()));

  // every job run from the mirrored parameters in one reused workspace
  std::vector<uint8_t> ws;
  for (size_t j = 0; j < jobs.size(); ++j) {
    ws.assign(workspace_layout(moved[m.job_params[j]]).total, 0xAB);  // stale bytes: the core must reset them
    auto from_mirror = std::make_unique<Tally>();                     // value-initialised: padding bytes are zero
    simulate(moved[m.job_params[j]], jobs[j].replication, ws.data(), *from_mirror);
    HostWorkspace host;
    const auto direct = simulate_once(*jobs[j].params, jobs[j].replication, host);
    CHECK(std::memcmp(from_mirror.get(), direct.get(), sizeof(Tally)) == 0);
    CHECK(from_mirror->classes[0].completed > 0);
  }
}

// The launch plan of the CUDA backend (libsim/backend/backend_launch.hpp), checked without a device.
namespace {

Scenario conv(int replicas, const char* router = "least_outstanding") {
  return load_scenario_file(std::string(FLEETSIM_SOURCE_DIR) + "/scenarios/azure-conv-replay.yaml",
                            {"duration_s=300", "warmup_s=30", "fleet.replicas=" + std::to_string(replicas),
                             std::string("fleet.router=") + router});
}

}  // namespace

TEST_CASE("jobs are ordered by expected work, a configuration's replications kept together") {
  const Scenario s1 = conv(1), s4 = conv(4), s2 = conv(2), s4b = conv(4, "central_queue");
  const SimParams p1 = s1.params(), p4 = s4.params(), p2 = s2.params(), p4b = s4b.params();
  CHECK(expected_work(p4) == doctest::Approx(4 * expected_work(p1)));
  CHECK(expected_requests(p1) == doctest::Approx(double(p1.classes[0].arrivals.trace_n)));
  std::vector<SimJob> jobs;
  for (const SimParams* p : {&p1, &p4, &p2, &p4b})
    for (uint32_t r = 0; r < 2; ++r) jobs.push_back(SimJob{p, r});
  const std::vector<uint32_t> order = order_by_work(jobs);
  CHECK(order == std::vector<uint32_t>{2, 3, 6, 7, 4, 5, 0, 1});
}

TEST_CASE("a launch is sized from the device: occupancy, memory per job, compact results") {
  // an H200: 132 SMs of 64 warps; say 4 blocks of 64 threads resident (registers); 84 GB to use
  DeviceLimits h200;
  h200.sms = 132;
  h200.max_threads_per_sm = 2048;
  h200.blocks_per_sm = 4;
  h200.block = 64;
  h200.memory_budget = 84ull << 30;
  const uint64_t resident = 132 * 4 * 64;
  for (int replicas : {1, 10}) {
    const Scenario s = conv(replicas);
    const SimParams p = s.params();
    std::vector<SimJob> jobs;
    for (uint32_t r = 0; r < 60000; ++r) jobs.push_back(SimJob{&p, r});
    const LaunchPlan L = plan_launch(jobs, h200);
    const uint64_t ws = workspace_layout(p).total;
    CHECK(L.slot_stride >= ws + sizeof(Tally));
    CHECK(L.slot_stride < ws + sizeof(Tally) + 1024);
    CHECK(L.slot_stride % 256 == 0);
    CHECK((L.slot_stride / 256) % 2 == 1);  // neighbouring slots' fields on different channels
    CHECK(L.tally_offset >= ws);
    // every resident thread gets a slot while three quarters of the budget hold them
    const uint64_t by_memory = (h200.memory_budget - h200.memory_budget / 4) / L.slot_stride;
    CHECK(L.slots == std::min(resident, by_memory));
    CHECK(L.block == 64);
    CHECK(L.grid == (L.slots + 63) / 64);
    CHECK(L.occupancy == doctest::Approx(double(L.slots) / 32 / 132 / 64));
    // one class, one pool: a result is the header, one pool and one class, not 8 classes
    CHECK(L.result.classes == 1);
    CHECK(L.result.pools == 1);
    CHECK(L.result.bytes() < sizeof(Tally) / 6);
    CHECK(L.result.bytes() >= CompactLayout::header_bytes() + sizeof(PoolTally) + sizeof(ClassTally));
    CHECK(L.chunk == std::min<uint64_t>(jobs.size(), 8ull * L.slots));
    CHECK(L.device_bytes() <= h200.memory_budget);
    MESSAGE("H200, ", replicas, " replica(s): ", L.slots, " slots of ", L.slot_stride / 1024, " KiB, occupancy ",
            100 * L.occupancy, "%, result ", L.result.bytes() / 1024, " KiB per job (a whole tally is ",
            sizeof(Tally) / 1024, " KiB), ", L.device_bytes() >> 20, " MiB in all");
    if (replicas == 1)
      CHECK(L.slots == resident);  // small workspaces: occupancy is the limit
    else
      CHECK(L.slots < resident);  // large ones: memory is
  }
  // few jobs: no more slots than jobs
  const Scenario s = conv(2);
  const SimParams p = s.params();
  const std::vector<SimJob> few(100, SimJob{&p, 0});
  const LaunchPlan F = plan_launch(few, h200);
  CHECK(F.slots == 100);
  CHECK(F.chunk == 100);
  CHECK(F.block == 32);  // one-warp blocks: on 4 SMs rather than 2
  CHECK(F.grid == 4);
}

TEST_CASE("a planned launch run on the CPU gives the host tallies, bit for bit") {
  // mixed scenarios: a trace with several replica counts, two classes with empirical lengths
  const Scenario a = conv(1), b = conv(3, "central_queue");
  const Scenario c = load_scenario_file(std::string(FLEETSIM_SOURCE_DIR) + "/scenarios/interactive-and-batch.yaml",
                                        {"duration_s=300", "warmup_s=30"});
  // and 2026's mechanisms together: sessions (closed-loop and from a trace), disaggregated prefill,
  // speculative decoding
  const Scenario e = load_scenario_file(std::string(FLEETSIM_SOURCE_DIR) + "/tests/data/gpu-check-2026.yaml",
                                        {"duration_s=200", "warmup_s=20"});
  // and bounded prefix caches with prefix-aware routing: the trace's block arrays relocated
  const Scenario f = load_scenario_file(std::string(FLEETSIM_SOURCE_DIR) + "/scenarios/prefix-aware-routing.yaml",
                                        {"duration_s=90", "warmup_s=10"});
  const SimParams pa = a.params(), pb = b.params(), pc = c.params(), pe = e.params(), pf = f.params();
  REQUIRE(pc.n_classes > 1);
  REQUIRE(pe.pools[0].disagg == 1);
  bool store = false;  // a pool whose replicas share a prefix store
  for (int32_t i = 0; i < pe.n_pools; ++i) store = store || pe.pools[i].remote_entries > 0;
  REQUIRE(store);
  bool linked = false;  // a trace replayed as sessions: its links relocated, its row states reset per slot
  for (int32_t c = 0; c < pe.n_classes; ++c) linked = linked || pe.classes[c].arrivals.trace_parent != nullptr;
  REQUIRE(linked);
  REQUIRE(pf.pools[0].cache_entries > 0);
  std::vector<SimJob> jobs;
  for (uint32_t r = 0; r < 3; ++r)
    for (const SimParams* p : {&pa, &pb, &pc, &pe, &pf}) jobs.push_back(SimJob{p, r});
  DeviceLimits d;
  d.sms = 1;
  d.blocks_per_sm = 1;
  d.block = 32;
  const uint64_t stride_guess = workspace_layout(pb).total + workspace_layout(pc).total + workspace_layout(pe).total +
                                workspace_layout(pf).total + sizeof(Tally);
  d.memory_budget = 3 * stride_guess;  // a couple of slots: slots are reused by later jobs
  const LaunchPlan L = plan_launch(jobs, d);
  REQUIRE(L.slots >= 1);
  REQUIRE(L.slots < jobs.size());
  CHECK(L.result.classes == pc.n_classes);
  const Mirror m(jobs);
  std::vector<char> device(m.array_bytes);
  m.pack([&](size_t off, const void* src, size_t bytes) { std::memcpy(device.data() + off, src, bytes); });
  const std::vector<SimParams> moved = m.relocated(device.data());
  // the kernel, one thread after another: slot k % slots takes the k-th job of the order
  std::vector<uint8_t> slots(L.slot_bytes()), results(jobs.size() * L.result.bytes());
  for (size_t k = 0; k < jobs.size(); ++k) {
    uint8_t* ws = slots.data() + (k % L.slots) * L.slot_stride;
    Tally* scratch = reinterpret_cast<Tally*>(ws + L.tally_offset);
    const uint32_t j = L.order[k];
    simulate(moved[m.job_params[j]], jobs[j].replication, ws, *scratch);
    compact_store(*scratch, results.data() + k * L.result.bytes());
  }
  for (size_t k = 0; k < jobs.size(); ++k) {
    auto expanded = std::make_unique<Tally>();
    compact_expand(results.data() + k * L.result.bytes(), *expanded);
    HostWorkspace host;
    const auto direct = simulate_once(*jobs[L.order[k]].params, jobs[L.order[k]].replication, host);
    CHECK(std::memcmp(expanded.get(), direct.get(), sizeof(Tally)) == 0);
  }
}

TEST_CASE("auto picks the GPU only where the measured figures say it is worth more than the CPU threads") {
  // the two measured points (H200 against 16 host cores): 0.22x and 0.44x of 16 threads
  CHECK(gpu_worth_in_threads(2000) == doctest::Approx(3.52));
  CHECK(gpu_worth_in_threads(10000) == doctest::Approx(7.04));
  // proportional below the first, held above the last, rising in between
  CHECK(gpu_worth_in_threads(1000) == doctest::Approx(1.76));
  CHECK(gpu_worth_in_threads(0) == 0.0);
  CHECK(gpu_worth_in_threads(1000000) == doctest::Approx(7.04));
  const double mid = gpu_worth_in_threads(4472);  // the geometric middle: halfway in log
  CHECK(mid == doctest::Approx((3.52 + 7.04) / 2).epsilon(1e-3));
  // the measured machine's own sweeps: 16 threads beat the GPU at both sizes
  std::string why;
  CHECK_FALSE(auto_picks_cuda(10000, 16, &why));
  CHECK(why ==
        "10000 simulations, where one GPU ran as 7.0 CPU threads (measured on an H200, docs/model.md), "
        "against 16 CPU threads");
  CHECK_FALSE(auto_picks_cuda(2000, 16, nullptr));
  CHECK_FALSE(auto_picks_cuda(100000, 8, nullptr));
  // a 2-core host: the GPU from about 1,140 simulations (3.52 x 1,137 / 2,000 = 2.0)
  CHECK(auto_picks_cuda(10000, 2, nullptr));
  CHECK(auto_picks_cuda(1200, 2, nullptr));
  CHECK_FALSE(auto_picks_cuda(1100, 2, nullptr));
  CHECK_FALSE(auto_picks_cuda(1, 1, nullptr));
}
