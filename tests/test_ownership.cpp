// Owning, colocating and whole-node billing: each cost part is quantity x unit price, the parts
// sum to the owned line, hand-computed capex, energy and stranded devices, the facility's power
// bound, and the seeds' claims (three replicas on an 8-GPU node pay for eight; a rack built for
// ordinary servers holds one accelerator node).
#include <doctest/doctest.h>

#include <memory>

#include "helpers.hpp"
#include "libsim/core/engine.hpp"
#include "libsim/cost/ledger.hpp"
#include "libsim/input/input_file.hpp"
#include "libsim/report/report.hpp"

using namespace fleetsim;

namespace {

double num(const Json& j) { return j.get<double>(); }

const std::string kOwned =
    "name: own\nseed: 3\nduration_s: 1200\nwarmup_s: 120\ndevice: h100-sxm-80gb\nmodel: llama-3.1-8b\n"
    "fleet:\n  replicas: 3\n  pricing:\n    owned:\n      node_capex_usd: 250000\n      refresh_years: 4\n"
    "      power: {idle_kw_per_device: 0.1, host_kw_per_node: 3.0, pue: 1.4, usd_per_kwh: 0.12}\n"
    "      space_usd_per_node_month: 600\n      facility: {rack_kw: 15, racks: 1}\n"
    "workload:\n  arrival: {process: poisson, rate_per_s: 4}\n  prompt_tokens: 500\n  output_tokens: 100\n";

}  // namespace

TEST_CASE("owned devices: the parts are quantity x price, they sum to the owned line, and match a hand count") {
  const auto r = test::run(test::scenario(kOwned));
  const Json& p = r.report["ledger"]["pools"]["default"];
  const Json& w = p["ownership"];
  const double wh = 1080.0 / 3600.0;  // measured window, hours

  // three one-GPU replicas on 8-GPU nodes: one node bought, its eight devices paid for
  CHECK(w["owned_nodes"].get<int>() == 1);
  CHECK(num(w["owned_device_hours"]) == doctest::Approx(8 * wh));
  CHECK(num(w["stranded_device_hours"]) == doctest::Approx(5 * wh));
  CHECK(num(p["buckets"]["stranded"]["device_hours"]) == doctest::Approx(5 * wh));
  CHECK(num(p["billed_device_hours"]) == doctest::Approx(8 * wh));

  double sum = 0;
  for (const auto& c : w["components"]) {
    CHECK(num(c["usd"]) == doctest::Approx(num(c["quantity"]) * num(c["usd_per_unit"])));
    sum += num(c["usd"]);
  }
  CHECK(sum == doctest::Approx(num(w["usd"])));
  REQUIRE(p["pricing"].size() == 1);
  const Json& line = p["pricing"][0];
  CHECK(line["category"] == "owned");
  CHECK(num(line["effective_usd"]) == doctest::Approx(sum));
  CHECK(num(line["device_hours"]) * num(line["effective_usd_per_hour"]) == doctest::Approx(num(line["effective_usd"])));
  double buckets = 0;
  for (auto it = p["buckets"].begin(); it != p["buckets"].end(); ++it) buckets += num(it.value()["usd"]);
  CHECK(buckets == doctest::Approx(num(p["effective_usd"])));

  // capex: $250,000 over 4 years of 8,766 h, per device of the node, for 8 devices x the window
  const Json& capex = w["components"][0];
  CHECK(capex["name"] == "capex");
  CHECK(num(capex["usd"]) == doctest::Approx(250000.0 / (4 * 8766.0) * wh));
  // energy: busy devices at 0.7 kW, the rest of the 8 at 0.1 kW, the host's 3 kW, x PUE 1.4
  const double busy = num(w["busy_device_hours"]);
  CHECK(busy == doctest::Approx(num(w["provisioned_device_hours"]) - num(p["buckets"]["idle_waste"]["device_hours"]) -
                                num(p["buckets"]["idle_headroom"]["device_hours"]) -
                                num(p["buckets"]["cold_start"]["device_hours"])));
  const Json& energy = w["components"][1];
  CHECK(energy["name"] == "energy");
  CHECK(num(energy["quantity"]) == doctest::Approx((busy * 0.7 + (8 * wh - busy) * 0.1 + wh * 3.0) * 1.4));
  // space: one node for the window's share of a month
  CHECK(num(w["components"][2]["usd"]) == doctest::Approx(600.0 * wh / (8766.0 / 12)));
  // break-even: the owned dollars over what the same owned hours cost on demand at $3.00
  CHECK(num(w["break_even_utilization"]) == doctest::Approx(sum / (8 * wh * 3.0)));
  CHECK(num(w["rent_same_hours_usd"]) == doctest::Approx(3 * wh * 3.0));

  // the years: capex paid once in four years, the running costs and rent scaled to a year
  const Json& ys = w["years"];
  REQUIRE(ys.size() == 4);
  CHECK(num(ys[0]["capex_paid_usd"]) == 250000);
  for (int y = 1; y < 4; ++y) CHECK(num(ys[y]["capex_paid_usd"]) == 0);
  double own = 0, rent = 0;
  for (const auto& y : ys) {
    own += num(y["capex_paid_usd"]) + num(y["energy_usd"]) + num(y["space_usd"]);
    rent += num(y["rent_usd"]);
    CHECK(num(y["own_cumulative_usd"]) == doctest::Approx(own));
    CHECK(num(y["rent_cumulative_usd"]) == doctest::Approx(rent));
    CHECK(num(y["rent_usd"]) == doctest::Approx(3 * 3.0 * 8766.0));  // 3 devices all year at $3.00
  }
}

TEST_CASE("a rack built for ordinary servers holds one 8-GPU node: the facility bounds the estate") {
  // a node draws 8 x 0.7 + 3 = 8.6 kW; a 15 kW rack holds one
  CHECK(test::error_of(kOwned, {"fleet.replicas=8"}) == "(no error)");
  const std::string e = test::error_of(kOwned, {"fleet.replicas=9"});
  CHECK(e.find("the facility powers 1 node of h100-sxm-80gb (1 rack of 15 kW; a node draws up to 8.60 kW), but 9 "
               "replicas need 2 nodes") != std::string::npos);
  CHECK(test::error_of(kOwned, {"fleet.replicas=9", "fleet.pricing.owned.facility.racks=2"}) == "(no error)");
  CHECK(test::error_of(kOwned, {"fleet.replicas=9", "fleet.pricing.owned.facility.rack_kw=17.2"}) == "(no error)");
}

TEST_CASE("renting by the node: three replicas on 8-GPU nodes pay for eight devices") {
  const std::string y =
      "name: node\nseed: 1\nduration_s: 600\nwarmup_s: 60\ndevice: h100-sxm-80gb\nmodel: llama-3.1-8b\n"
      "fleet: {replicas: 3, pricing: {billing: node}}\n"
      "workload: {arrival: {process: poisson, rate_per_s: 2}, prompt_tokens: 300, output_tokens: 50}\n";
  const auto r = test::run(test::scenario(y));
  const Json& p = r.report["ledger"]["pools"]["default"];
  const double wh = 540.0 / 3600.0;
  CHECK(p["nodes"].get<int>() == 1);
  CHECK(num(p["billed_device_hours"]) == doctest::Approx(8 * wh));
  CHECK(num(p["buckets"]["stranded"]["device_hours"]) == doctest::Approx(5 * wh));
  CHECK(num(p["effective_usd"]) == doctest::Approx(8 * wh * 3.0));
  // by the device, the same fleet pays for three
  const auto d = test::run(test::scenario(y, {"fleet.pricing.billing=device"}));
  CHECK(num(d.report["ledger"]["pools"]["default"]["effective_usd"]) == doctest::Approx(3 * wh * 3.0));
  CHECK(num(d.report["ledger"]["pools"]["default"]["buckets"]["stranded"]["device_hours"]) == 0);
}

TEST_CASE("MIG slices rented by the node cost what the node does, whatever the profile") {
  // the catalog prices a slice by its compute (1/7 a slice); four 1g.20gb slices to a device hold
  // 4/7 of it, yet a node paid by the node costs its eight devices
  const std::string y =
      "name: mig\nseed: 1\nduration_s: 600\nwarmup_s: 60\ndevice: h100-sxm-80gb\nmodel: llama-3.2-1b\n"
      "fleet: {replicas: 3, pricing: {billing: node}}\n"
      "workload: {arrival: {process: poisson, rate_per_s: 2}, prompt_tokens: 300, output_tokens: 50}\n";
  const double wh = 540.0 / 3600.0, device_usd = test::scenario(y).pools[0].device.usd_per_hour;
  for (const char* profile : {"1g.10gb", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb"}) {
    CAPTURE(profile);
    const auto r = test::run(test::scenario(y, {std::string("partition=") + profile}));
    const Json& p = r.report["ledger"]["pools"]["default"];
    CHECK(p["nodes"].get<int>() == 1);
    CHECK(num(p["effective_usd"]) == doctest::Approx(8 * wh * device_usd));
  }
}

TEST_CASE("packing replicas onto nodes") {
  const std::string base =
      "name: pack\nduration_s: 100\ndevice: h100-sxm-80gb\nmodel: llama-3.1-8b\nfleet: {replicas: 1}\n"
      "workload: {arrival: {process: poisson, rate_per_s: 1}, prompt_tokens: 100, output_tokens: 10}\n";
  const PoolSpec one = test::scenario(base).pools[0];
  CHECK(one.nodes_for(3) == 1);
  CHECK(one.nodes_for(8) == 1);
  CHECK(one.nodes_for(9) == 2);
  const PoolSpec tp4 = test::scenario(base, {"engine.tensor_parallel=4"}).pools[0];
  CHECK(tp4.nodes_for(2) == 1);  // two 4-device groups share a node
  CHECK(tp4.nodes_for(3) == 2);
  const PoolSpec tp16 = test::scenario(base, {"model=llama-3.1-70b", "engine.tensor_parallel=16"}).pools[0];
  CHECK(tp16.nodes_for(1) == 2);  // a replica wider than a node spans whole nodes
  const PoolSpec mig = test::scenario(base, {"model=qwen3-0.6b", "partition=1g.10gb"}).pools[0];
  CHECK(mig.units_per_node() == doctest::Approx(56));  // seven slices on each of 8 devices
  CHECK(mig.nodes_for(56) == 1);
  CHECK(mig.nodes_for(57) == 2);
}

TEST_CASE("ownership inputs that cannot be right are located errors") {
  CHECK(test::error_of(kOwned, {"fleet.pricing.committed_replicas=2"}).find("committed_replicas is rented capacity") !=
        std::string::npos);
  CHECK(test::error_of(kOwned, {"fleet.pricing.owned.power.idle_kw_per_device=0.9"}).find("less idle than busy") !=
        std::string::npos);
  CHECK(test::error_of(kOwned, {"fleet.pricing.owned.refresh_years=0"}).find("refresh_years") != std::string::npos);
  const std::string fixed =
      "name: s\nduration_s: 100\ndevice: h100-sxm-80gb\nmodel: llama-3.1-8b\n"
      "fleet: {replicas: 2, pricing: {billing: node}, nodes: {pinned: 1}}\n"
      "workload: {arrival: {process: poisson, rate_per_s: 1}, prompt_tokens: 100, output_tokens: 10}\n";
  CHECK(test::error_of(fixed).find("needs fleet.autoscale and pricing.billing: node") != std::string::npos);
}

TEST_CASE("colocated devices pay for contracted power, not for space") {
  const auto r =
      test::run(test::scenario(kOwned, {"fleet.pricing={colocated: {node_capex_usd: 250000, refresh_years: 4, "
                                        "usd_per_kw_month: 200, power: {idle_kw_per_device: 0.1, "
                                        "host_kw_per_node: 3.0, usd_per_kwh: 0}}}"}));
  const Json& w = r.report["ledger"]["pools"]["default"]["ownership"];
  CHECK(w["model"] == "colocated");
  REQUIRE(w["components"].size() == 2);  // capex and colocation (energy is in the kW price)
  const Json& colo = w["components"][1];
  CHECK(colo["name"] == "colocation");
  const double wh = 1080.0 / 3600.0;
  CHECK(num(colo["quantity"]) == doctest::Approx(8.6 * wh / (8766.0 / 12)));  // one node's 8.6 kW for the window
  CHECK(num(colo["usd"]) == doctest::Approx(num(colo["quantity"]) * 200));
}

TEST_CASE("a failed owned device takes a spare, or waits for the first device back from repair") {
  // one spare, ten days' repair (in seconds, for short numbers): by hand
  auto p = std::make_unique<SimParams>();
  p->pools[0].repair_s = 10.0;
  p->pools[0].spares = 1;
  PoolState ps{};
  ps.shelf = 1;
  Sim s{};
  s.p = p.get();
  s.pool = &ps;
  CHECK(await_device(s, 0, 0.0) == 0.0);   // the spare; the failed device is back at 10
  CHECK(await_device(s, 0, 2.0) == 8.0);   // no spare: the one back at 10; its own is back at 12
  CHECK(await_device(s, 0, 5.0) == 7.0);   // the one back at 12; its own at 15
  CHECK(await_device(s, 0, 20.0) == 0.0);  // the device back at 15 is on the shelf
  CHECK(ps.n_repair == 1);
  // without spares every failure waits its own repair
  p->pools[0].spares = 0;
  PoolState none{};
  s.pool = &none;
  for (double t : {0.0, 1.0, 3.0}) CHECK(await_device(s, 0, t) == 10.0);
  CHECK(none.n_repair == 0);
}

namespace {
// four owned replicas failing about daily, a day's repair and no spare, over two days
const std::string kRepair =
    "name: repair\nseed: 5\nduration_s: 172800\nwarmup_s: 0\ndevice: h100-sxm-80gb\nmodel: llama-3.1-8b\n"
    "fleet:\n  replicas: 4\n  failures: {mtbf_hours: 24}\n  pricing:\n    owned:\n      node_capex_usd: 250000\n"
    "      refresh_years: 4\n      power: {idle_kw_per_device: 0.1, usd_per_kwh: 0.12}\n"
    "      repair: {days: 1, spares: 0}\n"
    "workload: {arrival: {process: poisson, rate_per_s: 4}, prompt_tokens: 500, output_tokens: 100}\n";
}  // namespace

TEST_CASE("in a small owned estate a failure is a capacity event, spares buy the capacity back") {
  const std::string& y = kRepair;
  double last_availability = -1, last_ttft = 0;
  for (int spares : {0, 1, 2, 64}) {
    CAPTURE(spares);
    const auto r = test::run(test::scenario(y, {"fleet.pricing.owned.repair.spares=" + std::to_string(spares)}));
    const Json& rp = r.report["ledger"]["pools"]["default"]["ownership"]["repair"];
    const double failures = num(rp["failures"]), waited = num(rp["awaiting_device_hours"]);
    REQUIRE(failures >= 4);                   // 4 replicas x 48 h at a 24 h MTBF: about 8
    CHECK(waited <= failures * 24.0 + 1e-9);  // no failure waits longer than a repair
    CHECK(num(rp["availability"]) == doctest::Approx(std::max(0.0, 1.0 - waited / (4 * 48.0))));
    CHECK(num(rp["availability"]) >= last_availability);  // more spares, more of the estate serving
    last_availability = num(rp["availability"]);
    const double ttft = num(r.report["latency_s"]["ttft"]["mean"]);
    if (spares == 0) {
      CHECK(waited > 0.5 * failures * 24.0);  // most failures wait a whole repair
      last_ttft = ttft;
    }
    if (spares == 64) {
      CHECK(waited == 0);  // always a spare: every failure is a restart
      CHECK(num(rp["availability"]) == 1.0);
      CHECK(ttft < 0.01 * last_ttft);  // without spares the queue grew for hours
    }
  }
  CHECK(test::error_of(y, {"fleet.failures=null"}).find("repair needs failures") != std::string::npos);
}

TEST_CASE("an owned pool's rented replicas fail as rented ones: the cloud replaces them, only owned devices wait") {
  // one owned device of four replicas (three rented on demand), failing every 6 h on average
  // over two days: about 32 failures, a quarter of them on the owned device. Only those go to
  // repair, so the wait fits in the owned device's 48 h; the rented ones come back on new nodes
  const auto r = test::run(test::scenario(
      kRepair, {"fleet.failures.mtbf_hours=6", "fleet.pricing.owned.replicas=1", "workload.arrival.rate_per_s=1"}));
  const Json& L = r.report["ledger"]["pools"]["default"];
  const Json& rp = L["ownership"]["repair"];
  const double owned_failures = num(rp["failures"]), all = num(r.report["fleet"]["interruptions"]);
  const double waited = num(rp["awaiting_device_hours"]);
  MESSAGE(owned_failures << " of " << all << " failures on the owned device, " << waited << " h waited");
  REQUIRE(all >= 16);
  CHECK(owned_failures >= 1);
  CHECK(owned_failures < 0.5 * all);  // a quarter expected: far from all of them
  CHECK(waited <= 48.0 + 1e-9);
  CHECK(waited <= owned_failures * 24.0 + 1e-9);
  CHECK(num(rp["availability"]) == doctest::Approx(std::max(0.0, 1.0 - waited / 48.0)));
  CHECK(num(L["cold_start_by_stage_device_hours"]["provisioning"]) > 0);  // new nodes for the rented ones
  // by hand: a rented device lost takes a new node at once; an owned one waits for its repair
  const Scenario sc = test::scenario(kRepair, {"fleet.pricing.owned.replicas=1"});
  test::Started f(sc);
  replica_fail(f.s, 3, 100.0, true, kNone, false);
  CHECK(f.s.rep[3].device_at == 0.0);
  CHECK(f.s.rep[3].state == kStarting);
  replica_fail(f.s, 0, 100.0, true, kNone, true);
  CHECK(f.s.rep[0].device_at == 86500.0);
}

TEST_CASE("a replica waiting for a repaired device holds none that could fail: waits never overlap") {
  // one owned replica failing every 12 h on average, a day's repair and no spare, over ten days:
  // failures land only while it holds a device, so the waits fit in the window, and the ledger's
  // cold-start stage is the same hours
  const auto r =
      test::run(test::scenario(kRepair, {"duration_s=864000", "fleet.replicas=1", "fleet.failures.mtbf_hours=12",
                                         "workload.arrival.rate_per_s=0.2"}));
  const Json& L = r.report["ledger"]["pools"]["default"];
  const Json& rp = L["ownership"]["repair"];
  const double failures = num(rp["failures"]), waited = num(rp["awaiting_device_hours"]);
  MESSAGE(failures << " failures, " << waited << " h waited of 240");
  REQUIRE(failures >= 3);
  CHECK(waited <= 240.0);
  CHECK(waited <= failures * 24.0 + 1e-9);
  CHECK(waited == doctest::Approx(num(L["cold_start_by_stage_device_hours"]["awaiting_device"])));
  CHECK(num(rp["availability"]) == doctest::Approx(1.0 - waited / 240.0));
}

TEST_CASE("an owned slot whose device is in repair: a replica started there waits for it, scaled down or not") {
  // one owned device, no spare, a day's repair; the replica fails at 100 s, the autoscaler takes
  // the waiting replica down at 200 s and asks for one again at 1,000 s: the device is still in
  // repair until 86,500 s, so the new start waits for it, and only then runs its stages
  const Scenario sc =
      test::scenario(kRepair, {"duration_s=200000", "fleet.replicas=1",
                               "fleet.autoscale={min_replicas: 0, max_replicas: 1, signal: inflight, target: 8}"});
  // a start at 1,000 s waits for the device back from repair at 86,500 s, then runs its stages
  auto start_waits = [](Sim& s) {
    REQUIRE(replica_start(s, 0, 1000.0));
    double st[kColdStages];
    start_stages(s, 0, true, s.rep[0].start_no, st);
    CHECK(s.rep[0].t_next == doctest::Approx(86500.0 + st[0] + st[1] + st[2] + st[3] + st[4]));
  };
  SUBCASE("a replica lost while draining goes off, and its device to repair, not back for free") {
    test::Started f(sc);
    REQUIRE(f.s.rep[0].state != kOff);
    set_state(f.s, 0, kDraining, 50.0);
    replica_fail(f.s, 0, 100.0, true, kNone);
    CHECK(f.s.rep[0].state == kOff);
    CHECK(f.s.rep[0].device_at == 86500.0);
    start_waits(f.s);
  }
  test::Started f(sc);
  Sim& s = f.s;
  REQUIRE(s.rep[0].state != kOff);
  replica_fail(s, 0, 100.0, true, kNone);
  CHECK(s.rep[0].device_at == 86500.0);
  replica_off(s, 0, 200.0);
  start_waits(s);
  // the waits inside the window: 100 s of the first (cut at 200 s), then 85,500 s
  CHECK(f.tally->pools[0].cold_stage_s[kAwaitingDevice] == doctest::Approx(100.0 + 85500.0));
}

TEST_CASE("autoscaled owned devices: a device in repair serves no one, whatever the autoscaler does") {
  // two owned devices, no spare, a day's repair, failing about twice a day each, autoscaled over
  // two days. No spare means at most two devices in repair at once, so every repair but the last
  // two ran its whole day inside the window, and the replica-hours served are at most 2 x 48 h
  // less those days
  const auto r = test::run(test::scenario(
      kRepair, {"seed=1", "fleet.replicas=2", "fleet.failures.mtbf_hours=12", "fleet.router=central_queue",
                "fleet.autoscale={min_replicas: 1, max_replicas: 2, signal: inflight, target: 8, interval_s: 15, "
                "scale_down_window_s: 600, cooldown_s: 300}",
                "workload.arrival={process: diurnal, rate_per_s: 3.5, peak_to_mean: 1.8, period_s: 14400}"}));
  const double failures = num(r.report["ledger"]["pools"]["default"]["ownership"]["repair"]["failures"]);
  REQUIRE(failures >= 3);
  const PoolTally& p = r.tally->pools[0];
  const double served_h = (p.replica_s - p.cold_s) / 3600.0;
  MESSAGE(failures << " failures, " << served_h << " replica-hours served");
  CHECK(served_h <= 96.0 - (failures - 2.0) * 24.0 + 1e-6);
}

TEST_CASE("a failed static batch leaves only what it ran in the tallies") {
  // one request of 2,000 output tokens on a static-batching server that fails part-way: the steps,
  // FLOPs, bytes and KV time are the run's up to the failure, in proportion to its busy time
  const std::string y =
      "name: sb\nseed: 5\nduration_s: 30\nwarmup_s: 0\ndevice: h100-sxm-80gb\nmodel: llama-3.1-8b\n"
      "engine: {batching: static, max_batch: 8, batch_window_s: 0}\n"
      "fleet: {replicas: 1, failures: {mtbf_hours: 0.01}}\n"
      "workload: {arrival: {process: burst, requests: 1, start_s: 0}, prompt_tokens: 100, output_tokens: 2000}\n";
  const auto clean = test::run(test::scenario(y, {"fleet.failures=null"}));
  const auto cut = test::run(test::scenario(y));
  const PoolTally &a = clean.tally->pools[0], &b = cut.tally->pools[0];
  REQUIRE(b.interruptions >= 1);
  REQUIRE(b.busy_s < a.busy_s);
  const double share = b.busy_s / a.busy_s;  // the part of the batch it ran before the failure
  MESSAGE("ran " << share << " of the batch");
  CHECK(b.steps == doctest::Approx(a.steps * share).epsilon(0.01));
  CHECK(b.bytes == doctest::Approx(a.bytes * share).epsilon(0.01));
  CHECK(b.kv_block_s == doctest::Approx(a.kv_block_s * share).epsilon(0.01));
  CHECK(b.seq_steps == doctest::Approx(a.seq_steps * share).epsilon(0.01));
}

TEST_CASE("owning is cheaper 'from year N' only where it stays cheaper to the end, free renting never breaks even") {
  // $10 an hour, falling by half a year, and a refresh every 2 years: owning leads in year 2,
  // then the second node's capex puts renting ahead for good
  const std::string own = read_text_file(FLEETSIM_SOURCE_DIR "/scenarios/own-vs-rent.yaml", "x");
  const auto r = test::run(
      test::scenario(own, {"fleet.usd_per_hour=10", "fleet.pricing.owned.refresh_years=2",
                           "fleet.pricing.owned.years=4", "fleet.pricing.owned.rent_price_change_per_year=-0.5"}));
  const Json& w = r.report["ledger"]["pools"]["default"]["ownership"];
  const Json& ys = w["years"];
  REQUIRE(ys.size() == 4);
  auto owning_leads = [&](int y) {
    return num(ys[y - 1]["own_cumulative_usd"]) <= num(ys[y - 1]["rent_cumulative_usd"]);
  };
  CHECK(!owning_leads(1));
  CHECK(owning_leads(2));
  CHECK(!owning_leads(4));
  CHECK(w["owning_cheaper_from_year"].is_null());
  CHECK(format_run_table(r.report).find("renting stays cheaper") != std::string::npos);
  // renting at no price: owning never breaks even
  const auto free = test::run(test::scenario(own, {"fleet.usd_per_hour=0"}));
  const Json& fw = free.report["ledger"]["pools"]["default"]["ownership"];
  CHECK(fw["break_even_utilization"].is_null());
  CHECK(format_run_table(free.report).find("owning breaks even never") != std::string::npos);
}
