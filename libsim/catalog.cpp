#include "catalog.hpp"

namespace fleetsim {

// Sources and the meaning of each figure: docs/catalog.md.
const std::vector<DeviceSpec>& builtin_devices() {
  static const std::vector<DeviceSpec> d = {
      {"h100-sxm-80gb", 79.22, 3350, 989.4, 1978.9, 3.00, "NVIDIA H100 SXM5 80GB HBM3"},
      {"h200-141gb", 139.8, 4800, 989.4, 1978.9, 3.80, "NVIDIA H200 SXM 141GB HBM3e"},
      {"a100-80gb", 79.15, 2039, 312.0, 0.0, 1.80, "NVIDIA A100 SXM4 80GB HBM2e"},
      {"a100-40gb", 39.39, 1555, 312.0, 0.0, 1.30, "NVIDIA A100 SXM4 40GB HBM2"},
      {"l40s-48gb", 44.39, 864, 362.1, 733.0, 1.00, "NVIDIA L40S 48GB GDDR6 (ECC on)"},
      {"l4-24gb", 22.03, 300, 121.0, 242.5, 0.80, "NVIDIA L4 24GB GDDR6"},
      {"a10g-24gb", 21.99, 600, 70.0, 0.0, 1.01, "NVIDIA A10G 24GB GDDR6 (AWS g5)"},
      {"t4-16gb", 14.58, 320, 65.0, 0.0, 0.53, "NVIDIA T4 16GB GDDR6; FP16 tensor figure (no BF16)"},
      {"mi300x-192gb", 191.5, 5300, 1307.4, 2614.9, 2.50, "AMD Instinct MI300X 192GB HBM3"},
  };
  return d;
}

// NVIDIA MIG profiles (MIG user guide, "Supported MIG Profiles"): compute in sevenths, memory in eighths.
const std::vector<PartitionSpec>& builtin_partitions() {
  static const std::vector<PartitionSpec> p = {
      {"h100-sxm-80gb", "1g.10gb", 1, 1, 7}, {"h100-sxm-80gb", "1g.20gb", 1, 2, 4}, {"h100-sxm-80gb", "2g.20gb", 2, 2, 3},
      {"h100-sxm-80gb", "3g.40gb", 3, 4, 2}, {"h100-sxm-80gb", "4g.40gb", 4, 4, 1}, {"h100-sxm-80gb", "7g.80gb", 7, 8, 1},
      {"h200-141gb", "1g.18gb", 1, 1, 7},    {"h200-141gb", "1g.35gb", 1, 2, 4},    {"h200-141gb", "2g.35gb", 2, 2, 3},
      {"h200-141gb", "3g.71gb", 3, 4, 2},    {"h200-141gb", "4g.71gb", 4, 4, 1},    {"h200-141gb", "7g.141gb", 7, 8, 1},
      {"a100-80gb", "1g.10gb", 1, 1, 7},     {"a100-80gb", "1g.20gb", 1, 2, 4},     {"a100-80gb", "2g.20gb", 2, 2, 3},
      {"a100-80gb", "3g.40gb", 3, 4, 2},     {"a100-80gb", "4g.40gb", 4, 4, 1},     {"a100-80gb", "7g.80gb", 7, 8, 1},
      {"a100-40gb", "1g.5gb", 1, 1, 7},      {"a100-40gb", "1g.10gb", 1, 2, 4},     {"a100-40gb", "2g.10gb", 2, 2, 3},
      {"a100-40gb", "3g.20gb", 3, 4, 2},     {"a100-40gb", "4g.20gb", 4, 4, 1},     {"a100-40gb", "7g.40gb", 7, 8, 1},
  };
  return p;
}

DeviceSpec partition_device(const DeviceSpec& whole, const PartitionSpec& p) {
  DeviceSpec d = whole;
  d.name = whole.name + ":" + p.name;
  d.memory_gib = whole.memory_gib * p.memory_slices / 8.0;
  d.bandwidth_gb_s = whole.bandwidth_gb_s * p.memory_slices / 8.0;
  d.bf16_tflops = whole.bf16_tflops * p.compute_slices / 7.0;
  d.fp8_tflops = whole.fp8_tflops * p.compute_slices / 7.0;
  d.usd_per_hour = whole.usd_per_hour * p.compute_slices / 7.0;
  d.notes = "MIG " + p.name + " of " + whole.name;
  return d;
}

const std::vector<ModelSpec>& builtin_models() {
  static const std::vector<ModelSpec> m = {
      {"llama-3.1-8b", ModelKind::generate, 8.03, 32, 4096, 32, 8, 128, 14336, 128256, 131072,
       "Meta Llama 3.1 8B"},
      {"llama-3.1-70b", ModelKind::generate, 70.55, 80, 8192, 64, 8, 128, 28672, 128256, 131072,
       "Meta Llama 3.1 70B"},
      {"llama-3.2-1b", ModelKind::generate, 1.24, 16, 2048, 32, 8, 64, 8192, 128256, 131072,
       "Meta Llama 3.2 1B"},
      {"mistral-7b", ModelKind::generate, 7.25, 32, 4096, 32, 8, 128, 14336, 32768, 32768,
       "Mistral 7B v0.3"},
      {"qwen2.5-7b", ModelKind::generate, 7.62, 28, 3584, 28, 4, 128, 18944, 152064, 32768,
       "Qwen2.5 7B"},
      {"qwen2.5-72b", ModelKind::generate, 72.71, 80, 8192, 64, 8, 128, 29568, 152064, 32768,
       "Qwen2.5 72B"},
      {"bge-large-en-v1.5", ModelKind::embed, 0.335, 24, 1024, 16, 16, 64, 4096, 30522, 512,
       "BAAI bge-large-en-v1.5 embedding model (BERT-large encoder)"},
      {"bge-reranker-v2-m3", ModelKind::score, 0.568, 24, 1024, 16, 16, 64, 4096, 250002, 8192,
       "BAAI bge-reranker-v2-m3 cross-encoder reranker (XLM-RoBERTa-large)"},
  };
  return m;
}

const char* model_kind_name(ModelKind k) {
  switch (k) {
    case ModelKind::generate: return "generate";
    case ModelKind::embed: return "embed";
    case ModelKind::score: return "score";
  }
  return "generate";
}

double weight_dtype_bytes(const std::string& t) {
  if (t == "bf16" || t == "fp16") return 2.0;
  if (t == "fp8" || t == "int8") return 1.0;
  if (t == "int4") return 0.5;
  return 0.0;
}

double kv_dtype_bytes(const std::string& t) {
  if (t == "bf16" || t == "fp16") return 2.0;
  if (t == "fp8" || t == "int8") return 1.0;
  return 0.0;
}

const std::vector<std::string>& weight_dtypes() {
  static const std::vector<std::string> v = {"bf16", "fp16", "fp8", "int8", "int4"};
  return v;
}
const std::vector<std::string>& kv_dtypes() {
  static const std::vector<std::string> v = {"bf16", "fp16", "fp8", "int8"};
  return v;
}

double kv_bytes_per_token(const ModelSpec& m, double kv_elem_bytes) {
  return 2.0 * m.layers * m.kv_heads * m.head_dim * kv_elem_bytes;
}

}  // namespace fleetsim
