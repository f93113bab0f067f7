// The latency validation (docs/validation.md, "Latency"): fits the shipped profiles on one half
// of the published serving runs and reports fleetsim's error on the other half, and on the
// independent runs kept out of every fit.
//   validate_latency [--write] [--threads N] [ROOT]
// prints the section as Markdown; --write also rewrites profiles/ and
// tests/validation/latency_fleetsim.csv (every point's prediction). The split is in
// latency_validation.hpp. --physics-only fits and reports the physics coefficients alone.
// While working on the physics model, FLEETSIM_PHYSICS_NO_INDEP=1 keeps the independent runs
// out of sight (they are never a criterion), FLEETSIM_PHYSICS_FIT_ONLY=1 skips the
// cross-validation too, and FLEETSIM_PHYSICS_SHOW=<group part> lists that configuration's runs.
#include <sys/stat.h>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include "latency_validation.hpp"
#include "libsim/calibrate/fit.hpp"

using namespace fleetsim;
using namespace fleetsim::validation;

namespace {

std::string pct(double v) {
  if (!std::isfinite(v)) return "–";
  char b[32];
  std::snprintf(b, sizeof b, "%.1f%%", 100.0 * v);
  return b;
}

std::string ms(double s) {
  if (!std::isfinite(s)) return "";
  char b[32];
  std::snprintf(b, sizeof b, "%.1f", s * 1e3);
  return b;
}

std::string row(const std::string& title, const ProfileError& e) {
  std::ostringstream o;
  o << "| " << title << " | " << e.points << " | " << pct(e.median[kMeanTtft]) << " | " << pct(e.median[kMeanTpot])
    << " | " << pct(e.median[kMeanE2e]) << " | " << pct(e.median[kP99Ttft]) << " |\n";
  return o.str();
}

void mkdirs(const std::string& path) {
  for (size_t i = 1; i < path.size(); ++i)
    if (path[i] == '/') mkdir(path.substr(0, i).c_str(), 0755);
  mkdir(path.c_str(), 0755);
}

struct Fitted {
  PerfProfile profile;
  std::vector<PointResult> fit, held;
};

Fitted fit_profile(const std::string& name, const Split& split, const BenchPoint& p0, bool device_level,
                   const FitOptions& opt) {
  Fitted f;
  PerfProfile& p = f.profile;
  p.name = name;
  p.device = p0.device;
  if (!device_level) {
    p.model = p0.model;
    p.tp = p0.tp;
    // the weight dtype most of its runs had (a configuration of another dtype may be among them)
    std::map<std::string, int> dtypes;
    for (const BenchPoint* x : split.fit) ++dtypes[x->weight_dtype];
    int most = 0;
    for (const auto& [d, n] : dtypes)
      if (n > most) most = n, p.weight_dtype = d;
  }
  p.engine = p0.engine + (p0.engine_version.empty() ? "" : " " + p0.engine_version);
  if (device_level) p.engine = p0.engine;
  p.c = fit_benchmarks(split.fit, opt);
  p.data =
      "tests/validation/serving_points.csv: " +
      (device_level ? "every vLLM configuration on " + p0.device_id
                    : p0.engine + " runs of " + p0.model_id + " on " + p0.device_id + " tp" + std::to_string(p0.tp)) +
      ", odd benchmarks of each configuration";
  p.method = "Levenberg-Marquardt over simulated benchmark runs (fleetsim fit)";
  f.fit = evaluate(split.fit, &p.c, opt);
  f.held = evaluate(split.held, &p.c, opt);
  p.fit = summarize(f.fit);
  p.held_out = summarize(f.held);
  std::fprintf(stderr, "%-45s fit %3zu held out %3zu: median TTFT %s TPOT %s e2e %s (fit set: TTFT %s TPOT %s)\n",
               name.c_str(), split.fit.size(), split.held.size(), pct(p.held_out.median[0]).c_str(),
               pct(p.held_out.median[1]).c_str(), pct(p.held_out.median[2]).c_str(), pct(p.fit.median[0]).c_str(),
               pct(p.fit.median[1]).c_str());
  return f;
}

// The physics coefficients (profiles/physics.yaml): one fit on the fit rows of every vLLM
// configuration on every device, errors on their held-out rows, on the independent runs, and on
// each device (each model) left out of the fit.
struct Physics {
  PerfProfile profile;
  std::vector<PointResult> fit, held, indep, other_engines;
  std::vector<GroupResult> by_device, by_model;
};

Physics fit_physics(const LatencyData& d, const std::vector<const BenchPoint*>& indep, FitOptions opt) {
  Physics ph;
  std::vector<const BenchPoint*> fit, held;
  for (const auto& [dev, split] : d.by_device) {
    fit.insert(fit.end(), split.fit.begin(), split.fit.end());
    held.insert(held.end(), split.held.begin(), split.held.end());
  }
  opt.global = true;
  opt.progress = [](const std::string& s) { std::fprintf(stderr, "physics: %s\n", s.c_str()); };
  PerfProfile& p = ph.profile;
  p.name = kPhysicsProfile;
  p.engine = "vllm";
  p.c = fit_benchmarks(fit, opt);
  p.data = "tests/validation/serving_points.csv: every vLLM configuration on every device, odd benchmarks of each";
  p.method = "Levenberg-Marquardt over simulated benchmark runs, every device at once (fleetsim fit --global)";
  ph.fit = evaluate(fit, &p.c, opt);
  ph.held = evaluate(held, &p.c, opt);
  if (!std::getenv("FLEETSIM_PHYSICS_FIT_ONLY") && !std::getenv("FLEETSIM_PHYSICS_NO_INDEP"))
    ph.indep = evaluate(indep, &p.c, opt);
  p.fit = summarize(ph.fit);
  p.held_out = summarize(ph.held);
  // SGLang's and TensorRT-LLM's held-out rows: the vLLM-fitted coefficients on other engines
  std::vector<const BenchPoint*> other;
  for (const auto& [group, split] : d.by_group)
    for (const BenchPoint* x : split.held)
      if (x->engine != "vllm") other.push_back(x);
  ph.other_engines = evaluate(other, &p.c, opt);
  {  // where the fit misses, by configuration (signed: predicted / measured - 1), for the log
    std::map<std::string, std::vector<const PointResult*>> groups;
    for (const auto& r : ph.fit) groups[r.point->group].push_back(&r);
    const char* show = std::getenv("FLEETSIM_PHYSICS_SHOW");
    for (const auto& [g, rs] : groups) {
      if (show && g.find(show) != std::string::npos)
        for (const PointResult* r : rs)
          std::fprintf(stderr, "  isl %5.0f osl %5.0f conc %4d: TTFT %8.1f / %8.1f ms  TPOT %6.2f / %6.2f ms\n",
                       r->point->isl, r->point->osl, r->point->concurrency, 1e3 * r->point->measured[0],
                       1e3 * r->predicted.v[0], 1e3 * r->point->measured[1], 1e3 * r->predicted.v[1]);
      double sum[kBenchMetrics] = {}, n[kBenchMetrics] = {};
      for (const PointResult* r : rs)
        for (int m = 0; m < kBenchMetrics; ++m)
          if (r->predicted.ok && std::isfinite(r->point->measured[m]) && r->point->measured[m] > 0)
            sum[m] += std::log(r->predicted.v[m] / r->point->measured[m]), n[m] += 1;
      std::fprintf(stderr, "physics fit rows %-45s %3zu: mean log ratio TTFT %+.2f TPOT %+.2f e2e %+.2f\n", g.c_str(),
                   rs.size(), n[0] ? sum[0] / n[0] : 0.0, n[1] ? sum[1] / n[1] : 0.0, n[2] ? sum[2] / n[2] : 0.0);
    }
  }
  for (int i = 0; i < kProfileTerms; ++i)
    std::fprintf(stderr, "physics %-26s %.6g\n", profile_term_names()[i], profile_term(p.c, i));
  if (const char* out = std::getenv("FLEETSIM_PHYSICS_OUT")) std::ofstream(out) << profile_yaml(p);
  if (std::getenv("FLEETSIM_PHYSICS_FIT_ONLY")) return ph;
  ph.by_device = leave_one_group_out(
      fit, [](const BenchPoint& x) { return x.device; }, opt);
  ph.by_model = leave_one_group_out(
      fit, [](const BenchPoint& x) { return x.model; }, opt);
  std::vector<PointResult> lodo;
  for (const auto& g : ph.by_device) lodo.insert(lodo.end(), g.held_out.begin(), g.held_out.end());
  p.cross_validated = summarize(lodo);
  return ph;
}

std::string layout_of(const BenchPoint& p) {
  for (const auto& m : builtin_models())
    if (m.name == p.model && m.moe()) return "MoE";
  return p.tp > 1 ? "TP>1 dense" : "TP1 dense";
}

std::string source_of(const BenchPoint& p) {
  if (p.source.rfind("aic:", 0) == 0) return "ai-dynamo/aiconfigurator";
  return p.source.substr(0, p.source.find('@'));
}

std::string physics_tables(const Physics& ph) {
  std::ostringstream md;
  md << "\n### Physics step model by source, layout and engine\n\n";
  md << "Rows no fit saw, predicted by the physics coefficients. A run *saturates* when the simulation leaves "
        "requests unfinished or predicts a mean TTFT over 10x the measured one (every real server here served its "
        "load).\n\n";
  md << "| rows | source | layout | engine | points | saturated | mean TTFT | mean TPOT | mean e2e | p99 TTFT "
        "|\n|---|---|---|---|---|---|---|---|---|---|\n";
  for (const auto& [title, set] : {std::pair<const char*, const std::vector<PointResult>*>{"held-out", &ph.held},
                                   {"held-out", &ph.other_engines},
                                   {"independent", &ph.indep}}) {
    std::map<std::string, std::vector<PointResult>> cells;
    for (const auto& r : *set)
      cells[source_of(*r.point) + "|" + layout_of(*r.point) + "|" + r.point->engine].push_back(r);
    for (const auto& [key, rs] : cells) {
      int sat = 0;
      for (const auto& r : rs) sat += saturated(r) ? 1 : 0;
      const ProfileError e = summarize(rs);
      std::string k = key;
      for (char& c : k)
        if (c == '|') c = '\x1f';
      const size_t a = k.find('\x1f'), b = k.find('\x1f', a + 1);
      md << "| " << title << " | " << k.substr(0, a) << " | " << k.substr(a + 1, b - a - 1) << " | " << k.substr(b + 1)
         << " | " << e.points << " | " << sat << " | " << pct(e.median[kMeanTtft]) << " | " << pct(e.median[kMeanTpot])
         << " | " << pct(e.median[kMeanE2e]) << " | " << pct(e.median[kP99Ttft]) << " |\n";
    }
  }
  md << "\n### Physics step model: each device and each model left out of the fit\n\n";
  md << "Fitted on " << ph.profile.fit.points
     << " rows (every vLLM configuration's fit half); each line is a refit without that device or model, scored on "
        "the rows of it that the refit never saw.\n\n";
  md << "| left out | fit points | points | mean TTFT | mean TPOT | mean e2e | p99 TTFT "
        "|\n|---|---|---|---|---|---|---|\n";
  for (const auto* gs : {&ph.by_device, &ph.by_model})
    for (const auto& g : *gs) {
      const ProfileError e = summarize(g.held_out);
      md << "| " << (gs == &ph.by_device ? "device " : "model ") << g.group << " | " << g.fit_points << " | "
         << e.points << " | " << pct(e.median[kMeanTtft]) << " | " << pct(e.median[kMeanTpot]) << " | "
         << pct(e.median[kMeanE2e]) << " | " << pct(e.median[kP99Ttft]) << " |\n";
    }
  // where a left-out device's error comes from, and which way: the signed median says whether
  // the refit predicts that device's runs too slow (+) or too fast (-)
  md << "\nEach device left out, by the source and layout of its rows (signed: the median of predicted / measured "
        "- 1).\n\n| left out | source | layout | points | mean TTFT | mean TPOT | mean e2e | mean e2e, signed "
        "|\n|---|---|---|---|---|---|---|---|\n";
  for (const auto& g : ph.by_device) {
    std::map<std::pair<std::string, std::string>, std::vector<PointResult>> cells;
    for (const auto& r : g.held_out) cells[{source_of(*r.point), layout_of(*r.point)}].push_back(r);
    for (const auto& [key, rs] : cells) {
      const ProfileError e = summarize(rs);
      std::vector<double> signed_e2e;
      for (const auto& r : rs)
        if (r.predicted.ok && std::isfinite(r.error[kMeanE2e]))
          signed_e2e.push_back(r.predicted.v[kMeanE2e] / r.point->measured[kMeanE2e] - 1.0);
      const double med = median_of(signed_e2e);
      const std::string sgn = std::isfinite(med) ? (med >= 0 ? "+" : "") + pct(med) : "–";
      md << "| " << g.group << " | " << key.first << " | " << key.second << " | " << e.points << " | "
         << pct(e.median[kMeanTtft]) << " | " << pct(e.median[kMeanTpot]) << " | " << pct(e.median[kMeanE2e]) << " | "
         << sgn << " |\n";
    }
  }
  return md.str();
}

// The independent runs one by one under a predictor, with the runs they could not replay and why.
std::string independent_table(const std::vector<PointResult>& rs, const LatencyData& d) {
  std::ostringstream md;
  md << "| source | model, tp | ISL / OSL | rate (req/s) | mean TTFT ms (measured / fleetsim) | TPOT ms | e2e ms | "
        "p99 TTFT ms |\n|---|---|---|---|---|---|---|---|\n";
  for (const auto& r : rs) {
    const BenchPoint& p = *r.point;
    std::string src = p.source;
    for (const char* cut : {"default_args/", "vllm_data/"})
      if (const size_t at = src.find(cut); at != std::string::npos) src = src.substr(at + std::strlen(cut));
    if (const size_t sl = src.find_first_of("/,");
        sl != std::string::npos && src.rfind("ground_truth", 0) != 0 && src.rfind("trainval", 0) != 0)
      src = src.substr(0, sl);
    else if (sl != std::string::npos)
      src = src.substr(0, src.find(','));
    char b[640];
    std::snprintf(b, sizeof b, "| %s | %s tp%d | %.0f / %.0f | %s | %s / %s | %s / %s | %s / %s | %s / %s |\n",
                  src.c_str(), p.model.c_str(), p.tp, p.isl, p.osl,
                  p.stages.size() > 1 ? "stages" : std::to_string(p.rate_per_s).substr(0, 4).c_str(),
                  ms(p.measured[0]).c_str(), ms(r.predicted.v[0]).c_str(), ms(p.measured[1]).c_str(),
                  ms(r.predicted.v[1]).c_str(), ms(p.measured[2]).c_str(), ms(r.predicted.v[2]).c_str(),
                  ms(p.measured[3]).c_str(), ms(r.predicted.v[3]).c_str());
    md << b;
  }
  md << "\n" << row("median |error|", summarize(rs));
  for (const auto& p : d.holdout)
    if (!p.skip.empty()) md << "\nNot replayed: " << p.where.substr(p.where.find("tests/")) << ": " << p.skip << "\n";
  return md.str();
}

}  // namespace

int main(int argc, char** argv) {
  std::string root = FLEETSIM_SOURCE_DIR;
  bool write = false;
  std::string only;           // fit only the configurations whose group contains this (no device profiles)
  bool physics_only = false;  // only the physics coefficients
  bool independent = false;   // only the shipped physics coefficients on the independent runs
  std::string profile_file;   // with --independent: these coefficients instead
  FitOptions opt;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--write")
      write = true;
    else if (a == "--threads" && i + 1 < argc)
      opt.threads = std::atoi(argv[++i]);
    else if (a == "--requests-per-client" && i + 1 < argc)
      opt.protocol.requests_per_client = std::atoi(argv[++i]);
    else if (a == "--jitter-ms" && i + 1 < argc)
      opt.protocol.client_jitter_s = std::atof(argv[++i]) / 1e3;
    else if (a == "--physics-only")
      physics_only = true;
    else if (a == "--independent")
      independent = true;
    else if (a == "--profile" && i + 1 < argc)
      profile_file = argv[++i];
    else if (a == "--only" && i + 1 < argc)
      only = argv[++i];
    else if (a == "-h" || a == "--help") {
      std::printf(
          "usage: validate_latency [--write] [--threads N] [--requests-per-client K] [--jitter-ms J] [--only GROUP] "
          "[--physics-only] [--independent [--profile FILE]] [ROOT]\n");
      return 0;
    } else
      root = a;
  }
  const LatencyData d = load_latency_data(root + "/tests/validation", opt.protocol);
  int simulatable = 0;
  for (const auto& p : d.serving) simulatable += p.skip.empty() ? 1 : 0;

  std::vector<const BenchPoint*> indep = independent_points(d);
  if (independent) {
    const PerfProfile prof = profile_file.empty() ? physics_profile() : load_profile(profile_file, "");
    std::printf("%s", independent_table(evaluate(indep, &prof.c, opt), d).c_str());
    return 0;
  }
  if (!only.empty()) indep.clear();
  Physics ph;
  if (only.empty()) ph = fit_physics(d, indep, opt);
  std::vector<Fitted> fitted;
  for (const auto& [group, split] : d.by_group) {
    if (physics_only) break;
    if (split.fit.size() < 6 || split.held.empty()) continue;
    if (!only.empty() && group.find(only) == std::string::npos) continue;
    const BenchPoint& p0 = *split.fit[0];
    const std::string name =
        p0.device + "/" + p0.model + "/tp" + std::to_string(p0.tp) + (p0.engine == "vllm" ? "" : "-" + p0.engine);
    fitted.push_back(fit_profile(name, split, p0, false, opt));
  }
  std::map<std::string, size_t> device_fit;
  for (const auto& [dev, split] : d.by_device) {
    if (split.fit.size() < 8 || !only.empty() || physics_only) continue;
    device_fit[dev] = fitted.size();
    fitted.push_back(fit_profile(dev + "/vllm", split, *split.fit[0], true, opt));
  }

  // uncalibrated roofline on the same held-out rows, and the independent runs
  std::vector<const BenchPoint*> held_vllm, held_all;
  for (const auto& [group, split] : d.by_group)
    for (const BenchPoint* p : split.held) {
      if (!only.empty()) break;
      held_all.push_back(p);
      if (p->engine == "vllm") held_vllm.push_back(p);
    }
  const auto roof_vllm = evaluate(held_vllm, nullptr, opt);
  const auto roof_indep = evaluate(indep, nullptr, opt);
  std::vector<PointResult> cal_indep;
  if (device_fit.count("h100-sxm-80gb"))
    cal_indep = evaluate(indep, &fitted[device_fit["h100-sxm-80gb"]].profile.c, opt);

  std::vector<PointResult> vllm_cfg_held, vllm_dev_held, vllm_cfg_fit;
  for (const auto& f : fitted) {
    const bool dev = f.profile.model.empty();
    if (f.profile.engine.rfind("vllm", 0) != 0) continue;
    (dev ? vllm_dev_held : vllm_cfg_held)
        .insert((dev ? vllm_dev_held : vllm_cfg_held).end(), f.held.begin(), f.held.end());
    if (!dev) vllm_cfg_fit.insert(vllm_cfg_fit.end(), f.fit.begin(), f.fit.end());
  }

  std::ostringstream md;
  md << "Data: " << d.serving.size() << " published serving runs (" << simulatable << " of them expressible), and "
     << indep.size() << " of the " << d.holdout.size() << " independent runs (the others lost requests).\n\n";
  md << "### Summary: median |error| on points no fit saw\n\n";
  md << "| predictor, points | points | mean TTFT | mean TPOT | mean e2e | p99 TTFT |\n|---|---|---|---|---|---|\n";
  md << row("uncalibrated roofline, held-out vLLM rows", summarize(roof_vllm));
  md << row("**physics model, held-out vLLM rows**", ph.profile.held_out);
  md << row("physics model, each device left out of its fit", ph.profile.cross_validated);
  md << row("**per-configuration vLLM profiles, held-out rows**", summarize(vllm_cfg_held));
  md << row("per-device vLLM profiles, held-out rows", summarize(vllm_dev_held));
  md << row("per-configuration vLLM profiles, their fit rows (not a test)", summarize(vllm_cfg_fit));
  md << row("uncalibrated roofline, independent runs", summarize(roof_indep));
  md << row("**physics model, independent runs**", summarize(ph.indep));
  if (!cal_indep.empty()) md << row("h100-sxm-80gb/vllm (device profile), independent runs", summarize(cal_indep));
  md << physics_tables(ph);
  md << "\n### Each shipped profile\n\n";
  md << "| profile | engine | fit points | held-out points | held-out mean TTFT | mean TPOT | mean e2e | p99 TTFT | "
        "fit-set mean TTFT | mean TPOT |\n|---|---|---|---|---|---|---|---|---|---|\n";
  for (const auto& f : fitted) {
    const PerfProfile& p = f.profile;
    md << "| `" << p.name << "` | " << p.engine << " | " << p.fit.points << " | " << p.held_out.points << " | "
       << pct(p.held_out.median[kMeanTtft]) << " | " << pct(p.held_out.median[kMeanTpot]) << " | "
       << pct(p.held_out.median[kMeanE2e]) << " | " << pct(p.held_out.median[kP99Ttft]) << " | "
       << pct(p.fit.median[kMeanTtft]) << " | " << pct(p.fit.median[kMeanTpot]) << " |\n";
  }
  md << "\n### Independent runs, one by one (physics model, no fit saw them)\n\n";
  md << independent_table(ph.indep, d);
  std::printf("%s", md.str().c_str());

  if (write) {
    if (only.empty()) std::ofstream(root + "/profiles/physics.yaml") << profile_yaml(ph.profile);
    for (const auto& f : fitted) {
      const std::string path = root + "/profiles/" + f.profile.name + ".yaml";
      mkdirs(path.substr(0, path.rfind('/')));
      std::ofstream(path) << profile_yaml(f.profile);
    }
    std::ofstream csv(root + "/tests/validation/latency_fleetsim.csv");
    csv << "where,profile,set,mean_ttft_ms,mean_tpot_ms,mean_e2e_ms,p99_ttft_ms,err_mean_ttft,err_mean_tpot,err_mean_"
           "e2e,"
           "err_p99_ttft\n";
    auto line = [&](const PointResult& r, const std::string& prof, const char* set) {
      csv << r.point->where.substr(r.point->where.find("tests/")) << "," << prof << "," << set;
      for (int m = 0; m < kBenchMetrics; ++m) csv << "," << ms(r.predicted.v[m]);
      for (int m = 0; m < kBenchMetrics; ++m) {
        char b[32];
        std::snprintf(b, sizeof b, "%.4f", r.error[m]);
        csv << "," << (std::isfinite(r.error[m]) ? b : "");
      }
      csv << "\n";
    };
    for (const auto& f : fitted) {
      for (const auto& r : f.fit) line(r, f.profile.name, "fit");
      for (const auto& r : f.held) line(r, f.profile.name, "held_out");
    }
    for (const auto& r : cal_indep) line(r, "h100-sxm-80gb/vllm", "independent");
    for (const auto& r : ph.fit) line(r, "physics", "fit");
    for (const auto& r : ph.held) line(r, "physics", "held_out");
    for (const auto& r : ph.indep) line(r, "physics", "independent");
    for (const auto& r : roof_vllm) line(r, "roofline", "held_out");
  }
  return 0;
}
