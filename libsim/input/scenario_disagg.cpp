// pools.<name>.disaggregation: a prefill pool that sends each prompt's KV to a decode pool
// (docs/model.md, "Disaggregated prefill and decode"). Resolved once every pool is built.
#include <algorithm>
#include <string>
#include <vector>

#include "input/scenario_internal.hpp"

namespace fleetsim::detail {

void parse_disaggregation(const N& dn, std::vector<PoolSpec>& pools, size_t i) {
  dn.allow_keys({"decode_pool", "link", "gb_s", "latency_us"});
  PoolSpec& P = pools[i];
  const N dp = dn.req("decode_pool");
  const std::string name = dp.name();
  std::vector<std::string> names;
  int d = -1;
  for (size_t k = 0; k < pools.size(); ++k) {
    names.push_back(pools[k].name);
    if (pools[k].name == name) d = int(k);
  }
  if (d < 0) {
    const std::string sug = did_you_mean(name, names);
    dp.fail("unknown pool '" + name + "'" + (sug.empty() ? "" : " (did you mean '" + sug + "'?)"));
  }
  if (size_t(d) == i)
    dp.fail("a pool cannot decode its own prefills: name another pool, or drop disaggregation to serve whole requests",
            ErrorKind::inconsistent);
  const PoolSpec& D = pools[size_t(d)];
  if (P.model.name != D.model.name)
    dp.fail("pool '" + name + "' serves " + D.model.name + ", this pool " + P.model.name +
                ": a decode pool must serve the model whose KV it receives",
            ErrorKind::inconsistent);
  if (P.model.kind != ModelKind::generate)
    dn.fail(P.model.name + " does not generate: there is nothing to decode", ErrorKind::inconsistent);
  if (P.batching != Batching::continuous || D.batching != Batching::continuous)
    dn.fail("disaggregated prefill needs continuous batching in both pools", ErrorKind::inconsistent);
  if (P.spec_tokens > 0)
    dn.fail("a prefill pool emits no tokens: engine.speculative belongs to its decode pool", ErrorKind::inconsistent);
  if (P.kv_dtype != D.kv_dtype)
    dp.fail("pool '" + name + "' holds its KV cache in " + D.kv_dtype + ", this pool writes " + P.kv_dtype +
                ": a transfer moves the cache as it is, so both pools need the same kv_dtype",
            ErrorKind::inconsistent);

  // the link one device of each side sends over; both sides' devices send their shares at once
  const std::string link = dn.has("link") ? dn.at("link").choice({"network", "scale_up", "pcie"}) : "network";
  double gb_s = 0, lat_us = 0;
  if (link == "network") {
    gb_s = P.network_gb_s;
    lat_us = P.network_latency_us;
  } else if (link == "scale_up") {
    // any prefill replica may send to any decode replica, so all of both pools' devices, at their
    // most replicas, sit in the one domain
    auto most = [](const PoolSpec& X) {
      return (int64_t(std::max(X.replicas, X.max_replicas)) * X.devices() + X.shared_by() - 1) / X.shared_by();
    };
    if (P.device.name != D.device.name)
      dn.at("link").fail("scale_up: the pools run on different devices (" + P.device.name + " and " + D.device.name +
                             "), which share no " + P.device.interconnect + " domain; use link: network",
                         ErrorKind::inconsistent);
    if (most(P) + most(D) > P.device.link_domain)
      dn.at("link").fail("scale_up: both pools' replicas must sit in one " + P.device.interconnect + " domain of " +
                             std::to_string(P.device.link_domain) + " " + P.device.name + " devices (here up to " +
                             std::to_string(most(P)) + " + " + std::to_string(most(D)) + "); use link: network",
                         ErrorKind::inconsistent);
    gb_s = P.device.link_gb_s_to(1);  // one device to one other
    lat_us = P.device.link_latency_us;
  } else {
    if (!(P.device.pcie_gb_s > 0))
      dn.at("link").fail(P.device.name + " has no pcie_gb_s in the catalog; give gb_s", ErrorKind::inconsistent);
    gb_s = P.device.pcie_gb_s;
    lat_us = 25.0;  // as between devices of one node over PCIe (the parallelism links)
  }
  if (dn.has("gb_s")) gb_s = dn.at("gb_s").pos(1e5);
  if (dn.has("latency_us")) lat_us = dn.at("latency_us").num_in(0, 1e6);
  if (!(gb_s > 0)) dn.fail("the link's bandwidth is unknown: give gb_s", ErrorKind::inconsistent);
  if (P.host.detokenize_s_per_token > 0 && !(D.host.detokenize_s_per_token > 0))
    dn.fail("pool " + P.name + "'s engine.host.detokenize_s_per_token would detokenize nothing: a prefill pool " +
                "sends no tokens; the decode pool " + D.name + " generates them (give it engine.host there)",
            ErrorKind::inconsistent);
  P.decode_pool = d;
  P.kv_link = dn.has("gb_s") || dn.has("latency_us") ? "custom" : link;
  P.kv_link_gb_s = gb_s;
  P.kv_link_latency_us = lat_us;
  P.kv_link_lanes = std::min(P.devices(), D.devices());
  // every rank's share of every layer (the stages together hold each layer once); the
  // sliding-window layers hold only a window's tokens
  const double kvb = kv_dtype_bytes(P.kv_dtype);
  P.kv_bytes_per_token = kv_bytes_per_token_per_device(P.model, kvb, P.tp, 1) * double(P.tp);
  P.kv_window_bytes_per_token = P.model.sliding_layers > 0 ? window_kv_bytes_per_seq_per_device(P.model, kvb, P.tp, 1) *
                                                                 double(P.tp) / double(P.model.sliding_window)
                                                           : 0.0;
}

// After every pool's disaggregation is read: no decode pool hands off again.
void check_disaggregation(const N& pools_node, const std::vector<PoolSpec>& pools) {
  for (const PoolSpec& P : pools)
    if (P.decode_pool >= 0 && pools[size_t(P.decode_pool)].decode_pool >= 0)
      pools_node.at(P.name.c_str())
          .at("disaggregation")
          .at("decode_pool")
          .fail("pool '" + pools[size_t(P.decode_pool)].name +
                    "' is itself a prefill pool: a decode pool must serve the requests it receives",
                ErrorKind::inconsistent);
}

}  // namespace fleetsim::detail
