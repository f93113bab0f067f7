// The physics step model (docs/model.md, "Physics step time"): its terms against hand-computed
// values, when a pool takes it, the API-server stage a client sees, the profile format version,
// and `fit --global`'s leave-one-group-out.
#include <doctest/doctest.h>

#include <cmath>
#include <string>

#include "helpers.hpp"
#include "libsim/calibrate/fit.hpp"
#include "libsim/report/html.hpp"

using namespace fleetsim;
using test::error_of;
using test::write_temp;

namespace {

std::string kLlama8bOn(const std::string& device) { return test::llama8b_pool(device); }

}  // namespace

TEST_CASE("physics terms: per-layer cost, the GEMM ramp and the experts' factor, by hand") {
  PerfCoefficients c;
  c.step_s = 0.001;
  c.matmul_factor = 2.0;
  c.weight_factor = 1.5;
  c.layer_s = 1e-5;
  c.gemm_ramp_tokens = 40;
  c.moe_factor = 3.0;
  c.client_s_per_input_token = 2e-6;
  StepFacts f;
  f.peak_flops_per_s = 1e15;
  f.bf16_flops_per_s = 5e14;
  f.peak_bytes_per_s = 4e12;
  f.layers = 32;
  f.dense_flops_per_token = 1e10;
  // dense: the ramp is 40 tokens' FLOPs at the peak efficiency, once a step
  PerfParams p{};
  apply_profile(c, f, p);
  CHECK(p.overhead_s == doctest::Approx(0.001 + 32 * 1e-5 + 2.0 / 1e15 * 40 * 1e10));
  CHECK(p.matmul_s_per_flop == doctest::Approx(2.0 / 1e15));
  CHECK(p.weight_s_per_byte == doctest::Approx(1.5 / 4e12));
  CHECK(p.client_s_per_input_token == 2e-6);
  // a token's time at efficiency e(m) = m / (m + 40) / factor: m tokens take (m + 40) tokens' time
  const double m = 200;
  CHECK(p.overhead_s - 0.001 - 32e-5 + p.matmul_s_per_flop * m * 1e10 ==
        doctest::Approx(2.0 / 1e15 * 1e10 * m / (m / (m + 40))));
  // MoE: the routed experts' FLOPs at 3x the dense time; every expert its own GEMM on the ramp
  f.expert_flops_per_token = 3e9;
  f.all_expert_flops = 2.4e10;
  apply_profile(c, f, p);
  CHECK(p.matmul_s_per_flop * (1e10 + 3e9) == doctest::Approx(2.0 / 1e15 * (1e10 + 3.0 * 3e9)));
  CHECK(p.overhead_s == doctest::Approx(0.001 + 32e-5 + 2.0 / 1e15 * 40 * (1e10 + 3.0 * 2.4e10)));
  // neutral physics terms give the calibrated model unchanged
  PerfCoefficients plain = c;
  plain.layer_s = plain.gemm_ramp_tokens = 0;
  plain.moe_factor = 1;
  apply_profile(plain, f, p);
  CHECK(p.overhead_s == doctest::Approx(0.001));
  CHECK(p.matmul_s_per_flop == doctest::Approx(2.0 / 1e15));
  // the executor's cost is paid per step by a replica of several devices only
  plain.tp_step_s = 1.5e-3;
  apply_profile(plain, f, p);
  CHECK(p.overhead_s == doctest::Approx(0.001));
  f.ranks = 4;
  apply_profile(plain, f, p);
  CHECK(p.overhead_s == doctest::Approx(0.001 + 1.5e-3));
}

TEST_CASE("a pool with no exact-match profile takes the physics model and quotes its cross-validated error") {
  // an L4 has no shipped profile: physics, not the roofline
  const auto r = test::run(test::scenario(kLlama8bOn("l4-24gb")));
  const auto& st = r.report["scenario"]["step_time"];
  CHECK(r.report["scenario"]["perf_model"] == "physics");
  CHECK(st["model"] == "physics");
  CHECK(st["calibrated"] == true);
  CHECK(st["latency_at"] == "client");
  CHECK(st["held_out"]["points"].get<int>() > 0);
  CHECK(st["cross_validated"]["points"].get<int>() > 0);
  CHECK(st.contains("client_s_per_input_token"));
  CHECK(format_run_table(r.report).find("steps     physics model (median error on") != std::string::npos);
  // the note quotes the figures, so the HTML report, which prints the note, quotes them too
  CHECK(st["note"].get<std::string>().find("median error on runs the fit never saw: mean_ttft ") != std::string::npos);
  CHECK(html_report(r.report).find("with each device left out of the fit: mean_ttft ") != std::string::npos);
  // the shipped physics coefficients say what they were fitted on and how they did
  const PerfProfile& ph = physics_profile();
  CHECK(ph.device.empty());
  CHECK(ph.fit.points > 0);
  CHECK(std::isfinite(ph.cross_validated.median[kMeanE2e]));
  // an exact-match profile still wins; none is the roofline; auto is the default's choice
  const auto h = test::run(test::scenario(kLlama8bOn("h100-sxm-80gb"),
                                          {"model=llama-3.1-70b", "weight_dtype=fp8", "engine.tensor_parallel=4"}));
  CHECK(h.report["scenario"]["perf_model"] == "calibrated");
  CHECK(h.report["scenario"]["step_time"]["profile"] == "h100-sxm-80gb/llama-3.1-70b/tp4");
  const auto n = test::run(test::scenario(kLlama8bOn("l4-24gb"), {"engine.perf_profile=none"}));
  CHECK(n.report["scenario"]["perf_model"] == "roofline");
  const auto a = test::run(test::scenario(kLlama8bOn("l4-24gb"), {"engine.perf_profile=auto"}));
  CHECK(a.report["scenario"]["perf_model"] == "physics");
  const auto e = test::run(test::scenario(kLlama8bOn("l4-24gb"), {"engine.perf_model=physics"}));
  CHECK(e.report["scenario"]["perf_model"] == "physics");
  // roofline knobs say which model they belong to
  CHECK(error_of(kLlama8bOn("l4-24gb"), {"engine.mfu=0.4", "engine.perf_model=physics"})
            .find("belong to perf_model: roofline") != std::string::npos);
  const auto m = test::run(test::scenario(kLlama8bOn("l4-24gb"), {"engine.mfu=0.4"}));
  CHECK(m.report["scenario"]["perf_model"] == "roofline");
}

TEST_CASE("physics on a CPU instance is a located error saying what to use, the default there stays the roofline") {
  const std::string cpu =
      "duration_s: 60\ndevice: c7i-8xlarge-amx\nmodel: llama-3.1-8b\nfleet: {replicas: 1}\n"
      "workload: {arrival: {process: poisson, rate_per_s: 0.1}, prompt_tokens: 64, output_tokens: 16}\n";
  const std::string e = error_of(cpu + "engine: {perf_model: physics}\n");
  CHECK(e.find("<test>:6:") == 0);
  CHECK(e.find("fitted on GPUs") != std::string::npos);
  CHECK(e.find("perf_model: roofline") != std::string::npos);
  const auto r = test::run(test::scenario(cpu));
  CHECK(r.report["scenario"]["perf_model"] == "roofline");
}

TEST_CASE("the API server's per-token costs shift TTFT and e2e by exactly their amount, engine-side drops them") {
  const std::string base = kLlama8bOn("h100-sxm-80gb") + "engine: {perf_profile: none}\n";
  const std::vector<std::string> sets = {"duration_s=600", "warmup_s=60"};
  const auto a = test::run(test::scenario(base, sets));
  auto with = sets;
  with.push_back("engine.client_s_per_input_token=1e-4");
  with.push_back("engine.client_s_per_output_token=2e-4");
  with.push_back("engine.client_ttft_s=0.01");
  const auto b = test::run(test::scenario(base, with));
  REQUIRE(a.all->completed == b.all->completed);
  const double n = double(a.all->completed);
  // 512 prompt tokens: 51.2 ms in TTFT, plus the fixed 10 ms; 64 output tokens: 12.8 ms more in e2e
  CHECK(b.all->ttft.sum / n - a.all->ttft.sum / n == doctest::Approx(0.01 + 512 * 1e-4).epsilon(1e-9));
  CHECK(b.all->e2e.sum / n - a.all->e2e.sum / n == doctest::Approx(0.01 + 512 * 1e-4 + 64 * 2e-4).epsilon(1e-9));
  // TPOT as the client computes it, (e2e - ttft) / (output - 1)
  CHECK(b.all->tpot.sum / n - a.all->tpot.sum / n == doctest::Approx(64 * 2e-4 / 63).epsilon(1e-9));
  auto engine = with;
  engine.push_back("engine.latency_at=engine");
  const auto c = test::run(test::scenario(base, engine));
  CHECK(c.all->ttft.sum == doctest::Approx(a.all->ttft.sum).epsilon(1e-12));
  CHECK(c.all->e2e.sum == doctest::Approx(a.all->e2e.sum).epsilon(1e-12));
  CHECK(c.report["scenario"]["step_time"]["latency_at"] == "engine");
  CHECK(error_of(base, {"engine.latency_at=server"}).find("client") != std::string::npos);
}

TEST_CASE("profile format: a newer format is a located error naming what to do, physics terms round-trip") {
  PerfProfile p;
  p.name = "x";
  p.device = "";
  p.c.step_s = 0.002;
  p.c.weight_factor = 1.2;
  p.c.layer_s = 2e-5;
  p.c.gemm_ramp_tokens = 48;
  p.c.moe_factor = 2.5;
  p.c.client_s_per_input_token = 1e-6;
  p.c.tp_step_s = 1.5e-3;
  p.c.async_step_s = 8e-4;
  p.c.async_per_seq_s = 1.2e-5;
  p.cross_validated.points = 10;
  p.cross_validated.median[kMeanE2e] = 0.08;
  const std::string y = profile_yaml(p);
  CHECK(y.find("format: 5\n") != std::string::npos);
  CHECK(y.find("composition: overlap\n") != std::string::npos);
  CHECK(y.find("device: any\n") != std::string::npos);
  const PerfProfile q = parse_profile(y, "p.yaml");
  CHECK(q.device.empty());
  CHECK(q.c.layer_s == doctest::Approx(2e-5));
  CHECK(q.c.gemm_ramp_tokens == doctest::Approx(48));
  CHECK(q.c.moe_factor == doctest::Approx(2.5));
  CHECK(q.c.client_s_per_input_token == doctest::Approx(1e-6));
  CHECK(q.c.tp_step_s == doctest::Approx(1.5e-3));
  CHECK(q.c.async_step_s == doctest::Approx(8e-4));
  CHECK(q.c.async_per_seq_s == doctest::Approx(1.2e-5));
  CHECK(q.cross_validated.median[kMeanE2e] == doctest::Approx(0.08));
  CHECK(q.c.kernel_overlap);
  // a fit of the sum (per-step timings) says so, and reads back as a sum
  p.c.kernel_overlap = false;
  CHECK_FALSE(parse_profile(profile_yaml(p), "p.yaml").c.kernel_overlap);
  // format 4 and earlier were fitted as sums: they stay sums, and cannot claim otherwise
  std::string v4 = y;
  v4.replace(v4.find("format: 5"), 9, "format: 4");
  std::string v4_sum = v4;
  v4_sum.erase(v4_sum.find("composition: overlap\n"), 21);
  CHECK_FALSE(parse_profile(v4_sum, "p.yaml").c.kernel_overlap);
  auto parse_error = [](const std::string& text) {
    try {
      parse_profile(text, "p.yaml");
    } catch (const InputError& e) {
      return e.one_line();
    }
    return std::string("(no error)");
  };
  CHECK(parse_error(v4).find("p.yaml:7:14: error: composition: needs format 5") == 0);
  // a composition the format does not have: located, naming the choices
  std::string odd = y;
  odd.replace(odd.find("composition: overlap"), 20, "composition: maximum");
  CHECK(parse_error(odd).find(
            "p.yaml:7:14: error: composition: unknown value 'maximum' (expected one of: overlap, sum)") == 0);
  // a newer format: located at its line, saying what to do
  std::string newer = y;
  newer.replace(newer.find("format: 5"), 9, "format: 6");
  CHECK(parse_error(newer).find("p.yaml:2:") == 0);
  CHECK(parse_error(newer).find("newer fleetsim") != std::string::npos);
  // a format-1 file (no format key, no physics terms) reads with neutral physics terms
  const PerfProfile old = parse_profile(
      "profile: old\ndevice: h100-sxm-80gb\ncoefficients: {step_s: 0.002, weight_factor: 1.3}\n", "old.yaml");
  CHECK(old.c.moe_factor == 1.0);
  CHECK(old.c.layer_s == 0.0);
  CHECK_FALSE(old.c.kernel_overlap);
}

TEST_CASE("leave one group out: each group predicted by a fit on the others only") {
  // points made by the simulator with known coefficients on two devices: a fit without one device
  // recovers the other's predictions, since the coefficients are the same on both
  PerfCoefficients truth = prior_coefficients(true);
  truth.weight_factor = 1.4;
  truth.matmul_factor = 1.7;
  const std::vector<BenchPoint> pts = test::synthetic_points({"H100-SXM", "A100-80GB"}, {512}, 64, {1, 4, 16}, truth);
  std::vector<const BenchPoint*> ptr;
  for (const auto& p : pts) ptr.push_back(&p);
  FitOptions opt;
  opt.threads = 2;
  opt.global = true;
  opt.max_iterations = 8;
  const auto groups = leave_one_group_out(
      ptr, [](const BenchPoint& p) { return p.device; }, opt);
  REQUIRE(groups.size() == 2);
  for (const auto& g : groups) {
    CAPTURE(g.group);
    CHECK(g.fit_points == 3);
    REQUIRE(g.held_out.size() == 3);
    for (const auto& r : g.held_out) CHECK(r.point->device == g.group);
    CHECK(summarize(g.held_out).median[kMeanTpot] < 0.1);
  }
  // with fewer than kMinFitPoints others, a group is left out of the table
  std::vector<const BenchPoint*> few(ptr.begin(), ptr.begin() + 4);
  const auto g2 = leave_one_group_out(
      few, [](const BenchPoint& p) { return p.device; }, opt);
  REQUIRE(g2.size() == 1);
  CHECK(g2[0].group == catalog_device_for("A100-80GB"));
}
