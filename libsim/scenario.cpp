#include "scenario.hpp"

#include <yaml-cpp/yaml.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <set>
#include <sstream>

#include "core/engine.hpp"
#include "core/philox.hpp"
#include "core/workload.hpp"
#include "error.hpp"
#include "trace.hpp"
#include "yaml_node.hpp"

namespace fleetsim {

extern const char* const kDefaultScenarioYaml;  // generated from scenarios/chat-default.yaml
const char* default_scenario_text() { return kDefaultScenarioYaml; }

const char* router_name(Router r) {
  switch (r) {
    case Router::round_robin: return "round_robin";
    case Router::least_outstanding: return "least_outstanding";
    case Router::central_queue: return "central_queue";
  }
  return "?";
}
const char* batching_name(Batching b) { return b == Batching::continuous ? "continuous" : "static"; }
const char* arrival_name(ArrivalKind a) {
  switch (a) {
    case ArrivalKind::poisson: return "poisson";
    case ArrivalKind::gamma: return "gamma";
    case ArrivalKind::diurnal: return "diurnal";
    case ArrivalKind::trace: return "trace";
  }
  return "?";
}
const char* perf_name(PerfKind p) { return p == PerfKind::roofline ? "roofline" : "linear"; }

namespace {

using namespace detail;

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

DistSpec parse_dist(const N& n, const std::string& base_dir) {
  DistSpec d;
  if (n.node.IsScalar()) {  // shorthand for fixed
    d.kind = DistKind::fixed;
    d.a = double(n.integer(1, 10000000));
    d.describe = "fixed(" + n.node.Scalar() + ")";
    return d;
  }
  n.require_map();
  const std::string kind = n.req("dist").choice({"fixed", "uniform", "lognormal", "geometric", "empirical"});
  std::ostringstream desc;
  if (kind == "fixed") {
    n.allow_keys({"dist", "value"});
    d.kind = DistKind::fixed;
    d.a = double(n.req("value").integer(1, 10000000));
    desc << "fixed(" << d.a << ")";
  } else if (kind == "uniform") {
    n.allow_keys({"dist", "min", "max"});
    d.kind = DistKind::uniform;
    d.a = double(n.req("min").integer(1, 10000000));
    d.b = double(n.req("max").integer(1, 10000000));
    if (d.b < d.a) n.at("max").fail("max must be >= min", ErrorKind::inconsistent);
    desc << "uniform(" << d.a << ".." << d.b << ")";
  } else if (kind == "lognormal") {
    n.allow_keys({"dist", "median", "p99", "mu", "sigma"});
    d.kind = DistKind::lognormal;
    if (n.has("median") || n.has("p99")) {
      if (n.has("mu") || n.has("sigma")) n.fail("give either median and p99, or mu and sigma, not both");
      const double med = n.req("median").pos(1e7);
      const double p99 = n.req("p99").pos(1e8);
      if (p99 < med) n.at("p99").fail("p99 must be >= median", ErrorKind::inconsistent);
      d.a = std::log(med);
      d.b = std::log(p99 / med) / 2.326;
      desc << "lognormal(median=" << med << ", p99=" << p99 << ")";
    } else {
      d.a = n.req("mu").num_in(-10, 20, "mu");
      d.b = n.req("sigma").num_in(0, 5, "sigma");
      desc << "lognormal(mu=" << d.a << ", sigma=" << d.b << ")";
    }
  } else if (kind == "geometric") {
    n.allow_keys({"dist", "mean"});
    d.kind = DistKind::geometric;
    d.a = n.req("mean").num_in(1, 1e7, "mean");
    d.b = d.a > 1 ? 1.0 / std::log(1.0 - 1.0 / d.a) : 0.0;
    desc << "geometric(mean=" << d.a << ")";
  } else {
    n.allow_keys({"dist", "values", "weights", "csv", "column"});
    d.kind = DistKind::empirical;
    std::vector<double> vals, w;
    if (n.has("csv")) {
      if (n.has("values") || n.has("weights")) n.fail("give either csv and column, or values (and weights), not both");
      std::string path = n.at("csv").str();
      if (!std::filesystem::path(path).is_absolute()) path = (std::filesystem::path(base_dir) / path).string();
      const std::string col = n.req("column").str();
      try {
        vals = load_csv_column(path, col);
      } catch (const InputError& e) {
        n.at("csv").fail(e.one_line());
      }
      w.assign(vals.size(), 1.0);
      desc << "empirical(" << n.at("csv").str() << ":" << col << ", " << vals.size() << " values)";
    } else {
      const N v = n.req("values");
      if (!v.node.IsSequence() || v.node.size() == 0) v.fail("expected a non-empty list of token counts");
      for (size_t i = 0; i < v.node.size(); ++i)
        vals.push_back(double(N{v.node[i], v.path + "[" + std::to_string(i) + "]", v.src}.integer(1, 10000000)));
      if (n.has("weights")) {
        const N wn = n.at("weights");
        if (!wn.node.IsSequence() || wn.node.size() != vals.size())
          wn.fail("expected a list of " + std::to_string(vals.size()) + " weights, one per value");
        for (size_t i = 0; i < wn.node.size(); ++i)
          w.push_back(N{wn.node[i], wn.path + "[" + std::to_string(i) + "]", wn.src}.num_in(0, 1e12, "weight"));
      } else {
        w.assign(vals.size(), 1.0);
      }
      desc << "empirical(" << vals.size() << " values)";
    }
    double total = 0;
    for (double x : w) total += x;
    if (!(total > 0)) n.fail("weights must not all be zero");
    double acc = 0;
    for (size_t i = 0; i < vals.size(); ++i) {
      if (vals[i] < 0) n.fail("token counts must be >= 0");
      acc += w[i];
      d.values.push_back(vals[i]);
      d.cdf.push_back(acc / total);
    }
    d.cdf.back() = 1.0;
  }
  d.describe = desc.str();
  return d;
}

DeviceSpec parse_device(const N& n, const DeviceSpec* base, const std::string& name) {
  n.allow_keys({"memory_gib", "bandwidth_gb_s", "bf16_tflops", "fp8_tflops", "usd_per_hour", "notes"});
  DeviceSpec d = base ? *base : DeviceSpec{};
  d.name = name;
  auto field = [&](const char* key, double& out, double hi, bool allow_zero) {
    if (n.has(key)) out = allow_zero ? n.at(key).num_in(0, hi) : n.at(key).pos(hi);
    else if (!base) n.fail(std::string("new device '") + name + "' needs '" + key + "'");
  };
  field("memory_gib", d.memory_gib, 1e5, false);
  field("bandwidth_gb_s", d.bandwidth_gb_s, 1e6, false);
  field("bf16_tflops", d.bf16_tflops, 1e6, false);
  if (n.has("fp8_tflops")) d.fp8_tflops = n.at("fp8_tflops").num_in(0, 1e6);
  field("usd_per_hour", d.usd_per_hour, 1e5, true);
  if (n.has("notes")) d.notes = n.at("notes").str();
  return d;
}

ModelSpec parse_model(const N& n, const ModelSpec* base, const std::string& name) {
  n.allow_keys({"kind", "params_b", "layers", "hidden", "heads", "kv_heads", "head_dim", "intermediate", "vocab",
                "max_context", "notes"});
  ModelSpec m = base ? *base : ModelSpec{};
  m.name = name;
  if (n.has("kind")) {
    const std::string k = n.at("kind").choice({"generate", "embed", "score"});
    m.kind = k == "generate" ? ModelKind::generate : k == "embed" ? ModelKind::embed : ModelKind::score;
  }
  if (n.has("params_b")) m.params_b = n.at("params_b").pos(1e5);
  else if (!base) n.fail("new model '" + name + "' needs 'params_b'");
  auto ifield = [&](const char* key, int& out, int64_t lo, int64_t hi) {
    if (n.has(key)) out = int(n.at(key).integer(lo, hi));
    else if (!base) n.fail(std::string("new model '") + name + "' needs '" + key + "'");
  };
  ifield("layers", m.layers, 1, 1000);
  ifield("hidden", m.hidden, 1, 1 << 20);
  ifield("heads", m.heads, 1, 4096);
  ifield("kv_heads", m.kv_heads, 1, 4096);
  ifield("head_dim", m.head_dim, 1, 4096);
  ifield("intermediate", m.intermediate, 1, 1 << 22);
  ifield("vocab", m.vocab, 1, 1 << 24);
  ifield("max_context", m.max_context, 2, 1 << 24);
  if (m.kv_heads > m.heads) n.fail("kv_heads must be <= heads", ErrorKind::inconsistent);
  if (n.has("notes")) m.notes = n.at("notes").str();
  return m;
}

double mean_of(const DistSpec& d, int max_context, LoadCache* cache) {
  // by sampling the core's own sampler, so truncation and rounding are counted
  std::string key;
  if (cache) {
    std::ostringstream k;
    k.precision(17);
    k << int(d.kind) << ' ' << d.a << ' ' << d.b << ' ' << max_context;
    for (size_t i = 0; i < d.values.size(); ++i) k << ' ' << d.values[i] << ':' << d.cdf[i];
    key = k.str();
    std::lock_guard<std::mutex> lock(cache->mutex);
    auto it = cache->means.find(key);
    if (it != cache->means.end()) return it->second;
  }
  SimParams dummy{};
  DistParams p{d.kind, d.a, d.b, d.values.data(), d.cdf.data(), int64_t(d.values.size())};
  const Rng rng = make_rng(0x5eed, 0);
  double sum = 0;
  const int n = 20000;
  for (int i = 0; i < n; ++i) {
    int64_t x = sample_length(p, rng, Stream::prompt, 0, uint64_t(i));
    if (x > max_context) x = max_context;
    sum += double(x);
  }
  (void)dummy;
  const double mean = sum / n;
  if (cache) {
    std::lock_guard<std::mutex> lock(cache->mutex);
    cache->means[key] = mean;
  }
  return mean;
}

PoolSpec build_pool(const N& node, const std::vector<DeviceSpec>& devices, const std::vector<ModelSpec>& models,
                    Source& src) {
  PoolSpec P;
  {
    std::string why;
    const N dn = node.req("device");
    const DeviceSpec* dev = find_named(devices, dn.str(), "device", " (see `fleetsim catalog`, or define it under catalog.devices)", why);
    if (!dev) dn.fail(why);
    P.device = *dev;
    const N mn = node.req("model");
    const ModelSpec* mod = find_named(models, mn.str(), "model", " (see `fleetsim catalog`, or define it under catalog.models)", why);
    if (!mod) mn.fail(why);
    P.model = *mod;
    if (node.has("partition")) {
      const N pn = node.at("partition");
      const std::string prof = pn.str();
      std::vector<std::string> profiles;
      const PartitionSpec* part = nullptr;
      for (const auto& p : builtin_partitions())
        if (p.device == P.device.name) {
          profiles.push_back(p.name);
          if (p.name == prof) part = &p;
        }
      if (!part) {
        std::string all;
        for (const auto& x : profiles) all += (all.empty() ? "" : ", ") + x;
        pn.fail("device " + P.device.name + " has no MIG profile '" + prof + "'" +
                    (profiles.empty() ? " (it does not support MIG)" : " (expected one of: " + all + ")"),
                ErrorKind::inconsistent);
      }
      P.partition = prof;
      P.replicas_per_device = part->per_device;
      P.device = partition_device(P.device, *part);
    }
    if (node.has("time_slicing")) {
      const N ts = node.at("time_slicing");
      P.time_slicing = int(ts.integer(1, 16));
      if (node.has("partition") && P.time_slicing > 1)
        ts.fail("time_slicing and partition are different ways to share a device: choose one", ErrorKind::inconsistent);
      P.replicas_per_device = P.time_slicing;
    }
  }
  P.weight_dtype = node.has("weight_dtype") ? node.at("weight_dtype").choice(weight_dtypes()) : "bf16";
  P.kv_dtype = node.has("kv_dtype") ? node.at("kv_dtype").choice(kv_dtypes()) : "bf16";

  // engine
  const N eng = node.has("engine") ? node.at("engine") : N{YAML::Node(YAML::NodeType::Map), node.path.empty() ? "engine" : node.path + ".engine", &src};
  eng.allow_keys({"batching", "max_num_seqs", "max_batched_tokens", "gpu_memory_utilization", "kv_block_tokens",
                  "kv_watermark", "runtime_overhead_gib", "activation_gib", "max_batch", "batch_window_s", "perf_model",
                  "mfu", "mbu", "step_overhead_s", "step_base_s", "per_prefill_token_s", "per_decode_seq_s",
                  "per_context_token_s", "on_kv_exhausted", "prefix_caching", "lora_adapters", "lora_rank",
                  "lora_step_overhead"});
  if (eng.has("lora_adapters")) P.lora_adapters = int(eng.at("lora_adapters").integer(0, 10000));
  if (eng.has("lora_rank")) P.lora_rank = int(eng.at("lora_rank").integer(1, 4096));
  if (eng.has("lora_step_overhead")) P.lora_step_overhead = eng.at("lora_step_overhead").num_in(0, 10);
  if (eng.has("prefix_caching")) P.prefix_caching = eng.at("prefix_caching").boolean();
  P.crash_on_kv_exhausted = eng.has("on_kv_exhausted") && eng.at("on_kv_exhausted").choice({"preempt", "crash"}) == "crash";
  P.batching = eng.has("batching") && eng.at("batching").choice({"continuous", "static"}) == "static"
                   ? Batching::fixed_batch
                   : Batching::continuous;
  P.max_num_seqs = eng.has("max_num_seqs") ? int(eng.at("max_num_seqs").integer(1, 16384)) : 256;
  P.max_batched_tokens = eng.has("max_batched_tokens") ? int(eng.at("max_batched_tokens").integer(16, 1 << 20)) : 8192;
  P.gpu_memory_utilization = eng.has("gpu_memory_utilization") ? eng.at("gpu_memory_utilization").pos(1.0) : 0.9;
  P.kv_block_tokens = eng.has("kv_block_tokens") ? int(eng.at("kv_block_tokens").integer(1, 1024)) : 16;
  P.kv_watermark = eng.has("kv_watermark") ? eng.at("kv_watermark").num_in(0, 0.5, "kv_watermark") : 0.01;
  P.runtime_overhead_gib = eng.has("runtime_overhead_gib") ? eng.at("runtime_overhead_gib").num_in(0, 1e4) : 1.8;
  P.activation_gib = eng.has("activation_gib") ? eng.at("activation_gib").num_in(0, 1e4) : -1;
  P.max_batch = eng.has("max_batch") ? int(eng.at("max_batch").integer(1, 16384)) : 8;
  P.batch_window_s = eng.has("batch_window_s") ? eng.at("batch_window_s").num_in(0, 3600) : 0.05;
  if (P.batching == Batching::continuous) {
    if (eng.has("max_batch") || eng.has("batch_window_s"))
      (eng.has("max_batch") ? eng.at("max_batch") : eng.at("batch_window_s"))
          .fail("max_batch and batch_window_s apply to static batching only (set engine.batching: static)",
                ErrorKind::inconsistent);
    if (P.max_batched_tokens < P.max_num_seqs)
      (eng.has("max_batched_tokens") ? eng.at("max_batched_tokens") : eng)
          .fail("max_batched_tokens (" + std::to_string(P.max_batched_tokens) + ") must be >= max_num_seqs (" +
                std::to_string(P.max_num_seqs) + "): every running sequence needs a token of the step budget",
                ErrorKind::inconsistent);
  }
  P.perf_model = eng.has("perf_model") && eng.at("perf_model").choice({"roofline", "linear"}) == "linear"
                     ? PerfKind::linear
                     : PerfKind::roofline;
  if (P.perf_model == PerfKind::roofline) {
    for (const char* k : {"step_base_s", "per_prefill_token_s", "per_decode_seq_s", "per_context_token_s"})
      if (eng.has(k)) eng.at(k).fail(std::string(k) + " belongs to perf_model: linear", ErrorKind::inconsistent);
    P.mfu = eng.has("mfu") ? eng.at("mfu").pos(1.0) : 0.5;
    P.mbu = eng.has("mbu") ? eng.at("mbu").pos(1.0) : 0.8;
    P.step_overhead_s = eng.has("step_overhead_s") ? eng.at("step_overhead_s").num_in(0, 60) : 0.002;
  } else {
    for (const char* k : {"mfu", "mbu", "step_overhead_s"})
      if (eng.has(k)) eng.at(k).fail(std::string(k) + " belongs to perf_model: roofline", ErrorKind::inconsistent);
    P.step_base_s = eng.req("step_base_s").num_in(0, 60);
    P.per_prefill_token_s = eng.has("per_prefill_token_s") ? eng.at("per_prefill_token_s").num_in(0, 60) : 0;
    P.per_decode_seq_s = eng.has("per_decode_seq_s") ? eng.at("per_decode_seq_s").num_in(0, 60) : 0;
    P.per_context_token_s = eng.has("per_context_token_s") ? eng.at("per_context_token_s").num_in(0, 60) : 0;
    if (!(P.step_base_s + P.per_prefill_token_s + P.per_decode_seq_s > 0))
      eng.at("step_base_s").fail("a linear step-time model needs step_base_s > 0 or per-token costs > 0");
  }

  // fleet
  const N fl = node.req("fleet");
  fl.allow_keys({"replicas", "router", "queue_limit", "usd_per_hour", "headroom_replicas", "autoscale", "cold_start",
                 "pricing", "failures"});
  if (fl.has("pricing")) {
    const N pr = fl.at("pricing");
    pr.allow_keys({"spot", "committed_replicas", "committed_discount"});
    if (pr.has("spot")) {
      const N sp = pr.at("spot");
      sp.allow_keys({"discount", "interruptions_per_hour"});
      P.spot_discount = sp.req("discount").num_in(0, 0.99, "discount");
      P.spot_interruptions_per_hour = sp.req("interruptions_per_hour").num_in(0, 100, "interruptions_per_hour");
    }
    P.committed_replicas = pr.has("committed_replicas") ? int(pr.at("committed_replicas").integer(0, 4096)) : 0;
    P.committed_discount = pr.has("committed_discount") ? pr.at("committed_discount").num_in(0, 0.99, "committed_discount") : 0.0;
    if (pr.has("committed_discount") && !pr.has("committed_replicas"))
      pr.at("committed_discount").fail("committed_discount needs committed_replicas", ErrorKind::inconsistent);
  }
  if (fl.has("failures")) {
    const N fa = fl.at("failures");
    fa.allow_keys({"mtbf_hours"});
    P.mtbf_hours = fa.req("mtbf_hours").pos(1e7);
  }
  const bool scaled = fl.has("autoscale");
  P.replicas = fl.has("replicas") || !scaled ? int(fl.req("replicas").integer(scaled ? 0 : 1, 4096)) : -1;
  P.min_replicas = P.max_replicas = P.replicas;
  P.headroom_replicas = fl.has("headroom_replicas") ? int(fl.at("headroom_replicas").integer(0, 4096)) : 0;
  if (scaled) {
    const N as = fl.at("autoscale");
    as.allow_keys({"min_replicas", "max_replicas", "signal", "target", "interval_s", "scale_up_window_s",
                   "scale_down_window_s", "cooldown_s", "tolerance", "ttft_window_s", "ttft_quantile", "cpu_base",
                   "cpu_per_request_s", "max_starts", "max_starts_per_hour"});
    AutoscaleParams& A = P.autoscale;
    A.enabled = 1;
    P.min_replicas = int(as.req("min_replicas").integer(0, 4096));
    P.max_replicas = int(as.req("max_replicas").integer(1, 4096));
    if (P.max_replicas < P.min_replicas)
      as.at("max_replicas").fail("max_replicas must be >= min_replicas", ErrorKind::inconsistent);
    if (P.replicas < 0) P.replicas = P.min_replicas;
    if (P.replicas < P.min_replicas || P.replicas > P.max_replicas)
      fl.at("replicas").fail("replicas (the starting count) must lie in [min_replicas, max_replicas]",
                             ErrorKind::inconsistent);
    const std::string sig = as.req("signal").choice({"queue_depth", "inflight", "ttft", "busy", "host_cpu"});
    A.signal = sig == "queue_depth" ? ScaleSignal::queue_depth
               : sig == "inflight"  ? ScaleSignal::inflight
               : sig == "ttft"      ? ScaleSignal::ttft
               : sig == "busy"      ? ScaleSignal::busy
                                    : ScaleSignal::host_cpu;
    A.target = as.req("target").pos(1e6);
    if ((A.signal == ScaleSignal::busy || A.signal == ScaleSignal::host_cpu) && A.target > 1.0)
      as.at("target").fail("a " + sig + " target is a fraction in (0, 1]");
    A.interval_s = as.has("interval_s") ? as.at("interval_s").pos(3600) : 15.0;
    A.up_window_s = as.has("scale_up_window_s") ? as.at("scale_up_window_s").num_in(0, 86400) : 0.0;
    A.down_window_s = as.has("scale_down_window_s") ? as.at("scale_down_window_s").num_in(0, 86400) : 300.0;
    A.cooldown_s = as.has("cooldown_s") ? as.at("cooldown_s").num_in(0, 86400) : 300.0;
    A.tolerance = as.has("tolerance") ? as.at("tolerance").num_in(0, 1) : 0.1;
    A.ttft_window_s = as.has("ttft_window_s") ? as.at("ttft_window_s").pos(86400) : 60.0;
    A.ttft_quantile = as.has("ttft_quantile") ? as.at("ttft_quantile").num_in(0.5, 1.0) : 0.95;
    A.cpu_base = as.has("cpu_base") ? as.at("cpu_base").num_in(0, 1) : 0.05;
    A.cpu_per_request_s = as.has("cpu_per_request_s") ? as.at("cpu_per_request_s").num_in(0, 10) : 0.004;
    A.max_starts = as.has("max_starts") ? int(as.at("max_starts").integer(0, 1000000)) : 0;
    A.max_starts_per_hour = as.has("max_starts_per_hour") ? as.at("max_starts_per_hour").num_in(0, 64) : 0.0;
    // the autoscaler remembers its last 64 recommendations
    for (const char* k : {"scale_up_window_s", "scale_down_window_s"})
      if (as.has(k) && as.at(k).num() > 64.0 * A.interval_s)
        as.at(k).fail(std::string(k) + " is longer than 64 evaluations (64 x interval_s); lengthen interval_s",
                      ErrorKind::inconsistent);
    if (!fl.has("headroom_replicas")) P.headroom_replicas = P.min_replicas;  // the warm floor is chosen headroom
  }
  // cold start: defaults from the seeds' figures (a new node, a 10-20 GB image, weights from object storage)
  {
    ColdStartParams& c = P.cold;
    const N cs = fl.has("cold_start") ? fl.at("cold_start") : N{YAML::Node(YAML::NodeType::Map), fl.path + ".cold_start", &src};
    cs.allow_keys({"provision_s", "image_pull_s", "download_gb_s", "cache_hit_probability", "cache_gb_s", "load_gb_s",
                   "warmup_s"});
    // a stage is a number of seconds, or {median, p99} for a lognormal spread
    auto stage = [&](const char* key, double dflt, double& median, double& sigma) {
      median = dflt;
      sigma = 0.0;
      if (!cs.has(key)) return;
      const N st = cs.at(key);
      if (st.node.IsMap()) {
        st.allow_keys({"median", "p99"});
        median = st.req("median").pos(86400);
        const double p99 = st.req("p99").pos(86400 * 10);
        if (p99 < median) st.at("p99").fail("p99 must be >= median", ErrorKind::inconsistent);
        sigma = std::log(p99 / median) / 2.326;
      } else {
        median = st.num_in(0, 86400);
      }
    };
    stage("provision_s", 120.0, c.provision_s, c.provision_sigma);
    stage("image_pull_s", 60.0, c.image_pull_s, c.image_pull_sigma);
    c.download_bytes_per_s = (cs.has("download_gb_s") ? cs.at("download_gb_s").pos(1e4) : 0.5) * 1e9;
    c.cache_hit_probability = cs.has("cache_hit_probability") ? cs.at("cache_hit_probability").num_in(0, 1) : 0.0;
    c.cache_bytes_per_s = (cs.has("cache_gb_s") ? cs.at("cache_gb_s").pos(1e4) : 2.0) * 1e9;
    c.load_bytes_per_s = (cs.has("load_gb_s") ? cs.at("load_gb_s").pos(1e4) : 5.0) * 1e9;
    stage("warmup_s", 30.0, c.warmup_s, c.warmup_sigma);
    c.weights_bytes = P.model.params_b * 1e9 * weight_dtype_bytes(P.weight_dtype);
  }
  if (fl.has("router")) {
    const std::string r = fl.at("router").choice({"round_robin", "least_outstanding", "central_queue"});
    P.router = r == "round_robin" ? Router::round_robin
               : r == "central_queue" ? Router::central_queue
                                      : Router::least_outstanding;
  }
  P.queue_limit = fl.has("queue_limit") ? int(fl.at("queue_limit").integer(1, 1000000)) : 1024;
  P.usd_per_hour = fl.has("usd_per_hour") ? fl.at("usd_per_hour").num_in(0, 1e5) : P.device.usd_per_hour;

  // memory: the hard boundary
  MemoryInputs mi;
  mi.device = P.device;
  mi.model = P.model;
  mi.weight_bytes_per_param = weight_dtype_bytes(P.weight_dtype);
  mi.kv_elem_bytes = kv_dtype_bytes(P.kv_dtype);
  mi.gpu_memory_utilization = P.gpu_memory_utilization;
  mi.runtime_overhead_gib = P.runtime_overhead_gib + P.lora_gib();  // resident adapters take memory too
  mi.activation_gib = P.activation_gib;
  mi.max_batched_tokens = P.max_batched_tokens;
  mi.max_num_seqs = P.batching == Batching::continuous ? P.max_num_seqs : P.max_batch;
  mi.kv_block_tokens = P.kv_block_tokens;
  P.capacity = compute_capacity(mi);
  if (!P.capacity.fits) {
    std::ostringstream o;
    o.setf(std::ios::fixed);
    o.precision(1);
    o << "model " << P.model.name << " (" << P.weight_dtype << ") does not fit on " << P.device.name << ": it needs "
      << P.capacity.needed_gib << " GiB (weights " << P.capacity.weights_gib << " + runtime "
      << P.capacity.runtime_overhead_gib << " + activations " << P.capacity.activation_gib
      << " + one KV block), the device offers " << P.capacity.usable_gib << " GiB (" << P.capacity.device_gib
      << " GiB x gpu_memory_utilization " << P.gpu_memory_utilization
      << "); try a larger device, a smaller weight_dtype, or fewer max_batched_tokens";
    throw InputError(node.at("model").where(), node.at("model").path + ": " + o.str(), ErrorKind::does_not_fit);
  }
  if (P.time_slicing > 1) {
    if (P.batching != Batching::continuous)
      node.at("time_slicing").fail("time slicing is modelled for continuous batching", ErrorKind::inconsistent);
    const double fixed = P.capacity.weights_gib + P.capacity.runtime_overhead_gib + P.capacity.activation_gib;
    if (fixed * P.time_slicing > P.capacity.device_gib) {
      std::ostringstream o;
      o.setf(std::ios::fixed);
      o.precision(1);
      o << P.time_slicing << " time-sliced replicas of " << P.model.name << " need " << fixed * P.time_slicing
        << " GiB for their weights, runtimes and activations alone; " << P.device.name << " has " << P.capacity.device_gib;
      throw InputError(node.at("time_slicing").where(), node.at("time_slicing").path + ": " + o.str(), ErrorKind::does_not_fit);
    }
  }

  return P;
}

RequestClassSpec build_class(const N& wl, const PoolSpec& pool, double duration_s, Source& src) {
  RequestClassSpec C;
  const N ar = wl.req("arrival");
  ar.allow_keys({"process", "rate_per_s", "cv", "peak_to_mean", "period_s", "peak_at_s", "path", "time_scale",
                 "start_s", "stop_s"});
  C.start_s = ar.has("start_s") ? ar.at("start_s").num_in(0, duration_s, "start_s") : 0.0;
  C.stop_s = ar.has("stop_s") ? ar.at("stop_s").num_in(0, 1e12, "stop_s") : duration_s;
  if (C.stop_s < C.start_s) ar.at("stop_s").fail("stop_s must be >= start_s", ErrorKind::inconsistent);
  const std::string proc = ar.req("process").choice({"poisson", "gamma", "diurnal", "trace"});
  auto only = [&](std::initializer_list<const char*> allowed) {
    for (const char* k : {"rate_per_s", "cv", "peak_to_mean", "period_s", "peak_at_s", "path", "time_scale"}) {
      bool ok = false;
      for (const char* a : allowed) ok = ok || std::string(a) == k;
      if (!ok && ar.has(k)) ar.at(k).fail(std::string("'") + k + "' does not apply to process: " + proc, ErrorKind::inconsistent);
    }
  };
  if (proc == "poisson") {
    only({"rate_per_s"});
    C.arrival = ArrivalKind::poisson;
    C.rate_per_s = ar.req("rate_per_s").pos(1e6);
  } else if (proc == "gamma") {
    only({"rate_per_s", "cv"});
    C.arrival = ArrivalKind::gamma;
    C.rate_per_s = ar.req("rate_per_s").pos(1e6);
    C.cv = ar.req("cv").num_in(0.05, 30, "cv");
  } else if (proc == "diurnal") {
    only({"rate_per_s", "peak_to_mean", "period_s", "peak_at_s"});
    C.arrival = ArrivalKind::diurnal;
    C.rate_per_s = ar.req("rate_per_s").pos(1e6);
    C.peak_to_mean = ar.req("peak_to_mean").num_in(1, 2, "peak_to_mean");
    C.period_s = ar.has("period_s") ? ar.at("period_s").pos(365.0 * 86400) : 86400;
    C.peak_at_s = ar.has("peak_at_s") ? ar.at("peak_at_s").num_in(0, 365.0 * 86400) : 0;
  } else {
    only({"path", "time_scale"});
    C.arrival = ArrivalKind::trace;
    C.trace_path = ar.req("path").str();
    std::string path = C.trace_path;
    if (!std::filesystem::path(path).is_absolute()) path = (std::filesystem::path(src.base_dir) / path).string();
    C.time_scale = ar.has("time_scale") ? ar.at("time_scale").pos(1e6) : 1.0;
    std::ostringstream key;
    key.precision(17);
    key << path << '\n' << C.time_scale;
    {
      std::unique_lock<std::mutex> lock(src.cache->mutex);
      auto it = src.cache->traces.find(key.str());
      if (it != src.cache->traces.end()) C.trace = it->second;
    }
    if (!C.trace) {
      auto t = std::make_shared<TraceData>();
      try {
        *t = load_trace_csv(path);
      } catch (const InputError& e) {
        ar.at("path").fail(e.one_line());
      }
      for (auto& x : t->t_s) x *= C.time_scale;
      std::unique_lock<std::mutex> lock(src.cache->mutex);
      C.trace = src.cache->traces.emplace(key.str(), std::move(t)).first->second;
    }
    if (wl.has("prompt_tokens") || wl.has("output_tokens"))
      (wl.has("prompt_tokens") ? wl.at("prompt_tokens") : wl.at("output_tokens"))
          .fail("a trace supplies its own lengths; remove prompt_tokens/output_tokens", ErrorKind::inconsistent);
    const double span = C.trace->t_s.back() > 0 ? C.trace->t_s.back() : 1.0;
    C.rate_per_s = double(C.trace->t_s.size()) / span;
  }
  const bool generative = pool.model.kind == ModelKind::generate;
  if (C.arrival != ArrivalKind::trace) {
    C.prompt = parse_dist(wl.req("prompt_tokens"), src.base_dir);
    if (generative) {
      C.output = parse_dist(wl.req("output_tokens"), src.base_dir);
    } else {
      if (wl.has("output_tokens"))
        wl.at("output_tokens").fail(std::string("model '") + pool.model.name + "' is a " + model_kind_name(pool.model.kind) +
                                   " model: it generates no tokens, so output_tokens does not apply",
                                   ErrorKind::inconsistent);
      C.output.kind = DistKind::fixed;
      C.output.a = 1;
      C.output.describe = "none";
    }
    C.mean_prompt_tokens = mean_of(C.prompt, pool.model.max_context, src.cache);
    C.mean_output_tokens = generative ? mean_of(C.output, pool.model.max_context, src.cache) : 0;
  } else {
    double sp = 0, so = 0;
    const TraceData& tr = *C.trace;
    for (size_t i = 0; i < tr.prompt.size(); ++i) {
      sp += tr.prompt[i];
      so += tr.output[i];
    }
    C.mean_prompt_tokens = sp / double(tr.prompt.size());
    C.mean_output_tokens = generative ? so / double(tr.output.size()) : 0;
    C.prompt.describe = "from trace";
    C.output.describe = generative ? "from trace" : "none";
  }

  return C;
}

Scenario build(const YAML::Node& root_node, Source& src, const std::vector<Override>& overrides) {
  const N root{root_node, "", &src};
  if (!root_node.IsMap()) root.fail("a scenario must be a YAML mapping (key: value lines)");
  root.allow_keys({"name", "description", "seed", "duration_s", "warmup_s", "device", "partition", "time_slicing", "model", "weight_dtype",
                   "kv_dtype", "engine", "fleet", "workload", "pools", "classes", "catalog", "sweep"});
  Scenario s;
  s.source = src.file;
  for (const auto& o : overrides) s.overrides.push_back(o.label);
  s.name = root.has("name") ? root.at("name").str() : std::filesystem::path(src.file).stem().string();
  if (root.has("description")) s.description = root.at("description").str();
  s.seed = root.has("seed") ? uint64_t(root.at("seed").integer(0, int64_t(1) << 53)) : 1;
  s.duration_s = root.req("duration_s").pos(30.0 * 86400);
  s.warmup_s = root.has("warmup_s") ? root.at("warmup_s").num_in(0, 30.0 * 86400, "warmup_s") : 0.0;
  if (s.warmup_s >= s.duration_s) root.at("warmup_s").fail("warmup_s must be less than duration_s", ErrorKind::inconsistent);

  // catalogs, with the scenario's overrides and additions
  std::vector<DeviceSpec> devices = builtin_devices();
  std::vector<ModelSpec> models = builtin_models();
  if (root.has("catalog")) {
    const N cat = root.at("catalog");
    cat.allow_keys({"devices", "models"});
    // an entry with a built-in's name overrides its fields; a new name adds an entry
    auto merge = [&](const char* key, auto& list, auto parse) {
      if (!cat.has(key)) return;
      const N section = cat.at(key);
      section.require_map();
      for (auto it = section.node.begin(); it != section.node.end(); ++it) {
        const std::string name = it->first.as<std::string>();
        auto* base = static_cast<typename std::decay_t<decltype(list)>::value_type*>(nullptr);
        for (auto& x : list)
          if (x.name == name) base = &x;
        auto parsed = parse(N{it->second, section.path + "." + name, &src}, base, name);
        if (base) *base = parsed; else list.push_back(parsed);
      }
    };
    merge("devices", devices, parse_device);
    merge("models", models, parse_model);
  }

  // pools: the top-level device, model, dtypes, engine and fleet are the defaults of every pool
  static const char* const kPoolKeys[] = {"device", "partition", "time_slicing", "model", "weight_dtype", "kv_dtype",
                                          "engine", "fleet"};
  if (root.has("pools")) {
    const N pools = root.at("pools");
    pools.require_map();
    if (pools.node.size() == 0) pools.fail("no pools (expected e.g. pools: {interactive: {replicas: 2}})");
    if (pools.node.size() > size_t(kMaxPools)) pools.fail("at most " + std::to_string(kMaxPools) + " pools");
    for (auto it = pools.node.begin(); it != pools.node.end(); ++it) {
      const std::string name = it->first.as<std::string>();
      const N en{it->second, "pools." + name, &src};
      en.allow_keys({"device", "partition", "time_slicing", "model", "weight_dtype", "kv_dtype", "engine", "fleet"});
      YAML::Node merged(YAML::NodeType::Map);
      for (const char* k : kPoolKeys) {
        const std::string key = k;
        if (key == "engine" || key == "fleet") {
          if (!root.has(k) && !en.has(k)) continue;
          YAML::Node m(YAML::NodeType::Map);
          for (const N* from : {&root, &en}) {
            if (!from->has(k)) continue;
            from->at(k).require_map();
            for (auto kv = from->node[key].begin(); kv != from->node[key].end(); ++kv) m[kv->first.as<std::string>()] = kv->second;
          }
          merged[key] = m;
        } else if (en.has(k)) {
          merged[key] = it->second[key];
        } else if (root.has(k)) {
          merged[key] = root_node[key];
        }
      }
      PoolSpec P = build_pool(N{merged, "pools." + name, &src}, devices, models, src);
      P.name = name;
      s.pools.push_back(std::move(P));
    }
    s.multi = true;
  } else {
    PoolSpec P = build_pool(root, devices, models, src);
    P.name = "default";
    s.pools.push_back(std::move(P));
  }

  // classes: workload's arrival and lengths are the defaults of every class
  const N wl = root.has("workload") ? root.at("workload") : N{YAML::Node(YAML::NodeType::Map), "workload", &src};
  wl.allow_keys({"arrival", "prompt_tokens", "output_tokens", "checkpointed", "max_retries", "prefix", "response_cache"});
  // caching keys of a class (or of workload, their default)
  auto caching = [&](const N& cn, RequestClassSpec& C) {
    if (cn.has("prefix")) {
      const N px = cn.at("prefix");
      px.allow_keys({"share", "tokens"});
      C.prefix_share = px.req("share").num_in(0, 1, "share");
      C.prefix_tokens = int(px.req("tokens").integer(1, 1 << 20));
    }
    if (cn.has("response_cache")) {
      const N rc = cn.at("response_cache");
      rc.allow_keys({"hit_rate", "latency_s"});
      C.response_cache_hit_rate = rc.req("hit_rate").num_in(0, 1, "hit_rate");
      if (rc.has("latency_s")) C.response_cache_latency_s = rc.at("latency_s").num_in(0, 60);
    }
  };
  if (root.has("classes")) {
    const N classes = root.at("classes");
    classes.require_map();
    if (classes.node.size() == 0) classes.fail("no classes (expected e.g. classes: {chat: {pool: interactive}})");
    if (classes.node.size() > size_t(kMaxClasses)) classes.fail("at most " + std::to_string(kMaxClasses) + " request classes");
    for (auto it = classes.node.begin(); it != classes.node.end(); ++it) {
      const std::string name = it->first.as<std::string>();
      const N en{it->second, "classes." + name, &src};
      en.allow_keys({"pool", "team", "priority", "arrival", "prompt_tokens", "output_tokens", "checkpointed", "max_retries",
                     "prefix", "response_cache"});
      int pool = 0;
      if (en.has("pool")) {
        std::vector<std::string> names;
        for (const auto& P : s.pools) names.push_back(P.name);
        pool = -1;
        const std::string pn = en.at("pool").str();
        for (size_t i = 0; i < names.size(); ++i)
          if (names[i] == pn) pool = int(i);
        if (pool < 0) {
          const std::string sug = did_you_mean(pn, names);
          en.at("pool").fail("unknown pool '" + pn + "'" + (sug.empty() ? "" : " (did you mean '" + sug + "'?)"));
        }
      } else if (s.pools.size() > 1) {
        en.fail("missing required key 'pool' (which pool serves this class?)");
      }
      YAML::Node merged(YAML::NodeType::Map);
      for (const char* k : {"arrival", "prompt_tokens", "output_tokens"}) {
        if (en.has(k)) merged[k] = it->second[k];
        else if (wl.has(k)) merged[k] = wl.node[k];
      }
      RequestClassSpec C = build_class(N{merged, "classes." + name, &src}, s.pools[size_t(pool)], s.duration_s, src);
      C.name = name;
      C.pool = pool;
      C.team = en.has("team") ? en.at("team").str() : name;
      if (en.has("priority")) C.priority = int(en.at("priority").integer(-1000, 1000));
      const N* ck = en.has("checkpointed") ? &en : wl.has("checkpointed") ? &wl : nullptr;
      if (ck) C.checkpointed = ck->at("checkpointed").boolean();
      const N* mr = en.has("max_retries") ? &en : wl.has("max_retries") ? &wl : nullptr;
      if (mr) C.max_retries = int(mr->at("max_retries").integer(0, 1000));
      caching(wl, C);
      caching(en, C);
      s.classes.push_back(std::move(C));
    }
    s.multi = true;
  } else {
    RequestClassSpec C = build_class(root.req("workload"), s.pools[0], s.duration_s, src);
    C.name = "default";
    C.team = "default";
    if (wl.has("checkpointed")) C.checkpointed = wl.at("checkpointed").boolean();
    if (wl.has("max_retries")) C.max_retries = int(wl.at("max_retries").integer(0, 1000));
    caching(wl, C);
    s.classes.push_back(std::move(C));
  }
  // the workspace must stay reasonable (it is per simulation, and sweeps run thousands)
  const SimParams p = s.params();
  const double ws = double(workspace_layout(p).total);
  if (ws > 2.0 * kGiB) {
    root.fail("this fleet needs " + std::to_string(int64_t(ws / (1024 * 1024))) +
            " MiB of simulation state (replicas x (queue_limit + max_num_seqs)); lower queue_limit or replicas");
  }
  return s;
}

Scenario load_from(const std::string& text, Source src, const std::vector<Override>& overrides) {
  src.lines = split_lines(text);
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::ParserException& e) {
    Location l{src.file, e.mark.line + 1, e.mark.column + 1, ""};
    if (e.mark.line >= 0 && size_t(e.mark.line) < src.lines.size()) l.source_line = src.lines[size_t(e.mark.line)];
    throw InputError(l, "malformed YAML: " + e.msg);
  }
  if (!root.IsDefined() || root.IsNull()) throw InputError(Location{src.file, 1, 1, ""}, "empty scenario file");
  if (root.IsMap())
    for (const auto& o : overrides) apply_override(root, o, src);
  try {
    return build(root, src, overrides);
  } catch (const YAML::Exception& e) {
    throw InputError(Location{src.file, e.mark.line + 1, e.mark.column + 1, ""}, e.msg);
  }
}

}  // namespace

double PoolSpec::lora_gib() const {
  if (lora_adapters == 0) return 0.0;
  // A and B matrices of rank r on q, k, v, o and the three MLP projections of every layer, bf16
  const double kv_dim = double(model.kv_heads) * model.head_dim;
  const double per_layer = double(lora_rank) * (2.0 * (model.hidden + model.hidden) + 2.0 * (model.hidden + kv_dim) +
                                                3.0 * (model.hidden + model.intermediate));
  return double(lora_adapters) * per_layer * model.layers * 2.0 / kGiB;
}

PoolParams PoolSpec::params() const {
  PoolParams p{};
  p.max_context = model.max_context;
  p.generative = model.kind == ModelKind::generate ? 1 : 0;
  p.batching = batching;
  p.max_num_seqs = max_num_seqs;
  p.max_batched_tokens = max_batched_tokens;
  p.kv_block_tokens = kv_block_tokens;
  p.kv_total_blocks = capacity.kv_blocks;
  p.kv_watermark_blocks = int64_t(std::floor(kv_watermark * double(capacity.kv_blocks)));
  p.max_batch = max_batch;
  p.batch_window_s = batch_window_s;

  const bool fp8 = weight_dtype == "fp8" && device.fp8_tflops > 0;
  const double peak_flops = (fp8 ? device.fp8_tflops : device.bf16_tflops) * 1e12;
  const double peak_bytes = device.bandwidth_gb_s * 1e9;
  p.perf.kind = perf_model;
  // serving several adapters in one batch (segmented LoRA kernels) stretches every step
  const double lora = lora_adapters > 0 ? 1.0 + lora_step_overhead : 1.0;
  if (perf_model == PerfKind::roofline) {
    p.perf.overhead_s = step_overhead_s * lora;
    p.perf.flops_per_s = peak_flops * mfu / lora;
    p.perf.bytes_per_s = peak_bytes * mbu / lora;
  } else {
    p.perf.overhead_s = step_base_s * lora;
    p.perf.flops_per_s = peak_flops;
    p.perf.bytes_per_s = peak_bytes;
    p.perf.per_prefill_token_s = per_prefill_token_s * lora;
    p.perf.per_decode_seq_s = per_decode_seq_s * lora;
    p.perf.per_context_token_s = per_context_token_s * lora;
  }
  p.work.matmul_flops_per_token = 2.0 * model.params_b * 1e9;
  p.work.attn_flops_per_pair = 4.0 * model.layers * double(model.heads) * model.head_dim;
  p.work.weight_bytes = model.params_b * 1e9 * weight_dtype_bytes(weight_dtype);
  p.work.kv_bytes_per_token = capacity.kv_bytes_per_token;

  p.replicas = replicas;
  p.min_replicas = min_replicas;
  p.max_replicas = max_replicas;
  p.headroom_replicas = headroom_replicas;
  p.autoscale = autoscale;
  p.cold = cold;
  p.crash_on_kv_exhausted = crash_on_kv_exhausted ? 1 : 0;
  p.prefix_caching = prefix_caching ? 1 : 0;
  p.time_slicing = time_slicing;
  const double spot_rate = spot_interruptions_per_hour / 3600.0, hw_rate = mtbf_hours > 0 ? 1.0 / (mtbf_hours * 3600.0) : 0.0;
  p.interruptions_per_s = spot_rate + hw_rate;
  p.spot_share = p.interruptions_per_s > 0 ? spot_rate / p.interruptions_per_s : 0.0;
  p.committed_replicas = committed_replicas;
  p.router = router;
  p.queue_limit = queue_limit;
  p.usd_per_replica_hour = hourly_usd();
  // a time-sliced replica's share of the device, for utilization (the price is shared in hourly_usd)
  p.peak_flops_per_s = peak_flops / time_slicing;
  p.peak_bytes_per_s = peak_bytes / time_slicing;
  p.device_memory_bytes = capacity.device_gib * kGiB;
  p.fixed_memory_bytes = (capacity.weights_gib + capacity.runtime_overhead_gib + capacity.activation_gib) * kGiB;
  return p;
}

ClassParams RequestClassSpec::params() const {
  auto dist = [](const DistSpec& d) {
    DistParams q{};
    q.kind = d.kind;
    q.a = d.a;
    q.b = d.b;
    q.values = d.values.empty() ? nullptr : d.values.data();
    q.cdf = d.cdf.empty() ? nullptr : d.cdf.data();
    q.n = int64_t(d.values.size());
    return q;
  };
  ClassParams c{};
  c.arrivals.kind = arrival;
  c.arrivals.rate_per_s = rate_per_s;
  c.arrivals.gamma_shape = 1.0 / (cv * cv);
  c.arrivals.gamma_scale_s = rate_per_s > 0 ? cv * cv / rate_per_s : 0;
  c.arrivals.diurnal_amplitude = peak_to_mean - 1.0;
  c.arrivals.diurnal_period_s = period_s;
  c.arrivals.diurnal_peak_at_s = peak_at_s;
  c.arrivals.start_s = start_s;
  c.arrivals.stop_s = stop_s;
  c.arrivals.trace_t_s = trace ? trace->t_s.data() : nullptr;
  c.arrivals.trace_prompt = trace ? trace->prompt.data() : nullptr;
  c.arrivals.trace_output = trace ? trace->output.data() : nullptr;
  c.arrivals.trace_n = trace ? int64_t(trace->t_s.size()) : 0;
  c.prompt = dist(prompt);
  c.output = dist(output);
  c.pool = pool;
  c.priority = priority;
  c.checkpointed = checkpointed ? 1 : 0;
  c.max_retries = max_retries;
  c.prefix_share = prefix_share;
  c.prefix_tokens = prefix_tokens;
  c.response_cache_hit_rate = response_cache_hit_rate;
  c.response_cache_latency_s = response_cache_latency_s;
  return c;
}

SimParams Scenario::params() const {
  SimParams p{};
  p.n_pools = int32_t(pools.size());
  p.n_classes = int32_t(classes.size());
  for (size_t i = 0; i < pools.size(); ++i) p.pools[i] = pools[i].params();
  double expected = 0;
  for (size_t i = 0; i < classes.size(); ++i) {
    p.classes[i] = classes[i].params();
    expected += classes[i].arrival == ArrivalKind::trace ? double(classes[i].trace->t_s.size())
                                                         : classes[i].rate_per_s * duration_s * 2.0;
  }
  p.duration_s = duration_s;
  p.warmup_s = warmup_s;
  p.seed = seed;
  // a generous guard: a healthy run needs a handful of events per request
  p.max_events = int64_t(std::min(4.0e12, 200.0 * (expected + 1000.0) + 1.0e7));
  return p;
}

Override parse_set(const std::string& text) {
  const size_t eq = text.find('=');
  const Location origin{"--set " + text, 0, 0, ""};
  if (eq == std::string::npos || eq == 0) throw InputError(origin, "expected PATH=VALUE, e.g. fleet.replicas=4");
  return Override{text.substr(0, eq), text.substr(eq + 1), origin, text};
}

struct ScenarioSource::Impl {
  std::string text, name, base_dir;
  mutable LoadCache cache;
};

ScenarioSource ScenarioSource::from_text(const std::string& text, const std::string& name, const std::string& base_dir) {
  ScenarioSource s;
  s.impl_ = std::make_shared<Impl>();
  s.impl_->text = text;
  s.impl_->name = name;
  s.impl_->base_dir = base_dir.empty() ? "." : base_dir;
  return s;
}

ScenarioSource ScenarioSource::from_file(const std::string& path) {
  if (std::filesystem::is_directory(path))
    throw InputError(Location{path, 0, 0, ""}, "is a directory, not a scenario file");
  std::ifstream f(path);
  if (!f) throw InputError(Location{path, 0, 0, ""}, "cannot open scenario file (does it exist and is it readable?)");
  std::stringstream ss;
  ss << f.rdbuf();
  return from_text(ss.str(), path, std::filesystem::path(path).parent_path().string());
}

ScenarioSource ScenarioSource::builtin_default() {
  return from_text(default_scenario_text(), "<built-in default: scenarios/chat-default.yaml>", ".");
}

ScenarioSource ScenarioSource::with_overrides(std::vector<Override> base) const {
  ScenarioSource s = *this;
  s.base_ = std::move(base);
  return s;
}

Scenario ScenarioSource::instantiate(const std::vector<Override>& overrides) const {
  Source src;
  src.file = impl_->name;
  src.base_dir = impl_->base_dir;
  src.cache = &impl_->cache;
  if (base_.empty()) return load_from(impl_->text, std::move(src), overrides);
  std::vector<Override> all = base_;
  all.insert(all.end(), overrides.begin(), overrides.end());
  return load_from(impl_->text, std::move(src), all);
}

const std::string& ScenarioSource::text() const { return impl_->text; }
const std::string& ScenarioSource::name() const { return impl_->name; }
const std::string& ScenarioSource::base_dir() const { return impl_->base_dir; }

std::vector<Override> parse_sets(const std::vector<std::string>& sets) {
  std::vector<Override> out;
  for (const auto& t : sets) out.push_back(parse_set(t));
  return out;
}

Scenario load_scenario_text(const std::string& text, const std::string& name, const std::string& base_dir,
                            const std::vector<std::string>& overrides) {
  return ScenarioSource::from_text(text, name, base_dir).with_overrides(parse_sets(overrides)).instantiate();
}

Scenario load_scenario_file(const std::string& path, const std::vector<std::string>& overrides) {
  return ScenarioSource::from_file(path).with_overrides(parse_sets(overrides)).instantiate();
}

Scenario load_default_scenario(const std::vector<std::string>& overrides) {
  return ScenarioSource::builtin_default().with_overrides(parse_sets(overrides)).instantiate();
}

}  // namespace fleetsim
