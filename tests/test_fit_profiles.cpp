// `fleetsim fit` end to end: the profile it writes (its configuration, engine and errors), --steps
// and --global, and the points a fit cannot use.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <sstream>
#include <string>

#include "cli/fit_command.hpp"
#include "fit_helpers.hpp"
#include "helpers.hpp"
#include "libsim/base/json.hpp"
#include "libsim/calibrate/fit.hpp"
#include "libsim/input/profile.hpp"

using namespace fleetsim;
using namespace fleetsim::test;

TEST_CASE("fit --steps: the profile names the configuration its rows share and keeps its step-time error") {
  cli::FitArgs a;
  a.inputs = {steps_csv("shared.csv", 12)};
  a.steps = true;
  a.folds = 3;
  a.output = test::temp_path("shared.yaml");
  REQUIRE(fit_error(a) == "(no error)");
  const PerfProfile p = load_profile(a.output, "");
  CHECK(p.name == "h100-sxm-80gb/llama-3.1-8b/tp1");
  CHECK(p.model == "llama-3.1-8b");
  CHECK(p.tp == 1);
  CHECK(p.weight_dtype == "bf16");
  CHECK(p.step_time.steps == 12);
  CHECK(p.step_time.median >= 0.0);
  CHECK(std::isfinite(p.step_time.held_out));
  // so a pool of that configuration takes its error as its own; another model's does not
  std::string why;
  CHECK(profile_applies(p, "llama-3.1-8b", 1, 1, "bf16", why, "vllm"));
  CHECK_FALSE(profile_applies(p, "qwen3-32b", 1, 1, "bf16", why, "vllm"));
  CHECK(why == "model llama-3.1-8b");
  // rows of two models: the profile is the device's, fitted on several models
  std::string text;
  std::ifstream in(steps_csv("mixed.csv", 6));
  text.assign(std::istreambuf_iterator<char>(in), {});
  for (int i = 1; i <= 6; ++i)
    text += "Qwen/Qwen3-32B,H100-SXM," + std::to_string(90 * i) + "," + std::to_string(i) + "," +
            std::to_string(400 * i) + "," + std::to_string(9 + i) + "\n";
  a.inputs = {write_temp("mixed2.csv", text)};
  a.output = test::temp_path("mixed.yaml");
  REQUIRE(fit_error(a) == "(no error)");
  const PerfProfile m = load_profile(a.output, "");
  CHECK(m.model.empty());
  CHECK(m.name == "h100-sxm-80gb/any");
  CHECK_FALSE(profile_applies(m, "llama-3.1-8b", 1, 1, "bf16", why, "vllm"));
  CHECK(why == "several models");
}

TEST_CASE("fit --global: points of one model on one device leave nothing out to measure the fit on") {
  const std::string head = "model,device,tp,isl,osl,concurrency,mean_ttft_ms,mean_tpot_ms\n";
  cli::FitArgs a;
  a.inputs = {write_temp("one_config.csv",
                         head + kRow + "512,64,1,25,7.5\n" + kRow + "512,64,4,40,8.0\n" + kRow + "2048,64,2,90,8.5\n")};
  a.global = true;
  a.folds = 0;
  CHECK(fit_error(a) ==
        "fleetsim: error: --global fits across devices and models, and measures itself on one left "
        "out: these points are all llama-3.1-8b on h100-sxm-80gb (fit them without --global, or add "
        "another device's or model's)");
}

TEST_CASE("fit inputs: a rate with a concurrency, a burst of no stated size, zero lengths and rates are errors") {
  const std::string head = "model,device,tp,isl,osl,concurrency,request_rate,num_prompts,mean_ttft_ms\n";
  auto row_error = [&](const char* name, const std::string& row) {
    return read_error(write_temp(name, head + kRow + row + "\n"));
  };
  CHECK(row_error("both.csv", "512,64,8,0.5,,40").find(":2: error: a request rate and a concurrency both") !=
        std::string::npos);
  CHECK(row_error("isl0.csv", "0,64,8,,,40").find(":2: error: column isl: expected a positive number of tokens") !=
        std::string::npos);
  CHECK(row_error("rate0.csv", "512,64,,0,,40").find(":2: error: column request_rate: expected a positive") !=
        std::string::npos);
  CHECK(row_error("many.csv", "512,64,8,,2000000,40").find("column num_prompts") != std::string::npos);
  // a concurrency with rate inf is vllm bench's usual closed loop
  CHECK(read_benchmarks(write_temp("inf.csv", head + kRow + "512,64,8,inf,,40\n"), {})[0].concurrency == 8);
  // every prompt at once, but how many not said: skipped, saying so
  const auto burst = read_benchmarks(write_temp("burst.csv", head + kRow + "512,64,,inf,,40\n"), {});
  CHECK(burst[0].skip == "all requests at once (request rate inf), but not how many (num_prompts)");
  BenchPoint d;
  d.device_id = "h100";
  const std::string js = write_temp("rate_cap.json", R"({"model_id": "meta-llama/Llama-3.1-8B-Instruct",
      "max_concurrency": 8, "request_rate": 0.5, "num_prompts": 10, "mean_ttft_ms": 30})");
  CHECK(read_error(js, d).find("max_concurrency and a finite request_rate both") != std::string::npos);
  const std::string word = write_temp("rate_word.json", R"({"model_id": "meta-llama/Llama-3.1-8B-Instruct",
      "request_rate": "fast", "num_prompts": 10, "mean_ttft_ms": 30})");
  CHECK(read_error(word, d).find("request_rate: expected a positive number of requests per second or \"inf\", not "
                                 "\"fast\"") != std::string::npos);
  // an empty model cell takes --model's; none at all says so
  BenchPoint m;
  m.model_id = "llama-3.1-8b";
  const std::string empty_model = write_temp("empty_model.csv", std::string(kHeader) + ",H100-SXM,1,512,64,1,30,8\n");
  CHECK(read_benchmarks(empty_model, m)[0].model == "llama-3.1-8b");
  CHECK(read_benchmarks(empty_model, {})[0].skip == "no model named (the model column, or --model)");
}

TEST_CASE("fit: the profile names its runs' engine, duplicates, a name run cannot load and mixed engines are errors") {
  const std::string head = "model,device,tp,isl,osl,concurrency,engine,engine_version,mean_ttft_ms,mean_tpot_ms\n";
  const std::string rows = std::string(kRow) + "512,64,1,sglang,0.5.6,25,7.5\n" + kRow +
                           "512,64,4,sglang,0.5.6,40,8.0\n" + kRow + "2048,64,2,sglang,0.5.6,90,8.5\n";
  cli::FitArgs a;
  a.inputs = {write_temp("sglang.csv", head + rows)};
  a.folds = 0;
  a.output = test::temp_path("sglang.yaml");
  REQUIRE(fit_error(a) == "(no error)");
  const PerfProfile p = load_profile(a.output, "");
  CHECK(p.engine == "sglang 0.5.6");
  std::string why;
  CHECK_FALSE(profile_applies(p, "llama-3.1-8b", 1, 1, "bf16", why, "vllm"));
  CHECK(profile_applies(p, "llama-3.1-8b", 1, 1, "bf16", why, "sglang"));
  // the same row twice would weigh double
  a.inputs = {write_temp("dup.csv", head + rows + kRow + "512,64,4,sglang,0.5.6,40,8.0\n")};
  CHECK(fit_error(a).find("dup.csv:5: error: the same benchmark as " + test::temp_path("dup.csv") + ":3") !=
        std::string::npos);
  a.inputs = {write_temp("mixed_engines.csv", head + rows + kRow + "1024,64,4,vllm,0.12.0,40,8.0\n")};
  CHECK(fit_error(a).find("a profile is fitted for one engine") != std::string::npos);
  // an engine fleetsim does not name is an error at its row, not a vLLM run under another label;
  // TensorRT-LLM's spellings, in any case, are trtllm
  std::string other = rows;
  for (size_t at; (at = other.find("sglang")) != std::string::npos;) other.replace(at, 6, "TensorRT-LLM");
  a.inputs = {write_temp("trt.csv", head + other)};
  a.output = test::temp_path("trt.yaml");
  REQUIRE(fit_error(a) == "(no error)");
  CHECK(load_profile(a.output, "").engine == "trtllm 0.5.6");
  a.inputs = {write_temp("typo.csv", head + std::string(kRow) + "512,64,1,SGLang,0.5.6,25,7.5\n" + kRow +
                                         "512,64,4,sglnag,0.5.6,40,8.0\n")};
  CHECK(fit_error(a).find("typo.csv:3: error: column engine: expected vllm, sglang or trtllm (TensorRT-LLM), not "
                          "'sglnag'") != std::string::npos);
  a.inputs = {write_temp("sglang.csv", head + rows)};
  a.engine = "vllm-typo";
  CHECK(fit_error(a).find("fleetsim: error: --engine vllm-typo: expected vllm, sglang or trtllm (TensorRT-LLM)") == 0);
  a.engine = "vllm";
  // engine.perf_profile reads a name without .yaml as a shipped profile's
  a.output = test::temp_path("myprof");
  CHECK(fit_error(a).find("--output " + a.output + ": expected a file name with .yaml or .yml") != std::string::npos);
  // a vLLM profile that names its version says whether it scheduled ahead (0.14 and later)
  PerfProfile old = p;
  old.engine = "vllm 0.12.0";
  CHECK(profile_applies(old, "llama-3.1-8b", 1, 1, "bf16", why, "vllm", 0));
  CHECK_FALSE(profile_applies(old, "llama-3.1-8b", 1, 1, "bf16", why, "vllm", 1));
  CHECK(why == "runs that do not schedule ahead (vLLM before 0.14)");
  old.engine = "vllm 0.15.1";
  CHECK_FALSE(profile_applies(old, "llama-3.1-8b", 1, 1, "bf16", why, "vllm", 0));
  CHECK(why == "runs that schedule ahead (vLLM 0.14 and later)");
  old.engine = "vllm";
  CHECK(profile_applies(old, "llama-3.1-8b", 1, 1, "bf16", why, "vllm", 1));
}

TEST_CASE("fit: fewer prompts than clients send each at once, a point the fitted profile cannot serve counts nowhere") {
  BenchPoint p;
  p.device = "h100-sxm-80gb";
  p.model = "llama-3.1-8b";
  p.isl = 512;
  p.osl = 64;
  p.concurrency = 64;
  p.num_prompts = 10;
  const std::string y = benchmark_scenario_yaml(p, {});
  CHECK(y.find("clients: 10, requests: 10") != std::string::npos);
  // a prompt beyond what one device's KV cache holds: every request rejected whatever the fit
  const std::string head = "model,device,tp,isl,osl,concurrency,mean_ttft_ms,mean_tpot_ms\n";
  cli::FitArgs a;
  a.inputs = {write_temp("unserved.csv", head + kRow + "512,64,1,25,7.5\n" + kRow + "512,64,4,40,8.0\n" + kRow +
                                             "2048,64,2,90,8.5\n" + "Qwen/Qwen3-32B,H100-SXM,1,30000,128,8,5000,30\n")};
  a.folds = 0;
  a.format = "json";
  std::string out;
  REQUIRE(fit_error(a, &out) == "(no error)");
  const Json j = Json::parse(out);
  CHECK(j["points"] == 4);
  REQUIRE(j["unserved"].size() == 1);
  CHECK(j["unserved"][0] == test::temp_path("unserved.csv") + ":5");
  // nor in the held-out figure, where it is counted too
  a.folds = 2;
  out.clear();
  REQUIRE(fit_error(a, &out) == "(no error)");
  CHECK(Json::parse(out)["held_out_unfinished"] == 1);
}

// A profile fitted to step timings must price in a run what it priced in the fit. A mixture of
// experts reads the routed experts its tokens touch: the fit's weight term left them out where the
// simulator adds them, and one client's TPOT came out 10% above the fitted step.
TEST_CASE("fit --steps: a MoE model's fitted step is the step its runs take") {
  std::mt19937 g(3);
  std::string csv = "model,device,tp,prefill_tokens,prefill_seqs,decode_seqs,decode_context_tokens,step_ms\n";
  for (int i = 0; i < 30; ++i) {
    const int pt = i % 3 == 0 ? 0 : std::uniform_int_distribution<int>(64, 4096)(g);
    const int ds = std::uniform_int_distribution<int>(1, 128)(g);
    const int ctx = ds * std::uniform_int_distribution<int>(100, 3000)(g);
    const double ms = 6 + 0.02 * ds + 0.0015 * pt + 1e-5 * ctx + 0.3 * std::sin(i);
    csv += fmt::format("mistralai/Mixtral-8x7B-v0.1,H100-SXM,2,{},{},{},{},{:.3f}\n", pt, pt > 0 ? 1 : 0, ds, ctx, ms);
  }
  cli::FitArgs a;
  a.steps = true;
  a.folds = 0;
  a.inputs = {write_temp("moe_steps.csv", csv)};
  a.output = test::temp_path("moe_steps.yaml");
  REQUIRE(fit_error(a) == "(no error)");
  const PerfProfile p = load_profile(a.output, "");
  // one client, 1024 in and 128 out: its decode steps read 1024 + j tokens for j = 1 ... 127,
  // and the step is linear in the context, so their mean is the step at 1088
  std::string device;
  const auto probe =
      read_step_samples(write_temp("moe_probe.csv",
                                   "model,device,tp,prefill_tokens,decode_seqs,decode_context_tokens,step_ms\n"
                                   "mistralai/Mixtral-8x7B-v0.1,H100-SXM,2,0,1,1088,1\n"),
                        device);
  const double fitted_s = step_prediction(p.c, probe.at(0));
  const auto r = test::run(test::scenario(
      "duration_s: 120\nwarmup_s: 10\ndevice: h100-sxm-80gb\nmodel: mixtral-8x7b\nengine: {tensor_parallel: 2, "
      "perf_profile: " +
      a.output +
      "}\nfleet: {replicas: 1}\nworkload:\n  arrival: {process: concurrency, clients: 1}\n  prompt_tokens: 1024\n"
      "  output_tokens: 128\n"));
  REQUIRE(r.all->tpot.n > 100);
  CHECK(r.all->tpot.sum / double(r.all->tpot.n) == doctest::Approx(fitted_s).epsilon(1e-3));
}

TEST_CASE("fit --steps: a chunk after the first attends to, and reads, the context its sequences computed before") {
  // two sequences prefill 500 tokens each beside 4 decoding over 2,000 tokens of context; then the
  // same with 3,000 tokens computed before their chunks: the KV read grows by 3,000 tokens (as much
  // as the 1,000 + 2,000 read before) and attention by 500 x 3,000 pairs over the 2 x 500 x 501 / 2
  const std::string head =
      "model,device,prefill_tokens,prefill_seqs,prefill_context_tokens,decode_seqs,decode_context_tokens,step_ms\n";
  const std::string f = write_temp("chunks.csv", head + "meta-llama/Llama-3.1-8B,H100-SXM,1000,2,,4,2000,20\n" +
                                                     "meta-llama/Llama-3.1-8B,H100-SXM,1000,2,3000,4,2000,25\n");
  std::string device;
  const auto s = read_step_samples(f, device);
  REQUIRE(s.size() == 2);
  CHECK(s[1].x[4] == doctest::Approx(2.0 * s[0].x[4]));
  CHECK(s[1].x[5] == doctest::Approx(s[0].x[5] * (250500.0 + 1500000.0) / 250500.0));
  CHECK(s[1].x[3] == s[0].x[3]);  // no latent to up-project: the GEMMs are the same
  for (int i : {0, 1, 2}) CHECK(s[1].x[i] == s[0].x[i]);
  // context before a chunk with no chunk is refused
  const std::string bad = write_temp("chunks_bad.csv", head + "meta-llama/Llama-3.1-8B,H100-SXM,0,0,100,4,2000,20\n");
  CHECK(steps_error(bad) == bad +
                                ":2: error: column prefill_context_tokens: context before a prefill chunk needs "
                                "prefill_tokens in the step");
}
