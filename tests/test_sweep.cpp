// Sweeps: rows equal single runs, shards merge into exactly the whole, confidence intervals
// shrink as 1/sqrt(R), SLOs and infeasible configurations are reported, bad sweeps are refused.
#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "helpers.hpp"
#include "libsim/input/csv.hpp"
#include "libsim/sweep/sweep.hpp"
#include "sweep_helpers.hpp"

using namespace fleetsim;

namespace {

ScenarioSource source(const std::string& sweep) { return test::sweep_source(sweep); }
Json run(const ScenarioSource& src, int threads = 2, uint32_t k = 0, uint32_t n = 1) {
  return test::run_sweep_cpu(src, threads, k, n);
}

std::string error_of(const std::string& sweep) {
  try {
    parse_sweep(source(sweep));
  } catch (const InputError& e) {
    return e.one_line();
  }
  return "(no error)";
}

}  // namespace

TEST_CASE("a configuration in a sweep gives the numbers fleetsim run gives for it") {
  const auto src = source(
      "sweep:\n  parameters:\n    fleet.replicas: [1, 2]\n    engine.max_num_seqs: [8, 64]\n  replications: 3\n");
  const SweepSpec spec = parse_sweep(src);
  REQUIRE(spec.count() == 4);
  const Json doc = run(src);
  REQUIRE(doc["rows"].size() == 4);
  for (uint64_t c = 0; c < 4; ++c) {
    const Scenario s = src.instantiate(spec.overrides(c));
    std::vector<Json> reps;
    for (uint32_t r = 0; r < 3; ++r) reps.push_back(test::run(s, r).report);
    const Json& row = doc["rows"][c];
    CHECK(row["index"] == c);
    for (const char* path : {"/requests/completed", "/latency_s/ttft/p99", "/cost/per_million_output_tokens_usd",
                             "/utilization/busy_fraction", "/throughput/output_tokens_per_s"}) {
      CAPTURE(path);
      const Json::json_pointer ptr(path);
      const double mean = (reps[0][ptr].get<double>() + reps[1][ptr].get<double>() + reps[2][ptr].get<double>()) / 3.0;
      CHECK(row["metrics"][ptr].get<double>() == mean);  // the same bits
    }
  }
  // the parameters of a row are the values swept
  CHECK(doc["rows"][3]["parameters"]["fleet.replicas"] == 2);
  CHECK(doc["rows"][3]["parameters"]["engine.max_num_seqs"] == 64);
}

TEST_CASE("a metric one replication leaves out counts 0 in the row's mean, whichever replication it is") {
  const auto src = source("sweep:\n  parameters:\n    fleet.replicas: [1]\n  replications: 3\n");
  const SweepSpec spec = parse_sweep(src);
  const Scenario s = src.instantiate(spec.overrides(0));
  std::vector<std::unique_ptr<Tally>> tallies;
  std::vector<const Tally*> reps;
  std::vector<Json> reports;
  for (uint32_t r = 0; r < 3; ++r) {
    tallies.push_back(test::run(s, r).tally);
    reps.push_back(tallies.back().get());
    reports.push_back(run_report(s, *reps.back()));
  }
  // a pool's prefix_cache block is written where it reused something: here by the last two only
  for (Json& rep : reports) rep["pools"] = {{"p", Json::object()}};
  reports[1]["pools"]["p"]["prefix_cache"] = {{"reused_tokens", 30.0}};
  reports[2]["pools"]["p"]["prefix_cache"] = {{"reused_tokens", 60.0}};
  reports[1]["requests"]["prefix_tokens_loaded"] = 9.0;
  const Json row = sweep_row(spec, 0, &s, reps, "", &reports);
  CHECK(row["metrics"]["pools"]["p"]["prefix_cache"]["reused_tokens"].get<double>() == 30.0);
  CHECK(row["metrics"]["requests"]["prefix_tokens_loaded"].get<double>() == 3.0);
}

TEST_CASE("shards merge into exactly the unsharded sweep, whatever the thread count") {
  const auto src = source(
      "sweep:\n  parameters:\n    fleet.replicas: {from: 1, to: 3}\n    device: [h100-sxm-80gb, l4-24gb, a100-40gb]\n"
      "    workload.arrival.rate_per_s: [2, 8]\n  replications: 2\n  slo: {latency_s.ttft.p99: 1.0}\n");
  const std::string whole = run(src, 2).dump(1);
  CHECK(run(src, 1).dump(1) == whole);
  std::vector<std::pair<std::string, Json>> shards;
  for (uint32_t k = 0; k < 4; ++k) {
    const Json shard = run(src, 2, k, 4);
    CHECK(shard["shard"]["index"] == k);
    shards.emplace_back("shard" + std::to_string(k), Json::parse(shard.dump()));  // through text, as files
  }
  std::swap(shards[0], shards[3]);  // order does not matter
  CHECK(merge_sweeps(shards).dump(1) == whole);
  // a missing or duplicated shard is an error
  auto three = shards;
  three.pop_back();
  CHECK_THROWS_AS(merge_sweeps(three), InputError);
  auto dup = shards;
  dup[1] = dup[0];
  CHECK_THROWS_AS(merge_sweeps(dup), InputError);
  // shards of another sweep are refused
  const auto other = source("sweep:\n  parameters:\n    fleet.replicas: [1, 2]\n");
  auto mixed = shards;
  mixed[0].second = run(other, 2, 0, 4);
  CHECK_THROWS_AS(merge_sweeps(mixed), InputError);
}

TEST_CASE("confidence intervals shrink as 1/sqrt(replications)") {
  auto hw = [&](int reps) {
    const Json d =
        run(source("sweep:\n  parameters:\n    fleet.replicas: [1]\n  replications: " + std::to_string(reps) + "\n"));
    return d["rows"][0]["ci95"]["latency_s.ttft.p99"].get<double>();
  };
  const double h4 = hw(4), h16 = hw(16), h64 = hw(64);
  MESSAGE("p99 TTFT half-width: R=4 " << h4 << ", R=16 " << h16 << ", R=64 " << h64);
  // expected ratios: t(3)/t(15) * sqrt(16/4) = 2.99 and t(15)/t(63) * 2 = 2.13, times sampling noise in s
  CHECK(h4 / h16 > 1.6);
  CHECK(h4 / h16 < 6.0);
  CHECK(h16 / h64 > 1.4);
  CHECK(h16 / h64 < 3.5);
}

TEST_CASE("configurations that cannot run are reported as infeasible with the reason") {
  const Json d =
      run(source("sweep:\n  parameters:\n    model: [llama-3.1-8b, llama-3.1-70b]\n"
                 "    device: [h100-sxm-80gb, l4-24gb]\n    engine.max_batched_tokens: [128, 8192]\n"));
  REQUIRE(d["rows"].size() == 8);
  int no_fit = 0, inconsistent = 0, ran = 0;
  for (const auto& r : d["rows"]) {
    if (r["metrics"].is_null()) {
      CHECK_FALSE(r["feasible"].get<bool>());
      const std::string reason = r["reason"].get<std::string>();
      if (reason.rfind("does not fit", 0) == 0) ++no_fit;
      if (reason.rfind("inconsistent", 0) == 0) ++inconsistent;
    } else {
      ++ran;
    }
  }
  CHECK(no_fit == 2);        // 70B on H100 and on L4 with 8192 tokens (128 tokens is inconsistent first)
  CHECK(inconsistent == 4);  // max_batched_tokens 128 < max_num_seqs 256
  CHECK(ran == 2);           // 8B on H100 and L4
  CHECK(d["summary"]["infeasible_config"] == 6);
}

TEST_CASE("an SLO that nothing meets says so, and names the closest configuration") {
  const std::string sweep =
      "sweep:\n  parameters:\n    fleet.replicas: [1, 2]\n  slo: {latency_s.ttft.p99: 0.000001}\n";
  const Json d = run(source(sweep + "  stop_certain_misses: false\n"));
  CHECK(d["summary"]["feasible"] == 0);
  CHECK(d["summary"]["cheapest"].is_null());
  const std::string m = d["summary"]["message"].get<std::string>();
  CHECK(m.find("no configuration meets the SLO; closest is #1") == 0);
  CHECK(format_sweep_table(d).find("no configuration meets the SLO") != std::string::npos);
  // runs stopped once their miss was certain have no figures to rank: the message says how to get them
  const Json stopped = run(source(sweep));
  CHECK(stopped["summary"]["stopped_early"] == 2);
  CHECK(stopped["summary"]["message"] ==
        "no configuration meets the SLO; every run that ran stopped once its miss was certain "
        "(sweep.stop_certain_misses: false runs them to their end, with figures)");
}

TEST_CASE("the cheapest feasible configuration and the Pareto frontier") {
  const Json d =
      run(source("sweep:\n  parameters:\n    fleet.replicas: [1, 2, 3, 4]\n  slo: {latency_s.ttft.p99: {max: 10}}\n"));
  // all feasible: the cheapest is one replica, the fastest four; the frontier runs between them
  CHECK(d["summary"]["cheapest"]["index"] == 0);
  const Json& pareto = d["summary"]["pareto"];
  REQUIRE(pareto.size() >= 2);
  CHECK(pareto.front() == 0);
  double last_cost = -1, last_ttft = 1e9;
  for (const auto& i : pareto) {
    const Json& m = d["rows"][i.get<size_t>()]["metrics"];
    CHECK(m["cost"]["per_million_tokens_usd"].get<double>() > last_cost);
    CHECK(m["latency_s"]["ttft"]["p99"].get<double>() < last_ttft);
    last_cost = m["cost"]["per_million_tokens_usd"].get<double>();
    last_ttft = m["latency_s"]["ttft"]["p99"].get<double>();
  }
}

TEST_CASE("the table sizes its columns to a long device name, the CSV quotes it and reads back") {
  const std::string name = "acme-inference-accelerator-x1000, rev \"B\" (liquid-cooled)";
  const auto src = source("catalog:\n  devices:\n    '" + name +
                          "': {memory_gib: 96, bandwidth_gb_s: 4000, bf16_tflops: 1200, "
                          "usd_per_hour: 99999.75}\nsweep:\n  parameters:\n    device: [h100-sxm-80gb, '" +
                          name + "']\n    fleet.replicas: [1, 12]\n  replications: 2\n");
  const Json d = run(src);
  const std::string table = format_sweep_table(d);
  CAPTURE(table);
  // display columns (the ± of an interval is two bytes, one column)
  auto col = [](const std::string& s, size_t bytes) {
    size_t n = 0;
    for (size_t i = 0; i < bytes && i < s.size(); ++i) n += (static_cast<unsigned char>(s[i]) & 0xC0) != 0x80;
    return n;
  };
  std::istringstream in(table);
  std::string line;
  size_t header_end = 0, device_end = 0, rows = 0;
  while (std::getline(in, line)) {
    const size_t h = line.find(" reject  feasible");
    if (h != std::string::npos) {  // each table's header: where its columns end
      header_end = col(line, h + 7);
      device_end = col(line, line.find(" device ") + 7);
      continue;
    }
    const size_t r = line.rfind("%  ");
    if (r == std::string::npos || header_end == 0) continue;
    ++rows;
    CHECK(col(line, r + 1) == header_end);  // the reject column lines up with its header
    const size_t at =
        line.find(name) != std::string::npos ? line.find(name) + name.size() : line.find("h100-sxm-80gb") + 13;
    CHECK(col(line, at) == device_end);  // the device column too, long name or short
  }
  CHECK(rows >= 4);
  CHECK(table.find(name) != std::string::npos);  // whole, not cut

  // CSV: the name's comma and quotes survive a round trip through the reader
  std::istringstream csv(sweep_to_csv(d));
  CsvReader reader(csv, "<csv>");
  std::vector<std::string> devices;
  while (reader.next()) devices.push_back(reader.get("device"));
  CHECK(devices == std::vector<std::string>{"h100-sxm-80gb", "h100-sxm-80gb", name, name});
}

TEST_CASE("random samples of a grid are distinct, reproducible and within the grid") {
  const auto src = source(
      "sweep:\n  parameters:\n    fleet.replicas: {from: 1, to: 50}\n"
      "    engine.max_num_seqs: {from: 8, to: 512, step: 8}\n  sample: 100\n");
  const SweepSpec a = parse_sweep(src), b = parse_sweep(src);
  CHECK(a.grid_size == 50 * 64);
  REQUIRE(a.count() == 100);
  CHECK(a.sampled == b.sampled);
  for (size_t i = 1; i < a.sampled.size(); ++i) CHECK(a.sampled[i] > a.sampled[i - 1]);
  CHECK(a.sampled.back() < a.grid_size);
}

TEST_CASE("bad sweep definitions are located errors") {
  CHECK(error_of("sweep:\n  parameters:\n    fleet.replicas: []\n") ==
        "<sweep>:14:21: error: sweep.parameters.fleet.replicas: empty list of values (give at least one)");
  CHECK(error_of("sweep:\n  parameters:\n    fleet.replica: [1, 2]\n") ==
        "<sweep>:14:21: error: fleet.replica: unknown key 'replica' (did you mean 'replicas'?)");
  CHECK(error_of("sweep:\n  parameters:\n    fleet.replicas: [1, two]\n") ==
        "<sweep>:14:25: error: fleet.replicas: expected a number, got 'two'");
  CHECK(error_of("sweep:\n  parameters:\n    fleet.replicas: {from: 1, to: 1000}\n    engine.max_num_seqs: {from: 1, "
                 "to: 1000}\n"
                 "  max_configurations: 5000\n") ==
        "<sweep>:14:5: error: sweep.parameters: 1000000 configurations exceed the limit of 5000 (raise "
        "sweep.max_configurations, or sample: N random points of the grid)");
  // a sample counts as the configurations it draws, against the same limit (it was never checked)
  CHECK(error_of("sweep:\n  parameters:\n    fleet.replicas: {from: 1, to: 1000}\n    engine.max_num_seqs: {from: 1, "
                 "to: 1000}\n"
                 "  sample: 300000\n") ==
        "<sweep>:16:11: error: sweep.sample: 300000 configurations exceed the limit of 100000 (raise "
        "sweep.max_configurations, or sample: N random points of the grid)");
  CHECK(
      error_of("sweep:\n  parameters:\n    fleet.replicas: [1]\n  slo: {latency_s.ttft.p98: 1}\n")
          .find("<sweep>:15:9: error: sweep.slo.latency_s.ttft.p98: unknown metric 'latency_s.ttft.p98' (did you mean "
                "'latency_s.ttft.p9") == 0);
  CHECK(error_of("sweep:\n  parameters: {}\n").find("no parameters to sweep") != std::string::npos);
  CHECK(error_of("sweep:\n  parameters:\n    fleet.replicas: [1]\n  slo: {latency_s.ttft.p99: -1}\n") ==
        "<sweep>:15:29: error: sweep.slo.latency_s.ttft.p99: latency_s.ttft.p99 is never negative, so at most -1 "
        "can never be met");
  // a key and the block that holds it, swept together
  CHECK(error_of("sweep:\n  parameters:\n    fleet.replicas: [1, 2]\n    fleet: [{replicas: 3}]\n") ==
        "<sweep>:15:5: error: sweep.parameters.fleet: overlaps the parameter fleet.replicas: sweep a key or the "
        "block that holds it, not both");
  // a range's values keep the decimals it is written with, large or small
  const SweepSpec big =
      parse_sweep(source("sweep:\n  parameters:\n    workload.arrival.rate_per_s: {from: 10000.1, to: 10000.5, "
                         "step: 0.1}\n"));
  REQUIRE(big.params[0].values.size() == 5);
  CHECK(big.params[0].values[2] == "10000.3");
  CHECK(error_of("sweep:\n  parameters:\n    fleet.replicas: [1]\n  replications: 0\n").find("out of range") !=
        std::string::npos);
  CHECK(error_of("sweep:\n  paramters:\n    fleet.replicas: [1]\n")
            .find("unknown key 'paramters' (did you mean 'parameters'?)") != std::string::npos);
  CHECK(error_of("").find("no sweep section") != std::string::npos);
  // read once for the whole sweep: sweeping them would only repeat configurations
  CHECK(
      error_of("sweep:\n  parameters:\n    sweep.replications: [1, 2]\n") ==
      "<sweep>:14:5: error: sweep.parameters.sweep.replications: cannot be swept: a parameter overrides a scenario key "
      "in each configuration, and the sweep: section is read once for the whole sweep");
  CHECK(error_of("sweep:\n  parameters:\n    budgets.x.max: [1, 2]\n").find("the budgets: section is read once") !=
        std::string::npos);
  CHECK(error_of("sweep:\n  parameters:\n    fleet.replicas: [1, 2, 1.0]\n") ==
        "<sweep>:14:28: error: sweep.parameters.fleet.replicas: value 1.0 is listed twice (each configuration once)");
}

namespace {

const std::string kJournalled =
    "sweep:\n  parameters:\n    fleet.replicas: [1, 2, 3]\n    engine.max_batched_tokens: [128, 8192]\n"
    "  replications: 2\n  slo: {latency_s.ttft.p99: 2}\n";

// A journal file in the temporary directory, removed at the end of the test.
struct TempFile {
  std::string path;
  explicit TempFile(const std::string& name) : path(test::temp_path(name)) { std::filesystem::remove(path); }
  ~TempFile() { std::filesystem::remove(path); }
  std::vector<std::string> lines() const {
    std::ifstream f(path);
    std::vector<std::string> out;
    for (std::string l; std::getline(f, l);) out.push_back(l);
    return out;
  }
  void write(const std::string& text) const { std::ofstream(path, std::ios::binary) << text; }
};

// Run the sweep journalled to `journal` (resuming it when asked), with 1 thread.
Json run_journalled(const ScenarioSource& src, const std::string& journal, bool resume,
                    const std::atomic<bool>* stop = nullptr, std::function<void()> after_row = {}) {
  const SweepSpec spec = parse_sweep(src);
  SweepJournal j =
      resume ? SweepJournal::resume(journal, src, spec, 0, 1) : SweepJournal::create(journal, src, spec, 0, 1);
  SweepOptions o;
  o.backend = Backend::cpu;
  o.threads = 1;
  o.finished = j.finished();
  o.stop = stop;
  o.on_row = [&](const Json& row) {
    j.append(row);
    if (after_row) after_row();
  };
  return run_sweep(src, spec, o);
}

std::string resume_error(const ScenarioSource& src, const std::string& journal, uint32_t k = 0, uint32_t n = 1) {
  try {
    SweepJournal::resume(journal, src, parse_sweep(src), k, n);
  } catch (const InputError& e) {
    return e.one_line();
  }
  return "(no error)";
}

}  // namespace

TEST_CASE("a sweep resumed from a cut-short journal gives the uninterrupted document, byte for byte") {
  const auto src = source(kJournalled);
  const std::string whole = run(src, 2).dump(2);
  TempFile journal("resume.jsonl");
  CHECK(run_journalled(src, journal.path, false).dump(2) == whole);
  const std::vector<std::string> lines = journal.lines();
  REQUIRE(lines.size() == 1 + 6);  // the header, then one row per configuration
  for (size_t k = 1; k <= lines.size(); ++k) {
    for (bool torn : {false, true}) {
      if (torn && k == lines.size()) continue;
      CAPTURE(k);
      CAPTURE(torn);
      // the first k lines, as an interruption leaves them; maybe half of the next one too
      std::string text;
      for (size_t i = 0; i < k; ++i) text += lines[i] + "\n";
      if (torn) text += lines[k].substr(0, lines[k].size() / 2);
      journal.write(text);
      CHECK(SweepJournal::resume(journal.path, src, parse_sweep(src), 0, 1).finished().size() == k - 1);
      CHECK(run_journalled(src, journal.path, true).dump(2) == whole);
      CHECK(journal.lines().size() == lines.size());  // the journal is whole again
    }
  }
  // a finished journal runs nothing more and still gives the document
  CHECK(run_journalled(src, journal.path, true).dump(2) == whole);
  // starting afresh over a journal that holds work is refused
  CHECK_THROWS_WITH_AS(SweepJournal::create(journal.path, src, parse_sweep(src), 0, 1),
                       doctest::Contains("continue it with --resume"), InputError);
}

TEST_CASE("a resumed sweep stopped at once still streams the journal's rows up to the first unfinished one") {
  const auto src = source(kJournalled);
  TempFile journal("stop-stream.jsonl");
  std::atomic<bool> stop{false};
  int rows = 0;
  CHECK_THROWS_AS(run_journalled(src, journal.path, false, &stop,
                                 [&] {
                                   if (++rows == 2) stop.store(true);
                                 }),
                  SweepInterrupted);
  const SweepSpec spec = parse_sweep(src);
  SweepJournal j = SweepJournal::resume(journal.path, src, spec, 0, 1);
  std::vector<uint64_t> done;
  for (const Json& r : j.finished()) done.push_back(r["index"].get<uint64_t>());
  std::sort(done.begin(), done.end());
  std::vector<uint64_t> prefix;  // the journal's rows before the first configuration not in it
  for (uint64_t k = 0; k < done.size() && done[k] == k; ++k) prefix.push_back(k);
  REQUIRE_FALSE(prefix.empty());
  SweepOptions o;
  o.backend = Backend::cpu;
  o.threads = 1;
  o.finished = j.finished();
  std::atomic<bool> now{true};
  o.stop = &now;
  std::vector<uint64_t> streamed;
  o.ordered_row = [&](const Json& row) { streamed.push_back(row["index"].get<uint64_t>()); };
  CHECK_THROWS_AS(run_sweep(src, spec, o), SweepInterrupted);
  CHECK(streamed == prefix);
}

TEST_CASE("a stop request ends the sweep after the simulation under way, resuming completes it") {
  const auto src = source(kJournalled);
  const std::string whole = run(src, 2).dump(2);
  TempFile journal("stop.jsonl");
  std::atomic<bool> stop{false};
  int rows = 0;
  try {
    run_journalled(src, journal.path, false, &stop, [&] {
      if (++rows == 2) stop.store(true);
    });
    FAIL("the sweep did not stop");
  } catch (const SweepInterrupted& e) {
    CHECK(e.done == 2);  // one thread: it stops before the next configuration
    CHECK(e.total == 6);
  }
  CHECK(journal.lines().size() == 1 + 2);
  // stopped again at once, and then resumed to the end
  stop.store(true);
  CHECK_THROWS_AS(run_journalled(src, journal.path, true, &stop), SweepInterrupted);
  stop.store(false);
  CHECK(run_journalled(src, journal.path, true, &stop).dump(2) == whole);
  // a journal that cannot be written stops the sweep with that error
  SweepOptions o;
  o.backend = Backend::cpu;
  o.threads = 2;
  o.on_row = [](const Json&) {
    throw OutputError("j: error: writing the journal failed: No space left on device", 28);
  };
  CHECK_THROWS_AS(run_sweep(src, parse_sweep(src), o), OutputError);
}

TEST_CASE("a journal of another sweep is refused, located at its first line, a bad row at its line") {
  const auto src = source(kJournalled);
  TempFile journal("other.jsonl");
  run_journalled(src, journal.path, false);
  const std::string p = journal.path;
  CHECK(resume_error(src, p) == "(no error)");
  {
    const SweepJournal held = SweepJournal::resume(p, src, parse_sweep(src), 0, 1);  // a sweep running on it
    CHECK(resume_error(src, p) == p + ": error: the journal is in use by another running sweep");
  }
  CHECK(resume_error(src.with_overrides(parse_sets({"fleet.router=central_queue"})), p) ==
        p + ":1: error: /scenario/overrides: the journal was written with other --set overrides "
            "(journal: [], this run: [\"fleet.router=central_queue\"]); resume with the same scenario file and flags");
  CHECK(resume_error(source(std::string(kJournalled) + "  seed: 9\n"), p)
            .find(p +
                  ":1: error: /scenario/text_fnv1a64: the scenario's text has changed since the journal was written") ==
        0);
  CHECK(resume_error(src, p, 1, 2) ==
        p + ":1: error: /shard/index: the journal was written for another shard (journal: 0, this run: 1); resume with "
            "the same scenario file and flags");
  // the same text with other replications (as a --set would give) is caught by its overrides;
  // a journal header naming other replications is caught by them
  std::vector<std::string> lines = journal.lines();
  Json header = Json::parse(lines[0]);
  header["sweep"]["replications"] = 3;
  std::string text = header.dump() + "\n";
  for (size_t i = 1; i < lines.size(); ++i) text += lines[i] + "\n";
  journal.write(text);
  CHECK(resume_error(src, p) ==
        p + ":1: error: /sweep/replications: the journal was written for another number of replications (journal: 3, "
            "this run: 2); resume with the same scenario file and flags");
  // rows
  auto with_row3 = [&](const std::string& row) {
    std::string t;
    for (size_t i = 0; i < lines.size(); ++i) t += (i == 3 ? row : lines[i]) + "\n";
    journal.write(t);
    return resume_error(src, p);
  };
  Json row = Json::parse(lines[3]);
  row["index"] = "x";
  CHECK(with_row3(row.dump()) == p + ":4: error: /index: expected an integer, got \"x\"");
  CHECK(with_row3(lines[2]) ==
        p + ":4: error: /index: configuration " + Json::parse(lines[2])["index"].dump() + " is already on line 3");
  row = Json::parse(lines[3]);
  row["parameters"]["fleet.replicas"] = 7;
  CHECK(with_row3(row.dump()).find(p + ":4: error: /parameters/fleet.replicas: 7, but configuration") == 0);
  CHECK(with_row3("{\"index\": 1e999}") == p + ":4:11: error: number out of range (beyond a double): 1e999");
  journal.write("");
  CHECK(resume_error(src, p).find(p + ": error: the journal has no complete first line") == 0);
}

TEST_CASE("the simulations auto weighs: this shard's unfinished configurations x replications") {
  const ScenarioSource src = source(
      "sweep:\n  parameters:\n    fleet.replicas: [1, 2, 3, 4, 5, 6, 7]\n    engine.max_num_seqs: [64, 128, 256]\n"
      "  replications: 4\n");
  const SweepSpec spec = parse_sweep(src);
  REQUIRE(spec.count() == 21);
  SweepOptions o;
  CHECK(sweep_simulations(spec, o) == 84);
  o.shard_count = 4;
  o.shard_index = 0;  // 0, 4, 8, 12, 16, 20
  CHECK(sweep_simulations(spec, o) == 24);
  o.shard_index = 3;  // 3, 7, 11, 15, 19
  CHECK(sweep_simulations(spec, o) == 20);
  o.finished.resize(2);  // two of them journaled
  CHECK(sweep_simulations(spec, o) == 12);
  // asked for, the CPU is the CPU whatever the count; without a device auto says why it chose it
  std::string note;
  CHECK(resolve_backend(Backend::cpu, &note, 1000000, 1) == Backend::cpu);
  CHECK(note == "cpu backend");
  std::string why;
  if (!cuda_available(&why)) {
    CHECK(resolve_backend(Backend::auto_select, &note, 1000000, 1) == Backend::cpu);
    CHECK(note == "cpu backend, picked automatically: " + why);
  }
}

TEST_CASE("the table's cheapest configurations break ties in the objective by p99 TTFT, as cheapest feasible does") {
  const ScenarioSource src =
      ScenarioSource::from_file(std::string(FLEETSIM_SOURCE_DIR) + "/tests/data/tiny-sweep.yaml");
  Json d = run(src);
  // configurations 0 and 1 differ only in a limit that never bound: the same cost; make #1 the faster
  REQUIRE(d["rows"][0]["metrics"]["cost"]["per_million_tokens_usd"] ==
          d["rows"][1]["metrics"]["cost"]["per_million_tokens_usd"]);
  d["rows"][1]["metrics"]["latency_s"]["ttft"]["p99"] =
      d["rows"][0]["metrics"]["latency_s"]["ttft"]["p99"].get<double>() / 2;
  const Json m = merge_sweeps({{"tiny.json", d}});
  REQUIRE(m["summary"]["cheapest"]["index"] == 1);
  const std::string table = format_sweep_table(m);
  const size_t list = table.find("cheapest feasible configurations");
  REQUIRE(list != std::string::npos);
  const size_t first_row = table.find('\n', table.find('\n', list) + 1) + 1;  // past the column heads
  CHECK(table.substr(first_row, 6) == "     1");
}

TEST_CASE("--set adds an SLO term by its dotted report path, large integers stay whole") {
  const auto src = source("sweep:\n  parameters:\n    fleet.replicas: [1, 2]\n")
                       .with_overrides(parse_sets({"sweep.slo.latency_s.ttft.p99=0.5"}));
  const SweepSpec spec = parse_sweep(src);
  REQUIRE(spec.slo.size() == 1);
  CHECK(spec.slo[0].metric == "latency_s.ttft.p99");
  CHECK(spec.slo[0].limit == 0.5);
  // two seeds a double cannot tell apart are two values, and a row names the one that ran
  const SweepSpec seeds =
      parse_sweep(source("sweep:\n  parameters:\n    seed: [12345678901234567, 12345678901234568]\n"));
  REQUIRE(seeds.count() == 2);
  CHECK(seeds.parameters_json(1)["seed"].dump() == "12345678901234568");
  CHECK(seeds.parameters_json(0)["seed"].dump() == "12345678901234567");
  // past 10^18 points a grid cannot be numbered, sampled or not; the message says what to do
  const std::string huge =
      "    seed: {from: 1, to: 100000, step: 1}\n"
      "    workload.arrival.rate_per_s: {from: 1, to: 100000, step: 1}\n"
      "    fleet.queue_limit: {from: 1, to: 100000, step: 1}\n"
      "    workload.prompt_tokens: {from: 1, to: 2000, step: 1}\n";
  CHECK(error_of("sweep:\n  parameters:\n" + huge).find("use sample: N") != std::string::npos);
  CHECK(error_of("sweep:\n  sample: 3\n  parameters:\n" + huge).find("too many to number even when sampled") !=
        std::string::npos);
}

TEST_CASE("a sweep's fingerprint covers the bytes of the files its scenario reads") {
  // the same scenario text over a trace whose lengths changed is another sweep: its shards do not
  // merge with the first's, nor does a journal of the first resume it
  auto fingerprint = [](const std::string& rows) {
    const std::string dir = test::temp_path("fp-trace");
    std::filesystem::create_directories(dir);
    test::write_temp("fp-trace/t.csv", "arrived_at,num_prefill_tokens,num_decode_tokens\n" + rows);
    const std::string yaml = test::write_temp(
        "fp-trace/s.yaml",
        "name: t\nduration_s: 60\nwarmup_s: 0\ndevice: h100-sxm-80gb\nmodel: llama-3.1-8b\nfleet: {replicas: 1}\n"
        "workload: {arrival: {process: trace, path: t.csv}}\nsweep: {parameters: {fleet.replicas: [1, 2]}}\n");
    return parse_sweep(ScenarioSource::from_file(yaml)).fingerprint;
  };
  const std::string a = fingerprint("0.0,100,10\n1.0,200,20\n");
  CHECK(fingerprint("0.0,100,10\n1.0,200,20\n") == a);
  CHECK(fingerprint("0.0,100,30\n1.0,200,60\n") != a);
}
