#include "report.hpp"

#include <fmt/format.h>

#include <cmath>
#include <vector>

namespace fleetsim {

LatencyStats latency_stats(const Histogram& h) {
  LatencyStats l;
  l.count = h.n;
  if (h.n == 0) return l;
  l.mean = h.sum / double(h.n);
  l.p50 = hist_quantile(h, 0.50);
  l.p90 = hist_quantile(h, 0.90);
  l.p95 = hist_quantile(h, 0.95);
  l.p99 = hist_quantile(h, 0.99);
  l.p999 = hist_quantile(h, 0.999);
  l.max = h.max;
  return l;
}

namespace {

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
  return j;
}

Json ratio(double num, double den) { return den > 0 ? Json(num / den) : Json(nullptr); }

}  // namespace

Json capacity_json(const Capacity& c, int64_t context_tokens, int block_tokens) {
  Json j;
  j["device_gib"] = c.device_gib;
  j["usable_gib"] = c.usable_gib;
  j["weights_gib"] = c.weights_gib;
  j["runtime_overhead_gib"] = c.runtime_overhead_gib;
  j["activation_gib"] = c.activation_gib;
  j["kv_gib"] = c.kv_gib;
  j["naive_kv_gib"] = c.naive_kv_gib;
  j["kv_bytes_per_token"] = c.kv_bytes_per_token;
  j["kv_block_tokens"] = block_tokens;
  j["kv_blocks"] = c.kv_blocks;
  j["kv_capacity_tokens"] = c.kv_capacity_tokens;
  j["context_tokens"] = context_tokens;
  j["max_concurrent_at_context"] = max_concurrent(c, context_tokens, block_tokens);
  return j;
}

Json run_report(const Scenario& s, const Tally& t) {
  const double window = t.window_s;
  const double provisioned_s = window * s.replicas;
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
  sc["device"] = s.device.name;
  sc["model"] = s.model.name;
  sc["weight_dtype"] = s.weight_dtype;
  sc["kv_dtype"] = s.kv_dtype;
  sc["batching"] = batching_name(s.batching);
  sc["replicas"] = s.replicas;
  sc["router"] = router_name(s.router);
  sc["arrival"] = arrival_name(s.arrival);
  sc["rate_per_s"] = s.rate_per_s;
  sc["prompt_tokens"] = s.prompt.describe;
  sc["output_tokens"] = s.output.describe;
  sc["perf_model"] = perf_name(s.perf_model);
  r["scenario"] = sc;

  Json rq;
  const int64_t rejected = t.rejected_queue_full + t.rejected_too_long;
  rq["arrived"] = t.arrived;
  rq["completed"] = t.completed;
  rq["rejected"] = rejected;
  rq["rejected_by_reason"] = {{"queue_full", t.rejected_queue_full}, {"too_long", t.rejected_too_long}};
  rq["preempted"] = t.preempted;
  rq["rejection_fraction"] = ratio(double(rejected), double(t.arrived));
  rq["mean_in_system"] = ratio(t.in_system_s, window);
  rq["mean_waiting"] = ratio(t.queue_len_s, window);
  r["requests"] = rq;

  Json lat;
  lat["ttft"] = lat_json(t.ttft);
  lat["tpot"] = lat_json(t.tpot);
  lat["e2e"] = lat_json(t.e2e);
  lat["queue_wait"] = lat_json(t.queue_wait);
  r["latency_s"] = lat;

  Json th;
  th["requests_per_s"] = ratio(double(t.completed), window);
  th["input_tokens_per_s"] = ratio(t.input_tokens, window);
  th["output_tokens_per_s"] = ratio(t.output_tokens, window);
  r["throughput"] = th;

  const SimParams p = s.params();
  Json ut;
  const double busy = provisioned_s > 0 ? t.busy_s / provisioned_s : 0.0;
  ut["busy_fraction"] = busy;
  ut["idle_fraction"] = 1.0 - busy;
  ut["compute_fraction"] = ratio(t.flops, provisioned_s * p.peak_flops_per_s);
  ut["bandwidth_fraction"] = ratio(t.bytes, provisioned_s * p.peak_bytes_per_s);
  ut["mean_batch_size"] = ratio(t.seq_steps, double(t.steps));
  const double kv_block_bytes = s.capacity.kv_bytes_per_token * s.kv_block_tokens;
  ut["kv_occupancy"] = ratio(t.kv_block_s, provisioned_s * double(s.capacity.kv_blocks));
  ut["memory_occupancy"] =
      ratio(p.fixed_memory_bytes * provisioned_s + t.kv_block_s * kv_block_bytes, provisioned_s * p.device_memory_bytes);
  r["utilization"] = ut;

  Json co;
  const double device_hours = provisioned_s / 3600.0;
  const double total = device_hours * s.usd_per_hour;
  const double in_share = t.busy_s > 0 ? t.input_busy_s / t.busy_s : 0.0;
  co["usd_per_device_hour"] = s.usd_per_hour;
  co["device_hours"] = device_hours;
  co["total_usd"] = total;
  co["input_usd"] = total * in_share;
  co["output_usd"] = total * (1.0 - in_share);
  co["per_request_usd"] = ratio(total, double(t.completed));
  co["per_million_input_tokens_usd"] = ratio(total * in_share * 1e6, t.input_tokens);
  co["per_million_output_tokens_usd"] = ratio(total * (1.0 - in_share) * 1e6, t.output_tokens);
  co["per_million_tokens_usd"] = ratio(total * 1e6, t.input_tokens + t.output_tokens);
  r["cost"] = co;

  const int64_t mean_ctx = int64_t(std::llround(s.mean_prompt_tokens + s.mean_output_tokens));
  Json cap = capacity_json(s.capacity, mean_ctx, s.kv_block_tokens);
  cap["mean_context_tokens"] = mean_ctx;
  cap["max_concurrent_at_mean_context"] = max_concurrent(s.capacity, mean_ctx, s.kv_block_tokens);
  r["capacity"] = cap;

  Json sim;
  sim["events"] = t.events;
  sim["steps"] = t.steps;
  sim["window_s"] = window;
  r["simulation"] = sim;
  return r;
}

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
  o += fmt::format("scenario  {}  ({} x {} {}, {} batching, router {})\n", sc["name"].get<std::string>(),
                   sc["replicas"].get<int>(), sc["device"].get<std::string>(), sc["model"].get<std::string>(),
                   sc["batching"].get<std::string>(), sc["router"].get<std::string>());
  o += fmt::format("workload  {} arrivals at {:.3f}/s, prompt {}, output {}; {:.0f} s measured after {:.0f} s warm-up, seed {}\n\n",
                   sc["arrival"].get<std::string>(), sc["rate_per_s"].get<double>(),
                   sc["prompt_tokens"].get<std::string>(), sc["output_tokens"].get<std::string>(),
                   r["simulation"]["window_s"].get<double>(), sc["warmup_s"].get<double>(), sc["seed"].get<uint64_t>());
  const Json& rq = r["requests"];
  o += fmt::format("requests  arrived {}  completed {}  rejected {} (queue full {}, too long {})  preempted {}\n\n",
                   num(rq["arrived"]), num(rq["completed"]), num(rq["rejected"]),
                   num(rq["rejected_by_reason"]["queue_full"]), num(rq["rejected_by_reason"]["too_long"]),
                   num(rq["preempted"]));
  o += fmt::format("latency (ms)     {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}\n", "mean", "p50", "p90", "p95", "p99",
                   "p99.9", "max");
  for (const char* k : {"ttft", "tpot", "e2e", "queue_wait"}) {
    const Json& l = r["latency_s"][k];
    o += fmt::format("  {:<14} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}\n", k, ms(l["mean"]), ms(l["p50"]), ms(l["p90"]),
                     ms(l["p95"]), ms(l["p99"]), ms(l["p999"]), ms(l["max"]));
  }
  const Json& th = r["throughput"];
  o += fmt::format("\nthroughput  {} req/s   {} input tok/s   {} output tok/s\n", num(th["requests_per_s"]),
                   num(th["input_tokens_per_s"], 1), num(th["output_tokens_per_s"], 1));
  const Json& ut = r["utilization"];
  o += fmt::format("device      busy {}  idle {}  compute {}  bandwidth {}  mean batch {}\n", pct(ut["busy_fraction"]),
                   pct(ut["idle_fraction"]), pct(ut["compute_fraction"]), pct(ut["bandwidth_fraction"]),
                   num(ut["mean_batch_size"], 1));
  o += fmt::format("memory      KV occupancy {}  memory occupancy {}\n", pct(ut["kv_occupancy"]),
                   pct(ut["memory_occupancy"]));
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
  row("device memory (GiB)", num(c["device_gib"], 2));
  row("x gpu_memory_utilization (GiB)", num(c["usable_gib"], 2));
  row("- weights (GiB)", num(c["weights_gib"], 2));
  row("- runtime overhead (GiB)", num(c["runtime_overhead_gib"], 2));
  row("- activation peak (GiB)", num(c["activation_gib"], 2));
  row("= KV cache (GiB)", num(c["kv_gib"], 2));
  row("  (naive: usable - weights, GiB)", num(c["naive_kv_gib"], 2));
  row("KV bytes per token", num(c["kv_bytes_per_token"], 0));
  row("KV capacity (tokens)", num(c["kv_capacity_tokens"]));
  row("context length (tokens)", num(c["context_tokens"]));
  row("concurrent requests at that context", num(c["max_concurrent_at_context"]));
  return o;
}

namespace {
void flatten(const Json& j, const std::string& prefix, std::vector<std::pair<std::string, std::string>>& out) {
  if (j.is_object()) {
    for (auto it = j.begin(); it != j.end(); ++it) flatten(it.value(), prefix.empty() ? it.key() : prefix + "." + it.key(), out);
  } else if (j.is_array()) {
    std::string s;
    for (const auto& x : j) s += (s.empty() ? "" : ";") + (x.is_string() ? x.get<std::string>() : x.dump());
    out.emplace_back(prefix, s);
  } else if (j.is_string()) {
    out.emplace_back(prefix, j.get<std::string>());
  } else if (j.is_null()) {
    out.emplace_back(prefix, "");
  } else {
    out.emplace_back(prefix, j.dump());
  }
}
std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string q = "\"";
  for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}
}  // namespace

std::string json_to_csv(const Json& doc) {
  std::vector<std::pair<std::string, std::string>> kv;
  flatten(doc, "", kv);
  std::string head, row;
  for (size_t i = 0; i < kv.size(); ++i) {
    head += (i ? "," : "") + csv_field(kv[i].first);
    row += (i ? "," : "") + csv_field(kv[i].second);
  }
  return head + "\n" + row + "\n";
}

}  // namespace fleetsim
