// Internal to sweeps: the helpers and row checks the sweep_*.cpp files share, each in the file named beside it.
#pragma once
#include <fmt/format.h>

#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "sweep/sweep.hpp"

namespace fleetsim::sweep_detail {

// The metrics a sweep row reports: every numeric leaf of these sections of the run report.
inline const char* const kMetricSections[] = {"requests", "latency_s", "throughput", "utilization",
                                              "cost",     "capacity",  "fleet",      "classes",
                                              "pools",    "teams",     "simulation"};
// Metrics with a 95% confidence interval in every row (the default objective among them).
inline const char* const kHeadline[] = {"cost.per_request_usd", "cost.per_million_tokens_usd",
                                        "cost.per_million_output_tokens_usd", "latency_s.ttft.p99",
                                        "utilization.busy_fraction"};

// The value index of each parameter at grid point g (the last parameter varies fastest).
template <class Count>
std::vector<size_t> grid_point(uint64_t g, size_t n, Count&& count) {
  std::vector<size_t> idx(n);
  for (size_t k = n; k-- > 0;) {
    idx[k] = size_t(g % count(k));
    g /= count(k);
  }
  return idx;
}

// sweep/spec.cpp: the hash behind the sweep's fingerprint and the journal's scenario text check
uint64_t fnv1a(const std::string& s, uint64_t h = 1469598103934665603ULL);

// sweep/run.cpp: paths into report JSON; the sweep document from its header and rows
void numeric_leaves(const Json& j, const std::string& prefix, std::vector<std::pair<std::string, const Json*>>& out);
const Json* at_path(const Json& j, const std::string& path);
double num_or_nan(const Json& row, const std::string& path);
// A metric no run makes negative (latencies, counts, fractions, rates, dollars), a class's or a
// pool's too: a limit of `max` below 0 on it can never be met.
bool never_negative(const std::string& path);
Json sweep_header(const ScenarioSource& src, const SweepSpec& spec, const Scenario& base, uint32_t shard_index,
                  uint32_t shard_count);

// sweep/summary.cpp: the document's summary from its rows, added one at a time in index order
// (memory: the frontier, not the rows); the whole document from its header and rows.
class SummaryAccumulator {
 public:
  explicit SummaryAccumulator(const Json& header);
  void add(const Json& row);
  Json summary() const;

 private:
  struct Bound {
    std::string metric;
    double limit;
    bool is_max;
  };
  struct Point {
    double cost, ttft;
    uint64_t index;
  };
  static bool before(const Point& a, const Point& b);
  std::string objective_;
  uint64_t total_ = 0, rows_ = 0, feasible_ = 0, no_fit_ = 0, slo_miss_ = 0, stopped_ = 0;
  bool whole_ = true, have_cheapest_ = false, on_bound_ = true;
  uint64_t replications_ = 1, replications_run_ = 0;
  double best_ = 0, best_ttft_ = 0;
  Json cheapest_;
  std::vector<Bound> slo_;
  double closest_excess_ = std::numeric_limits<double>::infinity();
  uint64_t closest_index_ = 0;
  std::string closest_violation_;
  std::vector<Point> frontier_;                // in (cost, ttft, index) order, TTFT strictly falling
  std::map<std::string, uint64_t> step_time_;  // configurations priced by each step-time model
};
Json assemble(const Json& header, std::vector<Json> rows);

// sweep/merge.cpp: checking sweep documents (merge) and journal rows against docs/output-schema.md
std::string describe(const Json& v);
std::string pointer_token(const std::string& key);

// Throws the located error for a JSON pointer within the document being checked.
using Fail = std::function<void(const std::string& pointer, const std::string& message)>;

// A value of the document being checked, with its JSON pointer.
struct At {
  const Json& v;
  std::string ptr;
  const Fail* fail_;

  [[noreturn]] void fail(const std::string& msg) const {
    (*fail_)(ptr, msg);
    throw std::logic_error("unreachable: " + msg);
  }
  const Json& object() const {
    if (!v.is_object()) fail("expected an object, got " + describe(v));
    return v;
  }
  const Json& array() const {
    if (!v.is_array()) fail("expected an array, got " + describe(v));
    return v;
  }
  bool has(const char* k) const { return object().contains(k); }
  At operator[](const std::string& k) const {
    const auto it = object().find(k);
    if (it == v.end()) fail(fmt::format("missing key \"{}\"", k));
    return At{*it, ptr + "/" + pointer_token(k), fail_};
  }
  At item(size_t i) const { return At{array()[i], ptr + "/" + std::to_string(i), fail_}; }
  uint64_t uint(uint64_t lo = 0, uint64_t hi = std::numeric_limits<uint64_t>::max()) const {
    if (!v.is_number_integer()) fail("expected an integer, got " + describe(v));
    if (v.is_number_unsigned() || v.get<int64_t>() >= 0) {
      const uint64_t u = v.get<uint64_t>();
      if (u >= lo && u <= hi) return u;
    }
    if (hi == std::numeric_limits<uint64_t>::max())
      fail(fmt::format("expected an integer >= {}, got {}", lo, describe(v)));
    fail(fmt::format("expected an integer in [{}, {}], got {}", lo, hi, describe(v)));
  }
  const std::string& str() const {
    if (!v.is_string()) fail("expected a string, got " + describe(v));
    return v.get_ref<const std::string&>();
  }
  bool boolean() const {
    if (!v.is_boolean()) fail("expected true or false, got " + describe(v));
    return v.get<bool>();
  }
  double number() const {
    if (!v.is_number()) fail("expected a number, got " + describe(v));
    return v.get<double>();
  }
  void string_or_null() const {
    if (!v.is_string() && !v.is_null()) fail("expected a string or null, got " + describe(v));
  }
};

// What the rows of one document (or journal) must agree with.
struct SweepShape {
  std::vector<std::pair<std::string, std::vector<Json>>> params;  // path, values
  uint64_t grid_size = 1, configurations = 0;
  uint64_t replications = 1;             // per configuration, at most
  std::vector<std::string> slo_metrics;  // a row's ci95 holds these beside the headline metrics
  bool sampled = false;
  uint32_t shard_index = 0, shard_count = 1;
  // the parameters of configuration i, when known exactly (else each value is checked to be one
  // of the parameter's values)
  std::function<Json(uint64_t)> expected_parameters;
};

uint64_t check_row(const At& row, const SweepShape& sh);
std::string first_difference(const Json& a, const Json& b, const std::string& ptr);
std::string value_at(const Json& doc, const std::string& ptr);

}  // namespace fleetsim::sweep_detail
