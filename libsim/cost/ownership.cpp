#include "cost/ownership.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/state.hpp"

namespace fleetsim {

namespace {
constexpr double kHoursPerYear = 8766.0;  // 365.25 days
constexpr double kHoursPerMonth = kHoursPerYear / 12.0;
}  // namespace

double OwnershipLedger::usd() const {
  double u = 0;
  for (const auto& c : components) u += c.usd();
  return u;
}

OwnershipLedger owned_costs(const PoolSpec& P, const PoolTally& pt, double window_s, double busy_unit_hours) {
  const OwnershipSpec& O = P.ownership;
  OwnershipLedger o;
  o.kind = O.kind;
  o.owned_replicas = P.committed_replicas;
  o.owned_nodes = P.nodes_for(o.owned_replicas);
  o.units_per_node = P.units_per_node();
  const double wh = window_s / 3600.0, f = P.units_per_replica() / 3600.0;
  o.owned_unit_hours = double(o.owned_nodes) * o.units_per_node * wh;
  o.provisioned_unit_hours = (pt.replica_s - pt.excess_s) * f;
  o.stranded_unit_hours = std::max(0.0, o.owned_unit_hours - o.provisioned_unit_hours - pt.committed_unused_s * f);
  // burst replicas rented beyond the owned ones share the busy time in proportion to their hours
  const double all_prov = pt.replica_s * f;
  o.busy_unit_hours = all_prov > 0 ? busy_unit_hours * o.provisioned_unit_hours / all_prov : 0.0;

  const double share = P.unit_device_share();
  o.components.push_back({"capex", o.owned_unit_hours, P.partition.empty() ? "device-hours" : "slice-hours",
                          O.node_capex_usd / o.units_per_node / (O.refresh_years * kHoursPerYear)});
  const double kwh = (o.busy_unit_hours * O.busy_kw_per_device * share +
                      (o.owned_unit_hours - o.busy_unit_hours) * O.idle_kw_per_device * share +
                      double(o.owned_nodes) * wh * O.host_kw_per_node) *
                     O.pue;
  // spares on the shelf are bought devices too: their capex, no energy
  const double device_capex_h =
      O.node_capex_usd / double(P.device.devices_per_node) / (O.refresh_years * kHoursPerYear);
  if (O.spares > 0) o.components.push_back({"spares", double(O.spares) * wh, "device-hours", device_capex_h});
  if (O.usd_per_kwh > 0) o.components.push_back({"energy", kwh, "kWh", O.usd_per_kwh});
  o.node_peak_kw = double(P.device.devices_per_node) * O.busy_kw_per_device + O.host_kw_per_node;
  if (O.kind == OwnershipSpec::Kind::owned && O.space_usd_per_node_month > 0)
    o.components.push_back(
        {"space", double(o.owned_nodes) * wh / kHoursPerMonth, "node-months", O.space_usd_per_node_month});
  if (O.kind == OwnershipSpec::Kind::colocated)
    o.components.push_back(
        {"colocation", double(o.owned_nodes) * o.node_peak_kw * wh / kHoursPerMonth, "kW-months", O.usd_per_kw_month});

  o.spares = O.spares;
  o.repair_days = O.repair_days;
  o.failures = pt.owned_failures;  // owned devices only: a rented one that fails is the cloud's to replace
  o.awaiting_device_hours = pt.cold_stage_s[kAwaitingDevice] * f;
  const double owned_replica_h = double(o.owned_replicas) * P.units_per_replica() * wh;
  o.availability = owned_replica_h > 0 ? std::max(0.0, 1.0 - o.awaiting_device_hours / owned_replica_h) : 1.0;
  o.on_demand_usd_per_unit_hour = P.usd_per_hour;
  o.rent_same_hours_usd = o.provisioned_unit_hours * P.usd_per_hour;
  // (free on-demand capacity: owning never breaks even, NaN, null in the report)
  o.break_even_utilization = o.owned_unit_hours > 0 && P.usd_per_hour > 0
                                 ? o.usd() / (o.owned_unit_hours * P.usd_per_hour)
                                 : std::numeric_limits<double>::quiet_NaN();
  if (O.rack_kw > 0 && o.node_peak_kw > 0) {
    o.nodes_per_rack = int64_t(std::min(1e15, std::floor(O.rack_kw / o.node_peak_kw + 1e-9)));
    o.nodes_obtainable = o.nodes_per_rack * int64_t(O.racks);
  }

  // the years: capex as paid (at the start and at every refresh), the window's running costs
  // scaled to a year, against renting the owned replicas' provisioned hours on demand
  const double per_year = wh > 0 ? kHoursPerYear / wh : 0.0;
  double capex_h = 0;
  for (const auto& c : o.components)
    if (c.name == "capex" || c.name == "spares") capex_h += c.usd();
  const int years = O.years > 0 ? O.years : std::max(1, int(std::ceil(O.refresh_years - 1e-9)));
  double own = 0, rent = 0;
  for (int y = 1; y <= years; ++y) {
    OwnershipYear Y;
    Y.year = y;
    const int buys =
        int(std::ceil(double(y) / O.refresh_years - 1e-9)) - int(std::ceil(double(y - 1) / O.refresh_years - 1e-9));
    Y.capex_paid_usd = double(buys) * (double(o.owned_nodes) * O.node_capex_usd +
                                       double(O.spares) * O.node_capex_usd / double(P.device.devices_per_node));
    Y.amortized_capex_usd = capex_h * per_year;
    for (const auto& c : o.components)
      if (c.name == "energy")
        Y.energy_usd = c.usd() * per_year;
      else if (c.name != "capex" && c.name != "spares")
        Y.space_usd = c.usd() * per_year;
    Y.rent_usd = o.rent_same_hours_usd * per_year * std::pow(1.0 + O.rent_price_change_per_year, double(y - 1));
    own += Y.capex_paid_usd + Y.energy_usd + Y.space_usd;
    rent += Y.rent_usd;
    Y.own_cumulative_usd = own;
    Y.rent_cumulative_usd = rent;
    o.years.push_back(Y);
  }
  return o;
}

NodeBilling node_billing(const PoolSpec& P, double window_s) {
  NodeBilling b;
  b.nodes = P.nodes_for(P.replicas);
  b.node_hours = double(b.nodes) * window_s / 3600.0;
  b.billed_unit_hours = b.node_hours * P.units_per_node();
  return b;
}

Json ownership_json(const OwnershipLedger& o) {
  Json j;
  j["model"] = o.kind == OwnershipSpec::Kind::colocated ? "colocated" : "owned";
  j["owned_replicas"] = o.owned_replicas;
  j["owned_nodes"] = o.owned_nodes;
  j["units_per_node"] = o.units_per_node;
  j["owned_device_hours"] = o.owned_unit_hours;
  j["stranded_device_hours"] = o.stranded_unit_hours;
  j["provisioned_device_hours"] = o.provisioned_unit_hours;
  j["busy_device_hours"] = o.busy_unit_hours;
  Json comps = Json::array();
  for (const auto& c : o.components)
    comps.push_back({{"name", c.name},
                     {"quantity", c.quantity},
                     {"unit", c.unit},
                     {"usd_per_unit", c.usd_per_unit},
                     {"usd", c.usd()}});
  j["components"] = comps;
  j["usd"] = o.usd();
  j["usd_per_device_hour"] = o.owned_unit_hours > 0 ? o.usd() / o.owned_unit_hours : 0.0;
  j["on_demand_usd_per_device_hour"] = o.on_demand_usd_per_unit_hour;
  j["rent_same_hours_usd"] = o.rent_same_hours_usd;
  j["break_even_utilization"] = std::isnan(o.break_even_utilization) ? Json(nullptr) : Json(o.break_even_utilization);
  j["break_even_note"] = "owning costs what renting the same devices on demand would for this share of the owned hours";
  if (o.repair_days > 0)
    j["repair"] = {{"repair_days", o.repair_days},
                   {"spares", o.spares},
                   {"failures", o.failures},
                   {"awaiting_device_hours", o.awaiting_device_hours},
                   {"availability", o.availability},
                   {"note",
                    "device-hours (a replica's devices each) within the window that failures spent waiting "
                    "for a spare or a repaired device; availability = 1 - that / the owned replicas' device-hours"}};
  if (o.nodes_obtainable > 0 || o.nodes_per_rack > 0)
    j["facility"] = {{"node_peak_kw", o.node_peak_kw},
                     {"nodes_per_rack", o.nodes_per_rack},
                     {"nodes_obtainable", o.nodes_obtainable}};
  Json ys = Json::array();
  int first = 0;  // the first year from which owning has cost less in total through the last
  for (const auto& y : o.years) {
    ys.push_back({{"year", y.year},
                  {"capex_paid_usd", y.capex_paid_usd},
                  {"amortized_capex_usd", y.amortized_capex_usd},
                  {"energy_usd", y.energy_usd},
                  {"space_usd", y.space_usd},
                  {"own_cumulative_usd", y.own_cumulative_usd},
                  {"rent_usd", y.rent_usd},
                  {"rent_cumulative_usd", y.rent_cumulative_usd}});
    if (y.own_cumulative_usd <= y.rent_cumulative_usd) {
      if (!first) first = y.year;
    } else {
      first = 0;  // a refresh's capex put renting ahead again
    }
  }
  j["years"] = ys;
  j["years_note"] = "the measured window's running costs and rented hours scaled linearly to a year";
  j["owning_cheaper_from_year"] = first ? Json(first) : Json(nullptr);
  return j;
}

}  // namespace fleetsim
