// Memory arithmetic against hand-computed figures and a real engine's measured allocation.
#include <doctest/doctest.h>

#include <cmath>

#include "helpers.hpp"
#include "libsim/base/error.hpp"
#include "libsim/catalog/capacity.hpp"
#include "libsim/report/documents.hpp"

using namespace fleetsim;

using test::device;
using test::model;

TEST_CASE("KV bytes per token of the catalog models, by hand: 2 x layers x kv_heads x head_dim x bytes") {
  CHECK(kv_bytes_per_token(model("llama-3.1-8b"), 2) == 2.0 * 32 * 8 * 128 * 2);  // 131072 = 128 KiB
  CHECK(kv_bytes_per_token(model("llama-3.1-8b"), 2) == 131072.0);
  CHECK(kv_bytes_per_token(model("llama-3.1-70b"), 2) == 327680.0);  // 320 KiB
  CHECK(kv_bytes_per_token(model("mistral-7b"), 2) == 131072.0);
  CHECK(kv_bytes_per_token(model("qwen2.5-7b"), 2) == 57344.0);  // 28 layers, 4 KV heads
  CHECK(kv_bytes_per_token(model("qwen2.5-72b"), 2) == 327680.0);
  CHECK(kv_bytes_per_token(model("llama-3.1-8b"), 1) == 65536.0);  // fp8 KV halves it
}

TEST_CASE("the parts of vLLM's memory for Llama 3 8B on an H100 80GB, by hand, at the defaults") {
  // vLLM >= 0.21 with fleetsim's defaults: 256 sequences, 8,192 tokens per step, FlashInfer's sampler,
  // CUDA graphs reserved before the KV cache is sized.
  MemoryInputs in;
  in.device = device("h100-sxm-80gb");
  in.model = model("llama-3.1-8b");
  const Capacity c = compute_capacity(in);
  const double gib = 1073741824.0;
  CHECK(c.usable_gib == doctest::Approx(79.22 * 0.9));
  CHECK(c.weights_gib == doctest::Approx(8.03e9 * 2 / gib));  // 14.957
  CHECK(c.non_torch_gib == 0.13);
  // the sampler's 256 x 128,256 logits at 27.3 bytes, plus the step's hidden states, outweigh the
  // forward pass's 0.936 x 8,192 x 2 x (3 x 14,336 + 4 x 4,096) bytes
  const double forward = 0.936 * 8192 * 2.0 * (3 * 14336 + 4 * 4096);
  const double sampler = 256.0 * 128256 * 27.3 + 8192.0 * 4096 * 2;
  CHECK(sampler > forward);
  CHECK(c.activation_gib == doctest::Approx(sampler / gib));  // 0.897
  // 51 piecewise graphs (sizes up to 512) and 35 full decode graphs (up to 256): 0.30 + 84 x 2 MiB
  CHECK(cuda_graph_count(256, 8192) == 86);
  CHECK(c.cuda_graph_gib == doctest::Approx(0.30 + 84 * 2.0 / 1024));
  CHECK(c.runtime_overhead_gib == doctest::Approx(c.non_torch_gib + c.cuda_graph_gib));
  // 71.298 - 14.957 - 0.13 - 0.897 - 0.464 = 54.85 GiB; 512 blocks of 16 tokens per GiB
  const double kv = 79.22 * 0.9 - 8.03e9 * 2 / gib - 0.13 - sampler / gib - (0.30 + 84 * 2.0 / 1024);
  CHECK(c.kv_gib == doctest::Approx(kv));
  CHECK(c.kv_blocks == int64_t(std::floor(kv * 512)));
  CHECK(c.kv_capacity_tokens == c.kv_blocks * 16);
  CHECK(max_concurrent(c, 4096, 16) == c.kv_blocks / 256);
  CHECK(max_concurrent(c, 4097, 16) == c.kv_blocks / 257);
  // the naive estimate overstates the KV cache even here
  CHECK(c.naive_kv_gib / c.kv_gib > 1.02);
  // without CUDA graphs (--enforce-eager) their memory goes to the KV cache
  in.enforce_eager = true;
  const Capacity eager = compute_capacity(in);
  CHECK(eager.cuda_graph_gib == 0);
  CHECK(eager.kv_gib == doctest::Approx(c.kv_gib + c.cuda_graph_gib));
}

TEST_CASE("KV capacity lands on what vLLM allocates for Llama 3 8B on an H100 80GB") {
  // vLLM's V1 profile (llm-d/llm-d-benchmark@2593348, config_explorer/empirical-vllm-memory-results.md):
  // total 79.18 GiB x 0.9 = 71.26; weights 14.99, peak activation 4.76, non-torch 0.13 -> 51.38 GiB
  // of KV cache. That run sized vLLM's H100 defaults (1,024 sequences x 8,192 tokens) with
  // PyTorch's sampler and, being older than v0.21, captured its CUDA graphs after the KV cache.
  MemoryInputs in;
  in.device = device("h100-sxm-80gb");
  in.device.memory_gib = 79.18;
  in.model = model("llama-3.1-8b");
  in.max_num_seqs = 1024;
  in.sampler = SamplerPath::pytorch;
  in.reserve_cuda_graphs = false;
  const Capacity c = compute_capacity(in);
  CHECK(c.weights_gib == doctest::Approx(14.99).epsilon(0.003));
  CHECK(c.non_torch_gib == doctest::Approx(0.13));
  CHECK(c.activation_gib == doctest::Approx(4.76).epsilon(0.01));
  CHECK(c.kv_gib == doctest::Approx(51.38).epsilon(0.01));
  // by hand: 71.262 - 14.957 - 0.13 - (1,024 x 128,256 x 38.3 + 8,192 x 4,096 x 2) / 2^30 = 51.43 GiB
  const double gib = 1073741824.0;
  CHECK(c.kv_gib ==
        doctest::Approx(79.18 * 0.9 - 8.03e9 * 2 / gib - 0.13 - (1024.0 * 128256 * 38.3 + 8192.0 * 4096 * 2) / gib));

  // vLLM PR #10511's V0 profile of Meta-Llama-3-8B on an 80 GB card (79.22 GiB x 0.9; 256
  // sequences x 8,192 tokens): 53.29 GiB. fleetsim gives 3.2% more: that profiler counted 1.79 GiB
  // of non-torch memory, which vLLM PR #12126 brought down to 0.16 GiB on an H100 of the same 79.22 GiB.
  in.device.memory_gib = 79.22;
  in.max_num_seqs = 256;
  CHECK(compute_capacity(in).kv_gib == doctest::Approx(53.29).epsilon(0.035));
}

TEST_CASE("on a small device the naive estimate overstates KV capacity by tens of percent") {
  MemoryInputs in;
  in.device = device("l4-24gb");
  in.model = model("llama-3.1-8b");
  const Capacity c = compute_capacity(in);
  CHECK(c.fits);
  // 19.83 - 14.96 = 4.87 GiB naive, 3.38 GiB after non-torch memory, activations and CUDA graphs
  CHECK(c.naive_kv_gib / c.kv_gib > 1.4);
}

TEST_CASE("quantized weights keep their embedding and LM head at 16 bits, MXFP4 experts are padded") {
  const double gib = 1073741824.0;
  // Llama 3.3 70B FP8 (RedHatAI's FP8-dynamic): 2 x 128,256 x 8,192 parameters stay bf16; vLLM logs
  // 67.72 GiB on one H100 and 33.88 GiB per device at tp 2 (llm-d-benchmark, as above)
  const ModelSpec& l70 = model("llama-3.3-70b");
  const double fp8 = 70.55e9 + 2.0 * 128256 * 8192;
  CHECK(resident_weight_bytes(l70, 1.0, -1) == doctest::Approx(fp8));
  CHECK(resident_weight_bytes(l70, 1.0, -1) / gib == doctest::Approx(67.72).epsilon(0.002));
  CHECK(weight_bytes(l70, 1.0, -1) == doctest::Approx(70.55e9));  // what a step reads is unchanged
  // Qwen3 0.6B shares its embedding with the LM head: counted once
  CHECK(resident_weight_bytes(model("qwen3-0.6b"), 1.0, -1) == doctest::Approx(0.596e9 + 151936.0 * 1024));
  // gpt-oss-20b: the experts' hidden size 2,880 is padded to 3,072 (their intermediate 2,880 is a
  // multiple of 64 already); vLLM logs 13.47 GiB on an H100
  const ModelSpec& oss = model("gpt-oss-20b");
  const double routed = oss.routed_expert_params();
  CHECK(resident_weight_bytes(oss, 2.0, 0.53125) ==
        doctest::Approx((20.91e9 - routed) * 2 + routed * 0.53125 * 3072 / 2880));
  CHECK(resident_weight_bytes(oss, 2.0, 0.53125) / gib == doctest::Approx(13.47).epsilon(0.003));
  // the whole model in MXFP4 (no expert dtype of its own): the experts are padded all the same
  const double tables = 2.0 * double(oss.vocab) * oss.hidden * (2.0 - 0.53125);
  CHECK(resident_weight_bytes(oss, 0.53125, -1) ==
        doctest::Approx((20.91e9 - routed) * 0.53125 + routed * 0.53125 * 3072 / 2880 + tables));
  // Llama 3.2 1B ties its LM head to its input embedding too: one table stays at 16 bits
  CHECK(resident_weight_bytes(model("llama-3.2-1b"), 1.0, -1) == doctest::Approx(1.24e9 + 128256.0 * 2048));
}

TEST_CASE("data-parallel attention spreads the routed experts, padding and all, over the ranks") {
  const double gib = 1073741824.0;
  // gpt-oss-120b with MXFP4 experts at dp 4: each device holds the dense part and a quarter of the
  // padded experts (hidden 2,880 stored as 3,072)
  MemoryInputs in;
  in.device = device("h100-sxm-80gb");
  in.model = model("gpt-oss-120b");
  in.expert_weight_bytes_per_param = 0.53125;
  const double whole = compute_capacity(in).weights_gib;
  in.dp = 4;
  const double padded_experts = in.model.routed_expert_params() * 0.53125 * 3072 / 2880;
  CHECK(compute_capacity(in).weights_gib == doctest::Approx(whole - 0.75 * padded_experts / gib));
  // split by tp 4, each rank's expert intermediate (720) is padded to 768 as well; whole experts
  // under expert parallelism keep 2,880, a multiple of 64 already: only the hidden size is padded
  in.dp = 1;
  in.tp = 4;
  const double dense = in.model.params_b * 1e9 - in.model.routed_expert_params();
  const double split = compute_capacity(in).weights_gib;
  CHECK(split == doctest::Approx((dense * 2 + padded_experts * 768 / 720) / 4 / gib));
  in.ep = 4;
  CHECK(compute_capacity(in).weights_gib == doctest::Approx((dense * 2 + padded_experts) / 4 / gib));
  CHECK(split - compute_capacity(in).weights_gib > 0.9);  // GiB per device the KV cache gets back
}

TEST_CASE("a model that does not fit is an input error that says what it needs and what the device has") {
  const std::string yaml =
      "duration_s: 100\ndevice: l4-24gb\nmodel: llama-3.1-70b\nfleet: {replicas: 1}\n"
      "workload: {arrival: {process: poisson, rate_per_s: 1}, prompt_tokens: 100, output_tokens: 10}\n";
  try {
    test::scenario(yaml);
    FAIL("expected an error");
  } catch (const InputError& e) {
    const std::string m = e.one_line();
    CHECK(m.find("<test>:3:8: error: model: model llama-3.1-70b (bf16) does not fit on l4-24gb") == 0);
    CHECK(m.find("needs 133.") != std::string::npos);
    CHECK(m.find("offers 19.8 GiB") != std::string::npos);
  }
  // int4 weights fit the same model on an H100
  CHECK_NOTHROW(test::scenario(yaml, {"device=h100-sxm-80gb", "weight_dtype=int4"}));
}

// `fleetsim capacity` refuses what a scenario's engine, or a server, would refuse.
TEST_CASE(
    "capacity: the context defaults within the model's window, a longer one and a too-small step budget are errors") {
  auto err = [](const CapacityRequest& q) { return test::input_error([&] { capacity_document(q); }); };
  CapacityRequest q;
  q.model = "bge-large-en-v1.5";
  q.device = "l4-24gb";
  CHECK(capacity_document(q).doc["capacity"]["context_tokens"] == 512);  // not 4096: its window is 512
  q.model = "llama-3.1-8b";
  CHECK(capacity_document(q).doc["capacity"]["context_tokens"] == 4096);
  q.context = 200000;
  CHECK(err(q) ==
        "--context: error: 200000 tokens is more than llama-3.1-8b's context window (131072 "
        "tokens): a server refuses such a request");
  q.context = 0;
  q.max_num_seqs = 16384;
  q.max_batched_tokens = 16;
  CHECK(err(q) ==
        "--max-batched-tokens: error: --max-batched-tokens (16) must be >= --max-num-seqs (16384): every "
        "running sequence needs a token of the step budget");
}

TEST_CASE("capacity: it fits when one request of the context does, the smallest degree is the smallest") {
  CapacityRequest q;
  q.model = "llama-3.1-8b";
  q.device = "l4-24gb";
  q.context = 131072;  // the KV holds about 27,700 tokens: not one such request
  const CapacityAnswer a = capacity_document(q);
  CHECK_FALSE(a.c.fits);
  CHECK(a.doc["fits"] == false);
  CHECK(a.doc["capacity"]["max_concurrent_at_context"] == 0);
  // what it needs: the weights, the engine's overhead and activations, and 8,192 blocks of 16
  // tokens at 128 KiB a token (16 GiB): more than the card's usable memory, as `fits` says
  const double needed = a.c.weights_gib + a.c.runtime_overhead_gib + a.c.activation_gib + 16.0;
  CHECK(a.doc["needed_gib"].get<double>() == doctest::Approx(needed).epsilon(1e-12));
  CHECK(a.doc["needed_gib"].get<double>() > a.c.usable_gib);
  q.context = 4096;  // 256 blocks, half a GiB: fits, within the usable memory
  const CapacityAnswer b = capacity_document(q);
  CHECK(b.c.fits);
  CHECK(b.doc["needed_gib"].get<double>() ==
        doctest::Approx(b.c.weights_gib + b.c.runtime_overhead_gib + b.c.activation_gib + 0.5).epsilon(1e-12));
  CHECK(b.doc["needed_gib"].get<double>() <= b.c.usable_gib);
  q.context = 131072;
  // 70B on H100s at its whole window: tp 2 holds the weights but not one request; tp 3 does not
  // split 64 heads; tp 4 is the answer
  q.model = "llama-3.1-70b";
  q.device = "h100-sxm-80gb";
  CHECK(capacity_document(q).tp_fits == 4);
  q.context = 4096;
  CHECK(capacity_document(q).tp_fits == 2);
  // the smallest, even where a larger one was asked for
  q.model = "llama-3.1-8b";
  q.tp = 8;
  CHECK(capacity_document(q).tp_fits == 1);
  // a degree that does not split the MLP is refused, as vLLM's divide() refuses it
  q.model = "qwen2.5-7b";
  q.tp = 28;
  CHECK(test::input_error([&] { capacity_document(q); }).find("MLP intermediate size of 18944, which tp=28") !=
        std::string::npos);
}

TEST_CASE("a pool that does not fit names a tensor-parallel degree at which it does, sized as the engine sizes it") {
  // SGLang's default mem_fraction_static falls as tp grows: the degree named must fit at its own
  const std::vector<std::string> sglang = {"engine.kind=sglang", "engine.free_gpu_memory_fraction=null",
                                           "engine.perf_profile=none", "model=mixtral-8x22b"};
  const std::string base = std::string(FLEETSIM_SOURCE_DIR) + "/scenarios/chat-default.yaml";
  const std::string e = test::input_error([&] { load_scenario_file(base, sglang); });
  const size_t at = e.find("it fits at engine.tensor_parallel: ");
  REQUIRE(at != std::string::npos);
  const int tp = std::atoi(e.c_str() + at + 35);
  MESSAGE("suggested tp " << tp);
  std::vector<std::string> sets = sglang;
  sets.push_back("engine.tensor_parallel=" + std::to_string(tp));
  CHECK_NOTHROW(load_scenario_file(base, sets));
}

TEST_CASE("a draft model larger than its target is blamed, one that leaves no room is named beside it") {
  const std::string base = std::string(FLEETSIM_SOURCE_DIR) + "/scenarios/chat-default.yaml";
  const std::vector<std::string> vllm = {"engine.kind=vllm", "engine.free_gpu_memory_fraction=null",
                                         "engine.perf_profile=none"};
  auto with = [&](std::vector<std::string> sets) {
    sets.insert(sets.begin(), vllm.begin(), vllm.end());
    return test::input_error([&] { load_scenario_file(base, sets); });
  };
  const std::string big = with({"engine.speculative={draft_model: llama-3.1-70b, tokens: 4, acceptance: 0.7}"});
  CHECK(big.find("error: engine.speculative.draft_model: a draft must be smaller than its target: llama-3.1-70b "
                 "computes 70.5B parameters a token, the target llama-3.1-8b 8.0B") != std::string::npos);
  // a 70B fp8 target fits one H100 alone (67.7 GiB of 71.3), not with an 8B draft's 8.5 GiB beside it
  const std::string both = with({"model=llama-3.1-70b", "weight_dtype=fp8",
                                 "engine.speculative={draft_model: llama-3.1-8b, tokens: 4, acceptance: 0.7}"});
  CHECK(both.find("model llama-3.1-70b (fp8) with its speculative draft llama-3.1-8b does not fit") !=
        std::string::npos);
  CHECK(both.find(", of which the draft's 8.5 ") != std::string::npos);
  CHECK_NOTHROW(load_scenario_file(base, {"engine.kind=vllm", "engine.free_gpu_memory_fraction=null",
                                          "engine.perf_profile=none", "model=llama-3.1-70b", "weight_dtype=fp8"}));
}

TEST_CASE("LoRA adapters hold an A and B per projection: attention and MLP, every expert's in an MoE layer") {
  // by hand: rank 16, bf16; a layer's q and o (hidden -> heads x 128), k and v (hidden -> kv heads x 128)
  const double GiB = 1024.0 * 1024 * 1024;
  const std::string dense =
      "duration_s: 60\ndevice: h100-sxm-80gb\nmodel: llama-3.1-8b\n"
      "engine: {lora_adapters: 3, lora_rank: 16}\nfleet: {replicas: 1}\n"
      "workload: {arrival: {process: poisson, rate_per_s: 1}, prompt_tokens: 100, "
      "output_tokens: 10}\n";
  // Llama-3.1-8B: 32 layers, hidden 4096, 8 KV heads, MLP 14336
  const double llama = 16.0 * (2 * 8192 + 2 * (4096 + 1024) + 3 * (4096 + 14336)) * 32;
  CHECK(test::scenario(dense).pools[0].lora_gib_per_device() == doctest::Approx(3 * llama * 2 / GiB).epsilon(1e-12));
  // Qwen3-32B: 64 heads of 128 are 8,192 wide against a hidden 5,120 (q and o were taken at 5,120)
  const double qwen = 16.0 * (2 * (5120 + 8192) + 2 * (5120 + 1024) + 3 * (5120 + 25600)) * 64;
  CHECK(test::scenario(dense, {"model=qwen3-32b"}).pools[0].lora_gib_per_device() ==
        doctest::Approx(3 * qwen * 2 / GiB).epsilon(1e-12));
  // over tensor-parallel ranks as vLLM shards them: the A of q, k, v, gate and up (rank x hidden)
  // and the B of o and down (hidden x rank) whole on each rank, the other matrices halved
  const double qwen_tp2 = 16.0 * (7 * 5120 + (2 * 8192 + 2 * 1024 + 3 * 25600) / 2.0) * 64;
  CHECK(test::scenario(dense, {"model=qwen3-32b", "engine.tensor_parallel=2"}).pools[0].lora_gib_per_device() ==
        doctest::Approx(3 * qwen_tp2 * 2 / GiB).epsilon(1e-12));
  // over pipeline stages by layers: 32 layers on 3 stages put 11 on the busiest
  CHECK(test::scenario(dense, {"engine.pipeline_parallel=3"}).pools[0].lora_gib_per_device() ==
        doctest::Approx(3 * llama / 32 * 11 * 2 / GiB).epsilon(1e-12));
  // a mixture of experts: 2 dense layers with their MLP, 14 with 16 routed experts and a shared one
  const std::string moe =
      "duration_s: 60\ndevice: h100-sxm-80gb\nmodel: my-moe\nengine: {lora_adapters: 2, lora_rank: 16}\n"
      "fleet: {replicas: 1}\ncatalog:\n  models:\n"
      "    my-moe: {params_b: 10, layers: 16, hidden: 2048, heads: 16, kv_heads: 4, head_dim: 128,\n"
      "             intermediate: 8192, vocab: 32000, max_context: 8192, experts: 16, experts_per_token: 2,\n"
      "             shared_experts: 1, expert_intermediate: 1024, dense_layers: 2}\n"
      "workload: {arrival: {process: poisson, rate_per_s: 1}, prompt_tokens: 100, output_tokens: 10}\n";
  const double attention = 2 * 4096 + 2 * (2048 + 512);
  const double params = 16.0 * ((attention + 3 * (2048 + 8192)) * 2 + (attention + 17 * 3 * (2048 + 1024)) * 14);
  const Scenario s = test::scenario(moe);
  CHECK(s.pools[0].lora_gib_per_device() == doctest::Approx(2 * params * 2 / GiB).epsilon(1e-12));
  // data-parallel ranks split the routed experts, and their adapters, between them; each holds the rest
  const double routed = 16.0 * 16 * 3 * (2048 + 1024) * 14;
  CHECK(test::scenario(moe, {"engine.data_parallel=2", "fleet.replicas=2"}).pools[0].lora_gib_per_device() ==
        doctest::Approx(2 * (params - routed / 2) * 2 / GiB).epsilon(1e-12));
  // over 2 x 3 ranks that split the experts whole, the busiest device holds 3 of the 16, and the
  // attention and MLP matrices as tensor parallelism splits them (KV heads 4 over 2 ranks)
  const double tp2 = 16.0 * ((4 * 2048 + 2048 + 2 * 256 + 3 * 2048 + 3 * 8192 / 2) * 2 +
                             (4 * 2048 + 2048 + 2 * 256 + 3 * 2048 + 3 * 1024 / 2 + 3 * 3 * (2048 + 1024)) * 14);
  CHECK(test::scenario(moe, {"engine.data_parallel=3", "fleet.replicas=3", "engine.tensor_parallel=2"})
            .pools[0]
            .lora_gib_per_device() == doctest::Approx(2 * tp2 * 2 / GiB).epsilon(1e-12));
  // the adapters come out of the KV cache
  CHECK(s.pools[0].capacity.kv_gib ==
        doctest::Approx(test::scenario(moe, {"engine.lora_adapters=0"}).pools[0].capacity.kv_gib -
                        s.pools[0].lora_gib_per_device())
            .epsilon(1e-9));
}

TEST_CASE("capacity answers say every input that moved them") {
  CapacityRequest q;
  q.model = "gpt-oss-20b";
  q.device = "h100-sxm-80gb";
  const Json plain = capacity_document(q).doc;
  q.expert_weight_dtype = "mxfp4";
  q.max_num_seqs = 64;
  q.max_batched_tokens = 4096;
  q.enforce_eager = true;
  const Json mx = capacity_document(q).doc;
  // the two answers differ (MXFP4 experts weigh a third as much), and so do their headers
  CHECK(mx["capacity"]["weights_gib"].get<double>() < plain["capacity"]["weights_gib"].get<double>() / 2);
  CHECK_FALSE(plain.contains("expert_weight_dtype"));
  CHECK(mx["expert_weight_dtype"] == "mxfp4");
  CHECK(mx["max_num_seqs"] == 64);
  CHECK(mx["max_batched_tokens"] == 4096);
  CHECK(mx["enforce_eager"] == true);
  CHECK(plain["enforce_eager"] == false);
}

TEST_CASE("too many LoRA adapters to fit: the error says to load fewer, not to batch fewer tokens") {
  const std::string path = std::string(FLEETSIM_SOURCE_DIR) + "/scenarios/lora-consolidated.yaml";
  const std::string e = test::input_error([&] { load_scenario_file(path, {"engine.lora_adapters=10000"}); });
  CHECK(e.find("does not fit on h100-sxm-80gb") != std::string::npos);
  CHECK(e.find("try fewer engine.lora_adapters or a smaller engine.lora_rank (10000 at rank 16 take 781.2 GiB per "
               "device of the runtime)") != std::string::npos);
  CHECK(e.find("fewer max_batched_tokens") == std::string::npos);
  // one adapter's 0.4 GiB beside a 70B model's 131 GiB: the adapters are not the trouble
  const std::string big = test::input_error([&] {
    load_scenario_file(path, {"model=llama-3.1-70b", "engine.lora_adapters=1"});
  });
  CHECK(big.find("lora_adapters") == std::string::npos);
  CHECK(big.find("try a larger device") != std::string::npos);
}
