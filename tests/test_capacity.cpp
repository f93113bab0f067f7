// Memory arithmetic against hand-computed figures and a real engine's measured allocation.
#include <doctest/doctest.h>

#include <cmath>

#include "helpers.hpp"
#include "libsim/capacity.hpp"
#include "libsim/error.hpp"

using namespace fleetsim;

static const ModelSpec& model(const char* name) {
  for (const auto& m : builtin_models())
    if (m.name == name) return m;
  throw std::runtime_error(name);
}
static const DeviceSpec& device(const char* name) {
  for (const auto& d : builtin_devices())
    if (d.name == name) return d;
  throw std::runtime_error(name);
}

TEST_CASE("KV bytes per token of the catalog models, by hand: 2 x layers x kv_heads x head_dim x bytes") {
  CHECK(kv_bytes_per_token(model("llama-3.1-8b"), 2) == 2.0 * 32 * 8 * 128 * 2);    // 131072 = 128 KiB
  CHECK(kv_bytes_per_token(model("llama-3.1-8b"), 2) == 131072.0);
  CHECK(kv_bytes_per_token(model("llama-3.1-70b"), 2) == 327680.0);                 // 320 KiB
  CHECK(kv_bytes_per_token(model("mistral-7b"), 2) == 131072.0);
  CHECK(kv_bytes_per_token(model("qwen2.5-7b"), 2) == 57344.0);                     // 28 layers, 4 KV heads
  CHECK(kv_bytes_per_token(model("qwen2.5-72b"), 2) == 327680.0);
  CHECK(kv_bytes_per_token(model("llama-3.1-8b"), 1) == 65536.0);                   // fp8 KV halves it
}

TEST_CASE("KV capacity lands on what vLLM allocates for Llama 3 8B on an H100 80GB") {
  // vLLM's memory profile (vllm-project/vllm PR #10511): total 79.22 GiB, x0.9 = 71.29 GiB,
  // weights 14.96, non-torch 1.79, activation peak 1.26 -> 53.29 GiB for the KV cache.
  MemoryInputs in;
  in.device = device("h100-sxm-80gb");
  in.model = model("llama-3.1-8b");
  const Capacity c = compute_capacity(in);
  CHECK(c.weights_gib == doctest::Approx(14.96).epsilon(0.002));
  CHECK(c.activation_gib == doctest::Approx(1.26).epsilon(0.10));
  CHECK(c.kv_gib == doctest::Approx(53.29).epsilon(0.01));
  // by hand: 71.298 - 8.03e9*2/2^30 - 1.8 - 1235746816/2^30 = 53.390 GiB; 512 blocks of 16 tokens per GiB
  CHECK(c.kv_blocks == int64_t(std::floor((71.298 - 8.03e9 * 2 / 1073741824.0 - 1.8 - 1235746816.0 / 1073741824.0) * 512)));
  CHECK(c.kv_capacity_tokens == c.kv_blocks * 16);
  CHECK(max_concurrent(c, 4096, 16) == c.kv_blocks / 256);
  CHECK(max_concurrent(c, 4097, 16) == c.kv_blocks / 257);
  // the naive estimate overstates the KV cache even here
  CHECK(c.naive_kv_gib / c.kv_gib > 1.05);
}

TEST_CASE("on a small device the naive estimate overstates KV capacity by tens of percent") {
  MemoryInputs in;
  in.device = device("l4-24gb");
  in.model = model("llama-3.1-8b");
  const Capacity c = compute_capacity(in);
  CHECK(c.fits);
  CHECK(c.naive_kv_gib / c.kv_gib > 1.5);
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
    CHECK(m.find("needs 135.") != std::string::npos);
    CHECK(m.find("offers 19.8 GiB") != std::string::npos);
  }
  // int4 weights fit the same model on an H100
  CHECK_NOTHROW(test::scenario(yaml, {"device=h100-sxm-80gb", "weight_dtype=int4"}));
}
