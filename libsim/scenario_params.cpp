// Scenario files: what the specs hand the core (PoolSpec, RequestClassSpec and Scenario::params),
// and a pool's LoRA adapter memory.
#include <algorithm>
#include <cmath>

#include "catalog.hpp"
#include "scenario.hpp"
#include "scenario_internal.hpp"

namespace fleetsim {

using detail::kGiB;

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
  c.arrivals.trace_cached = trace && !trace->cached_prefix.empty() ? trace->cached_prefix.data() : nullptr;
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

}  // namespace fleetsim
