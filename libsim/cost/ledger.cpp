#include "cost/ledger.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "base/error.hpp"
#include "base/text.hpp"
#include "catalog/catalog.hpp"
#include "input/csv.hpp"

namespace fleetsim {

const char* bucket_name(Bucket b) {
  static const char* const names[kBuckets] = {"busy_prefill",  "busy_decode", "lost_work",        "cold_start",
                                              "idle_headroom", "idle_waste",  "committed_unused", "stranded"};
  return names[int(b)];
}

double CostBlock::billed_hours() const {
  double h = 0;
  for (double x : hours) h += x;
  return h;
}
double CostBlock::list_usd() const {
  double u = 0;
  for (const auto& l : lines) u += l.list_usd();
  return u;
}
double CostBlock::effective_usd() const {
  double u = 0;
  for (const auto& l : lines) u += l.effective_usd();
  return u;
}
double CostBlock::idle_usd() const {
  double u = 0;
  for (int b = 0; b < kBuckets; ++b)
    if (bucket_is_idle(Bucket(b))) u += usd[size_t(b)];
  return u;
}
double CostBlock::input_usd() const {
  if (input_usd_ >= 0) return input_usd_;
  // (at most the whole: prompts' time summed apart can round past the total's)
  return busy_s > 0 ? std::min(effective_usd(), effective_usd() * input_busy_s / busy_s) : 0.0;
}
double ClassLedger::input_usd() const {
  double u = 0;
  for (const auto& x : parts) u += x.input_usd;
  return u;
}

namespace {

Json ratio(double num, double den) { return den > 0 ? Json(num / den) : Json(nullptr); }

void add_into(CostBlock& into, const CostBlock& from) {
  for (int b = 0; b < kBuckets; ++b) {
    into.hours[size_t(b)] += from.hours[size_t(b)];
    into.usd[size_t(b)] += from.usd[size_t(b)];
  }
  for (const auto& l : from.lines) {
    // lines of one category and rates merge; different rates stay separate lines
    auto it = std::find_if(into.lines.begin(), into.lines.end(), [&](const PricingLine& x) {
      return x.category == l.category && x.list_usd_per_hour == l.list_usd_per_hour &&
             x.effective_usd_per_hour == l.effective_usd_per_hour;
    });
    if (it == into.lines.end())
      into.lines.push_back(l);
    else
      it->device_hours += l.device_hours;
  }
  into.input_usd_ = std::max(0.0, into.input_usd_) + from.input_usd();
  for (int k = 0; k < kColdStages; ++k) into.cold_stage_hours[size_t(k)] += from.cold_stage_hours[size_t(k)];
  into.busy_s += from.busy_s;
  into.input_busy_s += from.input_busy_s;
  into.completed += from.completed;
  into.input_tokens += from.input_tokens;
  into.output_tokens += from.output_tokens;
}

}  // namespace

Ledger make_ledger(const Scenario& s, const Tally& t) {
  Ledger L;
  L.window_s = t.window_s;
  for (size_t i = 0; i < s.pools.size(); ++i) {
    const PoolSpec& P = s.pools[i];
    const PoolTally& pt = t.pools[i];
    PoolLedger pl;
    pl.name = P.name;
    pl.device = P.device.name;
    pl.cpu_instance = cpu_instance(P.device);
    pl.committed_discount = P.committed_replicas > 0 ? P.committed_discount : 0.0;
    CostBlock& c = pl.cost;
    // replica-seconds to device-hours: a tensor/pipeline-parallel replica holds several devices,
    // time-sliced replicas and MPS clients share one (a MIG slice is billed as its own unit at the slice price)
    const double f = (P.devices() > 1 ? double(P.devices()) : 1.0 / P.shared_by()) / 3600.0;
    // work thrown away where it was computed: a prefill pool's lost prompts are its own
    const double lost_tokens = pt.lost_tokens;
    double useful_tokens = 0;
    // a prefill pool's classes count their prompts here and their outputs in the pool that decodes them
    for (size_t k = 0; k < s.classes.size(); ++k) {
      const bool entry = s.classes[k].pool == int(i);
      const int dp = s.pools[size_t(s.classes[k].pool)].decode_pool;
      const bool decodes = dp == int(i);
      if (!entry && !decodes) continue;
      const ClassTally& ct = t.classes[k];
      const bool outputs = dp < 0 ? entry : decodes;
      if (entry) useful_tokens += ct.input_tokens - double(ct.prefix_tokens_reused);
      if (outputs) useful_tokens += ct.output_tokens;
      c.completed += double(ct.completed);
      if (entry) c.input_tokens += ct.input_tokens;
      if (outputs) c.output_tokens += ct.output_tokens;
    }
    auto& h = c.hours;
    h[size_t(Bucket::cold_start)] = pt.cold_s * f;
    h[size_t(Bucket::idle_headroom)] = pt.headroom_s * f;
    h[size_t(Bucket::idle_waste)] = pt.waste_s * f;
    h[size_t(Bucket::committed_unused)] = pt.committed_unused_s * f;
    // ready replicas that were not idle were busy: the remainder, so the buckets add up exactly
    const double busy_h = std::max(0.0, pt.replica_s * f - h[size_t(Bucket::cold_start)] -
                                            h[size_t(Bucket::idle_headroom)] - h[size_t(Bucket::idle_waste)]);
    // work later thrown away, in proportion to the tokens it computed
    const double lost_share = lost_tokens > 0 ? lost_tokens / (lost_tokens + std::max(0.0, useful_tokens)) : 0.0;
    h[size_t(Bucket::lost_work)] = busy_h * lost_share;
    const double in_share = pt.busy_s > 0 ? std::min(1.0, pt.input_busy_s / pt.busy_s) : 0.0;
    h[size_t(Bucket::busy_prefill)] = (busy_h - h[size_t(Bucket::lost_work)]) * in_share;
    h[size_t(Bucket::busy_decode)] = busy_h - h[size_t(Bucket::lost_work)] - h[size_t(Bucket::busy_prefill)];
    c.busy_s = pt.busy_s;
    c.input_busy_s = pt.input_busy_s;
    // a fallen-back server steps on the host CPU: its device, paid for, idles (in the buckets above)
    pl.cpu_fallback = P.cpu_fallback();
    pl.fallback_hours = pt.fallback_s * f;
    pl.fallback_cpu_busy_hours = pt.cpu_busy_s * f;
    double stages = 0;
    for (double x : pt.cold_stage_s) stages += x;
    for (int k = 0; k < kColdStages; ++k)
      c.cold_stage_hours[size_t(k)] = stages > 0 ? h[size_t(Bucket::cold_start)] * pt.cold_stage_s[k] / stages : 0.0;

    // pricing: owned devices (whole nodes, used or not) at their cost of ownership; committed
    // replicas for the whole window (used or not); the rest at the hourly price, spot-discounted
    // on spot capacity; billing by the node adds the devices no replica can use
    const double list = P.usd_per_hour;
    if (P.ownership.owned()) {
      pl.owned = true;
      pl.ownership = owned_costs(P, pt, t.window_s, busy_h);
      pl.nodes = pl.ownership.owned_nodes;
      h[size_t(Bucket::stranded)] = pl.ownership.stranded_unit_hours;
      const double oh = pl.ownership.owned_unit_hours;
      c.lines.push_back({P.ownership.kind == OwnershipSpec::Kind::colocated ? "colocated" : "owned", oh, list,
                         oh > 0 ? pl.ownership.usd() / oh : 0.0});
    } else if (P.nodes_tracked()) {
      // the nodes the cluster kept up, from the simulation: every device on them is paid for
      pl.nodes_tracked = true;
      pl.node_hours = pt.node_s / 3600.0;
      pl.pinned_node_hours = pt.node_pinned_s / 3600.0;
      pl.unneeded_node_hours = pt.node_unneeded_s / 3600.0;
      pl.unschedulable = pt.unschedulable;
      h[size_t(Bucket::stranded)] = std::max(0.0, pl.node_hours * P.units_per_node() - pt.replica_s * f);
    } else if (P.node_billing) {
      const NodeBilling nb = node_billing(P, t.window_s);
      pl.nodes = nb.nodes;
      h[size_t(Bucket::stranded)] = std::max(0.0, nb.billed_unit_hours - pt.replica_s * f);
    } else {
      // the devices in use are billed whole, shared by fewer replicas than they hold or not
      h[size_t(Bucket::stranded)] = pt.share_gap_s * f;
    }
    if (P.committed_replicas > 0 && !P.ownership.owned()) {
      const double committed_h = (pt.replica_s - pt.excess_s + pt.committed_unused_s) * f;
      c.lines.push_back({"committed", committed_h, list, list * (1.0 - P.committed_discount)});
    }
    const double excess_h = (P.committed_replicas > 0 ? pt.excess_s : pt.replica_s) * f +
                            (P.ownership.owned() ? 0.0 : h[size_t(Bucket::stranded)]);
    if (excess_h > 0 || P.committed_replicas == 0)
      c.lines.push_back({P.spot() ? "spot" : "on_demand", excess_h, list, list * (1.0 - P.spot_discount)});
    const double billed = c.billed_hours();
    double rate = billed > 0 ? c.effective_usd() / billed : 0.0;
    // an unused commitment costs the committed rate, as FOCUS's Unused row bills it; the other
    // buckets share what is left at one rate, so that the buckets still add up to the lines
    const double unused_h = h[size_t(Bucket::committed_unused)];
    const bool unused_commitment = unused_h > 0 && P.committed_replicas > 0 && !P.ownership.owned();
    const double committed_rate = list * (1.0 - P.committed_discount);
    if (unused_commitment)
      rate = billed > unused_h ? (c.effective_usd() - unused_h * committed_rate) / (billed - unused_h) : 0.0;
    for (int b = 0; b < kBuckets; ++b) c.usd[size_t(b)] = h[size_t(b)] * rate;
    if (unused_commitment) c.usd[size_t(Bucket::committed_unused)] = unused_h * committed_rate;
    L.pools.push_back(pl);
  }

  // classes: their busy time on each pool they use, and its idle time shared in proportion to it
  // (a class of a prefill pool uses the pool that decodes for it too)
  // of a class's time (all, and on the decode pool), the part on `pool`
  auto on = [&](size_t k, int pool, double all, double decode) {
    const int entry = s.classes[k].pool, dp = s.pools[size_t(entry)].decode_pool;
    return (entry == pool ? all - decode : 0.0) + (dp == pool ? decode : 0.0);
  };
  auto busy_on = [&](size_t k, int pool) { return on(k, pool, t.classes[k].busy_s, t.classes[k].decode_busy_s); };
  auto input_on = [&](size_t k, int pool) {
    return on(k, pool, t.classes[k].input_busy_s, t.classes[k].decode_input_busy_s);
  };
  auto uses = [&](size_t k, int pool) {
    return s.classes[k].pool == pool || s.pools[size_t(s.classes[k].pool)].decode_pool == pool;
  };
  for (size_t k = 0; k < s.classes.size(); ++k) {
    const RequestClassSpec& C = s.classes[k];
    const ClassTally& ct = t.classes[k];
    ClassLedger cl;
    cl.name = C.name;
    cl.pool = L.pools[size_t(C.pool)].name;
    cl.team = C.team;
    const int dp = s.pools[size_t(C.pool)].decode_pool;
    if (dp >= 0) cl.decode_pool = L.pools[size_t(dp)].name;
    for (int pool : {C.pool, dp}) {
      if (pool < 0) continue;
      const PoolLedger& pl = L.pools[size_t(pool)];
      double pool_busy = 0;
      int members = 0;
      for (size_t j = 0; j < s.classes.size(); ++j)
        if (uses(j, pool)) {
          pool_busy += busy_on(j, pool);
          ++members;
        }
      ClassPoolShare x;
      x.pool = pool;
      const double mine = busy_on(k, pool);
      x.share = pool_busy > 0 ? mine / pool_busy : 1.0 / members;
      double busy_h = 0, busy_usd = 0;
      for (int b = 0; b < kBuckets; ++b)
        if (!bucket_is_idle(Bucket(b))) {
          busy_h += pl.cost.hours[size_t(b)];
          busy_usd += pl.cost.usd[size_t(b)];
        }
      x.busy_hours = busy_h * x.share;
      x.busy_usd = busy_usd * x.share;
      x.idle_share_usd = pl.cost.idle_usd() * x.share;
      x.idle_share_hours = (pl.cost.billed_hours() - busy_h) * x.share;
      x.input_usd =
          mine > 0 ? std::min(x.busy_usd + x.idle_share_usd, (x.busy_usd + x.idle_share_usd) * input_on(k, pool) / mine)
                   : 0.0;
      cl.busy_hours += x.busy_hours;
      cl.busy_usd += x.busy_usd;
      cl.idle_share_usd += x.idle_share_usd;
      cl.idle_share_hours += x.idle_share_hours;
      cl.parts.push_back(x);
    }
    cl.busy_s = ct.busy_s;
    cl.input_busy_s = ct.input_busy_s;
    cl.completed = double(ct.completed);
    cl.input_tokens = ct.input_tokens;
    cl.output_tokens = ct.output_tokens;
    L.classes.push_back(cl);
  }
  for (const auto& p : L.pools) add_into(L.total, p.cost);
  // a disaggregated request is counted by both its pools: once in the total
  L.total.completed = 0;
  for (const auto& c : L.classes) L.total.completed += c.completed;
  return L;
}

Json cost_json(const CostBlock& c) {
  Json co;
  const double billed = c.billed_hours(), usd = c.effective_usd();
  co["usd_per_device_hour"] = ratio(usd, billed);  // effective, blended over pricing lines
  co["device_hours"] = billed;
  co["total_usd"] = usd;
  co["list_usd"] = c.list_usd();
  co["idle_usd"] = c.idle_usd();
  co["input_usd"] = c.input_usd();
  co["output_usd"] = c.output_usd();
  co["per_request_usd"] = ratio(usd, c.completed);
  co["per_million_input_tokens_usd"] = ratio(c.input_usd() * 1e6, c.input_tokens);
  co["per_million_output_tokens_usd"] = ratio(c.output_usd() * 1e6, c.output_tokens);
  co["per_million_tokens_usd"] = ratio(usd * 1e6, c.input_tokens + c.output_tokens);
  return co;
}

Json class_cost_json(const ClassLedger& c) {
  Json co;
  const double hours = c.busy_hours + c.idle_share_hours;
  co["usd"] = c.usd();
  co["total_usd"] = c.usd();  // the same key as a pool's cost block
  co["device_hours"] = hours;
  co["usd_per_device_hour"] = ratio(c.usd(), hours);
  co["busy_usd"] = c.busy_usd;
  co["idle_share_usd"] = c.idle_share_usd;
  co["device_busy_s"] = c.busy_s;
  co["input_usd"] = c.input_usd();
  co["output_usd"] = c.output_usd();
  co["per_request_usd"] = ratio(c.usd(), c.completed);
  co["per_million_input_tokens_usd"] = ratio(c.input_usd() * 1e6, c.input_tokens);
  co["per_million_output_tokens_usd"] = ratio(c.output_usd() * 1e6, c.output_tokens);
  co["per_million_tokens_usd"] = ratio(c.usd() * 1e6, c.input_tokens + c.output_tokens);
  return co;
}

namespace {

Json block_json(const CostBlock& c, double window_s, double committed_discount) {
  Json j;
  const double billed = c.billed_hours(), usd = c.effective_usd();
  j["billed_device_hours"] = billed;
  j["list_usd"] = c.list_usd();
  j["effective_usd"] = usd;
  j["usd_per_device_hour"] = ratio(usd, billed);
  Json b = Json::object();
  for (int k = 0; k < kBuckets; ++k)
    b[bucket_name(Bucket(k))] = {{"device_hours", c.hours[size_t(k)]}, {"usd", c.usd[size_t(k)]}};
  j["buckets"] = b;
  static const char* const stage[kColdStages] = {"provisioning", "image_pull", "weights_fetch",
                                                 "weights_load", "warmup",     "awaiting_device"};
  Json cs = Json::object();
  for (int k = 0; k < kColdStages; ++k) cs[stage[k]] = c.cold_stage_hours[size_t(k)];
  j["cold_start_by_stage_device_hours"] = cs;
  j["idle_usd"] = c.idle_usd();
  Json lines = Json::array();
  for (const auto& l : c.lines)
    lines.push_back({{"category", l.category},
                     {"device_hours", l.device_hours},
                     {"list_usd_per_hour", l.list_usd_per_hour},
                     {"effective_usd_per_hour", l.effective_usd_per_hour},
                     {"list_usd", l.list_usd()},
                     {"effective_usd", l.effective_usd()}});
  j["pricing"] = lines;
  // committed capacity pays (1 - discount) of the list price whether used or not: it beats paying
  // the list price on demand when the capacity would be provisioned more than that share of the time
  if (committed_discount > 0) j["committed_break_even_utilization"] = 1.0 - committed_discount;
  const double scale = window_s > 0 ? 30.0 * 86400.0 / window_s : 0.0;
  j["projection_30d"] = {
      {"effective_usd", usd * scale},
      {"list_usd", c.list_usd() * scale},
      {"scale", scale},
      {"note", fmt::format("the {:g} s measured window scaled linearly to 30 days: load cycles longer than the "
                           "window (daily, weekly) are not in it",
                           window_s)}};
  return j;
}

}  // namespace

Json ledger_json(const Ledger& l) {
  Json j = {{"window_s", l.window_s}};
  j.update(block_json(l.total, l.window_s, 0.0));
  j["idle_sharing"] =
      "idle, cold-start and unused committed time is shared over a pool's classes in proportion to "
      "their busy time";
  Json pools = Json::object();
  for (const auto& p : l.pools) {
    Json pj = Json{{"device", p.device}};
    pj.update(block_json(p.cost, l.window_s, p.committed_discount));
    if (p.nodes > 0) pj["nodes"] = p.nodes;
    if (p.nodes_tracked)
      pj["node_autoscaling"] = {{"node_hours", p.node_hours},
                                {"mean_nodes", l.window_s > 0 ? p.node_hours * 3600.0 / l.window_s : 0.0},
                                {"pinned_empty_node_hours", p.pinned_node_hours},
                                {"unneeded_empty_node_hours", p.unneeded_node_hours},
                                {"unschedulable_starts", p.unschedulable}};
    if (p.owned) pj["ownership"] = ownership_json(p.ownership);
    if (p.cpu_fallback) {
      const double billed = p.cost.billed_hours(), rate = billed > 0 ? p.cost.effective_usd() / billed : 0.0;
      pj["cpu_fallback"] = {{"device_hours", p.fallback_hours},
                            {"cpu_busy_device_hours", p.fallback_cpu_busy_hours},
                            {"usd", p.fallback_hours * rate},
                            {"note",
                             "devices of replicas fallen back to the host CPU: paid for, idle (in "
                             "idle_headroom and idle_waste, not busy)"}};
    }
    pools[p.name] = pj;
  }
  j["pools"] = pools;
  Json classes = Json::object();
  for (const auto& c : l.classes) {
    Json cj = {{"pool", c.pool},
               {"team", c.team},
               {"busy_device_hours", c.busy_hours},
               {"idle_share_device_hours", c.idle_share_hours}};
    if (!c.decode_pool.empty()) {
      cj["decode_pool"] = c.decode_pool;
      Json by = Json::object();
      for (const auto& x : c.parts)
        by[l.pools[size_t(x.pool)].name] = {{"share_of_pool", x.share},
                                            {"busy_device_hours", x.busy_hours},
                                            {"idle_share_device_hours", x.idle_share_hours},
                                            {"usd", x.busy_usd + x.idle_share_usd}};
      cj["by_pool"] = by;
    }
    cj.update(class_cost_json(c));
    classes[c.name] = cj;
  }
  j["classes"] = classes;
  return j;
}

std::string ledger_csv(const Ledger& l) {
  std::string o = "scope,name,kind,item,device_hours,usd_per_device_hour,usd\n";
  auto row = [&](const std::string& scope, const std::string& name, const char* kind, const std::string& item, double h,
                 double rate, double usd) {
    o += fmt::format("{},{},{},{},{:.9g},{:.9g},{:.9g}\n", scope, csv_quote(name), kind, item, h, rate, usd);
  };
  auto block = [&](const std::string& scope, const std::string& name, const CostBlock& c) {
    const double billed = c.billed_hours();
    double rate = billed > 0 ? c.effective_usd() / billed : 0.0;
    // a pool's buckets share one rate (an unused commitment apart), an empty one shown at it too;
    // the total's mix the pools' rates, so each has its own
    for (int b = 0; b < kBuckets && scope == "pool"; ++b)
      if (Bucket(b) != Bucket::committed_unused && c.hours[size_t(b)] > 0) rate = c.usd[size_t(b)] / c.hours[size_t(b)];
    for (int b = 0; b < kBuckets; ++b) {
      const double h = c.hours[size_t(b)];
      row(scope, name, "bucket", bucket_name(Bucket(b)), h, h > 0 ? c.usd[size_t(b)] / h : rate, c.usd[size_t(b)]);
    }
    for (const auto& p : c.lines) {
      row(scope, name, "list", p.category, p.device_hours, p.list_usd_per_hour, p.list_usd());
      row(scope, name, "effective", p.category, p.device_hours, p.effective_usd_per_hour, p.effective_usd());
    }
  };
  for (const auto& p : l.pools) block("pool", p.name, p.cost);
  for (const auto& c : l.classes) {
    row("class", c.name, "busy", "busy", c.busy_hours, c.busy_hours > 0 ? c.busy_usd / c.busy_hours : 0.0, c.busy_usd);
    row("class", c.name, "idle_share", "idle_share", c.idle_share_hours,
        c.idle_share_hours > 0 ? c.idle_share_usd / c.idle_share_hours : 0.0, c.idle_share_usd);
  }
  block("total", "total", l.total);
  return o;
}

}  // namespace fleetsim
