// The memory validation: public vLLM start-up logs (kv_cache_points.csv) against
// compute_capacity, with the configuration each run had (kv_cache_fleetsim.csv). Shared by the
// doctest (tests/test_validation_memory.cpp) and the table tool (tests/validation/validate_memory.cpp);
// docs/validation.md, "Memory", describes the rules.
#pragma once
#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "libsim/catalog/capacity.hpp"
#include "libsim/catalog/catalog.hpp"
#include "libsim/input/csv.hpp"

namespace fleetsim::validation {

// One CSV file as rows of named fields, read by the project's CSV reader.
inline std::vector<std::map<std::string, std::string>> read_csv(const std::string& path) {
  std::ifstream f(path);
  if (!f) throw std::runtime_error("cannot read " + path);
  CsvReader r(f, path);
  std::vector<std::map<std::string, std::string>> rows;
  while (r.next()) {
    std::map<std::string, std::string> row;
    for (size_t i = 0; i < r.header().size(); ++i) row[r.header()[i]] = r.fields()[i];
    rows.push_back(row);
  }
  return rows;
}

struct Point {
  int row = 0;  // 1-based data row of kv_cache_points.csv
  std::string source, model_hf, device_hf, vllm_version, logged_notes;
  // what vLLM logged
  double logged_kv_gib = NAN;
  int64_t logged_kv_tokens = -1;
  double logged_weights_gib = NAN;
  double logged_non_torch_gib = NAN, logged_activation_gib = NAN;
  // the run's configuration
  int tp = 1, pp = 1;
  double gpu_memory_utilization = 0.9;  // vLLM's default where the source does not state it
  int64_t max_model_len = 0;
  int block_tokens = 16;
  bool enforce_eager = false;
  // how fleetsim reads it (kv_cache_fleetsim.csv)
  std::string model, device, weight_dtype, expert_weight_dtype;
  double device_gib = 0;  // the total the log states (0: the catalog's)
  int max_num_seqs = 256, max_batched_tokens = 8192;
  SamplerPath sampler = SamplerPath::flashinfer;
  bool cuda_graphs_reserved = true, failed_start = false;
  std::string set;      // fit, held-out, excluded
  std::string compare;  // kv_gib, kv_tokens, none
  std::string notes;
};

inline double num_or_nan(const std::string& s) { return s.empty() ? NAN : std::stod(s); }

inline std::vector<Point> load_points(const std::string& dir) {
  const auto logged = read_csv(dir + "/kv_cache_points.csv");
  const auto mapping = read_csv(dir + "/kv_cache_fleetsim.csv");
  if (logged.size() != mapping.size())
    throw std::runtime_error("kv_cache_fleetsim.csv has " + std::to_string(mapping.size()) + " rows for " +
                             std::to_string(logged.size()) + " points");
  std::vector<Point> out;
  for (size_t i = 0; i < logged.size(); ++i) {
    const auto& L = logged[i];
    const auto& F = mapping[i];
    Point p;
    p.row = int(i) + 1;
    if (std::stoi(F.at("row")) != p.row || F.at("model") != L.at("model"))
      throw std::runtime_error("kv_cache_fleetsim.csv row " + F.at("row") + " (" + F.at("model") +
                               ") does not match point " + std::to_string(p.row) + " (" + L.at("model") + ")");
    p.source = L.at("source");
    p.model_hf = L.at("model");
    p.device_hf = L.at("device");
    p.vllm_version = L.at("vllm_version");
    p.logged_notes = L.at("notes");
    p.logged_kv_gib = num_or_nan(L.at("kv_cache_gib"));
    if (!L.at("kv_cache_tokens").empty()) p.logged_kv_tokens = std::stoll(L.at("kv_cache_tokens"));
    if (!L.at("block_size").empty()) p.block_tokens = std::stoi(L.at("block_size"));
    if (p.logged_kv_tokens < 0 && !L.at("gpu_blocks").empty())
      p.logged_kv_tokens = std::stoll(L.at("gpu_blocks")) * p.block_tokens;
    p.logged_weights_gib = num_or_nan(L.at("weights_gib"));
    p.tp = L.at("tp").empty() ? 1 : std::stoi(L.at("tp"));
    p.pp = L.at("pp").empty() ? 1 : std::stoi(L.at("pp"));
    if (!L.at("gpu_memory_utilization").empty()) p.gpu_memory_utilization = std::stod(L.at("gpu_memory_utilization"));
    if (!L.at("max_model_len").empty()) p.max_model_len = std::stoll(L.at("max_model_len"));
    p.enforce_eager = L.at("enforce_eager") == "True";
    p.model = F.at("fleetsim_model");
    p.device = F.at("fleetsim_device");
    p.device_gib = F.at("device_gib").empty() ? 0.0 : std::stod(F.at("device_gib"));
    p.weight_dtype = F.at("weight_dtype");
    p.expert_weight_dtype = F.at("expert_weight_dtype");
    if (!F.at("max_num_seqs").empty()) p.max_num_seqs = std::stoi(F.at("max_num_seqs"));
    if (!F.at("max_num_batched_tokens").empty()) p.max_batched_tokens = std::stoi(F.at("max_num_batched_tokens"));
    p.sampler = F.at("sampler") == "pytorch" ? SamplerPath::pytorch : SamplerPath::flashinfer;
    p.cuda_graphs_reserved = F.at("cuda_graphs_reserved") == "yes";
    p.failed_start = F.at("failed_start") == "yes";
    p.logged_non_torch_gib = num_or_nan(F.at("logged_non_torch_gib"));
    p.logged_activation_gib = num_or_nan(F.at("logged_activation_gib"));
    p.set = F.at("set");
    p.compare = F.at("compare");
    p.notes = F.at("notes");
    out.push_back(p);
  }
  return out;
}

template <class Spec>
const Spec& named(const std::vector<Spec>& list, const std::string& name) {
  for (const auto& x : list)
    if (x.name == name) return x;
  throw std::runtime_error("no catalog entry '" + name + "'");
}

inline MemoryInputs inputs(const Point& p, const VllmMemoryConstants& k = {}) {
  MemoryInputs in;
  in.device = named(builtin_devices(), p.device);
  if (p.device_gib > 0) in.device.memory_gib = p.device_gib;
  in.model = named(builtin_models(), p.model);
  in.weight_bytes_per_param = weight_dtype_bytes(p.weight_dtype);
  if (!p.expert_weight_dtype.empty()) in.expert_weight_bytes_per_param = weight_dtype_bytes(p.expert_weight_dtype);
  in.gpu_memory_utilization = p.gpu_memory_utilization;
  in.max_num_seqs = p.max_num_seqs;
  in.max_batched_tokens = p.max_batched_tokens;
  in.kv_block_tokens = p.block_tokens;
  in.enforce_eager = p.enforce_eager;
  in.sampler = p.sampler;
  in.reserve_cuda_graphs = p.cuda_graphs_reserved;
  in.constants = k;
  in.tp = p.tp;
  in.pp = p.pp;
  return in;
}

struct Prediction {
  bool predicted = false;  // false: the point names no catalog model
  Capacity c;
  bool starts = false;               // vLLM would start (KV for one max_model_len request)
  double logged = NAN, value = NAN;  // in the compared unit (GiB or tokens)
  double error_pct = NAN;            // 100 (value - logged) / logged, where logged > 0
  bool scored = false;               // counts in the statistics: fit or held-out with a positive logged value
};

inline Prediction predict(const Point& p, const VllmMemoryConstants& k = {}) {
  Prediction r;
  if (p.model.empty()) return r;
  r.predicted = true;
  r.c = compute_capacity(inputs(p, k));
  r.starts = vllm_starts(r.c, p.max_model_len, p.block_tokens);
  if (p.compare == "kv_tokens" || (p.compare == "none" && std::isnan(p.logged_kv_gib))) {
    r.logged = p.logged_kv_tokens >= 0 ? double(p.logged_kv_tokens) : NAN;
    r.value = double(r.c.kv_capacity_tokens);
  } else {
    r.logged = p.logged_kv_gib;
    r.value = r.c.kv_gib;
  }
  if (r.logged > 0) r.error_pct = 100.0 * (r.value - r.logged) / r.logged;
  r.scored = (p.set == "fit" || p.set == "held-out") && p.compare != "none" && r.logged > 0;
  return r;
}

struct Summary {
  int points = 0;
  double median_abs_pct = NAN, worst_abs_pct = NAN;
  int worst_row = 0;
};

inline Summary summarize(const std::vector<Point>& pts, const std::vector<Prediction>& pred, const std::string& set) {
  std::vector<double> e;
  Summary s;
  for (size_t i = 0; i < pts.size(); ++i) {
    if (pts[i].set != set || !pred[i].scored) continue;
    const double a = std::fabs(pred[i].error_pct);
    if (e.empty() || a > s.worst_abs_pct) s.worst_abs_pct = a, s.worst_row = pts[i].row;
    e.push_back(a);
  }
  s.points = int(e.size());
  if (!e.empty()) {
    std::sort(e.begin(), e.end());
    const size_t n = e.size();
    s.median_abs_pct = n % 2 ? e[n / 2] : 0.5 * (e[n / 2 - 1] + e[n / 2]);
  }
  return s;
}

// Refit the constants on the fit set only, part by part (docs/validation.md, "Memory"):
//  1. non-torch memory: the mean logged non-torch memory of single-device runs;
//  2. collective buffers: the mean excess over it of multi-device runs;
//  3. forward scale and PyTorch sampler bytes: least squares on the logged activation peaks;
//  4. FlashInfer sampler bytes (no run logs its peak): least absolute KV error, in GiB, over the
//     FlashInfer runs.
// The CUDA-graph constants are not fitted: no point comes from a vLLM that reserves graphs.
inline VllmMemoryConstants fit_constants(const std::vector<Point>& pts) {
  VllmMemoryConstants k;
  std::vector<const Point*> fit;
  for (const auto& p : pts)
    if (p.set == "fit") fit.push_back(&p);
  double sum = 0;
  int n = 0;
  for (const Point* p : fit)
    if (!std::isnan(p->logged_non_torch_gib) && p->tp * p->pp == 1) sum += p->logged_non_torch_gib, ++n;
  if (n) k.non_torch_gib = sum / n;
  sum = 0, n = 0;
  for (const Point* p : fit)
    if (!std::isnan(p->logged_non_torch_gib) && p->tp * p->pp > 1)
      sum += p->logged_non_torch_gib - k.non_torch_gib, ++n;
  if (n) k.collective_gib = sum / n;

  // 3. activation = max(scale x forward, bytes x seqs x vocab + hidden states): assign each run to
  // the branch that is larger, solve each branch's one-constant least squares, repeat until stable.
  constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
  struct Act {
    double forward, logits, hidden, y;
  };
  std::vector<Act> acts;
  for (const Point* p : fit) {
    if (std::isnan(p->logged_activation_gib) || p->sampler != SamplerPath::pytorch) continue;
    const ModelSpec& m = named(builtin_models(), p->model);
    VllmMemoryConstants unit;
    unit.forward_scale = 1.0;
    unit.pytorch_bytes_per_logit = 0.0;  // the sampler branch without its logits: the hidden states
    const double hidden = double(p->max_batched_tokens) * m.hidden * 2.0 / kGiB;
    const double forward = activation_peak_bytes(m, p->max_batched_tokens, 1, p->tp, SamplerPath::pytorch, unit) / kGiB;
    const double logits = double(std::min(p->max_num_seqs, p->max_batched_tokens)) * m.vocab / kGiB;
    acts.push_back({std::max(forward, 0.0), logits, hidden, p->logged_activation_gib});
  }
  double scale = 1.0, bytes = 30.0;
  for (int iter = 0; iter < 50 && !acts.empty(); ++iter) {
    double ff = 0, fy = 0, ll = 0, ly = 0;
    for (const Act& a : acts) {
      if (scale * a.forward >= bytes * a.logits + a.hidden)
        ff += a.forward * a.forward, fy += a.forward * a.y;
      else
        ll += a.logits * a.logits, ly += a.logits * (a.y - a.hidden);
    }
    const double s2 = ff > 0 ? fy / ff : scale, b2 = ll > 0 ? ly / ll : bytes;
    if (s2 == scale && b2 == bytes) break;
    scale = s2, bytes = b2;
  }
  k.forward_scale = scale;
  k.pytorch_bytes_per_logit = bytes;

  // 4. a search in steps of 0.01 byte; the smallest of equally good values
  double best = INFINITY, best_b = k.flashinfer_bytes_per_logit;
  for (int i = 0; i <= 10000; ++i) {
    VllmMemoryConstants t = k;
    t.flashinfer_bytes_per_logit = i * 0.01;
    double loss = 0;
    int used = 0;
    for (const Point* p : fit) {
      if (p->sampler != SamplerPath::flashinfer || p->compare != "kv_gib" || !(p->logged_kv_gib > 0)) continue;
      loss += std::fabs(predict(*p, t).value - p->logged_kv_gib), ++used;
    }
    if (used && loss < best - 1e-12) best = loss, best_b = t.flashinfer_bytes_per_logit;
  }
  k.flashinfer_bytes_per_logit = best_b;
  return k;
}

}  // namespace fleetsim::validation
