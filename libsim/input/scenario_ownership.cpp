// A pool's billed units and nodes, and the `pricing.owned` / `pricing.colocated` sections: parsed
// with the pool, checked once the fleet is known. The dollars are cost/ownership.cpp's.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "core/state.hpp"
#include "input/scenario_internal.hpp"

namespace fleetsim {

double PoolSpec::unit_device_share() const { return partition.empty() ? 1.0 : 1.0 / replicas_per_device; }

double PoolSpec::units_per_replica() const { return devices() > 1 ? double(devices()) : 1.0 / shared_by(); }

double PoolSpec::units_per_node() const { return double(device.devices_per_node) / unit_device_share(); }

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

namespace detail {

void parse_ownership(const N& n, const char* kind, PoolSpec& P, const std::vector<DeviceSpec>& devices) {
  OwnershipSpec& O = P.ownership;
  const bool colo = std::string(kind) == "colocated";
  O.kind = colo ? OwnershipSpec::Kind::colocated : OwnershipSpec::Kind::owned;
  n.allow_keys({"replicas", "node_capex_usd", "refresh_years", "power",
                colo ? "usd_per_kw_month" : "space_usd_per_node_month", "facility", "years",
                "rent_price_change_per_year", "repair", "newer"});
  O.replicas = n.has("replicas") ? int(n.at("replicas").integer(1, 4096)) : -1;
  O.node_capex_usd = n.req("node_capex_usd").pos(1e9);
  O.refresh_years = n.req("refresh_years").num_in(0.5, 20, "refresh_years");
  if (colo)
    O.usd_per_kw_month = n.req("usd_per_kw_month").num_in(0, 1e5);
  else if (n.has("space_usd_per_node_month"))
    O.space_usd_per_node_month = n.at("space_usd_per_node_month").num_in(0, 1e7);
  O.busy_kw_per_device = P.device.tdp_w / 1000.0;
  if (n.has("power")) {
    const N pw = n.at("power");
    pw.allow_keys({"busy_kw_per_device", "idle_kw_per_device", "host_kw_per_node", "pue", "usd_per_kwh"});
    if (pw.has("busy_kw_per_device")) O.busy_kw_per_device = pw.at("busy_kw_per_device").num_in(0, 100);
    O.idle_kw_per_device = pw.req("idle_kw_per_device").num_in(0, 100);
    if (O.idle_kw_per_device > O.busy_kw_per_device)
      pw.at("idle_kw_per_device")
          .fail("a device draws less idle than busy: idle_kw_per_device must be <= busy_kw_per_device",
                ErrorKind::inconsistent);
    O.host_kw_per_node = pw.has("host_kw_per_node") ? pw.at("host_kw_per_node").num_in(0, 1000) : 0.0;
    O.pue = pw.has("pue") ? pw.at("pue").num_in(1, 5, "pue") : 1.0;
    O.usd_per_kwh = pw.req("usd_per_kwh").num_in(0, 100);
  } else if (!colo) {
    n.fail(std::string(kind) +
               " devices need power: {idle_kw_per_device, usd_per_kwh} (and optionally busy_kw_per_device, "
               "host_kw_per_node, pue): their energy is a running cost",
           ErrorKind::input);
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
  O.rent_price_change_per_year =
      n.has("rent_price_change_per_year") ? n.at("rent_price_change_per_year").num_in(-0.9, 1) : 0.0;
  if (n.has("newer")) {
    const N nw = n.at("newer");
    nw.allow_keys({"device", "replicas", "tensor_parallel", "node_capex_usd", "capex_change_per_year",
                   "busy_kw_per_device", "idle_kw_per_device"});
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
    W.busy_kw_per_device =
        nw.has("busy_kw_per_device") ? nw.at("busy_kw_per_device").num_in(0, 100) : dev->tdp_w / 1000.0;
    // idle: the same share of its busy draw as the current device's, unless given
    W.idle_kw_per_device = nw.has("idle_kw_per_device") ? nw.at("idle_kw_per_device").num_in(0, 100)
                           : O.busy_kw_per_device > 0
                               ? O.idle_kw_per_device / O.busy_kw_per_device * W.busy_kw_per_device
                               : O.idle_kw_per_device;
    if (W.idle_kw_per_device > W.busy_kw_per_device)
      nw.fail("a device draws less idle than busy: idle_kw_per_device must be <= busy_kw_per_device",
              ErrorKind::inconsistent);
    if (W.busy_kw_per_device <= 0 && (colo || O.usd_per_kwh > 0))
      nw.fail("the catalog has no board power for " + W.device + ": give busy_kw_per_device", ErrorKind::input);
  }
  P.node_billing = true;
}

void finish_ownership(const N& pool_node, PoolSpec& P) {
  if (P.nodes_tracked() && P.max_nodes > 0 && P.max_nodes < P.nodes_per_replica())
    pool_node.at("fleet")
        .at("nodes")
        .at("max_nodes")
        .fail(fmt::format("a replica of {} devices spans {} nodes of {}: max_nodes must be at least that", P.devices(),
                          P.nodes_per_replica(), P.device.devices_per_node),
              ErrorKind::does_not_fit);
  if (P.nodes_tracked() && P.max_nodes > 0) {
    // the replicas it starts with, and those it never goes below, must fit the quota
    const int floor_replicas = std::max(P.replicas, P.min_replicas);
    if (P.nodes_for(floor_replicas) > P.max_nodes)
      pool_node.at("fleet")
          .at("nodes")
          .at("max_nodes")
          .fail(fmt::format(
                    "{} replicas ({} at the start, {} at least) need {} nodes of {} replicas each: max_nodes must "
                    "be at least that",
                    floor_replicas, P.replicas, P.min_replicas, P.nodes_for(floor_replicas), P.replicas_per_node()),
                ErrorKind::does_not_fit);
    if (P.pinned_nodes > P.max_nodes)
      pool_node.at("fleet").at("nodes").at("pinned").fail(
          fmt::format("{} pinned nodes exceed max_nodes {}", P.pinned_nodes, P.max_nodes), ErrorKind::inconsistent);
  }
  if (P.node_billing && !P.ownership.owned()) {
    const N pr = pool_node.at("fleet").at("pricing");
    if (P.committed_replicas > 0)
      pr.at("billing").fail(
          "billing: node with committed_replicas is not modelled: commit whole nodes' replicas instead",
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
      nw.fail("newer compares whole owned fleets: a fixed-size pool whose replicas are all owned",
              ErrorKind::inconsistent);
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
  if (O.rack_kw > 0 && node_kw > 0) {  // (a node that draws nothing: any rack powers any number)
    // in floating point: a rack of 10 MW powers millions of nodes drawing watts, past an int
    const double per_rack = std::floor(O.rack_kw / node_kw + 1e-9), obtainable = per_rack * O.racks;
    const int nodes = P.nodes_for(O.replicas);
    if (double(nodes) > obtainable)
      on.at("facility")
          .fail(fmt::format("the facility powers {:.0f} node{} of {} ({} rack{} of {:g} kW; a node draws up to {:.2f} "
                            "kW), but {} "
                            "replicas need {} node{}: fewer replicas, more racks, or colocation",
                            obtainable, obtainable == 1 ? "" : "s", P.device.name, O.racks, O.racks == 1 ? "" : "s",
                            O.rack_kw, node_kw, O.replicas, nodes, nodes == 1 ? "" : "s"),
                ErrorKind::does_not_fit);
  }
}

}  // namespace detail
}  // namespace fleetsim
