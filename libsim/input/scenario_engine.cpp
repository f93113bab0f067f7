// engine.kind and what it decides: each engine's memory fraction, scheduling limits and KV block
// size under its own names, and the defaults taken where the scenario says nothing (reported as
// assumed). Sources of the defaults: docs/model.md, "Engines".
#include <algorithm>
#include <cmath>
#include <optional>
#include <string>

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
double sglang_mem_fraction_static(double mib, int tp, int pp) {
  double reserved = 512 + std::max(sglang_chunk(mib), 2048) * 1.5 + sglang_cuda_graph_max_bs(mib, tp) * 2.0 +
                    double(tp * pp) / 8.0 * 1024;
  if (mib > 60 * 1024) reserved = std::max(reserved, 10.0 * 1024);
  return std::round((mib - reserved) / mib * 1000.0) / 1000.0;
}

EngineDefaults defaults_of(EngineKind k, const PoolSpec& P) {
  const double mib = P.device.memory_gib * 1024.0;
  switch (k) {
    case EngineKind::sglang:
      // running requests: derived from the KV pool once it is sized (finish_engine_settings); a
      // step's budget is the prefill chunk plus one token per running request (SGLang's chunk
      // limits prefill tokens only)
      return {"mem_fraction_static",
              sglang_mem_fraction_static(mib, P.tp, P.pp),
              "max_running_requests",
              4096,
              "chunked_prefill_size",
              sglang_chunk(mib),
              "page_size",
              1};
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
  if (const auto n = setting(d.block_key, generic.block_key, "KV block size"))
    P.kv_block_tokens = int(n->integer(1, 1024));
  else
    P.kv_block_tokens = d.block;
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

}  // namespace fleetsim::detail
