// Budgets for CI: thresholds on report metrics, judged on a 95% bound over replications, over
// the whole run or its worst window; and the load headroom at which every budget still holds.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "base/error.hpp"
#include "input/scenario.hpp"
#include "report/report.hpp"

namespace fleetsim {

// Measurement windows one budget may cut the run into (window_s >= (duration_s - warmup_s) / this).
constexpr int kMaxBudgetWindows = 1000;

struct Budget {
  std::string name;    // its key under `budgets:`
  std::string metric;  // a path in the run report, e.g. latency_s.ttft.p99
  std::string cls;     // a request class ("" : the whole scenario)
  bool is_max = true;  // max: the value must stay at or below the limit; min: at or above
  double limit = 0;
  double window_s = 0;  // > 0: judge the worst window of this length instead of the whole run
  Location where;       // where the budget was written (or the --set that changed it)
  // where its metric, class and window_s were written: a --set that changed one is named there
  Location metric_at, class_at, window_at;
  std::string path() const;  // the report path it reads
};

struct BudgetSpec {
  std::vector<Budget> budgets;
  int replications = 5;
  std::string source;  // the file they came from
};

// The `budgets:` section of `file` (a budgets file, or the scenario itself), with the overrides
// among `sets` that are the budgets' (`budgets.NAME.KEY=` or `budgets=`) applied. Throws
// InputError; `require` = false returns an empty spec when the section is absent.
BudgetSpec parse_budgets(const std::string& file, const std::vector<std::string>& sets, bool require = true,
                         bool budgets_only = false);
// The same from `text` already read from `file` (a pipe or a FIFO can be read only once).
// `budgets_only`: the text is a budgets file, whose only key is `budgets`.
BudgetSpec parse_budgets_text(const std::string& text, const std::string& file, const std::vector<std::string>& sets,
                              bool require = true, bool budgets_only = false);

// Every budget's metric and class checked against the report `s` gives (no simulation is run).
void validate_budgets(const Scenario& s, const BudgetSpec& spec);

// Every --set that is not a budget's: for the scenario.
std::vector<std::string> scenario_sets(const std::vector<std::string>& sets);

struct BudgetOutcome {
  Budget budget;
  double mean = 0, half_width = 0;  // over replications (of the worst window, with window_s)
  double bound = 0;                 // mean + half_width for a max budget, mean - half_width for a min one
  double window_start_s = -1;       // the worst window's start (window_s > 0)
  int windows = 0;
  bool interval = true;  // false: one replication, no interval (the bound is its value)
  bool pass = false;
  bool has_value = true;  // false: the metric had no value (e.g. no requests completed)
  double baseline = 0;    // with a baseline scenario: its value
  bool has_baseline = false;
};

struct CheckResult {
  std::vector<BudgetOutcome> outcomes;
  bool pass = false;
  // the largest arrival multiplier (to 2%) at which every budget still holds; < 0 when it was
  // not measured (a trace-replay class), `headroom_capped` when it holds even at the cap
  double headroom = -1;
  bool headroom_capped = false;
  std::string headroom_note;
  int simulations = 0;
};

// Told of each finished simulation (from worker threads, one call at a time): how many so far, and
// what they are for ("budgets", "baseline", "headroom at 1.50x").
using CheckProgress = std::function<void(int simulations, const std::string& stage)>;

// Runs the scenario's replications (and windows) on `threads` CPU threads and judges every budget.
// `baseline` (may be null): the same budgets evaluated on another scenario, for comparison.
CheckResult check_budgets(const Scenario& s, const BudgetSpec& spec, const Scenario* baseline, int threads,
                          bool headroom = true, const CheckProgress& progress = {});

Json check_json(const CheckResult& r, const Scenario& s, const BudgetSpec& spec);
std::string check_table(const CheckResult& r, const Scenario& s, const BudgetSpec& spec);
std::string check_markdown(const CheckResult& r, const Scenario& s, const BudgetSpec& spec);
std::string check_junit(const CheckResult& r, const Scenario& s, const BudgetSpec& spec);
// GitHub Actions workflow commands: an ::error line per violated budget, at its file and line.
std::string check_annotations(const CheckResult& r);
// The same three outputs when the check could not run (a bad scenario or budgets file): one
// failed case at the error's file and line, so a pipeline shows what to fix.
std::string check_error_markdown(const InputError& e);
std::string check_error_junit(const InputError& e);
std::string check_error_annotation(const InputError& e);

}  // namespace fleetsim
