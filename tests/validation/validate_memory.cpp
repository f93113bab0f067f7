// Prints the memory validation as Markdown (docs/validation.md, "Memory"): every public vLLM
// start-up log in tests/validation/kv_cache_points.csv against fleetsim's prediction.
//   validate_memory [--fit] [DIR]   DIR: tests/validation (default: the source tree's)
// --fit also refits the constants on the fit set and prints them beside the shipped ones.
#include <cstdio>
#include <string>

#include "memory_validation.hpp"

using namespace fleetsim;
using namespace fleetsim::validation;

namespace {

std::string cell(std::string s) {
  for (size_t i = 0; (i = s.find('|', i)) != std::string::npos; i += 2) s.replace(i, 1, "\\|");
  return s;
}

std::string fmt(const char* f, double v) {
  char b[64];
  std::snprintf(b, sizeof b, f, v);
  return b;
}

std::string tokens(double v) {
  std::string s = std::to_string(int64_t(v)), out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (i && (s.size() - i) % 3 == 0) out += ',';
    out += s[i];
  }
  return out;
}

std::string sampler_name(SamplerPath s) { return s == SamplerPath::pytorch ? "PyTorch sampler" : "FlashInfer sampler"; }

}  // namespace

int main(int argc, char** argv) {
  std::string dir = std::string(FLEETSIM_SOURCE_DIR) + "/tests/validation";
  bool refit = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--fit")
      refit = true;
    else if (a == "-h" || a == "--help") {
      std::printf("usage: validate_memory [--fit] [DIR]\n");
      return 0;
    } else
      dir = a;
  }
  const std::vector<Point> pts = load_points(dir);
  std::vector<Prediction> pred;
  for (const Point& p : pts) pred.push_back(predict(p));

  std::printf(
      "| # | source | configuration | vLLM logged | fleetsim | error | fleetsim's parts (GiB per device) | set |\n");
  std::printf("|---|---|---|---|---|---|---|---|\n");
  for (size_t i = 0; i < pts.size(); ++i) {
    const Point& p = pts[i];
    const Prediction& r = pred[i];
    std::string conf = p.model_hf + " on " + p.device_hf + (p.device_gib > 0 ? fmt(" (%.2f GiB)", p.device_gib) : "");
    if (r.predicted) {
      conf += ", tp " + std::to_string(p.tp) + fmt(", utilization %.2f", p.gpu_memory_utilization) + ", " +
              std::to_string(p.max_num_seqs) + " seqs x " + std::to_string(p.max_batched_tokens) + " tokens, " +
              sampler_name(p.sampler);
      if (!p.weight_dtype.empty() && p.weight_dtype != "bf16") conf += ", " + p.weight_dtype;
      if (!p.expert_weight_dtype.empty()) conf += ", " + p.expert_weight_dtype + " experts";
      if (p.vllm_version.size()) conf += ", vLLM " + p.vllm_version;
    }
    const bool gib = p.compare != "kv_tokens";
    std::string logged = std::isnan(r.logged) ? "–" : gib ? fmt("%.2f GiB", r.logged) : tokens(r.logged) + " tokens";
    if (p.failed_start) logged += " (failed to start)";
    std::string value = "–", error = "–", parts = "–";
    if (r.predicted) {
      value = gib ? fmt("%.2f GiB", r.value) : tokens(r.value) + " tokens";
      if (!r.starts) value += " (does not start)";
      if (!std::isnan(r.error_pct)) error = fmt("%+.1f%%", r.error_pct);
      parts = fmt("weights %.2f", r.c.weights_gib) +
              (std::isnan(p.logged_weights_gib) ? "" : fmt(" (vLLM %.2f)", p.logged_weights_gib)) +
              fmt(", non-torch %.2f", r.c.non_torch_gib) + fmt(", activations %.2f", r.c.activation_gib) +
              fmt(", CUDA graphs %.2f", r.c.cuda_graph_gib) + (p.cuda_graphs_reserved ? "" : " (not reserved then)");
    }
    std::string set = p.set;
    if (p.set == "excluded") set += ": " + p.notes;
    std::printf("| %d | %s | %s | %s | %s | %s | %s | %s |\n", p.row, cell(p.source).c_str(), cell(conf).c_str(),
                logged.c_str(), value.c_str(), error.c_str(), parts.c_str(), cell(set).c_str());
  }
  std::printf("\n| set | points | median abs. error | worst abs. error |\n|---|---|---|---|\n");
  for (const char* set : {"fit", "held-out"}) {
    const Summary s = summarize(pts, pred, set);
    std::printf("| %s | %d | %.1f%% | %.1f%% (row %d) |\n", set, s.points, s.median_abs_pct, s.worst_abs_pct,
                s.worst_row);
  }
  int starts_right = 0, starts_total = 0;
  for (size_t i = 0; i < pts.size(); ++i) {
    if (!pred[i].predicted || pts[i].set == "excluded") continue;
    ++starts_total;
    if (pred[i].starts != pts[i].failed_start) ++starts_right;
  }
  std::printf("\nStarts or refuses to start as vLLM did: %d of %d points.\n", starts_right, starts_total);

  if (refit) {
    const VllmMemoryConstants k = fit_constants(pts), d;
    std::printf("\n| constant | refitted on the fit set | shipped |\n|---|---|---|\n");
    std::printf("| non_torch_gib | %.4f | %.4f |\n", k.non_torch_gib, d.non_torch_gib);
    std::printf("| collective_gib | %.4f | %.4f |\n", k.collective_gib, d.collective_gib);
    std::printf("| forward_scale | %.4f | %.4f |\n", k.forward_scale, d.forward_scale);
    std::printf("| pytorch_bytes_per_logit | %.4f | %.4f |\n", k.pytorch_bytes_per_logit, d.pytorch_bytes_per_logit);
    std::printf("| flashinfer_bytes_per_logit | %.4f | %.4f |\n", k.flashinfer_bytes_per_logit,
                d.flashinfer_bytes_per_logit);
  }
  return 0;
}
