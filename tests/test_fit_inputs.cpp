// `fleetsim fit` on bad input: every malformed or unfittable measurement is a one-line error that
// names where it is, and no profile is written that a run would reject.
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
#include "helpers.hpp"
#include "libsim/base/json.hpp"
#include "libsim/calibrate/fit.hpp"
#include "libsim/input/profile.hpp"

using namespace fleetsim;
using test::write_temp;

namespace {

const char* kHeader = "model,device,tp,isl,osl,concurrency,mean_ttft_ms,mean_tpot_ms\n";
const char* kRow = "meta-llama/Llama-3.1-8B-Instruct,H100-SXM,1,";

// A benchmark CSV of three good rows, the first one's TTFT and TPOT replaced.
std::string bench_csv(const std::string& name, const std::string& ttft, const std::string& tpot = "7.5") {
  return write_temp(name, std::string(kHeader) + kRow + "512,64,1," + ttft + "," + tpot + "\n" + kRow +
                              "512,64,4,40,8.0\n" + kRow + "2048,64,2,90,8.5\n");
}

std::string vllm_json(const std::string& name, const std::string& ttft, int concurrency = 1) {
  return write_temp(name, R"({"model_id": "meta-llama/Llama-3.1-8B-Instruct", "max_concurrency": )" +
                              std::to_string(concurrency) +
                              R"(, "num_prompts": 10, "completed": 10, "total_input_tokens": 5120,
      "total_output_tokens": 640, "mean_ttft_ms": )" +
                              ttft + R"(, "mean_tpot_ms": 8.0})");
}

std::string read_error(const std::string& path, const BenchPoint& d = {}) {
  return test::input_error([&] { read_benchmarks(path, d); });
}

std::string steps_error(const std::string& path) {
  std::string device;
  return test::input_error([&] { read_step_samples(path, device); });
}

std::string fit_error(cli::FitArgs a, std::string* emitted = nullptr) {
  a.threads = 2;
  return test::input_error([&] {
    cli::run_fit(a, [&](const std::string& s) {
      if (emitted) *emitted += s;
    });
  });
}

std::string steps_csv(const std::string& name, int rows) {
  std::string s = "model,device,prefill_tokens,decode_seqs,decode_context_tokens,step_ms\n";
  for (int i = 1; i <= rows; ++i)
    s += "meta-llama/Llama-3.1-8B,H100-SXM," + std::to_string(100 * i) + "," + std::to_string(i) + "," +
         std::to_string(500 * i) + "," + std::to_string(5 + i) + "\n";
  return write_temp(name, s);
}

const std::string kTtftExpected = "expected a latency of at least 0.001 ms and at most 3600000 ms (an hour)";

}  // namespace

TEST_CASE("fit inputs: a latency that is not a number > 0 is a located error, in CSV and JSON alike") {
  for (const auto& [value, shown] :
       {std::pair{"abc", "abc"}, {"-3", "-3"}, {"inf", "inf"}, {"nan", "nan"}, {"0", "0"}}) {
    const std::string csv = bench_csv("lat.csv", value);
    CHECK(read_error(csv) == csv + ":2: error: column mean_ttft_ms: " + kTtftExpected + ", not '" + shown + "'");
  }
  BenchPoint d;
  d.device_id = "h100";
  for (const auto& [value, shown] : {std::pair{"\"abc\"", "\"abc\""}, {"-3", "-3"}, {"0", "0"}, {"null", "null"}}) {
    const std::string js = vllm_json("lat.json", value);
    CHECK(read_error(js, d) == js + ":2:51: error: mean_ttft_ms: " + kTtftExpected + ", not " + shown);
  }
  const std::string gl = write_temp("lat_guidellm.json", R"({"benchmarks": [{"args": {"strategy": {"streams": 8}},
      "metrics": {"request_latency": {"successful": {"mean": 0}}}}]})");
  CHECK(
      read_error(gl, d) ==
      gl +
          ":2:62: error: benchmarks[0].metrics.request_latency.successful.mean: expected a latency of at least 1e-06 s "
          "and at most 3600 s (an hour), not 0");
  // absent stays allowed: an empty CSV field, a JSON key left out
  const auto csv = read_benchmarks(write_temp("absent.csv", std::string(kHeader) + kRow + "512,64,1,,7.5\n"), d);
  REQUIRE(csv.size() == 1);
  CHECK(std::isnan(csv[0].measured[kMeanTtft]));
  CHECK(csv[0].measured[kMeanTpot] == doctest::Approx(0.0075));
  const auto js = read_benchmarks(vllm_json("absent.json", "25"), d);
  REQUIRE(js.size() == 1);
  CHECK(std::isnan(js[0].measured[kMeanE2e]));
  // a TPOT of 0 is vllm bench serve's figure for one-token outputs: no measurement, no error
  const auto one = read_benchmarks(bench_csv("one_token.csv", "25", "0"), d);
  REQUIRE(one.size() == 3);
  CHECK(std::isnan(one[0].measured[kMeanTpot]));
  CHECK(one[0].measured[kMeanTtft] == doctest::Approx(0.025));
  CHECK(read_error(bench_csv("neg_tpot.csv", "25", "-1")) ==
        test::temp_path("neg_tpot.csv") +
            ":2: error: column mean_tpot_ms: expected a latency of at least 0.001 ms and at most 60000 ms (a "
            "minute per token), not '-1'");
}

TEST_CASE("fit inputs: a latency beyond an hour, or a minute per token or step, is an error at its row") {
  const std::string huge = bench_csv("huge.csv", "1e300");
  CHECK(read_error(huge) == huge + ":2: error: column mean_ttft_ms: " + kTtftExpected + ", not '1e300'");
  const std::string tiny = bench_csv("tiny.csv", "1e-300");
  CHECK(read_error(tiny) == tiny + ":2: error: column mean_ttft_ms: " + kTtftExpected + ", not '1e-300'");
  const std::string slow = bench_csv("slow.csv", "40", "60001");
  CHECK(read_error(slow) ==
        slow +
            ":2: error: column mean_tpot_ms: expected a latency of at least 0.001 ms and at most 60000 ms (a "
            "minute per token), not '60001'");
  // the limits themselves are measurements
  const auto p = read_benchmarks(bench_csv("limit.csv", "3600000", "60000"), {});
  CHECK(p[0].measured[kMeanTtft] == 3600.0);
  CHECK(p[0].measured[kMeanTpot] == 60.0);
  const std::string st = write_temp("slow_steps.csv",
                                    "model,device,prefill_tokens,decode_seqs,decode_context_tokens,"
                                    "step_ms\nmeta-llama/Llama-3.1-8B,H100-SXM,0,4,100,60001\n");
  CHECK(steps_error(st) == st + ":2: error: column step_ms: expected a step time > 0 and at most 60000 ms (a minute), "
                                "not '60001'");
  // a step's tokens within what one step can hold, and some work in it
  const std::string head = "model,device,prefill_tokens,decode_seqs,decode_context_tokens,step_ms\n";
  const std::string big = write_temp("big_steps.csv", head + "meta-llama/Llama-3.1-8B,H100-SXM,1e30,0,0,10\n");
  CHECK(steps_error(big) ==
        big + ":2: error: column prefill_tokens: expected a whole number in [0, 1e+07], not '1e30'");
  const std::string idle = write_temp("idle_steps.csv", head + "meta-llama/Llama-3.1-8B,H100-SXM,0,0,0,10\n");
  CHECK(steps_error(idle) ==
        idle + ":2: error: a step that prefills no token and decodes no sequence has nothing to time");
  // counts are whole, the required ones given, and each sequence has a token of its own at least
  auto one = [&](const std::string& name, const std::string& row, const std::string& h = "") {
    const std::string f = write_temp(name, (h.empty() ? head : h) + "meta-llama/Llama-3.1-8B,H100-SXM," + row + "\n");
    return steps_error(f).substr(f.size());
  };
  CHECK(one("frac.csv", "0,8.5,1000,10") ==
        ":2: error: column decode_seqs: expected a whole number in [0, 100000], not '8.5'");
  CHECK(one("empty.csv", "0,,1000,10") == ":2: error: column decode_seqs: a count is needed, the cell is empty");
  CHECK(one("no_ctx.csv", "0,8,0,10") ==
        ":2: error: 8 sequences decode over 0 context tokens: each reads its own token at least");
  CHECK(one("few_tokens.csv", "10,100,0,0,10",
            "model,device,prefill_tokens,prefill_seqs,decode_seqs,decode_context_tokens,step_ms\n") ==
        ":2: error: 100 sequences prefill 10 tokens: each prefills one at least");
}

TEST_CASE("fit inputs: JSON of the wrong shape or type is an error naming the field, never a parser's exception") {
  auto err = [&](const char* name, const char* text) { return read_error(write_temp(name, text)); };
  const std::string completed = err("j1.json", R"({"mean_ttft_ms":10,"completed":"5","total_input_tokens":100})");
  CHECK(completed.find("completed: expected") != std::string::npos);
  CHECK(completed.find("json.exception") == std::string::npos);
  const std::string lens =
      err("j2.json", R"({"mean_ttft_ms":10,"num_prompts":5,"input_lens":["a"],"output_lens":[3]})");
  CHECK(lens.find("input_lens[]: expected a whole number") != std::string::npos);
  CHECK(err("j3.json", R"({"benchmarks":[1,2]})").find("benchmarks[0]: expected an object, not 1") !=
        std::string::npos);
  CHECK(err("j4.json", R"({"benchmarks":[{"args":{"strategy":"concurrent"}}]})")
            .find("benchmarks[0].args.strategy: expected an object") != std::string::npos);
  CHECK(err("j5.json", "[1,2]").find("not a benchmark result") != std::string::npos);
  // a field of another type is an error, not a field left out
  CHECK(err("j9.json", R"({"mean_ttft_ms":10,"num_prompts":"many","completed":5,"total_input_tokens":100})")
            .find("num_prompts: expected a whole number in [1, 1000000], not \"many\"") != std::string::npos);
  CHECK(err("j10.json", R"({"mean_ttft_ms":10,"model_id":7,"num_prompts":5})")
            .find("model_id: expected the model's name (a string), not 7") != std::string::npos);
  CHECK(err("j11.json", R"({"mean_ttft_ms":10,"num_prompts":2,"input_lens":"3,4","output_lens":[3,4]})")
            .find("input_lens: expected a list of token counts, one per request, not \"3,4\"") != std::string::npos);
  CHECK(err("j12.json", R"({"mean_ttft_ms":10,"num_prompts":2,"output_lens":[3,4]})")
            .find("output_lens without input_lens: expected both") != std::string::npos);
  // a concurrency written as a string is an error, not a run without a cap (null is one)
  CHECK(err("j6.json", R"({"mean_ttft_ms":10,"num_prompts":5,"max_concurrency":"4","total_input_tokens":100,
        "total_output_tokens":50,"completed":5})")
            .find("max_concurrency: expected a whole number in [1, 1000000], not \"4\"") != std::string::npos);
  BenchPoint d;
  d.device_id = "h100-sxm-80gb";
  d.model_id = "llama-3.1-8b";
  const auto open = read_benchmarks(write_temp("j7.json", R"({"mean_ttft_ms":10,"num_prompts":5,"request_rate":2,
        "max_concurrency":null,"total_input_tokens":100,"total_output_tokens":50,"completed":5})"),
                                    d);
  REQUIRE(open.size() == 1);
  CHECK(open[0].concurrency == 0);
  CHECK(open[0].rate_per_s == 2);
  // GuideLLM's synchronous strategy sends one request at a time: a closed loop of one client
  const auto sync = read_benchmarks(write_temp("j8.json", R"({"benchmarks": [{"args": {"strategy": {"type_":
        "synchronous"}}, "metrics": {"time_to_first_token_ms": {"successful": {"mean": 20.0}},
        "prompt_token_count": {"successful": {"mean": 512}}, "output_token_count": {"successful": {"mean": 64}}}}]})"),
                                    d);
  REQUIRE(sync.size() == 1);
  CHECK(sync[0].concurrency == 1);
  CHECK(sync[0].skip.empty());
}

TEST_CASE("fit inputs: a bad value in a JSON result is located at its line and column") {
  auto where = [&](const char* name, const char* text) {
    try {
      read_benchmarks(write_temp(name, text), {});
    } catch (const InputError& e) {
      return std::to_string(e.where().line) + ":" + std::to_string(e.where().column);
    }
    return std::string("(no error)");
  };
  // vllm bench serve: a key of the top object; an element of a per-request list
  CHECK(where("l1.json", "{\n  \"completed\": 10,\n  \"mean_ttft_ms\": \"slow\"\n}") == "3:19");
  CHECK(where("l2.json",
              "{\"mean_ttft_ms\": 10, \"num_prompts\": 3,\n \"input_lens\": [5, 6, -1],\n"
              " \"output_lens\": [1, 2, 3]}") == "2:23");
  // GuideLLM: a nested metric of the second benchmark, past strings holding brackets and quotes
  CHECK(where("l3.json",
              "{\"benchmarks\": [\n {\"args\": {\"x\": \"]}\\\"\"}},\n"
              " {\"metrics\": {\"time_to_first_token_ms\": {\"successful\": {\"mean\": -4}}}}]}") == "3:65");
}

TEST_CASE("fit inputs: coefficients outside a profile's ranges are an error, and no profile is written") {
  PerfCoefficients c = prior_coefficients();
  c.client_ttft_s = 2762;
  try {
    check_fitted(c, "a.csv");
    FAIL("no error");
  } catch (const InputError& e) {
    CHECK(e.one_line() ==
          "fleetsim: error: the measurements in a.csv cannot be fitted: the fitted client_ttft_s is "
          "2762, outside [0, 60], the range a profile allows");
  }
  c = prior_coefficients();
  c.matmul_factor = 1.2e4;
  CHECK_THROWS_WITH(check_fitted(c, "a.csv"),
                    "the measurements in a.csv cannot be fitted: the fitted matmul_factor is "
                    "12000, outside [0, 10000], the range a profile allows");
  c = prior_coefficients();
  c.step_s = c.weight_factor = c.matmul_factor = 0;
  CHECK_THROWS_WITH(check_fitted(c, "a.csv"),
                    "the measurements in a.csv cannot be fitted: step_s, weight_factor and "
                    "matmul_factor all came out 0 (a profile needs one above 0)");
  CHECK_NOTHROW(check_fitted(prior_coefficients(), "a.csv"));

  // every TTFT 50 minutes: only a client time far beyond a minute would fit them
  const std::string csv = write_temp("hour.csv", std::string(kHeader) + kRow + "512,64,1,3e6,8\n" + kRow +
                                                     "512,64,4,3e6,8\n" + kRow + "2048,64,2,3e6,8\n");
  cli::FitArgs a;
  a.inputs = {csv};
  a.folds = 0;
  a.output = test::temp_path("hour.yaml");
  const std::string err = fit_error(a);
  CHECK(err.rfind("fleetsim: error: the measurements in " + csv + " cannot be fitted: the fitted client_ttft_s is ",
                  0) == 0);
  CHECK(err.find(", outside [0, 60], the range a profile allows") != std::string::npos);
  CHECK(!std::filesystem::exists(a.output));

  // a name with YAML's special characters is written quoted, and reads back as given
  cli::FitArgs s;
  s.inputs = {steps_csv("named.csv", 7)};
  s.steps = true;
  s.folds = 0;
  s.name = "x: y";
  s.output = test::temp_path("named.yaml");
  CHECK(fit_error(s) == "(no error)");
  CHECK(load_profile(s.output, "").name == "x: y");
}

TEST_CASE("fit inputs: with no measured latency left there is nothing to fit") {
  const std::string csv = write_temp(
      "none.csv", std::string(kHeader) + kRow + "512,64,1,,\n" + kRow + "512,64,4,,\n" + kRow + "2048,64,2,,\n");
  cli::FitArgs a;
  a.inputs = {csv};
  CHECK(fit_error(a) ==
        "fleetsim: error: 0 usable benchmark points in " + csv +
            ": a fit needs at least 3 (a point needs a catalog model and device, lengths, a load, and a "
            "measured latency; --device/--model/--tp fill what JSON results do not say)");
}

TEST_CASE("fit inputs: --folds is 0 or 2 to 50, and --steps needs as many points as a benchmark fit") {
  cli::FitArgs a;
  a.inputs = {steps_csv("folds.csv", 7)};
  a.steps = true;
  for (int k : {1, -1, 51}) {
    a.folds = k;
    CHECK(fit_error(a) ==
          "fleetsim: error: --folds " + std::to_string(k) + ": expected 0 (no held-out error) or 2 to 50 folds");
  }
  a.inputs = {bench_csv("folds_bench.csv", "25")};
  a.steps = false;
  a.folds = 1;
  CHECK(fit_error(a) == "fleetsim: error: --folds 1: expected 0 (no held-out error) or 2 to 50 folds");

  a.inputs = {steps_csv("folds.csv", 7)};
  a.steps = true;
  a.output = test::temp_path("folds.yaml");
  std::string table;
  a.folds = 0;
  REQUIRE(fit_error(a, &table) == "(no error)");
  CHECK(table.find("held out") == std::string::npos);
  table.clear();
  a.folds = 2;
  REQUIRE(fit_error(a, &table) == "(no error)");
  CHECK(table.find("(2-fold held out)") != std::string::npos);

  const std::string two = steps_csv("two_steps.csv", 2);
  a.inputs = {two};
  CHECK(fit_error(a) == "fleetsim: error: 2 step timings in " + two + ": a fit needs at least 3");

  // a step timed more than once is one step: six timings of it are no fit, and the rows of a file
  // given twice score as the file once (each step's copies in one fold; doubling every row leaves
  // a least-squares fit as it was), where a fold used to be scored on copies of rows it fitted
  const std::string head = "model,device,prefill_tokens,decode_seqs,decode_context_tokens,step_ms\n";
  std::string rows;
  for (int i = 1; i <= 8; ++i)
    rows += fmt::format("meta-llama/Llama-3.1-8B,H100-SXM,{},{},{},{}\n", 100 * i, i, 500 * i, 5 + i + 0.3 * (i % 3));
  std::string one_step;
  for (int i = 0; i < 6; ++i) one_step += "meta-llama/Llama-3.1-8B,H100-SXM,100,1,500,6\n";
  const std::string same = write_temp("same_step.csv", head + one_step);
  a.inputs = {same};
  CHECK(fit_error(a) ==
        "fleetsim: error: 6 step timings in " + same + " time only 1 different step: a fit needs at least 3");
  // (3 folds: row i and its copy, i + 8, fell in different folds by row number)
  a.folds = 3;
  auto held_out = [&](const std::string& file) {
    a.inputs = {file};
    std::string t;
    REQUIRE(fit_error(a, &t) == "(no error)");
    return t.substr(t.find("step time:"), t.find('\n', t.find("step time:")) - t.find("step time:"));
  };
  const std::string once = held_out(write_temp("steps_once.csv", head + rows));
  CHECK(once.find("(3-fold held out)") != std::string::npos);
  {
    // the advice names the profile by its whole path: a scenario reads a relative one from its folder
    std::string t;
    REQUIRE(fit_error(a, &t) == "(no error)");
    CHECK(t.find("(use it with engine.perf_profile: " + std::filesystem::absolute(a.output).string() + ")") !=
          std::string::npos);
  }
  CHECK(held_out(write_temp("steps_twice.csv", head + rows + rows)) == once);
}

TEST_CASE("fit inputs: the output may not be one of the inputs") {
  const std::string text = std::string(kHeader) + kRow + "512,64,1,25,7.5\n";
  const std::string csv = write_temp("self.csv", text);
  cli::FitArgs a;
  a.inputs = {test::temp_path("other.csv"), csv};
  a.output = (test::temp_dir() / "." / "self.csv").string();
  CHECK(fit_error(a) ==
        a.output + ": error: --output names an input of this command (" + csv + "): writing there would overwrite it");
  std::ifstream in(csv);
  std::stringstream kept;
  kept << in.rdbuf();
  CHECK(kept.str() == text);
}

TEST_CASE("fit inputs: a row shorter than the header is a located error") {
  const std::string csv = write_temp("short.csv", std::string(kHeader) + kRow + "512,64\n");
  CHECK(read_error(csv) == csv +
                               ":2: error: the header has 8 fields, this row 5: leave a value out as an empty field "
                               "(,,), not by ending the row early");
  const std::string st = write_temp("short_steps.csv",
                                    "model,device,prefill_tokens,decode_seqs,decode_context_tokens,"
                                    "step_ms\n\n  \nmeta-llama/Llama-3.1-8B,H100-SXM,0,4\n");
  CHECK(steps_error(st) == st + ":4: error: the header has 6 fields, this row 4: leave a value out as an empty field "
                                "(,,), not by ending the row early");
  // blank lines, CRLF and a quoted field over two lines are full rows
  const auto p = read_benchmarks(write_temp("full.csv",
                                            "model,device,isl,osl,concurrency,mean_ttft_ms,notes\r\n\r\n"
                                            "llama-3.1-8b,h100,512,64,1,25,\"two\r\nlines, one field\"\r\n"
                                            "llama-3.1-8b,h100,512,64,2,30,\r\n"),
                                 {});
  REQUIRE(p.size() == 2);
  CHECK(p[1].measured[kMeanTtft] == doctest::Approx(0.030));
}

TEST_CASE("fit inputs: too few usable points across several files is an error of them all, not of the first") {
  const std::string f0 = vllm_json("v_ok0.json", "40", 2), f1 = vllm_json("v_ok1.json", "60", 4);
  cli::FitArgs a;
  a.inputs = {f0, f1};
  a.device = "h100";
  CHECK(fit_error(a) ==
        "fleetsim: error: 2 usable benchmark points in " + f0 + ", " + f1 +
            ": a fit needs at least 3 (a point needs a catalog model and device, lengths, a load, and a "
            "measured latency; --device/--model/--tp fill what JSON results do not say)");
}

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

TEST_CASE("fit: the profile names its runs' engine; duplicates, a name run cannot load and mixed engines are errors") {
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

TEST_CASE("fit: fewer prompts than clients send each at once; a point the fitted profile cannot serve counts nowhere") {
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
