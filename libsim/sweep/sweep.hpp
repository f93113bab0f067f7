// Sweeps: the same simulation over many fleet configurations x replications, on CPU threads or
// the GPU, with per-configuration means, 95% confidence intervals, SLO feasibility, the
// cheapest feasible configuration and the cost / p99-TTFT Pareto frontier. Shards of a sweep
// merge into exactly the unsharded result.
#pragma once
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "backend/backend.hpp"
#include "input/json_text.hpp"
#include "input/scenario.hpp"
#include "report/report.hpp"

namespace fleetsim {

struct SweepParam {
  std::string path;                 // dotted scenario path
  std::vector<std::string> values;  // each value as YAML text
  std::vector<Json> json_values;    // each value as it appears in reports
  std::vector<Location> origins;    // where each value was written
  bool is_range = false;            // written as {from, to, step}
};

struct SloTerm {
  std::string metric;  // a numeric path of the run report, e.g. latency_s.ttft.p99
  double limit = 0;
  bool is_max = true;  // metric <= limit (else >=)
};

// Values one parameter may take, checked before any is built: a list's every value is checked on
// the scenario (a parse each), a range's ends only.
constexpr size_t kMaxSweepListValues = 10000;
constexpr size_t kMaxSweepRangeValues = 100000;

struct SweepSpec {
  std::vector<SweepParam> params;
  uint64_t grid_size = 1;
  uint64_t sample = 0;            // 0: the full grid
  std::vector<uint64_t> sampled;  // grid indices of the sample, ascending
  uint32_t replications = 1;
  uint64_t max_configurations = 100000;
  uint64_t sample_seed = 0;
  std::vector<SloTerm> slo;
  std::string objective;  // metric minimised among feasible configurations
  // what must meet the SLO: the 95% confidence bound over replications (as `fleetsim check`
  // judges a budget; the default) or the mean alone
  bool feasible_on_bound = true;
  // sequential stopping (`sequential`, default on): a configuration stops replicating once every
  // SLO term's 95% interval lies on one side of its limit (settled_after)
  bool sequential = true;
  // stopping a run whose SLO miss is already certain (`stop_certain_misses`, default on; where a
  // run's requests are bounded ahead: sweep/settle.hpp). Its row gives the miss, not figures.
  bool stop_certain_misses = true;
  std::string fingerprint;

  uint64_t count() const { return sample ? sampled.size() : grid_size; }
  std::vector<Override> overrides(uint64_t config) const;
  Json parameters_json(uint64_t config) const;
};

// Parse and check the scenario's `sweep:` section: every parameter value is tried on the base
// scenario, so a bad path or value fails here, located in the sweep section. Throws InputError.
SweepSpec parse_sweep(const ScenarioSource& src);
// Whether the scenario (with its --set overrides) has a top-level `sweep:` key, read from the
// parsed YAML (a comment that mentions sweep: is not one). Throws InputError on malformed YAML.
bool has_sweep_section(const ScenarioSource& src);

// Mean and 95% confidence half-width over replications.
struct MeanCI {
  double mean = 0, half_width = 0;
  uint32_t n = 0;
};
MeanCI mean_ci(const std::vector<double>& xs);
double t_critical_95(uint32_t dof);

// How far a running sweep (this shard of it) has got. Configurations taken from a journal count
// as done; a configuration that cannot run counts its replications as done.
struct SweepProgress {
  uint64_t configurations_done = 0, configurations_total = 0;
  uint64_t replications_done = 0, replications_total = 0;
  uint64_t resumed = 0;  // configurations taken from a journal, not run now
  // of replications_done, those a run of other engine limits served (sweep/share.hpp), and those
  // not run because their configuration's verdict was decided (sequential stopping, a certain miss)
  uint64_t replications_shared = 0, replications_skipped = 0;
};

// The most shards a sweep splits into: one configuration each, at the most configurations a sweep may have.
constexpr long long kMaxShards = 1000000;

struct SweepOptions {
  Backend backend = Backend::auto_select;
  int threads = 0;           // 0: all hardware threads
  uint32_t shard_index = 0;  // this shard, 0-based
  uint32_t shard_count = 1;  // at most kMaxShards
  // Called about every 200 ms from a helper thread, and once at the end; may be empty.
  std::function<void(const SweepProgress&)> progress;
  // When it becomes true (a signal handler may set it), each worker stops after its current
  // simulation, a configuration left part-way is dropped, and run_sweep throws SweepInterrupted.
  // The CUDA backend checks it between waves of simulations.
  const std::atomic<bool>* stop = nullptr;
  // Called with each finished configuration's row, one call at a time (the journal); may be empty.
  std::function<void(const Json& row)> on_row;
  // Rows of configurations finished earlier (SweepJournal::finished): they are not run again.
  std::vector<Json> finished;
  // When set, every row (those in `finished` too) comes here in index order as soon as the rows
  // before it have, and run_sweep's document has the header and the summary but no "rows": the
  // sweep then holds a few rows per thread, not one per configuration.
  std::function<void(const Json& row)> ordered_row;
  // CPU backend: draw each workload's requests once per replication and share them between the
  // configurations (sweep/streams.hpp); the rows are the same either way.
  bool common_streams = true;
  // CPU backend: a run whose engine limits never decided anything serves the configurations that
  // differ from it only in limits that would not have either (sweep/share.hpp); the rows are the
  // same either way.
  bool share_runs = true;
};

// run_sweep stopped by SweepOptions::stop before every configuration had finished.
class SweepInterrupted : public std::runtime_error {
 public:
  SweepInterrupted(uint64_t done, uint64_t total) : std::runtime_error("sweep interrupted"), done(done), total(total) {}
  uint64_t done, total;  // configurations of this shard finished (journal included), and all of them
};

// Writing an output file failed (disk full, a closed pipe, ...). The message names the file.
class OutputError : public std::runtime_error {
 public:
  OutputError(const std::string& message, int err) : std::runtime_error(message), err(err) {}
  int err;  // errno
};

// The simulations this shard of the sweep would run at most (configurations not yet finished x
// replications): what `auto` weighs.
uint64_t sweep_simulations(const SweepSpec& spec, const SweepOptions& opt);
// The configurations of the sweep that are this shard's (opt.shard_index of opt.shard_count).
uint64_t shard_configurations(const SweepSpec& spec, const SweepOptions& opt);
// Which backend `auto` picks for `simulations` on `threads` CPU threads (0: all), and a sentence
// saying why (backend.hpp: auto_picks_cuda).
Backend resolve_backend(Backend requested, std::string* note, uint64_t simulations, int threads);

// The sweep document's header: every key before "summary" (what a streamed output starts with).
Json sweep_document_header(const ScenarioSource& src, const SweepSpec& spec, uint32_t shard_index,
                           uint32_t shard_count);

// Run (this shard of) the sweep. The document is kind "sweep" (docs/output-schema.md).
Json run_sweep(const ScenarioSource& src, const SweepSpec& spec, const SweepOptions& opt);

// One sweep document (a whole sweep or one shard) checked as merge checks a shard: every field of
// the kind and range fleetsim writes, every configuration of its shard once. Throws InputError
// located at `file` and the JSON path.
void check_sweep_document(const std::string& file, const Json& doc);

// Combine shard documents into the whole sweep's document. Every shard is checked against the
// sweep document schema first (docs/output-schema.md): types and ranges of every field used, the
// same sweep in every shard, shard indices 0..N-1 once each, every configuration of each shard
// present once and within range. Throws InputError naming the file and the JSON path.
Json merge_sweeps(const std::vector<std::pair<std::string, Json>>& shards);

// Read and parse a JSON file (a shard). Throws InputError for a missing, unreadable or
// non-regular file and for invalid JSON.
Json read_json_file(const std::string& path);

// The journal of a sweep (`--journal FILE`, `--resume FILE`): JSON Lines. The first line names the
// sweep (the scenario text's hash, the overrides, the base seed, the parameters, the replications,
// the fingerprint and the shard); each further line is one finished configuration's row, exactly
// as in the sweep document, appended and flushed as the configuration finishes (in completion
// order). The rows and the scenario reproduce the whole document.
class SweepJournal {
 public:
  // Start a journal at `path`. An existing non-empty file is refused (it may hold finished work:
  // resume it instead). Throws InputError or OutputError.
  static SweepJournal create(const std::string& path, const ScenarioSource& src, const SweepSpec& spec,
                             uint32_t shard_index, uint32_t shard_count);
  // Continue the journal at `path`: it must belong to the same sweep and shard (else an
  // InputError located at the journal's line). A last line cut short (an interrupted write) is
  // dropped; new rows are appended after the complete ones.
  static SweepJournal resume(const std::string& path, const ScenarioSource& src, const SweepSpec& spec,
                             uint32_t shard_index, uint32_t shard_count);

  const std::string& path() const { return path_; }
  // Rows already in the journal when it was resumed (SweepOptions::finished).
  const std::vector<Json>& finished() const { return finished_; }
  // Append one row as a line and flush it. Throws OutputError.
  void append(const Json& row);

 private:
  struct Closer {
    void operator()(std::FILE* f) const { std::fclose(f); }
  };
  std::string path_;
  std::unique_ptr<std::FILE, Closer> file_;
  std::vector<Json> finished_;
};

std::string format_sweep_table(const Json& doc, size_t max_rows = 20);
std::string sweep_to_csv(const Json& doc);

// A sweep as CSV, row by row (SweepOptions::ordered_row): the columns come from the first row that
// ran, so rows before it (configurations that cannot run) wait until it comes or the sweep ends.
// The text equals sweep_to_csv of the whole document.
class SweepCsvWriter {
 public:
  SweepCsvWriter(const Json& header, std::function<void(const std::string&)> out);
  void row(const Json& row);
  void finish();  // after the last row

 private:
  void start(const Json* measured);
  void write(const Json& row);
  std::vector<std::string> pnames_, mpaths_, cpaths_;
  std::vector<Json> waiting_;
  bool started_ = false;
  bool stop_column_ = false;  // the sweep stops certain misses: a stopped_at_s column
  std::function<void(const std::string&)> out_;
};

// A sweep as JSON Lines (--format jsonl): the header (the document without summary and rows), one
// line per row in index order, and last {"summary": ...}. Each function returns its line.
std::string sweep_jsonl_header(const Json& doc);
std::string sweep_jsonl_row(const Json& row);
std::string sweep_jsonl_summary(const Json& doc);

// The row for one configuration from its replications' tallies (exposed for tests). `reports`,
// where given, holds run_report of the first tallies already (settled_after builds them).
Json sweep_row(const SweepSpec& spec, uint64_t config, const Scenario* s, const std::vector<const Tally*>& reps,
               const std::string& infeasible_reason, std::vector<Json>* reports = nullptr);

// Sequential stopping: whether a configuration's SLO verdict is settled after the replications in
// `reps` (run in order), so that the rest need not run. Settled: at least kSequentialMin of them
// ran and every SLO term's 95% interval over them (mean ± half-width) lies wholly on one side of
// its limit, or one term's lies wholly on the wrong side, or a replication failed or lacks a
// term. Never with spec.sequential off, no SLO, or all replications run. Appends the reports of
// tallies not yet in `reports`.
constexpr uint32_t kSequentialMin = 3;
bool settled_after(const SweepSpec& spec, const Scenario& s, const std::vector<const Tally*>& reps,
                   std::vector<Json>& reports);

}  // namespace fleetsim
