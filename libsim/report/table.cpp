// The table views of the run and capacity documents: what `fleetsim run` and `fleetsim capacity`
// print by default, read from the same JSON the other formats carry.
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <string>
#include <vector>

#include "base/text.hpp"
#include "report/report.hpp"

namespace fleetsim {

std::string fleet_label(int devices, int replicas, int replicas_per_device, const std::string& device,
                        const std::string& times) {
  if (replicas_per_device <= 1) return fmt::format("{}{}{}", devices, times, device);
  if (device.find(':') != std::string::npos) return fmt::format("{}{}{}", replicas, times, device);  // a MIG slice
  return fmt::format("{}{}{} shared by {} replica{}", devices, times, device, replicas, replicas == 1 ? "" : "s");
}

namespace {
// fleet_label of a pool's (or a one-pool scenario's) JSON
std::string json_fleet_label(const Json& p) {
  return fleet_label(p["devices"].get<int>(), p["replicas"].get<int>(),
                     p.contains("replicas_per_device") ? p["replicas_per_device"].get<int>() : 1,
                     p["device"].get<std::string>(), " x ");
}
}  // namespace

namespace {

std::string num(const Json& v, int prec = 3) {
  if (v.is_null()) return "-";
  if (v.is_number_integer() || v.is_number_unsigned()) return fmt::format("{}", v.get<int64_t>());
  const double x = v.get<double>();
  return fmt::format("{:.{}f}", x, prec);
}
std::string ms(const Json& v) { return v.is_null() ? "-" : fmt::format("{:.1f}", v.get<double>() * 1000.0); }
std::string pct(const Json& v) { return v.is_null() ? "-" : fmt::format("{:.1f}%", v.get<double>() * 100.0); }
// `prec` decimals, or more where they would leave fewer than two significant digits (an embedding
// request costs a few millionths of a dollar: $0.0000037, not $0.00000)
std::string usd(const Json& v, int prec = 4) {
  if (v.is_null()) return "-";
  const double x = v.get<double>(), a = std::fabs(x);
  if (a > 0 && a < std::pow(10.0, 1 - prec)) prec = std::min(15, 1 - int(std::floor(std::log10(a))));
  return fmt::format("${:.{}f}", x, prec);
}

std::string hours(double h) { return fmt::format("{:.2f}", h); }
std::string dollars(double x) { return x >= 1000 ? fmt::format("${:.0f}", x) : fmt::format("${:.2f}", x); }

// Rows of cells, each column as wide as its widest cell: text left, figures right.
std::string columns(const std::vector<std::vector<std::string>>& rows, const std::string& indent) {
  std::vector<size_t> w;
  for (const auto& r : rows)
    for (size_t i = 0; i < r.size(); ++i) {
      if (w.size() <= i) w.push_back(0);
      w[i] = std::max(w[i], r[i].size());
    }
  std::string o;
  for (const auto& r : rows) {
    std::string line = indent;
    for (size_t i = 0; i < r.size(); ++i) {
      const bool figure =
          !r[i].empty() && (std::isdigit((unsigned char)r[i][0]) || r[i][0] == '$' ||
                            (r[i][0] == '-' && (r[i].size() == 1 || std::isdigit((unsigned char)r[i][1]))));
      line += figure ? fmt::format("{:>{}}", r[i], w[i]) : fmt::format("{:<{}}", r[i], w[i]);
      if (i + 1 < r.size()) line += "  ";
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    o += line + "\n";
  }
  return o;
}

// One line per class and per pool: the figures the totals above add up.
// How much a pool reused from prefix caching, from which cache, and what it saved.
std::string prefix_cache_line(const std::string& name, const Json& c) {
  const std::string where =
      c["scope"] == "replica"
          ? fmt::format("per replica (LRU, {} blocks of {} tokens, {} evicted)", num(c["entries_per_replica"], 0),
                        num(c["block_tokens"], 0), num(c["evicted_blocks"], 0))
          : std::string(
                "unbounded (an upper bound: a trace's blocks pool-wide, sessions and shared prefixes per replica)");
  std::string host;
  if (c.contains("remote"))
    host = (c.contains("cpu_entries_per_replica")
                ? fmt::format("; host tier {} blocks", num(c["cpu_entries_per_replica"], 0))
                : std::string()) +
           fmt::format("; shared store {} blocks; {} tokens loaded ({} from the store) in {} s",
                       num(c["remote"]["entries"], 0), num(c["loaded_tokens"], 0), num(c["remote"]["loaded_tokens"], 0),
                       num(c["load_s"], 2));
  else if (c.contains("loaded_tokens"))
    host = fmt::format("; host tier {} blocks, {} tokens loaded over PCIe in {} s",
                       num(c["cpu_entries_per_replica"], 0), num(c["loaded_tokens"], 0), num(c["load_s"], 2));
  return fmt::format("prefix cache{} {}{}: {} of input tokens reused, about {} of prefill saved\n", name, where, host,
                     pct(c["reuse_share"]), usd(c["saved_prefill_usd"], 2));
}

// What an autoscaler read, in its signal's units (a share, seconds of TTFT, requests a replica);
// nothing where it never read.
std::string autoscaler_line(const Json& a, const std::string& pool) {
  if (!(a["evaluations"].get<double>() > 0)) return "";
  const std::string sig = a["signal"].get<std::string>();
  auto val = [&](const Json& v) {
    return sig == "busy" || sig == "host_cpu" ? pct(v) : sig == "ttft" ? ms(v) + " ms" : num(v, 1) + " a replica";
  };
  return fmt::format("autoscaler  {}{} read {} on average, {} at most, against a target of {} ({} evaluations)\n", pool,
                     sig, val(a["mean"]), val(a["peak"]), val(a["target"]), num(a["evaluations"], 0));
}

std::string by_class_and_pool(const Json& r) {
  std::vector<std::vector<std::string>> rows = {{"by class", "completed", "rejected", "ttft p50", "ttft p99",
                                                 "tpot p50", "e2e p99", "output tok/s", "$", "$/1M out"}};
  for (auto it = r["classes"].begin(); it != r["classes"].end(); ++it) {
    const Json& c = it.value();
    const Json& l = c["latency_s"];
    rows.push_back({"  " + it.key(), num(c["requests"]["completed"]), num(c["requests"]["rejected"]),
                    ms(l["ttft"]["p50"]), ms(l["ttft"]["p99"]), ms(l["tpot"]["p50"]), ms(l["e2e"]["p99"]),
                    num(c["throughput"]["output_tokens_per_s"], 1), usd(c["cost"]["usd"], 2),
                    usd(c["cost"]["per_million_output_tokens_usd"], 3)});
  }
  std::string o = columns(rows, "");
  rows.clear();
  rows.push_back(
      {"by pool", "devices", "replicas", "busy", "idle", "cold start", "mean batch", "device-h", "$", "$/1M out"});
  for (auto it = r["pools"].begin(); it != r["pools"].end(); ++it) {
    const Json& p = it.value();
    const Json& u = p["utilization"];
    rows.push_back({"  " + it.key(), json_fleet_label(p), num(p["fleet"]["mean_replicas"], 2), pct(u["busy_fraction"]),
                    pct(u["idle_fraction"]), pct(u["cold_start_fraction"]), num(u["mean_batch_size"], 1),
                    hours(p["cost"]["device_hours"].get<double>()), usd(p["cost"]["total_usd"], 2),
                    usd(p["cost"]["per_million_output_tokens_usd"], 3)});
  }
  o += columns(rows, "");
  // the host CPU stage beside the device it feeds
  rows.clear();
  rows.push_back(
      {"host CPU", "cores/replica", "host busy", "device busy", "wait mean", "wait p99", "host time p99", "of TTFT"});
  for (auto it = r["pools"].begin(); it != r["pools"].end(); ++it) {
    if (!it.value().contains("host")) continue;
    const Json& h = it.value()["host"];
    rows.push_back({"  " + it.key(), num(h["cores_per_replica"]), pct(h["utilization"]), pct(h["device_busy_fraction"]),
                    ms(h["mean_wait_s"]) + " ms", ms(h["p99_wait_s"]) + " ms", ms(h["p99_time_s"]) + " ms",
                    pct(h["ttft_share"])});
  }
  if (rows.size() > 1) o += columns(rows, "");
  for (auto it = r["pools"].begin(); it != r["pools"].end(); ++it)
    if (it.value().contains("prefix_cache")) o += prefix_cache_line(" " + it.key(), it.value()["prefix_cache"]);
  // disaggregated prefill: what each prefill pool sent its decode pool, and how long it took
  for (auto it = r["pools"].begin(); it != r["pools"].end(); ++it) {
    if (!it.value().contains("disaggregation")) continue;
    const Json& d = it.value()["disaggregation"];
    o += fmt::format("kv transfer {} -> {} over {} ({} GB/s x {} lanes, {} us): {} prompts, {} GB, mean {} ms\n",
                     it.key(), d["decode_pool"].get<std::string>(), d["link"].get<std::string>(),
                     num(d["link_gb_s"], 1), num(d["lanes"], 0), num(Json(d["link_latency_s"].get<double>() * 1e6), 1),
                     num(d["transfers"], 0), num(d["transferred_gb"], 1), ms(d["mean_transfer_s"]));
  }
  // shared fate, where it struck: a pool's faults and the replicas they took down with them (those
  // on a lost device: time-sliced, MPS clients, MIG slices; or beside an MPS client that crashed)
  for (auto it = r["pools"].begin(); it != r["pools"].end(); ++it) {
    const Json& f = it.value()["fleet"];
    if (f.value("neighbour_failures", 0.0) > 0)
      o += fmt::format("  {}: {} crashes and {} interruptions took down {} more replicas sharing their devices\n",
                       it.key(), num(f["crashes"], 0), num(f["interruptions"], 0), num(f["neighbour_failures"], 0));
  }
  return o;
}

// The ledger: pricing lines per pool (hours x rate = dollars, list beside effective), where the
// hours went, and what each class paid.
std::string ledger_table(const Json& r) {
  const Json& L = r["ledger"];
  std::string o = "cost        device-hours x rate = dollars (effective; list price beside)\n";
  std::vector<std::vector<std::string>> rows;
  for (auto it = L["pools"].begin(); it != L["pools"].end(); ++it)
    for (const auto& line : it.value()["pricing"])
      rows.push_back({"pool " + it.key(), line["category"].get<std::string>(),
                      hours(line["device_hours"].get<double>()), "x",
                      fmt::format("${:.3f}/h", line["effective_usd_per_hour"].get<double>()), "=",
                      dollars(line["effective_usd"].get<double>()),
                      fmt::format("(list ${:.2f}/h = {})", line["list_usd_per_hour"].get<double>(),
                                  dollars(line["list_usd"].get<double>()))});
  rows.push_back({"total", "", hours(L["billed_device_hours"].get<double>()), "x",
                  L["usd_per_device_hour"].is_null() ? "-" : usd(L["usd_per_device_hour"], 3) + "/h", "=",
                  dollars(L["effective_usd"].get<double>()),
                  fmt::format("(list {})", dollars(L["list_usd"].get<double>()))});
  o += columns(rows, "  ");
  rows.clear();
  std::string where = "where       ";
  bool first = true;
  for (auto it = L["buckets"].begin(); it != L["buckets"].end(); ++it) {
    const double h = it.value()["device_hours"].get<double>();
    if (h <= 0 && it.key() != "busy_decode") continue;
    std::string name = it.key();
    std::replace(name.begin(), name.end(), '_', ' ');
    where += fmt::format("{}{} {} h {}", first ? "" : " | ", name, hours(h), dollars(it.value()["usd"].get<double>()));
    first = false;
  }
  o += where + "\n";
  for (auto it = L["pools"].begin(); it != L["pools"].end(); ++it) {
    if (!it.value().contains("node_autoscaling")) continue;
    const Json& n = it.value()["node_autoscaling"];
    o += fmt::format(
        "{:<12}pool {}: {:.2f} nodes up on average, {} node-hours; empty nodes kept {} h by a pinned pod and "
        "{} h waiting for removal; {:g} replica start{} found no node\n",
        "nodes", it.key(), n["mean_nodes"].get<double>(), hours(n["node_hours"].get<double>()),
        hours(n["pinned_empty_node_hours"].get<double>()), hours(n["unneeded_empty_node_hours"].get<double>()),
        n["unschedulable_starts"].get<double>(), n["unschedulable_starts"].get<double>() == 1 ? "" : "s");
  }
  for (auto it = L["pools"].begin(); it != L["pools"].end(); ++it) {
    if (!it.value().contains("ownership")) continue;
    const Json& w = it.value()["ownership"];
    std::string parts;
    for (const auto& c : w["components"])
      parts += fmt::format("{}{} {}", parts.empty() ? "" : " + ", c["name"].get<std::string>(),
                           dollars(c["usd"].get<double>()));
    o += fmt::format(
        "{:<12}pool {}: {} replicas on {} node{} ({} device-hours stranded); {} = {}, ${:.3f}/device-hour against "
        "${:.2f} on demand; owning breaks even {}\n",
        w["model"].get<std::string>(), it.key(), w["owned_replicas"].get<int>(), w["owned_nodes"].get<int>(),
        w["owned_nodes"].get<int>() == 1 ? "" : "s", hours(w["stranded_device_hours"].get<double>()), parts,
        dollars(w["usd"].get<double>()), w["usd_per_device_hour"].get<double>(),
        w["on_demand_usd_per_device_hour"].get<double>(),
        w["break_even_utilization"].is_number()
            ? fmt::format("at {:.0f}% of the owned hours", 100.0 * w["break_even_utilization"].get<double>())
            : std::string("never (on-demand capacity is free)"));
    const Json& ys = w["years"];
    if (!ys.empty()) {
      const Json& last = ys.back();
      o += fmt::format(
          "{:<12}over {} year{}: owning {} (capex as paid + running costs), renting the same hours {}; {}\n", "",
          last["year"].get<int>(), last["year"].get<int>() == 1 ? "" : "s",
          dollars(last["own_cumulative_usd"].get<double>()), dollars(last["rent_cumulative_usd"].get<double>()),
          w["owning_cheaper_from_year"].is_null()
              ? std::string("renting stays cheaper")
              : fmt::format("owning is cheaper from year {}", w["owning_cheaper_from_year"].get<int>()));
    }
    if (w.contains("newer_device")) {
      const Json& nd = w["newer_device"];
      const Json &cur = nd["current"], &nw = nd["newer"], &y1 = nd["years"].front();
      auto year = [](const Json& y, const char* never) {
        return y.is_null() ? std::string(never) : fmt::format("from year {}", y.get<int>());
      };
      o += fmt::format(
          "{:<12}newer: {} x {} against {} x {}: {} per 1M tokens in year 1 against {} ({} on "
          "running costs alone); p99 TTFT {} s against {} s; cheaper to buy {}; replacing the "
          "paid-for fleet pays {}\n",
          "", nw["replicas"].get<int>(), nw["device"].get<std::string>(), cur["replicas"].get<int>(),
          cur["device"].get<std::string>(), usd(y1["newer_usd_per_million_tokens"], 3),
          usd(y1["current_usd_per_million_tokens"], 3), usd(y1["current_running_usd_per_million_tokens"], 3),
          num(nw["p99_ttft_s"], 2), num(cur["p99_ttft_s"], 2), year(nd["newer_cheaper_from_year"], "never in the view"),
          year(nd["replacing_pays_from_year"], "never in the view"));
    }
    if (w.contains("repair")) {
      const Json& rp = w["repair"];
      o += fmt::format(
          "{:<12}repair: {:g} failure{} in the window waited {} device-hours for a device ({} spare{}, {:g} days "
          "to repair): availability {:.1f}%\n",
          "", rp["failures"].get<double>(), rp["failures"].get<double>() == 1 ? "" : "s",
          hours(rp["awaiting_device_hours"].get<double>()), rp["spares"].get<int>(),
          rp["spares"].get<int>() == 1 ? "" : "s", rp["repair_days"].get<double>(),
          100.0 * rp["availability"].get<double>());
    }
  }
  if (L["classes"].size() > 1) {
    for (auto it = L["classes"].begin(); it != L["classes"].end(); ++it) {
      const Json& c = it.value();
      rows.push_back({"class " + it.key(), "pool " + c["pool"].get<std::string>(),
                      "team " + c["team"].get<std::string>(), dollars(c["usd"].get<double>()), "= busy",
                      dollars(c["busy_usd"].get<double>()), "+ idle share", dollars(c["idle_share_usd"].get<double>()),
                      "per 1M in", usd(c["per_million_input_tokens_usd"], 3), "out",
                      usd(c["per_million_output_tokens_usd"], 3)});
    }
    o += columns(rows, "  ");
  }
  const Json& co = r["cost"];
  o += fmt::format("per unit    request {}   per 1M input {}   per 1M output {}   idle {} of {}\n",
                   usd(co["per_request_usd"], 5), usd(co["per_million_input_tokens_usd"], 3),
                   usd(co["per_million_output_tokens_usd"], 3), dollars(co["idle_usd"].get<double>()),
                   dollars(co["total_usd"].get<double>()));
  o += fmt::format("30 days     {} ({})\n", dollars(L["projection_30d"]["effective_usd"].get<double>()),
                   L["projection_30d"]["note"].get<std::string>());
  return o;
}

}  // namespace

// What the run's step times came from and how sure they are: the profile and its measured error,
// the physics model's cross-validated one, or "uncalibrated" (the table's "steps" line, the HTML
// report's summary).
std::string step_time_summary(const Json& sc) {
  if (!sc.contains("step_time")) return "";
  const Json& st = sc["step_time"];
  if (st["calibrated"].get<bool>()) {
    std::string err;
    const Json& h = st["held_out"];
    for (const char* k : {"mean_ttft", "mean_tpot", "mean_e2e"})
      if (h.contains(std::string("median_abs_error_") + k))
        err += fmt::format("{}{} {:.0f}%", err.empty() ? "" : ", ", k,
                           100.0 * h[std::string("median_abs_error_") + k].get<double>());
    const bool applies = !st.contains("error_applies") || st["error_applies"].get<bool>();
    if (st.contains("cross_validated") && !applies) {
      return fmt::format("{}; latencies as the {} sees them", st["note"].get<std::string>(),
                         st["latency_at"].get<std::string>());
    } else if (st.contains("cross_validated")) {
      const Json& x = st["cross_validated"];
      std::string xe;
      for (const char* k : {"mean_ttft", "mean_tpot", "mean_e2e"})
        if (x.contains(std::string("median_abs_error_") + k))
          xe += fmt::format("{}{} {:.0f}%", xe.empty() ? "" : ", ", k,
                            100.0 * x[std::string("median_abs_error_") + k].get<double>());
      return fmt::format(
          "physics model (median error on {} held-out runs: {}; on a device left out of the "
          "fit: {}); latencies as the {} sees them",
          h["points"].get<int>(), err.empty() ? "none measured" : err, xe.empty() ? "not measured" : xe,
          st["latency_at"].get<std::string>());
    } else if (!applies)
      return fmt::format("profile {}: {}", st["profile"].get<std::string>(), st["note"].get<std::string>());
    else if (h["points"].get<int>() == 0 && st.contains("step_time_error")) {
      const Json& e = st["step_time_error"];
      const Json& he = e["held_out_median_abs_error"];
      return fmt::format(
          "calibrated profile {} (fitted on {} step timings: median step-time error {}; the latencies' "
          "error is not measured)",
          st["profile"].get<std::string>(), e["steps"].get<int>(),
          he.is_number() ? fmt::format("{:.1f}% on steps held out of the fit", 100.0 * he.get<double>())
                         : std::string("not held out"));
    } else
      return fmt::format("calibrated profile {} (median error on {} held-out runs: {})",
                         st["profile"].get<std::string>(), h["points"].get<int>(), err.empty() ? "none measured" : err);
  } else {
    // a speculating pool's note says how its draft is priced (or that it is not)
    const std::string note = st.value("note", std::string());
    const size_t spec = note.find("; speculative decoding");
    return fmt::format("{} (uncalibrated: docs/validation.md gives its error; `fleetsim fit` makes a profile){}",
                       sc["perf_model"].get<std::string>(), spec == std::string::npos ? "" : note.substr(spec));
  }
}

namespace {
std::string run_table(const Json& r) {
  const Json& sc = r["scenario"];
  std::string o;
  std::string par;
  const bool multi = sc["pools"].get<int>() > 1 || sc["classes"].get<int>() > 1;
  if (multi) {
    std::string pools;
    for (auto it = r["pools"].begin(); it != r["pools"].end(); ++it)
      pools += fmt::format("{}{}: {}", pools.empty() ? "" : ", ", it.key(), json_fleet_label(it.value()));
    o += fmt::format("scenario  {}  ({} devices in {} replicas; {})\n", sc["name"].get<std::string>(),
                     sc.contains("devices") ? sc["devices"].get<int>() : sc["replicas"].get<int>(),
                     sc["replicas"].get<int>(), pools);
  } else {
    if (sc["tensor_parallel"].get<int>() * sc["pipeline_parallel"].get<int>() > 1)
      par = fmt::format(" in {} replica{} of tp {} x pp {}", sc["replicas"].get<int>(),
                        sc["replicas"].get<int>() == 1 ? "" : "s", sc["tensor_parallel"].get<int>(),
                        sc["pipeline_parallel"].get<int>());
    o += fmt::format("scenario  {}  ({}{} {}, {} batching, router {})\n", sc["name"].get<std::string>(),
                     json_fleet_label(sc), par, sc["model"].get<std::string>(), sc["batching"].get<std::string>(),
                     sc["router"].get<std::string>());
  }
  std::string arrivals;
  if (sc.contains("clients"))
    arrivals = fmt::format(
        "{} closed-loop clients (think time {}{}{})", sc["clients"].get<int64_t>(),
        sc["think_time_s"].get<std::string>(),
        sc.contains("turns") ? ", sessions of " + sc["turns"].get<std::string>() + " turns" : "",
        sc.contains("requests") ? fmt::format(", {} requests in all", sc["requests"].get<int64_t>()) : std::string());
  else if (sc.contains("requests"))
    arrivals = fmt::format("a burst of {} requests", sc["requests"].get<int64_t>());
  else
    arrivals = fmt::format("{} arrivals at {:.3f}/s", sc["arrival"].get<std::string>(), sc["rate_per_s"].get<double>());
  if (multi && r.contains("classes")) {
    o += fmt::format("workload  {:.0f} s measured after {:.0f} s warm-up, seed {}\n",
                     r["simulation"]["window_s"].get<double>(), sc["warmup_s"].get<double>(),
                     sc["seed"].get<uint64_t>());
    std::vector<std::vector<std::string>> rows;
    for (auto it = r["classes"].begin(); it != r["classes"].end(); ++it) {
      const Json& w = it.value()["workload"];
      rows.push_back(
          {"class " + it.key(), "-> pool " + it.value()["pool"].get<std::string>(),
           w.contains("clients")
               ? fmt::format("{} {} clients", w["clients"].get<int64_t>(), w["arrival"].get<std::string>())
               : fmt::format("{} at {:.3f}/s", w["arrival"].get<std::string>(), w["rate_per_s"].get<double>()),
           "prompt " + w["prompt_tokens"].get<std::string>(), "output " + w["output_tokens"].get<std::string>()});
    }
    o += columns(rows, "          ");
  } else {
    o += fmt::format("workload  {}, prompt {}, output {}; {:.0f} s measured after {:.0f} s warm-up, seed {}\n",
                     arrivals, sc["prompt_tokens"].get<std::string>(), sc["output_tokens"].get<std::string>(),
                     r["simulation"]["window_s"].get<double>(), sc["warmup_s"].get<double>(),
                     sc["seed"].get<uint64_t>());
  }
  if (sc.contains("trace_rows_skipped"))
    o += fmt::format("trace     {} rows skipped as unusable ({})\n", sc["trace_rows_skipped"].get<int64_t>(),
                     sc["trace_rows_skipped_reason"].get<std::string>());
  if (sc.contains("step_time")) {
    // pools whose step times came from different models, or whose measured error does not apply
    // to each alike, get a line each; else the one line says it for all
    std::vector<std::pair<std::string, std::string>> by_pool;
    if (multi)
      for (auto it = r["pools"].begin(); it != r["pools"].end(); ++it)
        if (it.value().contains("step_time") && it.value().contains("perf_model"))
          by_pool.emplace_back(it.key(), step_time_summary(Json{{"step_time", it.value()["step_time"]},
                                                                {"perf_model", it.value()["perf_model"]}}));
    bool alike = true;
    for (const auto& [name, line] : by_pool) alike = alike && line == by_pool.front().second;
    if (alike)
      o += "steps     " + step_time_summary(sc) + "\n";
    else
      for (size_t i = 0; i < by_pool.size(); ++i)
        o += (i == 0 ? "steps     " : "          ") + by_pool[i].first + ": " + by_pool[i].second + "\n";
  }
  o += "\n";
  const Json& rq = r["requests"];
  o += fmt::format("requests  arrived {}  completed {}  rejected {} (queue full {}, too long {})  preempted {}",
                   num(rq["arrived"]), num(rq["completed"]), num(rq["rejected"]),
                   num(rq["rejected_by_reason"]["queue_full"]), num(rq["rejected_by_reason"]["too_long"]),
                   num(rq["preempted"]));
  if (rq["retried"].get<double>() + rq["failed"].get<double>() > 0)
    o += fmt::format("  retried {}  failed {}", num(rq["retried"]), num(rq["failed"]));
  if (rq.contains("prefix_tokens_reused") && rq["prefix_tokens_reused"].get<double>() > 0)
    o += fmt::format("  prefix hits {} ({} of input tokens reused)", num(rq["prefix_hits"]),
                     pct(rq["prefix_reuse_share"]));
  o += "\n";
  if (r.contains("prefix_cache")) o += prefix_cache_line("", r["prefix_cache"]);
  o += "\n";
  o += fmt::format("latency (ms)     {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}\n", "mean", "p50", "p90", "p95", "p99",
                   "p99.9", "max");
  for (const char* k : {"ttft", "tpot", "e2e", "queue_wait"}) {
    const Json& l = r["latency_s"][k];
    o += fmt::format("  {:<14} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}\n", k, ms(l["mean"]), ms(l["p50"]),
                     ms(l["p90"]), ms(l["p95"]), ms(l["p99"]), ms(l["p999"]), ms(l["max"]));
  }
  if (r.contains("worst_window") && r["worst_window"].is_object()) {
    const Json& w = r["worst_window"];
    o += fmt::format(
        "  worst window: ttft p99 {} ms in {:g}-{:g} s (of {} windows of {:.4g} s; the whole run's p99 {} "
        "ms)\n",
        ms(w["ttft_p99_s"]), w["t0_s"].get<double>(), w["t1_s"].get<double>(), r["timeline"].size(),
        w["window_s"].get<double>(), ms(r["latency_s"]["ttft"]["p99"]));
  }
  if (multi && r.contains("classes")) o += "\n" + by_class_and_pool(r);
  const Json& th = r["throughput"];
  o += fmt::format("\nthroughput  {} req/s   {} input tok/s   {} output tok/s   {} output tok/s/user\n",
                   num(th["requests_per_s"]), num(th["input_tokens_per_s"], 1), num(th["output_tokens_per_s"], 1),
                   num(th["output_tok_per_s_per_user"], 1));
  bool class_bounds = false;
  if (r.contains("classes"))
    for (auto it = r["classes"].begin(); it != r["classes"].end(); ++it)
      class_bounds = class_bounds || it.value().contains("goodput");
  if (sc.contains("goodput"))
    o += fmt::format("goodput     {} req/s within {} ({} of completed)\n", num(th["goodput_per_s"]),
                     sc["goodput"].get<std::string>(), pct(rq["good_fraction"]));
  else if (class_bounds)  // classes with bounds of their own, or none: each class's requests by its own
    o += fmt::format(
        "goodput     {} req/s within each class's own bounds ({} of completed; a class without bounds counts "
        "every completed request)\n",
        num(th["goodput_per_s"]), pct(rq["good_fraction"]));
  if (r.contains("closed_loop")) {
    const Json& cl = r["closed_loop"];
    // a benchmark of a set number of requests ends its clients' loop: the identities need not hold
    if (sc.contains("clients") && sc.contains("requests"))
      o += fmt::format(
          "clients     {}, {} in system + {} thinking on average; X (R + Z) = {} (a benchmark of {} requests: its "
          "clients stop when they are sent, so these need not add up)\n",
          num(cl["clients"]), num(cl["mean_in_system"], 2), num(cl["mean_thinking"], 2),
          num(cl["response_time_law"], 2), num(sc["requests"]));
    else
      o += fmt::format("clients     {} = {} in system + {} thinking   X (R + Z) = {}\n", num(cl["clients"]),
                       num(cl["mean_in_system"], 2), num(cl["mean_thinking"], 2), num(cl["response_time_law"], 2));
    if (cl.contains("sessions")) {
      const Json& se = cl["sessions"];
      o += fmt::format("sessions    {} completed  {} turns each  {} s per session  {} s per turn\n",
                       num(se["completed"]), num(se["turns_per_session"], 2), num(se["mean_session_s"], 2),
                       num(se["mean_turn_s"], 2));
    }
  }
  if (r.contains("sessions")) {  // a trace replayed as sessions
    const Json& se = r["sessions"];
    o += fmt::format("sessions    {} completed  {} turns each  {} s per session  {} s per turn\n", num(se["completed"]),
                     num(se["turns_per_session"], 2), num(se["mean_session_s"], 2), num(se["mean_turn_s"], 2));
    o += fmt::format("            {} follow-ups, {} of them held for the answer they reply to, {} s each\n",
                     num(se["follow_ups"]), pct(se["held_fraction"]), num(se["mean_hold_s"], 2));
  }
  const Json& ut = r["utilization"];
  o += fmt::format("device      busy {}  idle {}  compute {}  bandwidth {}  mean batch {}\n", pct(ut["busy_fraction"]),
                   pct(ut["idle_fraction"]), pct(ut["compute_fraction"]), pct(ut["bandwidth_fraction"]),
                   num(ut["mean_batch_size"], 1));
  o += fmt::format("            cold start {}  idle = headroom {} (chosen) + waste {} (not chosen)\n",
                   pct(ut["cold_start_fraction"]), pct(ut["idle_headroom_fraction"]), pct(ut["idle_waste_fraction"]));
  o += fmt::format("memory      KV occupancy {}  memory occupancy {}\n", pct(ut["kv_occupancy"]),
                   pct(ut["memory_occupancy"]));
  if (r.contains("host") && !multi) {  // several pools: the by-pool table has it
    const Json& h = r["host"];
    o += fmt::format(
        "host CPU    {}busy {}  wait mean {} ms, p99 {} ms  host time mean {} ms, p99 {} ms: {} of TTFT\n",
        h.contains("cores_per_replica") ? fmt::format("{} cores/replica  ", h["cores_per_replica"].get<int>()) : "",
        pct(h["utilization"]), ms(h["mean_wait_s"]), ms(h["p99_wait_s"]), ms(h["mean_time_s"]), ms(h["p99_time_s"]),
        pct(h["ttft_share"]));
  }
  const Json& fl = r["fleet"];
  const double downed = fl.value("neighbour_failures", 0.0);
  if (fl["scale_ups"].get<double>() + fl["scale_downs"].get<double>() + fl["crashes"].get<double>() +
          fl["interruptions"].get<double>() + downed >
      0)
    o += fmt::format(
        "fleet       mean {} replicas, max {}, {} started, {} stopped, {} crashes, {} interruptions{}\n",
        num(fl["mean_replicas"], 2), num(fl["max_replicas"], 0), num(fl["scale_ups"], 0), num(fl["scale_downs"], 0),
        num(fl["crashes"], 0), num(fl["interruptions"], 0),
        downed > 0 ? fmt::format(", {} taken down by a neighbour on their device", num(fl["neighbour_failures"], 0))
                   : "");
  if (fl.contains("autoscale_signal")) o += autoscaler_line(fl["autoscale_signal"], "");
  if (sc["pools"].get<int>() > 1)
    for (const auto& [name, pj] : r["pools"].items())
      if (pj["fleet"].contains("autoscale_signal")) o += autoscaler_line(pj["fleet"]["autoscale_signal"], name + ": ");
  if (fl.contains("cpu_fallback")) {
    const Json& cf = fl["cpu_fallback"];
    o += fmt::format(
        "cpu fallback {} replica-hours ({} of provisioned) on the host CPU, {} of them in steps: "
        "devices paid for and idle\n",
        num(cf["replica_hours"], 2), pct(cf["share_of_replica_hours"]), num(cf["cpu_busy_replica_hours"], 2));
  }
  if (fl.contains("thermal")) {
    const Json& th = fl["thermal"];
    o += fmt::format("thermal     throttled {} replica-hours: {} of device-busy time, {} of steps\n",
                     num(th["throttled_replica_hours"], 2), pct(th["throttled_busy_share"]),
                     pct(th["throttled_step_share"]));
  }
  o += ledger_table(r);
  const Json& cap = r["capacity"];
  // a draft model's KV is held beside the target's, token for token: both are in the block
  const std::string per_token =
      cap.contains("draft_kv_bytes_per_token")
          ? num(cap["kv_bytes_per_token"], 0) + " + " + num(cap["draft_kv_bytes_per_token"], 0) + " draft"
          : num(cap["kv_bytes_per_token"], 0);
  o += fmt::format(
      "capacity    weights {:.1f} GiB  KV {:.1f} GiB = {} tokens ({} B/token)  fits {} requests at {} tokens\n",
      cap["weights_gib"].get<double>(), cap["kv_gib"].get<double>(), num(cap["kv_capacity_tokens"]), per_token,
      num(cap["max_concurrent_at_mean_context"]), num(cap["mean_context_tokens"]));
  return o;
}
}  // namespace

Json printable_json(const Json& j) {
  if (j.is_string()) return printable(j.get<std::string>());
  if (j.is_array()) {
    Json a = Json::array();
    for (const auto& v : j) a.push_back(printable_json(v));
    return a;
  }
  if (!j.is_object()) return j;
  Json o = Json::object();
  for (auto it = j.begin(); it != j.end(); ++it) o[printable(it.key())] = printable_json(it.value());
  return o;
}

// Names are the user's: a control character or a line break in one must not reach the terminal.
std::string format_run_table(const Json& r) { return run_table(printable_json(r)); }

std::string format_capacity_table(const Json& c_in, const std::string& title_in) {
  const Json c = printable_json(c_in);
  const std::string title = printable(title_in);
  std::string o = title + "\n";
  auto row = [&](const char* label, const std::string& v) { o += fmt::format("  {:<36} {}\n", label, v); };
  if (c.value("devices_per_replica", 1) > 1)
    row("devices per replica (figures per device)", num(c["devices_per_replica"]));
  row("device memory (GiB)", num(c["device_gib"], 2));
  row("x gpu_memory_utilization (GiB)", num(c["usable_gib"], 2));
  row("- weights (GiB)", num(c["weights_gib"], 2));
  row("- runtime overhead (GiB)", num(c["runtime_overhead_gib"], 2));
  if (c.contains("non_torch_gib")) {
    row("    non-torch memory (GiB)", num(c["non_torch_gib"], 2));
    row("    CUDA graphs (GiB)", num(c["cuda_graph_gib"], 2));
  }
  row("- activation peak (GiB)", num(c["activation_gib"], 2));
  row("= KV cache (GiB)", num(c["kv_gib"], 2));
  row("  (naive: usable - weights, GiB)", num(c["naive_kv_gib"], 2));
  row("KV bytes per token", num(c["kv_bytes_per_token"], 0));
  row("KV capacity (tokens)", num(c["kv_capacity_tokens"]));
  if (c.value("window_blocks_per_seq", 0) > 0)
    row("+ KV blocks per sequence (sliding window)", num(c["window_blocks_per_seq"]));
  row("context length (tokens)", num(c["context_tokens"]));
  row("concurrent requests at that context", num(c["max_concurrent_at_context"]));
  return o;
}

}  // namespace fleetsim
