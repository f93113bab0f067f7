// engine.kind: each engine's memory rule against hand-computed figures, its defaults (reported as
// assumed), its own names for its settings, and shipped profiles chosen only for their engine.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "helpers.hpp"
#include "libsim/catalog/capacity.hpp"

using namespace fleetsim;
using test::device;
using test::error_of;
using test::model;

namespace {

std::string kPool(const std::string& engine) { return test::llama8b_pool("h100-sxm-80gb", engine); }

bool assumed(const Scenario& s, const std::string& key) {
  const auto& a = s.pools[0].engine_assumed;
  return std::find(a.begin(), a.end(), key) != a.end();
}

}  // namespace

TEST_CASE("memory rules: vLLM, SGLang and TensorRT-LLM size the KV cache each their own way") {
  const DeviceSpec dev = device("h100-sxm-80gb");
  MemoryInputs in;
  in.device = dev;
  in.model = model("llama-3.1-8b");
  in.gpu_memory_utilization = 0.8;
  const Capacity v = compute_capacity(in);
  const double besides = v.runtime_overhead_gib + v.activation_gib;
  // vLLM: total x fraction - weights - runtime - activations
  CHECK(v.kv_gib == doctest::Approx(dev.memory_gib * 0.8 - v.weights_gib - besides));
  // SGLang: total x mem_fraction_static - weights (runtime and activations outside the fraction)
  in.engine = EngineKind::sglang;
  const Capacity g = compute_capacity(in);
  CHECK(g.kv_gib == doctest::Approx(dev.memory_gib * 0.8 - g.weights_gib));
  CHECK(g.kv_gib > v.kv_gib);
  // TensorRT-LLM: fraction x (total - weights - runtime - activations)
  in.engine = EngineKind::trtllm;
  const Capacity t = compute_capacity(in);
  CHECK(t.kv_gib == doctest::Approx(0.8 * (dev.memory_gib - t.weights_gib - besides)));
  CHECK(t.usable_gib == doctest::Approx(t.weights_gib + besides + t.kv_gib));
  // SGLang with too little left outside its fraction: the KV pool gives way to what must fit
  in.engine = EngineKind::sglang;
  in.gpu_memory_utilization = 0.999;
  const Capacity tight = compute_capacity(in);
  CHECK(tight.kv_gib == doctest::Approx(dev.memory_gib - tight.weights_gib - besides));
}

TEST_CASE("engine defaults: each engine's own, by its documented rule, and reported as assumed") {
  const Scenario v = test::scenario(kPool(""));
  CHECK(v.pools[0].engine_kind == EngineKind::vllm);
  CHECK(v.pools[0].gpu_memory_utilization == 0.9);
  CHECK(v.pools[0].kv_block_tokens == 16);
  CHECK(assumed(v, "gpu_memory_utilization"));
  // TensorRT-LLM: 0.9 of free memory, 2048 requests, 8192 tokens, 32-token blocks
  const Scenario t = test::scenario(kPool("kind: trtllm"));
  CHECK(t.pools[0].gpu_memory_utilization == 0.9);
  CHECK(t.pools[0].max_num_seqs == 2048);
  CHECK(t.pools[0].max_batched_tokens == 8192);
  CHECK(t.pools[0].kv_block_tokens == 32);
  CHECK(assumed(t, "max_batch_size"));
  // SGLang on an 80 GB card at tp 1: chunk 8192, CUDA graphs up to batch 256, so
  // reserved = 512 + 8192 x 1.5 + 256 x 2 + 1/8 x 1024 = 13440 MiB, above the 10 GiB floor
  const Scenario g = test::scenario(kPool("kind: sglang"));
  const double mib = device("h100-sxm-80gb").memory_gib * 1024;
  CHECK(g.pools[0].gpu_memory_utilization == doctest::Approx(std::round((mib - 13440) / mib * 1000) / 1000));
  CHECK(g.pools[0].kv_block_tokens == 1);
  // running requests from the KV pool: min(tokens / 2, tokens / context x 512 within [2048, 4096])
  const double tokens = double(g.pools[0].capacity.kv_capacity_tokens);
  const double pool = std::clamp(tokens / g.pools[0].model.max_context * 512, 2048.0, 4096.0);
  CHECK(g.pools[0].max_num_seqs == int(std::min(std::floor(tokens / 2), pool)));
  // a step holds the prefill chunk and a token of every running request
  CHECK(g.pools[0].max_batched_tokens == 8192 + g.pools[0].max_num_seqs);
  // the sampler's buffers are sized for the requests derived, not a placeholder: setting that
  // count by hand gives the same memory
  const Scenario given =
      test::scenario(kPool("kind: sglang, max_running_requests: " + std::to_string(g.pools[0].max_num_seqs)));
  CHECK(g.pools[0].capacity.activation_gib == given.pools[0].capacity.activation_gib);
  CHECK(g.pools[0].capacity.kv_gib == given.pools[0].capacity.kv_gib);
  // settings given are not assumed, under the engine's name or fleetsim's
  const Scenario g2 = test::scenario(kPool("kind: sglang, mem_fraction_static: 0.8, max_running_requests: 64"));
  CHECK(g2.pools[0].gpu_memory_utilization == 0.8);
  CHECK(g2.pools[0].max_num_seqs == 64);
  CHECK_FALSE(assumed(g2, "mem_fraction_static"));
  CHECK_FALSE(assumed(g2, "max_running_requests"));
  const auto r = test::run(g2);
  CHECK(r.report["scenario"]["engine"]["kind"] == "sglang");
  CHECK(r.report["scenario"]["engine"]["mem_fraction_static"].get<double>() == 0.8);
  const auto& a = r.report["scenario"]["engine"]["assumed"];
  CHECK(std::find(a.begin(), a.end(), "page_size") != a.end());
}

TEST_CASE("engine settings: another engine's key, two names for one setting and vLLM's fraction are located errors") {
  CHECK(error_of(kPool("kind: sglang, gpu_memory_utilization: 0.8")) ==
        "<test>:4:48: error: engine.gpu_memory_utilization: sglang sizes its memory with mem_fraction_static (a "
        "different rule: docs/model.md, \"Engines\"), not gpu_memory_utilization");
  CHECK(error_of(kPool("max_batch_size: 12"))
            .find("max_batch_size is trtllm's setting; this pool's engine is vllm "
                  "(set engine.kind: trtllm") != std::string::npos);
  CHECK(error_of(kPool("kind: trtllm, mem_fraction_static: 0.8")).find("is sglang's setting") != std::string::npos);
  CHECK(error_of(kPool("kind: trtllm, max_num_tokens: 4096, max_batched_tokens: 4096"))
            .find("same limit on tokens per step under two names") != std::string::npos);
  CHECK(error_of(kPool("kind: tgi")).find("expected one of") != std::string::npos);
  // too small a fraction: the error names the engine's own key
  CHECK(error_of(kPool("kind: trtllm, free_gpu_memory_fraction: 0.0001"), {"model=llama-3.1-70b", "weight_dtype=fp8"})
            .find("free_gpu_memory_fraction 0.0001 of what is free") != std::string::npos);
}

TEST_CASE("auto takes a shipped profile only of the pool's engine, the physics model says it was fitted on vLLM") {
  // the shipped H100 Llama 3.1 8B profile was fitted on TensorRT-LLM runs
  const auto t = test::run(test::scenario(kPool("kind: trtllm")));
  CHECK(t.report["scenario"]["step_time"]["profile"] == "h100-sxm-80gb/llama-3.1-8b/tp1-trtllm");
  CHECK(t.report["scenario"]["step_time"]["error_applies"] == true);
  const auto v = test::run(test::scenario(kPool("")));
  CHECK(v.report["scenario"]["perf_model"] == "physics");
  CHECK(v.report["scenario"]["step_time"]["error_applies"] == true);
  // named on a vLLM pool, the TensorRT-LLM profile runs, but its error is not quoted as the pool's
  const auto n = test::run(test::scenario(kPool("perf_profile: h100-sxm-80gb/llama-3.1-8b/tp1-trtllm")));
  CHECK(n.report["scenario"]["step_time"]["error_applies"] == false);
  CHECK(n.report["scenario"]["step_time"]["note"].get<std::string>().find("trtllm runs") != std::string::npos);
  // SGLang on a configuration no SGLang profile covers: physics, fitted on vLLM, not quoted
  const auto g = test::run(test::scenario(kPool("kind: sglang")));
  CHECK(g.report["scenario"]["perf_model"] == "physics");
  CHECK(g.report["scenario"]["step_time"]["error_applies"] == false);
  CHECK(g.report["scenario"]["step_time"]["note"].get<std::string>().find("fitted on vLLM runs") != std::string::npos);
}

TEST_CASE("SGLang's default fraction reserves for the pool's own chunk, data-parallel attention and speculation") {
  const double mib = device("h100-sxm-80gb").memory_gib * 1024;
  auto fraction = [&](double reserved) { return std::round((mib - reserved) / mib * 1000) / 1000; };
  // a chunk of 32,768: 512 + 32768 x 1.5 + 256 x 2 + 1024 / 8 = 50304 MiB (at the default chunk, 13440)
  const Scenario big = test::scenario(kPool("kind: sglang, chunked_prefill_size: 32768"));
  CHECK(big.pools[0].gpu_memory_utilization == doctest::Approx(fraction(50304)));
  CHECK(big.pools[0].capacity.kv_gib < test::scenario(kPool("kind: sglang")).pools[0].capacity.kv_gib / 2);
  // a draft model adds 6 GiB, heads 2 GiB (after the 10 GiB floor)
  const Scenario draft =
      test::scenario(kPool("kind: sglang, speculative: {draft_model: llama-3.2-1b, tokens: 4, acceptance: 0.7}"));
  CHECK(draft.pools[0].gpu_memory_utilization == doctest::Approx(fraction(13440 + 6144)));
  const Scenario heads = test::scenario(
      kPool("kind: sglang, speculative: {draft_layers: 1, draft_vocab: 32000, tokens: 4, acceptance: 0.7}"));
  CHECK(heads.pools[0].gpu_memory_utilization == doctest::Approx(fraction(13440 + 2048)));
  // data-parallel attention, 8 ranks of one device: SGLang's tp_size is 8, its CUDA graphs reach
  // batch 512, each rank pads 512 x 8 x 4.5: 512 + 8192 x 1.5 + 512 x 2 + 8 / 8 x 1024 + 18432
  const Scenario dp = test::scenario(
      "duration_s: 60\ndevice: h100-sxm-80gb\nmodel: qwen3-30b-a3b\n"
      "engine: {kind: sglang, data_parallel: 8}\nfleet: {replicas: 8}\n"
      "workload: {arrival: {process: poisson, rate_per_s: 2}, prompt_tokens: 512, output_tokens: 64}\n");
  CHECK(dp.pools[0].gpu_memory_utilization == doctest::Approx(fraction(512 + 12288 + 1024 + 1024 + 18432)));
  // a device too small for the reserve: a located error, not a negative fraction
  const std::string small =
      "duration_s: 60\ncatalog:\n  devices:\n    tiny: {memory_gib: 3, bandwidth_gb_s: 300, bf16_tflops: 50, "
      "usd_per_hour: 0.1}\ndevice: tiny\nmodel: qwen3-0.6b\nengine: {kind: sglang}\nfleet: {replicas: 1}\n"
      "workload: {arrival: {process: poisson, rate_per_s: 2}, prompt_tokens: 512, output_tokens: 64}\n";
  const std::string e = error_of(small);
  CHECK(e.find("<test>:7:16: error: engine.kind: ") == 0);
  CHECK(e.find("SGLang sets aside 3.6 GiB of tiny's 3.0 GiB outside its static memory") != std::string::npos);
  CHECK(e.find("set engine.mem_fraction_static") != std::string::npos);
}
