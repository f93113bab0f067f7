// Scenario files: the catalog section, devices and models merged into the built-in catalog.
#include <string>
#include <type_traits>
#include <vector>

#include "catalog.hpp"
#include "error.hpp"
#include "scenario_internal.hpp"

namespace fleetsim::detail {

namespace {

DeviceSpec parse_device(const N& n, const DeviceSpec* base, const std::string& name) {
  n.allow_keys({"memory_gib", "bandwidth_gb_s", "bf16_tflops", "fp8_tflops", "usd_per_hour", "notes"});
  DeviceSpec d = base ? *base : DeviceSpec{};
  d.name = name;
  auto field = [&](const char* key, double& out, double hi, bool allow_zero) {
    if (n.has(key)) out = allow_zero ? n.at(key).num_in(0, hi) : n.at(key).pos(hi);
    else if (!base) n.fail(std::string("new device '") + name + "' needs '" + key + "'");
  };
  field("memory_gib", d.memory_gib, 1e5, false);
  field("bandwidth_gb_s", d.bandwidth_gb_s, 1e6, false);
  field("bf16_tflops", d.bf16_tflops, 1e6, false);
  if (n.has("fp8_tflops")) d.fp8_tflops = n.at("fp8_tflops").num_in(0, 1e6);
  field("usd_per_hour", d.usd_per_hour, 1e5, true);
  if (n.has("notes")) d.notes = n.at("notes").str();
  return d;
}

ModelSpec parse_model(const N& n, const ModelSpec* base, const std::string& name) {
  n.allow_keys({"kind", "params_b", "layers", "hidden", "heads", "kv_heads", "head_dim", "intermediate", "vocab",
                "max_context", "notes"});
  ModelSpec m = base ? *base : ModelSpec{};
  m.name = name;
  if (n.has("kind")) {
    const std::string k = n.at("kind").choice({"generate", "embed", "score"});
    m.kind = k == "generate" ? ModelKind::generate : k == "embed" ? ModelKind::embed : ModelKind::score;
  }
  if (n.has("params_b")) m.params_b = n.at("params_b").pos(1e5);
  else if (!base) n.fail("new model '" + name + "' needs 'params_b'");
  auto ifield = [&](const char* key, int& out, int64_t lo, int64_t hi) {
    if (n.has(key)) out = int(n.at(key).integer(lo, hi));
    else if (!base) n.fail(std::string("new model '") + name + "' needs '" + key + "'");
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
  if (n.has("notes")) m.notes = n.at("notes").str();
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
        const std::string name = it->first.as<std::string>();
        auto* base = static_cast<typename std::decay_t<decltype(list)>::value_type*>(nullptr);
        for (auto& x : list)
          if (x.name == name) base = &x;
        auto parsed = parse(N{it->second, section.path + "." + name, &src}, base, name);
        if (base) *base = parsed; else list.push_back(parsed);
      }
    };
    merge("devices", devices, parse_device);
    merge("models", models, parse_model);
  }
}

}  // namespace fleetsim::detail
