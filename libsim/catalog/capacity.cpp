#include "catalog/capacity.hpp"

#include <algorithm>
#include <cmath>

namespace fleetsim {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

double activation_peak_bytes(const ModelSpec& m, int max_batched_tokens, int max_num_seqs, int tp, SamplerPath sampler,
                             const VllmMemoryConstants& k, int expert_tp) {
  // Forward pass: bf16 activations of the widest layer (gate + up + activated MLP, and 4
  // hidden-size buffers: residual, norm output, attention output, QKV) for every batched token.
  // Tensor parallelism splits the MLP; an MoE layer's MLP is its experts per token (and shared
  // experts) side by side, split as its experts are (whole under expert parallelism, where vLLM's
  // fused-MoE workspace holds every token's top-k at the full expert width)
  const int etp = expert_tp < 0 ? tp : expert_tp;
  auto split = [](double width, int ways) { return ways > 1 ? width / ways : width; };
  double inter = split(m.intermediate, tp);
  if (m.moe()) {
    const double moe_inter = split(double(m.experts_per_token + m.shared_experts) * m.expert_intermediate, etp);
    inter = m.dense_layers > 0 && inter > moe_inter ? inter : moe_inter;
  }
  const double tokens = max_batched_tokens;
  const double forward = k.forward_scale * tokens * 2.0 * (3.0 * inter + 4.0 * m.hidden);
  if (m.kind != ModelKind::generate) return forward;
  // Sampler: the forward pass's buffers are freed, its hidden states stay; every sequence gets
  // full-vocabulary logits (gathered on every tensor-parallel rank) and the sampler's copies of them.
  const double seqs = std::min(max_num_seqs, max_batched_tokens);
  const double per_logit = sampler == SamplerPath::pytorch ? k.pytorch_bytes_per_logit : k.flashinfer_bytes_per_logit;
  const double sampling = seqs * double(m.vocab) * per_logit + tokens * m.hidden * 2.0;
  return std::max(forward, sampling);
}

// The share of a model's parameters the heaviest of pp pipeline stages holds, as vLLM splits them
// (get_pp_indices, vllm/distributed/utils.py): layers / pp each, the remainder one each to the
// stages before the last, from the second-to-last back; the input embedding on the first stage,
// the LM head on the last (its own copy where the embedding is tied). Layers are weighed alike.
double largest_stage_share(const ModelSpec& m, int pp) {
  const double params = m.params_b * 1e9, embed = double(m.vocab) * m.hidden;
  const double per_layer = (params - (m.tied_embeddings ? 1.0 : 2.0) * embed) / m.layers;
  if (!(per_layer > 0.0) || pp > m.layers) return 1.0 / pp;
  const int base = m.layers / pp, extra = m.layers % pp;
  double largest = 0.0;
  for (int stage = 0; stage < pp; ++stage) {
    // stages pp - 2, pp - 3, ... take the extra layers
    const int layers = base + (stage <= pp - 2 && stage >= pp - 1 - extra ? 1 : 0);
    const double held = layers * per_layer + (stage == 0 ? embed : 0.0) + (stage == pp - 1 ? embed : 0.0);
    largest = std::max(largest, held);
  }
  return largest / params;
}

// determine_expert_map, vllm/model_executor/layers/fused_moe/layer.py: E / ranks each, and one
// more to each of the first E % ranks
double expert_imbalance(const ModelSpec& m, int ranks) {
  if (!m.moe() || ranks <= 1) return 1.0;
  const int most = (m.experts + ranks - 1) / ranks;
  return double(most) * ranks / m.experts;
}

namespace {
// vLLM's default capture sizes: 1, 2, 4, then every 8 below 256, then every 16 (up to `largest`).
int capture_sizes_up_to(int largest) {
  int n = 0;
  for (int s : {1, 2, 4})
    if (s <= largest) ++n;
  for (int s = 8; s < 256 && s <= largest; s += 8) ++n;
  for (int s = 256; s <= largest; s += 16) ++n;
  return n;
}
}  // namespace

int cuda_graph_count(int max_num_seqs, int max_batched_tokens) {
  const int piecewise = capture_sizes_up_to(std::min({2 * max_num_seqs, 512, max_batched_tokens}));
  const int full = capture_sizes_up_to(std::min(max_num_seqs, 512));
  return piecewise + full;
}

double cuda_graph_gib(int max_num_seqs, int max_batched_tokens, const VllmMemoryConstants& k) {
  // vLLM's estimate: the first (largest) capture of each mode sizes the shared pool, and every
  // further graph adds its own small cost (docs/model.md, "Memory").
  const int n = cuda_graph_count(max_num_seqs, max_batched_tokens);
  return k.cuda_graph_first_gib + k.cuda_graph_each_gib * std::max(0, n - 2);
}

double weight_bytes(const ModelSpec& m, double bytes_per_param, double expert_bytes_per_param) {
  if (!m.moe() || expert_bytes_per_param < 0) return m.params_b * 1e9 * bytes_per_param;
  const double routed = m.routed_expert_params();
  return (m.params_b * 1e9 - routed) * bytes_per_param + routed * expert_bytes_per_param;
}

namespace {
// MXFP4 expert weights are stored padded (hidden to 256, each rank's intermediate to 64): the
// routed experts' resident bytes over their parameters' bytes; 1 for other dtypes
double expert_padding(const ModelSpec& m, double expert_bytes_per_param, int tp) {
  if (!m.moe() || expert_bytes_per_param != weight_dtype_bytes("mxfp4")) return 1.0;
  const int ranks = tp < 1 ? 1 : tp;
  auto round_up = [](double x, double to) { return std::ceil(x / to) * to; };
  const double inter = double(m.expert_intermediate) / ranks;
  return round_up(m.hidden, 256) / m.hidden * round_up(inter, 64) / inter;
}
}  // namespace

double resident_weight_bytes(const ModelSpec& m, double bytes_per_param, double expert_bytes_per_param, int tp) {
  double b = weight_bytes(m, bytes_per_param, expert_bytes_per_param);
  if (bytes_per_param < 2.0) {
    // quantized checkpoints leave the input embedding and the LM head unquantized
    const double tables = m.kind == ModelKind::generate && !m.tied_embeddings ? 2.0 : 1.0;
    b += tables * double(m.vocab) * m.hidden * (2.0 - bytes_per_param);
  }
  // (experts in the weights' dtype when none of their own is given: MXFP4 weights are padded too)
  const double eb = expert_bytes_per_param < 0 ? bytes_per_param : expert_bytes_per_param;
  b += m.routed_expert_params() * eb * (expert_padding(m, eb, tp) - 1.0);
  return b;
}

const char* engine_kind_name(EngineKind k) {
  return k == EngineKind::sglang ? "sglang" : k == EngineKind::trtllm ? "trtllm" : "vllm";
}

const char* engine_fraction_key(EngineKind k) {
  return k == EngineKind::sglang   ? "mem_fraction_static"
         : k == EngineKind::trtllm ? "free_gpu_memory_fraction"
                                   : "gpu_memory_utilization";
}

Capacity compute_capacity(const MemoryInputs& in) {
  Capacity c;
  const int tp = in.tp < 1 ? 1 : in.tp, pp = in.pp < 1 ? 1 : in.pp;
  c.devices = tp * pp;
  c.device_gib = in.device.memory_gib * in.memory_fraction;
  c.usable_gib = c.device_gib * in.gpu_memory_utilization;
  // experts split by tensor parallelism are padded per rank; whole ones (expert or data parallel) are not
  const int expert_tp = in.ep > 1 || in.dp > 1 ? 1 : tp;
  c.weights_gib =
      resident_weight_bytes(in.model, in.weight_bytes_per_param, in.expert_weight_bytes_per_param, expert_tp) / kGiB;
  if (pp > 1)
    c.weights_gib *= largest_stage_share(in.model, pp) / tp;
  else if (c.devices > 1)
    c.weights_gib /= c.devices;
  if (in.dp > 1 && in.model.moe()) {
    // data-parallel attention: the dense part is replicated on every rank, the routed experts are
    // spread over all dp x tp devices (expert parallelism across the ranks)
    const double eb =
        in.expert_weight_bytes_per_param < 0 ? in.weight_bytes_per_param : in.expert_weight_bytes_per_param;
    c.weights_gib -= in.model.routed_expert_params() * eb * expert_padding(in.model, eb, expert_tp) *
                     (1.0 - 1.0 / in.dp) / c.devices / kGiB;
  }
  // whole experts over tp x dp devices: the busiest device holds the remainder's one more
  const int dp = in.dp < 1 ? 1 : in.dp;
  const double imbalance = expert_imbalance(in.model, in.ep > 1 || dp > 1 ? tp * dp : 1);
  if (imbalance > 1.0) {
    const double eb =
        in.expert_weight_bytes_per_param < 0 ? in.weight_bytes_per_param : in.expert_weight_bytes_per_param;
    const double stage = pp > 1 ? largest_stage_share(in.model, pp) : 1.0;
    c.weights_gib += in.model.routed_expert_params() * eb * expert_padding(in.model, eb, expert_tp) * stage /
                     (double(tp) * dp) * (imbalance - 1.0) / kGiB;
  }
  if (in.has_draft) {
    c.draft_gib = resident_weight_bytes(in.draft, in.weight_bytes_per_param, -1.0, tp) / kGiB / c.devices;
    c.weights_gib += c.draft_gib;
  }
  if (in.runtime_overhead_gib >= 0) {
    c.non_torch_gib = in.runtime_overhead_gib;
  } else {
    // a data-parallel rank of one device still joins the expert-parallel group's communicators
    c.non_torch_gib = in.constants.non_torch_gib + (c.devices > 1 || in.dp > 1 ? in.constants.collective_gib : 0.0);
    c.cuda_graph_gib = in.enforce_eager ? 0.0 : cuda_graph_gib(in.max_num_seqs, in.max_batched_tokens, in.constants);
  }
  c.runtime_overhead_gib = c.non_torch_gib + (in.reserve_cuda_graphs ? c.cuda_graph_gib : 0.0) + in.adapter_gib;
  c.activation_gib = in.activation_gib >= 0 ? in.activation_gib
                                            : activation_peak_bytes(in.model, in.max_batched_tokens, in.max_num_seqs,
                                                                    tp, in.sampler, in.constants, expert_tp) /
                                                  kGiB;
  const double besides = c.runtime_overhead_gib + c.activation_gib;  // what the engine holds beside weights and KV
  switch (in.engine) {
    case EngineKind::vllm: c.kv_gib = c.usable_gib - c.weights_gib - besides; break;
    case EngineKind::sglang:
      // the static fraction holds weights and the KV pool; the rest must hold runtime and activations
      c.kv_gib = c.usable_gib - c.weights_gib;
      if (besides > c.device_gib - c.usable_gib) c.kv_gib = std::min(c.kv_gib, c.device_gib - c.weights_gib - besides);
      break;
    case EngineKind::trtllm: {
      const double free_gib = c.device_gib - c.weights_gib - besides;
      c.kv_gib = free_gib > 0 ? free_gib * in.gpu_memory_utilization : free_gib;
      c.usable_gib = c.weights_gib + besides + std::max(c.kv_gib, 0.0);
      break;
    }
  }
  c.naive_kv_gib = c.usable_gib - c.weights_gib;
  c.kv_bytes_per_token = kv_bytes_per_token_per_device(in.model, in.kv_elem_bytes, tp, pp);
  if (in.has_draft) c.draft_kv_bytes_per_token = kv_bytes_per_token_per_device(in.draft, in.kv_elem_bytes, tp, pp);
  // a block holds its tokens' KV of the target and of the draft
  const double block_bytes = (c.kv_bytes_per_token + c.draft_kv_bytes_per_token) * in.kv_block_tokens;
  c.window_kv_bytes_per_seq = window_kv_bytes_per_seq_per_device(in.model, in.kv_elem_bytes, tp, pp);
  if (in.has_draft) c.window_kv_bytes_per_seq += window_kv_bytes_per_seq_per_device(in.draft, in.kv_elem_bytes, tp, pp);
  c.window_blocks_per_seq =
      c.window_kv_bytes_per_seq > 0 ? int64_t(std::ceil(c.window_kv_bytes_per_seq / block_bytes)) : 0;
  c.kv_blocks = c.kv_gib > 0 ? int64_t(std::floor(c.kv_gib * kGiB / block_bytes)) : 0;
  c.kv_capacity_tokens = c.kv_blocks * in.kv_block_tokens;
  c.fits = c.kv_blocks >= 1 + c.window_blocks_per_seq;  // room for one sequence
  c.needed_gib = c.weights_gib + c.runtime_overhead_gib + c.activation_gib +
                 double(1 + c.window_blocks_per_seq) * block_bytes / kGiB;
  return c;
}

int smallest_fitting_tp(MemoryInputs in, int64_t context_tokens) {
  for (int tp = 1; tp <= 64; ++tp) {  // every degree the model's shapes allow, not only powers of two
    if (!tp_problem(in.model, tp).empty()) continue;
    in.tp = tp;
    const Capacity c = compute_capacity(in);
    if (c.fits && (context_tokens <= 0 || max_concurrent(c, context_tokens, in.kv_block_tokens) >= 1)) return tp;
  }
  return 0;
}

double needed_gib_at(const Capacity& c, int64_t context_tokens, int block_tokens) {
  if (context_tokens < 1) context_tokens = 1;
  const int64_t blocks = (context_tokens + block_tokens - 1) / block_tokens + c.window_blocks_per_seq;
  return c.weights_gib + c.runtime_overhead_gib + c.activation_gib +
         double(blocks) * c.block_bytes_per_token() * block_tokens / kGiB;
}

int64_t max_concurrent(const Capacity& c, int64_t context_tokens, int block_tokens) {
  if (context_tokens < 1) context_tokens = 1;
  const int64_t per_request = (context_tokens + block_tokens - 1) / block_tokens + c.window_blocks_per_seq;
  return c.kv_blocks / per_request;
}

bool vllm_starts(const Capacity& c, int64_t max_model_len, int block_tokens) {
  if (!c.fits) return false;
  return max_model_len <= 0 || max_concurrent(c, max_model_len, block_tokens) >= 1;
}

}  // namespace fleetsim
