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
#include "fit_helpers.hpp"
#include "helpers.hpp"
#include "libsim/base/json.hpp"
#include "libsim/calibrate/fit.hpp"
#include "libsim/input/profile.hpp"

using namespace fleetsim;
using test::write_temp;
using namespace fleetsim::test;

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
