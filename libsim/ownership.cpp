#include "ownership.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "core/state.hpp"
#include "scenario_internal.hpp"

namespace fleetsim {

namespace {
constexpr double kHoursPerYear = 8766.0;  // 365.25 days
constexpr double kHoursPerMonth = kHoursPerYear / 12.0;

// A billed unit's share of one device: a MIG slice is a part of one, anything else a whole one.
double unit_device_share(const PoolSpec& P) { return P.partition.empty() ? 1.0 : 1.0 / P.replicas_per_device; }
}  // namespace

double PoolSpec::units_per_replica() const { return devices() > 1 ? double(devices()) : 1.0 / shared_by(); }

double PoolSpec::units_per_node() const { return double(device.devices_per_node) / unit_device_share(*this); }

int PoolSpec::replicas_per_node() const {
  const double u = units_per_replica(), U = units_per_node();
  return u <= U ? std::max(1, int(std::floor(U / u + 1e-9))) : 1;
}

int PoolSpec::nodes_per_replica() const {
  const double u = units_per_replica(), U = units_per_node();
  return u <= U ? 1 : int(std::ceil(u / U - 1e-9));  // a replica larger than a node spans whole nodes
}

int PoolSpec::nodes_for(int n) const {
  if (n <= 0) return 0;
  const int per_node = replicas_per_node();
  return (n + per_node - 1) / per_node * nodes_per_replica();
}

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

  const double share = unit_device_share(P);
  o.components.push_back({"capex", o.owned_unit_hours, P.partition.empty() ? "device-hours" : "slice-hours",
                          O.node_capex_usd / o.units_per_node / (O.refresh_years * kHoursPerYear)});
  const double kwh = (o.busy_unit_hours * O.busy_kw_per_device * share +
                      (o.owned_unit_hours - o.busy_unit_hours) * O.idle_kw_per_device * share +
                      double(o.owned_nodes) * wh * O.host_kw_per_node) *
                     O.pue;
  // spares on the shelf are bought devices too: their capex, no energy
  const double device_capex_h = O.node_capex_usd / double(P.device.devices_per_node) / (O.refresh_years * kHoursPerYear);
  if (O.spares > 0) o.components.push_back({"spares", double(O.spares) * wh, "device-hours", device_capex_h});
  if (O.usd_per_kwh > 0) o.components.push_back({"energy", kwh, "kWh", O.usd_per_kwh});
  o.node_peak_kw = double(P.device.devices_per_node) * O.busy_kw_per_device + O.host_kw_per_node;
  if (O.kind == OwnershipSpec::Kind::owned && O.space_usd_per_node_month > 0)
    o.components.push_back({"space", double(o.owned_nodes) * wh / kHoursPerMonth, "node-months", O.space_usd_per_node_month});
  if (O.kind == OwnershipSpec::Kind::colocated)
    o.components.push_back(
        {"colocation", double(o.owned_nodes) * o.node_peak_kw * wh / kHoursPerMonth, "kW-months", O.usd_per_kw_month});

  o.spares = O.spares;
  o.repair_days = O.repair_days;
  o.failures = pt.interruptions;
  o.awaiting_device_hours = pt.cold_stage_s[kAwaitingDevice] * f;
  const double owned_replica_h = double(o.owned_replicas) * P.units_per_replica() * wh;
  o.availability = owned_replica_h > 0 ? std::max(0.0, 1.0 - o.awaiting_device_hours / owned_replica_h) : 1.0;
  o.on_demand_usd_per_unit_hour = P.usd_per_hour;
  o.rent_same_hours_usd = o.provisioned_unit_hours * P.usd_per_hour;
  o.break_even_utilization = o.owned_unit_hours > 0 && P.usd_per_hour > 0 ? o.usd() / (o.owned_unit_hours * P.usd_per_hour) : 0.0;
  if (O.rack_kw > 0 && o.node_peak_kw > 0) {
    o.nodes_per_rack = int(std::floor(O.rack_kw / o.node_peak_kw + 1e-9));
    o.nodes_obtainable = o.nodes_per_rack * O.racks;
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
    const int buys = int(std::ceil(double(y) / O.refresh_years - 1e-9)) - int(std::ceil(double(y - 1) / O.refresh_years - 1e-9));
    Y.capex_paid_usd = double(buys) * (double(o.owned_nodes) * O.node_capex_usd +
                                       double(O.spares) * O.node_capex_usd / double(P.device.devices_per_node));
    Y.amortized_capex_usd = capex_h * per_year;
    for (const auto& c : o.components)
      if (c.name == "energy") Y.energy_usd = c.usd() * per_year;
      else if (c.name != "capex" && c.name != "spares") Y.space_usd = c.usd() * per_year;
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
    comps.push_back({{"name", c.name}, {"quantity", c.quantity}, {"unit", c.unit}, {"usd_per_unit", c.usd_per_unit}, {"usd", c.usd()}});
  j["components"] = comps;
  j["usd"] = o.usd();
  j["usd_per_device_hour"] = o.owned_unit_hours > 0 ? o.usd() / o.owned_unit_hours : 0.0;
  j["on_demand_usd_per_device_hour"] = o.on_demand_usd_per_unit_hour;
  j["rent_same_hours_usd"] = o.rent_same_hours_usd;
  j["break_even_utilization"] = o.break_even_utilization;
  j["break_even_note"] = "owning costs what renting the same devices on demand would for this share of the owned hours";
  if (o.repair_days > 0)
    j["repair"] = {{"repair_days", o.repair_days},
                   {"spares", o.spares},
                   {"failures", o.failures},
                   {"awaiting_device_hours", o.awaiting_device_hours},
                   {"availability", o.availability},
                   {"note", "replica time within the window that failures spent waiting for a spare or a repaired "
                            "device; availability = 1 - that / the owned replicas' hours"}};
  if (o.nodes_obtainable > 0 || o.nodes_per_rack > 0)
    j["facility"] = {{"node_peak_kw", o.node_peak_kw}, {"nodes_per_rack", o.nodes_per_rack}, {"nodes_obtainable", o.nodes_obtainable}};
  Json ys = Json::array();
  int first = 0;
  for (const auto& y : o.years) {
    ys.push_back({{"year", y.year},
                  {"capex_paid_usd", y.capex_paid_usd},
                  {"amortized_capex_usd", y.amortized_capex_usd},
                  {"energy_usd", y.energy_usd},
                  {"space_usd", y.space_usd},
                  {"own_cumulative_usd", y.own_cumulative_usd},
                  {"rent_usd", y.rent_usd},
                  {"rent_cumulative_usd", y.rent_cumulative_usd}});
    if (!first && y.own_cumulative_usd <= y.rent_cumulative_usd) first = y.year;
  }
  j["years"] = ys;
  j["years_note"] = "the measured window's running costs and rented hours scaled linearly to a year";
  j["owning_cheaper_from_year"] = first ? Json(first) : Json(nullptr);
  return j;
}

namespace detail {

void parse_ownership(const N& n, const char* kind, PoolSpec& P, const std::vector<DeviceSpec>& devices) {
  OwnershipSpec& O = P.ownership;
  const bool colo = std::string(kind) == "colocated";
  O.kind = colo ? OwnershipSpec::Kind::colocated : OwnershipSpec::Kind::owned;
  n.allow_keys({"replicas", "node_capex_usd", "refresh_years", "power", colo ? "usd_per_kw_month" : "space_usd_per_node_month",
                "facility", "years", "rent_price_change_per_year", "repair", "newer"});
  O.replicas = n.has("replicas") ? int(n.at("replicas").integer(1, 4096)) : -1;
  O.node_capex_usd = n.req("node_capex_usd").pos(1e9);
  O.refresh_years = n.req("refresh_years").num_in(0.5, 20, "refresh_years");
  if (colo) O.usd_per_kw_month = n.req("usd_per_kw_month").num_in(0, 1e5);
  else if (n.has("space_usd_per_node_month")) O.space_usd_per_node_month = n.at("space_usd_per_node_month").num_in(0, 1e7);
  O.busy_kw_per_device = P.device.tdp_w / 1000.0;
  if (n.has("power")) {
    const N pw = n.at("power");
    pw.allow_keys({"busy_kw_per_device", "idle_kw_per_device", "host_kw_per_node", "pue", "usd_per_kwh"});
    if (pw.has("busy_kw_per_device")) O.busy_kw_per_device = pw.at("busy_kw_per_device").num_in(0, 100);
    O.idle_kw_per_device = pw.req("idle_kw_per_device").num_in(0, 100);
    if (O.idle_kw_per_device > O.busy_kw_per_device)
      pw.at("idle_kw_per_device").fail("a device draws less idle than busy: idle_kw_per_device must be <= busy_kw_per_device",
                                       ErrorKind::inconsistent);
    O.host_kw_per_node = pw.has("host_kw_per_node") ? pw.at("host_kw_per_node").num_in(0, 1000) : 0.0;
    O.pue = pw.has("pue") ? pw.at("pue").num_in(1, 5, "pue") : 1.0;
    O.usd_per_kwh = pw.req("usd_per_kwh").num_in(0, 100);
  } else if (!colo) {
    n.fail(std::string(kind) + " devices need power: {idle_kw_per_device, usd_per_kwh} (and optionally busy_kw_per_device, "
           "host_kw_per_node, pue): their energy is a running cost", ErrorKind::input);
  }
  if (O.busy_kw_per_device <= 0 && (colo || O.usd_per_kwh > 0))
    n.fail("the catalog has no board power for " + P.device.name + ": give power.busy_kw_per_device", ErrorKind::input);
  if (n.has("facility")) {
    const N fa = n.at("facility");
    fa.allow_keys({"rack_kw", "racks"});
    O.rack_kw = fa.req("rack_kw").pos(10000);
    O.racks = int(fa.req("racks").integer(1, 100000));
  }
  if (n.has("repair")) {
    const N rp = n.at("repair");
    rp.allow_keys({"days", "spares"});
    O.repair_days = rp.req("days").pos(3650);
    O.spares = rp.has("spares") ? int(rp.at("spares").integer(0, kMaxSpares)) : 0;
  }
  O.years = n.has("years") ? int(n.at("years").integer(1, 30)) : 0;
  O.rent_price_change_per_year = n.has("rent_price_change_per_year") ? n.at("rent_price_change_per_year").num_in(-0.9, 1) : 0.0;
  if (n.has("newer")) {
    const N nw = n.at("newer");
    nw.allow_keys({"device", "replicas", "tensor_parallel", "node_capex_usd", "capex_change_per_year", "busy_kw_per_device",
                   "idle_kw_per_device"});
    auto& W = O.newer;
    const N dn = nw.req("device");
    std::string why;
    const DeviceSpec* dev = find_named(devices, dn.str(), "device", " (see `fleetsim catalog`)", why);
    if (!dev) dn.fail(why);
    W.device = dev->name;
    W.where = nw.where();
    W.replicas = nw.has("replicas") ? int(nw.at("replicas").integer(1, 4096)) : 0;
    W.tensor_parallel = nw.has("tensor_parallel") ? int(nw.at("tensor_parallel").integer(1, 64)) : 0;
    W.node_capex_usd = nw.req("node_capex_usd").pos(1e9);
    W.capex_change_per_year = nw.has("capex_change_per_year") ? nw.at("capex_change_per_year").num_in(-0.9, 1) : 0.0;
    W.busy_kw_per_device = nw.has("busy_kw_per_device") ? nw.at("busy_kw_per_device").num_in(0, 100) : dev->tdp_w / 1000.0;
    // idle: the same share of its busy draw as the current device's, unless given
    W.idle_kw_per_device = nw.has("idle_kw_per_device") ? nw.at("idle_kw_per_device").num_in(0, 100)
                           : O.busy_kw_per_device > 0 ? O.idle_kw_per_device / O.busy_kw_per_device * W.busy_kw_per_device
                                                      : O.idle_kw_per_device;
    if (W.idle_kw_per_device > W.busy_kw_per_device)
      nw.fail("a device draws less idle than busy: idle_kw_per_device must be <= busy_kw_per_device", ErrorKind::inconsistent);
    if (W.busy_kw_per_device <= 0 && (colo || O.usd_per_kwh > 0))
      nw.fail("the catalog has no board power for " + W.device + ": give busy_kw_per_device", ErrorKind::input);
  }
  P.node_billing = true;
}

void finish_ownership(const N& pool_node, PoolSpec& P) {
  if (P.nodes_tracked() && P.max_nodes > 0 && P.max_nodes < P.nodes_per_replica())
    pool_node.at("fleet").at("nodes").at("max_nodes").fail(
        fmt::format("a replica of {} devices spans {} nodes of {}: max_nodes must be at least that", P.devices(),
                    P.nodes_per_replica(), P.device.devices_per_node),
        ErrorKind::does_not_fit);
  if (P.node_billing && !P.ownership.owned()) {
    const N pr = pool_node.at("fleet").at("pricing");
    if (P.committed_replicas > 0)
      pr.at("billing").fail("billing: node with committed_replicas is not modelled: commit whole nodes' replicas instead",
                            ErrorKind::inconsistent);
  }
  if (!P.ownership.owned()) return;
  OwnershipSpec& O = P.ownership;
  const char* kind = O.kind == OwnershipSpec::Kind::colocated ? "colocated" : "owned";
  const N on = pool_node.at("fleet").at("pricing").at(kind);
  if (O.repair_days > 0 && P.mtbf_hours <= 0)
    on.at("repair").fail("repair needs failures: set fleet.failures.mtbf_hours (a device's mean time between failures)",
                         ErrorKind::inconsistent);
  if (O.replicas < 0) O.replicas = P.max_replicas;
  P.committed_replicas = O.replicas;  // the core tracks owned replicas as it does committed ones
  P.committed_discount = 0;
  if (O.has_newer()) {
    const N nw = on.at("newer");
    if (P.autoscale.enabled || O.replicas < P.replicas)
      nw.fail("newer compares whole owned fleets: a fixed-size pool whose replicas are all owned", ErrorKind::inconsistent);
    auto& W = O.newer;
    if (W.replicas == 0) W.replicas = O.replicas;
    // the same scenario with this pool on the newer device: the overrides that make it
    const std::string pool = pool_node.path.empty() ? "" : pool_node.path + ".";
    auto set = [&](const std::string& path, const std::string& value) {
      W.paths.push_back(path);
      W.values.push_back(value);
    };
    set(pool + "device", W.device);
    set(pool + "fleet.replicas", std::to_string(W.replicas));
    if (W.tensor_parallel > 0) set(pool + "engine.tensor_parallel", std::to_string(W.tensor_parallel));
    set(on.path + ".replicas", std::to_string(W.replicas));
    set(on.path + ".node_capex_usd", fmt::format("{:.17g}", W.node_capex_usd));
    if (on.has("power")) {
      set(on.path + ".power.busy_kw_per_device", fmt::format("{:.17g}", W.busy_kw_per_device));
      set(on.path + ".power.idle_kw_per_device", fmt::format("{:.17g}", W.idle_kw_per_device));
    }
  }
  const double node_kw = double(P.device.devices_per_node) * O.busy_kw_per_device + O.host_kw_per_node;
  if (O.rack_kw > 0) {
    const int per_rack = int(std::floor(O.rack_kw / node_kw + 1e-9));
    const int nodes = P.nodes_for(O.replicas), obtainable = per_rack * O.racks;
    if (nodes > obtainable)
      on.at("facility").fail(
          fmt::format("the facility powers {} node{} of {} ({} rack{} of {:g} kW; a node draws up to {:.2f} kW), but {} "
                      "replicas need {} node{}: fewer replicas, more racks, or colocation",
                      obtainable, obtainable == 1 ? "" : "s", P.device.name, O.racks, O.racks == 1 ? "" : "s", O.rack_kw,
                      node_kw, O.replicas, nodes, nodes == 1 ? "" : "s"),
          ErrorKind::does_not_fit);
  }
}

}  // namespace detail
}  // namespace fleetsim
