// `fleetsim fit` on what a row's configuration says: repeats of one benchmark held out together,
// the engine and version a profile records, and cells that go into a scenario checked first.
#include <doctest/doctest.h>

#include <cmath>
#include <string>

#include "cli/fit_command.hpp"
#include "helpers.hpp"
#include "libsim/calibrate/benchmark.hpp"
#include "libsim/calibrate/fit.hpp"
#include "libsim/input/profile.hpp"

using namespace fleetsim;
using test::write_temp;

namespace {

const char* kRow = "meta-llama/Llama-3.1-8B-Instruct,H100-SXM,1,";

std::string fit_error(cli::FitArgs a) {
  a.threads = 2;
  return test::input_error([&] { cli::run_fit(a, [](const std::string&) {}); });
}

}  // namespace

TEST_CASE("benchmark key: a configuration at a load, whatever it measured, folds keep its repeats together") {
  const std::string head = "model,device,tp,isl,osl,concurrency,mean_ttft_ms\n";
  const auto v = read_benchmarks(
      write_temp("keys.csv", head + kRow + "512,64,4,40\n" + kRow + "512,64,4,41\n" + kRow + "512,64,8,60\n"),
      BenchPoint{});
  REQUIRE(v.size() == 3);
  CHECK(benchmark_key(v[0]) == benchmark_key(v[1]));
  CHECK(benchmark_key(v[0]) != benchmark_key(v[2]));
  // three benchmarks twice each, in the order A A B B C C, three folds: by benchmark, each fold
  // holds out one benchmark's two rows, both predicted by one fit on the other four; by row
  // (i % 3) the two rows of A sat in different folds, trained on different rows
  const auto w = read_benchmarks(write_temp("keys3.csv", head + kRow + "512,64,1,25\n"), BenchPoint{});
  REQUIRE(w.size() == 1);
  std::vector<BenchPoint> pts;
  for (const BenchPoint* x : {&v[0], &v[1], &v[2], &v[2], &w[0], &w[0]}) pts.push_back(*x);
  std::vector<const BenchPoint*> ptrs;
  for (const auto& p : pts) ptrs.push_back(&p);
  FitOptions opt;
  opt.folds = 3;
  opt.threads = 2;
  const auto out = cross_validate(ptrs, opt);
  REQUIRE(out.size() == 6);
  for (int i = 0; i < 6; i += 2) {
    CAPTURE(i);
    CHECK(std::isfinite(out[size_t(i)].predicted.v[kMeanTtft]));
    CHECK(out[size_t(i)].predicted.v[kMeanTtft] == out[size_t(i + 1)].predicted.v[kMeanTtft]);
  }
}

TEST_CASE("fit: --engine names a version the results do not, a global fit across engines applies to none") {
  const std::string head = "model,device,tp,isl,osl,concurrency,mean_ttft_ms,mean_tpot_ms\n";
  const std::string rows =
      std::string(kRow) + "512,64,1,25,7.5\n" + kRow + "512,64,4,40,8.0\n" + kRow + "2048,64,2,90,8.5\n";
  BenchPoint d;
  d.engine = "vllm";
  d.engine_version = "0.15.1";
  const auto v = read_benchmarks(write_temp("ver.csv", head + rows), d);
  REQUIRE(v.size() == 3);
  CHECK(v[0].engine_version == "0.15.1");
  CHECK(v[0].async_scheduling);  // vLLM 0.14 and later schedule ahead
  cli::FitArgs a;
  a.inputs = {write_temp("ver2.csv", head + rows)};
  a.folds = 0;
  a.engine = "vllm 0.15.1";
  a.output = test::temp_path("ver.yaml");
  REQUIRE(fit_error(a) == "(no error)");
  const PerfProfile p = load_profile(a.output, "");
  CHECK(p.engine == "vllm 0.15.1");
  std::string why;
  CHECK_FALSE(profile_applies(p, "llama-3.1-8b", 1, 1, "bf16", why, "vllm", 0));
  CHECK(profile_applies(p, "llama-3.1-8b", 1, 1, "bf16", why, "vllm", 1));
  // a profile of several engines' runs is no engine's as measured
  PerfProfile several = p;
  several.engine = "several";
  CHECK_FALSE(profile_applies(several, "llama-3.1-8b", 1, 1, "bf16", why, "sglang"));
  CHECK(why == "runs of several engines");
  // the version is MAJOR.MINOR after a space, spaces around it allowed; anything else is an error
  a.engine = " vllm  0.15.1 ";
  REQUIRE(fit_error(a) == "(no error)");
  CHECK(load_profile(a.output, "").engine == "vllm 0.15.1");
  for (const char* bad : {"vllm latest", "vllm 0.15.1 x", "vllm0.15"}) {
    CAPTURE(bad);
    a.engine = bad;
    CHECK(fit_error(a).find("--engine " + std::string(bad) + ": expected vllm, sglang or trtllm") != std::string::npos);
  }
}

TEST_CASE("fit: folds count benchmarks, not rows: repeats of one benchmark give no held-out error") {
  // four measurements of one configuration at one load: no fold could train on another benchmark
  const std::string head = "model,device,tp,isl,osl,concurrency,mean_ttft_ms\n";
  cli::FitArgs a;
  a.inputs = {write_temp("one_bench.csv", head + kRow + "512,64,4,40\n" + kRow + "512,64,4,41\n" + kRow +
                                              "512,64,4,42\n" + kRow + "512,64,4,43\n")};
  a.folds = 2;
  a.output = test::temp_path("one_bench.yaml");
  REQUIRE(fit_error(a) == "(no error)");
  CHECK(load_profile(a.output, "").held_out.points == 0);  // it had printed a 0.0% held-out error
}

TEST_CASE("fit inputs: a dtype cell is a dtype's name, a prefilling step prefills a sequence, a strategy is named") {
  std::string device;
  const std::string head =
      "model,device,weight_dtype,prefill_tokens,prefill_seqs,decode_seqs,"
      "decode_context_tokens,step_ms\n";
  const std::string inj = write_temp("inj.csv", head +
                                                    "meta-llama/Llama-3.1-8B,H100-SXM,\"bf16\nseed: 3\",100,1,1,"
                                                    "500,6\n");
  CHECK(test::input_error([&] { read_step_samples(inj, device); }).find("column weight_dtype: expected one of") !=
        std::string::npos);
  const std::string zero = write_temp("zero.csv", head + "meta-llama/Llama-3.1-8B,H100-SXM,bf16,100,0,1,500,6\n");
  CHECK(test::input_error([&] {
          read_step_samples(zero, device);
        }).find("column prefill_seqs: a step that prefills tokens prefills a sequence at least") != std::string::npos);
  const std::string g = write_temp("gtype.json", R"({"benchmarks":[{"args":{"strategy":{"type_":5}}}]})");
  const std::string e = test::input_error([&] { read_benchmarks(g, BenchPoint{}); });
  CHECK(e.find("benchmarks[0].args.strategy.type_: expected a strategy's name (a string), not 5") != std::string::npos);
  CHECK(e.find("json.exception") == std::string::npos);
}
