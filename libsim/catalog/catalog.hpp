// Built-in device and model catalogs (sources in docs/catalog.md). Scenarios may override or
// extend both under `catalog:`.
#pragma once
#include <string>
#include <vector>

#include "base/error.hpp"

namespace fleetsim {

struct DeviceSpec {
  std::string name;
  double memory_gib = 0;      // what the driver reports as total device memory
  double bandwidth_gb_s = 0;  // HBM / GDDR bandwidth, 1e9 bytes per second
  double bf16_tflops = 0;     // dense BF16 (FP16 where the device has no BF16)
  double fp8_tflops = 0;      // dense FP8; 0 if the device has none
  double usd_per_hour = 0;    // illustrative on-demand price
  std::string notes;
  double fp4_tflops = 0;  // dense FP4 (NVFP4/MXFP4 tensor cores); 0 if the device has none
  // How a device talks to its peers (tensor/pipeline/expert parallelism): a fast scale-up link
  // (NVLink, Infinity Fabric) within a domain of `link_domain` devices, PCIe within the node.
  std::string interconnect;    // e.g. "NVLink 4 via NVSwitch"
  double link_gb_s = 0;        // per device, one direction, 1e9 bytes/s (PCIe cards: their PCIe link)
  double link_latency_us = 0;  // fixed cost of one collective over the link
  int link_domain = 1;         // devices joined by that link (8: an HGX board; 2: bridged pairs)
  double pcie_gb_s = 0;        // host link per device, one direction
  int devices_per_node = 8;    // a typical server of these devices
  double tdp_w = 0;            // board power at full load (0: not known)
  // The link joins every pair of the domain's devices directly, with no switch (AMD Infinity
  // Fabric): link_gb_s is all of a device's links together, one per peer, and a device reaches
  // p peers at once over p of them.
  bool link_mesh = false;
  // One direction of what a device has towards `peers` devices of its domain at once.
  double link_gb_s_to(int peers) const {
    if (!link_mesh || link_domain <= 1 || peers >= link_domain - 1) return link_gb_s;
    return link_gb_s * double(peers < 1 ? 1 : peers) / double(link_domain - 1);
  }
};

enum class ModelKind { generate, embed, score };

struct ModelSpec {
  std::string name;
  ModelKind kind = ModelKind::generate;
  double params_b = 0;  // parameters, billions
  int layers = 0;
  int hidden = 0;
  int heads = 0;
  int kv_heads = 0;
  int head_dim = 0;
  int intermediate = 0;
  int vocab = 0;
  int max_context = 0;
  std::string notes;
  // Mixture of experts (0 experts: a dense model). Routed experts sit in `layers - dense_layers`
  // layers; each has gate, up and down projections of hidden x expert_intermediate.
  int experts = 0;
  int experts_per_token = 0;
  int shared_experts = 0;
  int expert_intermediate = 0;
  int dense_layers = 0;  // layers with a dense MLP instead of experts (DeepSeek's first_k_dense_replace)
  // Multi-head latent attention (DeepSeek): the KV cache holds kv_lora_rank + rope_head_dim
  // values per token and layer, shared by all heads (replicated on every tensor-parallel rank).
  int kv_lora_rank = 0;
  int rope_head_dim = 0;
  // Sliding-window attention: `sliding_layers` of the layers attend to the last `sliding_window`
  // tokens only, so their KV per sequence is bounded.
  int sliding_window = 0;
  int sliding_layers = 0;
  bool tied_embeddings = false;  // the LM head reuses the input embedding (tie_word_embeddings)

  bool moe() const { return experts > 0; }
  bool mla() const { return kv_lora_rank > 0; }
  int moe_layers() const { return moe() ? layers - dense_layers : 0; }
  int full_attention_layers() const { return layers - sliding_layers; }
  // Parameters of the routed experts (all of them), and those one token uses on average.
  double routed_expert_params() const;
  double active_params() const;
};

// A MIG-style partition of a device: a share of its compute (slices of 7) and of its memory and
// bandwidth (slices of 8). A replica on it is billed for its compute share of the device.
struct PartitionSpec {
  std::string device;  // the whole device it partitions
  std::string name;    // e.g. 1g.10gb
  int compute_slices = 0;
  int memory_slices = 0;
  int per_device = 0;  // instances of this profile that fit on one device
};

const std::vector<DeviceSpec>& builtin_devices();
// Whether a built-in device is a CPU instance (the engine runs eager there: no CUDA graphs).
bool cpu_instance(const DeviceSpec& d);
// One of the catalog's AMD Instinct GPUs (no MPS: that is NVIDIA's).
bool amd_device(const DeviceSpec& d);
const std::vector<PartitionSpec>& builtin_partitions();
// The device a replica on `p` sees: its memory, FLOP/s, bandwidth and price scaled to the slice.
DeviceSpec partition_device(const DeviceSpec& whole, const PartitionSpec& p);
const std::vector<ModelSpec>& builtin_models();

const char* model_kind_name(ModelKind k);

// Bytes per element of a weight or KV dtype; 0 if unknown.
double weight_dtype_bytes(const std::string& dtype);
double kv_dtype_bytes(const std::string& dtype);
const std::vector<std::string>& weight_dtypes();
const std::vector<std::string>& kv_dtypes();

// The entry called `name`, or nullptr with `why` saying "unknown <what> '<name>'" and the closest
// name (or `hint` when none is close).
template <class Spec>
const Spec* find_named(const std::vector<Spec>& list, const std::string& name, const std::string& what,
                       const std::string& hint, std::string& why) {
  std::vector<std::string> names;
  for (const auto& x : list) {
    if (x.name == name) return &x;
    names.push_back(x.name);
  }
  const std::string sug = did_you_mean(name, names);
  why = "unknown " + what + " '" + name + "'" + (sug.empty() ? hint : " (did you mean '" + sug + "'?)");
  return nullptr;
}

// KV cache bytes per token of the full-attention layers: 2 (K and V) x layers x kv_heads x
// head_dim x bytes per element; with MLA, layers x (kv_lora_rank + rope_head_dim) x bytes.
double kv_bytes_per_token(const ModelSpec& m, double kv_elem_bytes);

// How a replica of `tp` x `pp` devices holds one token's KV on each device: the layers of one
// pipeline stage (the largest), the KV heads of one tensor-parallel rank (at least one: ranks
// beyond kv_heads replicate a head, as vLLM does); MLA's latent cache is not split by tp.
double kv_bytes_per_token_per_device(const ModelSpec& m, double kv_elem_bytes, int tp, int pp);
// KV bytes one sequence holds on a device in sliding-window layers once its context reaches the
// window (a fixed amount per sequence, independent of its length).
double window_kv_bytes_per_seq_per_device(const ModelSpec& m, double kv_elem_bytes, int tp, int pp);

// Why tensor parallelism of degree tp cannot split model m ("" if it can): heads must divide
// evenly, and KV heads must divide or be divided by tp (vLLM's rule).
std::string tp_problem(const ModelSpec& m, int tp);

}  // namespace fleetsim
