#include "capacity.hpp"

#include <cmath>

namespace fleetsim {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

double activation_peak_bytes(const ModelSpec& m, int max_batched_tokens, int max_num_seqs) {
  // bf16 activations of the widest layer (gate + up + activated MLP, and 4 hidden-size
  // buffers: residual, norm output, attention output, QKV) for every batched token, plus fp32
  // logits and their softmax for each sequence a step samples from.
  const double per_token = 2.0 * (3.0 * m.intermediate + 4.0 * m.hidden);
  const double logits = m.kind == ModelKind::generate ? 8.0 * double(max_num_seqs) * m.vocab : 0.0;
  return double(max_batched_tokens) * per_token + logits;
}

Capacity compute_capacity(const MemoryInputs& in) {
  Capacity c;
  c.device_gib = in.device.memory_gib * in.memory_fraction;
  c.usable_gib = c.device_gib * in.gpu_memory_utilization;
  c.weights_gib = in.model.params_b * 1e9 * in.weight_bytes_per_param / kGiB;
  c.runtime_overhead_gib = in.runtime_overhead_gib;
  c.activation_gib = in.activation_gib >= 0
                         ? in.activation_gib
                         : activation_peak_bytes(in.model, in.max_batched_tokens, in.max_num_seqs) / kGiB;
  c.kv_gib = c.usable_gib - c.weights_gib - c.runtime_overhead_gib - c.activation_gib;
  c.naive_kv_gib = c.usable_gib - c.weights_gib;
  c.kv_bytes_per_token = kv_bytes_per_token(in.model, in.kv_elem_bytes);
  const double block_bytes = c.kv_bytes_per_token * in.kv_block_tokens;
  c.kv_blocks = c.kv_gib > 0 ? int64_t(std::floor(c.kv_gib * kGiB / block_bytes)) : 0;
  c.kv_capacity_tokens = c.kv_blocks * in.kv_block_tokens;
  c.fits = c.kv_blocks >= 1;
  c.needed_gib = c.weights_gib + c.runtime_overhead_gib + c.activation_gib + block_bytes / kGiB;
  return c;
}

int64_t max_concurrent(const Capacity& c, int64_t context_tokens, int block_tokens) {
  if (context_tokens < 1) context_tokens = 1;
  const int64_t per_request = (context_tokens + block_tokens - 1) / block_tokens;
  return c.kv_blocks / per_request;
}

}  // namespace fleetsim
