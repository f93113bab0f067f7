// The batching trade the seeds describe, and the KV cache as a hard boundary.
#include <doctest/doctest.h>

#include "helpers.hpp"

using namespace fleetsim;

namespace {

// One H100 running Llama 3.1 8B, saturated (arrivals far above any configuration's capacity).
std::string saturated(const std::string& engine) {
  return "duration_s: 900\nwarmup_s: 150\ndevice: h100-sxm-80gb\nmodel: llama-3.1-8b\n"
         "engine: " +
         engine +
         "\n"
         "fleet: {replicas: 1, queue_limit: 500}\n"
         "workload:\n  arrival: {process: poisson, rate_per_s: 80}\n"
         "  prompt_tokens: {dist: lognormal, median: 512, p99: 2048}\n"
         "  output_tokens: {dist: lognormal, median: 128, p99: 1024}\n";
}

struct Outcome {
  double throughput, cost_per_request, busy, compute, batch;
};

Outcome measure(const std::string& engine) {
  const auto r = test::run(test::scenario(saturated(engine)));
  const Json& j = r.report;
  CHECK(r.drained);
  return {j["throughput"]["requests_per_s"].get<double>(), j["cost"]["per_request_usd"].get<double>(),
          j["utilization"]["busy_fraction"].get<double>(), j["utilization"]["compute_fraction"].get<double>(),
          j["utilization"]["mean_batch_size"].get<double>()};
}

}  // namespace

TEST_CASE("continuous batching sustains a multiple of one-at-a-time and static batching, at a fraction of the cost") {
  const Outcome one = measure("{max_num_seqs: 1}");
  const Outcome stat = measure("{batching: static, max_batch: 16, batch_window_s: 0.05}");
  const Outcome cont = measure("{max_num_seqs: 256}");
  MESSAGE("max throughput req/s: one-at-a-time " << one.throughput << ", static " << stat.throughput << ", continuous "
                                                 << cont.throughput);
  MESSAGE("cost per request: " << one.cost_per_request << ", " << stat.cost_per_request << ", "
                               << cont.cost_per_request);
  CHECK(one.batch == doctest::Approx(1.0));
  // all three are saturated: the device is busy all the time, yet does very different work
  CHECK(one.busy > 0.99);
  CHECK(stat.busy > 0.99);
  CHECK(cont.busy > 0.99);
  CHECK(stat.throughput > 2.0 * one.throughput);
  CHECK(cont.throughput > 3.0 * stat.throughput);
  CHECK(cont.cost_per_request < stat.cost_per_request / 3.0);
  CHECK(stat.cost_per_request < one.cost_per_request / 2.0);
  // utilization in the sense that costs money: useful arithmetic per provisioned second
  CHECK(cont.compute > 3.0 * stat.compute);
}

TEST_CASE("static batching makes short requests wait for the longest member, continuous batching does not") {
  // two requests arrive together: 8 and 400 output tokens
  const std::string trace =
      test::write_temp("pair.csv", "timestamp_s,prompt_tokens,output_tokens\n0.0,200,8\n0.001,200,400\n");
  auto yaml = [&](const std::string& engine) {
    return "duration_s: 10\ndevice: h100-sxm-80gb\nmodel: llama-3.1-8b\nengine: " + engine +
           "\nfleet: {replicas: 1}\nworkload: {arrival: {process: trace, path: " + trace + "}}\n";
  };
  const auto st = test::run(test::scenario(yaml("{batching: static, max_batch: 2, batch_window_s: 0.1}")));
  const auto co = test::run(test::scenario(yaml("{max_num_seqs: 8}")));
  REQUIRE(st.all->completed == 2);
  REQUIRE(co.all->completed == 2);
  // static: both answers come back when the 400-token member finishes
  CHECK(st.all->e2e.min / st.all->e2e.max > 0.99);
  // continuous: the short one leaves after its 8 tokens
  CHECK(co.all->e2e.min / co.all->e2e.max < 0.1);
  // and the long one is no slower for it
  CHECK(co.all->e2e.max < st.all->e2e.max);
}

TEST_CASE("when KV runs out, the newest sequence is preempted and recomputed, no request is lost") {
  // ~2.7 GiB of KV (about 22,000 tokens) for requests that grow to 3,000 tokens each
  const std::string yaml =
      "duration_s: 600\nwarmup_s: 0\ndevice: h100-sxm-80gb\nmodel: llama-3.1-8b\n"
      "engine: {gpu_memory_utilization: 0.24, max_num_seqs: 64}\n"
      "fleet: {replicas: 1, queue_limit: 100000}\n"
      "workload: {arrival: {process: poisson, rate_per_s: 0.5}, prompt_tokens: 1000, output_tokens: 2000}\n";
  const Scenario s = test::scenario(yaml);
  CHECK(s.pools[0].capacity.kv_capacity_tokens < 25000);
  const auto r = test::run(s);
  const ClassTally& t = *r.all;
  MESSAGE("KV tokens " << s.pools[0].capacity.kv_capacity_tokens << ", preemptions " << t.preempted << ", completed "
                       << t.completed);
  CHECK(t.preempted > 0);
  CHECK(t.completed == t.arrived);
  CHECK(t.rejected_queue_full == 0);
  CHECK(r.drained);  // every block returned
  CHECK(r.report["utilization"]["kv_occupancy"].get<double>() > 0.5);
  // the same load with plenty of memory never preempts
  const auto roomy = test::run(test::scenario(yaml, {"engine.gpu_memory_utilization=0.9"}));
  CHECK(roomy.all->preempted == 0);
  CHECK(roomy.all->completed == t.completed);
}

TEST_CASE("static batching: a sliding-window model's sequences each hold a window beside their padded length") {
  // Llama 3.1 8B with half its layers on a 4,096-token window: a padded sequence holds its length in
  // the 16 full layers and a window in the other 16. Two requests of half the cache each fit without
  // their windows, not with them: they run one after the other. One whose length and window pass
  // the cache is turned away at arrival.
  auto yaml = [](const std::string& trace) {
    return "duration_s: 600\nwarmup_s: 0\ndevice: h100-sxm-80gb\nmodel: llama-3.1-8b\n"
           "catalog: {models: {llama-3.1-8b: {sliding_layers: 16, sliding_window: 4096}}}\n"
           "engine: {batching: static, max_batch: 2, batch_window_s: 0.1, gpu_memory_utilization: 0.25}\n"
           "fleet: {replicas: 1}\nworkload: {arrival: {process: trace, path: " +
           trace + "}}\n";
  };
  const Scenario probe =
      test::scenario(yaml(test::write_temp("one.csv", "timestamp_s,prompt_tokens,output_tokens\n0,100,10\n")));
  const Capacity& c = probe.pools[0].capacity;
  const int64_t cap = c.kv_blocks * 16, window = c.window_blocks_per_seq * 16;
  REQUIRE(window == 4096);  // the window's layers hold as much per token as the full ones
  const int64_t prompt = cap / 2 - 10;
  REQUIRE(2 * (prompt + 10) <= cap);
  REQUIRE(prompt + 10 + window <= cap);
  const auto pair = test::run(test::scenario(
      yaml(test::write_temp("two.csv", "timestamp_s,prompt_tokens,output_tokens\n0," + std::to_string(prompt) +
                                           ",10\n0.001," + std::to_string(prompt) + ",10\n"))));
  REQUIRE(pair.all->completed == 2);
  CHECK(pair.all->ttft.max > 1.5 * pair.all->ttft.min);  // the second waited for the first batch
  const auto lone = test::run(test::scenario(yaml(test::write_temp(
      "long.csv", "timestamp_s,prompt_tokens,output_tokens\n0," + std::to_string(cap - window - 10 + 1) + ",10\n"))));
  CHECK(lone.all->rejected_too_long == 1);
  CHECK(lone.all->completed == 0);
}

TEST_CASE("a request too long for the KV cache even alone is rejected with reason too_long") {
  const std::string yaml =
      "duration_s: 100\nwarmup_s: 0\ndevice: h100-sxm-80gb\nmodel: llama-3.1-8b\n"
      "engine: {gpu_memory_utilization: 0.24}\nfleet: {replicas: 1}\n"
      "workload: {arrival: {process: poisson, rate_per_s: 1}, prompt_tokens: 30000, output_tokens: 10}\n";
  const auto r = test::run(test::scenario(yaml));
  CHECK(r.all->arrived > 50);
  CHECK(r.all->rejected_too_long == r.all->arrived);
  CHECK(r.all->completed == 0);
}

TEST_CASE("prompts longer than the model's context are truncated to it") {
  const std::string yaml =
      "duration_s: 50\nwarmup_s: 0\ndevice: h100-sxm-80gb\nmodel: bge-large-en-v1.5\n"
      "fleet: {replicas: 1}\n"
      "workload: {arrival: {process: poisson, rate_per_s: 20}, prompt_tokens: 2000}\n";
  const auto r = test::run(test::scenario(yaml));
  CHECK(r.all->completed == r.all->arrived);
  CHECK(r.all->input_tokens == doctest::Approx(512.0 * double(r.all->completed)));  // 512-token context
  CHECK(r.all->output_tokens == 0);
  CHECK(r.all->tpot.n == 0);
  CHECK(r.report["cost"]["per_million_output_tokens_usd"].is_null());
}

TEST_CASE("chunked prefill: a prompt longer than the step budget takes several steps") {
  const std::string yaml =
      "duration_s: 10\nwarmup_s: 0\ndevice: h100-sxm-80gb\nmodel: llama-3.1-8b\n"
      "engine: {max_batched_tokens: 1024, max_num_seqs: 4, perf_model: linear, step_base_s: 0.01}\n"
      "fleet: {replicas: 1}\n"
      "workload: {arrival: {process: trace, path: TRACE}}\n";
  const std::string trace = test::write_temp("chunk.csv", "timestamp_s,prompt_tokens,output_tokens\n0,4000,3\n");
  std::string y = yaml;
  y.replace(y.find("TRACE"), 5, trace);
  const auto r = test::run(test::scenario(y));
  // 4000 tokens at 1024 per step = 4 prefill steps (the last emits token 1), then 2 decode steps
  CHECK(r.all->ttft.max == doctest::Approx(0.04));
  CHECK(r.all->e2e.max == doctest::Approx(0.06));
  CHECK(r.all->tpot.max == doctest::Approx(0.01));
}
