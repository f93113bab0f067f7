// The newer-device view: the owned pool's scenario again on the newer device (the overrides
// parse_ownership prepared), then each year's cost per 1M tokens of both fleets.
#include "cost/refresh.hpp"

#include <cmath>
#include <limits>
#include <memory>

#include "backend/runner.hpp"
#include "cost/ledger.hpp"
#include "cost/ownership.hpp"

namespace fleetsim {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();  // no figure: written as null

// What a pool's classes got in a run: tokens served (prompt + output of completed requests),
// requests, and the latency a reader checks before trusting a cheaper fleet.
struct Served {
  double tokens = 0, completed = 0, rejected = 0, failed = 0, p99_ttft_s = 0, mean_tpot_s = 0;
};

Served served(const Scenario& s, const Tally& t, size_t pool) {
  auto c = std::make_unique<ClassTally>();
  class_tally_clear(*c);
  for (size_t k = 0; k < s.classes.size(); ++k)
    if (size_t(s.classes[k].pool) == pool) class_tally_merge(*c, t.classes[k]);
  Served v;
  v.tokens = c->input_tokens + c->output_tokens;
  v.completed = double(c->completed);
  v.rejected = double(c->rejected_queue_full + c->rejected_too_long);
  v.failed = double(c->failed);
  v.p99_ttft_s = c->ttft.n > 0 ? hist_quantile(c->ttft, 0.99) : kNaN;  // none served: null
  v.mean_tpot_s = c->tpot.n > 0 ? c->tpot.sum / double(c->tpot.n) : kNaN;
  return v;
}

// The owned line's capex (devices and spares), paid at the price of the year they are bought.
double capex_usd(const OwnershipLedger& o) {
  double u = 0;
  for (const auto& c : o.components)
    if (c.name == "capex" || c.name == "spares") u += c.usd();
  return u;
}

// a figure, or null where there is none (NaN: nothing served)
Json figure(double x) { return std::isfinite(x) ? Json(x) : Json(nullptr); }

Json fleet_json(const std::string& device, int replicas, const OwnershipLedger& o, const Served& v) {
  return {{"device", device},
          {"replicas", replicas},
          {"nodes", o.owned_nodes},
          {"owned_usd", o.usd()},
          {"capex_usd", capex_usd(o)},
          {"tokens", v.tokens},
          {"completed", v.completed},
          {"rejected", v.rejected},
          {"failed", v.failed},
          {"p99_ttft_s", figure(v.p99_ttft_s)},
          {"mean_tpot_s", figure(v.mean_tpot_s)}};
}

double per_million(double usd, double tokens) { return tokens > 0 ? usd / tokens * 1e6 : kNaN; }

}  // namespace

namespace {

// The scenario with pool `pool` on its newer device, or an InputError located at `newer:`.
Scenario newer_fleet(const ScenarioSource& src, const Scenario& s, size_t pool) {
  const auto& W = s.pools[pool].ownership.newer;
  std::vector<Override> ov;
  for (size_t i = 0; i < W.paths.size(); ++i)
    ov.push_back(Override{W.paths[i], W.values[i], W.where, "newer: " + W.paths[i] + "=" + W.values[i]});
  try {
    return src.instantiate(ov);
  } catch (const InputError& e) {
    throw InputError(W.where, "the pool on " + W.device + " (newer:) is not a valid fleet: " + e.what(), e.kind());
  }
}

bool has_newer(const PoolSpec& P) { return P.ownership.owned() && P.ownership.has_newer(); }

}  // namespace

void check_newer_fleets(const ScenarioSource& src, const Scenario& s) {
  for (size_t i = 0; i < s.pools.size(); ++i)
    if (has_newer(s.pools[i])) newer_fleet(src, s, i);
}

Json newer_device_view(const ScenarioSource& src, const Scenario& s, const Tally& t, size_t pool,
                       uint32_t replication) {
  const PoolSpec& P = s.pools[pool];
  const auto& W = P.ownership.newer;
  Scenario v = newer_fleet(src, s, pool);
  v.seed = s.seed;  // the same arrivals and lengths
  const SimParams p = v.params();
  HostWorkspace ws;
  const auto t2 = simulate_once(p, replication, ws);  // the replication t is
  check_status(*t2, s.source + " (newer: " + W.device + ")");

  const Ledger l1 = make_ledger(s, t), l2 = make_ledger(v, *t2);
  const OwnershipLedger& o1 = l1.pools[pool].ownership;
  const OwnershipLedger& o2 = l2.pools[pool].ownership;
  const Served a = served(s, t, pool), b = served(v, *t2, pool);

  Json j;
  j["current"] = fleet_json(P.device.name, o1.owned_replicas, o1, a);
  j["newer"] = fleet_json(W.device, o2.owned_replicas, o2, b);
  j["newer"]["node_capex_usd"] = W.node_capex_usd;
  j["newer"]["capex_change_per_year"] = W.capex_change_per_year;
  // per 1M tokens: the current fleet all-in (capex amortized at its price) and on its running
  // costs alone (capex already paid); the newer one all-in at the price of each year
  const double cur_all = per_million(o1.usd(), a.tokens);
  const double cur_running = per_million(o1.usd() - capex_usd(o1), a.tokens);
  Json ys = Json::array();
  int cheaper = 0, replace = 0;
  const size_t years = o1.years.size();
  for (size_t y = 1; y <= years; ++y) {
    const double f = std::pow(1.0 + W.capex_change_per_year, double(y - 1));
    const double nw = per_million(o2.usd() - capex_usd(o2) + capex_usd(o2) * f, b.tokens);
    ys.push_back({{"year", int(y)},
                  {"newer_node_capex_usd", W.node_capex_usd * f},
                  {"newer_usd_per_million_tokens", figure(nw)},
                  {"current_usd_per_million_tokens", figure(cur_all)},
                  {"current_running_usd_per_million_tokens", figure(cur_running)}});
    // the first year from which it holds through the last of the view
    cheaper = nw < cur_all ? (cheaper ? cheaper : int(y)) : 0;
    replace = nw < cur_running ? (replace ? replace : int(y)) : 0;
  }
  j["years"] = ys;
  j["newer_cheaper_from_year"] = cheaper ? Json(cheaper) : Json(nullptr);
  j["replacing_pays_from_year"] = replace ? Json(replace) : Json(nullptr);
  j["note"] =
      "the same arrivals served by each fleet; per 1M tokens served (prompt + output). To buy: the newer fleet "
      "all-in at each year's price against the current one all-in. To replace a paid-for fleet early: against "
      "the current fleet's running costs alone";
  return j;
}

void add_newer_device_views(Json& report, const ScenarioSource& src, const Scenario& s, const Tally& t,
                            uint32_t replication) {
  for (size_t i = 0; i < s.pools.size(); ++i) {
    const PoolSpec& P = s.pools[i];
    if (!has_newer(P)) continue;
    report["ledger"]["pools"][P.name]["ownership"]["newer_device"] = newer_device_view(src, s, t, i, replication);
  }
}

}  // namespace fleetsim
