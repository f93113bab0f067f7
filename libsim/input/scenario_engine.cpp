// engine.kind and what it decides: each engine's memory fraction, scheduling limits and KV block
// size under its own names, and the defaults taken where the scenario says nothing (reported as
// assumed). Sources of the defaults: docs/model.md, "Engines".
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <sstream>
#include <string>
#include <tuple>

#include "input/scenario_internal.hpp"

namespace fleetsim::detail {

namespace {

struct EngineDefaults {
  const char* fraction_key;  // the engine's name for its memory fraction
  double fraction;
  const char* seqs_key;  // running sequences
  int seqs;
  const char* tokens_key;  // tokens per step
  int tokens;
  const char* block_key;  // KV block (page) size in tokens
  int block;
};

// SGLang sizes its defaults by the device's memory (MiB) and tp x pp: python/sglang/srt/server_args.py
// at sgl-project/sglang 5c8bd8b5 (v0.5.6.post2), lines 752-889.
int sglang_chunk(double mib) {
  return mib < 35 * 1024 ? 2048 : mib < 60 * 1024 ? 4096 : mib < 160 * 1024 ? 8192 : 16384;
}
int sglang_cuda_graph_max_bs(double mib, int tp) {
  if (mib < 20 * 1024) return 8;
  if (mib < 35 * 1024) return tp < 4 ? 24 : 80;
  if (mib < 60 * 1024) return tp < 4 ? 32 : 160;
  if (mib < 160 * 1024) return tp < 4 ? 256 : 512;
  return 512;
}
// MiB SGLang keeps out of its static fraction (_handle_gpu_memory_settings): the prefill chunk's
// activations, CUDA graphs, the parallel group's buffers, data-parallel attention's padding, and a
// speculative draft's model and graphs. tp_size is SGLang's (every device of the engine: tp x dp
// with data-parallel attention); spec is 0 (none), 1 (heads: EAGLE) or 2 (a draft model:
// STANDALONE).
double sglang_reserved_mib(double mib, int tp_size, int pp, int chunk, int dp, int spec) {
  const double graphs_bs = sglang_cuda_graph_max_bs(mib, tp_size);
  double reserved = 512 + std::max(chunk, 2048) * 1.5 + graphs_bs * 2.0 + double(tp_size * pp) / 8.0 * 1024;
  if (dp > 1) reserved += graphs_bs * dp * (graphs_bs > 300 ? 4.5 : 3.0);
  if (mib > 60 * 1024) reserved = std::max(reserved, 10.0 * 1024);
  return reserved + (spec == 2 ? 6 * 1024 : spec == 1 ? 2 * 1024 : 0);
}

// SGLang's default memory fraction for pool P at tensor-parallel degree tp, its chunk as set
double sglang_mem_fraction_static(const PoolSpec& P, int tp) {
  const double mib = P.device.memory_gib * 1024.0;
  const int spec = P.spec_tokens == 0 ? 0 : P.spec_heads > 0 ? 1 : 2;
  const double reserved = sglang_reserved_mib(mib, tp * P.dp, P.pp, P.max_batched_tokens - P.max_num_seqs, P.dp, spec);
  return std::round((mib - reserved) / mib * 1000.0) / 1000.0;
}

EngineDefaults defaults_of(EngineKind k, const PoolSpec& P) {
  const double mib = P.device.memory_gib * 1024.0;
  switch (k) {
    case EngineKind::sglang:
      // running requests: derived from the KV pool once it is sized (finish_engine_settings); a
      // step's budget is the prefill chunk plus one token per running request (SGLang's chunk
      // limits prefill tokens only); the memory fraction once the chunk is known
      // (read_engine_settings)
      return {"mem_fraction_static", 0.0, "max_running_requests", 4096, "chunked_prefill_size", sglang_chunk(mib),
              "page_size",           1};
    case EngineKind::trtllm:
      // tensorrt_llm/llmapi/llm_args.py (BaseLlmArgs, KvCacheConfig) at NVIDIA/TensorRT-LLM 00043967
      return {"free_gpu_memory_fraction", 0.9, "max_batch_size", 2048, "max_num_tokens", 8192, "tokens_per_block", 32};
    default:
      return {"gpu_memory_utilization", 0.9, "max_num_seqs", 256, "max_batched_tokens", 8192, "kv_block_tokens", 16};
  }
}

}  // namespace

const std::vector<std::string>& engine_setting_keys() {
  static const std::vector<std::string> k = {"kind",
                                             "mem_fraction_static",
                                             "max_running_requests",
                                             "chunked_prefill_size",
                                             "page_size",
                                             "free_gpu_memory_fraction",
                                             "max_batch_size",
                                             "max_num_tokens",
                                             "tokens_per_block"};
  return k;
}

void read_engine_settings(const N& eng, PoolSpec& P) {
  P.engine_kind = EngineKind::vllm;
  if (eng.has("kind")) {
    const std::string k = eng.at("kind").choice({"vllm", "sglang", "trtllm"});
    P.engine_kind = k == "sglang" ? EngineKind::sglang : k == "trtllm" ? EngineKind::trtllm : EngineKind::vllm;
  }
  const EngineDefaults d = defaults_of(P.engine_kind, P);
  const EngineDefaults generic = defaults_of(EngineKind::vllm, P);
  const char* kind = engine_kind_name(P.engine_kind);
  // each setting under the engine's own name, or fleetsim's (vLLM's) name; never another engine's
  auto setting = [&](const char* own, const char* common, const char* what) -> std::optional<N> {
    for (EngineKind other : {EngineKind::vllm, EngineKind::sglang, EngineKind::trtllm}) {
      if (other == P.engine_kind || other == EngineKind::vllm) continue;
      const EngineDefaults o = defaults_of(other, P);
      for (const char* key : {o.fraction_key, o.seqs_key, o.tokens_key, o.block_key})
        if (eng.has(key) && std::string(key) != own)
          eng.at(key).fail(
              std::string(key) + " is " + engine_kind_name(other) + "'s setting; this pool's engine is " + kind +
                  (P.engine_kind == EngineKind::vllm
                       ? " (set engine.kind: " + std::string(engine_kind_name(other)) + " to run it as that engine)"
                       : ""),
              ErrorKind::inconsistent);
    }
    const bool has_own = std::string(own) != common && eng.has(own);
    if (has_own && eng.has(common))
      eng.at(common).fail(std::string(common) + " and " + own + " are the same " + what + " under two names: give one",
                          ErrorKind::inconsistent);
    if (has_own) return eng.at(own);
    if (eng.has(common)) {
      // vLLM's memory fraction means something else to the other engines: say which key they read
      if (std::string(common) == "gpu_memory_utilization" && P.engine_kind != EngineKind::vllm)
        eng.at(common).fail(std::string(kind) + " sizes its memory with " + own +
                                " (a different rule: docs/model.md, \"Engines\"), not gpu_memory_utilization",
                            ErrorKind::inconsistent);
      return eng.at(common);
    }
    P.engine_assumed.push_back(own);
    return std::nullopt;
  };
  if (const auto n = setting(d.fraction_key, generic.fraction_key, "memory fraction"))
    P.gpu_memory_utilization = n->pos(1.0);
  else
    P.gpu_memory_utilization = d.fraction;
  if (const auto n = setting(d.seqs_key, generic.seqs_key, "limit on running sequences"))
    P.max_num_seqs = int(n->integer(1, 16384));
  else
    P.max_num_seqs = d.seqs;
  if (const auto n = setting(d.tokens_key, generic.tokens_key, "limit on tokens per step"))
    P.max_batched_tokens = int(n->integer(16, 1 << 20));
  else
    P.max_batched_tokens = d.tokens;
  if (P.engine_kind == EngineKind::sglang) P.max_batched_tokens += P.max_num_seqs;
  if (P.engine_kind == EngineKind::sglang &&
      std::find(P.engine_assumed.begin(), P.engine_assumed.end(), "mem_fraction_static") != P.engine_assumed.end()) {
    P.gpu_memory_utilization = sglang_mem_fraction_static(P, P.tp);
    if (!(P.gpu_memory_utilization > 0)) {
      const double mib = P.device.memory_gib * 1024.0;
      (eng.has("kind") ? eng.at("kind") : eng)
          .fail(fmt::format("SGLang sets aside {:.1f} GiB of {}'s {:.1f} GiB outside its static memory (the prefill "
                            "chunk's activations, CUDA graphs, its parallel and speculative buffers), which leaves "
                            "mem_fraction_static {:g}: set engine.mem_fraction_static, a smaller "
                            "chunked_prefill_size, or use a larger device",
                            (1.0 - P.gpu_memory_utilization) * mib / 1024.0, P.device.name, mib / 1024.0,
                            P.gpu_memory_utilization),
                ErrorKind::does_not_fit);
    }
  }
  if (const auto n = setting(d.block_key, generic.block_key, "KV block size"))
    P.kv_block_tokens = int(n->integer(1, 1024));
  else
    P.kv_block_tokens = d.block;
}

// What the client measures beyond the engine (docs/model.md, "What the client measures"): the
// scenario's keys, else the step profile's. Read after engine.host.
void read_client_time(const N& eng, PoolSpec& P) {
  if (eng.has("client_ttft_s"))
    P.client_ttft_s = eng.at("client_ttft_s").num_in(0, 60);
  else if (P.profile)
    P.client_ttft_s = P.profile->c.client_ttft_s;
  // a host stage that tokenizes (detokenizes) is where that time goes: the profile's per-token
  // client time for it would count it twice (a key given here is the scenario's own)
  const bool host_tok = P.host.cores > 0 && P.host.tokenize_s_per_token > 0;
  const bool host_detok = P.host.cores > 0 && P.host.detokenize_s_per_token > 0;
  for (auto [key, field, from] : {std::tuple{"client_s_per_input_token", &P.client_s_per_input_token,
                                             P.profile && !host_tok ? P.profile->c.client_s_per_input_token : 0.0},
                                  std::tuple{"client_s_per_output_token", &P.client_s_per_output_token,
                                             P.profile && !host_detok ? P.profile->c.client_s_per_output_token : 0.0}})
    *field = eng.has(key) ? eng.at(key).num_in(0, 1) : from;
  P.engine_side = eng.has("latency_at") && eng.at("latency_at").choice({"client", "engine"}) == "engine";
}

bool derives_running_requests(const PoolSpec& P) {
  return P.engine_kind == EngineKind::sglang &&
         std::find(P.engine_assumed.begin(), P.engine_assumed.end(), "max_running_requests") != P.engine_assumed.end();
}

int derived_running_requests(const PoolSpec& P, const Capacity& c) {
  // SGLang: min(KV tokens / 2, its request pool: KV tokens / context length x 512, within
  // [2048, 4096]) (model_runner.py#L1672-1681, tp_worker.py#L292-300 at 5c8bd8b5)
  const double tokens = double(c.kv_capacity_tokens);
  const double pool = std::clamp(tokens / std::max(1, P.model.max_context) * 512.0, 2048.0, 4096.0);
  return int(std::max(1.0, std::min(std::floor(tokens / 2), pool)));
}

void finish_engine_settings(PoolSpec& P) {
  if (!derives_running_requests(P)) return;
  const int seqs = derived_running_requests(P, P.capacity);
  P.max_batched_tokens += seqs - P.max_num_seqs;
  P.max_num_seqs = seqs;
}

// The pool's memory sized: SGLang sizes its running requests from the KV pool, which the
// sampler's buffers for that many requests can squeeze: size them with the count it derives, to a
// fixed point (none of them at first where the placeholder leaves no room).
void size_pool_memory(PoolSpec& P, MemoryInputs& mi) {
  P.capacity = compute_capacity(mi);
  if (!derives_running_requests(P)) return;
  int seqs = mi.max_num_seqs;
  for (int round = 0; round < 8; ++round) {
    const int next = P.capacity.fits ? derived_running_requests(P, P.capacity) : 1;
    if (next == seqs) break;
    mi.max_batched_tokens += next - seqs;
    mi.max_num_seqs = seqs = next;
    P.capacity = compute_capacity(mi);
  }
}

// The smallest tensor-parallel degree at which this pool fits, each degree sized as the pool
// would be at it: SGLang's default memory fraction falls as tp grows, and its running requests
// follow the KV pool (0: none up to 64).
int smallest_fitting_pool_tp(const PoolSpec& P, const MemoryInputs& mi) {
  const bool default_fraction =
      P.engine_kind == EngineKind::sglang &&
      std::find(P.engine_assumed.begin(), P.engine_assumed.end(), "mem_fraction_static") != P.engine_assumed.end();
  for (int tp = std::max(1, smallest_fitting_tp(mi)); tp >= 1 && tp <= 64; ++tp) {
    if (!tp_problem(P.model, tp).empty()) continue;
    PoolSpec x = P;
    MemoryInputs m = mi;
    x.tp = m.tp = tp;
    if (default_fraction) x.gpu_memory_utilization = m.gpu_memory_utilization = sglang_mem_fraction_static(P, tp);
    size_pool_memory(x, m);
    if (x.capacity.fits) return tp;
  }
  return 0;
}

// A pool whose weights, runtime and one KV block do not fit its device: what it needs and what the
// device offers, the tensor-parallel degree at which it would fit, and the key to change.
void refuse_not_fitting(const N& node, const PoolSpec& P, const MemoryInputs& mi) {
  std::ostringstream o;
  o.setf(std::ios::fixed);
  o.precision(1);
  const int tp_fits = P.partition.empty() && P.shared_by() == 1 ? smallest_fitting_pool_tp(P, mi) : 0;
  // a draft model's weights are named apart
  const double draft_gib = mi.has_draft ? P.capacity.draft_gib : 0.0;
  o << "model " << P.model.name << " (" << P.weight_dtype << ")"
    << (mi.has_draft ? " with its speculative draft " + P.spec_draft.name : std::string()) << " does not fit on "
    << P.device.name;
  if (P.devices() > 1) o << " at tensor_parallel " << P.tp << " x pipeline_parallel " << P.pp;
  o << ": it needs " << P.capacity.needed_gib << " GiB" << (P.devices() > 1 ? " per device" : "") << " (weights "
    << P.capacity.weights_gib;
  if (mi.has_draft) o << ", of which the draft's " << draft_gib;
  o << " + runtime " << P.capacity.runtime_overhead_gib << " + activations " << P.capacity.activation_gib
    << " + one KV block), ";
  if (P.engine_kind == EngineKind::trtllm)  // the fraction is of what the weights leave, not of the device
    o << "the device has " << P.capacity.device_gib << " GiB (the KV cache takes free_gpu_memory_fraction "
      << fmt::format("{:g}", P.gpu_memory_utilization) << " of what is free after the weights); ";
  else
    o << "the device offers " << P.capacity.usable_gib << " GiB (" << P.capacity.device_gib << " GiB x "
      << engine_fraction_key(P.engine_kind) << " " << fmt::format("{:g}", P.gpu_memory_utilization) << "); ";
  if (tp_fits > P.tp)
    o << "it fits at engine.tensor_parallel: " << tp_fits << " (" << tp_fits * P.pp << " devices per replica), or ";
  // LoRA adapters are held beside the weights (their memory is in the runtime above): named where
  // loading none would make it fit
  if (mi.adapter_gib > 0 && P.capacity.needed_gib - mi.adapter_gib <= P.capacity.usable_gib)
    o << "try fewer engine.lora_adapters or a smaller engine.lora_rank (" << P.lora_adapters << " at rank "
      << P.lora_rank << (P.lora_adapters == 1 ? " takes " : " take ") << mi.adapter_gib
      << " GiB per device of the runtime), a larger device, or a smaller weight_dtype";
  else
    o << "try a larger device, a smaller weight_dtype, or fewer max_batched_tokens";
  // (a draft heavier than its target was refused before: engine.speculative)
  const N at = node.at("model");
  throw InputError(at.where(), at.path + ": " + o.str(), ErrorKind::does_not_fit);
}

}  // namespace fleetsim::detail
