// Scenario files: what the specs hand the core (PoolSpec, RequestClassSpec and Scenario::params),
// and a pool's LoRA adapter memory.
#include <algorithm>
#include <cmath>

#include "catalog/catalog.hpp"
#include "input/scenario.hpp"
#include "input/scenario_internal.hpp"

namespace fleetsim {

using detail::kGiB;

double PoolSpec::device_context_gib() const {
  return time_slicing > 1 ? time_slicing * cuda_context_gib : mps_clients > 1 ? cuda_context_gib : 0.0;
}

double PoolSpec::lora_gib_per_device() const {
  if (lora_adapters == 0) return 0.0;
  // A and B matrices of rank r on q, k, v, o and the three MLP projections of every layer, bf16;
  // in a mixture-of-experts layer, on every expert's three (vLLM's FusedMoEWithLoRA holds an A and
  // B per expert: vllm/lora/layers/fused_moe.py). Over tensor-parallel ranks as vLLM shards them
  // by default (not fully_sharded_loras; vllm/lora/layers/base_linear.py): a column-parallel
  // projection's A (rank x its whole input) and a row-parallel one's B (its whole output x rank)
  // on every rank, the other matrix split; KV heads replicated where tp exceeds them, as the
  // weights' are. Experts split whole over expert or data-parallel ranks hold theirs whole. A
  // device holds its pipeline stage's layers, the busiest stage ceil(layers / pp) of them.
  const double t = double(tp), h = double(model.hidden), hd = double(model.head_dim);
  const double q_dim = double(model.heads) * hd;
  const double kv_rank = (model.kv_heads >= tp ? double(model.kv_heads) / t : 1.0) * hd;
  const double attention = 4.0 * h + 2.0 * q_dim / t + 2.0 * kv_rank;                    // q, k, v, o
  auto mlp = [&](double inter, double ranks) { return 3.0 * h + 3.0 * inter / ranks; };  // gate, up, down
  double per_model = 0.0;  // parameters on one device over every layer
  if (!model.moe()) {
    per_model = (attention + mlp(model.intermediate, t)) * model.layers;
  } else {
    const double moe = model.moe_layers(), dense = model.layers - moe;
    const bool whole =
        ep > 1 || dp > 1;  // experts split whole over tp x dp ranks: the busiest holds the remainder's one
    const double routed = whole ? std::ceil(double(model.experts) / (t * dp)) * mlp(model.expert_intermediate, 1.0)
                                : double(model.experts) * mlp(model.expert_intermediate, t);
    per_model = (attention + mlp(model.intermediate, t)) * dense +
                (attention + model.shared_experts * mlp(model.expert_intermediate, t) + routed) * moe;
  }
  const double stage = double((model.layers + pp - 1) / pp) / model.layers;
  return double(lora_rank) * per_model * stage * double(lora_adapters) * 2.0 / kGiB;
}

// Work of one tensor-parallel rank (summed over the pipeline stages), the collectives of a
// traversal, and what a step reads of an MoE model's experts (docs/model.md, "Parallelism").
void PoolSpec::set_parallel_work(PoolParams& p) const {
  const ModelSpec& m = model;
  const double wb = weight_dtype_bytes(weight_dtype);
  const double eb = expert_weight_dtype.empty() ? wb : weight_dtype_bytes(expert_weight_dtype);
  const double kvb = kv_dtype_bytes(kv_dtype);
  WorkParams& w = p.work;
  // whole experts over tp x dp devices: the busiest holds, reads and computes the remainder's one more
  const double imbalance = expert_imbalance(m, ep > 1 || dp > 1 ? tp * dp : 1);
  const double active_routed =
      m.moe() ? m.routed_expert_params() * double(m.experts_per_token) / double(m.experts) : 0.0;
  w.matmul_flops_per_token = 2.0 * (m.active_params() + active_routed * (imbalance - 1.0)) / tp;
  const double heads = double(m.heads) / tp;
  w.attn_flops_per_pair = m.mla() ? m.full_attention_layers() * heads * (4.0 * m.kv_lora_rank + 2.0 * m.rope_head_dim)
                                  : 4.0 * m.full_attention_layers() * heads * m.head_dim;
  // MLA prefills as vLLM's "compute friendly" path does (vllm/v1/attention/backends/mla/common.py):
  // queries and keys of head_dim + rope_head_dim, values of head_dim, and the context's latent
  // cache up-projected to keys and values (kv_lora_rank x 2 head_dim per head) once per step
  w.prefill_attn_flops_per_pair =
      m.mla() ? m.full_attention_layers() * heads * (4.0 * m.head_dim + 2.0 * m.rope_head_dim) : w.attn_flops_per_pair;
  w.context_upproj_flops_per_token =
      m.mla() ? m.full_attention_layers() * heads * 2.0 * m.kv_lora_rank * 2.0 * m.head_dim : 0.0;
  w.window_flops_per_token = 4.0 * m.sliding_layers * heads * m.head_dim * m.sliding_window;
  w.window_bytes_per_seq = window_kv_bytes_per_seq_per_device(m, kvb, tp, 1);
  w.kv_bytes_per_token = kv_bytes_per_token_per_device(m, kvb, tp, 1);
  const double routed = m.moe() && m.experts_per_token < m.experts ? m.routed_expert_params() : 0.0;
  w.weight_bytes = (weight_bytes(m, wb, eb) - routed * eb) / tp;
  // with data-parallel attention a device holds 1/dp of the rank's share of the experts, and they
  // serve the tokens of all dp ranks: dp times this rank's, the ranks balanced by the router
  p.moe.expert_bytes = routed * eb / (double(tp) * dp) * imbalance;
  p.moe.miss_log = routed > 0 ? dp * std::log(1.0 - double(m.experts_per_token) / m.experts) : 0.0;
  p.extended_steps = 1;

  // the link a group of g devices talks over, each device to `peers` others at once: the scale-up
  // link within its domain (on a mesh, the links to those peers), PCIe within a node, the network
  // beyond
  auto link = [&](int g, int peers, double& gb_s, double& latency_us) {
    if (g <= device.link_domain) {
      gb_s = device.link_gb_s_to(peers);
      latency_us = device.link_latency_us;
    } else if (g <= device.devices_per_node) {
      gb_s = device.pcie_gb_s;
      latency_us = 25.0;
    } else {
      gb_s = network_gb_s;
      latency_us = network_latency_us;
    }
  };
  constexpr double act_bytes = 2.0;  // bf16 activations
  ParallelParams& c = p.par;
  double gb_s = 0, lat_us = 0;
  if (tp > 1) {
    link(tp, tp - 1, gb_s, lat_us);
    c.allreduces = 2.0 * m.layers - (dp > 1 ? double(m.moe_layers()) : 0.0);
    c.allreduce_latency_s = lat_us * 1e-6;
    c.allreduce_s_per_token = 2.0 * (tp - 1) / tp * m.hidden * act_bytes / (gb_s * 1e9);
  }
  // expert parallelism across data-parallel ranks, over the e = ep x dp devices that hold the
  // experts: each token's routed activations leave its rank's tp devices for the (e - 1) / e of
  // experts elsewhere, dispatch and combine. Within one tensor-parallel group (dp 1) every rank
  // already holds every token: it runs its own experts on them and the MoE layer all-reduces as
  // without expert parallelism (vLLM's all-to-all kernels need dp > 1: `use_all2all_kernels`,
  // vllm/model_executor/layers/fused_moe/config.py)
  const int e = ep * dp;
  if (dp > 1 && e > 1) {
    link(e, e - 1, gb_s, lat_us);
    c.all_to_alls = 2.0 * m.moe_layers();
    c.all_to_all_latency_s = lat_us * 1e-6;
    c.all_to_all_s_per_token =
        double(m.experts_per_token) * m.hidden * act_bytes * (e - 1) / (double(e) * tp) / (gb_s * 1e9);
  }
  if (pp > 1) {
    link(tp * pp, 1, gb_s, lat_us);  // a stage's device hands to its counterpart in the next
    c.handoffs = pp - 1;
    c.handoff_latency_s = lat_us * 1e-6;
    c.handoff_s_per_token = m.hidden * act_bytes / (gb_s * 1e9);
  }
}

PoolParams PoolSpec::params() const {
  PoolParams p{};
  p.max_context = model.max_context;
  p.generative = model.kind == ModelKind::generate ? 1 : 0;
  p.batching = batching;
  // a shared queue hands work to the first replica at a step boundary: its offers are not gated
  p.async_admit = async_scheduling && batching == Batching::continuous && router != Router::central_queue ? 1 : 0;
  p.max_num_seqs = max_num_seqs;
  p.max_batched_tokens = max_batched_tokens;
  p.kv_block_tokens = kv_block_tokens;
  p.kv_total_blocks = capacity.kv_blocks;
  p.kv_watermark_blocks = int64_t(std::floor(kv_watermark * double(capacity.kv_blocks)));
  p.max_batch = max_batch;
  p.batch_window_s = batch_window_s;

  // the matrix units the weights run on: FP8 or FP4 where the device has them (for an MoE model
  // with its own expert dtype, the experts' dtype: they do most of the work); else BF16
  const std::string& mm_dtype = model.moe() && !expert_weight_dtype.empty() ? expert_weight_dtype : weight_dtype;
  const bool fp8 = mm_dtype == "fp8" && device.fp8_tflops > 0;
  const bool fp4 = (mm_dtype == "nvfp4" || mm_dtype == "mxfp4") && device.fp4_tflops > 0;
  const double peak_flops = (fp4 ? device.fp4_tflops : fp8 ? device.fp8_tflops : device.bf16_tflops) * 1e12;
  const double peak_bytes = device.bandwidth_gb_s * 1e9;
  p.perf.kind = perf_model;
  // serving several adapters in one batch (segmented LoRA kernels) stretches every step
  const double lora = lora_adapters > 0 ? 1.0 + lora_step_overhead : 1.0;
  if (perf_model == PerfKind::roofline) {
    p.perf.overhead_s = step_overhead_s * lora;
    p.perf.flops_per_s = peak_flops * mfu / lora;
    p.perf.bytes_per_s = peak_bytes * mbu / lora;
  } else if (perf_model == PerfKind::calibrated) {
    StepFacts f;
    f.peak_flops_per_s = peak_flops;
    f.bf16_flops_per_s = device.bf16_tflops * 1e12;
    f.peak_bytes_per_s = peak_bytes;
    f.enforce_eager = enforce_eager;
    f.async_scheduling = async_scheduling;
    f.layers = model.layers;
    f.ranks = devices();
    const double routed = model.routed_expert_params();
    const double active_routed = model.moe() ? routed * double(model.experts_per_token) / double(model.experts) : 0.0;
    f.dense_flops_per_token = 2.0 * (model.active_params() - active_routed) / tp;
    const double imbalance = expert_imbalance(model, ep > 1 || dp > 1 ? tp * dp : 1);
    f.expert_flops_per_token = 2.0 * active_routed / tp * imbalance;
    f.all_expert_flops = 2.0 * routed / (double(tp) * dp) * imbalance;  // each of its experts a GEMM
    apply_profile(profile->c, f, p.perf);
    p.perf.overhead_s *= lora;
    p.perf.per_seq_s *= lora;
    p.perf.weight_s_per_byte *= lora;
    p.perf.matmul_s_per_flop *= lora;
    p.perf.kv_s_per_byte *= lora;
    p.perf.attn_s_per_flop *= lora;
  } else {
    p.perf.overhead_s = step_base_s * lora;
    p.perf.flops_per_s = peak_flops;
    p.perf.bytes_per_s = peak_bytes;
    p.perf.per_prefill_token_s = per_prefill_token_s * lora;
    p.perf.per_decode_seq_s = per_decode_seq_s * lora;
    p.perf.per_context_token_s = per_context_token_s * lora;
  }
  // an MPS client capped to a share of the SMs computes at that share of the device, alone or not
  // (docs/model.md, "Sharing a device"); its memory traffic is not capped
  const double sm = mps_active_thread_percentage / 100.0;
  if (sm < 1.0) {
    p.perf.flops_per_s *= sm;
    p.perf.matmul_s_per_flop /= sm;
    p.perf.attn_s_per_flop /= sm;
    p.perf.per_prefill_token_s /= sm;
  }
  p.perf.client_ttft_s = engine_side ? 0.0 : client_ttft_s;
  p.perf.client_s_per_input_token = engine_side ? 0.0 : client_s_per_input_token;
  p.perf.client_s_per_output_token = engine_side ? 0.0 : client_s_per_output_token;
  p.work.matmul_flops_per_token = 2.0 * model.params_b * 1e9;
  p.work.attn_flops_per_pair = 4.0 * model.layers * double(model.heads) * model.head_dim;
  p.work.prefill_attn_flops_per_pair = p.work.attn_flops_per_pair;
  p.work.context_upproj_flops_per_token = 0.0;
  p.work.weight_bytes = model.params_b * 1e9 * weight_dtype_bytes(weight_dtype);
  p.work.kv_bytes_per_token = capacity.kv_bytes_per_token;
  p.par.tp = tp;
  p.par.pp = pp;
  p.par.ep = ep;
  // a sequence's window blocks: the target's sliding-window layers, and a draft's (which a plain
  // target's step does not otherwise see)
  p.window_blocks = capacity.window_blocks_per_seq;
  if (devices() > 1 || dp > 1 || model.moe() || model.mla() || model.sliding_layers > 0) set_parallel_work(p);

  p.replicas = replicas;
  p.min_replicas = min_replicas;
  p.max_replicas = max_replicas;
  p.lo_index = router == Router::least_outstanding && max_replicas >= kLoIndexReplicas ? 1 : 0;
  p.headroom_replicas = headroom_replicas;
  p.autoscale = autoscale;
  p.cold = cold;
  p.crash_on_kv_exhausted = crash_on_kv_exhausted ? 1 : 0;
  p.prefix_caching = prefix_caching ? 1 : 0;
  p.cache_entries = p.cache_table = p.cache_block_kv = p.cpu_entries = p.cpu_table = 0;
  p.cpu_load_s_per_token = 0.0;
  p.remote_entries = p.remote_table = 0;
  p.remote_load_s_per_token = p.remote_latency_s = 0.0;
  if (cache_per_replica && cache_block_tokens > 0) {
    // each trace block takes its whole KV blocks; at most what the KV cache holds, or max_tokens
    p.cache_block_kv = int32_t((cache_block_tokens + kv_block_tokens - 1) / kv_block_tokens);
    int64_t entries = capacity.kv_blocks / p.cache_block_kv;
    if (cache_max_tokens > 0) entries = std::min<int64_t>(entries, cache_max_tokens / cache_block_tokens);
    p.cache_entries = int32_t(std::max<int64_t>(entries, 1));
    // a tier's lookup table: a power of two, at least twice its entries
    auto table_for = [](int32_t entries) {
      int32_t t = 2;
      while (t < 2 * entries) t *= 2;
      return t;
    };
    p.cache_table = table_for(p.cache_entries);
    // the tiers behind the device keep the whole replica's KV of a block (every device's share)
    const double token_bytes = kv_bytes_per_token_per_device(model, kv_dtype_bytes(kv_dtype), tp, pp) * devices();
    auto entries_in = [&](double gib) {
      return int32_t(std::max(1.0, std::floor(gib * kGiB / (token_bytes * cache_block_tokens))));
    };
    if (cache_cpu_gib > 0) {
      // each device loads its share over its own PCIe link
      p.cpu_entries = entries_in(cache_cpu_gib);
      p.cpu_table = table_for(p.cpu_entries);
      p.cpu_load_s_per_token = token_bytes / (device.pcie_gb_s * 1e9 * devices());
    }
    if (cache_remote_gib > 0) {
      // over the replica's link to the store
      p.remote_entries = entries_in(cache_remote_gib);
      p.remote_table = table_for(p.remote_entries);
      p.remote_load_s_per_token = token_bytes / (cache_remote_gb_s * 1e9);
      p.remote_latency_s = cache_remote_latency_us * 1e-6;
    }
  }
  p.spec = SpecParams{};
  if (spec_tokens > 0) {
    // per tensor-parallel rank, summed over the pipeline stages, as the target's work
    p.spec.k = spec_tokens;
    p.spec.tokens_per_step = spec_tokens_per_step;
    // heads sharing the target's LM head read it every draft step (unquantized, as the target holds it)
    const double bpp = weight_dtype_bytes(weight_dtype);
    p.spec.draft_weight_bytes =
        (spec_draft.params_b * 1e9 * bpp + spec_shared_head_params * (bpp < 2.0 ? 2.0 : bpp)) / tp;
    p.spec.draft_flops_per_token = 2.0 * (spec_draft.params_b * 1e9 + spec_shared_head_params) / tp;
    p.spec.draft_kv_bytes_per_token = kv_bytes_per_token_per_device(spec_draft, kv_dtype_bytes(kv_dtype), tp, 1);
    p.spec.draft_window_bytes_per_seq = window_kv_bytes_per_seq_per_device(spec_draft, kv_dtype_bytes(kv_dtype), tp, 1);
    if (tp > 1) {  // the draft's layers all-reduce as the target's do, over the same link
      p.spec.draft_allreduces = 2.0 * spec_draft.layers;
      p.spec.draft_allreduce_s_per_token = p.par.allreduce_s_per_token * spec_draft.hidden / model.hidden;
    }
  }
  if (decode_pool >= 0) {
    p.disagg = 1;
    p.decode_pool = decode_pool;
    p.handoff_bytes_per_token = kv_bytes_per_token;
    p.handoff_s_per_token = kv_bytes_per_token / (double(kv_link_lanes) * kv_link_gb_s * 1e9);
    p.handoff_latency_s = kv_link_latency_us * 1e-6;
    p.handoff_window_tokens = model.sliding_layers > 0 ? model.sliding_window : 0;
    p.handoff_window_bytes_per_token = kv_window_bytes_per_token;
    p.handoff_window_s_per_token = kv_window_bytes_per_token / (double(kv_link_lanes) * kv_link_gb_s * 1e9);
  }
  p.time_slicing = time_slicing;
  p.mps_clients = mps_clients;
  p.mps_thread_share = sm;
  p.server_context_bytes = mps_clients > 1 && time_slicing <= 1 ? cuda_context_gib * kGiB : 0.0;
  p.tenant_context_bytes = time_slicing > 1 ? cuda_context_gib * kGiB : 0.0;
  // a reclaim takes the instance a replica runs on; a hardware failure is any one of its devices'
  const double spot_rate = spot_interruptions_per_hour / 3600.0,
               hw_rate = mtbf_hours > 0 ? double(devices()) / (mtbf_hours * 3600.0) : 0.0;
  // per replica, or per device in use where replicas share one (time-sliced, MPS clients, MIG
  // slices): a lost device takes every replica on it at once (loss_units)
  p.device_tenants = replicas_per_device;
  p.interruptions_per_s = spot_rate + hw_rate;
  p.spot_per_s = spot_rate;
  p.committed_replicas = committed_replicas;
  p.repair_s = ownership.owned() ? ownership.repair_days * 86400.0 : 0.0;
  if (nodes_tracked()) {
    p.replicas_per_node = replicas_per_node();
    p.nodes_per_group = nodes_per_replica();
    p.max_node_groups = max_nodes / p.nodes_per_group;  // max_nodes >= nodes_per_group (scenario_pool.cpp)
    p.pinned_nodes = pinned_nodes;
    p.node_unneeded_s = node_unneeded_s;
    p.empty_nodes_first = empty_nodes_first ? 1 : 0;
  }
  p.spares = ownership.owned() ? ownership.spares : 0;
  p.owned_replicas = ownership.owned() ? ownership.replicas : 0;
  p.fallback_share = fallback_share;
  p.fallback_slowdown = fallback_share > 0 ? fallback_slowdown : 1.0;
  p.fallback_at_s = fallback_at_s;
  p.thermal_tau_s = thermal_tau_s;
  p.thermal_above = thermal_above;
  p.thermal_factor = thermal_tau_s > 0 ? 1.0 / (1.0 - thermal_clock_drop) : 1.0;
  p.router = router;
  p.queue_limit = queue_limit;
  p.usd_per_replica_hour = hourly_usd();
  // a time-sliced replica's or MPS client's share of the device, for utilization (the price is
  // shared in hourly_usd); work is per tensor-parallel rank summed over the pipeline stages
  p.peak_flops_per_s = peak_flops * pp / shared_by();
  p.peak_bytes_per_s = peak_bytes * pp / shared_by();
  p.device_memory_bytes = capacity.device_gib * kGiB;
  p.host = host;
  p.host.post = host.cores > 0 && host.detokenize_s_per_token > 0 ? 1 : 0;
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
  const bool blocks = trace && !trace->block_off.empty();
  c.arrivals.trace_blocks = blocks && !trace->blocks.empty() ? trace->blocks.data() : nullptr;
  c.arrivals.trace_block_off = blocks ? trace->block_off.data() : nullptr;
  c.arrivals.trace_block_tokens = blocks ? trace->block_tokens : 0;
  c.arrivals.trace_n = trace ? int64_t(trace->t_s.size()) : 0;
  const bool linked = trace && trace_sessions;
  c.arrivals.trace_parent = linked ? trace->parent.data() : nullptr;
  c.arrivals.trace_child = linked ? trace->child.data() : nullptr;
  c.arrivals.trace_follow_ups = linked ? trace->follow_ups : 0;
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
  c.arrivals.clients = clients;
  c.arrivals.max_requests = max_requests;
  c.arrivals.ramp_s = ramp_s;
  c.think = dist(think);
  c.sessions = sessions ? 1 : 0;
  c.turns = dist(turns);
  c.retry_after_s = retry_after_s;
  c.good_ttft_s = good_ttft_s;
  c.good_tpot_s = good_tpot_s;
  c.good_e2e_s = good_e2e_s;
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
    // the trace's block ids only where its pool caches them per replica (else they stay on the host)
    if (!pools[size_t(classes[i].pool)].cache_per_replica) {
      p.classes[i].arrivals.trace_blocks = nullptr;
      p.classes[i].arrivals.trace_block_off = nullptr;
      p.classes[i].arrivals.trace_block_tokens = 0;
    }
    expected += classes[i].arrival == ArrivalKind::trace ? double(classes[i].trace->t_s.size())
                                                         : classes[i].rate_per_s * duration_s * 2.0;
    // closed loop: each user at most one request per think time (or per millisecond without one)
    if (classes[i].arrival == ArrivalKind::burst) expected += classes[i].clients;
    if (classes[i].arrival == ArrivalKind::concurrency)
      expected += classes[i].max_requests > 0
                      ? double(classes[i].max_requests)
                      : classes[i].clients * duration_s / std::max(classes[i].think_mean_s, 1e-3);
  }
  // an autoscaler's evaluations are events too, however little traffic there is
  for (const PoolSpec& P : pools)
    if (P.autoscale.enabled) expected += duration_s / P.autoscale.interval_s;
  p.duration_s = duration_s;
  p.warmup_s = warmup_s;
  p.seed = seed;
  // a generous guard: a healthy run needs a handful of events per request
  p.max_events = int64_t(std::min(4.0e12, 200.0 * (expected + 1000.0) + 1.0e7));
  return p;
}

}  // namespace fleetsim
