#include "report/documents.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <memory>
#include <thread>

#include "backend/runner.hpp"
#include "base/error.hpp"
#include "catalog/catalog.hpp"
#include "cost/refresh.hpp"
#include "report/timeline.hpp"

namespace fleetsim {

CapacityAnswer capacity_document(const CapacityRequest& o) {
  // the ranges the CLI's flags and the Python module check before they get here, for every client
  auto in_range = [](const char* flag, double v, double lo, double hi) {
    if (v >= lo && v <= hi) return;
    throw InputError(Location{flag, 0, 0, ""},
                     fmt::format("{} {:g}: expected a number in [{:g}, {:g}]", flag, v, lo, hi));
  };
  if (o.context != 0) in_range("--context", double(o.context), 1, double(int64_t(1) << 24));  // 0: the default
  in_range("--tp", o.tp, 1, 64);
  in_range("--pp", o.pp, 1, 64);
  in_range("--gpu-memory-utilization", o.gpu_memory_utilization, 0.01, 1.0);
  in_range("--max-num-seqs", o.max_num_seqs, 1, 16384);
  in_range("--max-batched-tokens", o.max_batched_tokens, 16, 1 << 20);
  in_range("--kv-block-tokens", o.kv_block_tokens, 1, 1024);
  std::string why;
  const DeviceSpec* dev = find_named(builtin_devices(), o.device, "device", " (see `fleetsim catalog`)", why);
  if (!dev) throw InputError(Location{"--device", 0, 0, ""}, why);
  const ModelSpec* mod = find_named(builtin_models(), o.model, "model", " (see `fleetsim catalog`)", why);
  if (!mod) throw InputError(Location{"--model", 0, 0, ""}, why);
  auto one_of = [](const std::string& v, const std::vector<std::string>& all, const char* flag) {
    if (std::find(all.begin(), all.end(), v) != all.end()) return;
    std::string list;
    for (const auto& x : all) list += (list.empty() ? "" : ", ") + x;
    throw InputError(Location{flag, 0, 0, ""},
                     fmt::format("{}: unknown dtype '{}' (expected one of: {})", flag, v, list));
  };
  one_of(o.weight_dtype, weight_dtypes(), "--weight-dtype");
  one_of(o.kv_dtype, kv_dtypes(), "--kv-dtype");
  if (!o.expert_weight_dtype.empty()) one_of(o.expert_weight_dtype, weight_dtypes(), "--expert-weight-dtype");
  MemoryInputs mi;
  mi.device = *dev;
  mi.model = *mod;
  mi.weight_bytes_per_param = weight_dtype_bytes(o.weight_dtype);
  mi.kv_elem_bytes = kv_dtype_bytes(o.kv_dtype);
  mi.gpu_memory_utilization = o.gpu_memory_utilization;
  mi.max_batched_tokens = o.max_batched_tokens;
  mi.max_num_seqs = o.max_num_seqs;
  mi.kv_block_tokens = o.kv_block_tokens;
  mi.enforce_eager = o.enforce_eager || cpu_instance(*dev);  // a CPU captures no CUDA graphs
  mi.tp = o.tp;
  mi.pp = o.pp;
  const std::string tp_why = tp_problem(*mod, o.tp);
  if (!tp_why.empty())
    throw InputError(Location{"--tp", 0, 0, ""}, tp_why + " (vLLM requires it)", ErrorKind::inconsistent);
  if (o.pp > mod->layers)
    throw InputError(Location{"--pp", 0, 0, ""},
                     fmt::format("{} has {} layers; --pp can be at most that", mod->name, mod->layers),
                     ErrorKind::inconsistent);
  if (!o.expert_weight_dtype.empty()) {
    if (!mod->moe())
      throw InputError(Location{"--expert-weight-dtype", 0, 0, ""}, mod->name + " has no experts",
                       ErrorKind::inconsistent);
    mi.expert_weight_bytes_per_param = weight_dtype_bytes(o.expert_weight_dtype);
  }
  // as a scenario's engine would be refused (scenario_pool.cpp), and a request no server takes
  if (o.max_batched_tokens < o.max_num_seqs)
    throw InputError(
        Location{"--max-batched-tokens", 0, 0, ""},
        fmt::format("--max-batched-tokens ({}) must be >= --max-num-seqs ({}): every running sequence needs "
                    "a token of the step budget",
                    o.max_batched_tokens, o.max_num_seqs),
        ErrorKind::inconsistent);
  const int64_t context = o.context > 0          ? o.context
                          : mod->max_context > 0 ? std::min<int64_t>(4096, mod->max_context)
                                                 : 4096;
  if (mod->max_context > 0 && context > mod->max_context)
    throw InputError(Location{"--context", 0, 0, ""},
                     fmt::format("{} tokens is more than {}'s context window ({} tokens): a server refuses "
                                 "such a request",
                                 context, mod->name, mod->max_context),
                     ErrorKind::inconsistent);
  // fits: the weights and one request of the context (a server refuses to start where its longest
  // request cannot fit: vLLM's KV check at startup)
  Capacity c = compute_capacity(mi);
  c.fits = c.fits && max_concurrent(c, context, o.kv_block_tokens) >= 1;
  c.needed_gib = needed_gib_at(c, context, o.kv_block_tokens);
  const int tp_fits = smallest_fitting_tp(mi, context);
  Json j;
  j["schema_version"] = kSchemaVersion;
  j["kind"] = "capacity";
  j["model"] = mod->name;
  j["device"] = dev->name;
  j["weight_dtype"] = o.weight_dtype;
  j["kv_dtype"] = o.kv_dtype;
  // every input that moves the answer, so that a saved answer says what it answered
  if (!o.expert_weight_dtype.empty()) j["expert_weight_dtype"] = o.expert_weight_dtype;
  j["gpu_memory_utilization"] = o.gpu_memory_utilization;
  j["max_num_seqs"] = o.max_num_seqs;
  j["max_batched_tokens"] = o.max_batched_tokens;
  j["enforce_eager"] = o.enforce_eager;
  j["tensor_parallel"] = o.tp;
  j["pipeline_parallel"] = o.pp;
  j["fits"] = c.fits;
  j["needed_gib"] = c.needed_gib;
  j["smallest_fitting_tp"] = tp_fits > 0 ? Json(tp_fits) : Json(nullptr);
  j["capacity"] = capacity_json(c, context, o.kv_block_tokens);
  return {j, c, tp_fits};
}

Json catalog_document() {
  Json j;
  j["schema_version"] = kSchemaVersion;
  j["kind"] = "catalog";
  Json devs = Json::array(), mods = Json::array();
  for (const auto& d : builtin_devices())
    devs.push_back({{"name", d.name},
                    {"memory_gib", d.memory_gib},
                    {"bandwidth_gb_s", d.bandwidth_gb_s},
                    {"bf16_tflops", d.bf16_tflops},
                    {"fp8_tflops", d.fp8_tflops},
                    {"fp4_tflops", d.fp4_tflops},
                    {"usd_per_hour", d.usd_per_hour},
                    {"interconnect", d.interconnect},
                    {"link_gb_s", d.link_gb_s},
                    {"link_latency_us", d.link_latency_us},
                    {"link_domain", d.link_domain},
                    {"link_mesh", d.link_mesh},
                    {"pcie_gb_s", d.pcie_gb_s},
                    {"devices_per_node", d.devices_per_node},
                    {"notes", d.notes}});
  for (const auto& m : builtin_models())
    mods.push_back({{"name", m.name},
                    {"kind", model_kind_name(m.kind)},
                    {"params_b", m.params_b},
                    {"layers", m.layers},
                    {"hidden", m.hidden},
                    {"heads", m.heads},
                    {"kv_heads", m.kv_heads},
                    {"head_dim", m.head_dim},
                    {"intermediate", m.intermediate},
                    {"vocab", m.vocab},
                    {"max_context", m.max_context},
                    {"kv_bytes_per_token_bf16", kv_bytes_per_token(m, 2.0)},
                    {"experts", m.experts},
                    {"experts_per_token", m.experts_per_token},
                    {"shared_experts", m.shared_experts},
                    {"expert_intermediate", m.expert_intermediate},
                    {"dense_layers", m.dense_layers},
                    {"active_params_b", m.active_params() / 1e9},
                    {"kv_lora_rank", m.kv_lora_rank},
                    {"rope_head_dim", m.rope_head_dim},
                    {"sliding_window", m.sliding_window},
                    {"sliding_layers", m.sliding_layers},
                    {"notes", m.notes}});
  j["devices"] = devs;
  j["models"] = mods;
  return j;
}

Json run_document(const ScenarioSource& src, const Scenario& s, uint32_t replication, int timeline) {
  check_newer_fleets(src, s);
  auto t = std::make_unique<Tally>();
  Json windows;
  if (timeline == 1 || (timeline < 0 && wants_timeline(s))) {  // the run and its timeline from one simulation
    windows = run_timeline(s, 60, int(std::max(1u, std::thread::hardware_concurrency())), replication, t.get());
  } else {
    HostWorkspace ws;
    t = simulate_once(s.params(), replication, ws);
    check_status(*t, s.source);
  }
  Json r = run_report(s, *t);
  add_newer_device_views(r, src, s, *t, replication);
  if (!windows.is_null()) r["timeline"] = std::move(windows);
  return r;
}

}  // namespace fleetsim
