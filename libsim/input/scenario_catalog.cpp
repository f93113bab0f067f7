// Scenario files: the catalog section, devices and models merged into the built-in catalog.
#include <fmt/format.h>

#include <string>
#include <type_traits>
#include <vector>

#include "base/error.hpp"
#include "catalog/catalog.hpp"
#include "input/scenario_internal.hpp"

namespace fleetsim::detail {

namespace {

DeviceSpec parse_device(const N& n, const DeviceSpec* base, const std::string& name) {
  n.allow_keys({"memory_gib", "bandwidth_gb_s", "bf16_tflops", "fp8_tflops", "fp4_tflops", "usd_per_hour", "notes",
                "interconnect", "link_gb_s", "link_latency_us", "link_domain", "link_mesh", "pcie_gb_s",
                "devices_per_node", "tdp_w"});
  DeviceSpec d = base ? *base : DeviceSpec{};
  d.name = name;
  auto field = [&](const char* key, double& out, double hi, bool allow_zero) {
    if (n.has(key))
      out = allow_zero ? n.at(key).num_in(0, hi) : n.at(key).pos(hi);
    else if (!base)
      n.fail(std::string("new device '") + name + "' needs '" + key + "'");
  };
  field("memory_gib", d.memory_gib, 1e5, false);
  field("bandwidth_gb_s", d.bandwidth_gb_s, 1e6, false);
  field("bf16_tflops", d.bf16_tflops, 1e6, false);
  if (n.has("fp8_tflops")) d.fp8_tflops = n.at("fp8_tflops").num_in(0, 1e6);
  if (n.has("fp4_tflops")) d.fp4_tflops = n.at("fp4_tflops").num_in(0, 1e7);
  field("usd_per_hour", d.usd_per_hour, 1e5, true);
  if (n.has("notes")) d.notes = n.at("notes").str();
  // interconnect: a new device without a scale-up link talks over PCIe (Gen4 x16 by default)
  if (!base) {
    d.interconnect = "PCIe";
    d.pcie_gb_s = d.link_gb_s = 32;
    d.link_latency_us = 25;
    d.link_domain = d.devices_per_node = 8;
  }
  if (n.has("interconnect")) d.interconnect = n.at("interconnect").str();
  if (n.has("pcie_gb_s")) d.pcie_gb_s = n.at("pcie_gb_s").pos(1e5);
  if (n.has("link_gb_s"))
    d.link_gb_s = n.at("link_gb_s").pos(1e5);
  else if (!base && n.has("pcie_gb_s"))
    d.link_gb_s = d.pcie_gb_s;
  if (n.has("link_latency_us")) d.link_latency_us = n.at("link_latency_us").num_in(0, 1e6);
  if (n.has("devices_per_node")) d.devices_per_node = int(n.at("devices_per_node").integer(1, 1024));
  if (n.has("tdp_w")) d.tdp_w = n.at("tdp_w").num_in(0, 100000);
  if (n.has("link_domain")) d.link_domain = int(n.at("link_domain").integer(1, 100000));
  if (n.has("link_mesh")) d.link_mesh = n.at("link_mesh").boolean();
  return d;
}

ModelSpec parse_model(const N& n, const ModelSpec* base, const std::string& name) {
  n.allow_keys({"kind",
                "params_b",
                "layers",
                "hidden",
                "heads",
                "kv_heads",
                "head_dim",
                "intermediate",
                "vocab",
                "max_context",
                "notes",
                "experts",
                "experts_per_token",
                "shared_experts",
                "expert_intermediate",
                "dense_layers",
                "kv_lora_rank",
                "rope_head_dim",
                "sliding_window",
                "sliding_layers",
                "tied_embeddings"});
  ModelSpec m = base ? *base : ModelSpec{};
  m.name = name;
  if (n.has("kind")) {
    const std::string k = n.at("kind").choice({"generate", "embed", "score"});
    m.kind = k == "generate" ? ModelKind::generate : k == "embed" ? ModelKind::embed : ModelKind::score;
  }
  if (n.has("params_b"))
    m.params_b = n.at("params_b").pos(1e5);
  else if (!base)
    n.fail("new model '" + name + "' needs 'params_b'");
  auto ifield = [&](const char* key, int& out, int64_t lo, int64_t hi) {
    if (n.has(key))
      out = int(n.at(key).integer(lo, hi));
    else if (!base)
      n.fail(std::string("new model '") + name + "' needs '" + key + "'");
  };
  ifield("layers", m.layers, 1, 1000);
  ifield("hidden", m.hidden, 1, 1 << 20);
  ifield("heads", m.heads, 1, 4096);
  ifield("kv_heads", m.kv_heads, 1, 4096);
  ifield("head_dim", m.head_dim, 1, 4096);
  ifield("intermediate", m.intermediate, 1, 1 << 22);
  ifield("vocab", m.vocab, 1, 1 << 24);
  ifield("max_context", m.max_context, 2, 1 << 24);
  if (m.kv_heads > m.heads) n.fail("kv_heads must be <= heads", ErrorKind::inconsistent);
  // grouped-query attention shares each KV head among an equal group of query heads
  if (m.heads % m.kv_heads != 0)
    n.fail(fmt::format("heads ({}) must be a multiple of kv_heads ({}): each KV head serves an equal group of "
                       "query heads",
                       m.heads, m.kv_heads),
           ErrorKind::inconsistent);
  if (n.has("notes")) m.notes = n.at("notes").str();
  auto opt = [&](const char* key, int& out, int64_t lo, int64_t hi) {
    if (n.has(key)) out = int(n.at(key).integer(lo, hi));
  };
  opt("experts", m.experts, 0, 1 << 16);
  opt("experts_per_token", m.experts_per_token, 1, 1 << 16);
  opt("shared_experts", m.shared_experts, 0, 1 << 16);
  opt("expert_intermediate", m.expert_intermediate, 1, 1 << 22);
  opt("dense_layers", m.dense_layers, 0, 1000);
  opt("kv_lora_rank", m.kv_lora_rank, 0, 1 << 16);
  opt("rope_head_dim", m.rope_head_dim, 0, 1 << 16);
  opt("sliding_window", m.sliding_window, 0, 1 << 24);
  opt("sliding_layers", m.sliding_layers, 0, 1000);
  if (n.has("tied_embeddings")) m.tied_embeddings = n.at("tied_embeddings").boolean();
  if (m.experts == 0) {
    // what only a mixture of experts has would change nothing on a dense model: say so
    for (const char* k : {"experts_per_token", "shared_experts", "expert_intermediate", "dense_layers"})
      if (n.has(k))
        n.at(k).fail(std::string(k) + " is for a mixture of experts; this model has none (set experts)",
                     ErrorKind::inconsistent);
    // a dense model holds at least its attention and MLP projections and its embedding
    const double least = double(m.layers) * (2.0 * m.hidden * double(m.heads) * m.head_dim +
                                             2.0 * m.hidden * double(m.kv_heads) * m.head_dim +
                                             2.0 * m.hidden * double(m.intermediate)) +
                         double(m.vocab) * m.hidden;
    if (m.params_b * 1e9 < 0.95 * least)
      (n.has("params_b") ? n.at("params_b") : n)
          .fail(fmt::format("params_b {:g} is below what the architecture holds: at least {:.3g} billion "
                            "(layers x (attention + MLP) + vocab x hidden)",
                            m.params_b, least / 1e9),
                ErrorKind::inconsistent);
  }
  if (m.experts > 0) {
    for (const char* k : {"experts_per_token", "expert_intermediate"})
      if (!n.has(k) && !(base && base->experts > 0)) n.fail(std::string("a model with experts needs '") + k + "'");
    if (m.experts_per_token > m.experts)
      (n.has("experts_per_token") ? n.at("experts_per_token") : n.at("experts"))
          .fail(fmt::format("experts_per_token ({}) must be <= experts ({})", m.experts_per_token, m.experts),
                ErrorKind::inconsistent);
    if (m.dense_layers >= m.layers)
      n.fail("dense_layers must be < layers (the other layers hold the experts)", ErrorKind::inconsistent);
    if (m.routed_expert_params() >= m.params_b * 1e9)
      n.fail("the routed experts alone (layers x experts x 3 x hidden x expert_intermediate) exceed params_b",
             ErrorKind::inconsistent);
  }
  if (m.sliding_layers > 0 && m.sliding_window == 0)
    n.fail("sliding_layers needs sliding_window", ErrorKind::inconsistent);
  // a value that would change nothing is refused rather than ignored
  if (m.sliding_window > 0 && m.sliding_layers == 0)
    (n.has("sliding_window") ? n.at("sliding_window") : n)
        .fail(
            "sliding_window needs sliding_layers, the layers that use the window (the rest attend to the whole "
            "context; a model whose every layer slides is not modelled)",
            ErrorKind::inconsistent);
  if (m.rope_head_dim > 0 && m.kv_lora_rank == 0)
    (n.has("rope_head_dim") ? n.at("rope_head_dim") : n)
        .fail("rope_head_dim is the rotary part of a latent attention's key: it needs kv_lora_rank",
              ErrorKind::inconsistent);
  if (m.sliding_layers >= m.layers)
    n.fail("sliding_layers must be < layers (at least one full-attention layer holds the context)",
           ErrorKind::inconsistent);
  return m;
}

}  // namespace

// The catalogs a scenario sees: the built-ins, with its catalog section's overrides and additions.
void merge_catalog(const N& root, Source& src, std::vector<DeviceSpec>& devices, std::vector<ModelSpec>& models) {
  if (root.has("catalog")) {
    const N cat = root.at("catalog");
    cat.allow_keys({"devices", "models"});
    // an entry with a built-in's name overrides its fields; a new name adds an entry
    auto merge = [&](const char* key, auto& list, auto parse) {
      if (!cat.has(key)) return;
      const N section = cat.at(key);
      section.require_map();
      for (auto it = section.node.begin(); it != section.node.end(); ++it) {
        const std::string name = section.key_name(it->first);
        if (name.find_first_not_of(" \t") == std::string::npos)
          N{it->first, section.path, &src}.fail(
              "expected a name, got an empty one (a scenario's device: or model: "
              "names the entry)");
        auto* base = static_cast<typename std::decay_t<decltype(list)>::value_type*>(nullptr);
        for (auto& x : list)
          if (x.name == name) base = &x;
        auto parsed = parse(N{it->second, section.path + "." + name, &src}, base, name);
        if (base)
          *base = parsed;
        else
          list.push_back(parsed);
      }
    };
    merge("devices", devices, parse_device);
    merge("models", models, parse_model);
  }
}

}  // namespace fleetsim::detail
