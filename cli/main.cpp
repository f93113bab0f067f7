// fleetsim: the command-line client of libsim. Subcommands are a table; each one parses its
// flags, calls the library, and formats the result. Exit codes: 0 ok, 1 a failure the command
// reports (a model that does not fit, an internal error), 2 usage and input errors, 3 an output
// that could not be written, 130/143 a sweep stopped by SIGINT/SIGTERM. A reader that closes
// the pipe early (`| head`) ends the command quietly with its usual code.
#include <fmt/format.h>
#include <unistd.h>
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <optional>
#include <thread>

#include "cli/check_command.hpp"
#include "cli/fit_command.hpp"
#include "cli/report_command.hpp"
#include "cli/sweep_command.hpp"
#include "libsim/backend/runner.hpp"
#include "libsim/base/error.hpp"
#include "libsim/catalog/capacity.hpp"
#include "libsim/catalog/catalog.hpp"
#include "libsim/check/budget.hpp"
#include "libsim/cost/ledger.hpp"
#include "libsim/cost/refresh.hpp"
#include "libsim/input/csv.hpp"
#include "libsim/input/scenario.hpp"
#include "libsim/report/documents.hpp"
#include "libsim/report/report.hpp"
#include "libsim/report/timeline.hpp"
#include "libsim/sweep/sweep.hpp"

namespace {

using namespace fleetsim;

constexpr int kExitOk = 0;
constexpr int kExitFailure = 1;
constexpr int kExitUsage = 2;
constexpr int kExitOutput = 3;  // writing stdout or a journal failed

struct Options {
  std::string scenario;
  std::vector<std::string> sets;
  std::string format = "table";
  std::optional<uint64_t> seed;
  double duration = -1;
  double window_s = 0;        // run --window: the worst window's p99 beside the whole run's
  std::string billing_start;  // run --format focus --billing-start: the date the simulated run starts
  // capacity
  std::string model, device, weight_dtype = "bf16", kv_dtype = "bf16";
  int64_t context = 0;  // not given: capacity_document's default
  double gpu_mem_util = 0.9;
  int max_num_seqs = 256, max_batched_tokens = 8192, kv_block_tokens = 16;
  int tp = 1, pp = 1;
  bool enforce_eager = false;
  std::string expert_weight_dtype;
  // sweep
  std::string backend = "auto", shard, journal, resume;
  int threads = 0;
  std::vector<std::string> inputs;
  std::vector<std::string> argv;  // the command line, for the resume hint
  cli::FitArgs fit;
  cli::CheckArgs check;
  std::string output;
};

// The first error writing stdout (errno), 0 while none. Output stops at the first error.
int g_write_errno = 0;

void emit(const std::string& text) {
  if (g_write_errno) return;
  errno = 0;
  if (std::fwrite(text.data(), 1, text.size(), stdout) != text.size()) g_write_errno = errno ? errno : EIO;
}

// emit, then flush (errno of a failed flush kept as emit keeps a failed write's)
void emit_flushed(const std::string& text) {
  emit(text);
  errno = 0;
  if (!g_write_errno && std::fflush(stdout) != 0) g_write_errno = errno ? errno : EIO;
}

// Flush stdout and turn a failed write into the exit code: a closed pipe (EPIPE: the reader has
// what it wanted) ends quietly with the command's own code; any other failure (a full disk) is a
// one-line error and exit 3 (unless `said`: an OutputError has told it already).
int finish_output(int rc, bool said = false) {
  errno = 0;
  if (std::fflush(stdout) != 0 && !g_write_errno) g_write_errno = errno ? errno : EIO;
  std::cout.flush();  // CLI11's help and messages (stdio-synchronised: already flushed above)
  if ((std::ferror(stdout) || !std::cout.good()) && !g_write_errno) g_write_errno = EIO;
  if (!g_write_errno || g_write_errno == EPIPE || said) return rc;
  std::fprintf(stderr, "fleetsim: error: writing the output failed: %s\n", std::strerror(g_write_errno));
  return kExitOutput;
}

ScenarioSource source(const Options& o) {
  std::vector<std::string> sets = o.sets;
  if (o.seed) sets.push_back("seed=" + std::to_string(*o.seed));
  if (o.duration >= 0) sets.push_back("duration_s=" + fmt::format("{}", o.duration));
  const ScenarioSource src =
      o.scenario.empty() ? ScenarioSource::builtin_default() : ScenarioSource::from_file(o.scenario);
  return src.with_overrides(parse_sets(sets));
}

int cmd_sweep(const Options& o) {
  cli::SweepArgs a;
  a.backend = o.backend;
  a.shard = o.shard;
  a.journal = o.journal;
  a.resume = o.resume;
  a.format = o.format;
  a.threads = o.threads;
  a.argv = o.argv;
  a.output_failed = [] { return g_write_errno != 0; };
  // streamed rows reach their reader as they are written
  const bool streamed = o.format == "csv" || o.format == "jsonl";
  return cli::run_sweep_command(source(o), a, streamed ? emit_flushed : emit);
}

int cmd_merge(const Options& o) { return cli::run_merge_command(o.inputs, o.format, emit); }

// The window of the timeline with the highest p99 TTFT (the first on ties): the figure a daily
// peak hides in the whole run's p99. Where no window has a first token, the first window, its
// p99 null.
Json worst_window(const Json& timeline) {
  Json w;
  for (const auto& row : timeline) {
    const Json& p = row["ttft_p99_s"];
    if (!p.is_number()) continue;
    if (w.is_null() || p.get<double>() > w["ttft_p99_s"].get<double>())
      w = {{"t0_s", row["t0_s"]}, {"t1_s", row["t1_s"]}, {"ttft_p99_s", p}};
  }
  if (w.is_null() && !timeline.empty())
    w = {{"t0_s", timeline[0]["t0_s"]}, {"t1_s", timeline[0]["t1_s"]}, {"ttft_p99_s", nullptr}};
  if (!w.is_null()) w["window_s"] = w["t1_s"].get<double>() - w["t0_s"].get<double>();
  return w;
}

int cmd_run(const Options& o) {
  if (!o.billing_start.empty() && o.format != "focus")
    throw InputError(Location{"--billing-start", 0, 0, ""},
                     "--billing-start dates the FOCUS export's periods: use it with --format focus");
  if (o.window_s > 0 && (o.format == "ledger" || o.format == "focus"))
    throw InputError(Location{"--window", 0, 0, ""},
                     "--window measures latency windows, which the " + o.format +
                         " export has no place for: use it with --format table, json or csv");
  const double billing_start_s = o.billing_start.empty() ? 0.0 : parse_utc_time(o.billing_start, "--billing-start");
  const ScenarioSource src = source(o);
  const Scenario s = src.instantiate();
  if (billing_start_s + s.duration_s >= 253402300800.0)  // 10000-01-01T00:00:00Z
    throw InputError(Location{"--billing-start", 0, 0, ""},
                     fmt::format("--billing-start {}: the billing period ({:g} s) would end after 9999-12-31",
                                 o.billing_start, s.duration_s));
  std::unique_ptr<Tally> t;
  Json timeline;
  const double span = s.duration_s - s.warmup_s;
  // (a window of the span itself, whatever the rounding of duration_s - warmup_s)
  if (o.window_s > 0 && o.window_s > span * (1.0 + 1e-12))
    throw InputError(
        Location{"--window", 0, 0, ""},
        fmt::format("--window {:g} s is longer than the measured {:g} s (duration_s - warmup_s)", o.window_s, span));
  const int threads = o.threads > 0 ? o.threads : int(std::max(1u, std::thread::hardware_concurrency()));
  check_newer_fleets(src, s);
  if (o.threads > 0 && !(o.window_s > 0) && !(o.format == "json" && wants_timeline(s)))
    throw InputError(Location{"--threads", 0, 0, ""},
                     "a run without windows is one simulation on one thread; --threads sets the threads of "
                     "--window's windows (and of the timeline a JSON run of a changing fleet carries)");
  if (o.window_s > 0) {  // windows of (about) that length, and the run, from one simulation
    t = std::make_unique<Tally>();
    timeline = run_timeline(s, int(std::ceil(span / o.window_s - 1e-9)), threads, 0, t.get());
  } else if (o.format == "json" && wants_timeline(s)) {  // the run and its timeline from one simulation
    t = std::make_unique<Tally>();
    timeline = run_timeline(s, 60, threads, 0, t.get());
  } else {
    HostWorkspace ws;
    t = simulate_once(s.params(), 0, ws);
    check_status(*t, s.source);
  }
  Json r = run_report(s, *t);
  add_newer_device_views(r, src, s, *t, 0);
  if (o.window_s > 0) r["worst_window"] = worst_window(timeline);
  if (!timeline.is_null()) r["timeline"] = std::move(timeline);
  if (o.format == "json")
    emit(r.dump(2) + "\n");
  else if (o.format == "csv")
    emit(json_to_csv(r));
  else if (o.format == "ledger")
    emit(ledger_csv(make_ledger(s, *t)));
  else if (o.format == "focus")
    emit(focus_csv(make_ledger(s, *t), s, billing_start_s));
  else
    emit(format_run_table(r));
  return kExitOk;
}

int cmd_validate(const Options& o) {
  const ScenarioSource src = source(o);
  const Scenario s = src.instantiate();
  check_newer_fleets(src, s);
  std::string sweep;
  if (has_sweep_section(src)) {
    const SweepSpec spec = parse_sweep(src);
    sweep = fmt::format("; sweep of {} configurations x {} replications", spec.count(), spec.replications);
  }
  if (!o.scenario.empty()) {  // a budgets: section is checked as `fleetsim check` would, before any run
    const BudgetSpec b = parse_budgets_text(src.text(), o.scenario, o.sets, false);  // read once: a pipe
    validate_budgets(s, b);
    if (!b.budgets.empty()) sweep += fmt::format("; {} budget{}", b.budgets.size(), b.budgets.size() == 1 ? "" : "s");
  }
  std::string pools;
  for (const auto& P : s.pools)
    pools += fmt::format("{}{}{} x {}{} {}, {} batching, KV {:.1f} GiB{} = {} tokens per replica",
                         pools.empty() ? "" : "; ", s.multi ? P.name + ": " : "", P.replicas, P.device.name,
                         P.devices() > 1 ? fmt::format(" (tp {} x pp {} each)", P.tp, P.pp) : "", P.model.name,
                         batching_name(P.batching), P.capacity.kv_gib, P.devices() > 1 ? " per device" : "",
                         P.capacity.kv_capacity_tokens);
  emit(fmt::format("{}: ok ({}{}{})\n", s.source, pools,
                   s.multi ? fmt::format("; {} request classes", s.classes.size()) : "", sweep));
  return kExitOk;
}

int cmd_capacity(const Options& o) {
  CapacityRequest q;
  q.model = o.model;
  q.device = o.device;
  q.context = o.context;
  q.weight_dtype = o.weight_dtype;
  q.kv_dtype = o.kv_dtype;
  q.expert_weight_dtype = o.expert_weight_dtype;
  q.gpu_memory_utilization = o.gpu_mem_util;
  q.max_num_seqs = o.max_num_seqs;
  q.max_batched_tokens = o.max_batched_tokens;
  q.kv_block_tokens = o.kv_block_tokens;
  q.tp = o.tp;
  q.pp = o.pp;
  q.enforce_eager = o.enforce_eager;
  const CapacityAnswer ans = capacity_document(q);
  const Json& j = ans.doc;
  const Capacity& c = ans.c;
  const int tp_fits = ans.tp_fits;
  const std::string model = j["model"].get<std::string>(), device = j["device"].get<std::string>();
  if (o.format == "json")
    emit(j.dump(2) + "\n");
  else if (o.format == "csv")
    emit(json_to_csv(j));
  else {
    const std::string par = o.tp * o.pp > 1 ? fmt::format(" x {} (tp {} x pp {})", o.tp * o.pp, o.tp, o.pp) : "";
    std::string verdict;
    if (!c.fits)
      verdict = tp_fits > 0
                    ? fmt::format("  -- DOES NOT FIT (with one request of --context); it fits at --tp {}", tp_fits)
                    : "  -- DOES NOT FIT (with one request of --context) at any tensor-parallel degree up to 64";
    const std::string dtype =
        o.weight_dtype + (o.expert_weight_dtype.empty() ? "" : ", experts " + o.expert_weight_dtype);
    emit(format_capacity_table(
        j["capacity"], fmt::format("{} ({}) on {}{} ({} KV){}", model, dtype, device, par, o.kv_dtype, verdict)));
  }
  return c.fits ? kExitOk : kExitFailure;
}

int cmd_catalog(const Options& o) {
  const Json j = catalog_document();
  if (o.format == "json") {
    emit(j.dump(2) + "\n");
    return kExitOk;
  }
  if (o.format == "csv") {
    // one table, one header: every field of the JSON, a device's, then those only a model has, each
    // row filling its own type's
    std::vector<std::string> cols = {"type"};
    for (const char* list : {"devices", "models"})
      for (const auto& x : j[list])
        for (const auto& [k, _] : x.items())
          if (std::find(cols.begin(), cols.end(), k) == cols.end()) cols.push_back(k);
    std::string out;
    for (size_t c = 0; c < cols.size(); ++c) out += (c ? "," : "") + cols[c];
    out += "\n";
    for (const char* list : {"devices", "models"})
      for (const auto& x : j[list]) {
        out += list[0] == 'd' ? "device" : "model";
        for (size_t c = 1; c < cols.size(); ++c) {
          out += ',';
          if (!x.contains(cols[c]) || x[cols[c]].is_null()) continue;
          const Json& v = x[cols[c]];
          out += v.is_string() ? csv_quote(v.get<std::string>()) : v.is_primitive() ? v.dump() : csv_quote(v.dump());
        }
        out += "\n";
      }
    emit(out);
    return kExitOk;
  }
  std::string out = fmt::format("{:<18} {:>8} {:>8} {:>9} {:>8} {:>8} {:>7}  {:<28} {:>8}\n", "device", "mem GiB",
                                "BW GB/s", "BF16 TF/s", "FP8 TF/s", "FP4 TF/s", "$/h", "interconnect", "link GB/s");
  for (const auto& d : builtin_devices())
    out += fmt::format("{:<18} {:>8.2f} {:>8.0f} {:>9.1f} {:>8.1f} {:>8.1f} {:>7.2f}  {:<28} {:>8.0f}\n", d.name,
                       d.memory_gib, d.bandwidth_gb_s, d.bf16_tflops, d.fp8_tflops, d.fp4_tflops, d.usd_per_hour,
                       d.interconnect, d.link_gb_s);
  out +=
      fmt::format("\n{:<20} {:>8} {:>8} {:>8} {:>6} {:>6} {:>5} {:>8} {:>8} {:>12}  {}\n", "model", "kind", "params B",
                  "active B", "layers", "hidden", "kv_h", "head_dim", "context", "KV B/token", "experts");
  for (const auto& m : builtin_models())
    out += fmt::format("{:<20} {:>8} {:>8.2f} {:>8.2f} {:>6} {:>6} {:>5} {:>8} {:>8} {:>12.0f}  {}\n", m.name,
                       model_kind_name(m.kind), m.params_b, m.active_params() / 1e9, m.layers, m.hidden, m.kv_heads,
                       m.head_dim, m.max_context, kv_bytes_per_token(m, 2.0),
                       m.moe() ? fmt::format("{} (top-{}{})", m.experts, m.experts_per_token,
                                             m.shared_experts ? fmt::format(", {} shared", m.shared_experts) : "")
                               : "-");
  out +=
      "\n(KV bytes per token at bf16 = 2 x full-attention layers x kv_heads x head_dim x 2; MLA: layers x\n"
      " (kv_lora_rank + rope_head_dim) x 2; sliding-window layers add a fixed amount per sequence)\n";
  emit(out);
  return kExitOk;
}

// A finite number in [lo, hi] (or (lo, hi] when lo is excluded); CLI11's own range checks let NaN
// through and print infinities in full.
CLI::Validator finite_in(double lo, double hi, bool lo_included = true) {
  return CLI::Validator(
      [=](std::string& text) -> std::string {
        char* end = nullptr;
        const double v = std::strtod(text.c_str(), &end);
        if (text.empty() || *end != '\0' || !std::isfinite(v)) return "expected a finite number, got '" + text + "'";
        if (v > hi || v < lo || (!lo_included && v == lo))
          return fmt::format("{} is out of range (expected a number in {}{}, {}])", text, lo_included ? "[" : "(", lo,
                             hi);
        return "";
      },
      fmt::format("NUMBER in {}{}, {}]", lo_included ? "[" : "(", lo, hi));
}

int cmd_report(const Options& o) {
  cli::ReportArgs a;
  a.input = o.scenario;
  a.output = o.output;
  a.sets = o.sets;
  a.threads = o.threads > 0 ? o.threads : int(std::max(1u, std::thread::hardware_concurrency()));
  a.threads_given = o.threads > 0;
  return cli::run_report_command(a);
}

int cmd_check(const Options& o) {
  cli::CheckArgs a = o.check;
  a.scenario = o.scenario;
  a.sets = o.sets;
  a.format = o.format;
  a.threads = o.threads;
  return cli::run_check(a, emit);
}

int cmd_fit(const Options& o) {
  cli::FitArgs a = o.fit;
  a.format = o.format;
  return cli::run_fit(a, emit);
}

void add_format(CLI::App* c, Options& o) {
  c->add_option("--format", o.format, "output format")->check(CLI::IsMember({"table", "json", "csv"}));
}
void add_sweep_format(CLI::App* c, Options& o) {
  c->add_option("--format", o.format, "output format (csv and jsonl stream rows as configurations finish)")
      ->check(CLI::IsMember({"table", "json", "csv", "jsonl"}));
}
void add_scenario_flags(CLI::App* c, Options& o) {
  c->add_option("--set", o.sets, "override a scenario key: PATH=VALUE (repeatable)")->allow_extra_args(false);
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  CLI::App app{"fleetsim: simulate an LLM inference fleet: capacity, latency, utilization and cost", "fleetsim"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "fleetsim 0.1.0");

  struct Command {
    const char* name;
    const char* help;
    int (*run)(const Options&);
  };
  static const Command commands[] = {
      {"run", "simulate one fleet on a scenario (the built-in default if none is given)", cmd_run},
      {"validate", "check a scenario without running it", cmd_validate},
      {"capacity", "static memory arithmetic: weights, KV cache, concurrency at a context length", cmd_capacity},
      {"catalog", "list the built-in devices and models", cmd_catalog},
      {"sweep", "run a scenario's sweep: many configurations x replications, on CPU threads or CUDA", cmd_sweep},
      {"merge", "combine the JSON outputs of sweep shards into the whole sweep's result", cmd_merge},
      {"fit", "fit a calibrated performance profile to benchmark results or step timings", cmd_fit},
      {"check", "judge a scenario against budgets (exit 0 pass, 1 violated, 2 input error), for CI", cmd_check},
      {"report", "one self-contained HTML report of a run or sweep result (JSON) or of a scenario", cmd_report},
  };
  std::vector<std::pair<CLI::App*, const Command*>> subs;
  for (const auto& c : commands) subs.emplace_back(app.add_subcommand(c.name, c.help), &c);

  CLI::App* run = subs[0].first;
  run->add_option("scenario", o.scenario, "scenario YAML file");
  run->add_option("--seed", o.seed, "random seed, 0 to 2^64-1 (overrides the scenario's)")
      ->check(CLI::Validator(
          [](std::string& t) -> std::string {
            bool ok = !t.empty() && t.find_first_not_of("0123456789") == std::string::npos;
            errno = 0;
            if (ok) std::strtoull(t.c_str(), nullptr, 10);
            ok = ok && errno != ERANGE;
            return ok ? "" : "expected an integer in [0, 18446744073709551615], got '" + t + "'";
          },
          "INTEGER in [0, 2^64-1]"));
  run->add_option("--duration", o.duration, "simulated seconds (overrides duration_s)")
      ->check(finite_in(0, 30.0 * 86400, false));
  run->add_option("--window", o.window_s,
                  "also measure windows of about SECONDS (at least 10) and print the worst window's p99 TTFT beside "
                  "the whole run's (JSON: worst_window and timeline)")
      ->check(finite_in(10, 30.0 * 86400, true));
  run->add_option("--threads", o.threads, "CPU threads for --window's windows, or a JSON run's timeline (default: all)")
      ->check(CLI::Range(1, 4096));
  add_scenario_flags(run, o);
  run->add_option("--format", o.format,
                  "output format (ledger: the cost ledger as CSV, whose usd sums to the total over the rows of "
                  "scope total and kind effective, or of scope pool and kind bucket; focus: FinOps FOCUS 1.2 CSV, "
                  "whose EffectiveCost sums to the total over every row)")
      ->check(CLI::IsMember({"table", "json", "csv", "ledger", "focus"}));
  run->add_option("--billing-start", o.billing_start,
                  "with --format focus: the UTC date (YYYY-MM-DD) or time (YYYY-MM-DDTHH:MM:SSZ) the simulated run "
                  "starts, which dates every billing and charge period (default 1970-01-01)");

  CLI::App* val = subs[1].first;
  val->add_option("scenario", o.scenario, "scenario YAML file")->required();
  add_scenario_flags(val, o);

  CLI::App* cap = subs[2].first;
  cap->add_option("--model", o.model, "catalog model")->required();
  cap->add_option("--device", o.device, "catalog device")->required();
  cap->add_option("--context", o.context,
                  "tokens per request, prompt + output (default 4096, or the model's context window if shorter)")
      ->check(CLI::Range(int64_t(1), int64_t(1) << 24));
  cap->add_option("--weight-dtype", o.weight_dtype, "weight dtype")->check(CLI::IsMember(weight_dtypes()));
  cap->add_option("--kv-dtype", o.kv_dtype, "KV cache dtype")->check(CLI::IsMember(kv_dtypes()));
  cap->add_option("--gpu-memory-utilization", o.gpu_mem_util, "fraction of device memory the engine may use")
      ->check(finite_in(0.01, 1.0));
  cap->add_option("--max-num-seqs", o.max_num_seqs, "sequences per step (sizes the sampler)")
      ->check(CLI::Range(1, 16384));
  cap->add_option("--max-batched-tokens", o.max_batched_tokens, "tokens per step (sizes the activations)")
      ->check(CLI::Range(16, 1 << 20));
  cap->add_option("--kv-block-tokens", o.kv_block_tokens, "tokens per KV block")->check(CLI::Range(1, 1024));
  cap->add_option("--tp", o.tp, "tensor-parallel devices per replica")->check(CLI::Range(1, 64));
  cap->add_option("--pp", o.pp, "pipeline stages per replica")->check(CLI::Range(1, 64));
  cap->add_option("--expert-weight-dtype", o.expert_weight_dtype, "routed experts' dtype (MoE models)")
      ->check(CLI::IsMember(weight_dtypes()));
  cap->add_flag("--enforce-eager", o.enforce_eager, "no CUDA graphs (their memory is not reserved)");
  add_format(cap, o);

  CLI::App* cat = subs[3].first;
  add_format(cat, o);

  CLI::App* sw = subs[4].first;
  sw->add_option("scenario", o.scenario, "scenario YAML file with a sweep section")->required();
  add_scenario_flags(sw, o);
  sw->add_option("--backend", o.backend, "where simulations run")->check(CLI::IsMember({"auto", "cpu", "cuda"}));
  sw->add_option("--threads", o.threads, "CPU threads (default: all)")->check(CLI::Range(1, 4096));
  sw->add_option("--shard", o.shard, "run only slice K of N (0 <= K < N); combine with fleetsim merge");
  sw->add_option("--journal", o.journal,
                 "append each finished configuration to FILE (JSON Lines), so an interrupted sweep can be resumed");
  sw->add_option("--resume", o.resume,
                 "continue the sweep journaled in FILE: run only the configurations it lacks, journaling them to FILE");
  add_sweep_format(sw, o);

  CLI::App* mg = subs[5].first;
  mg->add_option("shards", o.inputs, "JSON outputs of `fleetsim sweep --shard K/N --format json`")->required();
  add_sweep_format(mg, o);

  CLI::App* ft = subs[6].first;
  ft->add_option("data", o.fit.inputs,
                 "benchmark results: CSV (model, device, tp, isl, osl, concurrency or request_rate, mean_ttft_ms, "
                 "mean_tpot_ms, ...), vllm bench serve JSON or GuideLLM JSON; with --steps, step timings")
      ->required();
  ft->add_flag("--steps", o.fit.steps, "the data are per-step timings (fitted by non-negative least squares)");
  ft->add_flag("--global", o.fit.global,
               "fit the physics coefficients once across every device and model in the data, with "
               "leave-one-device-out and leave-one-model-out errors")
      ->excludes("--steps");
  // step timings name their configuration on every row: these fill what benchmark results leave out
  ft->add_option("--device", o.fit.device, "catalog device, for results that do not name one")->excludes("--steps");
  ft->add_option("--model", o.fit.model, "catalog or Hugging Face model, for results that do not name one")
      ->excludes("--steps");
  ft->add_option("--tp", o.fit.tp, "tensor-parallel degree, for results that do not say")
      ->check(CLI::Range(1, 64))
      ->excludes("--steps");
  ft->add_option(
      "--engine", o.fit.engine,
      "the serving engine measured, for results that do not say, and its version if known (\"vllm 0.15.1\"; the "
      "profile records the engine of its runs)");
  ft->add_option("--name", o.fit.name, "the profile's name (default DEVICE/MODEL/tpN)");
  ft->add_option("-o,--output", o.fit.output, "write the profile to FILE (default: standard output)");
  ft->add_option("--folds", o.fit.folds,
                 "k-fold cross-validation for the held-out error, by benchmark: repeats of one configuration at "
                 "one load are held out together (0: none; --global leaves a device or model out instead)")
      ->check(CLI::Range(0, 50))
      ->excludes("--global");
  ft->add_option("--threads", o.fit.threads, "CPU threads (default: all)")->check(CLI::Range(1, 4096));
  ft->add_option("--requests-per-client", o.fit.requests_per_client,
                 "requests each closed-loop client sends when a result does not state num_prompts")
      ->check(CLI::Range(1, 10000))
      ->excludes("--steps");
  ft->add_option("--format", o.format, "output format")->check(CLI::IsMember({"table", "json"}));

  CLI::App* ck = subs[7].first;
  ck->add_option("scenario", o.scenario, "scenario YAML file (the built-in default if none is given)");
  ck->add_option("--budgets", o.check.budgets, "budgets file (default: the scenario's budgets: section)");
  add_scenario_flags(ck, o);
  ck->add_option("--baseline", o.check.baseline, "another version of the scenario: report what moved");
  ck->add_option("--junit", o.check.junit, "write a JUnit XML report to FILE");
  ck->add_option("--markdown", o.check.markdown, "write a Markdown summary (for a pull-request comment) to FILE");
  ck->add_option("--threads", o.threads, "CPU threads (default: all)")->check(CLI::Range(1, 4096));
  ck->add_option("--format", o.format, "output format")->check(CLI::IsMember({"table", "json"}));

  CLI::App* rp = subs[8].first;
  rp->add_option(
      "input", o.scenario,
      "run or sweep JSON (fleetsim run/sweep --format json), or a scenario YAML to run (default: the built-in one)");
  rp->add_option("-o,--output", o.output, "the HTML file to write (default: standard output)");
  add_scenario_flags(rp, o);
  rp->add_option("--threads", o.threads, "CPU threads for the timeline (default: all)")->check(CLI::Range(1, 4096));

  // a closed pipe is a failed write (EPIPE), not a death by SIGPIPE
  std::signal(SIGPIPE, SIG_IGN);
  o.argv.assign(argv, argv + argc);
  if (argc > 1 && argv[1][0] != '-' && std::none_of(std::begin(commands), std::end(commands), [&](const Command& c) {
        return std::strcmp(c.name, argv[1]) == 0;
      })) {
    std::string names;
    for (const auto& c : commands) names += std::string(names.empty() ? "" : ", ") + c.name;
    std::fprintf(stderr, "unknown command '%s' (expected one of: %s; see fleetsim --help)\n", argv[1], names.c_str());
    return finish_output(kExitUsage);
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::Success& e) {
    return finish_output(app.exit(e));
  } catch (const CLI::ParseError& e) {
    // one line, like every other input error
    std::fprintf(stderr, "%s (see fleetsim --help)\n", e.what());
    return finish_output(kExitUsage);
  }
  // an empty value names no file, shard or model: taking it as "not given" would be a silent default
  for (const auto& [sub, cmd] : subs) {
    if (!sub->parsed()) continue;
    for (const CLI::Option* opt : sub->get_options())
      for (const std::string& v : opt->results())
        if (v.empty()) {
          std::fprintf(stderr, "%s: an empty value (see fleetsim %s --help)\n", opt->get_name().c_str(), cmd->name);
          return finish_output(kExitUsage);
        }
  }
  try {
    for (const auto& [sub, cmd] : subs)
      if (sub->parsed()) return finish_output(cmd->run(o));
  } catch (const InputError& e) {
    std::cerr << e.one_line() << "\n";
    if (isatty(STDERR_FILENO)) {
      const std::string c = e.caret();
      if (!c.empty()) std::cerr << c << "\n";
    }
    return finish_output(kExitUsage);
  } catch (const OutputError& e) {
    std::cerr << e.what() << "\n";
    return finish_output(kExitOutput, true);
  } catch (const std::exception& e) {
    std::cerr << "fleetsim: error: " << e.what() << "\n";
    return finish_output(kExitFailure);
  }
  return finish_output(kExitUsage);
}
