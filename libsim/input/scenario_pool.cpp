// Scenario files: one pool (device or MIG slice, model, dtypes, engine, fleet, autoscaler, cold
// start) and whether it fits in memory.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <tuple>
#include <vector>

#include "base/error.hpp"
#include "catalog/capacity.hpp"
#include "catalog/catalog.hpp"
#include "core/mps.hpp"
#include "input/profile.hpp"
#include "input/scenario_internal.hpp"

namespace fleetsim::detail {

namespace {

// Replicas sharing one device of n places (time slicing, MPS) each hold their own weights, runtime
// and activations beside its CUDA contexts: refuse as many as it can hold at once if they cannot fit.
void check_shared_device(const N& node, const PoolSpec& P, const char* key, int n, const char* mechanism,
                         const std::string& who, const char* what) {
  if (P.batching != Batching::continuous)
    node.at(key).fail(std::string(mechanism) + " is modelled for continuous batching", ErrorKind::inconsistent);
  const double fixed = P.capacity.weights_gib + P.capacity.runtime_overhead_gib + P.capacity.activation_gib;
  const int held = std::min(n, std::max(1, P.max_replicas));
  const double need = fixed * held + P.device_context_gib();
  const std::string fewer = fmt::format(" (the pool's most replicas on one device's {} places)", n);
  if (need > P.capacity.device_gib)
    throw InputError(node.at(key).where(),
                     node.at(key).path + ": " +
                         fmt::format("{} {} {:.1f} GiB for their weights, {} alone; {} has {:.1f}{}", held, who, need,
                                     what, P.device.name, P.capacity.device_gib, held < n ? fewer : ""),
                     ErrorKind::does_not_fit);
}

// Whole experts spread over `ranks` devices: vLLM gives the remainder of E / ranks one each to the
// first devices (determine_expert_map, vllm/model_executor/layers/fused_moe/layer.py); SGLang
// asserts that they divide (sglang/srt/layers/moe/fused_moe_triton/layer.py), and TensorRT-LLM is
// taken to, as no run of it with a remainder was found. A device without an expert is refused.
void check_expert_split(const N& eng, const N& at, const ModelSpec& m, int ranks, const std::string& what) {
  const std::string kind = eng.has("kind") ? eng.at("kind").choice({"vllm", "sglang", "trtllm"}) : "vllm";
  if (m.experts < ranks)
    at.fail(m.name + " has " + std::to_string(m.experts) + " experts, fewer than " + what +
                ": some devices would hold none",
            ErrorKind::inconsistent);
  if (m.experts % ranks != 0 && kind != "vllm")
    at.fail(m.name + " has " + std::to_string(m.experts) + " experts, which " + what + " do not divide; " + kind +
                " needs them to (vLLM gives the remainder one each to the first devices)",
            ErrorKind::inconsistent);
}
}  // namespace

PoolSpec build_pool(const N& node, const std::vector<DeviceSpec>& devices, const std::vector<ModelSpec>& models,
                    Source& src) {
  PoolSpec P;
  double whole_usd_per_hour = 0;  // a MIG pool's whole device's price
  {
    std::string why;
    const N dn = node.req("device");
    const DeviceSpec* dev =
        find_named(devices, dn.str(), "device", " (see `fleetsim catalog`, or define it under catalog.devices)", why);
    if (!dev) dn.fail(why);
    P.device = *dev;
    const N mn = node.req("model");
    const ModelSpec* mod =
        find_named(models, mn.str(), "model", " (see `fleetsim catalog`, or define it under catalog.models)", why);
    if (!mod) mn.fail(why);
    P.model = *mod;
    if (node.has("partition")) {
      const N pn = node.at("partition");
      const std::string prof = pn.str();
      std::vector<std::string> profiles;
      const PartitionSpec* part = nullptr;
      for (const auto& p : builtin_partitions())
        if (p.device == P.device.name) {
          profiles.push_back(p.name);
          if (p.name == prof) part = &p;
        }
      if (!part) {
        std::string all;
        for (const auto& x : profiles) all += (all.empty() ? "" : ", ") + x;
        pn.fail("device " + P.device.name + " has no MIG profile '" + prof + "'" +
                    (profiles.empty() ? " (the catalog holds no MIG profiles for this device)"
                                      : " (expected one of: " + all + ")"),
                ErrorKind::inconsistent);
      }
      P.partition = prof;
      P.replicas_per_device = part->per_device;
      whole_usd_per_hour = P.device.usd_per_hour;
      P.device = partition_device(P.device, *part);
    }
    if (node.has("time_slicing")) {
      const N ts = node.at("time_slicing");
      P.time_slicing = int(ts.integer(1, 16));
      if (node.has("partition") && P.time_slicing > 1)
        ts.fail("time_slicing and partition are different ways to share a device: choose one", ErrorKind::inconsistent);
      if (P.time_slicing > 1 && cpu_instance(P.device))
        ts.fail("time slicing shares an NVIDIA GPU between pods; " + P.device.name +
                    " is a CPU instance (run more replicas, or remove time_slicing)",
                ErrorKind::inconsistent);
      if (P.time_slicing > 1) P.replicas_per_device = P.time_slicing;  // 1: no sharing, a MIG slice stays one
    }
    if (node.has("mps")) {  // {clients, active_thread_percentage}, or the clients alone
      const N mn = node.at("mps");
      if (mn.node.IsMap()) {
        mn.allow_keys({"clients", "active_thread_percentage"});
        P.mps_clients = int(mn.req("clients").integer(1, kMaxMpsClients));
        if (mn.has("active_thread_percentage"))
          P.mps_active_thread_percentage = mn.at("active_thread_percentage").num_in(1, 100, "active_thread_percentage");
      } else {
        P.mps_clients = int(mn.integer(1, kMaxMpsClients));
      }
      // (one client with a cap on its threads is MPS too: not on a slice or a time-sliced device)
      const bool capped = mn.node.IsMap() && mn.has("active_thread_percentage");
      if ((P.mps_clients > 1 || capped) && (node.has("partition") || P.time_slicing > 1))
        mn.fail(std::string(node.has("partition") ? "partition" : "time_slicing") +
                    " and mps are different ways to share a device: choose one",
                ErrorKind::inconsistent);
      if ((P.mps_clients > 1 || capped) && cpu_instance(P.device))
        mn.fail("MPS shares an NVIDIA GPU between processes; " + P.device.name +
                    " is a CPU instance (run more replicas, or remove mps)",
                ErrorKind::inconsistent);
      if ((P.mps_clients > 1 || capped) && amd_device(P.device))
        mn.fail("MPS shares an NVIDIA GPU between processes; " + P.device.name +
                    " is an AMD GPU, which has no MPS (use time_slicing, run more replicas, or remove mps)",
                ErrorKind::inconsistent);
      if (P.mps_clients > 1) P.replicas_per_device = P.mps_clients;
    }
  }
  P.weight_dtype = node.has("weight_dtype") ? node.at("weight_dtype").choice(weight_dtypes()) : "bf16";
  P.kv_dtype = node.has("kv_dtype") ? node.at("kv_dtype").choice(kv_dtypes()) : "bf16";
  if (node.has("expert_weight_dtype")) {
    const N ed = node.at("expert_weight_dtype");
    P.expert_weight_dtype = ed.choice(weight_dtypes());
    if (!P.model.moe())
      ed.fail("expert_weight_dtype applies to mixture-of-experts models; " + P.model.name + " has no experts",
              ErrorKind::inconsistent);
  }

  // engine
  const N eng = node.has("engine")
                    ? node.at("engine")
                    : N{YAML::Node(YAML::NodeType::Map), node.path.empty() ? "engine" : node.path + ".engine", &src};
  std::vector<std::string> engine_keys = engine_setting_keys();
  for (const char* k : {"batching",
                        "max_num_seqs",
                        "max_batched_tokens",
                        "gpu_memory_utilization",
                        "kv_block_tokens",
                        "kv_watermark",
                        "runtime_overhead_gib",
                        "activation_gib",
                        "max_batch",
                        "batch_window_s",
                        "perf_model",
                        "mfu",
                        "mbu",
                        "step_overhead_s",
                        "step_base_s",
                        "per_prefill_token_s",
                        "per_decode_seq_s",
                        "per_context_token_s",
                        "on_kv_exhausted",
                        "prefix_caching",
                        "prefix_cache",
                        "lora_adapters",
                        "lora_rank",
                        "lora_step_overhead",
                        "tensor_parallel",
                        "pipeline_parallel",
                        "expert_parallel",
                        "data_parallel",
                        "network_gb_s",
                        "network_latency_us",
                        "enforce_eager",
                        "async_scheduling",
                        "perf_profile",
                        "client_ttft_s",
                        "client_s_per_input_token",
                        "client_s_per_output_token",
                        "latency_at",
                        "host",
                        "cuda_context_gib",
                        "speculative"})
    engine_keys.push_back(k);
  eng.allow_keys(engine_keys);
  // parallelism: a replica of tp x pp devices
  if (eng.has("tensor_parallel")) {
    const N tn = eng.at("tensor_parallel");
    P.tp = int(tn.integer(1, 64));
    const std::string why = tp_problem(P.model, P.tp);
    if (!why.empty()) tn.fail(why + " (vLLM requires it)", ErrorKind::inconsistent);
  }
  if (eng.has("pipeline_parallel")) {
    const N pn = eng.at("pipeline_parallel");
    P.pp = int(pn.integer(1, 64));
    if (P.pp > P.model.layers)
      pn.fail(
          P.model.name + " has " + std::to_string(P.model.layers) + " layers; pipeline_parallel can be at most that",
          ErrorKind::inconsistent);
  }
  if (P.devices() > 1 && (!P.partition.empty() || P.shared_by() > 1))
    (eng.has("tensor_parallel") ? eng.at("tensor_parallel") : eng.at("pipeline_parallel"))
        .fail("a replica spanning devices cannot also share a device (partition, time_slicing or mps)",
              ErrorKind::inconsistent);
  parse_speculative(eng, models, P);
  if (eng.has("expert_parallel")) {
    const N en = eng.at("expert_parallel");
    P.ep = int(en.integer(1, 64));
    if (P.ep > 1 && !P.model.moe())
      en.fail(P.model.name + " has no experts to spread; expert_parallel applies to mixture-of-experts models",
              ErrorKind::inconsistent);
    if (P.ep != 1 && P.ep != P.tp)
      en.fail(
          "expert_parallel spreads the experts over the tensor-parallel group (vLLM's --enable-expert-parallel): "
          "set it to 1 or to tensor_parallel (" +
              std::to_string(P.tp) + ")",
          ErrorKind::inconsistent);
    if (P.ep > 1) check_expert_split(eng, en, P.model, P.ep, "expert_parallel = " + std::to_string(P.ep) + " devices");
  }
  // data-parallel attention (vLLM's --data-parallel-size with --enable-expert-parallel, SGLang's
  // --enable-dp-attention): each replica is one rank with its own scheduler, queue and KV cache; the
  // ranks of an engine share the routed experts, spread over all of their devices
  if (eng.has("data_parallel")) {
    const N dn = eng.at("data_parallel");
    P.dp = int(dn.integer(1, 64));
    if (P.dp > 1) {
      if (!P.model.moe())
        dn.fail(P.model.name +
                    " has no experts to share: data_parallel applies to mixture-of-experts models (DP attention "
                    "with expert parallelism); ranks of a dense model are plain replicas (fleet.replicas)",
                ErrorKind::inconsistent);
      if (P.pp > 1)
        dn.fail("data_parallel with pipeline_parallel above 1 is not modelled (set pipeline_parallel: 1)",
                ErrorKind::inconsistent);
      if (!P.partition.empty() || P.shared_by() > 1)
        dn.fail(
            "data_parallel ranks share experts spread over all of their devices, so they cannot also share a "
            "device (partition, time_slicing or mps)",
            ErrorKind::inconsistent);
      if (eng.has("expert_parallel") && P.ep != P.tp)
        eng.at("expert_parallel")
            .fail(
                "data_parallel spreads the experts over every rank with expert parallelism: set expert_parallel "
                "to tensor_parallel (" +
                    std::to_string(P.tp) + "), or leave it out",
                ErrorKind::inconsistent);
      P.ep = P.tp;
      check_expert_split(eng, dn, P.model, P.tp * P.dp,
                         "data_parallel x tensor_parallel = " + std::to_string(P.tp * P.dp) + " devices");
    }
  }
  // the host CPU stage: no defaults for the cores or the tokenizer's speed, which depend on the
  // serving stack and the CPU (docs/model.md, "The host CPU")
  if (eng.has("host")) {
    const N h = eng.at("host");
    h.allow_keys({"cores", "tokenize_s_per_token", "per_request_s", "detokenize_s_per_token"});
    P.host.cores = int32_t(h.req("cores").integer(1, 256));
    P.host.tokenize_s_per_token = h.req("tokenize_s_per_token").num_in(0, 1);
    P.host.per_request_s = h.has("per_request_s") ? h.at("per_request_s").num_in(0, 60) : 0.0;
    P.host.detokenize_s_per_token = h.has("detokenize_s_per_token") ? h.at("detokenize_s_per_token").num_in(0, 1) : 0.0;
    if (!(P.host.tokenize_s_per_token + P.host.per_request_s > 0))
      h.at("tokenize_s_per_token")
          .fail("a host stage with no work: set tokenize_s_per_token or per_request_s > 0, or drop engine.host",
                ErrorKind::inconsistent);
  }
  if (eng.has("network_gb_s")) P.network_gb_s = eng.at("network_gb_s").pos(1e5);
  if (eng.has("network_latency_us")) P.network_latency_us = eng.at("network_latency_us").num_in(0, 1e6);
  if (eng.has("lora_adapters")) P.lora_adapters = int(eng.at("lora_adapters").integer(0, 10000));
  if (eng.has("lora_rank")) P.lora_rank = int(eng.at("lora_rank").integer(1, 4096));
  if (eng.has("lora_step_overhead")) P.lora_step_overhead = eng.at("lora_step_overhead").num_in(0, 10);
  if (eng.has("prefix_caching")) P.prefix_caching = eng.at("prefix_caching").boolean();
  parse_prefix_cache(eng, P);
  P.crash_on_kv_exhausted =
      eng.has("on_kv_exhausted") && eng.at("on_kv_exhausted").choice({"preempt", "crash"}) == "crash";
  if (P.crash_on_kv_exhausted && P.dp > 1)
    eng.at("on_kv_exhausted")
        .fail("crash would restart one rank; a data-parallel engine's ranks fail together (use preempt)",
              ErrorKind::inconsistent);
  P.batching = eng.has("batching") && eng.at("batching").choice({"continuous", "static"}) == "static"
                   ? Batching::fixed_batch
                   : Batching::continuous;
  read_engine_settings(eng, P);
  P.kv_watermark = eng.has("kv_watermark") ? eng.at("kv_watermark").num_in(0, 0.5, "kv_watermark") : 0.01;
  P.runtime_overhead_gib = eng.has("runtime_overhead_gib") ? eng.at("runtime_overhead_gib").num_in(0, 1e4) : -1;
  // a CPU instance runs eager whatever the scenario says: there are no CUDA graphs to capture
  P.enforce_eager = (eng.has("enforce_eager") && eng.at("enforce_eager").boolean()) || cpu_instance(P.device);
  // vLLM schedules a step ahead by default since 0.14.0; SGLang's and TensorRT-LLM's profiles were
  // fitted on runs replayed without it (docs/model.md, "Scheduling ahead")
  P.async_scheduling =
      eng.has("async_scheduling") ? eng.at("async_scheduling").boolean() : P.engine_kind == EngineKind::vllm;
  P.activation_gib = eng.has("activation_gib") ? eng.at("activation_gib").num_in(0, 1e4) : -1;
  P.cuda_context_gib = eng.has("cuda_context_gib") ? eng.at("cuda_context_gib").num_in(0, 64) : 0.0;
  if (P.cuda_context_gib > 0 && cpu_instance(P.device))
    eng.at("cuda_context_gib")
        .fail("a CUDA context takes a GPU's memory; " + P.device.name + " is a CPU instance (remove cuda_context_gib)",
              ErrorKind::inconsistent);
  P.max_batch = eng.has("max_batch") ? int(eng.at("max_batch").integer(1, 16384)) : 8;
  P.batch_window_s = eng.has("batch_window_s") ? eng.at("batch_window_s").num_in(0, 3600) : 0.05;
  if (P.batching == Batching::continuous) {
    if (eng.has("max_batch") || eng.has("batch_window_s"))
      (eng.has("max_batch") ? eng.at("max_batch") : eng.at("batch_window_s"))
          .fail("max_batch and batch_window_s apply to static batching only (set engine.batching: static)",
                ErrorKind::inconsistent);
    if (P.max_batched_tokens < P.max_num_seqs)
      (eng.has("max_batched_tokens") ? eng.at("max_batched_tokens") : eng)
          .fail("max_batched_tokens (" + std::to_string(P.max_batched_tokens) + ") must be >= max_num_seqs (" +
                    std::to_string(P.max_num_seqs) + "): every running sequence needs a token of the step budget",
                ErrorKind::inconsistent);
  }
  // the step-time model: a calibrated profile (named, or the shipped one for this device, model,
  // tp and dtype when the scenario leaves it open), else the physics coefficients fitted on every
  // device (docs/model.md, "Physics step time"); the roofline or a linear model where asked for
  const std::string pm =
      eng.has("perf_model") ? eng.at("perf_model").choice({"physics", "roofline", "linear", "calibrated"}) : "";
  const std::string pp_name = eng.has("perf_profile") ? eng.at("perf_profile").str() : "";
  if (eng.has("perf_profile") && pp_name.empty())
    eng.at("perf_profile").fail("expected a profile's name or file, auto or none, not an empty string");
  // `none` and `auto` name no profile, so they sit with any model (a --set of perf_model on a
  // scenario that names a profile needs perf_profile=none beside it, and says so)
  if (!pp_name.empty() && pp_name != "none" && pp_name != "auto" && pm != "" && pm != "calibrated")
    eng.at("perf_profile")
        .fail("perf_profile " + pp_name + " belongs to perf_model: calibrated (drop perf_model: " + pm +
                  ", or set perf_profile: none for the " + pm + " model)",
              ErrorKind::inconsistent);
  const bool explicit_roofline_knobs = eng.has("mfu") || eng.has("mbu") || eng.has("step_overhead_s");
  // a shared device (MIG, time slicing, MPS) and a CPU instance keep the roofline unless asked:
  // the physics coefficients were fitted on whole GPUs
  const bool whole_gpu = P.partition.empty() && P.shared_by() == 1 && !cpu_instance(P.device);
  const bool open_choice = pm.empty() && (pp_name.empty() || pp_name == "auto") && !explicit_roofline_knobs;
  const PerfProfile* shipped = nullptr;
  if (pm == "calibrated" || (open_choice && whole_gpu))
    shipped =
        P.pp == 1 && P.ep == 1 && P.dp == 1
            ? find_builtin_profile(P.device.name, P.model.name, P.tp, P.weight_dtype, engine_kind_name(P.engine_kind))
            : nullptr;
  if (!pp_name.empty() && pp_name != "auto" && pp_name != "none") {
    try {
      P.profile = std::make_shared<PerfProfile>(load_profile(pp_name, src.base_dir));
      if (P.profile->origin != "builtin") src.files_read.push_back(P.profile->origin);
    } catch (const InputError& e) {
      // an error inside the profile file is located there; one about the name, at the name
      if (e.where().line > 0)
        throw InputError(e.where(), std::string(e.what()) + " (in the profile engine.perf_profile names)", e.kind());
      eng.at("perf_profile").fail(e.what(), e.kind());
    }
    if (!P.profile->device.empty() && P.profile->device != P.device.name)
      eng.at("perf_profile")
          .fail("profile " + P.profile->name + " was fitted on " + P.profile->device + ", not " + P.device.name +
                    ": a profile carries to other models, not to other devices (set engine.perf_profile=auto for "
                    "a shipped profile of " +
                    P.device.name + " where one fits, else the physics model, or none for the roofline)",
                ErrorKind::inconsistent);
  } else if (pp_name != "none" && shipped) {
    P.profile = std::make_shared<PerfProfile>(*shipped);
  } else if (pm == "calibrated") {
    (eng.has("perf_profile") ? eng.at("perf_profile") : eng.at("perf_model"))
        .fail("no shipped profile for " + P.device.name + " (" + P.model.name + ", tp " + std::to_string(P.tp) + ", " +
                  P.weight_dtype + " weights" + (P.pp > 1 || P.ep > 1 || P.dp > 1 ? ", pp, ep or dp above 1" : "") +
                  "): name a profile file written by `fleetsim fit`, or use perf_model: physics",
              ErrorKind::inconsistent);
  } else if (pm == "physics" || (open_choice && whole_gpu && pp_name != "none")) {
    if (pm == "physics" && cpu_instance(P.device))
      eng.at("perf_model")
          .fail("the physics coefficients were fitted on GPUs; " + P.device.name +
                    " is a CPU instance (use perf_model: roofline, or a profile fitted on it with `fleetsim fit`)",
                ErrorKind::inconsistent);
    if (!(P.device.bf16_tflops > 0 && P.device.bandwidth_gb_s > 0))
      (eng.has("perf_model") ? eng.at("perf_model") : eng)
          .fail("the physics model needs the device's bf16_tflops and bandwidth_gb_s; " + P.device.name + " lacks " +
                    (P.device.bf16_tflops > 0 ? "bandwidth_gb_s" : "bf16_tflops") +
                    " (give it in the catalog, or use perf_model: linear)",
                ErrorKind::inconsistent);
    P.profile = std::make_shared<PerfProfile>(physics_profile());
  }
  P.perf_model = P.profile ? PerfKind::calibrated : pm == "linear" ? PerfKind::linear : PerfKind::roofline;
  if (P.profile && explicit_roofline_knobs)
    eng.at(eng.has("mfu")   ? "mfu"
           : eng.has("mbu") ? "mbu"
                            : "step_overhead_s")
        .fail(
            "mfu, mbu and step_overhead_s belong to perf_model: roofline, not to a calibrated profile "
            "(add perf_model: roofline)",
            ErrorKind::inconsistent);
  read_client_time(eng, P);
  if (P.perf_model == PerfKind::calibrated) {
    for (const char* k : {"step_base_s", "per_prefill_token_s", "per_decode_seq_s", "per_context_token_s"})
      if (eng.has(k)) eng.at(k).fail(std::string(k) + " belongs to perf_model: linear", ErrorKind::inconsistent);
  } else if (P.perf_model == PerfKind::roofline) {
    for (const char* k : {"step_base_s", "per_prefill_token_s", "per_decode_seq_s", "per_context_token_s"})
      if (eng.has(k)) eng.at(k).fail(std::string(k) + " belongs to perf_model: linear", ErrorKind::inconsistent);
    // below a thousandth of peak no engine runs; such values only make steps last for ever
    P.mfu = eng.has("mfu") ? eng.at("mfu").num_in(0.001, 1.0, "mfu") : 0.5;
    P.mbu = eng.has("mbu") ? eng.at("mbu").num_in(0.001, 1.0, "mbu") : 0.8;
    P.step_overhead_s = eng.has("step_overhead_s") ? eng.at("step_overhead_s").num_in(0, 60) : 0.002;
  } else {
    for (const char* k : {"mfu", "mbu", "step_overhead_s"})
      if (eng.has(k)) eng.at(k).fail(std::string(k) + " belongs to perf_model: roofline", ErrorKind::inconsistent);
    P.step_base_s = eng.req("step_base_s").num_in(0, 60);
    P.per_prefill_token_s = eng.has("per_prefill_token_s") ? eng.at("per_prefill_token_s").num_in(0, 60) : 0;
    P.per_decode_seq_s = eng.has("per_decode_seq_s") ? eng.at("per_decode_seq_s").num_in(0, 60) : 0;
    P.per_context_token_s = eng.has("per_context_token_s") ? eng.at("per_context_token_s").num_in(0, 60) : 0;
    if (!(P.step_base_s + P.per_prefill_token_s + P.per_decode_seq_s > 0))
      eng.at("step_base_s").fail("a linear step-time model needs step_base_s > 0 or per-token costs > 0");
  }

  // fleet
  const N fl = node.req("fleet");
  fl.allow_keys({"replicas", "router", "queue_limit", "usd_per_hour", "headroom_replicas", "autoscale", "cold_start",
                 "pricing", "failures", "nodes", "faults", "thermal"});
  if (fl.has("pricing")) {
    const N pr = fl.at("pricing");
    pr.allow_keys({"spot", "committed_replicas", "committed_discount", "owned", "colocated", "billing"});
    if (pr.has("billing")) P.node_billing = pr.at("billing").choice({"device", "node"}) == "node";
    if (pr.has("spot")) {
      const N sp = pr.at("spot");
      sp.allow_keys({"discount", "interruptions_per_hour"});
      P.spot_discount = sp.req("discount").num_in(0, 0.99, "discount");
      P.spot_interruptions_per_hour = sp.req("interruptions_per_hour").num_in(0, 100, "interruptions_per_hour");
    }
    P.committed_replicas = pr.has("committed_replicas") ? int(pr.at("committed_replicas").integer(0, 4096)) : 0;
    P.committed_discount =
        pr.has("committed_discount") ? pr.at("committed_discount").num_in(0, 0.99, "committed_discount") : 0.0;
    if (pr.has("committed_discount") && !pr.has("committed_replicas"))
      pr.at("committed_discount").fail("committed_discount needs committed_replicas", ErrorKind::inconsistent);
    if (pr.has("owned") && pr.has("colocated"))
      pr.at("colocated").fail("a pool's devices are owned or colocated, not both: choose one", ErrorKind::inconsistent);
    for (const char* kind : {"owned", "colocated"})
      if (pr.has(kind)) {
        for (const char* other : {"spot", "committed_replicas"})
          if (pr.has(other))
            pr.at(other).fail(std::string(other) + " is rented capacity; this pool's devices are " + kind +
                                  " (replicas beyond " + kind + ".replicas are rented on demand)",
                              ErrorKind::inconsistent);
        // devices bought come in whole nodes: billed by the node, whatever billing would say
        if (pr.has("billing") && !P.node_billing)
          pr.at("billing").fail(std::string(kind[0] == 'o' ? "an " : "a ") + kind +
                                    " pool is paid for by the whole node (" + kind +
                                    ".node_capex_usd): billing: device does not apply; remove it",
                                ErrorKind::inconsistent);
        parse_ownership(pr.at(kind), kind, P, devices);
      }
  }
  if (fl.has("nodes")) {
    const N nd = fl.at("nodes");
    nd.allow_keys({"scale_down_unneeded_s", "pinned", "max_nodes", "scale_down_order"});
    if (!fl.has("autoscale") || !P.node_billing || P.ownership.owned())
      nd.fail(
          "fleet.nodes is the cluster autoscaler's side of an autoscaled pool billed by the node: it needs "
          "fleet.autoscale and pricing.billing: node",
          ErrorKind::inconsistent);
    if (nd.has("scale_down_unneeded_s")) P.node_unneeded_s = nd.at("scale_down_unneeded_s").num_in(0, 86400);
    if (nd.has("pinned")) P.pinned_nodes = int(nd.at("pinned").integer(0, 4096));
    if (nd.has("max_nodes")) P.max_nodes = int(nd.at("max_nodes").integer(1, 4096));
    if (nd.has("scale_down_order"))
      P.empty_nodes_first =
          nd.at("scale_down_order").choice({"replicaset", "empty_nodes_first"}) == "empty_nodes_first";
  }
  parse_faults(fl, P);
  const bool scaled = fl.has("autoscale");
  P.replicas = fl.has("replicas") || !scaled ? int(fl.req("replicas").integer(scaled ? 0 : 1, 4096)) : -1;
  P.min_replicas = P.max_replicas = P.replicas;
  P.headroom_replicas = fl.has("headroom_replicas") ? int(fl.at("headroom_replicas").integer(0, 4096)) : 0;
  if (scaled) parse_autoscale(fl, P);
  if (P.dp > 1) {
    // the ranks of one engine start, stop and fail together: no per-replica autoscaler or failure
    for (const char* k : {"autoscale", "failures"})
      if (fl.has(k))
        fl.at(k).fail(std::string("fleet.") + k +
                          " acts on single replicas; the ranks of a data-parallel engine start and fail together, "
                          "which is not modelled (drop fleet." +
                          k + ", or data_parallel)",
                      ErrorKind::inconsistent);
    if (P.spot_interruptions_per_hour > 0)
      fl.at("pricing")
          .at("spot")
          .at("interruptions_per_hour")
          .fail(
              "spot interruptions take single replicas; the ranks of a data-parallel engine fail together, which "
              "is not modelled (set interruptions_per_hour: 0, or drop data_parallel)",
              ErrorKind::inconsistent);
    if (P.replicas % P.dp != 0)
      fl.at("replicas")
          .fail("with data_parallel " + std::to_string(P.dp) +
                    " a replica is one rank: replicas must be a multiple of " + std::to_string(P.dp) + " (" +
                    std::to_string(P.replicas) + " is not)",
                ErrorKind::inconsistent);
  }
  // cold start: defaults from the seeds' figures (a new node, a 10-20 GB image, weights from object storage)
  {
    ColdStartParams& c = P.cold;
    const N cs =
        fl.has("cold_start") ? fl.at("cold_start") : N{YAML::Node(YAML::NodeType::Map), fl.path + ".cold_start", &src};
    cs.allow_keys({"provision_s", "image_pull_s", "download_gb_s", "cache_hit_probability", "cache_gb_s", "load_gb_s",
                   "warmup_s"});
    // a stage is a number of seconds, or {median, p99} for a lognormal spread
    auto stage = [&](const char* key, double dflt, double& median, double& sigma) {
      median = dflt;
      sigma = 0.0;
      if (!cs.has(key)) return;
      const N st = cs.at(key);
      if (st.node.IsMap()) {
        st.allow_keys({"median", "p99"});
        median = st.req("median").pos(86400);
        const double p99 = st.req("p99").pos(86400 * 10);
        if (p99 < median) st.at("p99").fail("p99 must be >= median", ErrorKind::inconsistent);
        sigma = std::log(p99 / median) / 2.326;
      } else {
        median = st.num_in(0, 86400);
      }
    };
    stage("provision_s", 120.0, c.provision_s, c.provision_sigma);
    stage("image_pull_s", 60.0, c.image_pull_s, c.image_pull_sigma);
    c.download_bytes_per_s = (cs.has("download_gb_s") ? cs.at("download_gb_s").pos(1e4) : 0.5) * 1e9;
    c.cache_hit_probability = cs.has("cache_hit_probability") ? cs.at("cache_hit_probability").num_in(0, 1) : 0.0;
    c.cache_bytes_per_s = (cs.has("cache_gb_s") ? cs.at("cache_gb_s").pos(1e4) : 2.0) * 1e9;
    c.load_bytes_per_s = (cs.has("load_gb_s") ? cs.at("load_gb_s").pos(1e4) : 5.0) * 1e9;
    stage("warmup_s", 30.0, c.warmup_s, c.warmup_sigma);
    // a node fetches the whole checkpoint (vLLM downloads every weight file once per node, under a
    // file lock: download_weights_from_hf, vllm/model_executor/model_loader/weight_utils.py), and
    // each device of a replica then loads its own shard, all at once
    c.fetch_bytes = P.devices() > 1 || P.model.moe()
                        ? weight_bytes(P.model, weight_dtype_bytes(P.weight_dtype),
                                       P.expert_weight_dtype.empty() ? -1.0 : weight_dtype_bytes(P.expert_weight_dtype))
                        : P.model.params_b * 1e9 * weight_dtype_bytes(P.weight_dtype);
    c.weights_bytes = c.fetch_bytes / P.devices();
  }
  if (fl.has("router")) {
    const std::string r = fl.at("router").choice(
        {"round_robin", "least_outstanding", "central_queue", "session_affinity", "prefix_aware"});
    P.router = r == "round_robin"        ? Router::round_robin
               : r == "central_queue"    ? Router::central_queue
               : r == "session_affinity" ? Router::session_affinity
               : r == "prefix_aware"     ? Router::prefix_aware
                                         : Router::least_outstanding;
    if (P.router == Router::prefix_aware && !P.cache_per_replica)
      fl.at("router").fail(
          "prefix_aware routes by what each replica's prefix cache holds: it needs engine.prefix_cache: {scope: "
          "replica}",
          ErrorKind::inconsistent);
    // vLLM's and SGLang's DP attention give each rank its own waiting queue behind a router
    if (P.router == Router::central_queue && P.dp > 1)
      fl.at("router").fail(
          "central_queue shares one queue between replicas, but the ranks of a data-parallel engine each keep "
          "their own (vLLM's and SGLang's DP attention): use least_outstanding or round_robin, or drop "
          "data_parallel",
          ErrorKind::inconsistent);
  }
  P.queue_limit = fl.has("queue_limit") ? int(fl.at("queue_limit").integer(1, 1000000)) : 1024;
  P.usd_per_hour = fl.has("usd_per_hour") ? fl.at("usd_per_hour").num_in(0, 1e5) : P.device.usd_per_hour;
  // MIG slices on nodes paid by the node: each carries its share of its device's places (by compute,
  // four 1g.20gb slices would pay 4/7 of a device paid whole)
  if (P.node_billing && !P.ownership.owned() && !P.partition.empty() && !fl.has("usd_per_hour"))
    P.usd_per_hour = whole_usd_per_hour / P.replicas_per_device;

  // memory: the hard boundary
  MemoryInputs mi;
  mi.device = P.device;
  mi.model = P.model;
  mi.weight_bytes_per_param = weight_dtype_bytes(P.weight_dtype);
  mi.kv_elem_bytes = kv_dtype_bytes(P.kv_dtype);
  mi.engine = P.engine_kind;
  mi.gpu_memory_utilization = P.gpu_memory_utilization;
  // resident adapters take memory too (sharded like the weights)
  mi.runtime_overhead_gib = P.runtime_overhead_gib;
  mi.adapter_gib = P.lora_gib_per_device();
  mi.enforce_eager = P.enforce_eager;
  mi.activation_gib = P.activation_gib;
  mi.max_batched_tokens = P.max_batched_tokens;
  mi.max_num_seqs = P.batching == Batching::continuous ? P.max_num_seqs : P.max_batch;
  mi.kv_block_tokens = P.kv_block_tokens;
  mi.tp = P.tp;
  mi.pp = P.pp;
  mi.dp = P.dp;
  mi.ep = P.ep;
  if (!P.expert_weight_dtype.empty()) mi.expert_weight_bytes_per_param = weight_dtype_bytes(P.expert_weight_dtype);
  if (P.spec_tokens > 0) {
    mi.has_draft = true;
    mi.draft = P.spec_draft;
  }
  size_pool_memory(P, mi);
  if (P.capacity.fits) finish_engine_settings(P);
  if (!P.capacity.fits) refuse_not_fitting(node, P, mi);
  if (P.time_slicing > 1)
    check_shared_device(
        node, P, "time_slicing", P.time_slicing, "time slicing",
        fmt::format("time-sliced replicas of {} need", P.model.name),
        P.cuda_context_gib > 0 ? "runtimes, CUDA contexts and activations" : "runtimes and activations");
  if (P.mps_clients > 1)
    check_shared_device(node, P, "mps", P.mps_clients, "MPS", fmt::format("MPS clients of {} need", P.model.name),
                        "runtimes, activations and the server's CUDA context");
  finish_ownership(node, P);
  return P;
}

}  // namespace fleetsim::detail
