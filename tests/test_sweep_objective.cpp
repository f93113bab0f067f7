// What "cheapest" means in a sweep: the whole spend per unit of work, not the decode share, among
// configurations whose 95% confidence bound meets the SLO, as `fleetsim check` judges a budget.
#include <doctest/doctest.h>

#include <cmath>
#include <string>

#include "helpers.hpp"
#include "libsim/sweep/sweep.hpp"

using namespace fleetsim;

namespace {

Json sweep(const std::string& yaml) {
  const ScenarioSource src = ScenarioSource::from_text(yaml, "<sweep>", FLEETSIM_SOURCE_DIR);
  SweepOptions o;
  o.backend = Backend::cpu;
  o.threads = 2;
  return run_sweep(src, parse_sweep(src), o);
}

double metric(const Json& row, const char* section, const char* key) { return row["metrics"][section][key]; }

// Two devices: one with four times the FLOP/s at $3/h, one with four times the bandwidth at $4/h.
// Long prompts and short answers: prefill, compute-bound, is most of the spend.
const std::string kTwoDevices =
    "name: obj\nduration_s: 600\nwarmup_s: 60\nseed: 5\ndevice: flops-gpu\nmodel: llama-3.1-8b\n"
    "engine: {perf_profile: none}\nfleet: {replicas: 1}\n"
    "catalog:\n  devices:\n"
    "    flops-gpu: {memory_gib: 80, bandwidth_gb_s: 1000, bf16_tflops: 2000, usd_per_hour: 3}\n"
    "    bw-gpu: {memory_gib: 80, bandwidth_gb_s: 4000, bf16_tflops: 500, usd_per_hour: 4}\n"
    "workload:\n  arrival: {process: poisson, rate_per_s: 2}\n  prompt_tokens: 6000\n  output_tokens: 40\n";

}  // namespace

TEST_CASE("cheapest is the lowest whole spend per token, even where the decode share ranks the other first") {
  const Json d = sweep(kTwoDevices + "sweep:\n  parameters:\n    device: [flops-gpu, bw-gpu]\n");
  CHECK(d["sweep"]["objective"] == "cost.per_million_tokens_usd");
  const Json& flops = d["rows"][0];
  const Json& bw = d["rows"][1];
  REQUIRE(flops["feasible"] == true);
  REQUIRE(bw["feasible"] == true);
  // the case is one where the two rankings disagree
  const bool decode_says_bw =
      metric(bw, "cost", "per_million_output_tokens_usd") < metric(flops, "cost", "per_million_output_tokens_usd");
  const bool total_says_flops =
      metric(flops, "cost", "per_million_tokens_usd") < metric(bw, "cost", "per_million_tokens_usd");
  REQUIRE(decode_says_bw);
  REQUIRE(total_says_flops);
  // and the sweep takes the one that costs less in all
  CHECK(d["summary"]["cheapest"]["index"] == 0);
  // the whole spend per token is total dollars over every token in and out
  const double tokens =
      metric(flops, "throughput", "input_tokens_per_s") + metric(flops, "throughput", "output_tokens_per_s");
  CHECK(metric(flops, "cost", "per_million_tokens_usd") ==
        doctest::Approx(metric(flops, "cost", "total_usd") * 1e6 / (tokens * metric(flops, "simulation", "window_s")))
            .epsilon(1e-6));
  CHECK(format_sweep_table(d).find(
            "cheapest by cost.per_million_tokens_usd (all the spend over every token in and out)") !=
        std::string::npos);
}

TEST_CASE("an SLO is met by the 95% bound over replications unless feasible_on: mean, the violation says both") {
  const std::string base =
      "name: b\nduration_s: 300\nwarmup_s: 30\nseed: 9\ndevice: h100-sxm-80gb\nmodel: llama-3.1-8b\n"
      "engine: {perf_profile: none}\nfleet: {replicas: 1}\n"
      "workload:\n  arrival: {process: poisson, rate_per_s: 6}\n"
      "  prompt_tokens: {dist: lognormal, median: 800, p99: 4000}\n"
      "  output_tokens: {dist: lognormal, median: 120, p99: 600}\n";
  const Json probe = sweep(base + "sweep:\n  replications: 6\n  parameters:\n    fleet.replicas: [1]\n");
  const double mean = probe["rows"][0]["metrics"]["latency_s"]["ttft"]["p99"];
  const double hw = probe["rows"][0]["ci95"]["latency_s.ttft.p99"];
  REQUIRE(hw > 0);
  // a limit between the mean and the upper bound: the mean meets it, the bound does not
  const std::string limit = std::to_string(mean + hw / 2);
  const std::string slo = "  slo: {latency_s.ttft.p99: {max: " + limit + "}}\n";
  const Json on_bound = sweep(base + "sweep:\n  replications: 6\n  parameters:\n    fleet.replicas: [1]\n" + slo);
  CHECK(on_bound["sweep"]["feasible_on"] == "bound");
  CHECK(on_bound["rows"][0]["feasible"] == false);
  const std::string v = on_bound["rows"][0]["violations"][0];
  CHECK(v.find("latency_s.ttft.p99 95% bound") == 0);
  CHECK(v.find("(mean ") != std::string::npos);
  const Json on_mean =
      sweep(base + "sweep:\n  replications: 6\n  feasible_on: mean\n  parameters:\n    fleet.replicas: [1]\n" + slo);
  CHECK(on_mean["sweep"]["feasible_on"] == "mean");
  CHECK(on_mean["rows"][0]["feasible"] == true);
  CHECK(format_sweep_table(on_bound).find("(met by the 95% bound over replications)") != std::string::npos);
}
