// Static memory arithmetic: what the weights take, what a real engine holds besides them, and
// how many KV tokens (and so concurrent requests at a context length) remain.
//
// The engine modelled is vLLM's V1 worker as of v0.21 and later: the KV cache gets
//   total x gpu_memory_utilization - weights - non-torch memory - activation peak - CUDA graphs,
// each part as vLLM's start-up profile measures it (docs/model.md, "Memory"; the constants are
// fitted to public vLLM logs in docs/validation.md, "Memory").
#pragma once
#include <cstdint>

#include "catalog/catalog.hpp"

namespace fleetsim {

// The serving engine, for its memory rule (docs/model.md, "Engines"): vLLM gives the KV cache
// what is left of total x gpu_memory_utilization after weights, runtime and activations; SGLang
// what is left of total x mem_fraction_static after the weights (runtime and activations live
// outside that fraction); TensorRT-LLM free_gpu_memory_fraction of what is free once the weights,
// runtime and activations are in.
enum class EngineKind { vllm, sglang, trtllm };
const char* engine_kind_name(EngineKind k);
// The engine's own name for its memory fraction (gpu_memory_utilization, mem_fraction_static,
// free_gpu_memory_fraction).
const char* engine_fraction_key(EngineKind k);

// How the sampler of vLLM's profiling run filters top-k / top-p: FlashInfer's kernels (vLLM's
// default where FlashInfer is installed) or PyTorch's sort (vLLM V0; V1 without FlashInfer).
enum class SamplerPath { flashinfer, pytorch };

// The constants of the memory model: the defaults are fitted to, or read from, public vLLM
// start-up logs (docs/validation.md, "Memory", which also says how to refit them).
struct VllmMemoryConstants {
  double non_torch_gib = 0.13;               // per device: allocations outside PyTorch while profiling
  double collective_gib = 0.42;              // + NCCL / all-reduce buffers when a replica spans devices
  double forward_scale = 0.936;              // x the forward pass's bf16 buffers per batched token
  double flashinfer_bytes_per_logit = 27.3;  // sampler bytes per sequence and vocabulary entry
  double pytorch_bytes_per_logit = 38.3;
  double cuda_graph_first_gib = 0.30;       // the largest graph of each mode (their shared pool)
  double cuda_graph_each_gib = 2.0 / 1024;  // every further graph
};

struct MemoryInputs {
  DeviceSpec device;
  ModelSpec model;
  double weight_bytes_per_param = 2;
  double kv_elem_bytes = 2;
  EngineKind engine = EngineKind::vllm;
  double gpu_memory_utilization = 0.9;  // the engine's memory fraction (see EngineKind)
  double runtime_overhead_gib = -1;     // < 0: modelled (non-torch memory + CUDA graphs); >= 0 replaces both
  double activation_gib = -1;           // < 0: derived from max_batched_tokens and max_num_seqs
  double adapter_gib = 0;               // LoRA adapters resident on each device
  int max_batched_tokens = 8192;
  int max_num_seqs = 256;
  int kv_block_tokens = 16;
  bool enforce_eager = false;  // no CUDA graphs (vLLM's --enforce-eager)
  // vLLM >= 0.21 takes the CUDA graphs' memory from the KV budget; false is the behaviour of
  // earlier versions (and of VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=0): the graphs are captured
  // after the KV cache is sized, beyond gpu_memory_utilization.
  bool reserve_cuda_graphs = true;
  SamplerPath sampler = SamplerPath::flashinfer;
  VllmMemoryConstants constants;
  double memory_fraction = 1.0;               // share of the device a replica gets (1 for a whole device)
  double expert_weight_bytes_per_param = -1;  // routed experts' dtype (< 0: the weights' dtype)
  int tp = 1;                                 // tensor-parallel degree: devices splitting each layer
  int pp = 1;                                 // pipeline stages: devices splitting the layers
  int dp = 1;  // data-parallel ranks sharing the routed experts (DP attention): each device holds 1/dp of its share
  int ep = 1;  // expert parallelism: each device holds whole experts, not a tp-th of each
  // speculative decoding: a draft model beside the target, sharded as it, with its own KV per token
  bool has_draft = false;
  ModelSpec draft;
};

// Every figure is per device: a replica of tp x pp devices holds 1/(tp pp) of the weights on
// each, and each device holds its slice of every token's KV, so the KV capacity in tokens of one
// device is the replica's.
struct Capacity {
  int devices = 1;        // tp x pp
  double device_gib = 0;  // device memory the replica sees
  double usable_gib = 0;  // what the engine may fill: x gpu_memory_utilization (vLLM), x mem_fraction_static
                          // (SGLang), weights + runtime + activations + the fraction of the rest (TensorRT-LLM)
  double weights_gib = 0;
  double runtime_overhead_gib = 0;      // non_torch_gib + cuda_graph_gib (when reserved) + resident adapters
  double non_torch_gib = 0;             // CUDA libraries' workspaces and collective buffers (or the override)
  double cuda_graph_gib = 0;            // what vLLM reserves for its CUDA graphs (0 with enforce_eager)
  double activation_gib = 0;            // peak of the profiling run: forward pass or sampler
  double kv_gib = 0;                    // what is left for the KV cache (may be negative: does not fit)
  double naive_kv_gib = 0;              // usable - weights, the estimate that ignores the engine
  double kv_bytes_per_token = 0;        // on one device
  double draft_gib = 0;                 // a speculative draft model's weights, in weights_gib
  double draft_kv_bytes_per_token = 0;  // its KV per token on one device, held beside the target's
  double block_bytes_per_token() const { return kv_bytes_per_token + draft_kv_bytes_per_token; }  // what a block holds
  double window_kv_bytes_per_seq = 0;  // sliding-window layers, per sequence, on one device
  int64_t window_blocks_per_seq = 0;   // the same in KV blocks (held by every running sequence)
  int64_t kv_blocks = 0;
  int64_t kv_capacity_tokens = 0;
  bool fits = false;      // at least one KV block is left
  double needed_gib = 0;  // weights + overhead + activations + one block
};

// The share of a model's parameters the heaviest of pp pipeline stages holds (vLLM's layer split,
// the embedding on the first stage and the LM head on the last).
double largest_stage_share(const ModelSpec& m, int pp);

// The routed experts of the busiest of `ranks` expert-parallel devices against an even share
// (1 where they divide): vLLM gives the remainder one each to the first ranks, and every step
// waits for the rank that holds most.
double expert_imbalance(const ModelSpec& m, int ranks);

// Peak bytes of vLLM's profiling run on one device: the larger of the forward pass over
// max_batched_tokens tokens and the sampler over min(max_num_seqs, max_batched_tokens) sequences
// of full-vocabulary logits (generative models; see docs/model.md for the calibration).
// expert_tp splits an MoE layer's experts (tp; 1 where experts are whole: expert or data
// parallelism; below 0: tp).
double activation_peak_bytes(const ModelSpec& m, int max_batched_tokens, int max_num_seqs, int tp = 1,
                             SamplerPath sampler = SamplerPath::flashinfer, const VllmMemoryConstants& k = {},
                             int expert_tp = -1);

// CUDA graphs vLLM captures by default (FULL_AND_PIECEWISE): one piecewise graph per capture size
// up to min(2 max_num_seqs, 512, max_batched_tokens), one full decode graph per size up to
// max_num_seqs; and the memory its profiler reserves for them.
int cuda_graph_count(int max_num_seqs, int max_batched_tokens);
double cuda_graph_gib(int max_num_seqs, int max_batched_tokens, const VllmMemoryConstants& k = {});

// Bytes of all weights of a replica: dense parts at one dtype, routed experts at another (what a
// step reads).
double weight_bytes(const ModelSpec& m, double bytes_per_param, double expert_bytes_per_param);

// Bytes the weights of a replica of tensor-parallel degree tp occupy in vLLM: quantized
// checkpoints keep the input embedding and LM head at 16 bits, and MXFP4 experts are padded to the
// MoE kernels' tiles (hidden to a multiple of 256, each rank's expert intermediate to 64).
double resident_weight_bytes(const ModelSpec& m, double bytes_per_param, double expert_bytes_per_param, int tp = 1);

Capacity compute_capacity(const MemoryInputs& in);

// The smallest tensor-parallel degree (up to 64, one that splits the model's heads and MLP) at
// which the model fits with room for one request of context_tokens (0: one KV block); 0 if none.
int smallest_fitting_tp(MemoryInputs in, int64_t context_tokens = 0);

// What one request of `context_tokens` needs on a device: the weights, the engine's overhead and
// activations, and its KV blocks (with its sliding-window blocks).
double needed_gib_at(const Capacity& c, int64_t context_tokens, int block_tokens);

// Requests that fit at once when each holds `context_tokens` of KV (block-rounded).
int64_t max_concurrent(const Capacity& c, int64_t context_tokens, int block_tokens);

// Whether vLLM starts: it refuses to when the KV cache cannot hold one request of max_model_len
// tokens (0: no such check).
bool vllm_starts(const Capacity& c, int64_t max_model_len, int block_tokens);

}  // namespace fleetsim
