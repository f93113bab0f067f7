#include "fit_command.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <sstream>

#include "libsim/calibrate/fit.hpp"
#include "libsim/input/input_file.hpp"
#include "libsim/report/report.hpp"
#include "libsim/sweep/sweep.hpp"
#include "write_file.hpp"

namespace fleetsim::cli {

namespace {

std::string pct(double v) { return std::isfinite(v) ? fmt::format("{:.1f}%", 100.0 * v) : "-"; }

// Per metric: mean |relative error| and R^2 of predicted against measured.
void quality(const std::vector<PointResult>& r, int m, double& mape, double& r2) {
  double sum_err = 0, n = 0, mean = 0;
  for (const auto& x : r)
    if (std::isfinite(x.error[m])) sum_err += x.error[m], mean += x.point->measured[m], n += 1;
  mape = n > 0 ? sum_err / n : std::nan("");
  if (n < 2) {
    r2 = std::nan("");
    return;
  }
  mean /= n;
  double ss_res = 0, ss_tot = 0;
  for (const auto& x : r)
    if (std::isfinite(x.error[m])) {
      const double d = x.point->measured[m] - x.predicted.v[m];
      ss_res += d * d;
      ss_tot += (x.point->measured[m] - mean) * (x.point->measured[m] - mean);
    }
  r2 = ss_tot > 0 ? 1.0 - ss_res / ss_tot : std::nan("");
}

// --engine "vllm 0.15.1": the engine as fleetsim names it ("" if none), and the version its
// results do not say: MAJOR.MINOR[...] ("" if not given, or not a version)
std::string engine_of(const std::string& arg, std::string& version) {
  std::istringstream in(arg);
  std::string name, extra;
  in >> name >> version >> extra;
  int major = 0, minor = 0;
  if (!extra.empty() || (!version.empty() && std::sscanf(version.c_str(), "%d.%d", &major, &minor) != 2)) return "";
  return engine_named(name);
}

// What the option definitions (cli/main.cpp, which already refuses empty values) let through:
// --folds 1, and an output that is one of the inputs (the profile would overwrite the data).
void check_args(const FitArgs& a) {
  if (a.folds < 0 || a.folds == 1 || a.folds > 50)
    throw InputError(Location{}, fmt::format("--folds {}: expected 0 (no held-out error) or 2 to 50 folds", a.folds));
  refuse_overwriting_input(a.output, "--output", a.inputs);
  // engine.perf_profile takes a name with .yaml or .yml for a file, any other for a shipped profile
  if (!a.output.empty() && a.output != "-" && a.output.find(".yaml") == std::string::npos &&
      a.output.find(".yml") == std::string::npos)
    throw InputError(Location{}, "--output " + a.output +
                                     ": expected a file name with .yaml or .yml, which is how engine.perf_profile "
                                     "tells a profile file from a shipped profile's name");
  // a flag the catalog does not know would be dropped wherever the data names its own
  auto names = [](const auto& list) {
    std::vector<std::string> v;
    for (const auto& x : list) v.push_back(x.name);
    return v;
  };
  if (!a.model.empty() && catalog_model_for(a.model).empty()) {
    const std::string sug = did_you_mean(a.model, names(builtin_models()));
    throw InputError(Location{}, "--model " + a.model + ": not a catalog model, nor a Hugging Face id of one" +
                                     (sug.empty() ? "" : " (did you mean '" + sug + "'?)") +
                                     "; `fleetsim catalog` lists them");
  }
  if (!a.device.empty() && catalog_device_for(a.device).empty()) {
    const std::string sug = did_you_mean(a.device, names(builtin_devices()));
    throw InputError(Location{}, "--device " + a.device + ": not a catalog device" +
                                     (sug.empty() ? "" : " (did you mean '" + sug + "'?)") +
                                     "; `fleetsim catalog` lists them");
  }
  std::string version;
  if (engine_of(a.engine, version).empty())
    throw InputError(Location{}, "--engine " + a.engine +
                                     ": expected vllm, sglang or trtllm (TensorRT-LLM), with its version after a "
                                     "space if you know it (\"vllm 0.15.1\")");
}

bool has_measurement(const BenchPoint& p) {
  for (double v : p.measured)
    if (std::isfinite(v)) return true;
  return false;
}

}  // namespace

int run_fit(const FitArgs& a, const std::function<void(const std::string&)>& emit) {
  check_args(a);
  PerfProfile prof;
  // (vLLM schedules ahead from 0.14: a profile of runs whose version is unknown is of runs that do not)
  std::string engine_version;
  const std::string engine = engine_of(a.engine, engine_version);
  prof.engine = engine + (engine_version.empty() ? "" : " " + engine_version);
  prof.method = a.steps ? "non-negative least squares on step timings (fleetsim fit --steps)"
                : a.global
                    ? "Levenberg-Marquardt over simulated benchmark runs, every device at once (fleetsim fit --global)"
                    : "Levenberg-Marquardt over simulated benchmark runs (fleetsim fit)";
  std::string data;
  for (const auto& f : a.inputs) data += (data.empty() ? "" : ", ") + f;
  prof.data = data;
  Json out;
  std::string table;

  if (a.steps) {
    std::vector<StepSample> samples;
    std::string device;
    for (const auto& f : a.inputs) {
      auto s = read_step_samples(f, device);
      samples.insert(samples.end(), s.begin(), s.end());
    }
    if (int(samples.size()) < kMinFitPoints)
      throw InputError(Location{}, fmt::format("{} step timings in {}: a fit needs at least {}", samples.size(), data,
                                               kMinFitPoints));
    // a step measured more than once is one step: repeats weigh it more in the fit, but count once
    // towards the fit's minimum, and all of them fall in one fold, or a fold would be scored on
    // copies of steps its fit saw
    std::map<std::string, int> shape_of;
    std::vector<int> shape(samples.size());
    for (size_t i = 0; i < samples.size(); ++i) {
      const StepSample& x = samples[i];
      const std::string key = fmt::format("{}|{}|{}|{:.17g}|{:.17g}|{:.17g}|{:.17g}|{:.17g}|{:.17g}", x.model,
                                          x.weight_dtype, x.tp, x.x[0], x.x[1], x.x[2], x.x[3], x.x[4], x.x[5]);
      shape[i] = shape_of.emplace(key, int(shape_of.size())).first->second;
    }
    const int shapes = int(shape_of.size());
    if (shapes < kMinFitPoints)
      throw InputError(Location{}, fmt::format("{} step timings in {} time only {} different step{}: a fit needs at "
                                               "least {}",
                                               samples.size(), data, shapes, shapes == 1 ? "" : "s", kMinFitPoints));
    prof.device = device;
    // what the rows share names the profile, so that a pool of that configuration finds its error
    bool one_model = true, one_tp = true, one_dtype = true;
    for (const auto& x : samples)
      one_model = one_model && x.model == samples[0].model, one_tp = one_tp && x.tp == samples[0].tp,
      one_dtype = one_dtype && x.weight_dtype == samples[0].weight_dtype;
    if (one_model) prof.model = samples[0].model;
    if (one_model && one_tp) prof.tp = samples[0].tp;
    if (one_dtype) prof.weight_dtype = samples[0].weight_dtype;
    prof.c = fit_steps(samples);
    check_fitted(prof.c, data);
    // k-fold: each step predicted by a fit without it
    const int k = a.folds;
    std::vector<double> err_fit, err_held;
    for (const auto& s : samples) err_fit.push_back(std::fabs(step_prediction(prof.c, s) - s.step_s) / s.step_s);
    if (k >= 2 && shapes < 2 * k)
      std::cerr << "fleetsim fit: " << shapes << " different steps are too few for " << k
                << "-fold cross-validation (2 per fold): no held-out error\n";
    else if (k >= 2) {
      for (int f = 0; f < k; ++f) {
        std::vector<StepSample> train;
        for (size_t i = 0; i < samples.size(); ++i)
          if (shape[i] % k != f) train.push_back(samples[i]);
        const PerfCoefficients c = fit_steps(train);
        for (size_t i = 0; i < samples.size(); ++i)
          if (shape[i] % k == f)
            err_held.push_back(std::fabs(step_prediction(c, samples[i]) - samples[i].step_s) / samples[i].step_s);
      }
    }
    auto med = [](std::vector<double> v) {
      if (v.empty()) return std::nan("");
      std::sort(v.begin(), v.end());
      return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
    };
    double mean_fit = 0;
    for (double e : err_fit) mean_fit += e;
    mean_fit /= double(err_fit.size());
    table +=
        fmt::format("{} step timings on {}\nstep time: MAPE {} (fit), median |error| {} (fit){}\n", samples.size(),
                    device, pct(mean_fit), pct(med(err_fit)),
                    err_held.empty() ? std::string() : fmt::format(", {} ({}-fold held out)", pct(med(err_held)), k));
    prof.step_time.steps = int(samples.size());
    prof.step_time.median = med(err_fit);
    prof.step_time.held_out = med(err_held);
    out["steps"] = samples.size();
    out["step_time"] = {
        {"mape", mean_fit}, {"median_abs_error", med(err_fit)}, {"held_out_median_abs_error", med(err_held)}};
  } else {
    BenchPoint defaults;
    defaults.device_id = a.device;
    defaults.model_id = a.model;
    defaults.tp = a.tp > 0 ? a.tp : 1;
    defaults.engine = engine;
    defaults.engine_version = engine_version;
    defaults.weight_dtype = "";
    std::vector<BenchPoint> points;
    for (const auto& f : a.inputs) {
      auto p = read_benchmarks(f, defaults);
      points.insert(points.end(), p.begin(), p.end());
    }
    // --device, --model and --tp fill in what results leave out: one a result contradicts was
    // meant for other data, and would otherwise be dropped there without a word
    for (const auto& p : points) {
      auto clash = [&](const std::string& flag, const std::string& given, const std::string& named) {
        throw InputError(Location{p.where, 0, 0, ""},
                         "this result names its " + flag.substr(2) + " (" + named + "), not " + flag + " " + given +
                             ": " + flag + " only fills in what a result leaves out; leave it off for these results");
      };
      if (!a.model.empty() && !p.model.empty() && p.model != catalog_model_for(a.model))
        clash("--model", a.model, p.model_id);
      if (!a.device.empty() && !p.device.empty() && p.device != catalog_device_for(a.device))
        clash("--device", a.device, p.device_id);
      if (a.tp > 0 && p.tp != a.tp) clash("--tp", std::to_string(a.tp), std::to_string(p.tp));
    }
    mark_unsimulatable(points, BenchProtocol{a.requests_per_client, 0.0});
    std::vector<const BenchPoint*> ok;
    for (const auto& p : points) {
      const std::string skip = !p.skip.empty() || has_measurement(p)
                                   ? p.skip
                                   : "no measured latency (mean_ttft_ms, mean_tpot_ms, mean_e2e_ms or p99_ttft_ms)";
      if (!skip.empty()) {
        std::cerr << "fleetsim fit: skipping " << p.where << ": " << skip << "\n";
        continue;
      }
      if (!a.global && !ok.empty() && p.device != ok[0]->device)
        throw InputError(Location{p.where, 0, 0, ""},
                         "a profile is fitted for one device: this point is on " + p.device + ", earlier ones on " +
                             ok[0]->device + " (fit each device on its own, or all at once with --global)");
      ok.push_back(&p);
    }
    // about all the inputs together, so located in none of them
    if (int(ok.size()) < kMinFitPoints)
      throw InputError(Location{}, fmt::format("{} usable benchmark points in {}: a fit needs at least {} (a point "
                                               "needs a catalog model and device, lengths, a load, and a measured "
                                               "latency; --device/--model/--tp fill what JSON results do not say)",
                                               ok.size(), data, kMinFitPoints));
    // the same benchmark twice would weigh double, and could sit on both sides of a fold
    std::map<std::string, std::string> seen;
    for (const BenchPoint* p : ok) {
      std::string key = benchmark_key(*p);
      for (double v : p->measured) key += fmt::format("|{:.17g}", v);
      if (const auto [it, fresh] = seen.emplace(key, p->where); !fresh)
        throw InputError(Location{p->where, 0, 0, ""}, "the same benchmark as " + it->second +
                                                           " (configuration, load and measurements): drop one; a "
                                                           "point given twice would weigh double in the fit");
    }
    // a profile is of one engine: the one its runs used
    bool one_engine = true, one_version = true;
    for (const BenchPoint* p : ok)
      one_engine = one_engine && p->engine == ok[0]->engine,
      one_version = one_version && p->engine_version == ok[0]->engine_version;
    if (!one_engine && !a.global)
      throw InputError(Location{}, "a profile is fitted for one engine: " + ok.back()->where + " ran on " +
                                       ok.back()->engine + ", " + ok[0]->where + " on " + ok[0]->engine +
                                       " (fit each engine on its own)");
    if (one_engine)
      prof.engine = ok[0]->engine + (one_version && !ok[0]->engine_version.empty() ? " " + ok[0]->engine_version : "");
    else
      prof.engine = "several";  // a global fit across engines: it applies to none of them as measured
    // a global fit says what it carries to a device or model it did not see: it needs one to leave out
    if (a.global) {
      std::set<std::string> devices, models;
      for (const BenchPoint* p : ok) devices.insert(p->device), models.insert(p->model);
      if (devices.size() < 2 && models.size() < 2)
        throw InputError(Location{},
                         "--global fits across devices and models, and measures itself on one left "
                         "out: these points are all " +
                             ok[0]->model + " on " + ok[0]->device +
                             " (fit them without --global, or add another device's or model's)");
    }
    prof.device = a.global ? std::string() : ok[0]->device;
    bool one_model = !a.global, one_tp = true;
    for (const BenchPoint* p : ok)
      one_model = one_model && p->model == ok[0]->model, one_tp = one_tp && p->tp == ok[0]->tp;
    bool one_dtype = true;
    for (const BenchPoint* p : ok) one_dtype = one_dtype && p->weight_dtype == ok[0]->weight_dtype;
    if (one_model) prof.model = ok[0]->model;
    if (one_model && one_tp) prof.tp = ok[0]->tp;
    if (one_dtype) prof.weight_dtype = ok[0]->weight_dtype;
    FitOptions opt;
    opt.threads = a.threads;
    opt.folds = a.folds;
    opt.protocol.requests_per_client = a.requests_per_client;
    opt.progress = [](const std::string& s) { std::cerr << "fleetsim fit: " << s << "\n"; };
    opt.global = a.global;
    if (a.global) prof.weight_dtype.clear();
    prof.c = fit_benchmarks(ok, opt);
    check_fitted(prof.c, data);
    const auto fitted = evaluate(ok, &prof.c, opt);
    Json unserved = Json::array();
    for (const auto& x : fitted)
      if (!x.predicted.ok) {
        std::cerr << "fleetsim fit: " << x.point->where
                  << ": with the fitted profile this run does not finish (its requests rejected, or more arriving "
                     "than served): it counts in no error figure\n";
        unserved.push_back(x.point->where);
      }
    prof.fit = summarize(fitted);
    // held-out runs that a fit without them cannot finish count in no held-out figure either: say so
    auto note_unfinished = [](const std::vector<PointResult>& held, const std::string& which) {
      int n = 0;
      for (const auto& x : held) n += x.predicted.ok ? 0 : 1;
      if (n > 0)
        std::cerr << "fleetsim fit: " << n << " of " << held.size() << " " << which
                  << " runs do not finish with the fit that did not see them: they count in no held-out figure\n";
      return n;
    };
    std::string cv_table;
    if (a.global) {
      // what a new device or model would see: each predicted by a fit without it
      std::vector<PointResult> lodo_all;
      Json cv = Json::object();
      for (const char* by : {"device", "model"}) {
        const auto groups = leave_one_group_out(
            ok, [&](const BenchPoint& p) { return by[0] == 'd' ? p.device : p.model; }, opt);
        cv_table += fmt::format(
            "\nleave one {} out: median |error| on the {} left out\n{:<28} {:>6} {:>10} {:>10} "
            "{:>10} {:>10}\n",
            by, by, by, "points", "mean TTFT", "mean TPOT", "mean e2e", "p99 TTFT");
        Json rows = Json::array();
        for (const auto& g : groups) {
          const ProfileError e = summarize(g.held_out);
          cv_table += fmt::format("{:<28} {:>6} {:>10} {:>10} {:>10} {:>10}\n", g.group, e.points, pct(e.median[0]),
                                  pct(e.median[1]), pct(e.median[2]), pct(e.median[3]));
          Json r = {{by, g.group}, {"points", e.points}, {"fit_points", g.fit_points}};
          for (int m = 0; m < kBenchMetrics; ++m)
            r[kProfileMetrics[m]] = std::isfinite(e.median[m]) ? Json(e.median[m]) : Json();
          rows.push_back(r);
          if (by[0] == 'd') lodo_all.insert(lodo_all.end(), g.held_out.begin(), g.held_out.end());
        }
        cv[std::string("leave_one_") + by + "_out"] = rows;
      }
      prof.cross_validated = summarize(lodo_all);
      cv["unfinished"] = note_unfinished(lodo_all, "left-out-device");
      out["cross_validation"] = cv;
    } else if (std::set<std::string> benchmarks; a.folds >= 2 && [&] {
                 for (const BenchPoint* p : ok) benchmarks.insert(benchmark_key(*p));
                 return int(benchmarks.size()) >= 2 * a.folds;
               }()) {
      const auto held = cross_validate(ok, opt);
      prof.held_out = summarize(held);
      out["held_out_unfinished"] = note_unfinished(held, "held-out");
    } else if (a.folds >= 2 && !a.global)
      std::cerr << "fleetsim fit: " << benchmarks.size() << " benchmarks (a configuration at a load; " << ok.size()
                << " points) are too few for " << a.folds
                << "-fold cross-validation (2 per fold, repeats held out together): no held-out error\n";
    const bool cv = prof.held_out.points > 0;
    table += fmt::format("{} benchmark points{} on {}{}\n\n{:<10} {:>8} {:>8} {:>14} {:>14}\n", ok.size(),
                         unserved.empty() ? std::string() : fmt::format(" ({} not served)", unserved.size()),
                         prof.device.empty() ? std::string("every device") : prof.device,
                         prof.model.empty() ? "" : " (" + prof.model + ")", "metric", "MAPE", "R^2", "median |error|",
                         cv ? fmt::format("{}-fold held out", a.folds) : std::string());
    Json q;
    for (int m = 0; m < kBenchMetrics; ++m) {
      double mape, r2;
      quality(fitted, m, mape, r2);
      if (!std::isfinite(mape)) continue;
      table += fmt::format("{:<10} {:>8} {:>8} {:>14} {:>14}\n", kProfileMetrics[m], pct(mape),
                           std::isfinite(r2) ? fmt::format("{:.3f}", r2) : "-", pct(prof.fit.median[m]),
                           cv ? pct(prof.held_out.median[m]) : std::string());
      q[kProfileMetrics[m]] = {{"mape", mape},
                               {"r2", std::isfinite(r2) ? Json(r2) : Json()},
                               {"median_abs_error", prof.fit.median[m]},
                               {"held_out_median_abs_error",
                                std::isfinite(prof.held_out.median[m]) ? Json(prof.held_out.median[m]) : Json()}};
    }
    table += cv_table;
    out["points"] = ok.size();
    out["unserved"] = unserved;
    out["quality"] = q;
  }
  prof.name = !a.name.empty() ? a.name
              : a.global      ? std::string(kPhysicsProfile)
                              : prof.device + "/" + (prof.model.empty() ? std::string("any") : prof.model) +
                               (prof.tp > 0 ? "/tp" + std::to_string(prof.tp) : "");
  table += "\ncoefficients:\n";
  Json coeffs;
  for (int i = 0; i < kProfileTerms; ++i) {
    table += fmt::format("  {:<26} {:.6g}\n", profile_term_names()[i], profile_term(prof.c, i));
    coeffs[profile_term_names()[i]] = profile_term(prof.c, i);
  }
  const std::string yaml = profile_yaml(prof);
  const bool to_stdout = a.output.empty() || a.output == "-";
  // what a run would reject is not written (an odd --name, error figures out of range, ...)
  try {
    parse_profile(yaml, to_stdout ? "<fitted profile>" : a.output);
  } catch (const InputError& e) {
    throw InputError(Location{},
                     "the profile fitted to " + data + " would not load, so it is not written: " + e.what());
  }
  if (!to_stdout) {
    write_file_whole(a.output, yaml, "the profile");
    // a scenario reads a relative profile path from its own folder, so the advice gives the whole path
    table += "\nwrote " + a.output +
             " (use it with engine.perf_profile: " + std::filesystem::absolute(a.output).lexically_normal().string() +
             ")\n";
  }
  out["profile"] = prof.name;
  out["device"] = prof.device.empty() ? "any" : prof.device;
  out["coefficients"] = coeffs;
  if (a.format == "json")
    emit(out.dump(2) + "\n");
  else if (to_stdout)
    emit(yaml);
  else
    emit(table);
  if (to_stdout && a.format != "json") std::cerr << table;
  return 0;
}

}  // namespace fleetsim::cli
