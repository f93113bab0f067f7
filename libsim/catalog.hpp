// Built-in device and model catalogs (sources in docs/catalog.md). Scenarios may override or
// extend both under `catalog:`.
#pragma once
#include <string>
#include <vector>

#include "error.hpp"

namespace fleetsim {

struct DeviceSpec {
  std::string name;
  double memory_gib = 0;      // what the driver reports as total device memory
  double bandwidth_gb_s = 0;  // HBM / GDDR bandwidth, 1e9 bytes per second
  double bf16_tflops = 0;     // dense BF16 (FP16 where the device has no BF16)
  double fp8_tflops = 0;      // dense FP8; 0 if the device has none
  double usd_per_hour = 0;    // illustrative on-demand price
  std::string notes;
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

// KV cache bytes per token = 2 (K and V) x layers x kv_heads x head_dim x bytes per element.
double kv_bytes_per_token(const ModelSpec& m, double kv_elem_bytes);

}  // namespace fleetsim
