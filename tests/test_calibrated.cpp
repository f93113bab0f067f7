// Calibrated step time and `fleetsim fit`: profiles, the step-time terms against hand-computed
// values, non-negative least squares against known solutions, fits that recover the coefficients
// that generated their data, benchmark readers, and the client's share of TTFT.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <random>
#include <sstream>
#include <string>

#include "helpers.hpp"
#include "libsim/calibrate/fit.hpp"
#include "libsim/core/stepwork.hpp"
#include "libsim/input/csv.hpp"

using namespace fleetsim;
using test::write_temp;

namespace {

using test::error_of;

PerfProfile sample_profile() {
  PerfProfile p;
  p.name = "h100-sxm-80gb/test";
  p.device = "h100-sxm-80gb";
  p.engine = "vllm";
  p.c.step_s = 0.003;
  p.c.per_seq_s = 4e-5;
  p.c.weight_factor = 1.3;
  p.c.matmul_factor = 1.8;
  p.c.kv_factor = 1.5;
  p.c.attention_factor = 3.0;
  p.c.client_ttft_s = 0.004;
  return p;
}

const std::string kFleet =
    "duration_s: 60\ndevice: h100-sxm-80gb\nmodel: llama-3.1-8b\nfleet: {replicas: 1}\n"
    "workload: {arrival: {process: poisson, rate_per_s: 2}, prompt_tokens: 512, output_tokens: 64}\n";

}  // namespace

TEST_CASE("a profile survives writing and reading, and bad profiles are located errors") {
  const PerfProfile p = sample_profile();
  const PerfProfile q = parse_profile(profile_yaml(p), "<round trip>");
  for (int i = 0; i < kProfileTerms; ++i)
    CHECK(profile_term(q.c, i) == doctest::Approx(profile_term(p.c, i)).epsilon(1e-5));
  CHECK(q.name == p.name);
  CHECK(q.device == p.device);
  CHECK(q.model.empty());
  CHECK(q.tp == 0);
  // any name, engine or data path reads back as written: YAML's special characters are quoted
  PerfProfile odd = sample_profile();
  for (const std::string& text :
       {std::string("my: prof"), std::string("#x"), std::string("q\\x \"0.10\""),
        std::string("- a, [b] {c} & *d ! %e @f `g'"), std::string("tab\there"), std::string("any")}) {
    CAPTURE(text);
    odd.name = text;
    odd.engine = "vllm " + text;
    odd.data = text + ".csv";
    const PerfProfile back = parse_profile(profile_yaml(odd), "<round trip>");
    CHECK(back.name == odd.name);
    CHECK(back.engine == odd.engine);
    CHECK(back.data == odd.data);
  }
  try {
    parse_profile("profile: x\ndevice: h100-sxm-80gb\ncoefficients: {step_s: 0.001, warp_factor: 2}\n", "p.yaml");
    FAIL("expected an error");
  } catch (const InputError& e) {
    CHECK(e.one_line().find("p.yaml:3") != std::string::npos);
    CHECK(e.one_line().find("warp_factor") != std::string::npos);
  }
  CHECK_THROWS_AS(parse_profile("profile: x\ndevice: h900\ncoefficients: {step_s: 0.001}\n", "p.yaml"), InputError);
  CHECK_THROWS_AS(parse_profile("profile: x\ndevice: h100-sxm-80gb\ncoefficients: {client_ttft_s: 0.001}\n", "p.yaml"),
                  InputError);
}

TEST_CASE("calibrated step time: each kernel the longer of its bytes and FLOPs (a sum in format 4), runs alike") {
  for (const bool overlap : {true, false}) {
    CAPTURE(overlap);
    Scenario s = test::scenario(kFleet + "engine: {perf_profile: none}\n");
    PerfProfile prof = sample_profile();
    prof.c.kernel_overlap = overlap;
    s.pools[0].profile = std::make_shared<PerfProfile>(prof);
    s.pools[0].perf_model = PerfKind::calibrated;
    const PoolParams P = s.pools[0].params();
    const WorkParams& w = P.work;
    const double B = 3350e9, F = 989.4e12;
    auto kernel = [&](double bytes_s, double flops_s) {
      return overlap ? std::max(bytes_s, flops_s) : bytes_s + flops_s;
    };
    // a prefill of 1000 tokens from scratch beside 10 decoding sequences at context 2000 in all:
    // the GEMMs compute-bound, the attention bound by its quadratic FLOPs
    Replica R{};
    const double pairs = 1000.0 * 1001.0 / 2.0;
    set_single_step(P, R, 1000, pairs, 0, 10, 1990, 11);
    const double gemm_w = 1.3 * w.weight_bytes / B, gemm_f = 1.8 * w.matmul_flops_per_token * 1010 / F;
    const double attn_kv = 1.5 * w.kv_bytes_per_token * (1000 + 2000) / B,
                 attn_f = 3.0 * w.attn_flops_per_pair * pairs / F;
    CHECK(gemm_f > gemm_w);
    const double expect = 0.003 + 4e-5 * 11 + kernel(gemm_w, gemm_f) + kernel(attn_kv, attn_f);
    CHECK(R.run_line.o == doctest::Approx(expect).epsilon(1e-12));
    // the hand-computed figures: 8B bf16 weights are 16.06 GB, streamed at 1/1.3 of 3.35 TB/s;
    // 1010 tokens x 16.06 GFLOP at 1/1.8 of 989.4 TFLOP/s
    CHECK(gemm_w == doctest::Approx(6.232e-3).epsilon(1e-3));
    CHECK(gemm_f == doctest::Approx(29.51e-3).epsilon(2e-3));
    // a decode run of 16 sequences, memory-bound: step j reads context 3000 + 16 (j + 1)
    set_decode_run(P, R, 16, 3000);
    for (int64_t j : {0, 1, 7, 500}) {
      const double ctx = 3000 + 16.0 * double(j + 1);
      const double step = 0.003 + 4e-5 * 16 +
                          kernel(1.3 * w.weight_bytes / B, 1.8 * w.matmul_flops_per_token * 16 / F) +
                          1.5 * w.kv_bytes_per_token * ctx / B;
      CHECK(line_step(R.run_line, j) == doctest::Approx(step).epsilon(1e-12));
    }
  }
  // across devices (tp 2, the extended path): a decode run's step is the single step of the same work
  Scenario s = test::scenario(kFleet + "engine: {perf_profile: none, tensor_parallel: 2}\n");
  s.pools[0].profile = std::make_shared<PerfProfile>(sample_profile());
  s.pools[0].perf_model = PerfKind::calibrated;
  const PoolParams P = s.pools[0].params();
  REQUIRE_FALSE(plain_step_model(P));
  Replica R{};
  for (const double n : {4.0, 256.0}) {  // memory-bound and compute-bound GEMMs
    set_decode_run(P, R, n, 5000);
    const double run_step = line_step(R.run_line, 3);
    set_single_step(P, R, 0, 0, 0, n, 5000 + 3 * n, n);
    CHECK(run_step == doctest::Approx(R.run_line.o).epsilon(1e-12));
  }
}

TEST_CASE("non-negative least squares: the exact solution when it is feasible, KKT conditions when not") {
  std::mt19937 g(3);
  std::normal_distribution<double> n(0, 1);
  Eigen::MatrixXd A(30, 5);
  for (int i = 0; i < 30; ++i)
    for (int j = 0; j < 5; ++j) A(i, j) = std::fabs(n(g)) + 0.1;
  Eigen::VectorXd x_true(5);
  x_true << 1.0, 0.0, 2.5, 0.25, 0.0;
  const Eigen::VectorXd x = nnls(A, A * x_true);
  for (int j = 0; j < 5; ++j) CHECK(x[j] == doctest::Approx(x_true[j]).epsilon(1e-9).scale(1.0));
  // b pulls coefficient 0 negative: it must sit at 0 with a non-positive gradient there
  Eigen::VectorXd b = A * x_true - 3.0 * A.col(0);
  const Eigen::VectorXd y = nnls(A, b);
  const Eigen::VectorXd grad = A.transpose() * (b - A * y);
  for (int j = 0; j < 5; ++j) {
    CHECK(y[j] >= 0.0);
    if (y[j] > 1e-12)
      CHECK(std::fabs(grad[j]) < 1e-8 * b.norm() * A.norm());
    else
      CHECK(grad[j] <= 1e-8 * b.norm() * A.norm());
  }
}

TEST_CASE("fit --steps recovers the coefficients that generated the step timings, as a sum") {
  PerfProfile truth = sample_profile();
  truth.c.kernel_overlap = false;  // least squares fits the sum of the terms
  std::string csv = "model,device,tp,prefill_tokens,prefill_seqs,decode_seqs,decode_context_tokens,step_ms\n";
  std::mt19937 g(11);
  std::vector<std::array<double, 4>> rows;
  for (int i = 0; i < 40; ++i) {
    const double pt = i % 3 == 0 ? 0 : double(std::uniform_int_distribution<int>(16, 4096)(g));
    const double ds = double(std::uniform_int_distribution<int>(1, 128)(g));
    const double ctx = ds * std::uniform_int_distribution<int>(100, 3000)(g);
    rows.push_back({pt, pt > 0 ? 1.0 : 0.0, ds, ctx});
  }
  // the step times the truth gives, through the same feature map the reader uses
  const std::string probe = write_temp("steps_probe.csv", [&] {
    std::string s = csv;
    // two models, so that the fixed term and the weight term can be told apart
    int k = 0;
    for (const auto& r : rows)
      s += std::string(k++ % 2 ? "meta-llama/Llama-3.1-8B" : "Qwen/Qwen3-32B") + ",H100-SXM,1," + std::to_string(r[0]) +
           "," + std::to_string(r[1]) + "," + std::to_string(r[2]) + "," + std::to_string(r[3]) + ",1\n";
    return s;
  }());
  std::string device;
  const auto features = read_step_samples(probe, device);
  CHECK(device == "h100-sxm-80gb");
  REQUIRE(features.size() == rows.size());
  std::vector<StepSample> samples = features;
  for (auto& s : samples) s.step_s = step_prediction(truth.c, s);
  const PerfCoefficients c = fit_steps(samples);
  for (int i = 0; i < 6; ++i) CHECK(profile_term(c, i) == doctest::Approx(profile_term(truth.c, i)).epsilon(1e-6));
  CHECK_FALSE(c.kernel_overlap);
  // its predictions are the sum's; the same coefficients composed per kernel predict less, never more
  for (const auto& smp : samples) {
    CHECK(step_prediction(c, smp) == doctest::Approx(smp.step_s).epsilon(1e-6));
    PerfCoefficients o = c;
    o.kernel_overlap = true;
    CHECK(step_prediction(o, smp) <= step_prediction(c, smp));
  }
}

TEST_CASE("fit on benchmark points recovers predictions of the coefficients that generated them") {
  // measurements made by the simulator itself with known coefficients: the fit must reproduce them
  const PerfProfile truth = sample_profile();
  const std::vector<BenchPoint> pts = test::synthetic_points({"H100-SXM"}, {256, 2048}, 128, {1, 8, 32}, truth.c);
  std::vector<const BenchPoint*> ptr;
  for (const auto& p : pts) ptr.push_back(&p);
  FitOptions opt;
  opt.threads = 2;
  opt.prior_weight = 0.0;
  const PerfCoefficients c = fit_benchmarks(ptr, opt);
  const ProfileError e = summarize(evaluate(ptr, &c, opt));
  CHECK(e.median[kMeanTpot] < 0.02);
  CHECK(e.median[kMeanTtft] < 0.05);
  // the uncalibrated roofline does not get there: the fit did the work
  const ProfileError r = summarize(evaluate(ptr, nullptr, opt));
  CHECK(r.median[kMeanTpot] > 0.05);
}

TEST_CASE("benchmark results are read from CSV, vllm bench serve JSON and GuideLLM JSON") {
  const std::string csv =
      write_temp("bench.csv",
                 "model,device,tp,isl,osl,concurrency,request_rate,mean_ttft_ms,mean_tpot_ms,p99_ttft_ms,notes\n"
                 "meta-llama/Llama-3.1-8B-Instruct,H100-SXM,1,1024,128,16,,45.5,9.25,80,max_num_seqs=128\n"
                 "Qwen/Qwen3-32B,h100-sxm-80gb,2,4096,512,,2.5,300,20,,poisson\n"
                 "acme/unknown-13b,H100-SXM,1,100,100,4,,1,1,,\n");
  BenchPoint d;
  const auto p = read_benchmarks(csv, d);
  REQUIRE(p.size() == 3);
  CHECK(p[0].model == "llama-3.1-8b");
  CHECK(p[0].device == "h100-sxm-80gb");
  CHECK(p[0].concurrency == 16);
  CHECK(p[0].max_num_seqs == 128);
  CHECK(p[0].measured[kMeanTtft] == doctest::Approx(0.0455));
  CHECK(p[0].measured[kP99Ttft] == doctest::Approx(0.080));
  CHECK(std::isnan(p[0].measured[kMeanE2e]));
  CHECK(p[1].rate_per_s == doctest::Approx(2.5));
  CHECK(p[1].poisson);
  CHECK(p[1].tp == 2);
  CHECK(p[2].skip.find("not in the catalog") != std::string::npos);

  const std::string vj = write_temp("vllm.json",
                                    R"({"backend": "vllm", "model_id": "meta-llama/Llama-3.1-8B-Instruct",
      "num_prompts": 200, "request_rate": "inf", "max_concurrency": 32, "completed": 200,
      "total_input_tokens": 204800, "total_output_tokens": 25600, "mean_ttft_ms": 120.5, "p99_ttft_ms": 300.0,
      "mean_tpot_ms": 11.0, "mean_e2el_ms": 1517.5})");
  BenchPoint dv;
  dv.device_id = "h100-sxm-80gb";
  const auto v = read_benchmarks(vj, dv);
  REQUIRE(v.size() == 1);
  CHECK(v[0].skip.empty());
  CHECK(v[0].concurrency == 32);
  CHECK(v[0].rate_per_s == 0);
  CHECK(v[0].isl == doctest::Approx(1024));
  CHECK(v[0].osl == doctest::Approx(128));
  CHECK(v[0].measured[kMeanE2e] == doctest::Approx(1.5175));

  const std::string gj = write_temp("guidellm.json",
                                    R"({"benchmarks": [{"args": {"strategy": {"type_": "concurrent", "streams": 8}},
      "metrics": {"time_to_first_token_ms": {"successful": {"mean": 50.0, "percentiles": {"p99": 90.0}}},
                  "time_per_output_token_ms": {"successful": {"mean": 8.0}},
                  "inter_token_latency_ms": {"successful": {"mean": 8.03125}},
                  "request_latency": {"successful": {"mean": 2.1}},
                  "prompt_token_count": {"successful": {"mean": 512}},
                  "output_token_count": {"successful": {"mean": 256}}}}]})");
  BenchPoint dg;
  dg.device_id = "h100-sxm-80gb";
  dg.model_id = "llama-3.1-8b";
  const auto gl = read_benchmarks(gj, dg);
  REQUIRE(gl.size() == 1);
  CHECK(gl[0].skip.empty());
  CHECK(gl[0].concurrency == 8);
  CHECK(gl[0].isl == doctest::Approx(512));
  CHECK(gl[0].measured[kP99Ttft] == doctest::Approx(0.090));
  CHECK(gl[0].measured[kMeanE2e] == doctest::Approx(2.1));
  // GuideLLM's time per output token divides by all 256 tokens, its inter-token latency by the 255
  // after the first: the latter is TPOT
  CHECK(gl[0].measured[kMeanTpot] == doctest::Approx(0.00803125));

  CHECK_THROWS_AS(read_benchmarks(write_temp("bad.csv", "model,isl\nx,1\n"), d), InputError);
  CHECK_THROWS_AS(read_benchmarks(write_temp("bad.json", "{\"hello\": 1}"), d), InputError);
}

TEST_CASE("CSV: quoted fields keep commas, doubled quotes and line breaks, csv_quote writes what CsvReader reads") {
  std::istringstream in(
      "\xEF\xBB\xBFname,\"Notes, free text\",n\r\n"
      "\"acme, inc.\",\"say \"\"hi\"\", twice\",1\r\n"
      "  \"padded\"  ,plain \"inner\" quote,2\n"
      "\n"
      "\"two\nlines\",\"\",3\n"
      "last,,4\n");
  CsvReader r(in, "<csv>");
  CHECK(r.has("notes, free text"));
  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> where;
  while (r.next()) {
    rows.push_back({r.get("name"), r.get("notes, free text"), r.get("n")});
    where.push_back(r.where());
  }
  CHECK(rows == std::vector<std::vector<std::string>>{{"acme, inc.", "say \"hi\", twice", "1"},
                                                      {"padded", "plain \"inner\" quote", "2"},
                                                      {"two\nlines", "", "3"},
                                                      {"last", "", "4"}});
  CHECK(where == std::vector<std::string>{"<csv>:2", "<csv>:3", "<csv>:5", "<csv>:7"});  // a record's first line

  // written by csv_quote, read back field for field
  const std::vector<std::string> fields = {"plain", "a,b", "say \"hi\"", "\"", "", "line\nbreak", " spaced "};
  CHECK(csv_quote("plain") == "plain");
  CHECK(csv_quote("a,b") == "\"a,b\"");
  CHECK(csv_quote("say \"hi\"") == "\"say \"\"hi\"\"\"");
  std::string text;
  for (size_t i = 0; i < fields.size(); ++i) text += (i ? "," : "") + std::string("c") + std::to_string(i);
  text += "\n";
  for (size_t i = 0; i < fields.size(); ++i) text += (i ? "," : "") + csv_quote(fields[i]);
  text += "\n";
  std::istringstream back(text);
  CsvReader rb(back, "<round trip>");
  REQUIRE(rb.next());
  for (size_t i = 0; i < fields.size(); ++i) {
    CAPTURE(i);
    // (spaces around an unquoted field are dropped on reading)
    CHECK(rb.get("c" + std::to_string(i)) == (fields[i] == " spaced " ? "spaced" : fields[i]));
  }
  CHECK_FALSE(rb.next());

  // an unterminated quote is located at the quote, even when it opens on a later line of a record
  auto error_of_csv = [](const std::string& t) {
    std::istringstream s(t);
    try {
      CsvReader c(s, "<bad>");
      while (c.next()) {
      }
    } catch (const InputError& e) {
      return e.one_line();
    }
    return std::string("(no error)");
  };
  CHECK(error_of_csv("a,b\n1,\"open\n2,3\n") == "<bad>:2:3: error: unterminated quoted field (no closing \")");
  CHECK(error_of_csv("a,b\n1,\"x\ny\",\"z\n") == "<bad>:3:4: error: unterminated quoted field (no closing \")");
  CHECK(error_of_csv("\"a,b\n") == "<bad>:1:1: error: unterminated quoted field (no closing \")");
  // a column named twice (case aside) is refused, where the last one used to win unseen; empty
  // names (a trailing comma) are no columns
  CHECK(error_of_csv("\nmean_ttft_ms,n,Mean_TTFT_ms\n1,2,3\n") ==
        "<bad>:2: error: column 'Mean_TTFT_ms' is in the header twice (fields 1 and 3): rename or drop one");
  CHECK(error_of_csv("a,b,,\n1,2,,\n") == "(no error)");

  // a benchmark file whose model names and notes are quoted
  const std::string bench = write_temp(
      "quoted.csv",
      "model,device,tp,isl,osl,concurrency,mean_ttft_ms,notes\n"
      "\"meta-llama/Llama-3.1-8B-Instruct\",H100-SXM,1,1024,128,16,45.5,\"max_num_seqs=128, \"\"eager\"\"\"\n");
  const auto p = read_benchmarks(bench, BenchPoint{});
  REQUIRE(p.size() == 1);
  CHECK(p[0].model == "llama-3.1-8b");
  CHECK(p[0].concurrency == 16);
  CHECK(p[0].max_num_seqs == 128);
}

TEST_CASE("the client's own time shifts every TTFT and e2e by exactly its amount and leaves TPOT alone") {
  const std::vector<std::string> sets = {"duration_s=600", "warmup_s=60"};
  const auto a = test::run(test::scenario(kFleet + "engine: {perf_profile: none}\n", sets));
  const auto b = test::run(test::scenario(kFleet + "engine: {perf_profile: none, client_ttft_s: 0.05}\n", sets));
  REQUIRE(a.all->completed == b.all->completed);
  const double n = double(a.all->completed);
  CHECK(b.all->ttft.sum / n - a.all->ttft.sum / n == doctest::Approx(0.05).epsilon(1e-9));
  CHECK(b.all->e2e.sum / n - a.all->e2e.sum / n == doctest::Approx(0.05).epsilon(1e-9));
  CHECK(b.all->tpot.sum == doctest::Approx(a.all->tpot.sum).epsilon(1e-12));
  CHECK(b.report["scenario"]["step_time"]["client_ttft_s"].get<double>() == doctest::Approx(0.05));
}

TEST_CASE("a closed-loop benchmark of N requests sends exactly N, a ramp keeps users accounted for") {
  const std::string yaml =
      "duration_s: 100000\nwarmup_s: 0\ndevice: h100-sxm-80gb\nmodel: llama-3.1-8b\n"
      "engine: {perf_model: linear, step_base_s: 0.01}\nfleet: {replicas: 1}\n"
      "workload: {arrival: {process: concurrency, clients: 4, requests: 10}, prompt_tokens: 64, output_tokens: 8}\n";
  const auto r = test::run(test::scenario(yaml));
  CHECK(r.all->arrived == 10);
  CHECK(r.all->completed == 10);
  const auto q = test::run(
      test::scenario(yaml, {"duration_s=50", "workload.arrival.requests=1000000", "workload.arrival.ramp_s=5"}));
  // users not yet started count as thinking: in_system + thinking = N x window
  CHECK(q.all->in_system_s + q.all->thinking_s == doctest::Approx(4 * 50.0).epsilon(1e-9));
  CHECK(error_of(yaml, {"workload.arrival.requests=2"}).find("must be >= clients") != std::string::npos);
}

TEST_CASE("perf_profile: shipped names, files, none, and located errors") {
  // no profile named: the roofline, saying it is uncalibrated
  const auto r = test::run(test::scenario(kFleet + "engine: {perf_profile: none}\n"));
  CHECK(r.report["scenario"]["perf_model"] == "roofline");
  CHECK(r.report["scenario"]["step_time"]["calibrated"] == false);
  CHECK(r.report["scenario"]["step_time"]["note"].get<std::string>().find("uncalibrated") != std::string::npos);
  // a profile file
  const std::string path = write_temp("profile.yaml", profile_yaml(sample_profile()));
  const auto f = test::run(test::scenario(kFleet + "engine: {perf_profile: " + path + "}\n"));
  CHECK(f.report["scenario"]["perf_model"] == "calibrated");
  CHECK(f.report["scenario"]["step_time"]["profile"] == "h100-sxm-80gb/test");
  CHECK(f.report["scenario"]["step_time"]["client_ttft_s"].get<double>() == doctest::Approx(0.004));
  // errors
  CHECK(error_of(kFleet + "engine: {perf_profile: h100-sxm-80gb/nonesuch}\n").find("no shipped performance profile") !=
        std::string::npos);
  CHECK(error_of(kFleet + "engine: {perf_profile: /nonexistent/p.yaml}\n").find("cannot open performance profile") !=
        std::string::npos);
  CHECK(error_of(kFleet + "engine: {perf_model: roofline, perf_profile: " + path + "}\n").find("belongs to") !=
        std::string::npos);
  const std::string a100 =
      "duration_s: 60\ndevice: a100-80gb\nmodel: llama-3.1-8b\nfleet: {replicas: 1}\n"
      "workload: {arrival: {process: poisson, rate_per_s: 2}, prompt_tokens: 512, output_tokens: 64}\n";
  CHECK(error_of(a100 + "engine: {perf_profile: " + path + "}\n").find("not to other devices") != std::string::npos);
  CHECK(error_of(kFleet + "engine: {perf_profile: " + path + ", mfu: 0.4}\n").find("belong to perf_model: roofline") !=
        std::string::npos);
  // a --set of perf_model on a scenario that names a profile: the error says how, and `none`
  // (or `auto`) beside any model names no profile
  const std::string named = kFleet + "engine: {perf_profile: h100-sxm-80gb/llama-3.1-8b/tp1-trtllm}\n";
  CHECK(error_of(named, {"engine.perf_model=roofline"}) ==
        "<test>:6:24: error: engine.perf_profile: perf_profile h100-sxm-80gb/llama-3.1-8b/tp1-trtllm belongs to "
        "perf_model: calibrated (drop perf_model: roofline, or set perf_profile: none for the roofline model)");
  const auto rl = test::run(test::scenario(named, {"engine.perf_model=roofline", "engine.perf_profile=none"}));
  CHECK(rl.report["scenario"]["perf_model"] == "roofline");
  CHECK(rl.report["scenario"]["step_time"]["calibrated"] == false);
  const auto li =
      test::run(test::scenario(kFleet + "engine: {perf_model: linear, perf_profile: auto, step_base_s: 0.01}\n"));
  CHECK(li.report["scenario"]["perf_model"] == "linear");
  // an error inside a profile file is located in it, not at the key that names it
  std::string bad = profile_yaml(sample_profile());
  const size_t at = bad.find("matmul_factor: ");
  REQUIRE(at != std::string::npos);
  bad.replace(at, bad.find('\n', at) - at, "matmul_factor: -5");
  const std::string bad_path = write_temp("bad_profile.yaml", bad);
  const int line = 1 + int(std::count(bad.begin(), bad.begin() + long(at), '\n'));
  CHECK(error_of(kFleet + "engine: {perf_profile: " + bad_path + "}\n")
            .find(bad_path + ":" + std::to_string(line) + ":") == 0);
}

TEST_CASE("the shipped profiles' index says what their parse says") {
  // pools find their profile by the index, without parsing every shipped file
  const auto& keys = builtin_profile_keys();
  REQUIRE(keys.size() == builtin_profiles().size());
  for (size_t i = 0; i < keys.size(); ++i) {
    const PerfProfile& p = builtin_profile(i);
    CAPTURE(p.name);
    CHECK(&p == &builtin_profile(i));  // parsed once
    CHECK(keys[i].name == p.name);
    CHECK(keys[i].device == p.device);
    CHECK(keys[i].model == p.model);
    CHECK(keys[i].tp == p.tp);
    CHECK(keys[i].weight_dtype == p.weight_dtype);
    CHECK(keys[i].engine == p.engine);
    if (!p.device.empty() && !p.model.empty() && p.tp > 0 && !p.weight_dtype.empty())
      CHECK(find_builtin_profile(p.device, p.model, p.tp, p.weight_dtype, profile_engine(p)) == &p);
  }
  CHECK(physics_profile().name == kPhysicsProfile);
  CHECK(find_builtin_profile("h100-sxm-80gb", "llama-3.1-8b", 1, "bf16", "sglang") == nullptr);
}

TEST_CASE("every shipped profile parses, names a catalog device, and quotes its held-out error") {
  REQUIRE(!builtin_profiles().empty());
  for (const auto& p : builtin_profiles()) {
    CAPTURE(p.name);
    CHECK(p.held_out.points > 0);
    CHECK(std::isfinite(p.held_out.median[kMeanTpot]));
    CHECK(p.c.weight_factor > 0);
  }
  // the built-in default scenario runs calibrated, and says how well its profile did on held-out runs
  const auto r = test::run(load_default_scenario({"duration_s=120", "warmup_s=0"}));
  CHECK(r.report["scenario"]["perf_model"] == "calibrated");
  CHECK(r.report["scenario"]["step_time"]["held_out"]["points"].get<int>() > 0);
}

TEST_CASE("auto applies a shipped profile only to its own weight dtype, tp and pp, a named one says where it applies") {
  const std::string tp4 =
      "duration_s: 60\ndevice: h100-sxm-80gb\nmodel: llama-3.1-70b\nengine: {tensor_parallel: 4}\n"
      "fleet: {replicas: 1}\n"
      "workload: {arrival: {process: poisson, rate_per_s: 1}, prompt_tokens: 512, output_tokens: 64}\n";
  // the shipped H100 Llama 3.1 70B tp4 profile was fitted on FP8 runs
  const PerfProfile* fp8 = find_builtin_profile("h100-sxm-80gb", "llama-3.1-70b", 4, "fp8");
  REQUIRE(fp8 != nullptr);
  CHECK(fp8->weight_dtype == "fp8");
  CHECK(find_builtin_profile("h100-sxm-80gb", "llama-3.1-70b", 4, "bf16") == nullptr);
  const auto f = test::run(test::scenario(tp4 + "weight_dtype: fp8\n"));
  CHECK(f.report["scenario"]["step_time"]["profile"] == "h100-sxm-80gb/llama-3.1-70b/tp4");
  CHECK(f.report["scenario"]["step_time"]["error_applies"] == true);
  CHECK(f.report["scenario"]["step_time"]["fitted_weight_dtype"] == "fp8");
  // bf16 weights: no FP8 profile is taken for them; the physics model runs, quoting its own error
  const auto b = test::run(test::scenario(tp4 + "weight_dtype: bf16\n"));
  CHECK(b.report["scenario"]["perf_model"] == "physics");
  CHECK(b.report["scenario"]["step_time"]["profile"] == "physics");
  CHECK(b.report["scenario"]["step_time"].contains("cross_validated"));
  // named on bf16 weights, the profile runs but its measured error is not quoted as this pool's
  const auto n =
      test::run(test::scenario(tp4 + "weight_dtype: bf16\n", {"engine.perf_profile=h100-sxm-80gb/llama-3.1-70b/tp4"}));
  CHECK(n.report["scenario"]["perf_model"] == "calibrated");
  CHECK(n.report["scenario"]["step_time"]["error_applies"] == false);
  CHECK(n.report["scenario"]["step_time"]["note"] ==
        "profile fitted on fp8 weights; this pool differs, so its measured error does not apply here (uncalibrated "
        "for this configuration)");
  CHECK(format_run_table(n.report).find("steps     profile h100-sxm-80gb/llama-3.1-70b/tp4: profile fitted on fp8 "
                                        "weights;") != std::string::npos);
  // and on another tp and dtype, both are named
  std::string why;
  CHECK_FALSE(profile_applies(*fp8, "llama-3.1-70b", 8, 1, "bf16", why));
  CHECK(why == "tp 4, fp8 weights");
  CHECK(profile_applies(*fp8, "llama-3.1-70b", 4, 1, "fp8", why));
  CHECK(why.empty());
  // no profile was fitted on expert or data parallelism: named on such a pool, its error is not this pool's
  const std::string moe =
      "duration_s: 60\ndevice: h200-141gb\nmodel: qwen3-235b-a22b\nweight_dtype: fp8\n"
      "engine: {tensor_parallel: 4, perf_profile: h200-141gb/qwen3-235b-a22b/tp4, async_scheduling: false}\n"
      "fleet: {replicas: 2}\n"
      "workload: {arrival: {process: poisson, rate_per_s: 1}, prompt_tokens: 512, output_tokens: 64}\n";
  CHECK(test::run(test::scenario(moe)).report["scenario"]["step_time"]["error_applies"] == true);
  for (const char* set : {"engine.data_parallel=2", "engine.expert_parallel=4"}) {
    CAPTURE(set);
    const Json st = test::run(test::scenario(moe, {set})).report["scenario"]["step_time"];
    CHECK(st["error_applies"] == false);
    CHECK(st["note"].get<std::string>().find(std::string(set).find("data") != std::string::npos ? "dp 1" : "ep 1") !=
          std::string::npos);
  }
  // every shipped per-model profile records the weight dtype of its runs
  for (const auto& p : builtin_profiles())
    if (!p.model.empty()) CHECK_MESSAGE(!p.weight_dtype.empty(), p.name);
}
