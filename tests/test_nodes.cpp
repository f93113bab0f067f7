// Nodes under an autoscaled pool billed by the node (docs/model.md, "Nodes"): placement on nodes
// that are up, the cluster's removal of empty nodes, pinned nodes, the node limit, the
// scale-down order, and the ledger's node-hours, each against a hand computation.
#include <doctest/doctest.h>

#include <memory>
#include <vector>

#include "helpers.hpp"
#include "libsim/core/engine.hpp"
#include "libsim/cost/ledger.hpp"

using namespace fleetsim;

namespace {

// tp 4 on 8-GPU H100 nodes: two replicas a node, three nodes' worth of slots
const char* kNodes =
    "name: nodes\nduration_s: 1000\nwarmup_s: 0\ndevice: h100-sxm-80gb\nmodel: llama-3.1-70b\n"
    "engine: {tensor_parallel: 4}\n"
    "fleet:\n  replicas: 0\n"
    "  autoscale: {min_replicas: 0, max_replicas: 6, signal: inflight, target: 4}\n"
    "  pricing: {billing: node}\n"
    "  nodes: {scale_down_unneeded_s: 10}\n"
    "workload: {arrival: {process: poisson, rate_per_s: 1}, prompt_tokens: 100, output_tokens: 10}\n";

// One simulation's state, driven by hand instead of by the event loop.
struct Bench {
  std::unique_ptr<SimParams> p;
  std::vector<uint8_t> ws;
  std::unique_ptr<Tally> tally = std::make_unique<Tally>();
  Sim s{};
  explicit Bench(const std::vector<std::string>& sets = {}) {
    p = std::make_unique<SimParams>(test::scenario(kNodes, sets).params());
    ws.assign(workspace_layout(*p).total, 0);
    tally_clear(*tally, p->n_pools, p->n_classes);
    s = sim_bind(*p, 0, ws.data(), tally.get());
  }
  const PoolState& ps() const { return s.pool[0]; }
};

}  // namespace

TEST_CASE("a tracked pool's nodes: placed on nodes that are up, removed a while after they empty") {
  Bench b;
  REQUIRE(b.p->pools[0].replicas_per_node == 2);
  Sim& s = b.s;
  REQUIRE(replica_start(s, 0, 0.0));  // slot 0: a new node
  REQUIRE(replica_start(s, 0, 0.0));  // slot 1: the same node, which the cluster is still adding
  REQUIRE(replica_start(s, 0, 0.0));  // slot 2: a second node
  CHECK(b.ps().nodes_up == 2);
  // a replica on a node still being added waits for its provisioning and image pull
  CHECK(s.rep[1].t_next == doctest::Approx(s.rep[0].t_next));
  CHECK(s.rep[2].t_next == doctest::Approx(s.rep[0].t_next));

  replica_off(s, 2, 100.0);  // node 1 empty: removed at 110 unless used again
  CHECK(b.ps().nodes_unneeded == 1);
  CHECK(b.ps().next_node_release == 110.0);
  REQUIRE(replica_start(s, 0, 105.0));  // back onto node 1 (up, empty), without provisioning
  CHECK(s.rep[2].state == kStarting);
  CHECK(b.ps().nodes_unneeded == 0);
  replica_off(s, 2, 200.0);
  pool_advance(s, 0, 300.0);  // node 1 went at 210
  CHECK(b.ps().nodes_up == 1);
  const PoolTally& T = b.tally->pools[0];
  CHECK(T.node_s == doctest::Approx(300.0 + 210.0));
  CHECK(T.node_unneeded_s == doctest::Approx(5.0 + 10.0));
  CHECK(T.node_pinned_s == 0.0);
  // every billed device on them: never fewer than the replicas' devices
  CHECK(T.node_s * 8.0 >= T.replica_s * 4.0);
  // a replica on a node that is up skips provisioning (120 s) and the image pull (60 s)
  const double first = s.rep[0].t_next;
  replica_off(s, 1, 400.0);
  REQUIRE(replica_start(s, 0, 400.0));
  CHECK(s.rep[1].t_next - 400.0 == doctest::Approx(first - 180.0));
}

TEST_CASE("a pinned node is never removed, a node limit refuses a replica that needs a new node") {
  Bench pinned({"fleet.nodes.pinned=1"});
  Sim& s = pinned.s;
  REQUIRE(replica_start(s, 0, 0.0));
  replica_off(s, 0, 50.0);
  pool_advance(s, 0, 1000.0);
  CHECK(pinned.ps().nodes_up == 1);
  CHECK(pinned.tally->pools[0].node_s == doctest::Approx(1000.0));
  CHECK(pinned.tally->pools[0].node_pinned_s == doctest::Approx(950.0));

  Bench capped({"fleet.nodes.max_nodes=1"});
  REQUIRE(replica_start(capped.s, 0, 0.0));
  REQUIRE(replica_start(capped.s, 0, 0.0));  // the node's second slot
  CHECK(!replica_start(capped.s, 0, 0.0));   // a third needs a second node
  CHECK(capped.tally->pools[0].unschedulable == 1.0);
}

TEST_CASE("scale-down takes from the fullest node, as a ReplicaSet does, or from the emptiest") {
  for (bool empty_first : {false, true}) {
    Bench b(empty_first ? std::vector<std::string>{"fleet.nodes.scale_down_order=empty_nodes_first"}
                        : std::vector<std::string>{});
    Sim& s = b.s;
    for (int k = 0; k < 3; ++k) REQUIRE(replica_start(s, 0, 0.0));
    for (int r = 0; r < 3; ++r) replica_ready(s, r, 400.0);
    scale_down_one(s, 0, 500.0);  // idle replicas go at once
    if (empty_first) {
      CHECK(s.rep[2].state == kOff);  // node 1 empties and can be removed
      CHECK(b.ps().nodes_unneeded == 1);
    } else {
      CHECK(s.rep[2].state == kReady);  // one of node 0's two goes: both nodes stay up
      CHECK((s.rep[0].state == kOff) + (s.rep[1].state == kOff) == 1);
      CHECK(b.ps().nodes_unneeded == 0);
    }
  }
}

TEST_CASE("an autoscaled pool billed by the node pays every device of the nodes it kept up") {
  const auto r = test::run(
      test::scenario(kNodes, {"workload.arrival.rate_per_s=4", "fleet.replicas=1", "fleet.autoscale.min_replicas=1"}));
  const Json& pool = r.report["ledger"]["pools"]["default"];
  const Json& n = pool["node_autoscaling"];
  const double node_h = n["node_hours"].get<double>();
  CHECK(node_h == doctest::Approx(r.tally->pools[0].node_s / 3600.0));
  CHECK(n["mean_nodes"].get<double>() == doctest::Approx(node_h * 3600.0 / 1000.0));
  // billed device-hours: the nodes' devices, of which those no replica held are stranded
  const double replica_h = r.tally->pools[0].replica_s * 4.0 / 3600.0;
  CHECK(pool["billed_device_hours"].get<double>() == doctest::Approx(node_h * 8.0));
  CHECK(pool["buckets"]["stranded"]["device_hours"].get<double>() == doctest::Approx(node_h * 8.0 - replica_h));
  double sum = 0;
  for (const auto& [k, v] : pool["buckets"].items()) sum += v["usd"].get<double>();
  CHECK(sum == doctest::Approx(pool["effective_usd"].get<double>()));
}

TEST_CASE("fleet.nodes inputs that cannot be right are located errors") {
  CHECK(test::error_of(kNodes, {"engine.tensor_parallel=16", "fleet.nodes.max_nodes=1"})
            .find("spans 2 nodes of 8: max_nodes must be at least that") != std::string::npos);
  // a quota the starting fleet or its floor does not fit in (2 replicas to a node)
  CHECK(test::error_of(kNodes, {"fleet.replicas=5", "fleet.autoscale.min_replicas=4", "fleet.nodes.max_nodes=2"})
            .find("5 replicas (5 at the start, 4 at least) need 3 nodes of 2 replicas each: max_nodes must be at "
                  "least that") != std::string::npos);
  CHECK(test::error_of(kNodes, {"fleet.nodes.pinned=3", "fleet.nodes.max_nodes=2"})
            .find("3 pinned nodes exceed max_nodes 2") != std::string::npos);
  CHECK(test::error_of(kNodes, {"fleet.nodes.scale_down_order=fullest"})
            .find("expected one of: replicaset, empty_nodes_first") != std::string::npos);
  CHECK(test::error_of(kNodes, {"fleet.pricing.billing=device"})
            .find("needs fleet.autoscale and pricing.billing: node") != std::string::npos);
}
