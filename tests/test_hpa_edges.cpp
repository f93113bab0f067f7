// The autoscaler at Kubernetes' edges: the count a rate policy starts from when the period moved
// both ways, the recommendation recorded at the first evaluation, a percentage down truncated, the
// `ttft` signal read at the first token, replicas placed on a node still being obtained, and an
// evaluation with no ready replica to read a metric from.
#include <doctest/doctest.h>

#include <memory>
#include <string>
#include <vector>

#include "helpers.hpp"
#include "libsim/core/engine.hpp"
#include "libsim/report/timeline.hpp"

using namespace fleetsim;

namespace {

// One H100 pool on a linear step model; `fleet` and `workload` complete it.
std::string pool(const std::string& engine, const std::string& fleet, const std::string& workload,
                 double duration_s = 90) {
  return "name: edge\nseed: 1\nduration_s: " + std::to_string(duration_s) +
         "\nwarmup_s: 0\ndevice: h100-sxm-80gb\nmodel: llama-3.1-8b\n"
         "engine: {perf_model: linear, latency_at: engine, " +
         engine + "}\nfleet:\n" + fleet + workload;
}

// The mean provisioned replicas of each 15 s of the run.
std::vector<double> replicas_by_15s(const Scenario& s) {
  std::vector<double> out;
  for (const auto& row : run_timeline(s, int((s.duration_s - s.warmup_s) / 15.0), 1))
    out.push_back(row["mean_replicas"].get<double>());
  return out;
}

const std::string kIdle =
    "workload: {arrival: {process: burst, requests: 1, start_s: 1}, prompt_tokens: 100, output_tokens: 1}\n";

}  // namespace

TEST_CASE("HPA edges: a fleet started larger than it needs keeps its size for the scale-down window") {
  // Kubernetes records the current count at its first reconcile: 5 replicas stay 300 s
  const std::string fleet =
      "  replicas: 5\n  autoscale: {min_replicas: 1, max_replicas: 10, signal: inflight, target: 4, "
      "interval_s: 15}\n";
  const auto r = test::run(test::scenario(pool("max_num_seqs: 4, step_base_s: 0.01", fleet, kIdle, 345)));
  // the evaluations at 15 .. 300 s hold the 5; the one at 315 s, with the record out of the window, sheds 4
  const std::vector<double> m =
      replicas_by_15s(test::scenario(pool("max_num_seqs: 4, step_base_s: 0.01", fleet, kIdle, 345)));
  CHECK(m[0] == 5);
  CHECK(m[19] == 5);
  CHECK(m[21] == 1);
  CHECK(r.report["fleet"]["scale_downs"] == 4);
}

TEST_CASE("HPA edges: a percentage down truncates, as Kubernetes' int32(start x (1 - p))") {
  const std::string fleet =
      "  replicas: 5\n  autoscale: {min_replicas: 1, max_replicas: 10, signal: inflight, target: 4, interval_s: 15, "
      "scale_down_window_s: 0, cooldown_s: 0, scale_down_policy: {percent: 50, period_s: 15}}\n";
  const std::vector<double> m =
      replicas_by_15s(test::scenario(pool("max_num_seqs: 4, step_base_s: 0.01", fleet, kIdle)));
  REQUIRE(m.size() == 6);
  CHECK(m[0] == 5);
  CHECK(m[1] == 2);  // int(5 x 0.5), not 3
  CHECK(m[2] == 1);
}

TEST_CASE("HPA edges: a rate policy counts from the period's start, changes both ways included") {
  // 1 -> 3 at 15 s, back to 1 at 30 s; at 45 s the period began at 1 - 2 + 2 = 1: up to 3 again
  const std::string fleet =
      "  replicas: 1\n  autoscale: {min_replicas: 1, max_replicas: 40, signal: queue_depth, target: 1, "
      "interval_s: 15, scale_down_window_s: 0, cooldown_s: 0, scale_up_policy: {pods: 2, period_s: 60}, "
      "scale_down_policy: none}\n";
  const std::string work =
      "classes:\n  a: {arrival: {process: burst, requests: 20, start_s: 14.9}, prompt_tokens: 10, output_tokens: 50}\n"
      "  b: {arrival: {process: burst, requests: 20, start_s: 44.9}, prompt_tokens: 10, output_tokens: 50}\n";
  const std::vector<double> m =
      replicas_by_15s(test::scenario(pool("max_num_seqs: 1, step_base_s: 0.01", fleet, work, 105)));
  REQUIRE(m.size() == 7);
  CHECK(m[1] == 3);
  CHECK(m[2] == 1);
  CHECK(m[3] == 3);
}

TEST_CASE("HPA edges: the ttft signal reads first tokens as they come out, not at completion") {
  // 1 request/s of 300 tokens at 0.3 s a step: first tokens at about 0.8 s from the start, four
  // times the 0.2 s target, while no request completes for 90 s
  const std::string fleet =
      "  replicas: 1\n  autoscale: {min_replicas: 1, max_replicas: 20, signal: ttft, target: 0.2, interval_s: 15, "
      "scale_up_policy: none}\n";
  const std::string work =
      "workload: {arrival: {process: constant, rate_per_s: 1}, prompt_tokens: 10, output_tokens: 300}\n";
  const std::vector<double> m =
      replicas_by_15s(test::scenario(pool("max_num_seqs: 256, step_base_s: 0.3", fleet, work)));
  CHECK(m[0] == 1);
  CHECK(m[1] > 1);  // started at 15 s
}

TEST_CASE("HPA edges: a replica placed on a node or device still being obtained waits for it") {
  // 12 long requests on one replica of one sequence: at 15 s ten more start, 7 on the first node
  // (up) and 3 on a second one that must be provisioned (120 s) and pulled (110 s) first
  const std::string nodes =
      "  replicas: 1\n  router: central_queue\n  autoscale: {min_replicas: 1, max_replicas: 16, signal: queue_depth, "
      "target: 1, interval_s: 15, scale_up_policy: none}\n  pricing: {billing: node}\n"
      "  nodes: {scale_down_unneeded_s: 600}\n";
  const std::string work =
      "workload: {arrival: {process: burst, requests: 12, start_s: 1}, prompt_tokens: 10, output_tokens: 2000}\n";
  const auto r = test::run(test::scenario(pool("max_num_seqs: 1, step_base_s: 0.1", nodes, work, 400)));
  const Scenario s = test::scenario(pool("max_num_seqs: 1, step_base_s: 0.1", nodes, work, 400));
  const ColdStartParams& c = s.pools[0].cold;
  const double node_s = 15 + c.provision_s + c.image_pull_s;
  MESSAGE("second node up at " << node_s << " s");
  // the 8th first token (the first on the second node) comes after that node is up
  CHECK(hist_quantile(r.all->ttft, 8.5 / 12) > node_s);
  CHECK(hist_quantile(r.all->ttft, 6.5 / 12) < node_s);
  // time slicing: the third replica shares the second device, which its neighbour is still obtaining
  const std::string sliced =
      "  replicas: 1\n  router: central_queue\n  autoscale: {min_replicas: 1, max_replicas: 16, signal: queue_depth, "
      "target: 1, interval_s: 15, scale_up_policy: none}\n";
  const std::string five =
      "workload: {arrival: {process: burst, requests: 5, start_s: 1}, prompt_tokens: 10, output_tokens: 2000}\n";
  const auto ts =
      test::run(test::scenario("time_slicing: 2\n" + pool("max_num_seqs: 1, step_base_s: 0.1", sliced, five, 400)));
  CHECK(hist_quantile(ts.all->ttft, 2.5 / 5) > node_s);
}

TEST_CASE("HPA edges: with no ready replica to read the starts stay, and with none at all demand starts one") {
  // the HPA reads utilization from ready pods only: with none it has no metric and changes nothing
  // (kubernetes/kubernetes pkg/controller/podautoscaler/replica_calculator.go). The counts are set
  // by hand as a reclaim that took every ready replica of a central queue's pool would leave them.
  const std::string fleet =
      "  replicas: 2\n  router: central_queue\n  autoscale: {min_replicas: 0, max_replicas: 8, signal: busy, "
      "target: 0.6, interval_s: 15}\n";
  const auto p = std::make_unique<SimParams>(test::scenario(pool("step_base_s: 0.01", fleet, kIdle)).params());
  std::vector<uint8_t> ws(workspace_layout(*p).total, 0);
  auto tally = std::make_unique<Tally>();
  tally_clear(*tally, p->n_pools, p->n_classes);
  Sim s = sim_bind(*p, 0, ws.data(), tally.get());
  PoolState& ps = s.pool[0];
  ps.last_eval = 0.0;
  ps.n_ready = 0;
  ps.n_starting = 3;
  ps.busy_acc = 12.0;  // the reclaimed replicas were busy until they went
  CHECK(autoscale_desired(s, 0, 15.0, 3) == 3);
  ps.n_starting = 0;  // nothing at all: what was busy asks for one, as an activator's cold start
  CHECK(autoscale_desired(s, 0, 15.0, 0) == 1);
  ps.busy_acc = 0.0;  // and nothing read, with no work anywhere, asks for none
  CHECK(autoscale_desired(s, 0, 15.0, 0) == 0);
}
