// What a run says about itself in words, the same in the table and the HTML report: which step
// time model produced it and its measured error, costs too small for fixed decimals, and which
// of two configurations tied on the objective comes first.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "helpers.hpp"
#include "libsim/input/input_file.hpp"
#include "libsim/report/html.hpp"
#include "libsim/report/report.hpp"

using namespace fleetsim;

namespace {
Json load_doc(const std::string& name) {
  return Json::parse(read_text_file(std::string(FLEETSIM_SOURCE_DIR) + "/tests/data/" + name, "test document"));
}
std::string figure_of(const std::string& html, const std::string& id) {
  const size_t a = html.find("<figure id=\"" + id + "\"");
  return a == std::string::npos ? "" : html.substr(a, html.find("</figure>", a) - a);
}
}  // namespace

TEST_CASE("report: a run report names its step-time model and its measured error, as the table does") {
  // the default scenario's calibrated profile, its held-out error
  const test::Result r = test::run(
      load_scenario_file(FLEETSIM_SOURCE_DIR "/scenarios/chat-default.yaml", {"duration_s=300", "warmup_s=0"}));
  const std::string steps = step_time_summary(r.report["scenario"]);
  CHECK(steps.find("calibrated profile h100-sxm-80gb/llama-3.1-8b/tp1-trtllm (median error on ") == 0);
  CHECK(html_report(r.report).find("Step time: " + html_escape(steps) + ".") != std::string::npos);
  CHECK(format_run_table(r.report).find("steps     " + steps + "\n") != std::string::npos);
  // an uncalibrated one's note says what error to expect
  const Json d = load_doc("report_run.json");
  CHECK(html_report(d).find("Step time: " + html_escape(d["scenario"]["step_time"]["note"].get<std::string>())) !=
        std::string::npos);
}

TEST_CASE("report: pools whose step-time error differs each say theirs, pools alike share one line") {
  // tp8 runs the physics model within its fit; tp8-ep8 holds whole experts, which no fit row did
  const test::Result moe = test::run(
      load_scenario_file(FLEETSIM_SOURCE_DIR "/scenarios/moe-expert-parallel.yaml", {"duration_s=300", "warmup_s=0"}));
  const std::string table = format_run_table(moe.report);
  const std::string ep = moe.report["pools"]["tp8-ep8"]["step_time"]["note"].get<std::string>();
  CHECK(ep.find("uncalibrated for expert parallelism") != std::string::npos);
  CHECK(table.find("steps     tp8: physics model (median error on ") != std::string::npos);
  CHECK(table.find("\n          tp8-ep8: " + ep) != std::string::npos);
  const std::string html = html_report(moe.report);
  CHECK(html.find("Step time: tp8: physics step model") != std::string::npos);
  CHECK(html.find("; tp8-ep8: " + html_escape(ep) + ".") != std::string::npos);
  // five pools on the same uncalibrated roofline: one line for all
  const test::Result rr = test::run(
      load_scenario_file(FLEETSIM_SOURCE_DIR "/scenarios/reranker-cpu-vs-gpu.yaml", {"duration_s=60", "warmup_s=0"}));
  const std::string one = format_run_table(rr.report);
  CHECK(one.find("steps     roofline (uncalibrated") != std::string::npos);
  CHECK(one.find("h100-whole: roofline") == std::string::npos);
  CHECK(html_report(rr.report).find("Step time: uncalibrated roofline") != std::string::npos);
}

TEST_CASE("table: replicas lost with their device's other slices are said so, not called MPS clients") {
  // seven MIG slices of one GPU: a lost device takes the other six with it
  const test::Result r = test::run(load_scenario_file(FLEETSIM_SOURCE_DIR "/scenarios/mig-small-model.yaml",
                                                      {"fleet.failures.mtbf_hours=0.5", "duration_s=1800"}));
  REQUIRE(r.report["fleet"]["neighbour_failures"].get<double>() > 0);
  const std::string t = format_run_table(r.report);
  CHECK(t.find(fmt::format("{} taken down by a neighbour on their device",
                           r.report["fleet"]["neighbour_failures"].get<double>())) != std::string::npos);
  CHECK(t.find("MPS") == std::string::npos);
}

TEST_CASE("goodput: one bound for the fleet only where every class has it, else each class's own, said so") {
  const std::string y =
      "name: two\nseed: 3\nduration_s: 120\nwarmup_s: 20\ndevice: h100-sxm-80gb\nmodel: llama-3.1-8b\n"
      "fleet: {replicas: 1}\nworkload: {prompt_tokens: 500, output_tokens: 100}\nclasses:\n"
      "  a: {arrival: {process: concurrency, clients: 10, think_time_s: 1}, goodput: {ttft_s: 0.05}}\n"
      "  b: {arrival: {process: poisson, rate_per_s: 2}}\n";
  const test::Result mixed = test::run(test::scenario(y));
  CHECK_FALSE(mixed.report["scenario"].contains("goodput"));
  CHECK(mixed.report["classes"]["a"]["goodput"] == "ttft <= 0.05 s");
  const std::string t = format_run_table(mixed.report);
  CHECK(t.find("within each class's own bounds") != std::string::npos);
  CHECK(t.find("within ttft <= 0.05 s") == std::string::npos);  // a's bound was quoted for b's requests
  CHECK(html_report(mixed.report).find("met their class's goodput bounds") != std::string::npos);
  // the same bound on both: the fleet's line names it
  const test::Result same = test::run(test::scenario(y, {"classes.b.goodput={ttft_s: 0.05}"}));
  CHECK(same.report["scenario"]["goodput"] == "ttft <= 0.05 s");
  CHECK(format_run_table(same.report).find("req/s within ttft <= 0.05 s (") != std::string::npos);
  // closed-loop time integrals are never reported below 0 (rounding took mean_thinking to -1e-17)
  const test::Result tiny = test::run(
      load_scenario_file(FLEETSIM_SOURCE_DIR "/scenarios/closed-loop-benchmark.yaml",
                         {"duration_s=30", "warmup_s=0", "workload.prompt_tokens=1", "workload.output_tokens=1"}));
  CHECK(tiny.report["closed_loop"]["mean_thinking"].get<double>() >= 0.0);
}

TEST_CASE("capacity: each pool's context is its own classes', and no longer than its model's") {
  // 30,500-token chats on one pool, 256-token embeddings on another: the embedding pool's 16-block
  // requests, not the chats', say how many fit
  const test::Result two = test::run(
      test::scenario("name: mp\nduration_s: 30\nwarmup_s: 0\npools:\n"
                     "  chat: {device: h100-sxm-80gb, model: llama-3.1-8b, fleet: {replicas: 1}}\n"
                     "  embed: {device: l4-24gb, model: bge-large-en-v1.5, fleet: {replicas: 1}}\nclasses:\n"
                     "  long-chat: {pool: chat, arrival: {process: poisson, rate_per_s: 0.2}, prompt_tokens: 30000, "
                     "output_tokens: 500}\n"
                     "  emb: {pool: embed, arrival: {process: poisson, rate_per_s: 5}, prompt_tokens: 256}\n"));
  const Json& embed = two.report["pools"]["embed"]["capacity"];
  CHECK(embed["context_tokens"] == 256);
  CHECK(embed["max_concurrent_at_context"] == embed["kv_blocks"].get<int64_t>() / 16);
  CHECK(two.report["pools"]["chat"]["capacity"]["context_tokens"] == 30500);
  // 4,000-token prompts asking for 500 tokens of a 4,096-token model: the output is cut at 96, so a
  // request holds 4,096 tokens, 256 blocks
  const test::Result cut = test::run(test::scenario(
      "duration_s: 120\nwarmup_s: 0\ndevice: h100-sxm-80gb\nmodel: llama-2-7b\nfleet: {replicas: 1}\n"
      "workload: {arrival: {process: poisson, rate_per_s: 0.5}, prompt_tokens: 4000, output_tokens: 500}\n"));
  const Json& cap = cut.report["capacity"];
  CHECK(cap["mean_context_tokens"] == 4096);
  CHECK(cap["max_concurrent_at_mean_context"] == cap["kv_blocks"].get<int64_t>() / 256);
}

TEST_CASE("utilization of a shared device: a lone replica is measured against the whole device") {
  // one replica on a device time-sliced 1, 2 or 4 ways runs the same steps at the device's full
  // speed: the same fractions, to rounding (with a k-th of the device per replica they were 2 and 4 times as
  // much, bandwidth 206% at 4)
  std::vector<Json> u;
  for (const char* ts : {"time_slicing=1", "time_slicing=2", "time_slicing=4"})
    u.push_back(test::run(load_scenario_file(FLEETSIM_SOURCE_DIR "/scenarios/time-slicing.yaml",
                                             {ts, "fleet.replicas=1", "engine.gpu_memory_utilization=0.3",
                                              "engine.perf_model=roofline", "duration_s=900"}))
                    .report["utilization"]);
  // and whatever a commitment pays for: the places of a device in use are its places
  u.push_back(test::run(load_scenario_file(
                            FLEETSIM_SOURCE_DIR "/scenarios/time-slicing.yaml",
                            {"time_slicing=4", "fleet.replicas=1", "engine.gpu_memory_utilization=0.3",
                             "engine.perf_model=roofline", "duration_s=900", "fleet.pricing.committed_replicas=3"}))
                  .report["utilization"]);
  for (const char* k : {"compute_fraction", "bandwidth_fraction", "memory_occupancy"}) {
    CAPTURE(k);
    CHECK(u[0][k].get<double>() <= 1.0);
    CHECK(u[3][k].get<double>() == doctest::Approx(u[2][k].get<double>()).epsilon(1e-9).scale(0));
    CHECK(u[1][k].get<double>() == doctest::Approx(u[0][k].get<double>()).epsilon(1e-5).scale(0));
    CHECK(u[2][k].get<double>() == doctest::Approx(u[0][k].get<double>()).epsilon(1e-5).scale(0));
  }
}

TEST_CASE("table: a closed loop of a set number of requests says so, and prints no identity it breaks") {
  const test::Result r =
      test::run(load_scenario_file(FLEETSIM_SOURCE_DIR "/scenarios/closed-loop-benchmark.yaml",
                                   {"workload.arrival.requests=3000", "duration_s=120", "warmup_s=0"}));
  CHECK(r.report["scenario"]["requests"] == 3000);
  const std::string t = format_run_table(r.report);
  CHECK(t.find("64 closed-loop clients (think time fixed(0), 3000 requests in all)") != std::string::npos);
  CHECK(t.find("(a benchmark of 3000 requests: its clients stop when they are sent, so these need not add up)") !=
        std::string::npos);
  CHECK(t.find("clients     64 = ") == std::string::npos);
  // without the cap, the identity stands
  const test::Result open = test::run(load_scenario_file(FLEETSIM_SOURCE_DIR "/scenarios/closed-loop-benchmark.yaml",
                                                         {"duration_s=120", "warmup_s=0"}));
  CHECK(format_run_table(open.report).find("clients     64 = ") != std::string::npos);
}

TEST_CASE("table: a request that costs millionths of a dollar shows two significant digits, not $0.00000") {
  const test::Result r = test::run(
      load_scenario_file(FLEETSIM_SOURCE_DIR "/scenarios/rag-embedding.yaml", {"duration_s=300", "warmup_s=0"}));
  const double per = r.report["cost"]["per_request_usd"].get<double>();
  REQUIRE(per > 0);
  REQUIRE(per < 1e-4);
  const std::string t = format_run_table(r.report);
  CHECK(t.find(fmt::format("request ${:.{}f} ", per, 1 - int(std::floor(std::log10(per))))) != std::string::npos);
  CHECK(t.find("request $0.00000 ") == std::string::npos);
}

TEST_CASE("report: configurations tied on the objective go by p99 TTFT, as the sweep's table and cheapest do") {
  Json d = load_doc("report_sweep.json");
  const Json::json_pointer obj("/metrics/" + [&] {
    std::string p = d["sweep"]["objective"].get<std::string>();
    std::replace(p.begin(), p.end(), '.', '/');
    return p;
  }());
  const Json::json_pointer p99("/metrics/latency_s/ttft/p99");
  std::vector<Json*> feasible;
  for (auto& r : d["rows"])
    if (r["feasible"].get<bool>()) feasible.push_back(&r);
  REQUIRE(feasible.size() >= 2);
  std::sort(feasible.begin(), feasible.end(),
            [&](const Json* a, const Json* b) { return a->at(obj).get<double>() < b->at(obj).get<double>(); });
  Json &a = *feasible[0], &b = *feasible[1];
  // b costs what a does (to a part in 1e12) and answers faster: b comes first
  b[obj] = a[obj].get<double>() * (1 + 1e-12);
  b[p99] = a[p99].get<double>() / 2;
  d["summary"].erase("cheapest");
  const std::string html = html_report(d);
  const std::string ia = "#" + a["index"].dump() + " ", ib = "#" + b["index"].dump() + " ";
  const std::string cost = figure_of(html, "cost-per-token");
  REQUIRE(cost.find(ia) != std::string::npos);
  CHECK(cost.find(ib) < cost.find(ia));
  CHECK(figure_of(html, "pareto").find("cheapest: " + ib.substr(0, ib.size() - 1)) != std::string::npos);
}
