// Benchmarks whose request lengths vary (ShareGPT): the per-request lengths are read from a CSV
// column or a vLLM result's input_lens/output_lens, and an open-loop point replays them in order.
#include <doctest/doctest.h>

#include <cmath>
#include <string>

#include "helpers.hpp"
#include "libsim/calibrate/benchmark.hpp"

using namespace fleetsim;
using test::write_temp;

namespace {

const char* kHeader = "model,device,tp,isl,osl,request_rate,num_prompts,mean_ttft_ms,request_lengths,notes\n";

std::string lengths(const std::string& name, const std::string& rows) {
  return write_temp(name, "prompt_tokens,output_tokens\n" + rows);
}

// An open-loop vLLM point of Llama 3.1 8B on one H100 at `rate` requests/s, nothing measured.
BenchPoint h100_point(double rate) {
  BenchPoint p;
  p.engine = "vllm";
  p.model = "llama-3.1-8b";
  p.device = "h100-sxm-80gb";
  p.rate_per_s = rate;
  for (double& v : p.measured) v = std::nan("");
  return p;
}

BenchPoint one(const std::string& csv) {
  auto v = read_benchmarks(csv, BenchPoint{});
  REQUIRE(v.size() == 1);
  return v[0];
}

}  // namespace

TEST_CASE("bench replay: a request_lengths file gives each request its lengths, the row's means from them") {
  lengths("replay-a.csv", "100,20\n300,40\n");
  const BenchPoint p = one(write_temp(
      "replay-a-points.csv", std::string(kHeader) + "meta-llama/Llama-3.1-8B,H100-SXM,1,,,1,2,50,replay-a.csv,\n"));
  CHECK(p.skip.empty());
  REQUIRE(p.req_prompt.size() == 2);
  CHECK(p.req_prompt[1] == 300);
  CHECK(p.req_output[1] == 40);
  CHECK(p.isl == doctest::Approx(200));
  CHECK(p.osl == doctest::Approx(30));
}

TEST_CASE("bench replay: a lengths file that is missing, malformed or of another size is an error at the row") {
  const std::string row = "meta-llama/Llama-3.1-8B,H100-SXM,1,200,30,1,2,50,";
  const std::string missing = test::input_error(
      [&] { read_benchmarks(write_temp("replay-m.csv", std::string(kHeader) + row + "nope.csv,\n"), {}); });
  CHECK(missing.find("replay-m.csv:2") != std::string::npos);
  CHECK(missing.find("request_lengths") != std::string::npos);
  lengths("replay-bad.csv", "100,0\n");
  const std::string bad = test::input_error(
      [&] { read_benchmarks(write_temp("replay-b.csv", std::string(kHeader) + row + "replay-bad.csv,\n"), {}); });
  CHECK(bad.find("replay-bad.csv:2") != std::string::npos);
  lengths("replay-three.csv", "100,10\n100,10\n100,10\n");
  const std::string size = test::input_error(
      [&] { read_benchmarks(write_temp("replay-s.csv", std::string(kHeader) + row + "replay-three.csv,\n"), {}); });
  CHECK(size.find("3 requests") != std::string::npos);
  CHECK(size.find("num_prompts is 2") != std::string::npos);
}

TEST_CASE("bench replay: a vLLM result's input_lens and output_lens are its requests, a failed request skips it") {
  const std::string head = R"({"model_id": "meta-llama/Llama-3.1-8B", "request_rate": 2, "num_prompts": 3,
      "completed": 3, "mean_ttft_ms": 30, "mean_tpot_ms": 8, "input_lens": [10, 20, 30], )";
  BenchPoint d;
  d.device_id = "H100-SXM";
  auto ok =
      read_benchmarks(write_temp("replay-ok.json", head + R"("output_lens": [5, 6, 7], "errors": ["", "", ""]})"), d);
  REQUIRE(ok.size() == 1);
  CHECK(ok[0].skip.empty());
  REQUIRE(ok[0].req_output.size() == 3);
  CHECK(ok[0].req_prompt[2] == 30);
  CHECK(ok[0].isl == doctest::Approx(20));  // total_input_tokens absent: the mean of input_lens
  auto failed = read_benchmarks(
      write_temp("replay-fail.json", head + R"("output_lens": [5, 0, 7], "errors": ["", "timeout", ""]})"), d);
  CHECK(failed[0].skip.find("requests failed") != std::string::npos);
  const std::string uneven = test::input_error(
      [&] { read_benchmarks(write_temp("replay-uneven.json", head + R"("output_lens": [5, 6]})"), d); });
  CHECK(uneven.find("input_lens has 3 entries and output_lens 2") != std::string::npos);
}

TEST_CASE("bench replay: equal lengths at a constant rate replay exactly what the constant process runs") {
  // The replay sends request i at i / rate, as a constant-rate process does: the two predictions match.
  BenchPoint a = h100_point(4);
  a.isl = 512;
  a.osl = 64;
  a.num_prompts = 40;
  BenchPoint b = a;
  b.req_prompt.assign(40, 512);
  b.req_output.assign(40, 64);
  HostWorkspace ws;
  const Prediction pa = predict_point(prepare_point(a), nullptr, ws);
  const Prediction pb = predict_point(prepare_point(b), nullptr, ws);
  REQUIRE(pa.ok);
  REQUIRE(pb.ok);
  for (int m = 0; m < kBenchMetrics; ++m) CHECK(pb.v[m] == doctest::Approx(pa.v[m]).epsilon(1e-9));
}

TEST_CASE("bench replay: Poisson gaps have the rate's mean, warm prompts cache their full 16-token blocks") {
  BenchPoint p = h100_point(5);
  p.poisson = true;
  p.warm_prompts = 3;
  const int n = 4000;
  for (int i = 0; i < n; ++i) {
    p.req_prompt.push_back(i == 0 ? 16 : i == 1 ? 17 : i == 2 ? 40 : 100);
    p.req_output.push_back(8);
  }
  p.isl = 100;
  p.osl = 8;
  const PreparedPoint pp = prepare_point(p);
  const TraceData& t = *pp.scenario.classes[0].trace;
  REQUIRE(t.t_s.size() == size_t(n));
  CHECK(t.t_s[0] == 0.0);
  // mean gap 1/rate; the standard error of the mean of n - 1 exponential gaps is (1/rate)/sqrt(n - 1)
  const double mean_gap = t.t_s.back() / double(n - 1);
  CHECK(std::fabs(mean_gap - 0.2) < 4 * 0.2 / std::sqrt(double(n - 1)));
  REQUIRE(t.cached_prefix.size() == size_t(n));
  CHECK(t.cached_prefix[0] == 0);   // 16 tokens: the last is computed, so no whole block before it
  CHECK(t.cached_prefix[1] == 16);  // 17 tokens: one block
  CHECK(t.cached_prefix[2] == 32);  // 40 tokens: two blocks
  CHECK(t.cached_prefix[3] == 0);   // not a warm prompt
}

TEST_CASE("bench replay: load stages run one after another, the next a fixed gap after the last arrival") {
  const BenchPoint p = one(write_temp(
      "replay-stages.csv", std::string(kHeader) + "meta-llama/Llama-3.1-8B,H100-SXM,1,200,30,,,50,,stages=2x10+4x5\n"));
  REQUIRE(p.skip.empty());
  REQUIRE(p.stages.size() == 2);
  CHECK(p.num_prompts == 40);  // 2 x 10 + 4 x 5
  CHECK(p.rate_per_s == 2);
  const PreparedPoint pp = prepare_point(p);
  const TraceData& t = *pp.scenario.classes[0].trace;
  REQUIRE(t.t_s.size() == 40u);
  CHECK(t.t_s[19] == doctest::Approx(9.5));          // 20 requests, 0.5 s apart
  CHECK(t.t_s[20] == doctest::Approx(9.5 + 60.0));   // the next stage 60 s after the last arrival
  CHECK(t.t_s[39] == doctest::Approx(69.5 + 4.75));  // 20 requests, 0.25 s apart
  CHECK(t.prompt[39] == 200);
  CHECK(t.output[39] == 30);
}

TEST_CASE(
    "bench replay: prompts that repeat are cached after their first send, a group's system prompt after its first") {
  // 4 distinct prompts of 100 tokens in 2 groups sharing a 40-token system prompt, sent in a cycle:
  // the first of each group computes everything, the second finds its system prompt's two whole
  // blocks (32 tokens), and every repeat its own six (96 tokens; the last token is always computed)
  BenchPoint p = h100_point(2);
  p.isl = 100;
  p.osl = 8;
  p.num_prompts = 12;
  p.distinct_prompts = 4;
  p.prompt_groups = 2;
  p.system_prompt_tokens = 40;
  const PreparedPoint pp = prepare_point(p);
  const TraceData& t = *pp.scenario.classes[0].trace;
  REQUIRE(t.cached_prefix.size() == 12u);
  int cold = 0, system = 0;
  for (int i = 0; i < 4; ++i) {
    cold += t.cached_prefix[size_t(i)] == 0;
    system += t.cached_prefix[size_t(i)] == 32;
  }
  CHECK(cold == 2);
  CHECK(system == 2);
  for (int i = 4; i < 12; ++i) CHECK(t.cached_prefix[size_t(i)] == 96);
  CHECK(t.prefix_hit_share == doctest::Approx((2 * 32 + 8 * 96) / 1200.0));
}

TEST_CASE("bench replay: bad stages and prompt groups are errors at the row") {
  const std::string row = "meta-llama/Llama-3.1-8B,H100-SXM,1,200,30,,,50,,";
  auto err = [&](const std::string& name, const std::string& notes) {
    return test::input_error([&] { read_benchmarks(write_temp(name, std::string(kHeader) + row + notes + "\n"), {}); });
  };
  const std::string half = err("replay-s1.csv", "stages=5x0.5");
  CHECK(half.find("replay-s1.csv:2") != std::string::npos);
  CHECK(half.find("whole number of requests") != std::string::npos);
  CHECK(err("replay-s2.csv", "stages=5").find("RATExSECONDS") != std::string::npos);
  CHECK(err("replay-s3.csv", "distinct_prompts=10; prompt_groups=3").find("prompt_groups must divide") !=
        std::string::npos);
}

TEST_CASE("bench replay: vLLM 0.14 and later schedule ahead, gpt-oss's 4-bit label is its MXFP4 experts") {
  const std::string h = "model,device,tp,isl,osl,concurrency,engine,engine_version,weight_dtype,mean_tpot_ms\n";
  const auto v =
      read_benchmarks(write_temp("replay-async.csv", h + "openai/gpt-oss-120b,H100-SXM,2,1024,1024,8,vllm,"
                                                         "0.18.0,fp4,5\n"
                                                         "Qwen/Qwen3-32B,H100-SXM,2,1024,1024,8,vllm,0.12.0,,"
                                                         "15\nQwen/Qwen3-32B,H100-SXM,2,1024,1024,8,vllm,,,15\n"),
                      BenchPoint{});
  REQUIRE(v.size() == 3);
  CHECK(v[0].async_scheduling);
  CHECK(v[0].weight_dtype == "bf16");
  CHECK(v[0].expert_weight_dtype == "mxfp4");
  CHECK(v[0].skip.empty());
  CHECK(!v[1].async_scheduling);
  CHECK(!v[2].async_scheduling);  // no version stated: the harness replays it without
  CHECK(benchmark_scenario_yaml(v[0]).find("async_scheduling: true") != std::string::npos);
  CHECK(benchmark_scenario_yaml(v[1]).find("async_scheduling: false") != std::string::npos);
}

TEST_CASE("bench replay: p2p=0 runs the replica's collectives over PCIe, not the scale-up link") {
  // Qwen2-7B at tp 2 on A100s: an all-reduce moves 2 (tp - 1) / tp x hidden x 2 bytes a token,
  // over NVLink 3 (300 GB/s, 8 us) or, without peer-to-peer access, PCIe (32 GB/s, 25 us)
  const std::string h = "model,device,tp,isl,osl,request_rate,num_prompts,mean_tpot_ms,notes\n";
  const std::string row = "Qwen/Qwen2-7B-Instruct,A100-80GB,2,1024,1024,inf,1,9,";
  const auto v = read_benchmarks(write_temp("replay-p2p.csv", h + row + "\n" + row + "1-GPU pods; p2p=0\n"), {});
  REQUIRE(v.size() == 2);
  CHECK(v[0].peer_to_peer);
  CHECK(!v[1].peer_to_peer);
  const double per_token = 2.0 * 1 / 2 * 3584 * 2;  // bytes
  const ParallelParams nvlink = prepare_point(v[0]).scenario.pools[0].params().par;
  const ParallelParams pcie = prepare_point(v[1]).scenario.pools[0].params().par;
  CHECK(nvlink.allreduce_latency_s == doctest::Approx(8e-6).scale(0));
  CHECK(nvlink.allreduce_s_per_token == doctest::Approx(per_token / 300e9).scale(0));
  CHECK(pcie.allreduce_latency_s == doctest::Approx(25e-6).scale(0));
  CHECK(pcie.allreduce_s_per_token == doctest::Approx(per_token / 32e9).scale(0));
  CHECK(pcie.allreduces == nvlink.allreduces);
  const std::string bad =
      test::input_error([&] { read_benchmarks(write_temp("replay-p2p-bad.csv", h + row + "p2p=2\n"), {}); });
  CHECK(bad.find("replay-p2p-bad.csv:2") != std::string::npos);
  CHECK(bad.find("p2p must be 0 or 1") != std::string::npos);
}

TEST_CASE("bench replay: warm prompts alone replay the run, repeated prompts with no count send a minute's") {
  BenchPoint p = h100_point(10);
  p.num_prompts = 20;
  p.isl = 100;
  p.osl = 8;
  p.warm_prompts = 2;
  const PreparedPoint warm = prepare_point(p);
  REQUIRE(warm.scenario.classes[0].trace);
  const TraceData& t = *warm.scenario.classes[0].trace;
  REQUIRE(t.cached_prefix.size() == 20);
  CHECK(t.cached_prefix[0] == 96);  // six full blocks of 16 before the last token
  CHECK(t.cached_prefix[1] == 96);
  CHECK(t.cached_prefix[2] == 0);
  p.warm_prompts = 0;
  p.num_prompts = 0;
  p.distinct_prompts = 50;
  const PreparedPoint rep = prepare_point(p);
  REQUIRE(rep.scenario.classes[0].trace);
  CHECK(rep.scenario.classes[0].trace->t_s.size() == 600);  // 60 s at 10 requests/s, as without repeats
}
