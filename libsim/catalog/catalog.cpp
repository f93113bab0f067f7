#include "catalog/catalog.hpp"

#include <initializer_list>

namespace fleetsim {

namespace {
// Board power at full load (docs/catalog.md, "Power") and the mesh links, kept apart from the rows
// so each stays readable.
std::vector<DeviceSpec> with_power(std::vector<DeviceSpec> d) {
  const std::pair<const char*, double> tdp[] = {{"h100-sxm-80gb", 700},  {"h200-141gb", 700},
                                                {"a100-80gb", 400},      {"a100-40gb", 400},
                                                {"l40s-48gb", 350},      {"l4-24gb", 72},
                                                {"a10g-24gb", 300},      {"t4-16gb", 70},
                                                {"mi300x-192gb", 750},   {"b200-180gb", 1000},
                                                {"h100-pcie-80gb", 350}, {"h100-nvl-94gb", 400},
                                                {"mi325x-256gb", 1000},  {"rtx-pro-6000-96gb", 600},
                                                {"rtx-3090-24gb", 350},  {"rtx-4090-24gb", 450}};
  for (auto& x : d) {
    for (const auto& [name, w] : tdp)
      if (x.name == name) x.tdp_w = w;
    // MI300X and MI325X platforms join their 8 devices by 7 direct Infinity Fabric links each
    x.link_mesh = x.name == "mi300x-192gb" || x.name == "mi325x-256gb";
  }
  return d;
}
}  // namespace

// Sources and the meaning of each figure: docs/catalog.md.
const std::vector<DeviceSpec>& builtin_devices() {
  // name, memory GiB, bandwidth GB/s, BF16 / FP8 TFLOP/s, $/h, notes, FP4 TFLOP/s,
  // interconnect, link GB/s (one direction), link latency us, link domain, PCIe GB/s, devices per node
  static const std::vector<DeviceSpec> d = with_power({
      {"h100-sxm-80gb", 79.22, 3350, 989.4, 1978.9, 3.00, "NVIDIA H100 SXM5 80GB HBM3", 0, "NVLink 4 via NVSwitch", 450,
       8, 8, 64, 8},
      {"h200-141gb", 139.8, 4800, 989.4, 1978.9, 3.80, "NVIDIA H200 SXM 141GB HBM3e", 0, "NVLink 4 via NVSwitch", 450,
       8, 8, 64, 8},
      {"a100-80gb", 79.15, 2039, 312.0, 0.0, 1.80, "NVIDIA A100 SXM4 80GB HBM2e", 0, "NVLink 3 via NVSwitch", 300, 8, 8,
       32, 8},
      {"a100-40gb", 39.39, 1555, 312.0, 0.0, 1.30, "NVIDIA A100 SXM4 40GB HBM2", 0, "NVLink 3 via NVSwitch", 300, 8, 8,
       32, 8},
      {"l40s-48gb", 44.39, 864, 362.1, 733.0, 1.00, "NVIDIA L40S 48GB GDDR6 (ECC on)", 0, "PCIe Gen4 x16", 32, 25, 8,
       32, 8},
      {"l4-24gb", 22.03, 300, 121.0, 242.5, 0.80, "NVIDIA L4 24GB GDDR6", 0, "PCIe Gen4 x16", 32, 25, 8, 32, 8},
      {"a10g-24gb", 21.99, 600, 70.0, 0.0, 1.01, "NVIDIA A10G 24GB GDDR6 (AWS g5)", 0, "PCIe Gen4 x16", 32, 25, 8, 32,
       8},
      {"t4-16gb", 14.58, 320, 65.0, 0.0, 0.53, "NVIDIA T4 16GB GDDR6; FP16 tensor figure (no BF16)", 0, "PCIe Gen3 x16",
       16, 25, 8, 16, 8},
      {"mi300x-192gb", 191.5, 5300, 1307.4, 2614.9, 2.50, "AMD Instinct MI300X 192GB HBM3", 0,
       "Infinity Fabric, fully connected", 448, 10, 8, 64, 8},
      {"b200-180gb", 178.4, 8000, 2250.0, 4500.0, 5.00, "NVIDIA B200 (HGX) 180GB HBM3e", 9000.0,
       "NVLink 5 via NVSwitch", 900, 8, 8, 64, 8},
      {"h100-pcie-80gb", 79.22, 2000, 756.0, 1513.0, 2.20, "NVIDIA H100 PCIe 80GB HBM2e", 0, "PCIe Gen5 x16", 64, 25, 8,
       64, 8},
      {"h100-nvl-94gb", 93.1, 3900, 835.0, 1670.0, 2.60, "NVIDIA H100 NVL 94GB HBM3 (NVLink-bridged pairs)", 0,
       "NVLink 4 bridge (pairs)", 300, 8, 2, 64, 8},
      {"mi325x-256gb", 255.98, 6000, 1307.4, 2614.9, 2.20, "AMD Instinct MI325X 256GB HBM3e", 0,
       "Infinity Fabric, fully connected", 448, 10, 8, 64, 8},
      {"rtx-pro-6000-96gb", 94.97, 1597, 500.0, 1000.0, 1.50, "NVIDIA RTX PRO 6000 Blackwell Server Edition 96GB GDDR7",
       2000.0, "PCIe Gen5 x16", 64, 25, 8, 64, 8},
      {"rtx-3090-24gb", 23.58, 936, 71.0, 0.0, 0.22,
       "NVIDIA GeForce RTX 3090 24GB GDDR6X; BF16 tensor figure with FP32 accumulate", 0, "PCIe Gen4 x16", 32, 25, 8,
       32, 8},
      {"rtx-4090-24gb", 23.55, 1008, 165.2, 330.3, 0.35,
       "NVIDIA GeForce RTX 4090 24GB GDDR6X; tensor figures with FP32 accumulate", 0, "PCIe Gen4 x16", 32, 25, 8, 32,
       8},
      // CPU instances: memory is the instance's RAM, bandwidth its cores' share of the socket's
      // DRAM channels, BF16 cores x clock x FLOPs per cycle (docs/catalog.md, "CPU instances").
      // One instance is one "device": no scale-up link, and a replica spanning instances uses the network.
      {"c7i-8xlarge-amx", 64, 102.4, 39.3, 0.0, 1.428,
       "AWS c7i.8xlarge: 16 cores of a Xeon Platinum 8488C (Sapphire Rapids), AMX BF16", 0, "none (CPU instance)", 0, 0,
       1, 0, 1},
      {"c7i-2xlarge-amx", 16, 25.6, 9.8, 0.0, 0.357,
       "AWS c7i.2xlarge: 4 cores of a Xeon Platinum 8488C (Sapphire Rapids), AMX BF16", 0, "none (CPU instance)", 0, 0,
       1, 0, 1},
      {"c6i-8xlarge-avx512", 64, 102.4, 2.97, 0.0, 1.36,
       "AWS c6i.8xlarge: 16 cores of a Xeon Platinum 8375C (Ice Lake), AVX-512 FP32 only (no BF16 or matrix unit)", 0,
       "none (CPU instance)", 0, 0, 1, 0, 1},
  });
  return d;
}

namespace {
bool named(const DeviceSpec& d, std::initializer_list<const char*> names) {
  for (const char* n : names)
    if (d.name == n) return true;
  return false;
}
}  // namespace

bool amd_device(const DeviceSpec& d) { return named(d, {"mi300x-192gb", "mi325x-256gb"}); }

bool cpu_instance(const DeviceSpec& d) {
  return named(d, {"c7i-8xlarge-amx", "c7i-2xlarge-amx", "c6i-8xlarge-avx512"});
}

// NVIDIA MIG profiles (MIG user guide, "Supported MIG Profiles"): compute in sevenths, memory in eighths.
const std::vector<PartitionSpec>& builtin_partitions() {
  static const std::vector<PartitionSpec> p = {
      {"h100-sxm-80gb", "1g.10gb", 1, 1, 7}, {"h100-sxm-80gb", "1g.20gb", 1, 2, 4},
      {"h100-sxm-80gb", "2g.20gb", 2, 2, 3}, {"h100-sxm-80gb", "3g.40gb", 3, 4, 2},
      {"h100-sxm-80gb", "4g.40gb", 4, 4, 1}, {"h100-sxm-80gb", "7g.80gb", 7, 8, 1},
      {"h200-141gb", "1g.18gb", 1, 1, 7},    {"h200-141gb", "1g.35gb", 1, 2, 4},
      {"h200-141gb", "2g.35gb", 2, 2, 3},    {"h200-141gb", "3g.71gb", 3, 4, 2},
      {"h200-141gb", "4g.71gb", 4, 4, 1},    {"h200-141gb", "7g.141gb", 7, 8, 1},
      {"a100-80gb", "1g.10gb", 1, 1, 7},     {"a100-80gb", "1g.20gb", 1, 2, 4},
      {"a100-80gb", "2g.20gb", 2, 2, 3},     {"a100-80gb", "3g.40gb", 3, 4, 2},
      {"a100-80gb", "4g.40gb", 4, 4, 1},     {"a100-80gb", "7g.80gb", 7, 8, 1},
      {"a100-40gb", "1g.5gb", 1, 1, 7},      {"a100-40gb", "1g.10gb", 1, 2, 4},
      {"a100-40gb", "2g.10gb", 2, 2, 3},     {"a100-40gb", "3g.20gb", 3, 4, 2},
      {"a100-40gb", "4g.20gb", 4, 4, 1},     {"a100-40gb", "7g.40gb", 7, 8, 1},
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
  // Dense models: name, kind, params (B), layers, hidden, heads, kv_heads, head_dim, intermediate,
  // vocab, max_context, notes. MoE, MLA and sliding-window fields follow where a model has them.
  // Every figure is from the model's config.json (docs/catalog.md names each).
  static const std::vector<ModelSpec> m = [] {
    std::vector<ModelSpec> v = {
        {"llama-3.1-8b", ModelKind::generate, 8.03, 32, 4096, 32, 8, 128, 14336, 128256, 131072, "Meta Llama 3.1 8B"},
        {"llama-3.1-70b", ModelKind::generate, 70.55, 80, 8192, 64, 8, 128, 28672, 128256, 131072,
         "Meta Llama 3.1 70B"},
        {"llama-3.2-1b", ModelKind::generate, 1.24, 16, 2048, 32, 8, 64, 8192, 128256, 131072, "Meta Llama 3.2 1B"},
        {"mistral-7b", ModelKind::generate, 7.25, 32, 4096, 32, 8, 128, 14336, 32768, 32768, "Mistral 7B v0.3"},
        {"qwen2.5-7b", ModelKind::generate, 7.62, 28, 3584, 28, 4, 128, 18944, 152064, 32768, "Qwen2.5 7B"},
        {"qwen2.5-72b", ModelKind::generate, 72.71, 80, 8192, 64, 8, 128, 29568, 152064, 32768, "Qwen2.5 72B"},
        {"bge-large-en-v1.5", ModelKind::embed, 0.335, 24, 1024, 16, 16, 64, 4096, 30522, 512,
         "BAAI bge-large-en-v1.5 embedding model (BERT-large encoder)"},
        {"bge-reranker-v2-m3", ModelKind::score, 0.568, 24, 1024, 16, 16, 64, 4096, 250002, 8192,
         "BAAI bge-reranker-v2-m3 cross-encoder reranker (XLM-RoBERTa-large)"},
        {"llama-3.1-405b", ModelKind::generate, 405.85, 126, 16384, 128, 8, 128, 53248, 128256, 131072,
         "Meta Llama 3.1 405B"},
        {"llama-3.3-70b", ModelKind::generate, 70.55, 80, 8192, 64, 8, 128, 28672, 128256, 131072,
         "Meta Llama 3.3 70B Instruct"},
        {"qwen3-32b", ModelKind::generate, 32.76, 64, 5120, 64, 8, 128, 25600, 151936, 40960, "Qwen3 32B"},
        {"qwen3-14b", ModelKind::generate, 14.77, 40, 5120, 40, 8, 128, 17408, 151936, 40960, "Qwen3 14B"},
        {"llama-2-7b", ModelKind::generate, 6.74, 32, 4096, 32, 32, 128, 11008, 32000, 4096, "Meta Llama 2 7B"},
        {"llama-2-70b", ModelKind::generate, 68.98, 80, 8192, 64, 8, 128, 28672, 32000, 4096, "Meta Llama 2 70B"},
        {"codellama-34b", ModelKind::generate, 33.74, 48, 8192, 64, 8, 128, 22016, 32000, 16384,
         "Code Llama 34B Instruct"},
        {"qwen2.5-32b", ModelKind::generate, 32.76, 64, 5120, 40, 8, 128, 27648, 152064, 131072, "Qwen2.5 32B"},
        {"deepseek-r1-distill-qwen-14b", ModelKind::generate, 14.77, 48, 5120, 40, 8, 128, 13824, 152064, 131072,
         "DeepSeek-R1-Distill-Qwen-14B (Qwen2.5 14B architecture)"},
        {"deepseek-coder-6.7b", ModelKind::generate, 6.74, 32, 4096, 32, 32, 128, 11008, 32256, 16384,
         "DeepSeek Coder 6.7B (Llama architecture, full multi-head attention)"},
        {"mistral-nemo-12b", ModelKind::generate, 12.25, 40, 5120, 32, 8, 128, 14336, 131072, 1024000,
         "Mistral NeMo 12B Instruct 2407"},
        {"yi-34b", ModelKind::generate, 34.39, 60, 7168, 56, 8, 128, 20480, 64000, 4096, "01.AI Yi 34B"},
    };
    ModelSpec qwen3_small{"qwen3-0.6b",
                          ModelKind::generate,
                          0.596,
                          28,
                          1024,
                          16,
                          8,
                          128,
                          3072,
                          151936,
                          40960,
                          "Qwen3 0.6B (input embedding shared with the LM head)"};
    qwen3_small.tied_embeddings = true;
    v.push_back(qwen3_small);
    // Llama 3.2 1B's LM head is its input embedding too (`tie_word_embeddings: true`)
    for (auto& x : v)
      if (x.name == "llama-3.2-1b") x.tied_embeddings = true;
    auto moe = [](ModelSpec x, int experts, int per_token, int shared, int expert_inter, int dense_layers) {
      x.experts = experts;
      x.experts_per_token = per_token;
      x.shared_experts = shared;
      x.expert_intermediate = expert_inter;
      x.dense_layers = dense_layers;
      return x;
    };
    v.push_back(moe({"mixtral-8x7b", ModelKind::generate, 46.70, 32, 4096, 32, 8, 128, 14336, 32000, 32768,
                     "Mistral Mixtral 8x7B v0.1 (MoE, 8 experts, top-2)"},
                    8, 2, 0, 14336, 0));
    v.push_back(moe({"mixtral-8x22b", ModelKind::generate, 140.63, 56, 6144, 48, 8, 128, 16384, 32768, 65536,
                     "Mistral Mixtral 8x22B v0.1 (MoE, 8 experts, top-2)"},
                    8, 2, 0, 16384, 0));
    v.push_back(moe({"llama-4-scout-17b-16e", ModelKind::generate, 107.77, 48, 5120, 40, 8, 128, 16384, 202048,
                     10485760, "Meta Llama 4 Scout 17B-16E, text model (MoE, 16 experts, top-1, 1 shared)"},
                    16, 1, 1, 8192, 0));
    v.push_back(moe({"qwen3-30b-a3b", ModelKind::generate, 30.53, 48, 2048, 32, 4, 128, 6144, 151936, 40960,
                     "Qwen3-30B-A3B (MoE, 128 experts, top-8)"},
                    128, 8, 0, 768, 0));
    v.push_back(moe({"qwen3-235b-a22b", ModelKind::generate, 235.09, 94, 4096, 64, 4, 128, 12288, 151936, 40960,
                     "Qwen3-235B-A22B (MoE, 128 experts, top-8)"},
                    128, 8, 0, 1536, 0));
    // gpt-oss: every other layer attends to a 128-token sliding window
    auto alternating_window = [](ModelSpec x) {
      x.sliding_window = 128;
      x.sliding_layers = x.layers / 2;
      return x;
    };
    v.push_back(
        alternating_window(moe({"gpt-oss-20b", ModelKind::generate, 20.91, 24, 2880, 64, 8, 64, 2880, 201088, 131072,
                                "OpenAI gpt-oss-20b (MoE, 32 experts, top-4; alternating 128-token sliding window)"},
                               32, 4, 0, 2880, 0)));
    v.push_back(
        alternating_window(moe({"gpt-oss-120b", ModelKind::generate, 116.83, 36, 2880, 64, 8, 64, 2880, 201088, 131072,
                                "OpenAI gpt-oss-120b (MoE, 128 experts, top-4; alternating 128-token sliding window)"},
                               128, 4, 0, 2880, 0)));
    ModelSpec ds = moe({"deepseek-v3", ModelKind::generate, 671.03, 61, 7168, 128, 128, 128, 18432, 129280, 163840,
                        "DeepSeek-V3 (MoE, 256 routed + 1 shared expert, top-8; MLA)"},
                       256, 8, 1, 2048, 3);
    ds.kv_lora_rank = 512;
    ds.rope_head_dim = 64;
    v.push_back(ds);
    return v;
  }();
  return m;
}

double ModelSpec::routed_expert_params() const {
  return moe() ? double(moe_layers()) * experts * 3.0 * double(hidden) * double(expert_intermediate) : 0.0;
}

double ModelSpec::active_params() const {
  const double total = params_b * 1e9;
  if (!moe()) return total;
  return total - routed_expert_params() * (1.0 - double(experts_per_token) / double(experts));
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
  if (t == "nvfp4") return 0.5625;   // 4-bit values and one FP8 scale per 16
  if (t == "mxfp4") return 0.53125;  // 4-bit values and one 8-bit scale per 32
  return 0.0;
}

double kv_dtype_bytes(const std::string& t) {
  if (t == "bf16" || t == "fp16") return 2.0;
  if (t == "fp8" || t == "int8") return 1.0;
  return 0.0;
}

const std::vector<std::string>& weight_dtypes() {
  static const std::vector<std::string> v = {"bf16", "fp16", "fp8", "int8", "int4", "nvfp4", "mxfp4"};
  return v;
}
const std::vector<std::string>& kv_dtypes() {
  static const std::vector<std::string> v = {"bf16", "fp16", "fp8", "int8"};
  return v;
}

double kv_bytes_per_token(const ModelSpec& m, double kv_elem_bytes) {
  const int layers = m.full_attention_layers();
  if (m.mla()) return double(layers) * (m.kv_lora_rank + m.rope_head_dim) * kv_elem_bytes;
  return 2.0 * layers * m.kv_heads * m.head_dim * kv_elem_bytes;
}

namespace {
int stage_layers(int layers, int pp) { return (layers + pp - 1) / pp; }
double kv_heads_per_rank(const ModelSpec& m, int tp) { return m.kv_heads >= tp ? double(m.kv_heads) / tp : 1.0; }
}  // namespace

double kv_bytes_per_token_per_device(const ModelSpec& m, double kv_elem_bytes, int tp, int pp) {
  if (tp == 1 && pp == 1) return kv_bytes_per_token(m, kv_elem_bytes);
  const int layers = stage_layers(m.full_attention_layers(), pp);
  if (m.mla()) return double(layers) * (m.kv_lora_rank + m.rope_head_dim) * kv_elem_bytes;
  return 2.0 * layers * kv_heads_per_rank(m, tp) * m.head_dim * kv_elem_bytes;
}

double window_kv_bytes_per_seq_per_device(const ModelSpec& m, double kv_elem_bytes, int tp, int pp) {
  if (m.sliding_layers == 0) return 0.0;
  const int layers = stage_layers(m.sliding_layers, pp);
  return 2.0 * layers * kv_heads_per_rank(m, tp) * m.head_dim * kv_elem_bytes * m.sliding_window;
}

std::string tp_problem(const ModelSpec& m, int tp) {
  if (tp <= 1) return "";
  if (m.heads % tp != 0)
    return m.name + " has " + std::to_string(m.heads) + " attention heads, which tp=" + std::to_string(tp) +
           " does not divide";
  if (!m.mla() && m.kv_heads % tp != 0 && tp % m.kv_heads != 0)
    return m.name + " has " + std::to_string(m.kv_heads) + " KV heads; tp=" + std::to_string(tp) +
           " must divide them or be a multiple of them";
  // column-parallel MLP layers split their intermediate size evenly (vLLM's divide() asserts it)
  if (m.intermediate > 0 && m.intermediate % tp != 0)
    return m.name + " has an MLP intermediate size of " + std::to_string(m.intermediate) +
           ", which tp=" + std::to_string(tp) + " does not divide";
  return "";
}

}  // namespace fleetsim
