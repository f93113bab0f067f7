#include "report/report.hpp"

#include "cost/ledger.hpp"
#include "report/pool_json.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <vector>

namespace fleetsim {

namespace {

// Whole devices a pool holds at the start: tp x pp per replica, or replicas sharing devices (MIG
// slices, time slicing, MPS) packed replicas_per_device to one.
int pool_devices(const PoolSpec& P) {
  return P.devices() > 1 ? P.replicas * P.devices() : (P.replicas + P.replicas_per_device - 1) / P.replicas_per_device;
}

Json lat_json(const Histogram& h) {
  const LatencyStats l = latency_stats(h);
  Json j;
  j["count"] = l.count;
  if (l.count == 0) {
    for (const char* k : {"mean", "p50", "p90", "p95", "p99", "p999", "max"}) j[k] = nullptr;
    return j;
  }
  j["mean"] = l.mean;
  j["p50"] = l.p50;
  j["p90"] = l.p90;
  j["p95"] = l.p95;
  j["p99"] = l.p99;
  j["p999"] = l.p999;
  j["max"] = l.max;
  j["cdf"] = hist_cdf(h);
  return j;
}

}  // namespace

Json capacity_json(const Capacity& c, int64_t context_tokens, int block_tokens) {
  Json j;
  j["devices_per_replica"] = c.devices;  // every other figure is per device
  j["device_gib"] = c.device_gib;
  j["usable_gib"] = c.usable_gib;
  j["weights_gib"] = c.weights_gib;
  j["runtime_overhead_gib"] = c.runtime_overhead_gib;
  j["non_torch_gib"] = c.non_torch_gib;
  j["cuda_graph_gib"] = c.cuda_graph_gib;
  j["activation_gib"] = c.activation_gib;
  j["kv_gib"] = c.kv_gib;
  j["naive_kv_gib"] = c.naive_kv_gib;
  j["kv_bytes_per_token"] = c.kv_bytes_per_token;
  // a draft model's KV shares the blocks: a block's bytes are the two added
  if (c.draft_kv_bytes_per_token > 0) j["draft_kv_bytes_per_token"] = c.draft_kv_bytes_per_token;
  j["kv_block_tokens"] = block_tokens;
  j["kv_blocks"] = c.kv_blocks;
  j["kv_capacity_tokens"] = c.kv_capacity_tokens;
  j["window_blocks_per_seq"] = c.window_blocks_per_seq;
  j["context_tokens"] = context_tokens;
  j["max_concurrent_at_context"] = max_concurrent(c, context_tokens, block_tokens);
  return j;
}

namespace {

// `tiers`: a pool behind it has a host tier or a shared store, whose loads it reports (as 0 too, so
// that replications and classes all carry the key and a sweep's mean counts every one)
Json requests_json(const ClassTally& c, double window, bool tiers) {
  Json rq;
  const int64_t rejected = c.rejected_queue_full + c.rejected_too_long;
  rq["arrived"] = c.arrived;
  rq["completed"] = c.completed;
  rq["rejected"] = rejected;
  rq["rejected_by_reason"] = {{"queue_full", c.rejected_queue_full}, {"too_long", c.rejected_too_long}};
  rq["preempted"] = c.preempted;
  rq["retried"] = c.retried;
  rq["failed"] = c.failed;
  rq["cache_hits"] = c.cache_hits;
  rq["prefix_hits"] = c.prefix_hits;
  rq["prefix_tokens_reused"] = c.prefix_tokens_reused;
  if (tiers) rq["prefix_tokens_loaded"] = c.prefix_tokens_loaded;  // from a host tier or a shared store
  rq["prefix_reuse_share"] = ratio(double(c.prefix_tokens_reused), c.input_tokens);
  rq["rejection_fraction"] = ratio(double(rejected), double(c.arrived));
  rq["mean_in_system"] = ratio(c.in_system_s, window);
  rq["mean_waiting"] = ratio(c.queue_len_s, window);
  rq["good"] = c.good;
  rq["good_fraction"] = ratio(double(c.good), double(c.completed));
  return rq;
}

Json latency_json(const ClassTally& c, bool host = false) {
  Json lat;
  lat["ttft"] = lat_json(c.ttft);
  lat["tpot"] = lat_json(c.tpot);
  lat["e2e"] = lat_json(c.e2e);
  lat["queue_wait"] = lat_json(c.queue_wait);
  if (host) {
    lat["host_wait"] = lat_json(c.host_wait);
    lat["host_time"] = lat_json(c.host_time);
  }
  return lat;
}

// The host CPU stage of one pool or several (docs/model.md, "The host CPU"): its cores' busy share
// of the time they could serve (replicas ready or draining), beside the device's busy share, and
// how long requests waited for and spent on it (the classes it serves, merged).
Json host_json(const PoolTally& t, double core_s, const ClassTally& c, int cores) {
  Json h;
  if (cores > 0) h["cores_per_replica"] = cores;
  h["core_hours"] = core_s / 3600.0;
  h["busy_core_hours"] = t.host_busy_s / 3600.0;
  h["lost_core_hours"] = t.host_lost_s / 3600.0;
  h["utilization"] = ratio(t.host_busy_s, core_s);
  h["device_busy_fraction"] = ratio(t.busy_s, t.replica_s);
  const LatencyStats w = latency_stats(c.host_wait), ht = latency_stats(c.host_time);
  h["mean_wait_s"] = w.count ? Json(w.mean) : Json(nullptr);
  h["p99_wait_s"] = w.count ? Json(w.p99) : Json(nullptr);
  h["mean_time_s"] = ht.count ? Json(ht.mean) : Json(nullptr);
  h["p99_time_s"] = ht.count ? Json(ht.p99) : Json(nullptr);
  h["ttft_share"] = ratio(c.host_time.sum, c.ttft.sum);
  return h;
}

// Ready or draining replica-seconds x cores: when a pool's host cores can serve.
double host_core_s(const PoolSpec& P, const PoolTally& t) { return double(P.host.cores) * (t.replica_s - t.cold_s); }

Json throughput_json(const ClassTally& c, double window) {
  Json th;
  th["requests_per_s"] = ratio(double(c.completed), window);
  th["input_tokens_per_s"] = ratio(c.input_tokens, window);
  th["output_tokens_per_s"] = ratio(c.output_tokens, window);
  th["goodput_per_s"] = ratio(double(c.good), window);
  // "tok/s/user", as AIConfigurator and NIM report it: one user's decode speed, 1 / mean TPOT
  th["output_tok_per_s_per_user"] = ratio(double(c.tpot.n), c.tpot.sum);
  return th;
}

// Closed-loop users of one class: the identity clients = mean_in_system + mean_thinking, and the
// interactive response time law, X (R + Z) = clients (X completions per second, R mean e2e, Z mean
// think time), which holds in steady state up to edge effects and rejections.
double response_time_law(const ClassTally& c, double window, double think_mean_s) {
  if (!(window > 0) || c.e2e.n == 0) return 0.0;
  return double(c.completed) / window * (c.e2e.sum / double(c.e2e.n) + think_mean_s);
}

// Sessions of closed-loop users (classes with `turns`): the sessions whose last turn ended in the
// window, their mean turns and time (first send to last response), and that time per turn.
Json sessions_json(int64_t sessions, double turns, double session_s, double turn_s, double configured_turns) {
  const double n = double(sessions);
  return {{"completed", sessions},
          {"turns_per_session", ratio(turns, n)},
          {"configured_turns_per_session", configured_turns},
          {"mean_session_s", ratio(session_s, n)},
          {"mean_turn_s", ratio(turn_s, n)}};
}

// Sessions read from a trace (classes with `sessions: true`): the conversations whose last
// answer ended in the window, as sessions_json, and the follow-up turns sent in it, how many of
// them waited past their trace time for the answer they reply to, and how long.
Json trace_sessions_json(const ClassTally& c) {
  const double n = double(c.sessions);
  return {{"completed", c.sessions},
          {"turns_per_session", ratio(c.session_turns, n)},
          {"mean_session_s", ratio(c.session_s, n)},
          {"mean_turn_s", ratio(c.session_turn_s, n)},
          {"follow_ups", c.follow_ups},
          {"follow_ups_held", c.turns_held},
          {"held_fraction", ratio(double(c.turns_held), double(c.follow_ups))},
          {"mean_hold_s", ratio(c.turn_hold_s, double(c.turns_held))}};
}

Json closed_loop_json(const RequestClassSpec& C, const ClassTally& c, double window) {
  Json j;
  j["clients"] = C.clients;
  j["think_time_s"] = C.think_mean_s;
  // (a time integral kept as sums and differences of event times: clamped where rounding takes it
  // a hair below 0)
  j["mean_in_system"] = ratio(std::max(0.0, c.in_system_s), window);
  j["mean_thinking"] = ratio(std::max(0.0, c.thinking_s), window);
  j["response_time_law"] = response_time_law(c, window, C.think_mean_s);
  if (C.sessions)
    j["sessions"] = sessions_json(c.sessions, c.session_turns, c.session_s, c.session_turn_s, C.mean_turns);
  return j;
}

std::string goodput_bounds(const RequestClassSpec& C) {
  std::string b;
  auto add = [&](const char* k, double v) {
    if (v < kInf) b += fmt::format("{}{} <= {:g} s", b.empty() ? "" : ", ", k, v);
  };
  add("ttft", C.good_ttft_s);
  add("tpot", C.good_tpot_s);
  add("e2e", C.good_e2e_s);
  return b;
}

}  // namespace

Json run_report(const Scenario& s, const Tally& t) {
  const double window = t.window_s;
  const PoolSpec& P0 = s.pools[0];
  const RequestClassSpec& C0 = s.classes[0];
  Json r;
  r["schema_version"] = kSchemaVersion;
  r["kind"] = "run";

  Json sc;
  sc["name"] = s.name;
  sc["source"] = s.source;
  sc["overrides"] = s.overrides;
  sc["seed"] = s.seed;
  sc["duration_s"] = s.duration_s;
  sc["warmup_s"] = s.warmup_s;
  sc["device"] = P0.device.name;
  sc["model"] = P0.model.name;
  sc["weight_dtype"] = P0.weight_dtype;
  sc["kv_dtype"] = P0.kv_dtype;
  sc["batching"] = batching_name(P0.batching);
  int replicas = 0, devices = 0;
  for (const auto& P : s.pools) {
    replicas += P.replicas;
    devices += pool_devices(P);
  }
  sc["replicas"] = replicas;
  sc["devices"] = devices;  // at the start, whole devices (a MIG device or a shared one counts once)
  sc["replicas_per_device"] = P0.replicas_per_device;
  sc["tensor_parallel"] = P0.tp;
  sc["pipeline_parallel"] = P0.pp;
  sc["expert_parallel"] = P0.ep * P0.dp;       // devices the experts are spread over
  if (P0.dp > 1) sc["data_parallel"] = P0.dp;  // a replica is one rank of a DP-attention engine
  sc["router"] = router_name(P0.router);
  sc["arrival"] = arrival_name(C0.arrival);
  {  // trace rows dropped as unusable (failed requests, empty prompts): said, not silent
    int64_t skipped = 0;
    std::string why;
    for (const auto& C : s.classes)
      if (C.trace && C.trace->skipped > 0) {
        skipped += C.trace->skipped;
        why += (why.empty() ? "" : "; ") + (s.classes.size() > 1 ? C.name + ": " : "") + C.trace->skipped_reason;
      }
    if (skipped > 0) {
      sc["trace_rows_skipped"] = skipped;
      sc["trace_rows_skipped_reason"] = why;
    }
  }
  double rate = 0;
  for (const auto& C : s.classes) rate += C.rate_per_s;
  sc["rate_per_s"] = rate;
  if (C0.arrival == ArrivalKind::burst) sc["requests"] = C0.clients;
  if (C0.arrival == ArrivalKind::concurrency) {
    sc["clients"] = C0.clients;
    if (C0.max_requests > 0) sc["requests"] = C0.max_requests;  // a benchmark of so many requests
    sc["think_time_s"] = C0.think.describe;
    if (C0.sessions) sc["turns"] = C0.turns.describe;
  }
  // the fleet's bounds only where every class has the same: a class without bounds counts every
  // completed request as good, so a fleet-wide figure under one class's bounds would misstate it
  bool same_bounds = true;
  for (const auto& C : s.classes) same_bounds = same_bounds && goodput_bounds(C) == goodput_bounds(C0);
  if (same_bounds && !goodput_bounds(C0).empty()) sc["goodput"] = goodput_bounds(C0);
  sc["prompt_tokens"] = C0.prompt.describe;
  sc["output_tokens"] = C0.output.describe;
  sc["perf_model"] = perf_name(P0);
  sc["step_time"] = step_time_json(P0);
  sc["engine"] = engine_json(P0);
  sc["pools"] = s.pools.size();
  sc["classes"] = s.classes.size();
  r["scenario"] = sc;

  // every class together, every pool together
  auto all = std::make_unique<ClassTally>();
  class_tally_clear(*all);
  for (size_t c = 0; c < s.classes.size(); ++c) class_tally_merge(*all, t.classes[c]);
  PoolTally pools{};
  pool_tally_clear(pools);
  double peak_flops_s = 0, peak_bytes_s = 0, kv_cap_s = 0, fixed_s = 0, kv_bytes_s = 0, mem_s = 0;
  const Ledger ledger = make_ledger(s, t);
  // the place-seconds a pool's figures divide by: its replicas', or on devices shared k ways (time
  // slicing, MPS) every place of a device in use, held or not, so that a lone replica running at the
  // device's full speed is measured against the whole device, not a k-th of it; each place is a k-th
  // of the device's peaks (PoolParams) and of its memory
  // (the places of devices in use: held ones, the gap no commitment pays, and committed places
  // not held, which the gap leaves out; exact unless the commitment is larger than the places in use)
  auto place_s = [](const PoolSpec& P, const PoolTally& pt) {
    return P.shared_by() > 1 ? pt.replica_s + pt.share_gap_s + pt.committed_unused_s : pt.replica_s;
  };
  auto place_memory_bytes = [](const PoolSpec& P, const PoolParams& pp) {
    return pp.device_memory_bytes / double(P.shared_by());
  };
  for (size_t i = 0; i < s.pools.size(); ++i) {
    const PoolSpec& P = s.pools[i];
    const PoolParams pp = P.params();
    const PoolTally& pt = t.pools[i];
    pool_tally_merge(pools, pt);
    peak_flops_s += place_s(P, pt) * pp.peak_flops_per_s;
    peak_bytes_s += place_s(P, pt) * pp.peak_bytes_per_s;
    kv_cap_s += pt.replica_s * double(P.capacity.kv_blocks);
    fixed_s += pt.replica_s * pp.fixed_memory_bytes;
    kv_bytes_s += pt.kv_block_s * P.capacity.block_bytes_per_token() * P.kv_block_tokens;
    mem_s += place_s(P, pt) * place_memory_bytes(P, pp);
  }

  // the host CPU stage, where a pool has one: every such pool and its classes together
  bool any_host = false;
  {
    PoolTally hp{};
    pool_tally_clear(hp);
    auto hc = std::make_unique<ClassTally>();
    class_tally_clear(*hc);
    double core_s = 0;
    for (size_t i = 0; i < s.pools.size(); ++i) {
      if (s.pools[i].host.cores == 0) continue;
      any_host = true;
      pool_tally_merge(hp, t.pools[i]);
      core_s += host_core_s(s.pools[i], t.pools[i]);
    }
    for (size_t c = 0; c < s.classes.size(); ++c)
      if (s.pools[size_t(s.classes[c].pool)].host.cores > 0) class_tally_merge(*hc, t.classes[c]);
    if (any_host) r["host"] = host_json(hp, core_s, *hc, s.pools.size() == 1 ? s.pools[0].host.cores : 0);
  }

  auto tiered = [](const PoolSpec& P) { return P.cache_cpu_gib > 0 || P.cache_remote_gib > 0; };
  r["requests"] = requests_json(*all, window, std::any_of(s.pools.begin(), s.pools.end(), tiered));
  r["latency_s"] = latency_json(*all, any_host);
  r["throughput"] = throughput_json(*all, window);
  r["utilization"] = utilization_json(pools, peak_flops_s, peak_bytes_s, kv_cap_s, fixed_s, kv_bytes_s, mem_s);
  r["cost"] = cost_json(ledger.total);

  // a request's mean context on pool pi: of the first class it serves (a decode pool: the first
  // class its prefill pool serves; else the first class); a session's prompt carries the
  // conversation so far, so its mean is measured, not the new turn's; at most the model's context,
  // to which a request's output is cut
  auto mean_context = [&](size_t pi) {
    size_t c = 0;
    while (c < s.classes.size() && size_t(s.classes[c].pool) != pi) ++c;
    if (c == s.classes.size())
      for (c = 0; c < s.classes.size() && s.pools[size_t(s.classes[c].pool)].decode_pool != int(pi);) ++c;
    if (c == s.classes.size()) c = 0;
    const RequestClassSpec& C = s.classes[c];
    const ClassTally& T = t.classes[c];
    const double mean_prompt = (C.sessions || C.trace_sessions) && T.completed > 0
                                   ? T.input_tokens / double(T.completed)
                                   : C.mean_prompt_tokens;
    return std::min(int64_t(std::llround(mean_prompt + C.mean_output_tokens)), int64_t(s.pools[pi].model.max_context));
  };
  const int64_t mean_ctx = mean_context(0);
  Json cap = capacity_json(P0.capacity, mean_ctx, P0.kv_block_tokens);
  cap["mean_context_tokens"] = mean_ctx;
  cap["max_concurrent_at_mean_context"] = max_concurrent(P0.capacity, mean_ctx, P0.kv_block_tokens);
  if (shares_device(P0)) cap["sharing"] = sharing_json(P0);
  r["capacity"] = cap;

  r["fleet"] = fleet_json(pools, window);
  {
    bool fallback = false, thermal = false;
    for (const auto& P : s.pools) {
      fallback = fallback || P.cpu_fallback();
      thermal = thermal || P.thermal();
    }
    slowdown_json(r["fleet"], pools, fallback, thermal);
    // one pool's signal reads alone; several pools' signals do not add up
    if (s.pools.size() == 1 && P0.autoscale.enabled)
      r["fleet"]["autoscale_signal"] = autoscale_signal_json(P0.autoscale, t.pools[0]);
  }

  // every closed-loop class together
  {
    int64_t clients = 0;
    double in_system_s = 0, thinking_s = 0, law = 0;
    int64_t sessions = 0;
    double turns = 0, session_s = 0, turn_s = 0, configured = 0, session_clients = 0;
    bool any = false, any_sessions = false;
    for (size_t c = 0; c < s.classes.size(); ++c)
      if (s.classes[c].arrival == ArrivalKind::concurrency) {
        any = true;
        clients += s.classes[c].clients;
        in_system_s += t.classes[c].in_system_s;
        thinking_s += t.classes[c].thinking_s;
        law += response_time_law(t.classes[c], window, s.classes[c].think_mean_s);
        if (s.classes[c].sessions) {
          any_sessions = true;
          sessions += t.classes[c].sessions;
          turns += t.classes[c].session_turns;
          session_s += t.classes[c].session_s;
          turn_s += t.classes[c].session_turn_s;
          configured += s.classes[c].mean_turns * s.classes[c].clients;  // weighted by users
          session_clients += s.classes[c].clients;
        }
      }
    if (any)
      r["closed_loop"] = {{"clients", clients},
                          {"mean_in_system", ratio(std::max(0.0, in_system_s), window)},
                          {"mean_thinking", ratio(std::max(0.0, thinking_s), window)},
                          {"response_time_law", law}};
    if (any_sessions)
      r["closed_loop"]["sessions"] = sessions_json(sessions, turns, session_s, turn_s, configured / session_clients);
  }

  // every class whose trace is replayed as sessions together
  {
    ClassTally all{};
    bool any = false;
    for (size_t c = 0; c < s.classes.size(); ++c)
      if (s.classes[c].trace_sessions) {
        any = true;
        all.sessions += t.classes[c].sessions;
        all.session_turns += t.classes[c].session_turns;
        all.session_s += t.classes[c].session_s;
        all.session_turn_s += t.classes[c].session_turn_s;
        all.follow_ups += t.classes[c].follow_ups;
        all.turns_held += t.classes[c].turns_held;
        all.turn_hold_s += t.classes[c].turn_hold_s;
      }
    if (any) r["sessions"] = trace_sessions_json(all);
  }

  if (s.multi) {
    Json classes = Json::object();
    std::map<std::string, double> team_usd;
    for (size_t c = 0; c < s.classes.size(); ++c) {
      const RequestClassSpec& C = s.classes[c];
      const ClassTally& ct = t.classes[c];
      Json cj;
      cj["pool"] = s.pools[size_t(C.pool)].name;
      cj["team"] = C.team;
      {
        Json w;
        w["arrival"] = arrival_name(C.arrival);
        if (C.arrival == ArrivalKind::concurrency || C.arrival == ArrivalKind::burst)
          w["clients"] = C.clients;
        else
          w["rate_per_s"] = C.rate_per_s;
        if (C.sessions) w["turns"] = C.turns.describe;
        if (C.trace && C.trace->skipped > 0) {
          w["trace_rows_skipped"] = C.trace->skipped;
          w["trace_rows_skipped_reason"] = C.trace->skipped_reason;
        }
        w["prompt_tokens"] = C.prompt.describe;
        w["output_tokens"] = C.output.describe;
        cj["workload"] = w;
      }
      cj["requests"] = requests_json(ct, window, tiered(s.pools[size_t(C.pool)]));
      cj["latency_s"] = latency_json(ct, s.pools[size_t(C.pool)].host.cores > 0);
      cj["throughput"] = throughput_json(ct, window);
      if (C.arrival == ArrivalKind::concurrency) cj["closed_loop"] = closed_loop_json(C, ct, window);
      if (C.trace_sessions) cj["sessions"] = trace_sessions_json(ct);
      if (!goodput_bounds(C).empty()) cj["goodput"] = goodput_bounds(C);
      cj["cost"] = class_cost_json(ledger.classes[c]);
      classes[C.name] = cj;
      team_usd[C.team] += ledger.classes[c].usd();
    }
    r["classes"] = classes;
    Json pj = Json::object();
    for (size_t i = 0; i < s.pools.size(); ++i) {
      const PoolSpec& P = s.pools[i];
      const PoolParams pp = P.params();
      const PoolTally& pt = t.pools[i];
      Json one;
      one["device"] = P.device.name;
      one["replicas_per_device"] = P.replicas_per_device;
      one["devices"] = pool_devices(P);
      one["model"] = P.model.name;
      one["replicas"] = P.replicas;
      one["tensor_parallel"] = P.tp;
      one["pipeline_parallel"] = P.pp;
      one["expert_parallel"] = P.ep * P.dp;
      if (P.dp > 1) one["data_parallel"] = P.dp;
      one["perf_model"] = perf_name(P);
      one["step_time"] = step_time_json(P);
      one["engine"] = engine_json(P);
      one["fleet"] = fleet_json(pt, window);
      slowdown_json(one["fleet"], pt, P.cpu_fallback(), P.thermal());
      if (P.autoscale.enabled) one["fleet"]["autoscale_signal"] = autoscale_signal_json(P.autoscale, pt);
      one["utilization"] =
          utilization_json(pt, place_s(P, pt) * pp.peak_flops_per_s, place_s(P, pt) * pp.peak_bytes_per_s,
                           pt.replica_s * double(P.capacity.kv_blocks), pt.replica_s * pp.fixed_memory_bytes,
                           pt.kv_block_s * P.capacity.block_bytes_per_token() * P.kv_block_tokens,
                           place_s(P, pt) * place_memory_bytes(P, pp));
      one["cost"] = cost_json(ledger.pools[i].cost);
      one["capacity"] = capacity_json(P.capacity, mean_context(i), P.kv_block_tokens);
      if (P.host.cores > 0) {
        auto pc = std::make_unique<ClassTally>();
        class_tally_clear(*pc);
        for (size_t c = 0; c < s.classes.size(); ++c)
          if (size_t(s.classes[c].pool) == i) class_tally_merge(*pc, t.classes[c]);
        one["host"] = host_json(pt, host_core_s(P, pt), *pc, P.host.cores);
      }
      if (shares_device(P)) one["capacity"]["sharing"] = sharing_json(P);
      if (const Json pc = prefix_cache_json(s, t, ledger, i); !pc.is_null()) one["prefix_cache"] = pc;
      if (P.decode_pool >= 0)
        one["disaggregation"] = {{"decode_pool", s.pools[size_t(P.decode_pool)].name},
                                 {"link", P.kv_link},
                                 {"link_gb_s", P.kv_link_gb_s},
                                 {"lanes", P.kv_link_lanes},
                                 {"link_latency_s", P.kv_link_latency_us * 1e-6},
                                 {"kv_bytes_per_token", P.kv_bytes_per_token},
                                 {"kv_window_bytes_per_token", P.kv_window_bytes_per_token},
                                 {"transfers", pt.kv_sent},
                                 {"transferred_gb", pt.kv_sent_bytes / 1e9},
                                 {"mean_transfer_s", ratio(pt.kv_sent_s, pt.kv_sent)}};
      pj[P.name] = one;
    }
    r["pools"] = pj;
    Json tj = Json::object();
    for (const auto& [team, usd] : team_usd)
      tj[team] = {{"usd", usd}, {"share", ratio(usd, ledger.total.effective_usd())}};
    r["teams"] = tj;
  }

  if (!s.multi)
    if (const Json pc = prefix_cache_json(s, t, ledger, 0); !pc.is_null()) r["prefix_cache"] = pc;
  r["ledger"] = ledger_json(ledger);

  Json sim;
  sim["events"] = t.events;
  sim["steps"] = pools.steps;
  sim["window_s"] = window;
  r["simulation"] = sim;
  return r;
}

}  // namespace fleetsim
