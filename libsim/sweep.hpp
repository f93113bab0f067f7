// Sweeps: the same simulation over many fleet configurations x replications, on CPU threads or
// the GPU, with per-configuration means, 95% confidence intervals, SLO feasibility, the
// cheapest feasible configuration and the cost / p99-TTFT Pareto frontier. Shards of a sweep
// merge into exactly the unsharded result.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "backend.hpp"
#include "report.hpp"
#include "scenario.hpp"

namespace fleetsim {

struct SweepParam {
  std::string path;                 // dotted scenario path
  std::vector<std::string> values;  // each value as YAML text
  std::vector<Json> json_values;    // each value as it appears in reports
  std::vector<Location> origins;    // where each value was written
};

struct SloTerm {
  std::string metric;  // a numeric path of the run report, e.g. latency_s.ttft.p99
  double limit = 0;
  bool is_max = true;  // metric <= limit (else >=)
};

struct SweepSpec {
  std::vector<SweepParam> params;
  uint64_t grid_size = 1;
  uint64_t sample = 0;  // 0: the full grid
  std::vector<uint64_t> sampled;  // grid indices of the sample, ascending
  uint32_t replications = 1;
  uint64_t max_configurations = 100000;
  uint64_t sample_seed = 0;
  std::vector<SloTerm> slo;
  std::string objective;  // metric minimised among feasible configurations
  std::string fingerprint;

  uint64_t count() const { return sample ? sampled.size() : grid_size; }
  std::vector<Override> overrides(uint64_t config) const;
  Json parameters_json(uint64_t config) const;
};

// Parse and check the scenario's `sweep:` section: every parameter value is tried on the base
// scenario, so a bad path or value fails here, located in the sweep section. Throws InputError.
SweepSpec parse_sweep(const ScenarioSource& src);

// Mean and 95% confidence half-width over replications.
struct MeanCI {
  double mean = 0, half_width = 0;
  uint32_t n = 0;
};
MeanCI mean_ci(const std::vector<double>& xs);
double t_critical_95(uint32_t dof);

// How far a running sweep (this shard of it) has got. A configuration that cannot run counts its
// replications as done.
struct SweepProgress {
  uint64_t configurations_done = 0, configurations_total = 0;
  uint64_t replications_done = 0, replications_total = 0;
};

struct SweepOptions {
  Backend backend = Backend::auto_select;
  int threads = 0;           // 0: all hardware threads
  uint32_t shard_index = 0;  // this shard, 0-based
  uint32_t shard_count = 1;
  // Called about every 200 ms from a helper thread, and once at the end; may be empty.
  std::function<void(const SweepProgress&)> progress;
};

// Which backend `auto` picks, and a sentence saying why.
Backend resolve_backend(Backend requested, std::string* note);

// Run (this shard of) the sweep. The document is kind "sweep" (docs/output-schema.md).
Json run_sweep(const ScenarioSource& src, const SweepSpec& spec, const SweepOptions& opt);

// Combine shard documents into the whole sweep's document. Every shard is checked against the
// sweep document schema first (docs/output-schema.md): types and ranges of every field used, the
// same sweep in every shard, shard indices 0..N-1 once each, every configuration of each shard
// present once and within range. Throws InputError naming the file and the JSON path.
Json merge_sweeps(const std::vector<std::pair<std::string, Json>>& shards);

// Parse JSON text; a syntax error or an out-of-range number is an InputError located at
// file:line:column (line counted from first_line).
Json parse_json_located(const std::string& text, const std::string& file, int first_line = 1);

// Read and parse a JSON file (a shard). Throws InputError for a missing, unreadable or
// non-regular file and for invalid JSON.
Json read_json_file(const std::string& path);


std::string format_sweep_table(const Json& doc, size_t max_rows = 20);
std::string sweep_to_csv(const Json& doc);

// The row for one configuration from its replications' tallies (exposed for tests).
Json sweep_row(const SweepSpec& spec, uint64_t config, const Scenario* s, const std::vector<const Tally*>& reps,
               const std::string& infeasible_reason);

}  // namespace fleetsim
