#include "capacity.hpp"

#include <cmath>

namespace fleetsim {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

double activation_peak_bytes(const ModelSpec& m, int max_batched_tokens, int max_num_seqs, int tp) {
  // bf16 activations of the widest layer (gate + up + activated MLP, and 4 hidden-size
  // buffers: residual, norm output, attention output, QKV) for every batched token, plus fp32
  // logits and their softmax for each sequence a step samples from. Tensor parallelism splits the
  // MLP; an MoE layer's MLP is its experts per token (and shared experts) side by side.
  double inter = m.intermediate;
  if (m.moe()) {
    const double moe_inter = double(m.experts_per_token + m.shared_experts) * m.expert_intermediate;
    inter = m.dense_layers > 0 && m.intermediate > moe_inter ? m.intermediate : moe_inter;
  }
  const double per_token = 2.0 * (3.0 * (tp > 1 ? inter / tp : inter) + 4.0 * m.hidden);
  const double logits = m.kind == ModelKind::generate ? 8.0 * double(max_num_seqs) * m.vocab : 0.0;
  return double(max_batched_tokens) * per_token + logits;
}

double weight_bytes(const ModelSpec& m, double bytes_per_param, double expert_bytes_per_param) {
  if (!m.moe() || expert_bytes_per_param < 0) return m.params_b * 1e9 * bytes_per_param;
  const double routed = m.routed_expert_params();
  return (m.params_b * 1e9 - routed) * bytes_per_param + routed * expert_bytes_per_param;
}

Capacity compute_capacity(const MemoryInputs& in) {
  Capacity c;
  const int tp = in.tp < 1 ? 1 : in.tp, pp = in.pp < 1 ? 1 : in.pp;
  c.devices = tp * pp;
  c.device_gib = in.device.memory_gib * in.memory_fraction;
  c.usable_gib = c.device_gib * in.gpu_memory_utilization;
  c.weights_gib = weight_bytes(in.model, in.weight_bytes_per_param, in.expert_weight_bytes_per_param) / kGiB;
  if (c.devices > 1) c.weights_gib /= c.devices;
  c.runtime_overhead_gib = in.runtime_overhead_gib;
  c.activation_gib = in.activation_gib >= 0
                         ? in.activation_gib
                         : activation_peak_bytes(in.model, in.max_batched_tokens, in.max_num_seqs, tp) / kGiB;
  c.kv_gib = c.usable_gib - c.weights_gib - c.runtime_overhead_gib - c.activation_gib;
  c.naive_kv_gib = c.usable_gib - c.weights_gib;
  c.kv_bytes_per_token = kv_bytes_per_token_per_device(in.model, in.kv_elem_bytes, tp, pp);
  const double block_bytes = c.kv_bytes_per_token * in.kv_block_tokens;
  c.window_kv_bytes_per_seq = window_kv_bytes_per_seq_per_device(in.model, in.kv_elem_bytes, tp, pp);
  c.window_blocks_per_seq = c.window_kv_bytes_per_seq > 0 ? int64_t(std::ceil(c.window_kv_bytes_per_seq / block_bytes)) : 0;
  c.kv_blocks = c.kv_gib > 0 ? int64_t(std::floor(c.kv_gib * kGiB / block_bytes)) : 0;
  c.kv_capacity_tokens = c.kv_blocks * in.kv_block_tokens;
  c.fits = c.kv_blocks >= 1 + c.window_blocks_per_seq;  // room for one sequence
  c.needed_gib =
      c.weights_gib + c.runtime_overhead_gib + c.activation_gib + double(1 + c.window_blocks_per_seq) * block_bytes / kGiB;
  return c;
}

int smallest_fitting_tp(MemoryInputs in) {
  for (int tp = 1; tp <= 64; tp *= 2) {
    if (tp < in.tp || !tp_problem(in.model, tp).empty()) continue;
    in.tp = tp;
    if (compute_capacity(in).fits) return tp;
  }
  return 0;
}

int64_t max_concurrent(const Capacity& c, int64_t context_tokens, int block_tokens) {
  if (context_tokens < 1) context_tokens = 1;
  const int64_t per_request = (context_tokens + block_tokens - 1) / block_tokens + c.window_blocks_per_seq;
  return c.kv_blocks / per_request;
}

}  // namespace fleetsim
