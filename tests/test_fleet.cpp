// Fleet dynamics, each against a claim of the seeds: pools and request classes, ...
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <cmath>
#include <cstring>
#include <sstream>

#include "helpers.hpp"
#include "libsim/sweep/sweep.hpp"

using namespace fleetsim;

namespace {
Scenario shipped(const std::string& name, const std::vector<std::string>& sets = {}) {
  return load_scenario_file(std::string(FLEETSIM_SOURCE_DIR) + "/scenarios/" + name + ".yaml", sets);
}
}  // namespace

TEST_CASE("a batch job on the interactive pool multiplies interactive p99, separate pools fix it") {
  const auto separate = test::run(shipped("interactive-and-batch"));
  const auto mixed = test::run(shipped("interactive-and-batch", {"classes.summarize.pool=interactive"}));
  REQUIRE(separate.drained);
  REQUIRE(mixed.drained);
  const double sep = separate.report["classes"]["chat"]["latency_s"]["ttft"]["p99"].get<double>();
  const double mix = mixed.report["classes"]["chat"]["latency_s"]["ttft"]["p99"].get<double>();
  MESSAGE("chat p99 TTFT: separate pools " << sep << " s, batch on the interactive pool " << mix << " s");
  CHECK(mix > 2.0 * sep);
  // the same chat requests in both runs (each class has its own random streams)
  CHECK(separate.tally->classes[0].arrived == mixed.tally->classes[0].arrived);
}

TEST_CASE("cost is attributed to classes and teams by the device time they used") {
  const auto r = test::run(shipped("interactive-and-batch"));
  const Json& j = r.report;
  const double total = j["cost"]["total_usd"].get<double>();
  const double chat = j["classes"]["chat"]["cost"]["usd"].get<double>();
  const double summ = j["classes"]["summarize"]["cost"]["usd"].get<double>();
  CHECK(chat + summ == doctest::Approx(total));
  CHECK(j["teams"]["product"]["usd"].get<double>() == doctest::Approx(chat));
  CHECK(j["teams"]["research"]["usd"].get<double>() == doctest::Approx(summ));
  // each pool's cost: replicas x window x price
  CHECK(j["pools"]["interactive"]["cost"]["total_usd"].get<double>() == doctest::Approx(2 * 3300 / 3600.0 * 3.00));
  CHECK(j["pools"]["batch"]["cost"]["total_usd"].get<double>() == doctest::Approx(1 * 3300 / 3600.0 * 1.80));
  // on a shared pool, the split follows the busy time of each class
  const auto mixed = test::run(shipped("interactive-and-batch", {"classes.summarize.pool=interactive"}));
  const Tally& t = *mixed.tally;
  const double share = t.classes[0].busy_s / (t.classes[0].busy_s + t.classes[1].busy_s);
  CHECK(mixed.report["classes"]["chat"]["cost"]["usd"].get<double>() ==
        doctest::Approx(share * mixed.report["pools"]["interactive"]["cost"]["total_usd"].get<double>()));
  // and the class busy times add up to the pool's busy time
  CHECK(t.classes[0].busy_s + t.classes[1].busy_s == doctest::Approx(t.pools[0].busy_s).epsilon(1e-9));
}

TEST_CASE("scaling on host CPU never adds a replica while the queue grows, scaling on queue depth does") {
  const auto cpu = test::run(shipped("autoscale-host-cpu", {"duration_s=1800"}));
  const auto queue = test::run(shipped(
      "autoscale-host-cpu", {"duration_s=1800", "fleet.autoscale.signal=queue_depth", "fleet.autoscale.target=5"}));
  REQUIRE(cpu.drained);
  REQUIRE(queue.drained);
  const Json& c = cpu.report;
  const Json& q = queue.report;
  MESSAGE("host CPU: " << c["fleet"]["max_replicas"] << " replicas at most, p50 TTFT " << c["latency_s"]["ttft"]["p50"]
                       << " s, rejected " << c["requests"]["rejected"]);
  MESSAGE("queue depth: " << q["fleet"]["max_replicas"] << " replicas at most, p50 TTFT "
                          << q["latency_s"]["ttft"]["p50"] << " s, rejected " << q["requests"]["rejected"]);
  CHECK(c["fleet"]["scale_ups"].get<double>() == 0);
  CHECK(c["requests"]["rejected"].get<double>() > 0);  // the queue hit its limit
  CHECK(c["latency_s"]["ttft"]["p50"].get<double>() > 60.0);
  CHECK(q["fleet"]["scale_ups"].get<double>() >= 2);
  CHECK(q["requests"]["rejected"].get<double>() == 0);
  CHECK(q["latency_s"]["ttft"]["p50"].get<double>() < 1.0);
  // what each autoscaler read, every 15 s of the half hour: host CPU 5% + 4 ms x 20 requests/s, far
  // below its 60% target while the queue fills; the queue's depth a replica above its 5 at times
  const Json& a = c["fleet"]["autoscale_signal"];
  CHECK(a["signal"] == "host_cpu");
  CHECK(a["target"].get<double>() == 0.6);
  CHECK(a["evaluations"].get<double>() >= 119);
  CHECK(a["evaluations"].get<double>() <= 120);
  CHECK(a["mean"].get<double>() == doctest::Approx(0.05 + 0.004 * 20).epsilon(0.02));
  CHECK(a["peak"].get<double>() < 0.2);
  CHECK(format_run_table(c).find("autoscaler  host_cpu read 13.0% on average") != std::string::npos);
  const Json& b = q["fleet"]["autoscale_signal"];
  CHECK(b["signal"] == "queue_depth");
  CHECK(b["peak"].get<double>() > 5.0 * 1.1);
  CHECK(b["mean"].get<double>() < b["peak"].get<double>());
}

TEST_CASE("the table says what each autoscaled pool's autoscaler read, one line a pool") {
  const auto r = test::run(
      shipped("interactive-and-batch", {"pools.batch.fleet.autoscale={min_replicas: 1, max_replicas: 3, signal: "
                                        "inflight, target: 8}",
                                        "pools.interactive.fleet.autoscale={min_replicas: 1, max_replicas: 4, "
                                        "signal: busy, target: 0.6}"}));
  const std::string t = format_run_table(r.report);
  for (const char* pool : {"interactive", "batch"}) {
    const Json& a = r.report["pools"][pool]["fleet"]["autoscale_signal"];
    REQUIRE(a["evaluations"].get<double>() > 0);
    const bool busy = a["signal"] == "busy";
    const double scale = busy ? 100.0 : 1.0;
    const std::string line = fmt::format(
        "autoscaler  {}: {} read {:.1f}{} on average, {:.1f}{} at most, against a target of {:.1f}{} ({} "
        "evaluations)\n",
        pool, a["signal"].get<std::string>(), a["mean"].get<double>() * scale, busy ? "%" : " a replica",
        a["peak"].get<double>() * scale, busy ? "%" : " a replica", a["target"].get<double>() * scale,
        busy ? "%" : " a replica", a["evaluations"].get<int64_t>());
    CHECK_MESSAGE(t.find(line) != std::string::npos, line);
  }
  CHECK(!r.report["fleet"].contains("autoscale_signal"));  // two pools: only per pool
}

TEST_CASE("scale-to-zero makes the first request after idle wait for the cold start") {
  const Scenario s = shipped("scale-to-zero");
  const auto zero = test::run(s);
  const auto warm = test::run(shipped("scale-to-zero", {"fleet.autoscale.min_replicas=1", "fleet.replicas=1"}));
  // the cold start, stage by stage: node, image, 16.06 GB at 0.5 GB/s, loading at 5 GB/s, warm-up
  const double cold = 120 + 60 + 16.06 / 0.5 + 16.06 / 5 + 30;
  const Json& z = zero.report;
  MESSAGE("scale to zero: p50 TTFT " << z["latency_s"]["ttft"]["p50"] << " s (cold start " << cold << " s), cost "
                                     << z["cost"]["total_usd"] << "; kept warm: p50 TTFT "
                                     << warm.report["latency_s"]["ttft"]["p50"] << " s, cost "
                                     << warm.report["cost"]["total_usd"]);
  CHECK(z["latency_s"]["ttft"]["p50"].get<double>() == doctest::Approx(cold).epsilon(0.01));
  CHECK(warm.report["latency_s"]["ttft"]["p50"].get<double>() < 1.0);
  CHECK(z["cost"]["total_usd"].get<double>() < 0.5 * warm.report["cost"]["total_usd"].get<double>());
  CHECK(z["fleet"]["scale_ups"].get<double>() >= 10);
  // a stage may be a distribution: node provisioning with median 120 s and p99 600 s spreads the wait
  const auto spread = test::run(shipped("scale-to-zero", {"fleet.cold_start.provision_s={median: 120, p99: 600}"}));
  const Json& t = spread.report["latency_s"]["ttft"];
  CHECK(t["p50"].get<double>() == doctest::Approx(cold).epsilon(0.15));
  CHECK(t["p99"].get<double>() > t["p50"].get<double>() + 150);
  // kept warm, the idle replica is the chosen headroom; scaled to zero, cold starts take the bill
  CHECK(warm.report["utilization"]["idle_headroom_fraction"].get<double>() > 0.9);
  CHECK(z["utilization"]["cold_start_fraction"].get<double>() > 0.5);
}

TEST_CASE("provisioned time splits into busy, cold start, chosen headroom and waste") {
  for (const char* name : {"scale-to-zero", "autoscale-host-cpu", "chat-default", "interactive-and-batch"}) {
    CAPTURE(name);
    const auto r = test::run(shipped(name, {"duration_s=1800"}));
    for (int32_t i = 0; i < r.tally->n_pools; ++i) {
      const PoolTally& p = r.tally->pools[i];
      CHECK(p.busy_s + p.cold_s + p.headroom_s + p.waste_s == doctest::Approx(p.replica_s).epsilon(1e-6));
    }
  }
  // a fixed fleet that declares one replica of headroom
  const auto fixed = test::run(shipped("chat-default", {"duration_s=1800", "fleet.replicas=4",
                                                        "fleet.headroom_replicas=1", "workload.arrival.rate_per_s=1"}));
  const Json& u = fixed.report["utilization"];
  CHECK(u["idle_headroom_fraction"].get<double>() > 0.1);
  CHECK(u["idle_waste_fraction"].get<double>() > 0.1);
  CHECK(u["busy_fraction"].get<double>() + u["idle_headroom_fraction"].get<double>() +
            u["idle_waste_fraction"].get<double>() ==
        doctest::Approx(1.0).epsilon(1e-6));
}

TEST_CASE("a long input crash-loops a naive server, admission control rejects it instead") {
  const auto naive = test::run(shipped("oom-restart-loop"));
  const auto paged = test::run(shipped("oom-restart-loop", {"engine.on_kv_exhausted=preempt"}));
  REQUIRE(naive.drained);
  REQUIRE(paged.drained);
  const ClassTally& doc = naive.tally->classes[1];
  const ClassTally& chat = naive.tally->classes[0];
  MESSAGE("naive server: " << naive.tally->pools[0].crashes << " crashes for " << doc.arrived << " long documents; "
                           << chat.retried << " chat requests retried, " << chat.failed << " failed");
  // every long document kills the server on its first try and on each of its 3 retries, then fails
  // (crashes count inside the window: the last document's last ones may fall after it)
  CHECK(naive.tally->pools[0].crashes <= 4.0 * double(doc.arrived));
  CHECK(naive.tally->pools[0].crashes >= 4.0 * double(doc.arrived) - 3.0);
  CHECK(doc.failed == doc.arrived);
  CHECK(doc.retried == 3 * doc.arrived);
  // chat requests in flight die with the server
  CHECK(chat.retried > 0);
  CHECK(naive.report["classes"]["chat"]["latency_s"]["ttft"]["p99"].get<double>() >
        10 * paged.report["classes"]["chat"]["latency_s"]["ttft"]["p99"].get<double>());
  CHECK(naive.report["utilization"]["cold_start_fraction"].get<double>() > 0.05);
  // with KV admission control nothing crashes: the document is rejected as too long
  CHECK(paged.tally->pools[0].crashes == 0);
  CHECK(paged.tally->classes[1].rejected_too_long == paged.tally->classes[1].arrived);
  CHECK(paged.tally->classes[0].completed == paged.tally->classes[0].arrived);
}

TEST_CASE("spot is cheaper for a checkpointed batch class and worse for interactive p99") {
  const std::vector<std::string> on_demand = {"pools.interactive.fleet.pricing.spot.discount=0",
                                              "pools.interactive.fleet.pricing.spot.interruptions_per_hour=0",
                                              "pools.batch.fleet.pricing.spot.discount=0",
                                              "pools.batch.fleet.pricing.spot.interruptions_per_hour=0"};
  const auto spot = test::run(shipped("spot-vs-on-demand"));
  const auto od = test::run(shipped("spot-vs-on-demand", on_demand));
  REQUIRE(spot.drained);
  REQUIRE(od.drained);
  const Json& s = spot.report["classes"];
  const Json& o = od.report["classes"];
  MESSAGE("interruptions " << spot.report["fleet"]["interruptions"] << "; chat p99 TTFT spot "
                           << s["chat"]["latency_s"]["ttft"]["p99"] << " s vs on-demand "
                           << o["chat"]["latency_s"]["ttft"]["p99"] << " s; batch cost per request spot "
                           << s["nightly-batch"]["cost"]["per_request_usd"] << " vs on-demand "
                           << o["nightly-batch"]["cost"]["per_request_usd"]);
  CHECK(spot.report["fleet"]["interruptions"].get<double>() >= 2);
  // the batch class: every request done, at about the spot discount's price
  CHECK(spot.tally->classes[1].completed == od.tally->classes[1].completed);
  CHECK(spot.tally->classes[1].failed == 0);
  CHECK(s["nightly-batch"]["cost"]["per_request_usd"].get<double>() <
        0.5 * o["nightly-batch"]["cost"]["per_request_usd"].get<double>());
  // interactive chat: the tail is worse
  CHECK(s["chat"]["latency_s"]["ttft"]["p99"].get<double>() > 5 * o["chat"]["latency_s"]["ttft"]["p99"].get<double>());
}

TEST_CASE("committed capacity is paid whether used or not, at its discount, the rest at the hourly price") {
  const auto base = test::run(shipped("chat-default", {"duration_s=1800"}));
  const double hours = (1800 - 300) / 3600.0;
  CHECK(base.report["cost"]["total_usd"].get<double>() == doctest::Approx(2 * hours * 3.00));
  const auto committed = test::run(shipped("chat-default", {"duration_s=1800", "fleet.pricing.committed_replicas=2",
                                                            "fleet.pricing.committed_discount=0.4"}));
  CHECK(committed.report["cost"]["total_usd"].get<double>() == doctest::Approx(2 * hours * 3.00 * 0.6));
  // committing to more than is used still costs the commitment
  const auto over = test::run(shipped("chat-default", {"duration_s=1800", "fleet.pricing.committed_replicas=3",
                                                       "fleet.pricing.committed_discount=0.4"}));
  CHECK(over.report["cost"]["total_usd"].get<double>() == doctest::Approx(3 * hours * 3.00 * 0.6));
  // and using more than the commitment pays the excess at the hourly price
  const auto part = test::run(shipped("chat-default", {"duration_s=1800", "fleet.pricing.committed_replicas=1",
                                                       "fleet.pricing.committed_discount=0.4"}));
  CHECK(part.report["cost"]["total_usd"].get<double>() == doctest::Approx(hours * 3.00 * 0.6 + hours * 3.00));
  // spot reclaims only what is not reserved: all committed, none; one of three on spot, about a
  // third of the interruptions of three on spot (2 per hour per replica over 50 h: 100 against 300)
  auto interruptions = [&](int committed) {
    const auto r = test::run(
        shipped("chat-default", {"duration_s=180000", "warmup_s=0", "fleet.replicas=3", "workload.arrival.rate_per_s=3",
                                 "fleet.pricing.spot={discount: 0.6, interruptions_per_hour: 2}",
                                 "fleet.pricing.committed_replicas=" + std::to_string(committed)}));
    return r.report["fleet"]["interruptions"].get<double>();
  };
  CHECK(interruptions(3) == 0);
  const double one = interruptions(2), three = interruptions(0);
  MESSAGE("interruptions: one replica on spot " << one << ", three " << three);
  CHECK(std::abs(one - 100.0) < 4 * std::sqrt(100.0));
  CHECK(std::abs(three - 300.0) < 4 * std::sqrt(300.0));
}

TEST_CASE("seven MIG slices serving a small model cost less per request than seven whole devices at low load") {
  const auto mig = test::run(shipped("mig-small-model"));
  const auto whole = test::run(shipped("mig-small-model", {"partition=7g.80gb"}));
  REQUIRE(mig.drained);
  REQUIRE(whole.drained);
  const Scenario s = shipped("mig-small-model");
  // a 1g.10gb slice: a seventh of the compute and price, an eighth of memory and bandwidth
  CHECK(s.pools[0].device.memory_gib == doctest::Approx(79.22 / 8));
  CHECK(s.pools[0].device.bf16_tflops == doctest::Approx(989.4 / 7));
  CHECK(s.pools[0].device.usd_per_hour == doctest::Approx(3.00 / 7));
  const double m = mig.report["cost"]["per_request_usd"].get<double>(),
               w = whole.report["cost"]["per_request_usd"].get<double>();
  MESSAGE("cost per request: MIG slices " << m << ", whole devices " << w << "; p99 TTFT "
                                          << mig.report["latency_s"]["ttft"]["p99"] << " vs "
                                          << whole.report["latency_s"]["ttft"]["p99"]);
  CHECK(m < w / 5);
  CHECK(mig.tally->classes[0].completed == whole.tally->classes[0].completed);
  CHECK(mig.report["latency_s"]["ttft"]["p99"].get<double>() < 0.5);  // slower per request, still interactive
}

TEST_CASE("continuous batching turns a low-utilization fleet into a high-utilization one at the cost of p99") {
  // the same load: six replicas serving one request at a time, or one replica batching continuously
  const auto one = test::run(load_default_scenario(
      {"workload.arrival.rate_per_s=2", "engine.max_num_seqs=1", "fleet.replicas=6", "fleet.router=central_queue"}));
  const auto cont = test::run(load_default_scenario({"workload.arrival.rate_per_s=2", "fleet.replicas=1"}));
  const Json& a = one.report;
  const Json& b = cont.report;
  MESSAGE("one at a time x6: busy " << a["utilization"]["busy_fraction"] << ", bandwidth "
                                    << a["utilization"]["bandwidth_fraction"] << ", p99 TPOT "
                                    << a["latency_s"]["tpot"]["p99"] << ", p99 e2e " << a["latency_s"]["e2e"]["p99"]
                                    << ", $/request " << a["cost"]["per_request_usd"]);
  MESSAGE("continuous x1: busy " << b["utilization"]["busy_fraction"] << ", bandwidth "
                                 << b["utilization"]["bandwidth_fraction"] << ", p99 TPOT "
                                 << b["latency_s"]["tpot"]["p99"] << ", p99 e2e " << b["latency_s"]["e2e"]["p99"]
                                 << ", $/request " << b["cost"]["per_request_usd"]);
  CHECK(a["utilization"]["busy_fraction"].get<double>() < 0.5);
  CHECK(b["utilization"]["busy_fraction"].get<double>() > 0.9);
  CHECK(b["utilization"]["compute_fraction"].get<double>() > 4 * a["utilization"]["compute_fraction"].get<double>());
  CHECK(b["cost"]["per_request_usd"].get<double>() < a["cost"]["per_request_usd"].get<double>() / 4);
  CHECK(b["latency_s"]["tpot"]["p99"].get<double>() > 1.2 * a["latency_s"]["tpot"]["p99"].get<double>());
  CHECK(b["latency_s"]["e2e"]["p99"].get<double>() > a["latency_s"]["e2e"]["p99"].get<double>());
}

TEST_CASE("prefix caching skips a shared prompt's prefill, a response cache answers repeats without the device") {
  // on the roofline, whose prefill time is all compute: the 3x below is its arithmetic
  const auto cached = test::run(shipped("prefix-and-response-cache", {"engine.perf_profile=none"}));
  const auto plain =
      test::run(shipped("prefix-and-response-cache", {"engine.perf_profile=none", "engine.prefix_caching=false",
                                                      "workload.response_cache.hit_rate=0"}));
  REQUIRE(cached.drained);  // the pinned prefix blocks are accounted for
  REQUIRE(plain.drained);
  const ClassTally& c = *cached.all;
  const double hit = double(c.cache_hits) / double(c.arrived);
  CHECK(hit == doctest::Approx(0.15).epsilon(0.05));
  CHECK(c.prefix_hits > 0.8 * double(c.completed - c.cache_hits));  // all but the first on each replica
  CHECK(plain.all->cache_hits == 0);
  CHECK(plain.all->prefix_hits == 0);
  const Json& a = cached.report;
  const Json& b = plain.report;
  MESSAGE("p99 TTFT cached " << a["latency_s"]["ttft"]["p99"] << " s vs " << b["latency_s"]["ttft"]["p99"]
                             << " s; compute " << a["utilization"]["compute_fraction"] << " vs "
                             << b["utilization"]["compute_fraction"] << "; KV occupancy "
                             << a["utilization"]["kv_occupancy"] << " vs " << b["utilization"]["kv_occupancy"]);
  CHECK(a["latency_s"]["ttft"]["p99"].get<double>() < b["latency_s"]["ttft"]["p99"].get<double>() / 3);
  CHECK(a["utilization"]["compute_fraction"].get<double>() < b["utilization"]["compute_fraction"].get<double>() / 2);
  CHECK(a["utilization"]["kv_occupancy"].get<double>() < b["utilization"]["kv_occupancy"].get<double>() / 3);
  CHECK(a["cost"]["per_million_input_tokens_usd"].get<double>() <
        b["cost"]["per_million_input_tokens_usd"].get<double>() / 2);
  // a cache hit costs no device time: the class busy time falls with the hits
  CHECK(cached.tally->pools[0].flops < plain.tally->pools[0].flops);
}

TEST_CASE("time slicing: no memory isolation, so one tenant's KV growth can OOM its neighbour") {
  const auto greedy = test::run(shipped("time-slicing"));
  const auto split = test::run(shipped("time-slicing", {"engine.gpu_memory_utilization=0.45"}));
  REQUIRE(greedy.drained);
  REQUIRE(split.drained);
  MESSAGE("each engine at 0.9 of the device: " << greedy.tally->pools[0].crashes << " OOM crashes, p99 TTFT "
                                               << greedy.report["latency_s"]["ttft"]["p99"] << " s; at 0.45: "
                                               << split.tally->pools[0].crashes << " crashes, p99 TTFT "
                                               << split.report["latency_s"]["ttft"]["p99"] << " s");
  CHECK(greedy.tally->pools[0].crashes > 0);
  CHECK(split.tally->pools[0].crashes == 0);
  CHECK(greedy.report["latency_s"]["ttft"]["p99"].get<double>() >
        4 * split.report["latency_s"]["ttft"]["p99"].get<double>());
  // and requests retried past max_retries are lost: the split pair loses none
  CHECK(greedy.all->failed > 0);
  CHECK(split.all->failed == 0);
  // two replicas on one device: one device-hour per hour, at the device's price
  CHECK(split.report["cost"]["device_hours"].get<double>() == doctest::Approx(1800 / 3600.0));
  CHECK(split.report["cost"]["total_usd"].get<double>() == doctest::Approx(1800 / 3600.0 * 3.00));
  // weights that cannot fit twice are refused up front
  CHECK_THROWS_AS(shipped("time-slicing", {"model=qwen2.5-72b", "weight_dtype=fp8"}), InputError);
}

TEST_CASE("four fine-tuned variants as LoRA adapters on one replica cost a quarter of four dedicated replicas") {
  const auto separate = test::run(shipped("lora-separate"));
  const auto merged = test::run(shipped("lora-consolidated"));
  REQUIRE(separate.drained);
  REQUIRE(merged.drained);
  CHECK(separate.all->completed == merged.all->completed);  // the same requests, class by class
  const double a = separate.report["cost"]["per_request_usd"].get<double>();
  const double b = merged.report["cost"]["per_request_usd"].get<double>();
  MESSAGE("cost per request: dedicated " << a << ", consolidated " << b << "; p99 TPOT "
                                         << separate.report["latency_s"]["tpot"]["p99"] << " vs "
                                         << merged.report["latency_s"]["tpot"]["p99"]);
  CHECK(b < a / 3.5);
  CHECK(merged.report["utilization"]["busy_fraction"].get<double>() >
        separate.report["utilization"]["busy_fraction"].get<double>());
  // adapters cost memory and step time: slower per token, still interactive
  const Scenario s = shipped("lora-consolidated");
  CHECK(s.pools[0].lora_gib_per_device() > 0.1);
  CHECK(s.pools[0].capacity.kv_gib < shipped("lora-separate").pools[0].capacity.kv_gib);
  CHECK(merged.report["latency_s"]["tpot"]["p99"].get<double>() >
        separate.report["latency_s"]["tpot"]["p99"].get<double>());
  CHECK(merged.report["latency_s"]["ttft"]["p99"].get<double>() < 0.5);
  // each team pays for the device time its requests used: about a quarter each
  for (const char* team : {"support", "sales", "legal", "code"})
    CHECK(merged.report["teams"][team]["share"].get<double>() == doctest::Approx(0.25).epsilon(0.15));
}

TEST_CASE("fleet dynamics run in sweeps like everything else: a row equals the run") {
  const std::string sweep =
      "sweep:\n  parameters:\n    pools.interactive.fleet.pricing.spot.interruptions_per_hour: [0, 0.5]\n"
      "    classes.nightly-batch.checkpointed: [true, false]\n";
  std::ifstream f(std::string(FLEETSIM_SOURCE_DIR) + "/scenarios/spot-vs-on-demand.yaml");
  std::stringstream text;
  text << f.rdbuf();
  const ScenarioSource src =
      ScenarioSource::from_text(text.str() + sweep, "<spot sweep>", std::string(FLEETSIM_SOURCE_DIR) + "/scenarios")
          .with_overrides(parse_sets({"duration_s=3600"}));
  const SweepSpec spec = parse_sweep(src);
  SweepOptions o;
  o.backend = Backend::cpu;
  o.threads = 2;
  const Json doc = run_sweep(src, spec, o);
  REQUIRE(doc["rows"].size() == 4);
  for (uint64_t c = 0; c < 4; ++c) {
    const Json single = test::run(src.instantiate(spec.overrides(c))).report;
    const Json& row = doc["rows"][c]["metrics"];
    CHECK(row["classes"]["chat"]["latency_s"]["ttft"]["p99"] == single["classes"]["chat"]["latency_s"]["ttft"]["p99"]);
    CHECK(row["fleet"]["interruptions"] == single["fleet"]["interruptions"]);
    CHECK(row["cost"]["total_usd"] == single["cost"]["total_usd"]);
  }
}

TEST_CASE("a higher-priority class is admitted first from a shared queue") {
  const std::string yaml =
      "duration_s: 1200\nwarmup_s: 100\ndevice: h100-sxm-80gb\nmodel: llama-3.1-8b\n"
      "engine: {max_num_seqs: 4}\nfleet: {replicas: 1, queue_limit: 100000}\n"
      "workload: {prompt_tokens: 500, output_tokens: {dist: geometric, mean: 100}}\n"
      "classes:\n  gold: {priority: 10, arrival: {process: poisson, rate_per_s: 3}}\n"
      "  bronze: {arrival: {process: poisson, rate_per_s: 3}}\n";
  const auto r = test::run(test::scenario(yaml));
  const auto fair = test::run(test::scenario(yaml, {"classes.gold.priority=0"}));
  REQUIRE(r.drained);
  const double gold = r.report["classes"]["gold"]["latency_s"]["queue_wait"]["mean"].get<double>();
  const double bronze = r.report["classes"]["bronze"]["latency_s"]["queue_wait"]["mean"].get<double>();
  MESSAGE("mean queue wait: gold " << gold << " s, bronze " << bronze << " s; without priorities "
                                   << fair.report["classes"]["gold"]["latency_s"]["queue_wait"]["mean"] << " and "
                                   << fair.report["classes"]["bronze"]["latency_s"]["queue_wait"]["mean"]);
  CHECK(gold < bronze / 3);
  // without priorities the two classes wait alike
  CHECK(
      fair.report["classes"]["gold"]["latency_s"]["queue_wait"]["mean"].get<double>() ==
      doctest::Approx(fair.report["classes"]["bronze"]["latency_s"]["queue_wait"]["mean"].get<double>()).epsilon(0.2));
}

TEST_CASE("a lost replica's queue moves to the others in priority order, as any request joins a queue") {
  // spot interruptions every two minutes on three replicas of four sequences: each loss reroutes a
  // long queue; a priority-1 request rerouted to the back of it waited there for minutes (p99 191 s)
  const std::string yaml =
      "seed: 2\nduration_s: 600\ndevice: h100-sxm-80gb\nmodel: llama-3.1-8b\nengine: {max_num_seqs: 4}\n"
      "fleet: {replicas: 3, router: least_outstanding, queue_limit: 50,"
      " pricing: {spot: {discount: 0.5, interruptions_per_hour: 30}},"
      " cold_start: {provision_s: 10, image_pull_s: 1, warmup_s: 1}}\n"
      "classes:\n"
      "  hi: {priority: 1, arrival: {process: poisson, rate_per_s: 1}, prompt_tokens: 500, output_tokens: 500}\n"
      "  lo: {priority: 0, arrival: {process: poisson, rate_per_s: 2}, prompt_tokens: 500, output_tokens: 500}\n";
  const auto r = test::run(test::scenario(yaml));
  REQUIRE(r.tally->pools[0].interruptions > 5);
  const double hi = r.report["classes"]["hi"]["latency_s"]["queue_wait"]["p99"].get<double>();
  const double lo = r.report["classes"]["lo"]["latency_s"]["queue_wait"]["p99"].get<double>();
  MESSAGE("p99 queue wait: hi " << hi << " s, lo " << lo << " s");
  CHECK(hi < lo / 5);
}

TEST_CASE("a draining replica of a central queue that is lost stays off") {
  // autoscaled on requests in flight, with spot losses: every replica that leaves was counted once
  // as a scale-down, so those serving at the end, 4 + ups - downs, stay within the autoscaler's
  // bounds (a lost draining replica that restarted came back uncounted, and left again: 4 + 23 - 27)
  const std::string yaml =
      "duration_s: 1800\nwarmup_s: 0\nseed: 3\ndevice: h100-sxm-80gb\nmodel: llama-3.1-8b\n"
      "fleet: {replicas: 4, router: central_queue,"
      " autoscale: {min_replicas: 1, max_replicas: 4, signal: inflight, target: 40, interval_s: 15,"
      " scale_down_window_s: 0, cooldown_s: 0},"
      " cold_start: {provision_s: 10, image_pull_s: 1, warmup_s: 1},"
      " pricing: {spot: {discount: 0.5, interruptions_per_hour: 20}}}\n"
      "workload: {arrival: {process: poisson, rate_per_s: 2}, prompt_tokens: 500, output_tokens: 2000}\n";
  const auto r = test::run(test::scenario(yaml));
  const PoolTally& p = r.tally->pools[0];
  REQUIRE(p.interruptions > 5);
  REQUIRE(p.scale_downs > 5);
  const double serving = 4 + p.scale_ups - p.scale_downs;
  CHECK(serving >= 1);
  CHECK(serving <= 4);
}

TEST_CASE("cached prefixes give their blocks back when a request needs them, and a waiting queue keeps a replica") {
  // a small KV cache: pinned prefixes must be evicted for long prompts, or admission would stall
  const auto pin = test::run(test::scenario(
      "duration_s: 600\nseed: 3\ndevice: h100-sxm-80gb\nmodel: llama-3.1-8b\n"
      "engine: {gpu_memory_utilization: 0.235}\nfleet: {replicas: 1}\n"
      "workload: {arrival: {process: poisson, rate_per_s: 0.5}, prompt_tokens: {dist: uniform, min: 500, max: 6000},\n"
      "           output_tokens: 50, prefix: {share: 0.5, tokens: 2000}}\n"));
  CHECK(pin.drained);
  CHECK(pin.all->arrived == pin.all->completed + pin.all->rejected_too_long + pin.all->rejected_queue_full);
  CHECK(pin.all->prefix_hits > 0);
  // scale-to-zero on the busy signal with a central queue: a replica still starting while requests
  // wait is never cancelled
  const auto busy = test::run(test::scenario(
      "duration_s: 7200\nseed: 5\ndevice: l4-24gb\nmodel: llama-3.1-8b\nengine: {max_num_seqs: 16, max_batched_tokens: "
      "2048}\n"
      "fleet: {replicas: 0, router: central_queue, autoscale: {min_replicas: 0, max_replicas: 2, signal: busy,\n"
      "        target: 0.5, interval_s: 15, scale_down_window_s: 60, cooldown_s: 60}}\n"
      "workload: {arrival: {process: poisson, rate_per_s: 0.002}, prompt_tokens: 500, output_tokens: 100}\n"));
  CHECK(busy.drained);
  CHECK(busy.all->completed == busy.all->arrived);
}

namespace {
// The tallies with each least-outstanding pool's index (a tree over many replicas) and with the
// scan it replaces: they must be the same bits.
void same_with_and_without_index(const Scenario& sc) {
  const SimParams indexed = sc.params();
  SimParams scanned = indexed;
  int32_t pools = 0;
  for (int32_t i = 0; i < scanned.n_pools; ++i) {
    pools += scanned.pools[i].lo_index;
    scanned.pools[i].lo_index = 0;
  }
  REQUIRE(pools > 0);
  HostWorkspace ws;
  for (uint32_t rep = 0; rep < 2; ++rep) {
    const auto a = simulate_once(indexed, rep, ws);
    const auto b = simulate_once(scanned, rep, ws);
    REQUIRE(a->status == 0);
    CHECK(a->classes[0].completed > 1000);
    CHECK(std::memcmp(a.get(), b.get(), sizeof(Tally)) == 0);
  }
}
const std::string kWide =
    "name: wide\nseed: 9\nduration_s: 240\nwarmup_s: 20\ndevice: h100-sxm-80gb\nmodel: llama-3.1-8b\n"
    "engine: {max_num_seqs: 64, max_batched_tokens: 4096}\n"
    "fleet: {replicas: 20, router: least_outstanding, queue_limit: 64}\n"
    "workload:\n  arrival: {process: poisson, rate_per_s: 120}\n"
    "  prompt_tokens: {dist: lognormal, median: 1000, p99: 6000}\n"
    "  output_tokens: {dist: lognormal, median: 150, p99: 900}\n";
}  // namespace

TEST_CASE("least outstanding over many replicas: the index picks what the scan picks, bit for bit") {
  // continuous batching near saturation (queues, rejections), and a priority class on top
  same_with_and_without_index(test::scenario(kWide));
  same_with_and_without_index(test::scenario(kWide, {"workload.arrival.rate_per_s=260"}));
  // static batching
  same_with_and_without_index(test::scenario(kWide, {"engine.batching=static", "engine.max_batch=16"}));
  // a host CPU stage per replica (its jobs count as outstanding)
  same_with_and_without_index(test::scenario(kWide, {"engine.host.cores=1", "engine.host.tokenize_s_per_token=2e-6"}));
  // autoscaling from 2 of 32 slots: replicas start (cold, so none ready at first), drain and stop
  same_with_and_without_index(test::scenario(
      kWide, {"fleet.replicas=2", "fleet.autoscale.min_replicas=2", "fleet.autoscale.max_replicas=32",
              "fleet.autoscale.signal=inflight", "fleet.autoscale.target=8", "fleet.autoscale.interval_s=5"}));
  // replicas lost under their requests, which go back to the queues
  same_with_and_without_index(
      test::scenario(kWide, {"fleet.pricing.spot.discount=0.6", "fleet.pricing.spot.interruptions_per_hour=40"}));
}

TEST_CASE("mtbf_hours is each device's: a replica of 8 devices fails 8 times as often") {
  // 30 days of one replica at an MTBF of 10 h a device: failures are billed device-hours / 10
  // (cold starts included, as the devices are provisioned then), within 5 standard deviations
  const std::string y =
      "duration_s: 2592000\nwarmup_s: 0\nseed: 2\ndevice: h100-sxm-80gb\nmodel: llama-3.1-8b\n"
      "fleet: {replicas: 1, failures: {mtbf_hours: 10}}\n"
      "workload: {arrival: {process: poisson, rate_per_s: 0.01}, prompt_tokens: 100, output_tokens: 10}\n";
  for (const int tp : {1, 8}) {
    CAPTURE(tp);
    const auto r = test::run(test::scenario(y, {"engine.tensor_parallel=" + std::to_string(tp)}));
    const double device_hours = r.report["ledger"]["pools"]["default"]["billed_device_hours"].get<double>();
    const double expect = device_hours / 10.0;
    CHECK(std::fabs(r.tally->pools[0].interruptions - expect) < 5.0 * std::sqrt(expect));
    CHECK(device_hours == doctest::Approx(720.0 * tp).epsilon(1e-9));
  }
}
