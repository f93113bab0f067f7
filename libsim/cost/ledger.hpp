// The cost ledger: every billed device-hour in exactly one bucket, every dollar on a line that is
// rate x hours, per pool, class and team. The `cost` blocks of a report, the ledger CSV and the
// FOCUS export are all read from it, so they agree by construction (docs/model.md, "The ledger").
#pragma once
#include <algorithm>
#include <array>
#include <string>
#include <vector>

#include "base/json.hpp"
#include "core/tally.hpp"
#include "cost/ownership.hpp"
#include "input/scenario.hpp"

namespace fleetsim {

// Where a billed device-hour went. Busy time is split into prefill and decode by the step time
// each used, after carving out the share spent on work that was thrown away.
// Stranded: devices on billed or owned nodes that no replica can use (whole-node packing).
enum class Bucket : int {
  busy_prefill,
  busy_decode,
  lost_work,
  cold_start,
  idle_headroom,
  idle_waste,
  committed_unused,
  stranded
};
constexpr int kBuckets = 8;
const char* bucket_name(Bucket b);
inline bool bucket_is_idle(Bucket b) { return b >= Bucket::cold_start; }

// One pricing line: hours at a list and an effective (discounted) rate.
struct PricingLine {
  std::string category;  // committed, on_demand, spot, owned, colocated
  double device_hours = 0, list_usd_per_hour = 0, effective_usd_per_hour = 0;
  double list_usd() const { return device_hours * list_usd_per_hour; }
  double effective_usd() const { return device_hours * effective_usd_per_hour; }
};

// Time and money of one pool, or of several added together.
struct CostBlock {
  std::array<double, kBuckets> hours{};  // device-hours by bucket
  std::array<double, kBuckets> usd{};    // effective dollars by bucket
  std::vector<PricingLine> lines;
  // the cold_start bucket by stage, in proportion to the stage durations of the starts
  std::array<double, kColdStages> cold_stage_hours{};
  double busy_s = 0, input_busy_s = 0;  // device time in steps, and of it on prompts
  double input_usd_ = -1;               // several pools: the sum of theirs (< 0: one pool)
  double completed = 0, input_tokens = 0, output_tokens = 0;
  double billed_hours() const;
  double list_usd() const;
  double effective_usd() const;
  double idle_usd() const;
  // One definition of the input/output split everywhere: by the step time prompts and outputs used.
  double input_usd() const;
  double output_usd() const { return std::max(0.0, effective_usd() - input_usd()); }
};

struct PoolLedger {
  std::string name, device;
  bool cpu_instance = false;      // its hours bought CPU instances, not GPUs
  double committed_discount = 0;  // > 0 when the pool holds committed capacity
  CostBlock cost;
  bool owned = false;
  OwnershipLedger ownership;  // owned or colocated devices: the owned line's parts and the comparison
  int nodes = 0;              // whole nodes billed (owned, or billing: node)
  // an autoscaled pool billed by the node: node-hours up, and of those the empty nodes' hours
  // kept by a pinned pod or waiting for the cluster to remove them
  bool nodes_tracked = false;
  double node_hours = 0, pinned_node_hours = 0, unneeded_node_hours = 0, unschedulable = 0;
  bool cpu_fallback = false;  // fleet.faults.cpu_fallback: its replicas' time on the host CPU
  double fallback_hours = 0, fallback_cpu_busy_hours = 0;  // device-hours (in the idle buckets)
};

// A class's share of one pool it uses: its entry pool, or the pool that decodes what its entry
// pool prefills (disaggregation).
struct ClassPoolShare {
  int pool = 0;      // index into Ledger::pools
  double share = 0;  // of the pool's hours: its busy time there over all classes'
  double busy_hours = 0, idle_share_hours = 0, busy_usd = 0, idle_share_usd = 0;
  double input_usd = 0;  // of busy and idle, by the step time its prompts used there
};

struct ClassLedger {
  std::string name, pool, team;
  std::string decode_pool;      // disaggregated: the pool that decodes its prefills (empty: none)
  double busy_hours = 0;        // its share of its pools' busy device-hours
  double idle_share_hours = 0;  // its share of their idle, cold-start and unused committed hours
  double busy_usd = 0, idle_share_usd = 0;
  double busy_s = 0, input_busy_s = 0;
  double completed = 0, input_tokens = 0, output_tokens = 0;
  std::vector<ClassPoolShare> parts;  // per pool; the fields above are their sums
  double usd() const { return busy_usd + idle_share_usd; }
  double input_usd() const;
  double output_usd() const { return std::max(0.0, usd() - input_usd()); }
};

struct Ledger {
  double window_s = 0;
  std::vector<PoolLedger> pools;
  std::vector<ClassLedger> classes;
  CostBlock total;  // the pools added together
};

Ledger make_ledger(const Scenario& s, const Tally& t);

// The `ledger` block of a run report and the `cost` blocks derived from it.
Json ledger_json(const Ledger& l);
Json cost_json(const CostBlock& c);
Json class_cost_json(const ClassLedger& c);

// One row per (scope, name, bucket or pricing line): device-hours x rate = dollars.
std::string ledger_csv(const Ledger& l);
// FinOps FOCUS 1.2 rows: per pool, pricing line and class, and a pool's unused commitment on a
// row of its own; the billing period is the run from `start_unix_s`, each charge its measured window.
std::string focus_csv(const Ledger& l, const Scenario& s, double start_unix_s);
// A UTC date (YYYY-MM-DD) or time (YYYY-MM-DDTHH:MM:SSZ) as Unix seconds; an InputError naming
// `what` (a flag) otherwise.
double parse_utc_time(const std::string& text, const std::string& what);
// The columns focus_csv writes, in order: FOCUS 1.2's mandatory ones and the conditional ones it fills.
const std::vector<std::string>& focus_columns();

}  // namespace fleetsim
