// A benchmark point replayed: the one-pool scenario that runs its load, the trace an open-loop
// run sent (stages, repeated prompts, warm prompts), and fleetsim's prediction of its metrics.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "calibrate/benchmark.hpp"

namespace fleetsim {

namespace {
// The requests an open-loop run sent: as it says, else vllm bench serve's minute of its rate (at
// least 200), or one where every prompt went at once.
int64_t open_loop_requests(const BenchPoint& p) {
  if (p.num_prompts > 0) return p.num_prompts;
  return std::isinf(p.rate_per_s) ? 1 : std::max(200, int(60.0 * p.rate_per_s));
}
}  // namespace

std::string benchmark_scenario_yaml(const BenchPoint& p, const BenchProtocol& proto) {
  const DeviceSpec* dev = nullptr;
  for (const auto& x : builtin_devices())
    if (x.name == p.device) dev = &x;
  // vLLM's server defaults (EngineArgs, asserted by vLLM's tests/engine/test_arg_utils.py,
  // test_defaults_with_usage_context): 1024 sequences and 8192 tokens per step on cards of 70 GiB
  // and more other than the A100, else 256 and 2048
  const bool big = dev && dev->memory_gib >= 70.0 && p.device.rfind("a100", 0) != 0;
  const int seqs = p.max_num_seqs > 0 ? p.max_num_seqs : big ? 1024 : 256;
  const int batched = std::max(p.max_batched_tokens > 0 ? p.max_batched_tokens : big ? 8192 : 2048, seqs);
  std::ostringstream y;
  y << "name: bench\nseed: 7\n";
  const int isl = std::max(1, int(std::lround(p.isl))), osl = std::max(1, int(std::lround(p.osl)));
  std::string arrival;
  double duration = 2.0e6;
  if (p.concurrency > 0) {
    // fewer prompts than the concurrency: every prompt is sent at once, one per client
    const int clients = p.num_prompts > 0 ? std::min(p.num_prompts, p.concurrency) : p.concurrency;
    const int n = p.num_prompts > 0 ? p.num_prompts : p.concurrency * proto.requests_per_client;
    arrival = "{process: concurrency, clients: " + std::to_string(clients) + ", requests: " + std::to_string(n);
    if (proto.client_jitter_s > 0) {
      char b[96];
      std::snprintf(b, sizeof b, ", think_time_s: {dist: exponential, mean: %.9g}", proto.client_jitter_s);
      arrival += b;
    }
    arrival += "}";
  } else if (std::isinf(p.rate_per_s)) {
    arrival = "{process: burst, requests: " + std::to_string(open_loop_requests(p)) + "}";
  } else {
    const int n = int(open_loop_requests(p));
    duration = double(n) / p.rate_per_s;
    char b[128];
    std::snprintf(b, sizeof b, "{process: %s, rate_per_s: %.9g}", p.poisson ? "poisson" : "constant", p.rate_per_s);
    arrival = b;
  }
  char d[64];
  std::snprintf(d, sizeof d, "%.9g", duration);
  y << "duration_s: " << d << "\nwarmup_s: 0\n";
  // devices without peer-to-peer access: the catalog device with a scale-up domain of one, so its
  // collectives take PCIe
  if (!p.peer_to_peer) y << "catalog:\n  devices:\n    " << p.device << ": {link_domain: 1}\n";
  y << "device: " << p.device << "\nmodel: " << p.model << "\nweight_dtype: " << p.weight_dtype << "\n";
  if (!p.expert_weight_dtype.empty()) y << "expert_weight_dtype: " << p.expert_weight_dtype << "\n";
  if (p.engine == "sglang" || p.engine == "trtllm") {
    // run as that engine, with its own defaults where the source does not say (docs/model.md, "Engines")
    y << "engine:\n  kind: " << p.engine << "\n";
    if (p.max_num_seqs > 0) y << "  max_num_seqs: " << p.max_num_seqs << "\n";
    if (p.max_batched_tokens > 0) y << "  max_batched_tokens: " << p.max_batched_tokens << "\n";
    if (p.gpu_memory_utilization > 0)
      y << "  " << (p.engine == "sglang" ? "mem_fraction_static" : "free_gpu_memory_fraction") << ": "
        << p.gpu_memory_utilization << "\n";
    y << "  async_scheduling: false\n";
  } else {
    y << "engine:\n  max_num_seqs: " << seqs << "\n  max_batched_tokens: " << batched
      << "\n  gpu_memory_utilization: " << (p.gpu_memory_utilization > 0 ? p.gpu_memory_utilization : 0.9)
      << "\n  async_scheduling: " << (p.async_scheduling ? "true" : "false") << "\n";
  }
  if (p.tp > 1) y << "  tensor_parallel: " << p.tp << "\n";
  if (p.pp > 1) y << "  pipeline_parallel: " << p.pp << "\n";
  if (p.network_gb_s > 0) y << "  network_gb_s: " << p.network_gb_s << "\n";
  y << "  perf_profile: none\n";
  y << "fleet:\n  replicas: 1\n  queue_limit: 1000000\n";
  y << "workload:\n  arrival: " << arrival << "\n  prompt_tokens: " << isl << "\n  output_tokens: " << osl << "\n";
  return y.str();
}

namespace {

// A uniform double in (0, 1) from a 64-bit counter: splitmix64, so the arrival times of a replayed
// benchmark are the same on every platform (std::exponential_distribution is not).
double unit_open(uint64_t i) {
  uint64_t z = i * 0x9E3779B97F4A7C15ull + 0x632BE59BD9B4E019ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return (double(z >> 11) + 0.5) / 9007199254740992.0;
}

// Seconds between one load stage's last arrival and the next stage's first: the client starts a
// stage once every request of the last has finished, and no request of the replayed runs takes
// this long (tests/validation/README.md).
constexpr double kStageGapS = 60.0;

// An open-loop benchmark, as the trace it sent: its requests in order (each request's own
// lengths where the data give them, else isl / osl), the first at 0 and the rest at the
// client's gaps (exponential for Poisson, as vllm bench serve draws them at burstiness 1; even
// for a constant rate; none for every prompt at once), stage after stage. Prompts a server's
// prefix cache holds have their full KV blocks (16 tokens, vLLM's default) cached, the last
// token always computed: warm prompts, and prompts that repeat (distinct_prompts).
std::shared_ptr<TraceData> replay_trace(const BenchPoint& p) {
  auto t = std::make_shared<TraceData>();
  std::vector<std::pair<double, int64_t>> stages;  // rate, requests
  if (p.stages.empty())
    stages.emplace_back(p.rate_per_s, p.req_prompt.empty() ? open_loop_requests(p) : int64_t(p.req_prompt.size()));
  else
    for (const auto& [r, d] : p.stages) stages.emplace_back(r, int64_t(std::llround(r * d)));
  size_t n = 0;
  for (const auto& s : stages) n += size_t(s.second);
  if (p.req_prompt.empty()) {
    t->prompt.assign(n, std::max(1, int(std::lround(p.isl))));
    t->output.assign(n, std::max(1, int(std::lround(p.osl))));
  } else {
    t->prompt = p.req_prompt;
    t->output = p.req_output;
  }
  t->t_s.resize(n);
  double at = 0;
  size_t i = 0;
  for (size_t k = 0; k < stages.size(); ++k) {
    if (k > 0) at = t->t_s[i - 1] + kStageGapS;
    const double rate = stages[k].first;
    for (int64_t j = 0; j < stages[k].second; ++j, ++i) {
      t->t_s[i] = at;
      if (std::isinf(rate)) continue;
      at += p.poisson ? -std::log(unit_open(i)) / rate : 1.0 / rate;
    }
  }
  if (p.warm_prompts > 0 || p.distinct_prompts > 0) {
    constexpr int32_t kBlock = 16;
    t->cached_prefix.assign(n, 0);
    // the client's one shuffle of its distinct prompts (Fisher-Yates, from a fixed counter)
    const int distinct = std::max(0, p.distinct_prompts);
    std::vector<int> order(static_cast<size_t>(distinct));
    for (int q = 0; q < distinct; ++q) order[size_t(q)] = q;
    for (int q = distinct - 1; q > 0; --q)
      std::swap(order[size_t(q)], order[size_t(unit_open((uint64_t(1) << 62) + uint64_t(q)) * (q + 1))]);
    std::vector<char> seen(size_t(distinct), 0), group_seen(size_t(std::max(1, p.prompt_groups)), 0);
    const int32_t system_blocks = p.system_prompt_tokens / kBlock * kBlock;
    double cached = 0, prompt = 0;
    i = 0;
    for (const auto& st : stages)
      for (int64_t j = 0; j < st.second; ++j, ++i) {
        const int32_t full = (t->prompt[i] - 1) / kBlock * kBlock;
        int32_t c = int(i) < p.warm_prompts ? full : 0;
        if (distinct > 0) {
          const int q = order[size_t(j % distinct)];
          const size_t g = p.prompt_groups > 0 ? size_t(q / (distinct / p.prompt_groups)) : 0;
          if (seen[size_t(q)])
            c = full;
          else if (p.prompt_groups > 0 && group_seen[g])
            c = std::max(c, std::min(full, system_blocks));
          seen[size_t(q)] = group_seen[g] = 1;
        }
        t->cached_prefix[i] = c;
        cached += c;
        prompt += t->prompt[i];
      }
    t->prefix_hit_share = prompt > 0 ? cached / prompt : 0;
  }
  t->layout = "benchmark replay";
  t->rows = int64_t(n);
  return t;
}

}  // namespace

PreparedPoint prepare_point(const BenchPoint& p, const BenchProtocol& proto) {
  PreparedPoint pp;
  pp.point = &p;
  pp.scenario = load_scenario_text(benchmark_scenario_yaml(p, proto), p.where, "");
  // Closed-loop clients draw from the mean lengths: which prompt a client sends next depends on
  // when its last one finished, which the data do not record.
  if ((!p.req_prompt.empty() || !p.stages.empty() || p.distinct_prompts > 0 || p.warm_prompts > 0) &&
      p.concurrency <= 0) {
    RequestClassSpec& c = pp.scenario.classes[0];
    c.trace = replay_trace(p);
    c.arrival = ArrivalKind::trace;
    c.trace_path = p.where + (p.req_prompt.empty() ? " (replayed arrivals)" : " (request lengths)");
    c.mean_prompt_tokens = mean_length(c.trace->prompt);
    c.mean_output_tokens = mean_length(c.trace->output);
    c.prompt.describe = c.output.describe = "from trace";
    const double last = c.trace->t_s.back();
    c.rate_per_s = double(c.trace->t_s.size()) / (last > 0 ? last : 1.0);
    c.stop_s = pp.scenario.duration_s = last + 1.0;
  }
  return pp;
}

void mark_unsimulatable(std::vector<BenchPoint>& points, const BenchProtocol& proto) {
  for (auto& p : points) {
    if (!p.skip.empty()) continue;
    try {
      prepare_point(p, proto);
    } catch (const InputError& e) {
      p.skip = e.what();
    }
  }
}

Prediction predict_point(const PreparedPoint& pp, const PerfCoefficients* c, HostWorkspace& ws, int replications) {
  Scenario s = pp.scenario;
  if (c) {
    auto prof = std::make_shared<PerfProfile>();
    prof->name = "fit";
    prof->device = s.pools[0].device.name;
    prof->c = *c;
    s.pools[0].profile = prof;
    s.pools[0].perf_model = PerfKind::calibrated;
    s.pools[0].client_ttft_s = c->client_ttft_s;
    s.pools[0].client_s_per_input_token = c->client_s_per_input_token;
    s.pools[0].client_s_per_output_token = c->client_s_per_output_token;
  }
  Prediction out;
  for (double& v : out.v) v = 0;
  // Closed-loop clients all send at t = 0, as a benchmark with a fixed concurrency starts; with
  // fixed lengths they then stay in step. Spreading the first sends over one request's duration
  // (workload.arrival.ramp_s) fitted the published runs worse (docs/validation.md).
  const SimParams params = s.params();
  Histogram ttft;
  hist_clear(ttft);
  double n = 0, sum_ttft = 0, sum_tpot = 0, n_tpot = 0, sum_e2e = 0;
  for (int r = 0; r < replications; ++r) {
    const auto t = simulate_once(params, uint32_t(r), ws);
    if (t->status != 0 || t->unfinished != 0) out.ok = false;
    const ClassTally& ct = t->classes[0];
    hist_merge(ttft, ct.ttft);
    n += double(ct.ttft.n);
    sum_ttft += ct.ttft.sum;
    sum_e2e += ct.e2e.sum;
    sum_tpot += ct.tpot.sum;
    n_tpot += double(ct.tpot.n);
  }
  if (n <= 0) {
    out.ok = false;
    return out;
  }
  out.v[kMeanTtft] = sum_ttft / n;
  out.v[kMeanE2e] = sum_e2e / n;
  out.v[kMeanTpot] = n_tpot > 0 ? sum_tpot / n_tpot : 0.0;
  out.v[kP99Ttft] = hist_quantile(ttft, 0.99);
  return out;
}

double relative_error(double predicted, double measured) {
  if (!std::isfinite(predicted) || !std::isfinite(measured) || measured <= 0) return std::nan("");
  return std::fabs(predicted - measured) / measured;
}

}  // namespace fleetsim
