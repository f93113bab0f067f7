#include "input/profile.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <mutex>
#include <sstream>

#include "input/input_file.hpp"
#include "input/yaml_node.hpp"

namespace fleetsim {

extern const char* const kBuiltinProfileText[];
extern const char* const kBuiltinProfileName[];
extern const int kBuiltinProfileCount;

namespace {

constexpr const char* kTermNames[kProfileTerms] = {
    "step_s",    "per_seq_s",        "weight_factor",   "matmul_factor",
    "kv_factor", "attention_factor", "client_ttft_s",   "comm_factor",
    "layer_s",   "gemm_ramp_tokens", "moe_factor",      "client_s_per_input_token",
    "tp_step_s", "async_step_s",     "async_per_seq_s", "client_s_per_output_token"};

void read_error(ProfileError& e, const detail::N& n) {
  n.allow_keys({"points", "median", "worst"});
  e.points = n.has("points") ? int(n.at("points").integer(0, 1000000)) : 0;
  for (int k = 0; k < 4; ++k) e.median[k] = e.worst[k] = std::nan("");
  for (const char* which : {"median", "worst"}) {
    if (!n.has(which)) continue;
    const detail::N m = n.at(which);
    m.allow_keys({kProfileMetrics[0], kProfileMetrics[1], kProfileMetrics[2], kProfileMetrics[3]});
    for (int k = 0; k < 4; ++k)
      if (m.has(kProfileMetrics[k]))
        (which[0] == 'm' ? e.median : e.worst)[k] = m.at(kProfileMetrics[k]).num_in(0, 1e6);
  }
}

void write_error(std::ostringstream& o, const char* key, const ProfileError& e) {
  o << "  " << key << ":\n    points: " << e.points << "\n";
  for (const char* which : {"median", "worst"}) {
    const double* v = which[0] == 'm' ? e.median : e.worst;
    bool any = false;
    for (int k = 0; k < 4; ++k) any = any || std::isfinite(v[k]);
    if (!any) continue;
    o << "    " << which << ": {";
    bool first = true;
    for (int k = 0; k < 4; ++k) {
      if (!std::isfinite(v[k])) continue;
      char b[64];
      std::snprintf(b, sizeof b, "%s%s: %.4f", first ? "" : ", ", kProfileMetrics[k], v[k]);
      o << b;
      first = false;
    }
    o << "}\n";
  }
}

}  // namespace

const char* const* profile_term_names() { return kTermNames; }
// seconds up to a minute (a second per token), factors and token counts up to 10^4
double profile_term_max(int i) { return i < 2 || i == 6 || i == 8 || i == 12 ? 60 : i >= 11 ? 1 : 1e4; }
// (async_step_s and async_per_seq_s are 13 and 14: a second at most, as the client terms)
double neutral_term(int i) { return i == 7 || i == 10 ? 1.0 : 0.0; }

double& profile_term(PerfCoefficients& c, int i) {
  switch (i) {
    case 0: return c.step_s;
    case 1: return c.per_seq_s;
    case 2: return c.weight_factor;
    case 3: return c.matmul_factor;
    case 4: return c.kv_factor;
    case 5: return c.attention_factor;
    case 6: return c.client_ttft_s;
    case 7: return c.comm_factor;
    case 8: return c.layer_s;
    case 9: return c.gemm_ramp_tokens;
    case 10: return c.moe_factor;
    case 11: return c.client_s_per_input_token;
    case 12: return c.tp_step_s;
    case 13: return c.async_step_s;
    case 14: return c.async_per_seq_s;
    default: return c.client_s_per_output_token;
  }
}
double profile_term(const PerfCoefficients& c, int i) { return profile_term(const_cast<PerfCoefficients&>(c), i); }

PerfProfile parse_profile(const std::string& text, const std::string& where) {
  detail::Source src;
  src.file = where;
  src.lines = detail::split_lines(text);
  const YAML::Node root = detail::load_located(text, src);
  const detail::N n{root, "", &src};
  if (!root.IsMap()) n.fail("a performance profile is a mapping (profile, device, coefficients, ...)");
  n.allow_keys({"format", "profile", "device", "model", "tp", "weight_dtype", "engine", "composition", "coefficients",
                "data", "method", "fit", "held_out", "cross_validated", "step_time"});
  // a file without `format` predates it (format 1): its coefficients are a subset of these
  if (n.has("format")) {
    const detail::N f = n.at("format");
    const long long v = f.integer(1, 1000000);
    if (v > kProfileFormat)
      f.fail("profile format " + std::to_string(v) + " was written by a newer fleetsim; this one reads formats 1 to " +
                 std::to_string(kProfileFormat) + " (upgrade fleetsim, or refit with this one's `fleetsim fit`)",
             ErrorKind::inconsistent);
  }
  PerfProfile p;
  p.origin = where;
  // format 5 made each kernel the longer of its byte and FLOP times (unless the file says
  // `composition: sum`, as a fit to per-step timings does); earlier files were fitted as sums
  const bool v5 = n.has("format") && n.at("format").integer(1, 1000000) >= 5;
  p.c.kernel_overlap = v5;
  if (n.has("composition")) {
    if (!v5)
      n.at("composition")
          .fail("needs format 5 or later (formats 1 to 4 are sums: drop it, or refit with `fleetsim fit`)");
    p.c.kernel_overlap = n.at("composition").choice({"overlap", "sum"}) == "overlap";
  }
  p.name = n.req("profile").str();
  p.device = n.req("device").str();
  std::string why;
  if (p.device == "any")
    p.device.clear();
  else if (!find_named(builtin_devices(), p.device, "device", "", why))
    n.at("device").fail(why);
  if (n.has("model")) {
    p.model = n.at("model").str();
    if (p.model == "any")
      p.model.clear();
    else if (!find_named(builtin_models(), p.model, "model", "", why))
      n.at("model").fail(why);
  }
  if (n.has("tp")) {
    const detail::N t = n.at("tp");
    p.tp = t.node.IsScalar() && t.node.Scalar() == "any" ? 0 : int(t.integer(1, 64));
  }
  if (n.has("weight_dtype")) {
    const std::string d = n.at("weight_dtype").str();
    p.weight_dtype = d == "any" ? "" : n.at("weight_dtype").choice(weight_dtypes());
  }
  p.engine = n.has("engine") ? n.at("engine").str() : "";
  const detail::N c = n.req("coefficients");
  std::vector<std::string> keys(kTermNames, kTermNames + kProfileTerms);
  keys.push_back("eager_step_s");
  c.allow_keys(keys);
  for (int i = 0; i < kProfileTerms; ++i)
    profile_term(p.c, i) = c.has(kTermNames[i]) ? c.at(kTermNames[i]).num_in(0, profile_term_max(i)) : neutral_term(i);
  p.c.eager_step_s = c.has("eager_step_s") ? c.at("eager_step_s").num_in(0, 60) : 0.0;
  if (!(p.c.weight_factor > 0 || p.c.matmul_factor > 0 || p.c.step_s > 0))
    c.fail("a profile needs step_s, weight_factor or matmul_factor above 0, or its steps take no time");
  p.data = n.has("data") ? n.at("data").str() : "";
  p.method = n.has("method") ? n.at("method").str() : "";
  for (int k = 0; k < 4; ++k)
    p.fit.median[k] = p.fit.worst[k] = p.held_out.median[k] = p.held_out.worst[k] = p.cross_validated.median[k] =
        p.cross_validated.worst[k] = std::nan("");
  if (n.has("fit")) read_error(p.fit, n.at("fit"));
  if (n.has("held_out")) read_error(p.held_out, n.at("held_out"));
  if (n.has("cross_validated")) read_error(p.cross_validated, n.at("cross_validated"));
  if (n.has("step_time")) {
    const detail::N e = n.at("step_time");
    e.allow_keys({"steps", "median", "held_out"});
    p.step_time.steps = int(e.req("steps").integer(1, 100000000));
    if (e.has("median")) p.step_time.median = e.at("median").num_in(0, 1e6);
    if (e.has("held_out")) p.step_time.held_out = e.at("held_out").num_in(0, 1e6);
  }
  return p;
}

namespace {
// A YAML double-quoted scalar of any text: backslash, quote and control characters escaped.
std::string quoted(const std::string& s) {
  std::string o = "\"";
  for (const char ch : s) {
    const unsigned char c = static_cast<unsigned char>(ch);
    if (ch == '"' || ch == '\\') {
      o += '\\';
      o += ch;
    } else if (c < 0x20 || c == 0x7f) {
      char b[8];
      std::snprintf(b, sizeof b, "\\x%02x", c);
      o += b;
    } else {
      o += ch;
    }
  }
  return o + "\"";
}
// As it is where YAML would read it back as the same plain string; quoted() otherwise.
std::string scalar(const std::string& s) {
  const bool plain = !s.empty() &&
                     std::all_of(s.begin(), s.end(),
                                 [](char c) {
                                   return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' ||
                                          c == '/' || c == '-' || c == '+';
                                 }) &&
                     s[0] != '-' && s != "any";
  return plain ? s : quoted(s);
}
}  // namespace

std::string profile_yaml(const PerfProfile& p) {
  std::ostringstream o;
  o << "# fleetsim performance profile (docs/model.md, \"Calibrated step time\")\n";
  o << "format: " << kProfileFormat << "\n";
  o << "profile: " << scalar(p.name) << "\ndevice: " << (p.device.empty() ? "any" : scalar(p.device))
    << "\nmodel: " << (p.model.empty() ? "any" : scalar(p.model))
    << "\ntp: " << (p.tp == 0 ? std::string("any") : std::to_string(p.tp)) << "\n";
  if (!p.weight_dtype.empty()) o << "weight_dtype: " << scalar(p.weight_dtype) << "\n";
  if (!p.engine.empty()) o << "engine: " << quoted(p.engine) << "\n";
  o << "composition: " << (p.c.kernel_overlap ? "overlap" : "sum") << "\n";
  o << "coefficients:\n";
  for (int i = 0; i < kProfileTerms; ++i) {
    if (i >= kProfileBaseTerms && profile_term(p.c, i) == neutral_term(i)) continue;
    char b[96];
    std::snprintf(b, sizeof b, "  %s: %.6g\n", kTermNames[i], profile_term(p.c, i));
    o << b;
  }
  if (p.c.eager_step_s > 0) o << "  eager_step_s: " << p.c.eager_step_s << "\n";
  if (!p.data.empty()) o << "data: " << quoted(p.data) << "\n";
  if (!p.method.empty()) o << "method: " << quoted(p.method) << "\n";
  if (p.fit.points > 0) {
    std::ostringstream f;
    write_error(f, "fit", p.fit);
    o << "fit:\n" << f.str().substr(f.str().find('\n') + 1);
  }
  if (p.held_out.points > 0) {
    std::ostringstream f;
    write_error(f, "held_out", p.held_out);
    o << "held_out:\n" << f.str().substr(f.str().find('\n') + 1);
  }
  if (p.cross_validated.points > 0) {
    std::ostringstream f;
    write_error(f, "cross_validated", p.cross_validated);
    o << "cross_validated:\n" << f.str().substr(f.str().find('\n') + 1);
  }
  if (p.step_time.steps > 0) {
    char b[160];
    o << "step_time:\n  steps: " << p.step_time.steps << "\n";
    for (const auto& [k, v] :
         {std::pair<const char*, double>{"median", p.step_time.median}, {"held_out", p.step_time.held_out}})
      if (std::isfinite(v)) {
        std::snprintf(b, sizeof b, "  %s: %.4f\n", k, v);
        o << b;
      }
  }
  return o.str();
}

namespace {

// The value of a top-level `key: value` line that profile_yaml writes, unquoted; "any" reads as "".
std::string header_value(const std::string& text, const char* key) {
  const std::string k = std::string("\n") + key + ": ";
  const size_t at = text.find(k);
  if (at == std::string::npos) return "";
  const size_t from = at + k.size(), to = text.find('\n', from);
  std::string v = text.substr(from, to == std::string::npos ? std::string::npos : to - from);
  if (v.size() >= 2 && v.front() == '"' && v.back() == '"') v = v.substr(1, v.size() - 2);
  return v == "any" ? "" : v;
}

}  // namespace

const std::vector<ProfileKey>& builtin_profile_keys() {
  static const std::vector<ProfileKey> v = [] {
    std::vector<ProfileKey> out;
    for (int i = 0; i < kBuiltinProfileCount; ++i) {
      const std::string text = std::string("\n") + kBuiltinProfileText[i];
      ProfileKey k;
      k.name = header_value(text, "profile");
      k.device = header_value(text, "device");
      k.model = header_value(text, "model");
      const std::string tp = header_value(text, "tp");
      k.tp = tp.empty() ? 0 : std::atoi(tp.c_str());
      k.weight_dtype = header_value(text, "weight_dtype");
      k.engine = header_value(text, "engine");
      out.push_back(std::move(k));
    }
    return out;
  }();
  return v;
}

const PerfProfile& builtin_profile(size_t i) {
  static std::mutex m;
  static std::vector<std::unique_ptr<PerfProfile>> parsed(static_cast<size_t>(kBuiltinProfileCount));
  const std::lock_guard<std::mutex> lock(m);
  if (!parsed.at(i)) {
    auto p = std::make_unique<PerfProfile>(
        parse_profile(kBuiltinProfileText[i], std::string("profiles/") + kBuiltinProfileName[i]));
    p->origin = "builtin";
    parsed[i] = std::move(p);
  }
  return *parsed[i];
}

const std::vector<PerfProfile>& builtin_profiles() {
  static const std::vector<PerfProfile> v = [] {
    std::vector<PerfProfile> out;
    for (size_t i = 0; i < size_t(kBuiltinProfileCount); ++i) out.push_back(builtin_profile(i));
    return out;
  }();
  return v;
}

namespace {
const PerfProfile* builtin_named(const std::string& name) {
  const auto& keys = builtin_profile_keys();
  for (size_t i = 0; i < keys.size(); ++i)
    if (keys[i].name == name) return &builtin_profile(i);
  return nullptr;
}
std::string engine_of(const std::string& engine) {
  const std::string e = engine.substr(0, engine.find(' '));
  return e.empty() ? "vllm" : e;
}
}  // namespace

const PerfProfile& physics_profile() {
  if (const PerfProfile* p = builtin_named(kPhysicsProfile)) return *p;
  throw std::logic_error("profiles/physics.yaml is not compiled in");
}

std::string profile_engine(const PerfProfile& p) { return engine_of(p.engine); }

const PerfProfile* find_builtin_profile(const std::string& device, const std::string& model, int tp,
                                        const std::string& weight_dtype, const std::string& engine) {
  const auto& keys = builtin_profile_keys();
  for (size_t i = 0; i < keys.size(); ++i) {
    const ProfileKey& k = keys[i];
    if (k.device == device && engine_of(k.engine) == engine && k.model == model && k.tp == tp &&
        k.weight_dtype == weight_dtype)
      return &builtin_profile(i);
  }
  return nullptr;
}

bool profile_applies(const PerfProfile& p, const std::string& model, int tp, int pp, const std::string& weight_dtype,
                     std::string& why, const std::string& engine, int async_scheduling) {
  std::string d;
  auto differs = [&](const std::string& what) { d += (d.empty() ? "" : ", ") + what; };
  if (profile_engine(p) == "several")
    differs("runs of several engines");
  else if (profile_engine(p) != engine)
    differs(profile_engine(p) + " runs");
  // vLLM schedules ahead from 0.14.0 (docs/model.md, "Scheduling ahead"): a profile whose runs name
  // their version measured one mode or the other
  int major = 0, minor = 0;
  const size_t sp = p.engine.find(' ');
  if (profile_engine(p) == "vllm" && engine == "vllm" && async_scheduling >= 0 && sp != std::string::npos &&
      std::sscanf(p.engine.c_str() + sp + 1, "%d.%d", &major, &minor) == 2) {
    const bool ahead = major > 0 || minor >= 14;
    if (ahead != (async_scheduling == 1))
      differs(ahead ? "runs that schedule ahead (vLLM 0.14 and later)"
                    : "runs that do not schedule ahead (vLLM before 0.14)");
  }
  if (p.model.empty())
    differs("several models");
  else if (p.model != model)
    differs("model " + p.model);
  if (p.tp > 0 && p.tp != tp) differs("tp " + std::to_string(p.tp));
  if (pp > 1) differs("pp 1");
  if (!p.weight_dtype.empty() && p.weight_dtype != weight_dtype) differs(p.weight_dtype + " weights");
  why = d;
  return d.empty();
}

PerfProfile load_profile(const std::string& name_or_path, const std::string& base_dir) {
  if (const PerfProfile* p = builtin_named(name_or_path)) return *p;
  const bool looks_like_file =
      name_or_path.find(".yaml") != std::string::npos || name_or_path.find(".yml") != std::string::npos;
  if (!looks_like_file) {
    std::vector<std::string> names;
    for (const auto& k : builtin_profile_keys()) names.push_back(k.name);
    std::string all;
    for (const auto& x : names) all += (all.empty() ? "" : ", ") + x;
    const std::string hint = did_you_mean(name_or_path, names);
    throw InputError(Location{}, "no shipped performance profile '" + name_or_path + "'" +
                                     (hint.empty() ? "" : " (did you mean '" + hint + "'?)") + "; shipped: " + all +
                                     "; or name a profile file (.yaml) written by `fleetsim fit`");
  }
  const std::string path = name_or_path[0] == '/' || base_dir.empty() ? name_or_path : base_dir + "/" + name_or_path;
  return parse_profile(read_text_file(path, "performance profile", kMaxTextInputBytes), path);
}

void apply_profile(const PerfCoefficients& c, const StepFacts& f, PerfParams& out) {
  out.kind = PerfKind::calibrated;
  const bool async = f.async_scheduling && (c.async_step_s > 0 || c.async_per_seq_s > 0);
  out.overhead_s = (async ? c.async_step_s : c.step_s) + (f.enforce_eager ? c.eager_step_s : 0.0) +
                   c.layer_s * double(f.layers) + (f.ranks > 1 ? c.tp_step_s : 0.0);
  out.flops_per_s = f.peak_flops_per_s;
  out.bytes_per_s = f.peak_bytes_per_s;
  out.per_seq_s = async ? c.async_per_seq_s : c.per_seq_s;
  out.weight_s_per_byte = c.weight_factor / f.peak_bytes_per_s;
  const double mm = c.matmul_factor / f.peak_flops_per_s;
  // the routed experts' GEMMs at moe_factor times the dense ones' time per FLOP, blended per token
  const double tok = f.dense_flops_per_token + f.expert_flops_per_token;
  out.matmul_s_per_flop = tok > 0 ? mm * (f.dense_flops_per_token + c.moe_factor * f.expert_flops_per_token) / tok : mm;
  // GEMM efficiency e(m) = e_max m / (m + m_half): the time of m tokens' FLOPs at e(m) is that of
  // m + m_half tokens at e_max, a fixed m_half tokens' worth per GEMM and step; every expert is a GEMM
  out.overhead_s += mm * c.gemm_ramp_tokens * (f.dense_flops_per_token + c.moe_factor * f.all_expert_flops);
  out.kv_s_per_byte = c.kv_factor / f.peak_bytes_per_s;
  out.attn_s_per_flop = c.attention_factor / f.bf16_flops_per_s;
  out.client_ttft_s = c.client_ttft_s;
  out.client_s_per_input_token = c.client_s_per_input_token;
  out.client_s_per_output_token = c.client_s_per_output_token;
  out.comm_factor = c.comm_factor;
  out.kernel_overlap = c.kernel_overlap ? 1 : 0;
}

}  // namespace fleetsim
