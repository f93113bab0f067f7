// Parallelism and mixture-of-experts arithmetic against hand-computed figures, closed forms and
// a Monte Carlo count.
#include <doctest/doctest.h>

#include <cmath>
#include <random>

#include "helpers.hpp"
#include "libsim/catalog/capacity.hpp"
#include "libsim/core/engine.hpp"
#include "libsim/core/moe.hpp"
#include "libsim/core/parallelism.hpp"

using namespace fleetsim;

namespace {
using test::device;
using test::model;
constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
}  // namespace

TEST_CASE("expected distinct experts E (1 - (1 - k/E)^B) matches a Monte Carlo count of routed tokens") {
  std::mt19937_64 gen(7);
  struct Case {
    int E, k, B;
  };
  for (const Case c : {Case{8, 2, 1}, Case{8, 2, 4}, Case{128, 8, 1}, Case{128, 8, 16}, Case{128, 8, 64},
                       Case{256, 8, 32}, Case{32, 4, 256}}) {
    MoeParams m{1.0, std::log(1.0 - double(c.k) / c.E)};
    const double expected = c.E * experts_touched_share(m, c.B);
    CHECK(expected == doctest::Approx(c.E * (1.0 - std::pow(1.0 - double(c.k) / c.E, c.B))).epsilon(1e-12));
    // each token picks k distinct experts uniformly at random
    const int trials = 4000;
    double sum = 0, sum2 = 0;
    std::vector<int> perm(c.E);
    for (int t = 0; t < trials; ++t) {
      std::vector<char> hit(c.E, 0);
      for (int b = 0; b < c.B; ++b) {
        for (int i = 0; i < c.E; ++i) perm[i] = i;
        for (int i = 0; i < c.k; ++i) {
          std::uniform_int_distribution<int> d(i, c.E - 1);
          std::swap(perm[i], perm[d(gen)]);
          hit[perm[i]] = 1;
        }
      }
      double n = 0;
      for (char h : hit) n += h;
      sum += n;
      sum2 += n * n;
    }
    const double mean = sum / trials, sd = std::sqrt(sum2 / trials - mean * mean);
    INFO("E=" << c.E << " k=" << c.k << " B=" << c.B << " formula " << expected << " monte carlo " << mean);
    CHECK(std::abs(mean - expected) <= 4.0 * sd / std::sqrt(double(trials)) + 1e-9);
  }
  // one token reads exactly its k experts; many tokens read nearly all
  MoeParams m{1.0, std::log(1.0 - 8.0 / 128.0)};
  CHECK(128 * experts_touched_share(m, 1) == doctest::Approx(8.0));
  CHECK(experts_touched_share(m, 2048) > 0.999);
}

TEST_CASE("ring all-reduce cost is latency + 2 (n-1)/n x bytes / bandwidth, and per traversal it adds up") {
  // Llama 3.1 70B, tp = 4 over NVLink 4 (450 GB/s one way, 8 us): a decode step of 64 tokens
  const double bytes = 64.0 * 8192 * 2;
  const double t = ring_allreduce_s(bytes, 4, 450e9, 8e-6);
  CHECK(t == doctest::Approx(8e-6 + 1.5 * bytes / 450e9));
  CHECK(ring_allreduce_s(bytes, 1, 450e9, 8e-6) == 0.0);
  ParallelParams c{};
  c.tp = 4;
  c.pp = 1;
  c.ep = 1;
  c.allreduces = 160;  // two per layer
  c.allreduce_latency_s = 8e-6;
  c.allreduce_s_per_token = 1.5 * 8192 * 2 / 450e9;
  CHECK(comm_s(c, 64) == doctest::Approx(160 * t).epsilon(1e-12));
  // 160 x (8 us + 3.5 us) = 1.84 ms
  CHECK(comm_s(c, 64) == doctest::Approx(160 * (8e-6 + 1.5 * 64 * 8192 * 2 / 450e9)));
  // a pipeline runs up to pp micro-batches, never more than it has sequences
  c.pp = 4;
  CHECK(micro_batches(c, 1) == 1.0);
  CHECK(micro_batches(c, 3) == 3.0);
  CHECK(micro_batches(c, 100) == 4.0);
}

TEST_CASE("memory per device adds up for tensor and pipeline parallel replicas") {
  MemoryInputs in;
  in.device = device("h100-sxm-80gb");
  in.model = model("llama-3.1-70b");
  in.tp = 2;
  Capacity c = compute_capacity(in);
  CHECK(c.devices == 2);
  // by hand: 70.55e9 x 2 bytes / 2^30 / 2 = 65.70 GiB of weights on each device
  CHECK(c.weights_gib == doctest::Approx(70.55e9 * 2 / kGiB / 2));
  // 8 KV heads over 2 ranks: 2 x 80 layers x 4 heads x 128 x 2 bytes
  CHECK(c.kv_bytes_per_token == 163840.0);
  CHECK(c.usable_gib == doctest::Approx(c.weights_gib + c.runtime_overhead_gib + c.activation_gib + c.kv_gib));
  CHECK(c.fits);
  // whole-replica weights: every device's share adds up to the model
  CHECK(c.weights_gib * c.devices == doctest::Approx(70.55e9 * 2 / kGiB));
  // the same model does not fit on one H100; the smallest tensor-parallel group that does is 2
  in.tp = 1;
  CHECK_FALSE(compute_capacity(in).fits);
  CHECK(smallest_fitting_tp(in) == 2);

  // two pipeline stages hold 40 layers each: the same KV per device as tp = 2
  in.tp = 1;
  in.pp = 2;
  c = compute_capacity(in);
  CHECK(c.devices == 2);
  CHECK(c.kv_bytes_per_token == 2.0 * 40 * 8 * 128 * 2);
  CHECK(c.weights_gib == doctest::Approx(70.55e9 * 2 / kGiB / 2));

  // three stages: vLLM gives 27, 27 and 26 layers (the remainder to the stages before the last),
  // the first also the input embedding (128,256 x 8,192): 27 x 0.8556e9 + 1.0507e9 parameters,
  // 44.99 GiB, where an even split would say 43.80. The KV is that of 27 layers
  in.pp = 3;
  c = compute_capacity(in);
  const double embed = 128256.0 * 8192, per_layer = (70.55e9 - 2 * embed) / 80;
  CHECK(c.weights_gib == doctest::Approx((27 * per_layer + embed) * 2 / kGiB));
  CHECK(c.weights_gib == doctest::Approx(44.99).epsilon(1e-3));
  CHECK(c.kv_bytes_per_token == 2.0 * 27 * 8 * 128 * 2);
  // a tied embedding is held twice: the first stage's input, the last stage's LM head
  CHECK(largest_stage_share(model("llama-3.2-1b"), 2) ==
        doctest::Approx((8 * (1.24e9 - 128256.0 * 2048) / 16 + 128256.0 * 2048) / 1.24e9));

  // tp beyond the KV heads replicates them: 16 ranks of 8 KV heads still hold one head each
  in.pp = 1;
  in.tp = 16;
  CHECK(compute_capacity(in).kv_bytes_per_token == 2.0 * 80 * 1 * 128 * 2);

  // Llama 3.1 405B: 756 GiB of bf16 weights need 16 H100s; fp8 weights fit on 8
  in.model = model("llama-3.1-405b");
  in.tp = 1;
  CHECK(smallest_fitting_tp(in) == 16);
  in.weight_bytes_per_param = 1.0;
  CHECK(smallest_fitting_tp(in) == 8);
}

TEST_CASE("tensor parallelism must split heads evenly, as vLLM requires") {
  CHECK(tp_problem(model("llama-3.1-70b"), 8).empty());
  CHECK(tp_problem(model("llama-3.1-70b"), 16).empty());    // 64 heads; 8 KV heads replicated
  CHECK_FALSE(tp_problem(model("qwen2.5-7b"), 8).empty());  // 28 heads
  CHECK(tp_problem(model("qwen2.5-7b"), 8).find("28 attention heads") != std::string::npos);
  CHECK(tp_problem(model("deepseek-v3"), 8).empty());
}

TEST_CASE("MoE catalog models: active parameters as their model cards state, and MLA / sliding-window KV") {
  // routed experts x (1 - k/E) are the weights one token does not use
  CHECK(model("mixtral-8x7b").active_params() / 1e9 == doctest::Approx(12.9).epsilon(0.03));
  CHECK(model("qwen3-30b-a3b").active_params() / 1e9 == doctest::Approx(3.3).epsilon(0.03));
  CHECK(model("qwen3-235b-a22b").active_params() / 1e9 == doctest::Approx(22.0).epsilon(0.03));
  CHECK(model("deepseek-v3").active_params() / 1e9 == doctest::Approx(37.0).epsilon(0.03));
  CHECK(model("llama-3.1-8b").active_params() == model("llama-3.1-8b").params_b * 1e9);
  // DeepSeek-V3's latent cache: 61 layers x (512 + 64) x 2 bytes, the same on every TP rank
  CHECK(kv_bytes_per_token(model("deepseek-v3"), 2) == 61.0 * 576 * 2);
  CHECK(kv_bytes_per_token_per_device(model("deepseek-v3"), 2, 8, 1) == 61.0 * 576 * 2);
  // gpt-oss-120b: 18 full-attention layers grow with the context; 18 sliding layers hold 128 tokens
  const ModelSpec& oss = model("gpt-oss-120b");
  CHECK(kv_bytes_per_token(oss, 2) == 2.0 * 18 * 8 * 64 * 2);
  CHECK(window_kv_bytes_per_seq_per_device(oss, 2, 1, 1) == 2.0 * 18 * 8 * 64 * 2 * 128);
  MemoryInputs in;
  in.device = device("h100-sxm-80gb");
  in.model = oss;
  in.expert_weight_bytes_per_param = weight_dtype_bytes("mxfp4");
  const Capacity c = compute_capacity(in);
  CHECK(c.window_blocks_per_seq == 8);  // 128 tokens of 18 layers = 128 tokens of the full layers
  CHECK(c.fits);
  // mxfp4 experts: (116.83e9 - routed) x 2 + routed x 0.53125 bytes, the experts' hidden size
  // padded from 2,880 to 3,072 as vLLM's MoE kernels hold them; vLLM logs 64.38 GiB on one H100
  const double routed = oss.routed_expert_params();
  CHECK(c.weights_gib == doctest::Approx(((116.83e9 - routed) * 2 + routed * 0.53125 * 3072 / 2880) / kGiB));
  CHECK(c.weights_gib == doctest::Approx(64.38).epsilon(0.005));
  // a request's blocks: its tokens plus the window
  CHECK(max_concurrent(c, 1024, 16) == c.kv_blocks / (64 + 8));
}

// ---------------------------------------------------------------- step time of a replica
namespace {
std::string pool_yaml(const std::string& model, const std::string& device, const std::string& engine,
                      const std::string& extra = "") {
  return "duration_s: 100\ndevice: " + device + "\nmodel: " + model + "\n" + extra + "engine: {" + engine +
         "}\nfleet: {replicas: 1}\n"
         "workload: {arrival: {process: poisson, rate_per_s: 1}, prompt_tokens: 100, output_tokens: 10}\n";
}
// Step j = 0 of a decode run of n sequences with T0 context tokens before it.
double decode_step_s(const PoolParams& P, double n, double T0) {
  Replica R{};
  set_decode_run(P, R, n, T0);
  return line_step(R.run_line, 0);
}
}  // namespace

TEST_CASE("a tensor-parallel decode step: one rank's roofline plus two all-reduces per layer, by hand") {
  const Scenario s =
      test::scenario(pool_yaml("llama-3.1-70b", "h100-sxm-80gb", "tensor_parallel: 2, perf_profile: none"));
  const PoolParams P = s.pools[0].params();
  const double n = 32, T0 = 32 * 1500.0;
  // per rank: half the weights and half the KV heads; NVLink 4: 450 GB/s one way, 8 us
  const double comm = 160 * (8e-6 + 2.0 * 1 / 2 * n * 8192 * 2 / 450e9);
  const double flops = (2 * 70.55e9 * n + 4.0 * 80 * 64 * 128 * (T0 + n)) / 2;
  const double bytes = 70.55e9 * 2 / 2 + 163840.0 * (T0 + n);
  const double hand = 0.002 + comm + std::max(flops / (989.4e12 * 0.5), bytes / (3350e9 * 0.8));
  CHECK(decode_step_s(P, n, T0) == doctest::Approx(hand).epsilon(1e-12));
  // the worked example in docs/model.md: 32.7 ms, of which 1.47 ms all-reduce
  CHECK(hand == doctest::Approx(0.0327).epsilon(0.01).scale(0));
  CHECK(comm == doctest::Approx(0.00147).epsilon(0.01).scale(0));
  // a replica of two devices bills two devices
  const test::Result r = test::run(s);
  const Json& cost = r.report["cost"];
  CHECK(cost["device_hours"].get<double>() == doctest::Approx(2 * 100.0 / 3600));
  CHECK(cost["total_usd"].get<double>() == doctest::Approx(cost["device_hours"].get<double>() * 3.00));
}

TEST_CASE("a pipeline of two stages: weights read once per traversal, compute and KV over two micro-batches") {
  const Scenario s =
      test::scenario(pool_yaml("llama-3.1-70b", "h100-sxm-80gb", "pipeline_parallel: 2, perf_profile: none"));
  const PoolParams P = s.pools[0].params();
  const double n = 32, T0 = 32 * 1500.0;
  const double handoff = 8e-6 + (n / 2) * 8192 * 2 / 450e9;  // one stage boundary, 16 tokens a micro-batch
  const double flops = 2 * 70.55e9 * n + 4.0 * 80 * 64 * 128 * (T0 + n);
  const double kv = 327680.0 * (T0 + n);
  const double hand = 0.002 + handoff + std::max(flops / (2 * 989.4e12 * 0.5), (70.55e9 * 2 + kv / 2) / (3350e9 * 0.8));
  CHECK(decode_step_s(P, n, T0) == doctest::Approx(hand).epsilon(1e-12));
  // one sequence cannot be split: no pipelining, the stages run one after the other
  const double one = 0.002 + 8e-6 + 8192 * 2 / 450e9 +
                     std::max((2 * 70.55e9 + 4.0 * 80 * 64 * 128 * 1501) / (989.4e12 * 0.5),
                              (70.55e9 * 2 + 327680.0 * 1501) / (3350e9 * 0.8));
  CHECK(decode_step_s(P, 1, 1500) == doctest::Approx(one).epsilon(1e-12));
}

TEST_CASE("an MoE decode step reads the dense weights and the share of experts its tokens touch") {
  const Scenario s = test::scenario(pool_yaml("qwen3-30b-a3b", "h100-sxm-80gb", "perf_profile: none"));
  const PoolParams P = s.pools[0].params();
  const ModelSpec& m = model("qwen3-30b-a3b");
  const double routed = m.routed_expert_params();
  CHECK(P.moe.expert_bytes == doctest::Approx(routed * 2));
  CHECK(P.work.weight_bytes == doctest::Approx((30.53e9 - routed) * 2));
  for (double n : {1.0, 4.0, 64.0}) {
    const double T0 = n * 1000;
    const double touched = 1 - std::pow(1 - 8.0 / 128, n);
    const double bytes = (30.53e9 - routed) * 2 + routed * 2 * touched + 98304.0 * (T0 + n);
    const double flops = 2 * m.active_params() * n + 4.0 * 48 * 32 * 128 * (T0 + n);
    const double hand = 0.002 + std::max(flops / (989.4e12 * 0.5), bytes / (3350e9 * 0.8));
    INFO("n = " << n);
    CHECK(decode_step_s(P, n, T0) == doctest::Approx(hand).epsilon(1e-12));
  }
  // one token reads 8 of 128 experts: far less than the whole model
  CHECK(decode_step_s(P, 1, 1000) < 0.002 + 30.53e9 * 2 / (3350e9 * 0.8) / 4);
}

TEST_CASE("MLA decodes over the latent cache and prefills as multi-head attention over up-projected heads") {
  const Scenario s = test::scenario("weight_dtype: fp8\n" +
                                    pool_yaml("deepseek-v3", "h200-141gb", "tensor_parallel: 8, perf_profile: none"));
  const PoolParams P = s.pools[0].params();
  // per rank 16 of 128 heads, 61 layers. Decode (absorbed): q.k over 512 + 64, p.v over 512;
  // prefill: q.k over 128 + 64, p.v over 128, after up-projecting each context token's 512
  // latent values to 128 key and 128 value values per head
  CHECK(P.work.attn_flops_per_pair == 61.0 * 16 * (2 * 576 + 2 * 512));
  CHECK(P.work.prefill_attn_flops_per_pair == 61.0 * 16 * (2 * 192 + 2 * 128));
  CHECK(P.work.context_upproj_flops_per_token == 61.0 * 16 * 2 * 512 * 256);
  // a 2,048-token chunk of a prompt whose first 4,096 tokens were prefilled in earlier steps
  Replica R{};
  const double chunk = 2048, ctx = 4096, pairs = chunk * ctx + chunk * (chunk + 1) / 2;
  set_single_step(P, R, chunk, pairs, ctx, 0, 0, 1);
  const double flops =
      P.work.matmul_flops_per_token * chunk + 61.0 * 16 * 640 * pairs + 61.0 * 16 * 2 * 512 * 256 * ctx;
  CHECK(R.run_fa == doctest::Approx(flops).epsilon(1e-12));
  // the latent form would have priced this prefill's attention 3.4 times over (2176 / 640)
  CHECK(P.work.attn_flops_per_pair / P.work.prefill_attn_flops_per_pair == doctest::Approx(3.4));
  // a dense model prefills and decodes with the same heads, and up-projects nothing
  const PoolParams D =
      test::scenario(pool_yaml("llama-3.1-8b", "h100-sxm-80gb", "perf_profile: none")).pools[0].params();
  CHECK(D.work.prefill_attn_flops_per_pair == D.work.attn_flops_per_pair);
  CHECK(D.work.context_upproj_flops_per_token == 0.0);
}

TEST_CASE("parallelism inputs that vLLM would refuse are located errors") {
  auto err = [](const std::string& yaml) {
    try {
      test::scenario(yaml);
    } catch (const InputError& e) {
      return e.one_line();
    }
    return std::string("no error");
  };
  CHECK(err(pool_yaml("qwen2.5-7b", "h100-sxm-80gb", "tensor_parallel: 8")).find("28 attention heads") !=
        std::string::npos);
  CHECK(err(pool_yaml("llama-3.1-8b", "h100-sxm-80gb", "expert_parallel: 2")).find("no experts") != std::string::npos);
  CHECK(err(pool_yaml("mixtral-8x7b", "h100-sxm-80gb", "tensor_parallel: 4, expert_parallel: 2"))
            .find("set it to 1 or to tensor_parallel (4)") != std::string::npos);
  CHECK(err(pool_yaml("llama-3.1-8b", "h100-sxm-80gb", "pipeline_parallel: 33")).find("32 layers") !=
        std::string::npos);
  CHECK(err(pool_yaml("llama-3.1-8b", "h100-sxm-80gb", "tensor_parallel: 2", "partition: 3g.40gb\n"))
            .find("cannot also share a device") != std::string::npos);
  // a model too big for one device names the smallest tensor-parallel group that holds it
  const std::string big = err(pool_yaml("llama-3.1-405b", "h100-sxm-80gb", ""));
  CHECK(big.find("does not fit") != std::string::npos);
  CHECK(big.find("it fits at engine.tensor_parallel: 16") != std::string::npos);
}

TEST_CASE("a scenario can define its own MoE model and a device with its own interconnect") {
  const std::string yaml =
      "duration_s: 100\ndevice: my-gpu\nmodel: my-moe\nengine: {tensor_parallel: 2}\nfleet: {replicas: 1}\n"
      "catalog:\n"
      "  devices:\n"
      "    my-gpu: {memory_gib: 80, bandwidth_gb_s: 2000, bf16_tflops: 500, usd_per_hour: 2, link_gb_s: 100,\n"
      "             link_latency_us: 5, link_domain: 4}\n"
      "  models:\n"
      "    my-moe: {params_b: 10, layers: 16, hidden: 2048, heads: 16, kv_heads: 4, head_dim: 128,\n"
      "             intermediate: 8192, vocab: 32000, max_context: 8192, experts: 16, experts_per_token: 2,\n"
      "             expert_intermediate: 1024}\n"
      "workload: {arrival: {process: poisson, rate_per_s: 1}, prompt_tokens: 100, output_tokens: 10}\n";
  const Scenario s = test::scenario(yaml);
  const PoolParams P = s.pools[0].params();
  const double routed = 16.0 * 16 * 3 * 2048 * 1024;
  CHECK(P.moe.expert_bytes == doctest::Approx(routed * 2 / 2));
  CHECK(P.par.allreduce_latency_s == doctest::Approx(5e-6));
  CHECK(P.par.allreduce_s_per_token == doctest::Approx(2.0 * 1 / 2 * 2048 * 2 / 100e9));
  CHECK(s.pools[0].capacity.kv_bytes_per_token == 2.0 * 16 * 2 * 128 * 2);
  // an MoE model needs its routing
  try {
    test::scenario(yaml, {"catalog.models.my-moe.experts_per_token=17"});
    FAIL("expected an error");
  } catch (const InputError& e) {
    CHECK(std::string(e.what()).find(") must be <= experts (") != std::string::npos);
  }
}

// An MI300X platform joins its 8 devices by 7 direct Infinity Fabric links of 64 GB/s each way
// (448 in all, AMD's 7 x 128 GB/s bidirectional): a tp 2 pair has one link between them, tp 4
// three per device, tp 8 all seven. A switched domain (NVLink via NVSwitch) gives any group the
// device's whole link.
TEST_CASE("on a mesh of direct links a group of g devices all-reduces over g - 1 links, a switch gives it all") {
  auto per_token = [](const std::string& device, const std::string& model, int tp, const std::string& extra = "") {
    const Scenario s = test::scenario("duration_s: 100\ndevice: " + device + "\nmodel: " + model +
                                      "\nengine: {tensor_parallel: " + std::to_string(tp) + extra +
                                      "}\nfleet: {replicas: 1}\nworkload: {arrival: {process: poisson, "
                                      "rate_per_s: 1}, prompt_tokens: 100, output_tokens: 10}\n");
    return s.pools[0].params().par;
  };
  const double hidden = 8192, bytes = 2;  // llama-3.1-70b, bf16 activations
  for (int tp : {2, 4, 8}) {
    CAPTURE(tp);
    const ParallelParams mi = per_token("mi300x-192gb", "llama-3.1-70b", tp);
    CHECK(mi.allreduce_s_per_token == doctest::Approx(2.0 * (tp - 1) / tp * hidden * bytes / (64e9 * (tp - 1))));
    const ParallelParams h = per_token("h100-sxm-80gb", "llama-3.1-70b", tp);
    CHECK(h.allreduce_s_per_token == doctest::Approx(2.0 * (tp - 1) / tp * hidden * bytes / 450e9));
  }
  // a stage hands its activations to its counterpart in the next over the one link between them
  const ParallelParams pp = per_token("mi300x-192gb", "llama-3.1-70b", 2, ", pipeline_parallel: 2");
  CHECK(pp.handoff_s_per_token == doctest::Approx(hidden * bytes / 64e9));
  // a scenario's own device says whether its link is a mesh
  const Scenario own = test::scenario(
      "duration_s: 100\ndevice: my-gpu\nmodel: llama-3.1-8b\nengine: {tensor_parallel: 2}\nfleet: {replicas: 1}\n"
      "catalog:\n  devices:\n    my-gpu: {memory_gib: 80, bandwidth_gb_s: 2000, bf16_tflops: 500, usd_per_hour: 2,\n"
      "             link_gb_s: 300, link_domain: 4, link_mesh: true}\n"
      "workload: {arrival: {process: poisson, rate_per_s: 1}, prompt_tokens: 100, output_tokens: 10}\n");
  CHECK(own.pools[0].params().par.allreduce_s_per_token == doctest::Approx(2.0 / 2 * 4096 * 2 / 100e9));
}

namespace {
// Qwen3-235B-A22B with fp8 weights and KV on 8 H100s as eight data-parallel ranks of one device each.
std::string dp_yaml(const std::string& engine, const std::string& fleet = "replicas: 8") {
  return "duration_s: 100\ndevice: h100-sxm-80gb\nmodel: qwen3-235b-a22b\nweight_dtype: fp8\nkv_dtype: fp8\n"
         "engine: {perf_profile: none, " +
         engine + "}\nfleet: {" + fleet +
         "}\nworkload: {arrival: {process: poisson, rate_per_s: 2}, prompt_tokens: 200, output_tokens: 20}\n";
}
}  // namespace

TEST_CASE("data-parallel attention: dense weights whole on every rank, experts spread over all of them") {
  const Scenario s = test::scenario(dp_yaml("data_parallel: 8"));
  const PoolSpec& spec = s.pools[0];
  const ModelSpec& m = model("qwen3-235b-a22b");
  const double routed = m.routed_expert_params();
  // fp8: one byte a parameter, the embedding and LM head left in bf16; 7/8 of the experts live on other ranks
  const double whole = resident_weight_bytes(m, 1.0, -1.0, 1);
  CHECK(spec.capacity.weights_gib == doctest::Approx((whole - routed * 7.0 / 8.0) / kGiB).epsilon(1e-12));
  // a rank's device holds every KV head of its own sequences: 94 layers x 4 KV heads x 128 x (K, V) x 1 byte
  CHECK(spec.capacity.kv_bytes_per_token == doctest::Approx(94.0 * 4 * 128 * 2));
  const PoolParams P = spec.params();
  CHECK(P.replicas == 8);
  CHECK(P.moe.expert_bytes == doctest::Approx(routed / 8.0));
  // the experts serve the tokens of all eight ranks: a token misses one with probability (1 - 8/128), 8 times over
  CHECK(P.moe.miss_log == doctest::Approx(8.0 * std::log(1.0 - 8.0 / 128.0)));
  // no tensor parallelism: no all-reduce; every MoE layer dispatches and combines over the 8 devices
  // (NVLink 4: 450 GB/s one way, 8 us): 8 experts x 4096 x 2 bytes x 7/8 per token
  CHECK(P.par.allreduces == 0.0);
  CHECK(P.par.all_to_alls == doctest::Approx(2.0 * 94));
  CHECK(P.par.all_to_all_s_per_token == doctest::Approx(8.0 * 4096 * 2 * 7.0 / 8.0 / 450e9));
  // a decode step of n sequences on one rank, by hand (the uncalibrated roofline)
  for (double n : {1.0, 8.0, 64.0}) {
    const double T0 = n * 300;
    const double touched = 1 - std::pow(1 - 8.0 / 128, 8 * n);
    const double dense_bytes = (m.params_b * 1e9 - routed) * 1.0;
    const double bytes = dense_bytes + routed / 8.0 * touched + 96256.0 * (T0 + n);
    const double flops = 2 * m.active_params() * n + 4.0 * 94 * 64 * 128 * (T0 + n);
    const double comm = 188 * (8e-6 + n * 8.0 * 4096 * 2 * 7.0 / 8.0 / 450e9);
    const double hand = 0.002 + comm + std::max(flops / (1978.9e12 * 0.5), bytes / (3350e9 * 0.8));
    INFO("n = " << n);
    CHECK(decode_step_s(P, n, T0) == doctest::Approx(hand).epsilon(1e-9));
  }
  // the report: eight ranks of one device each, their experts spread eight ways
  const test::Result r = test::run(s);
  test::check_conserves(r);
  const Json& pool = r.report["scenario"];
  CHECK(pool["replicas"] == 8);
  CHECK(pool["devices"] == 8);
  CHECK(pool["data_parallel"] == 8);
  CHECK(pool["expert_parallel"] == 8);
  // the physics model (the default without a profile) was fitted on no DP run: its error is not quoted
  const Json st = test::run(test::scenario(dp_yaml("data_parallel: 8"), {"engine.perf_profile=auto"}))
                      .report["scenario"]["step_time"];
  CHECK(st["model"] == "physics");
  CHECK(st["error_applies"] == false);
  CHECK(st["note"].get<std::string>().find("uncalibrated for data-parallel attention") != std::string::npos);
}

// vLLM gives E mod n of the n devices one expert more (determine_expert_map): 128 experts over
// 3 ranks of 2 devices are 22 on two devices and 21 on the other four, and every step waits for a
// device with 22
TEST_CASE("experts the devices do not divide: the busiest device holds, reads and computes one more") {
  const Scenario s = test::scenario(dp_yaml("data_parallel: 3, tensor_parallel: 2", "replicas: 9"));
  const ModelSpec& m = model("qwen3-235b-a22b");
  const double routed = m.routed_expert_params();
  const double whole = resident_weight_bytes(m, 1.0, -1.0, 1);
  // the dense part split two ways, 22 of the 128 experts whole
  CHECK(s.pools[0].capacity.weights_gib ==
        doctest::Approx(((whole - routed) / 2 + routed * 22.0 / 128.0) / kGiB).epsilon(1e-12));
  const PoolParams P = s.pools[0].params();
  CHECK(P.moe.expert_bytes == doctest::Approx(routed * 22.0 / 128.0).epsilon(1e-12));
  // a token's 8 routed experts: the busiest device runs 22 x 6 / 128 of its even share of them
  const double active_routed = routed * 8.0 / 128.0;
  CHECK(P.work.matmul_flops_per_token ==
        doctest::Approx((m.active_params() + active_routed * (22.0 * 6 / 128 - 1.0))).epsilon(1e-12));
  // where they divide, nothing changes: the even share, to the bit
  const PoolParams even = test::scenario(dp_yaml("data_parallel: 8")).pools[0].params();
  CHECK(even.moe.expert_bytes == routed / 8.0);
  CHECK(even.work.matmul_flops_per_token == 2.0 * m.active_params());
}

TEST_CASE("data-parallel attention: each rank has its own queue, as eight engines behind a router") {
  // 8 requests at once on 8 ranks under round robin: one each, so none waits for another and every
  // TTFT is one lone prefill step of 200 tokens; one tensor-parallel replica of the same 8 devices
  // has one queue and one batch, so all 8 prefill together in one step of 1,600 tokens
  auto burst = [](const std::string& engine, const std::string& fleet) {
    return test::scenario(
        "duration_s: 30\ndevice: h100-sxm-80gb\nmodel: qwen3-235b-a22b\nweight_dtype: fp8\nkv_dtype: fp8\n"
        "engine: {perf_profile: none, client_ttft_s: 0, " +
        engine + "}\nfleet: {" + fleet +
        "}\nworkload: {arrival: {process: burst, requests: 8}, prompt_tokens: 200, output_tokens: 2}\n");
  };
  // a step prefilling `prompts` prompts beside `decoding` sequences of 201 tokens' context
  auto step = [](const Scenario& s, double prompts, double decoding = 0) {
    Replica R{};
    set_single_step(s.pools[0].params(), R, 200 * prompts, prompts * 200.0 * 201 / 2, 0, decoding, 200 * decoding,
                    prompts + decoding);
    return R.run_line.o;
  };
  const Scenario dp = burst("data_parallel: 8", "replicas: 8, router: round_robin");
  const test::Result r = test::run(dp);
  CHECK(r.all->completed == 8);
  const Json& ttft = r.report["latency_s"]["ttft"];
  CHECK(ttft["mean"].get<double>() == doctest::Approx(step(dp, 1)).epsilon(1e-9));
  CHECK(ttft["max"].get<double>() == doctest::Approx(step(dp, 1)).epsilon(1e-9));
  // one queue: the first arrival starts a step alone, the other seven wait for it and share the next
  const Scenario tp = burst("tensor_parallel: 8, expert_parallel: 8", "replicas: 1");
  const test::Result q = test::run(tp);
  CHECK(q.all->completed == 8);
  const Json& qt = q.report["latency_s"]["ttft"];
  // (beside the first one's decode)
  CHECK(qt["max"].get<double>() == doctest::Approx(step(tp, 1) + step(tp, 7, 1)).epsilon(1e-9));
  CHECK(qt["mean"].get<double>() == doctest::Approx(step(tp, 1) + 7.0 / 8.0 * step(tp, 7, 1)).epsilon(1e-9));
}

TEST_CASE("data-parallel attention inputs the engines would refuse, or fleetsim cannot express, are located errors") {
  using test::error_of;
  CHECK(error_of("duration_s: 100\ndevice: h100-sxm-80gb\nmodel: llama-3.1-8b\nengine: {data_parallel: 2}\n"
                 "fleet: {replicas: 2}\nworkload: {arrival: {process: poisson, rate_per_s: 1}, prompt_tokens: 10, "
                 "output_tokens: 10}\n")
            .find("no experts to share") != std::string::npos);
  CHECK(error_of(dp_yaml("data_parallel: 8", "replicas: 4")).find("replicas must be a multiple of 8 (4 is not)") !=
        std::string::npos);
  CHECK(error_of(dp_yaml("data_parallel: 4, tensor_parallel: 2, expert_parallel: 1")).find("set expert_parallel") !=
        std::string::npos);
  // vLLM spreads a remainder of experts (below); SGLang asserts that the devices divide them
  CHECK(
      error_of(dp_yaml("kind: sglang, data_parallel: 3", "replicas: 9")).find("do not divide; sglang needs them to") !=
      std::string::npos);
  CHECK(error_of(dp_yaml("data_parallel: 3, tensor_parallel: 2", "replicas: 9")) == "(no error)");
  // the ranks fail together: a crash that would restart one of them is refused, as failures are
  CHECK(error_of(dp_yaml("data_parallel: 8, on_kv_exhausted: crash"))
            .find("engine.on_kv_exhausted: crash would restart one rank; a data-parallel engine's ranks fail together "
                  "(use preempt)") != std::string::npos);
  CHECK(error_of(dp_yaml("data_parallel: 8, on_kv_exhausted: preempt")) == "(no error)");
  // Mixtral's 8 experts over 16 devices would leave some without one
  CHECK(error_of("duration_s: 100\ndevice: h100-sxm-80gb\nmodel: mixtral-8x7b\nengine: {data_parallel: 16}\n"
                 "fleet: {replicas: 16}\nworkload: {arrival: {process: poisson, rate_per_s: 1}, prompt_tokens: 10, "
                 "output_tokens: 10}\n")
            .find("8 experts, fewer than data_parallel x tensor_parallel = 16 devices") != std::string::npos);
  // ranks spread their experts over every device of the engine: none of them shares one
  for (const char* sharing : {"time_slicing: 2\n", "mps: 2\n"})
    CHECK(error_of(sharing + dp_yaml("data_parallel: 8")).find("cannot also share a device") != std::string::npos);
  CHECK(error_of(dp_yaml("data_parallel: 8",
                         "replicas: 8, autoscale: {min_replicas: 8, max_replicas: 16, signal: "
                         "inflight, target: 4}"))
            .find("fail together") != std::string::npos);
  const std::string spot =
      error_of(dp_yaml("data_parallel: 8", "replicas: 8, pricing: {spot: {discount: 0.5, interruptions_per_hour: 1}}"));
  CHECK(spot.find("interruptions_per_hour") != std::string::npos);
  CHECK(spot.find(":7:") != std::string::npos);  // located at the fleet line
  // each rank keeps its own waiting queue: one shared between them is not what the engines run
  const std::string cq = error_of(dp_yaml("data_parallel: 8", "replicas: 8, router: central_queue"));
  CHECK(cq.find("central_queue shares one queue") != std::string::npos);
  CHECK(cq.find(":7:") != std::string::npos);
}

TEST_CASE("expert parallelism within one tensor-parallel group all-reduces as tensor parallelism does") {
  // every rank holds every token after attention: it runs its own 16 whole experts on them and the
  // MoE layer all-reduces, as vLLM does without data parallelism (no all-to-all kernels at dp 1)
  const PoolParams tp = test::scenario(dp_yaml("tensor_parallel: 8", "replicas: 1")).pools[0].params();
  const Scenario se = test::scenario(dp_yaml("tensor_parallel: 8, expert_parallel: 8", "replicas: 1"));
  const PoolParams ep = se.pools[0].params();
  CHECK(ep.par.allreduces == 2.0 * 94);
  CHECK(ep.par.all_to_alls == 0.0);
  CHECK(tp.par.allreduces == ep.par.allreduces);
  // one sequence touches 8 experts: a rank reads 1/8 of each under tp, one whole in expectation
  // under ep, so a lone decode step costs the same
  CHECK(decode_step_s(ep, 1, 1000) == doctest::Approx(decode_step_s(tp, 1, 1000)).epsilon(1e-12));
  // no fit saw such a server: the physics model does not quote its error for it
  const Json st = test::run(test::scenario(dp_yaml("tensor_parallel: 8, expert_parallel: 8", "replicas: 1"),
                                           {"engine.perf_profile=auto"}))
                      .report["scenario"]["step_time"];
  CHECK(st["error_applies"] == false);
  CHECK(st["note"].get<std::string>().find("uncalibrated for expert parallelism") != std::string::npos);
}

TEST_CASE("whole experts widen the forward pass's activation peak: every token's top 8 at full width") {
  // 8,192 tokens x 2 bytes x (3 x MLP width + 4 x 4,096) x 0.936: under tp8 the 8 experts' 1,536
  // columns are split 8 ways (0.30 GiB, below the sampler's 128 x 151,936 logits, 0.557 GiB);
  // under ep8 each is whole, as vLLM's fused-MoE workspace holds them: 0.7605 GiB
  auto activation = [](const std::string& engine) {
    return test::scenario(dp_yaml(engine + ", max_num_seqs: 128", "replicas: 1")).pools[0].capacity.activation_gib;
  };
  const double sampler = (128.0 * 151936 * 27.3 + 8192.0 * 4096 * 2) / kGiB;
  CHECK(activation("tensor_parallel: 8") == doctest::Approx(sampler));
  CHECK(activation("tensor_parallel: 8, expert_parallel: 8") ==
        doctest::Approx(0.936 * 8192 * 2 * (3 * 8 * 1536.0 + 4 * 4096) / kGiB));
  CHECK(activation("tensor_parallel: 8, expert_parallel: 8") == doctest::Approx(0.7605).epsilon(1e-3));
}
