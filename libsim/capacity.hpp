// Static memory arithmetic: what the weights take, what a real engine holds besides them, and
// how many KV tokens (and so concurrent requests at a context length) remain.
#pragma once
#include <cstdint>

#include "catalog.hpp"

namespace fleetsim {

struct MemoryInputs {
  DeviceSpec device;
  ModelSpec model;
  double weight_bytes_per_param = 2;
  double kv_elem_bytes = 2;
  double gpu_memory_utilization = 0.9;
  double runtime_overhead_gib = 1.8;  // CUDA context, cuBLAS/NCCL workspaces, CUDA graphs
  double activation_gib = -1;         // < 0: derived from max_batched_tokens and max_num_seqs
  int max_batched_tokens = 8192;
  int max_num_seqs = 256;
  int kv_block_tokens = 16;
  double memory_fraction = 1.0;  // share of the device a replica gets (1 for a whole device)
  double expert_weight_bytes_per_param = -1;  // routed experts' dtype (< 0: the weights' dtype)
  int tp = 1;  // tensor-parallel degree: devices splitting each layer
  int pp = 1;  // pipeline stages: devices splitting the layers
};

// Every figure is per device: a replica of tp x pp devices holds 1/(tp pp) of the weights on
// each, and each device holds its slice of every token's KV, so the KV capacity in tokens of one
// device is the replica's.
struct Capacity {
  int devices = 1;            // tp x pp
  double device_gib = 0;      // device memory the replica sees
  double usable_gib = 0;      // x gpu_memory_utilization
  double weights_gib = 0;
  double runtime_overhead_gib = 0;
  double activation_gib = 0;  // peak activations of the largest forward pass
  double kv_gib = 0;          // what is left for the KV cache (may be negative: does not fit)
  double naive_kv_gib = 0;    // usable - weights, the estimate that ignores the engine
  double kv_bytes_per_token = 0;  // on one device
  double window_kv_bytes_per_seq = 0;  // sliding-window layers, per sequence, on one device
  int64_t window_blocks_per_seq = 0;   // the same in KV blocks (held by every running sequence)
  int64_t kv_blocks = 0;
  int64_t kv_capacity_tokens = 0;
  bool fits = false;          // at least one KV block is left
  double needed_gib = 0;      // weights + overhead + activations + one block
};

// Peak activation bytes of a forward pass over max_batched_tokens tokens plus the sampler's
// logits for max_num_seqs sequences (see docs/model.md for the calibration).
double activation_peak_bytes(const ModelSpec& m, int max_batched_tokens, int max_num_seqs, int tp = 1);

// Bytes of all weights of a replica: dense parts at one dtype, routed experts at another.
double weight_bytes(const ModelSpec& m, double bytes_per_param, double expert_bytes_per_param);

Capacity compute_capacity(const MemoryInputs& in);

// The smallest tensor-parallel degree (a power of two >= in.tp, up to 64, that splits the model)
// at which the model fits; 0 if none does.
int smallest_fitting_tp(MemoryInputs in);

// Requests that fit at once when each holds `context_tokens` of KV (block-rounded).
int64_t max_concurrent(const Capacity& c, int64_t context_tokens, int block_tokens);

}  // namespace fleetsim
