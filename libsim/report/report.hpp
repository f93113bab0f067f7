// From raw tallies to the metrics users read, and the three output formats.
#pragma once
#include <string>

#include "base/json.hpp"
#include "core/tally.hpp"
#include "input/scenario.hpp"

namespace fleetsim {

constexpr int kSchemaVersion = 1;

struct LatencyStats {
  uint64_t count = 0;
  double mean = 0, p50 = 0, p90 = 0, p95 = 0, p99 = 0, p999 = 0, max = 0;
};

LatencyStats latency_stats(const Histogram& h);
// The distribution as [seconds, fraction at or below] points, for a chart (docs/output-schema.md).
Json hist_cdf(const Histogram& h);

// The `fleetsim run` result document (docs/output-schema.md).
Json run_report(const Scenario& s, const Tally& t);

// A pool's scenario.step_time and scenario.engine sections (step_time.cpp).
Json step_time_json(const PoolSpec& P);
struct Ledger;
// What prefix caching saved pool i, and its caches' tiers (null where nothing was cached;
// prefix_cache.cpp).
Json prefix_cache_json(const Scenario& s, const Tally& t, const Ledger& ledger, size_t i);
Json engine_json(const PoolSpec& P);

// Static capacity document (`fleetsim capacity`, and the capacity block of a run).
Json capacity_json(const Capacity& c, int64_t context_tokens, int block_tokens);

std::string format_run_table(const Json& report);
// Where a run's step times came from and their measured error, or "uncalibrated": one sentence
// from the report's scenario block ("" without a step_time); the table's "steps" line.
std::string step_time_summary(const Json& scenario);
// The step-time model of every pool in one line: the sentence all share, or each pool's
// ("name: ...; name: ..."): a sweep row's step_time (step_time.cpp).
std::string step_time_line(const Scenario& s);
// How a pool's devices read: "4 x h200-141gb" (tensor parallelism counts its devices), MIG slices
// by the slice ("7 x h100-sxm-80gb:1g.10gb"), replicas sharing whole devices by what they share
// ("1 x h100-sxm-80gb shared by 4 replicas"). `times` is " x " or " × ".
std::string fleet_label(int devices, int replicas, int replicas_per_device, const std::string& device,
                        const std::string& times);
// A run document read back: every value has the type fleetsim writes at its place (a number or
// null for a metric); an InputError naming the JSON path otherwise.
void check_run_document(const Json& doc, const std::string& file);
// A copy of `j` whose strings and keys are printable(): text for a terminal.
Json printable_json(const Json& j);
std::string format_capacity_table(const Json& cap, const std::string& title);

// Flatten a JSON document to "a.b.c" -> value pairs, for CSV.
std::string json_to_csv(const Json& doc);

}  // namespace fleetsim
