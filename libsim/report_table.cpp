// The table views of the run and capacity documents: what `fleetsim run` and `fleetsim capacity`
// print by default, read from the same JSON the other formats carry.
#include <fmt/format.h>

#include <string>

#include "report.hpp"

namespace fleetsim {

namespace {

std::string num(const Json& v, int prec = 3) {
  if (v.is_null()) return "-";
  if (v.is_number_integer() || v.is_number_unsigned()) return fmt::format("{}", v.get<int64_t>());
  const double x = v.get<double>();
  return fmt::format("{:.{}f}", x, prec);
}
std::string ms(const Json& v) { return v.is_null() ? "-" : fmt::format("{:.1f}", v.get<double>() * 1000.0); }
std::string pct(const Json& v) { return v.is_null() ? "-" : fmt::format("{:.1f}%", v.get<double>() * 100.0); }
std::string usd(const Json& v, int prec = 4) { return v.is_null() ? "-" : fmt::format("${:.{}f}", v.get<double>(), prec); }

}  // namespace

std::string format_run_table(const Json& r) {
  const Json& sc = r["scenario"];
  std::string o;
  std::string par;
  if (sc["pools"].get<int>() > 1) {
    o += fmt::format("scenario  {}  ({} pools: {} devices in {} replicas; per pool and class in --format json)\n",
                     sc["name"].get<std::string>(), sc["pools"].get<int>(),
                     sc.contains("devices") ? sc["devices"].get<int>() : sc["replicas"].get<int>(), sc["replicas"].get<int>());
  } else {
    if (sc.contains("tensor_parallel") && sc["devices"].get<int>() != sc["replicas"].get<int>())
      par = fmt::format(" in {} replica{} of tp {} x pp {}", sc["replicas"].get<int>(), sc["replicas"].get<int>() == 1 ? "" : "s",
                        sc["tensor_parallel"].get<int>(), sc["pipeline_parallel"].get<int>());
    o += fmt::format("scenario  {}  ({} x {}{} {}, {} batching, router {})\n", sc["name"].get<std::string>(),
                     sc.contains("devices") ? sc["devices"].get<int>() : sc["replicas"].get<int>(),
                     sc["device"].get<std::string>(), par, sc["model"].get<std::string>(),
                     sc["batching"].get<std::string>(), sc["router"].get<std::string>());
  }
  std::string arrivals;
  if (sc.contains("clients"))
    arrivals = fmt::format("{} closed-loop clients (think time {})", sc["clients"].get<int64_t>(),
                           sc["think_time_s"].get<std::string>());
  else if (sc.contains("requests"))
    arrivals = fmt::format("a burst of {} requests", sc["requests"].get<int64_t>());
  else
    arrivals = fmt::format("{} arrivals at {:.3f}/s", sc["arrival"].get<std::string>(), sc["rate_per_s"].get<double>());
  o += fmt::format("workload  {}, prompt {}, output {}; {:.0f} s measured after {:.0f} s warm-up, seed {}\n", arrivals,
                   sc["prompt_tokens"].get<std::string>(), sc["output_tokens"].get<std::string>(),
                   r["simulation"]["window_s"].get<double>(), sc["warmup_s"].get<double>(), sc["seed"].get<uint64_t>());
  if (sc.contains("step_time")) {
    const Json& st = sc["step_time"];
    if (st["calibrated"].get<bool>()) {
      std::string err;
      const Json& h = st["held_out"];
      for (const char* k : {"mean_ttft", "mean_tpot", "mean_e2e"})
        if (h.contains(std::string("median_abs_error_") + k))
          err += fmt::format("{}{} {:.0f}%", err.empty() ? "" : ", ", k, 100.0 * h[std::string("median_abs_error_") + k].get<double>());
      o += fmt::format("steps     calibrated profile {} (median error on {} held-out runs: {})\n",
                       st["profile"].get<std::string>(), h["points"].get<int>(), err.empty() ? "none measured" : err);
    } else {
      o += fmt::format("steps     {} (uncalibrated: docs/validation.md gives its error; `fleetsim fit` makes a profile)\n",
                       sc["perf_model"].get<std::string>());
    }
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
    o += fmt::format("  prefix hits {} ({} of input tokens reused)", num(rq["prefix_hits"]), pct(rq["prefix_reuse_share"]));
  o += "\n\n";
  o += fmt::format("latency (ms)     {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}\n", "mean", "p50", "p90", "p95", "p99",
                   "p99.9", "max");
  for (const char* k : {"ttft", "tpot", "e2e", "queue_wait"}) {
    const Json& l = r["latency_s"][k];
    o += fmt::format("  {:<14} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}\n", k, ms(l["mean"]), ms(l["p50"]), ms(l["p90"]),
                     ms(l["p95"]), ms(l["p99"]), ms(l["p999"]), ms(l["max"]));
  }
  const Json& th = r["throughput"];
  o += fmt::format("\nthroughput  {} req/s   {} input tok/s   {} output tok/s   {} output tok/s/user\n",
                   num(th["requests_per_s"]), num(th["input_tokens_per_s"], 1), num(th["output_tokens_per_s"], 1),
                   num(th["output_tok_per_s_per_user"], 1));
  if (sc.contains("goodput"))
    o += fmt::format("goodput     {} req/s within {} ({} of completed)\n", num(th["goodput_per_s"]),
                     sc["goodput"].get<std::string>(), pct(rq["good_fraction"]));
  if (r.contains("closed_loop")) {
    const Json& cl = r["closed_loop"];
    o += fmt::format("clients     {} = {} in system + {} thinking   X (R + Z) = {}\n", num(cl["clients"]),
                     num(cl["mean_in_system"], 2), num(cl["mean_thinking"], 2), num(cl["response_time_law"], 2));
  }
  const Json& ut = r["utilization"];
  o += fmt::format("device      busy {}  idle {}  compute {}  bandwidth {}  mean batch {}\n", pct(ut["busy_fraction"]),
                   pct(ut["idle_fraction"]), pct(ut["compute_fraction"]), pct(ut["bandwidth_fraction"]),
                   num(ut["mean_batch_size"], 1));
  o += fmt::format("            cold start {}  idle = headroom {} (chosen) + waste {} (not chosen)\n",
                   pct(ut["cold_start_fraction"]), pct(ut["idle_headroom_fraction"]), pct(ut["idle_waste_fraction"]));
  o += fmt::format("memory      KV occupancy {}  memory occupancy {}\n", pct(ut["kv_occupancy"]),
                   pct(ut["memory_occupancy"]));
  const Json& fl = r["fleet"];
  if (fl["scale_ups"].get<double>() + fl["scale_downs"].get<double>() + fl["crashes"].get<double>() +
          fl["interruptions"].get<double>() > 0)
    o += fmt::format("fleet       mean {} replicas, max {}, {} started, {} stopped, {} crashes, {} interruptions\n",
                     num(fl["mean_replicas"], 2), num(fl["max_replicas"], 0), num(fl["scale_ups"], 0),
                     num(fl["scale_downs"], 0), num(fl["crashes"], 0), num(fl["interruptions"], 0));
  const Json& co = r["cost"];
  o += fmt::format("cost        {} device-h x {}/h = {}   per request {}   per 1M input {}   per 1M output {}\n",
                   num(co["device_hours"], 2), usd(co["usd_per_device_hour"], 2), usd(co["total_usd"], 2),
                   usd(co["per_request_usd"], 5), usd(co["per_million_input_tokens_usd"], 3),
                   usd(co["per_million_output_tokens_usd"], 3));
  const Json& cap = r["capacity"];
  o += fmt::format("capacity    weights {:.1f} GiB  KV {:.1f} GiB = {} tokens ({} B/token)  fits {} requests at {} tokens\n",
                   cap["weights_gib"].get<double>(), cap["kv_gib"].get<double>(), num(cap["kv_capacity_tokens"]),
                   num(cap["kv_bytes_per_token"], 0), num(cap["max_concurrent_at_mean_context"]),
                   num(cap["mean_context_tokens"]));
  return o;
}

std::string format_capacity_table(const Json& c, const std::string& title) {
  std::string o = title + "\n";
  auto row = [&](const char* label, const std::string& v) { o += fmt::format("  {:<36} {}\n", label, v); };
  if (c.value("devices_per_replica", 1) > 1) row("devices per replica (figures per device)", num(c["devices_per_replica"]));
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
