// The CUDA backend's data path, on the CPU: parameters mirrored into another buffer with their
// arrays relocated, jobs cut into waves with workspaces at planned offsets, and every
// simulation run from there must give the tallies of the original parameters, bit for bit.
#include <doctest/doctest.h>

#include <cstring>
#include <memory>

#include "helpers.hpp"
#include "libsim/mirror.hpp"

using namespace fleetsim;

TEST_CASE("relocated parameters and planned workspaces reproduce the host results exactly") {
  // a trace scenario and an empirical-length scenario: every array pointer is exercised
  const Scenario a = load_scenario_file(std::string(FLEETSIM_SOURCE_DIR) + "/scenarios/azure-code-bursty.yaml",
                                        {"duration_s=400", "warmup_s=40"});
  const Scenario b = load_scenario_file(std::string(FLEETSIM_SOURCE_DIR) + "/scenarios/chat-azure-empirical.yaml",
                                        {"duration_s=300", "warmup_s=30"});
  const Scenario c = load_default_scenario({"duration_s=300", "warmup_s=30", "engine.batching=static"});
  const Scenario d = load_scenario_file(std::string(FLEETSIM_SOURCE_DIR) + "/scenarios/chat-azure-empirical.yaml",
                                        {"duration_s=300", "warmup_s=30", "fleet.autoscale.min_replicas=1",
                                         "fleet.autoscale.max_replicas=4", "fleet.autoscale.signal=inflight",
                                         "fleet.autoscale.target=8", "fleet.failures.mtbf_hours=0.1"});
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

  // waves under a budget that forces several of them
  const auto waves = plan_waves(jobs, 3 * workspace_layout(pa).total);
  CHECK(waves.size() > 1);
  size_t covered = 0;
  for (const auto& w : waves) {
    CHECK(w.first == covered);
    covered = w.last;
    std::vector<uint8_t> ws(w.workspace_bytes);
    for (size_t j = w.first; j < w.last; ++j) {
      auto from_mirror = std::make_unique<Tally>();  // value-initialised: padding bytes are zero
      simulate(moved[m.job_params[j]], jobs[j].replication, ws.data() + w.workspace_offset[j - w.first], *from_mirror);
      HostWorkspace host;
      const auto direct = simulate_once(*jobs[j].params, jobs[j].replication, host);
      CHECK(std::memcmp(from_mirror.get(), direct.get(), sizeof(Tally)) == 0);
      CHECK(from_mirror->classes[0].completed > 0);
    }
  }
  CHECK(covered == jobs.size());
}
