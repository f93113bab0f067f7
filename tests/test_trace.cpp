// Trace import: BurstGPT CSV, Mooncake JSONL, format detection, located errors, and
// the shipped excerpts; trace keys in scenarios, prefix reuse in the core and duration_s: trace_end.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "helpers.hpp"
#include "libsim/backend/mirror.hpp"
#include "libsim/base/error.hpp"
#include "libsim/input/trace.hpp"

using namespace fleetsim;

namespace {

std::string error_of(const std::string& path, const TraceOptions& opt = {}) {
  try {
    load_trace(path, opt);
  } catch (const InputError& e) {
    return e.one_line();
  }
  return "(no error)";
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

const std::string kBurstHeader = "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n";

// Failed requests (Response tokens 0) and empty prompts among good rows; the first row fails, so
// the rebase is to the first kept request (100 s), not to the first row.
const std::string kBurst = kBurstHeader +
                           "99,GPT-4,10,0,10,API log\n"                  // 2: failed
                           "100,ChatGPT,472,18,490,Conversation log\n"   // 3
                           "100.5,GPT-4,300,0,300,API log\n"             // 4: failed
                           "101.25,ChatGPT,0,12,12,API log\n"            // 5: empty prompt
                           "103,GPT-4,1087,230,1317,Conversation log\n"  // 6
                           "104,ChatGPT,50,0,50,Conversation log\n"      // 7: failed
                           "110.75,ChatGPT,20,5,25,API log\n";           // 8

// Four requests with overlapping block hashes, then two that test the run and the cap.
const std::string kMooncake =
    "{\"timestamp\": 5000, \"input_length\": 1300, \"output_length\": 10, \"hash_ids\": [1, 2, 3]}\n"
    "{\"timestamp\": 5250, \"input_length\": 1200, \"output_length\": 20, \"hash_ids\": [1, 2, 4]}\n"
    "{\"timestamp\": 5250, \"input_length\": 300, \"output_length\": 30, \"hash_ids\": [5]}\n"
    "{\"timestamp\": 7125, \"input_length\": 1800, \"output_length\": 40, \"hash_ids\": [1, 2, 3, 6]}\n"
    // 3 was seen, but 8 was not: only the leading run counts
    "{\"timestamp\": 8000, \"input_length\": 1400, \"output_length\": 50, \"hash_ids\": [1, 8, 3]}\n"
    // every block seen, the prompt exactly 3 blocks: the cache may hold all but one token
    "{\"timestamp\": 9000, \"input_length\": 1536, \"output_length\": 60, \"hash_ids\": [1, 2, 3]}\n";

}  // namespace

TEST_CASE("BurstGPT: failed requests and empty prompts are skipped and counted") {
  const TraceData t = load_trace(test::write_temp("burst.csv", kBurst));
  CHECK(contains(t.layout, "BurstGPT"));
  CHECK(t.rows == 7);
  REQUIRE(t.t_s.size() == 3);
  CHECK(t.t_s[0] == 0.0);
  CHECK(t.t_s[1] == doctest::Approx(3.0));
  CHECK(t.t_s[2] == doctest::Approx(10.75));
  CHECK(t.prompt == std::vector<int32_t>{472, 1087, 20});
  CHECK(t.output == std::vector<int32_t>{18, 230, 5});
  CHECK(t.skipped == 4);
  CHECK(t.skipped_reason == "3 failed requests (Response tokens = 0); 1 row with Request tokens = 0");
  CHECK(t.cached_prefix.empty());
  CHECK(t.prefix_hit_share == 0.0);
  // the existing entry point reads the same
  CHECK(load_trace_csv(test::write_temp("burst2.csv", kBurst)).prompt == t.prompt);
}

TEST_CASE("a run says how many trace rows it skipped, and why") {
  const auto r = test::run(
      test::scenario("duration_s: 60\nwarmup_s: 0\ndevice: h100-sxm-80gb\nmodel: llama-3.1-8b\nfleet: {replicas: 1}\n"
                     "workload: {arrival: {process: trace, path: " +
                     test::write_temp("burst_run.csv", kBurst) + "}}\n"));
  const Json& s = r.report["scenario"];
  CHECK(s["trace_rows_skipped"] == 4);
  CHECK(s["trace_rows_skipped_reason"] == "3 failed requests (Response tokens = 0); 1 row with Request tokens = 0");
}

TEST_CASE("BurstGPT: a model filter keeps one model, and names the models when it matches none") {
  const std::string path = test::write_temp("burst_filter.csv", kBurst);
  TraceOptions gpt4;
  gpt4.model_filter = "GPT-4";
  const TraceData t = load_trace(path, gpt4);
  REQUIRE(t.t_s.size() == 1);  // GPT-4 rows: two failed, one kept
  CHECK(t.prompt[0] == 1087);
  CHECK(t.t_s[0] == 0.0);
  CHECK(t.skipped == 2);
  CHECK(t.skipped_reason == "2 failed requests (Response tokens = 0)");

  TraceOptions chat;
  chat.model_filter = "ChatGPT";
  const TraceData c = load_trace(path, chat);
  CHECK(c.prompt == std::vector<int32_t>{472, 20});
  CHECK(c.t_s.back() == doctest::Approx(10.75));
  CHECK(c.skipped == 2);

  TraceOptions typo;
  typo.model_filter = "GPT4";
  CHECK(error_of(path, typo) == path +
                                    ": error: no rows for model 'GPT4' (did you mean 'GPT-4'?); models present: "
                                    "'ChatGPT' (4 rows), 'GPT-4' (3 rows)");

  // a filter whose rows all failed says so
  const std::string all_failed =
      test::write_temp("burst_failed.csv", kBurstHeader + "1,GPT-4,10,0,10,API log\n2,ChatGPT,5,5,10,API log\n");
  CHECK(error_of(all_failed, gpt4) == all_failed +
                                          ":3:1: error: trace has no usable requests (1 row skipped: "
                                          "1 failed request (Response tokens = 0))");

  // a filter on a format without models is an error, not silently ignored
  const std::string native = test::write_temp("native_filter.csv", "timestamp_s,prompt_tokens,output_tokens\n0,10,5\n");
  CHECK(contains(error_of(native, gpt4), ":1:1: error: a model filter applies to BurstGPT traces only"));
  const std::string jsonl = test::write_temp("mooncake_filter.jsonl", kMooncake);
  CHECK(contains(error_of(jsonl, gpt4), "a model filter applies to BurstGPT traces only"));
}

TEST_CASE("BurstGPT: the 8-column layout with Session ID and Elapsed time") {
  const TraceData t = load_trace(
      test::write_temp("burst3.csv",
                       "Timestamp,Session ID,Elapsed time,Model,Request tokens,Response tokens,Total tokens,Log Type\n"
                       "7.5,a1,3.2,ChatGPT,100,20,120,Conversation log\n"
                       "9,,,GPT-4,200,30,230,API log\n"));
  REQUIRE(t.t_s.size() == 2);
  CHECK(t.t_s[1] == doctest::Approx(1.5));
  CHECK(t.prompt == std::vector<int32_t>{100, 200});
  CHECK(t.output == std::vector<int32_t>{20, 30});
}

TEST_CASE("Mooncake: cached prefix from earlier requests' block hashes") {
  const std::string path = test::write_temp("mooncake.jsonl", kMooncake);
  const TraceData t = load_trace(path);
  CHECK(contains(t.layout, "Mooncake"));
  CHECK(t.rows == 6);
  CHECK(t.skipped == 0);
  CHECK(t.prompt == std::vector<int32_t>{1300, 1200, 300, 1800, 1400, 1536});
  CHECK(t.output == std::vector<int32_t>{10, 20, 30, 40, 50, 60});
  CHECK(t.cached_prefix == std::vector<int32_t>{0, 2 * 512, 0, 3 * 512, 512, 1535});
  const double cached = 1024 + 1536 + 512 + 1535, prompt = 1300 + 1200 + 300 + 1800 + 1400 + 1536;
  CHECK(t.prefix_hit_share == doctest::Approx(cached / prompt));
  // milliseconds to seconds, rebased to the first request
  REQUIRE(t.t_s.size() == 6);
  CHECK(t.t_s[0] == 0.0);
  CHECK(t.t_s[1] == doctest::Approx(0.25));
  CHECK(t.t_s[2] == doctest::Approx(0.25));
  CHECK(t.t_s[3] == doctest::Approx(2.125));
  CHECK(t.t_s[5] == doctest::Approx(4.0));

  TraceOptions small;
  small.block_tokens = 256;
  CHECK(load_trace(path, small).cached_prefix == std::vector<int32_t>{0, 512, 0, 768, 256, 768});
  TraceOptions zero;
  zero.block_tokens = 0;
  CHECK(contains(error_of(path, zero), "block_tokens must be at least 1"));

  // the existing entry point (scenario files) dispatches too
  CHECK(load_trace_csv(path).cached_prefix == t.cached_prefix);
}

TEST_CASE("Mooncake: empty prompts are skipped and counted, their hashes do not count as seen") {
  const TraceData t = load_trace(
      test::write_temp("mooncake_empty.jsonl",
                       "\n{\"timestamp\": 0, \"input_length\": 0, \"output_length\": 5, \"hash_ids\": [1]}\n"
                       "   \n"
                       "{\"timestamp\": 10, \"input_length\": 700, \"output_length\": 5, \"hash_ids\": [1, 2]}\n"
                       "{\"timestamp\": 20, \"input_length\": 700, \"output_length\": 5, \"hash_ids\": [1, 3], "
                       "\"extra\": \"ignored\"}\n"));
  CHECK(t.rows == 3);
  CHECK(t.skipped == 1);
  CHECK(t.skipped_reason == "1 row with input_length = 0");
  CHECK(t.cached_prefix == std::vector<int32_t>{0, 512});
  CHECK(t.t_s == std::vector<double>{0.0, 0.01});
}

TEST_CASE("Mooncake: malformed lines give located errors that say what was expected") {
  const std::string bad_json =
      test::write_temp("mc_bad.jsonl",
                       "{\"timestamp\": 0, \"input_length\": 10, \"output_length\": 5, \"hash_ids\": [1]}\n"
                       "{\"timestamp\": 1, \"input_length\": 10,, \"output_length\": 5}\n");
  const std::string e1 = error_of(bad_json);
  CHECK(contains(e1, bad_json + ":2:"));
  CHECK(contains(e1, "not valid JSON"));
  CHECK(contains(e1, "expected one JSON object per line"));

  const std::string missing =
      test::write_temp("mc_missing.jsonl", "{\"timestamp\": 0, \"input_length\": 10, \"output_length\": 5}\n");
  CHECK(contains(error_of(missing), missing + ":1:1: error: missing \"hash_ids\""));

  const std::string bad_len = test::write_temp(
      "mc_len.jsonl", "{\"timestamp\": 0, \"input_length\": 1.5, \"output_length\": 5, \"hash_ids\": []}\n");
  CHECK(error_of(bad_len) ==
        bad_len + ":1:18: error: \"input_length\" must be an integer token count in [0, 1e8], not 1.5");

  const std::string bad_ids = test::write_temp(
      "mc_ids.jsonl", "{\"timestamp\": 0, \"input_length\": 9, \"output_length\": 5, \"hash_ids\": [1, \"x\"]}\n");
  CHECK(contains(error_of(bad_ids), ":1:57: error: \"hash_ids\" must be a list of integers; found \"x\""));

  // a number no double holds: an input error, not an escaped exception of the JSON parser
  const std::string overflow = test::write_temp(
      "mc_overflow.jsonl", "{\"timestamp\": 0, \"input_length\": 9, \"output_length\": 5, \"hash_ids\": [1e400]}\n");
  CHECK(error_of(overflow) == overflow + ":1:1: error: not valid JSON (number overflow parsing '1e400'); " +
                                  "expected one JSON object per line: {\"timestamp\": ms, \"input_length\": tokens, "
                                  "\"output_length\": tokens, \"hash_ids\": [block ids]}");

  const std::string not_object = test::write_temp(
      "mc_array.jsonl", "{\"timestamp\": 0, \"input_length\": 9, \"output_length\": 5, \"hash_ids\": []}\n[1, 2]\n");
  CHECK(contains(error_of(not_object), ":2:1: error: not a JSON object"));
}

TEST_CASE("a non-monotone timestamp gives a located error") {
  // CSV: checked on every row, a skipped one included
  const std::string burst =
      test::write_temp("burst_back.csv", kBurstHeader +
                                             "10,ChatGPT,5,5,10,API log\n12,ChatGPT,5,5,10,API log\n"
                                             "11,GPT-4,5,0,5,API log\n");
  CHECK(error_of(burst) == burst + ":4:1: error: timestamps go backwards (a trace must be sorted by arrival time)");
  const std::string jsonl =
      test::write_temp("mc_back.jsonl",
                       "{\"timestamp\": 100, \"input_length\": 10, \"output_length\": 5, \"hash_ids\": [1]}\n"
                       "\n"
                       "{\"timestamp\": 99, \"input_length\": 10, \"output_length\": 5, \"hash_ids\": [1]}\n");
  CHECK(error_of(jsonl) == jsonl + ":3:1: error: timestamps go backwards (a trace must be sorted by arrival time)");
}

TEST_CASE("a UTF-8 byte-order mark and CRLF line ends are accepted") {
  const TraceData c = load_trace(
      test::write_temp("bom.csv", "\xEF\xBB\xBFtimestamp_s,prompt_tokens,output_tokens\r\n0.5,10,5\r\n1.5,20,6\r\n"));
  CHECK(c.layout == "timestamp_s,prompt_tokens,output_tokens");
  CHECK(c.prompt == std::vector<int32_t>{10, 20});
  CHECK(c.t_s == std::vector<double>{0.5, 1.5});  // native timestamps are not rebased
  const TraceData b = load_trace(test::write_temp("bom_burst.csv", "\xEF\xBB\xBF" + kBurst));
  CHECK(b.prompt.size() == 3);
  const TraceData j = load_trace(test::write_temp("bom.jsonl", "\xEF\xBB\xBF" + kMooncake));
  CHECK(j.cached_prefix.size() == 6);
  CHECK(load_csv_column(test::write_temp("bom_col.csv", "\xEF\xBB\xBFx,y\n1,2\n3,4\n"), "x") ==
        std::vector<double>{1, 3});
}

TEST_CASE("an unrecognised file says which formats are read") {
  const std::string path = test::write_temp("unknown.csv", "time,in,out\n1,2,3\n");
  const std::string e = error_of(path);
  CHECK(contains(e, path + ":1:1: error: unrecognised trace header"));
  CHECK(contains(e, "BurstGPT"));
  CHECK(contains(e, "Mooncake JSONL"));
}

TEST_CASE("the shipped Mooncake excerpt loads, with its prefix reuse") {
  const std::string path = std::string(FLEETSIM_SOURCE_DIR) + "/scenarios/traces/mooncake-conversation-5min.jsonl";
  const TraceData t = load_trace(path);
  CHECK(t.rows == 918);
  CHECK(t.t_s.size() == 918);
  CHECK(t.skipped == 0);
  CHECK(t.t_s.back() == doctest::Approx(297.0));
  CHECK(t.prompt[0] == 6758);
  CHECK(t.output[0] == 500);
  // 2,575,267 of 12,446,054 prompt tokens are a prefix of an earlier request
  int64_t cached = 0, prompt = 0;
  for (size_t i = 0; i < t.prompt.size(); ++i) {
    cached += t.cached_prefix[i];
    prompt += t.prompt[i];
    CHECK(t.cached_prefix[i] < t.prompt[i]);
  }
  CHECK(cached == 2575267);
  CHECK(prompt == 12446054);
  CHECK(t.prefix_hit_share == doctest::Approx(0.206914).epsilon(1e-5));

  // a scenario replays it through the existing trace key
  const Scenario s = test::scenario(
      "duration_s: 300\nwarmup_s: 0\ndevice: h100-sxm-80gb\nmodel: llama-3.1-8b\nfleet: {replicas: 1}\n"
      "workload: {arrival: {process: trace, path: " +
      path + "}}\n");
  CHECK(s.classes[0].trace->t_s.size() == 918);
  CHECK(s.classes[0].trace->cached_prefix.size() == 918);
}

// ------------------------------------------------------------------ traces in scenarios

namespace {

const std::string kExcerpt = std::string(FLEETSIM_SOURCE_DIR) + "/scenarios/traces/mooncake-conversation-5min.jsonl";

std::string scenario_error(const std::string& yaml, const std::vector<std::string>& sets = {}) {
  try {
    test::scenario(yaml, sets);
  } catch (const InputError& e) {
    return e.one_line();
  }
  return "(no error)";
}

// the shipped excerpt on 4 H100s, warm-up 30 s, to its last arrival
const std::string kReplay =
    "duration_s: trace_end\nwarmup_s: 30\ndevice: h100-sxm-80gb\nmodel: llama-3.1-8b\n"
    "engine: {max_num_seqs: 256, max_batched_tokens: 8192}\nfleet: {replicas: 4, queue_limit: 4096}\n";

}  // namespace

TEST_CASE("duration_s: trace_end runs to the last trace arrival") {
  const Scenario s = test::scenario(kReplay + "workload: {arrival: {process: trace, path: " + kExcerpt + "}}\n");
  const TraceData& t = *s.classes[0].trace;
  CHECK(s.duration_s > t.t_s.back());
  CHECK(s.duration_s == std::nextafter(t.t_s.back(), 1e300));
  const auto r = test::run(s);
  int64_t after_warmup = 0;
  for (double x : t.t_s) after_warmup += x >= 30.0 ? 1 : 0;
  CHECK(r.all->arrived == after_warmup);  // the last request is in
  CHECK(r.all->completed == after_warmup);
  CHECK(r.report["scenario"]["duration_s"].get<double>() == s.duration_s);

  // shifted by start_s and stretched by time_scale, with a second class that is not a trace
  const Scenario s2 =
      test::scenario(kReplay +
                     "classes:\n"
                     "  replay: {arrival: {process: trace, path: " +
                     kExcerpt +
                     ", time_scale: 0.5, start_s: 40}}\n"
                     "  chat: {arrival: {process: poisson, rate_per_s: 1}, prompt_tokens: 100, output_tokens: 10}\n");
  CHECK(s2.duration_s == std::nextafter(t.t_s.back() * 0.5 + 40.0, 1e300));
  const auto r2 = test::run(s2);
  CHECK(r2.tally->classes[0].arrived == int64_t(t.t_s.size()));  // all after the warm-up: start_s 40 > 30
  CHECK(r2.drained);

  // a number still works as before
  CHECK(test::scenario(kReplay + "workload: {arrival: {process: trace, path: " + kExcerpt + "}}\n", {"duration_s=100"})
            .duration_s == 100);
}

TEST_CASE("duration_s: trace_end errors are located") {
  const std::string mc = test::write_temp("mooncake_trace_end.jsonl", kMooncake);
  const std::string yaml =
      "duration_s: trace_end\ndevice: h100-sxm-80gb\nmodel: llama-3.1-8b\nfleet: {replicas: 1}\n"
      "workload: {arrival: {process: trace, path: " +
      mc + "}}\n";
  CHECK(scenario_error(yaml) == "(no error)");
  // no trace to end
  CHECK(
      scenario_error("duration_s: trace_end\ndevice: h100-sxm-80gb\nmodel: llama-3.1-8b\nfleet: {replicas: 1}\n"
                     "workload: {arrival: {process: poisson, rate_per_s: 1}, prompt_tokens: 10, output_tokens: 5}\n") ==
      "<test>:1:13: error: duration_s: trace_end needs a class that replays a trace (arrival: {process: trace, path: "
      "...})");
  // a misspelling says what is accepted
  CHECK(scenario_error(yaml, {"duration_s=trace-end"}) ==
        "--set duration_s=trace-end: error: duration_s: expected a number of seconds, or trace_end (run to the last "
        "trace "
        "arrival); got 'trace-end'");
  // the warm-up must end before the last arrival (4 s into this trace)
  CHECK(contains(scenario_error(yaml, {"warmup_s=5"}),
                 "error: warmup_s: warmup_s must be less than duration_s (trace_end: 4.000000 s)"));
  // trace_end takes the run no further than a duration_s given in seconds may go
  const std::string far =
      test::write_temp("far.csv", "timestamp_s,prompt_tokens,output_tokens\n0,10,5\n5000000,10,5\n");
  CHECK(scenario_error("duration_s: trace_end\ndevice: h100-sxm-80gb\nmodel: llama-3.1-8b\nfleet: {replicas: 1}\n"
                       "workload: {arrival: {process: trace, path: " +
                       far + "}}\n") ==
        "<test>:1:13: error: duration_s: trace_end: the last trace arrival is at 5000000 s, past the longest run "
        "(2592000 s, 30 days); cut the trace or give duration_s in seconds");
  // a trace whose arrivals all come at once leaves no window to measure rates or dollars per hour over
  const std::string once = test::write_temp("once.csv", "timestamp_s,prompt_tokens,output_tokens\n0,10,5\n0,10,5\n");
  CHECK(scenario_error("duration_s: trace_end\ndevice: h100-sxm-80gb\nmodel: llama-3.1-8b\nfleet: {replicas: 1}\n"
                       "workload: {arrival: {process: trace, path: " +
                       once + "}}\n") ==
        "<test>:1:13: error: duration_s: trace_end: the last trace arrival is at 0 s, which leaves less than 1 s "
        "after the 0 s of warmup_s to measure over; give duration_s in seconds");
  CHECK(contains(scenario_error(yaml, {"warmup_s=3.5"}), "which leaves less than 1 s after the 3.5 s of warmup_s"));
  // and so does a duration in seconds
  CHECK(contains(scenario_error(yaml, {"duration_s=0.5"}),
                 "error: duration_s: the measured window (duration_s - warmup_s) is 0.5 s; it must be at least 1 s"));
  // a window of 1 s as written is one, whatever the binary difference of the two says
  CHECK_NOTHROW(test::scenario(yaml, {"duration_s=1.9", "warmup_s=0.9"}));
}

TEST_CASE("a trace row with no prompt tokens is skipped in every layout, with the reason") {
  const TraceData t = load_trace(
      test::write_temp("zero_prompt.csv", "timestamp_s,prompt_tokens,output_tokens\n0,0,0\n1,10,0\n2,0,5\n3,20,4\n"));
  CHECK(t.prompt == std::vector<int32_t>{10, 20});
  CHECK(t.output == std::vector<int32_t>{0, 4});  // no output: a prefill-only request
  CHECK(t.skipped_reason == "2 rows with 0 prompt tokens");
}

TEST_CASE("trace keys: model and block_tokens reach the loader and key its cache") {
  const std::string burst = test::write_temp("burst_scenario.csv", kBurst);
  const std::string yaml =
      "duration_s: trace_end\ndevice: h100-sxm-80gb\nmodel: llama-3.1-8b\nfleet: {replicas: 1}\n"
      "workload: {arrival: {process: trace, path: " +
      burst + ", model: ChatGPT}}\n";
  const ScenarioSource src = ScenarioSource::from_text(yaml, "<test>", FLEETSIM_SOURCE_DIR);
  const Scenario chat = src.instantiate();
  CHECK(chat.classes[0].trace->prompt == std::vector<int32_t>{472, 20});
  // (GPT-4's one row is a trace that ends where it starts: a duration in seconds measures it)
  const Scenario gpt4 = src.instantiate({parse_set("workload.arrival.model=GPT-4"), parse_set("duration_s=10")});
  CHECK(gpt4.classes[0].trace->prompt == std::vector<int32_t>{1087});
  CHECK(src.instantiate().classes[0].trace == chat.classes[0].trace);  // cached, and shared

  const std::string mc = test::write_temp("mooncake_scenario.jsonl", kMooncake);
  const ScenarioSource msrc = ScenarioSource::from_text(
      "duration_s: trace_end\ndevice: h100-sxm-80gb\nmodel: llama-3.1-8b\nfleet: {replicas: 1}\n"
      "workload: {arrival: {process: trace, path: " +
          mc + "}}\n",
      "<test>", FLEETSIM_SOURCE_DIR);
  CHECK(msrc.instantiate().classes[0].trace->cached_prefix == std::vector<int32_t>{0, 1024, 0, 1536, 512, 1535});
  CHECK(msrc.instantiate({parse_set("workload.arrival.block_tokens=256")}).classes[0].trace->cached_prefix ==
        std::vector<int32_t>{0, 512, 0, 768, 256, 768});
}

TEST_CASE("trace keys: bad inputs are located errors") {
  const std::string mc = test::write_temp("mooncake_errors.jsonl", kMooncake);
  const std::string head =
      "duration_s: trace_end\n"  // 1
      "device: h100-sxm-80gb\n"  // 2
      "model: llama-3.1-8b\n"    // 3
      "fleet: {replicas: 1}\n"   // 4
      "workload:\n"              // 5
      "  arrival:\n"             // 6
      "    process: trace\n";    // 7
  // a model filter on a Mooncake file: the loader's error, at the filter
  const std::string e1 = scenario_error(head + "    path: " + mc + "\n    model: ChatGPT\n");
  CHECK(contains(e1, "<test>:9:12: error: workload.arrival.model: "));
  CHECK(contains(e1, "a model filter applies to BurstGPT traces only"));
  CHECK(scenario_error(head + "    path: " + mc + "\n    block_tokens: 0\n") ==
        "<test>:9:19: error: workload.arrival.block_tokens: value 0 is out of range (expected an integer in [1, "
        "1048576])");
  // block_tokens on a trace without hashes
  const std::string csv = test::write_temp("native_bt.csv", "timestamp_s,prompt_tokens,output_tokens\n0,10,5\n");
  CHECK(
      contains(scenario_error(head + "    path: " + csv + "\n    block_tokens: 256\n"),
               "<test>:9:19: error: workload.arrival.block_tokens: block_tokens applies to traces with block hashes"));
  // the trace keys on another process
  CHECK(scenario_error("duration_s: 10\ndevice: h100-sxm-80gb\nmodel: llama-3.1-8b\nfleet: {replicas: 1}\n"
                       "workload: {arrival: {process: poisson, rate_per_s: 1, model: ChatGPT}, prompt_tokens: 10, "
                       "output_tokens: 5}\n") ==
        "<test>:5:62: error: workload.arrival.model: 'model' applies to process: trace only");
}

TEST_CASE("trace replay: a cached prefix shortens a request's TTFT by exactly the prefill it skips") {
  // blocks of 100 tokens: the second request repeats the first one's first two blocks
  const std::string path = test::write_temp(
      "three.jsonl",
      "{\"timestamp\": 0, \"input_length\": 300, \"output_length\": 1, \"hash_ids\": [1, 2, 3]}\n"
      "{\"timestamp\": 10000, \"input_length\": 300, \"output_length\": 1, \"hash_ids\": [1, 2, 4]}\n"
      "{\"timestamp\": 20000, \"input_length\": 250, \"output_length\": 1, \"hash_ids\": [5, 6, 7]}\n");
  const std::string yaml =
      "duration_s: trace_end\ndevice: h100-sxm-80gb\nmodel: llama-3.1-8b\n"
      "engine: {perf_model: linear, step_base_s: 0.01, per_prefill_token_s: 0.001}\n"
      "fleet: {replicas: 1}\n"
      "workload: {arrival: {process: trace, path: " +
      path + ", block_tokens: 100}}\n";
  const Scenario s = test::scenario(yaml);
  REQUIRE(s.classes[0].trace->cached_prefix == std::vector<int32_t>{0, 200, 0});
  CHECK(s.params().classes[0].arrivals.trace_cached == s.classes[0].trace->cached_prefix.data());
  const auto on = test::run(s);
  const auto off = test::run(test::scenario(yaml, {"engine.prefix_caching=false"}));
  REQUIRE(on.drained);
  REQUIRE(off.drained);
  // each request is alone on the replica: its TTFT is one prefill step, base + per token x computed tokens
  auto step = [](double tokens) { return 0.01 + 0.001 * tokens; };
  CHECK(off.all->ttft.n == 3);
  CHECK(off.all->ttft.sum == doctest::Approx(step(300) + step(300) + step(250)).epsilon(1e-12));
  CHECK(on.all->ttft.sum == doctest::Approx(step(300) + step(100) + step(250)).epsilon(1e-12));
  CHECK(off.all->ttft.sum - on.all->ttft.sum == doctest::Approx(200 * 0.001).epsilon(1e-9));
  CHECK(on.all->prefix_hits == 1);
  CHECK(on.all->prefix_tokens_reused == 200);
  CHECK(off.all->prefix_hits == 0);
  CHECK(off.all->prefix_tokens_reused == 0);
  CHECK(on.report["requests"]["prefix_reuse_share"].get<double>() == doctest::Approx(200.0 / 850.0));
  // prefill device time (the whole step under the linear model) shrinks by the same 0.2 s
  CHECK(off.tally->pools[0].input_busy_s - on.tally->pools[0].input_busy_s == doctest::Approx(0.2).epsilon(1e-9));
}

TEST_CASE("trace prefix reuse under preemption and lost replicas: every block comes back") {
  // a small KV cache (preemptions, recomputed with the cached part still skipped) and replicas
  // that fail (requests retried)
  const Scenario s = test::scenario(kReplay + "workload: {arrival: {process: trace, path: " + kExcerpt + "}}\n",
                                    {"engine.gpu_memory_utilization=0.35", "fleet.failures.mtbf_hours=0.05"});
  const auto r = test::run(s);
  CHECK(r.tally->status == 0);
  CHECK(r.all->preempted > 0);
  CHECK(r.all->retried > 0);
  CHECK(r.all->arrived == r.all->completed + r.all->rejected_queue_full + r.all->rejected_too_long + r.all->failed);
  CHECK(r.all->prefix_hits == r.all->completed);  // after the warm-up every request reuses a prefix
  CHECK(r.drained);
}

TEST_CASE("trace prefix reuse: relocated parameters (the CUDA data path) reproduce the host result") {
  const Scenario s = test::scenario(kReplay + "workload: {arrival: {process: trace, path: " + kExcerpt + "}}\n");
  const SimParams p = s.params();
  REQUIRE(p.classes[0].arrivals.trace_cached != nullptr);
  const std::vector<SimJob> jobs{SimJob{&p, 0}};
  const Mirror m(jobs);
  CHECK(m.arrays.size() == 4);  // times, prompts, outputs, cached prefixes
  std::vector<char> device(m.array_bytes);
  m.pack([&](size_t off, const void* src, size_t bytes) { std::memcpy(device.data() + off, src, bytes); });
  const std::vector<SimParams> moved = m.relocated(device.data());
  CHECK(moved[0].classes[0].arrivals.trace_cached != p.classes[0].arrivals.trace_cached);
  std::vector<uint8_t> ws(workspace_layout(p).total);
  auto from_mirror = std::make_unique<Tally>();
  simulate(moved[0], 0, ws.data(), *from_mirror);
  HostWorkspace host;
  const auto direct = simulate_once(p, 0, host);
  CHECK(std::memcmp(from_mirror.get(), direct.get(), sizeof(Tally)) == 0);
  CHECK(direct->classes[0].prefix_tokens_reused > 0);
}

TEST_CASE("trace prefix reuse: no cached prefix without block hashes, no class prefix with them") {
  const std::string burst = test::write_temp("burst_params.csv", kBurst);
  const Scenario b = test::scenario(
      "duration_s: trace_end\ndevice: h100-sxm-80gb\nmodel: llama-3.1-8b\nfleet: {replicas: 1}\n"
      "workload: {arrival: {process: trace, path: " +
      burst + "}, prefix: {share: 1, tokens: 10}}\n");
  CHECK(b.params().classes[0].arrivals.trace_cached == nullptr);
  const std::string mc = test::write_temp("mooncake_prefix.jsonl", kMooncake);
  CHECK(scenario_error("duration_s: trace_end\ndevice: h100-sxm-80gb\nmodel: llama-3.1-8b\nfleet: {replicas: 1}\n"
                       "workload:\n  arrival: {process: trace, path: " +
                       mc + "}\n  prefix: {share: 1, tokens: 100}\n")
            .find("<test>:7:11: error: workload.prefix: the trace's block hashes already say which prompt prefixes are "
                  "cached") == 0);
}

TEST_CASE("the Mooncake replay: prefix caching lowers TTFT and prefill work, the reused share is the trace's") {
  const std::string file = std::string(FLEETSIM_SOURCE_DIR) + "/scenarios/mooncake-replay.yaml";
  const Scenario s = load_scenario_file(file);
  const auto on = test::run(s);
  const auto off = test::run(load_scenario_file(file, {"engine.prefix_caching=false"}));
  REQUIRE(on.drained);
  REQUIRE(off.drained);
  const ClassTally& a = *on.all;
  const ClassTally& b = *off.all;
  // the same requests either way, all served
  CHECK(a.arrived == b.arrived);
  CHECK(a.completed == a.arrived);
  CHECK(b.completed == b.arrived);
  CHECK(a.ttft.sum / double(a.ttft.n) < b.ttft.sum / double(b.ttft.n));
  CHECK(on.tally->pools[0].input_busy_s < off.tally->pools[0].input_busy_s);
  CHECK(on.tally->pools[0].flops < off.tally->pools[0].flops);
  CHECK(b.prefix_hits == 0);

  // the share reused is the trace's own, over the requests that arrived in the window
  const TraceData& t = *s.classes[0].trace;
  int64_t cached = 0, prompt = 0, n = 0;
  for (size_t i = 0; i < t.t_s.size(); ++i) {
    if (t.t_s[i] < s.warmup_s) continue;
    cached += t.cached_prefix[i];
    prompt += t.prompt[i];
    ++n;
  }
  CHECK(a.arrived == n);
  CHECK(a.prefix_tokens_reused == cached);
  CHECK(a.input_tokens == double(prompt));
  CHECK(on.report["requests"]["prefix_reuse_share"].get<double>() ==
        doctest::Approx(double(cached) / double(prompt)).epsilon(1e-12));
  // over the whole excerpt that share is 20.7% (prefix_hit_share); the window's is a little higher
  CHECK(double(cached) / double(prompt) > t.prefix_hit_share);
}

TEST_CASE("a large CSV trace reads every number exactly as strtod does, across read blocks") {
  // 40,000 rows (several 64 KiB read blocks), timestamps with 1 to 17 significant digits (the
  // short ones take the integer-division path, the long ones the general parse), counts with
  // leading zeros and exponents, and a last line without its newline
  std::string text = "timestamp_s,prompt_tokens,output_tokens\n";
  std::vector<std::string> ts, counts;
  uint64_t x = 88172645463325252ull;
  double t = 0;
  for (int i = 0; i < 40000; ++i) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    t += double(x % 1000) / 997.0;
    const int digits = 1 + int(x % 17);
    std::string s = fmt::format("{:.{}g}", t, digits);
    if (s.find('e') != std::string::npos) s = fmt::format("{:.0f}", t);
    if (!ts.empty() && std::strtod(s.c_str(), nullptr) < std::strtod(ts.back().c_str(), nullptr)) s = ts.back();
    ts.push_back(s);
    const std::string c = i % 7 == 0 ? "0012" : i % 11 == 0 ? "1.2e2" : std::to_string(1 + x % 5000);
    counts.push_back(c);
    text += s + "," + c + "," + std::to_string(1 + x % 300) + (i + 1 < 40000 ? "\n" : "");
  }
  const TraceData d = load_trace(test::write_temp("big_numbers.csv", text));
  REQUIRE(d.t_s.size() == ts.size());
  size_t bad_t = 0, bad_p = 0;
  for (size_t i = 0; i < ts.size(); ++i) {
    bad_t += d.t_s[i] != std::strtod(ts[i].c_str(), nullptr);
    bad_p += d.prompt[i] != int32_t(std::strtod(counts[i].c_str(), nullptr));
  }
  CHECK(bad_t == 0);
  CHECK(bad_p == 0);
}
