// Owning, colocating and whole-node billing (docs/model.md, "Owning and colocating"): what owned
// devices cost per hour (capex amortized over the refresh period, energy at the measured
// utilization, space or colocation power), how replicas pack onto nodes and what that strands,
// the facility's power bound, the break-even against renting and a multi-year view.
#pragma once
#include <string>
#include <vector>

#include "base/json.hpp"
#include "core/tally.hpp"
#include "input/scenario.hpp"

namespace fleetsim {

// One part of an owned pool's cost: quantity x unit price = dollars.
struct CostComponent {
  std::string name;  // capex, energy, space, colocation
  double quantity = 0;
  std::string unit;  // device-hours, kWh, node-months, kW-months
  double usd_per_unit = 0;
  double usd() const { return quantity * usd_per_unit; }
};

// One year of the multi-year view: owning (capex as paid, opex) against renting the same hours.
struct OwnershipYear {
  int year = 0;
  double capex_paid_usd = 0, amortized_capex_usd = 0, energy_usd = 0, space_usd = 0;
  double rent_usd = 0;  // the owned replicas' provisioned hours rented on demand that year
  double own_cumulative_usd = 0, rent_cumulative_usd = 0;
};

struct OwnershipLedger {
  OwnershipSpec::Kind kind = OwnershipSpec::Kind::rented;
  int owned_replicas = 0, owned_nodes = 0;
  double units_per_node = 0;
  double owned_unit_hours = 0;        // owned units x window, stranded ones included
  double stranded_unit_hours = 0;     // units on owned or billed nodes no replica can use
  double provisioned_unit_hours = 0;  // owned replicas' provisioned time
  double busy_unit_hours = 0;
  std::vector<CostComponent> components;  // sum = the owned pricing line's dollars
  double on_demand_usd_per_unit_hour = 0;
  double rent_same_hours_usd = 0;  // the owned replicas' provisioned hours at the on-demand price
  // owning costs the same as renting on demand for this share of the owned hours
  double break_even_utilization = 0;
  int64_t nodes_per_rack = 0, nodes_obtainable = 0;  // facility bound (0: none; millions of small nodes fit)
  double node_peak_kw = 0;
  std::vector<OwnershipYear> years;
  // repair: failures in the window, the replica time they spent there waiting for a device, and
  // the share of the owned replicas' time that was not lost so
  int spares = 0;
  double repair_days = 0, failures = 0, awaiting_device_hours = 0, availability = 1;
  double usd() const;
};

// Node-billed (rented) pools: node-hours and stranded units of a fixed-size pool.
struct NodeBilling {
  int nodes = 0;
  double node_hours = 0, billed_unit_hours = 0, stranded_unit_hours = 0;
};

// The owned line of a pool's ledger. `provisioned_s` and `unused_s` are the owned replicas'
// provisioned and never-provisioned replica time; `busy_unit_hours` the pool's busy units.
OwnershipLedger owned_costs(const PoolSpec& P, const PoolTally& pt, double window_s, double busy_unit_hours);
NodeBilling node_billing(const PoolSpec& P, double window_s);

Json ownership_json(const OwnershipLedger& o);

}  // namespace fleetsim
