#include "calibrate/fit.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

#include "catalog/catalog.hpp"
#include "core/stepwork.hpp"
#include "input/csv.hpp"
#include "input/input_file.hpp"

namespace fleetsim {

Eigen::VectorXd nnls(const Eigen::MatrixXd& A, const Eigen::VectorXd& b, int max_iterations) {
  const int n = int(A.cols());
  if (max_iterations <= 0) max_iterations = 30 * n;
  Eigen::VectorXd x = Eigen::VectorXd::Zero(n);
  std::vector<bool> passive(size_t(n), false);
  const double tol = 1e-12 * std::max(1.0, A.norm() * b.norm());
  for (int it = 0; it < max_iterations; ++it) {
    const Eigen::VectorXd w = A.transpose() * (b - A * x);
    int j = -1;
    double best = tol;
    for (int i = 0; i < n; ++i)
      if (!passive[size_t(i)] && w[i] > best) best = w[i], j = i;
    if (j < 0) break;
    passive[size_t(j)] = true;
    for (;;) {
      std::vector<int> P;
      for (int i = 0; i < n; ++i)
        if (passive[size_t(i)]) P.push_back(i);
      Eigen::MatrixXd Ap(A.rows(), Eigen::Index(P.size()));
      for (size_t k = 0; k < P.size(); ++k) Ap.col(Eigen::Index(k)) = A.col(P[k]);
      const Eigen::VectorXd zp = Ap.colPivHouseholderQr().solve(b);
      Eigen::VectorXd z = Eigen::VectorXd::Zero(n);
      for (size_t k = 0; k < P.size(); ++k) z[P[k]] = zp[Eigen::Index(k)];
      bool feasible = true;
      for (int i : P) feasible = feasible && z[i] > 0;
      if (feasible) {
        x = z;
        break;
      }
      // step back towards x until a passive coefficient reaches zero, and free it
      double alpha = 1.0;
      for (int i : P)
        if (z[i] <= 0) alpha = std::min(alpha, x[i] / (x[i] - z[i]));
      x = x + alpha * (z - x);
      for (int i : P)
        if (x[i] <= 1e-15) passive[size_t(i)] = false, x[i] = 0;
    }
  }
  return x;
}

std::vector<StepSample> read_step_samples(const std::string& path, std::string& device_out) {
  std::istringstream in(read_text_file(path, "step-timings file"));
  CsvReader csv(in, path);
  for (const char* need : {"model", "device", "prefill_tokens", "decode_seqs", "decode_context_tokens", "step_ms"})
    if (!csv.has(need))
      throw InputError(Location{path, 1, 0, csv.header_line()},
                       std::string("missing column '") + need +
                           "': per-step timings need model, device, prefill_tokens, decode_seqs, "
                           "decode_context_tokens, step_ms (tp, weight_dtype, prefill_seqs, "
                           "prefill_context_tokens optional)");
  std::vector<StepSample> out;
  std::map<std::string, Scenario> scenarios;  // one per configuration, for its work per device
  while (csv.next()) {
    // a count of tokens or sequences in one step, within what a serving step can hold: a whole
    // number, and given where the column is required
    auto num = [&](const char* k, double dflt, double most, bool required = false) {
      if (required && csv.get(k).empty()) csv.fail(fmt::format("column {}: a count is needed, the cell is empty", k));
      const double x = csv.number(k);
      if (std::isnan(x)) return dflt;
      if (!(x >= 0 && x <= most) || x != std::floor(x))
        csv.fail(fmt::format("column {}: expected a whole number in [0, {:g}], not '{}'", k, most, csv.get(k)));
      return x;
    };
    const int tp = int(csv.integer("tp", 1, 64, 1));
    const std::string dtype = csv.get("weight_dtype").empty() ? "bf16" : csv.get("weight_dtype");
    // (the cell goes into a scenario's text: only a dtype's name may)
    if (std::find(weight_dtypes().begin(), weight_dtypes().end(), dtype) == weight_dtypes().end()) {
      std::string names;
      for (const std::string& w : weight_dtypes()) names += (names.empty() ? "" : ", ") + w;
      csv.fail("column weight_dtype: expected one of " + names + ", not '" + dtype + "'");
    }
    const std::string key = csv.get("model") + "|" + csv.get("device") + "|" + std::to_string(tp) + "|" + dtype;
    if (!scenarios.count(key)) {
      if (catalog_model_for(csv.get("model")).empty())
        csv.fail("model '" + csv.get("model") + "' is not in the catalog (fleetsim catalog lists them)");
      if (catalog_device_for(csv.get("device")).empty())
        csv.fail("device '" + csv.get("device") + "' is not in the catalog (fleetsim catalog lists them)");
      std::ostringstream y;
      y << "name: steps\nduration_s: 1\ndevice: " << catalog_device_for(csv.get("device"))
        << "\nmodel: " << catalog_model_for(csv.get("model")) << "\nweight_dtype: " << dtype
        << "\nengine: {perf_profile: none" << (tp == 1 ? "" : ", tensor_parallel: " + std::to_string(tp))
        << "}\nfleet: {replicas: 1}\nworkload: {arrival: {process: poisson, rate_per_s: 1}, prompt_tokens: 10, "
           "output_tokens: 10}\n";
      try {
        scenarios.emplace(key, load_scenario_text(y.str(), csv.where(), ""));
      } catch (const InputError& e) {
        csv.fail(std::string("cannot model this row's configuration (") + e.what() + ")");
      }
    }
    const Scenario& sc = scenarios.at(key);
    if (device_out.empty())
      device_out = sc.pools[0].device.name;
    else if (device_out != sc.pools[0].device.name)
      csv.fail("a profile is fitted for one device: this row is on " + sc.pools[0].device.name + ", earlier rows on " +
               device_out);
    const PoolParams P = sc.pools[0].params();
    const double bf16 = sc.pools[0].device.bf16_tflops * 1e12;
    const double peak_flops = P.peak_flops_per_s, peak_bytes = P.peak_bytes_per_s;
    const double pt = num("prefill_tokens", 0, 1e7, true), ps = num("prefill_seqs", pt > 0 ? 1 : 0, 1e5);
    if (pt > 0 && ps < 1)
      csv.fail("column prefill_seqs: a step that prefills tokens prefills a sequence at least, not 0");
    const double ds = num("decode_seqs", 0, 1e5, true), dctx = num("decode_context_tokens", 0, 1e10, true);
    if (pt + ds <= 0) csv.fail("a step that prefills no token and decodes no sequence has nothing to time");
    // each prefilling sequence computes a token at least, and each decoding one reads its own
    if (ps > pt) csv.fail(fmt::format("{:g} sequences prefill {:g} tokens: each prefills one at least", ps, pt));
    if (dctx < ds)
      csv.fail(
          fmt::format("{:g} sequences decode over {:g} context tokens: each reads its own token at least", ds, dctx));
    // context the prefilling sequences computed in earlier chunks: attended to and read, not computed
    const double pc = num("prefill_context_tokens", 0, 1e10);
    if (pc > 0 && pt <= 0)
      csv.fail("column prefill_context_tokens: context before a prefill chunk needs prefill_tokens in the step");
    const double per_seq = ps > 0 ? pt / ps : 0;
    StepSample s;
    s.where = csv.where();
    s.model = sc.pools[0].model.name;
    s.weight_dtype = sc.pools[0].weight_dtype;
    s.tp = tp;
    s.x[0] = 1.0;
    s.x[1] = ps + ds;
    // the terms as a calibrated pool's step composes them (core/stepwork.hpp, one micro-batch):
    // the routed experts the step's tokens touch, and sliding-window layers' fixed KV per sequence
    // and attention per prompt token
    const WorkParams& w = P.work;
    s.x[2] = step_weight_bytes(w, P.moe, pt + ds) / peak_bytes;
    // (a chunk after the first attends to the context before it: with the sequences' chunks and
    // contexts taken as equal, per_seq x pc pairs more, and MLA up-projects that context)
    s.x[3] = (w.matmul_flops_per_token * (pt + ds) + w.context_upproj_flops_per_token * pc) / peak_flops;
    s.x[4] = (w.kv_bytes_per_token * (pt + pc + dctx) + w.window_bytes_per_seq * (ps + ds)) / peak_bytes;
    s.x[5] = (w.prefill_attn_flops_per_pair * (ps * per_seq * (per_seq + 1) / 2 + per_seq * pc) +
              w.window_flops_per_token * pt) /
             bf16;
    // bounded as a token's time is: a step of over a minute is no serving step
    s.step_s = csv.number("step_ms") / 1e3;
    if (!(s.step_s > 0 && s.step_s <= latency_limit_s(kMeanTpot)))
      csv.fail("column step_ms: expected a step time > 0 and at most " +
               std::to_string((long long)(latency_limit_s(kMeanTpot) * 1e3)) + " ms (a minute), not '" +
               csv.get("step_ms") + "'");
    out.push_back(s);
  }
  if (out.empty()) throw InputError(Location{path, 0, 0, ""}, "no step timings in " + path);
  return out;
}

double step_prediction(const PerfCoefficients& c, const StepSample& s) {
  double term[6];
  for (int i = 0; i < 6; ++i) term[i] = profile_term(c, i) * s.x[i];
  // the weight read and the GEMMs, the KV read and attention: one kernel each, composed as the core does
  PerfParams f{};
  f.kernel_overlap = c.kernel_overlap ? 1 : 0;
  return term[0] + term[1] + kernel_s(f, term[2], term[3]) + kernel_s(f, term[4], term[5]);
}

PerfCoefficients fit_steps(const std::vector<StepSample>& samples) {
  // relative errors: each row is scaled by its measured time, so short steps count as much as long ones
  Eigen::MatrixXd A(Eigen::Index(samples.size()), 6);
  Eigen::VectorXd b(Eigen::Index(samples.size()));
  for (size_t r = 0; r < samples.size(); ++r) {
    const double w = samples[r].step_s > 0 ? 1.0 / samples[r].step_s : 1.0;
    for (int i = 0; i < 6; ++i) A(Eigen::Index(r), i) = samples[r].x[i] * w;
    b[Eigen::Index(r)] = samples[r].step_s * w;
  }
  // scale columns to unit norm for conditioning
  Eigen::VectorXd scale(6);
  for (int i = 0; i < 6; ++i) {
    scale[i] = A.col(i).norm() > 0 ? A.col(i).norm() : 1.0;
    A.col(i) /= scale[i];
  }
  const Eigen::VectorXd x = nnls(A, b);
  PerfCoefficients c;
  for (int i = 0; i < 6; ++i) profile_term(c, i) = x[i] / scale[i];
  c.comm_factor = 0.0;       // measured step times already hold the collectives: the terms absorb them
  c.kernel_overlap = false;  // a least-squares fit is of the sum
  return c;
}

void check_fitted(const PerfCoefficients& c, const std::string& inputs) {
  const std::string head =
      "the measurements" + (inputs.empty() ? std::string() : " in " + inputs) + " cannot be fitted: ";
  for (int i = 0; i < kProfileTerms; ++i) {
    const double hi = profile_term_max(i), v = profile_term(c, i);
    if (!(v >= 0 && v <= hi)) {
      char b[200];
      std::snprintf(b, sizeof b, "the fitted %s is %.6g, outside [0, %g], the range a profile allows",
                    profile_term_names()[i], v, hi);
      throw InputError(Location{}, head + b);
    }
  }
  if (!(c.weight_factor > 0 || c.matmul_factor > 0 || c.step_s > 0))
    throw InputError(Location{},
                     head + "step_s, weight_factor and matmul_factor all came out 0 (a profile needs one above 0)");
}

int fitted_terms(bool global) { return global ? kProfileTerms - 1 : kProfileBaseTerms; }

PerfCoefficients prior_coefficients(bool global) {
  PerfCoefficients c;
  if (global) {
    c.layer_s = 1e-5;                   // a few kernel launches per layer under CUDA graphs
    c.gemm_ramp_tokens = 32;            // tensor-core GEMMs reach half their peak near a few dozen rows
    c.moe_factor = 1.5;                 // grouped expert GEMMs run below dense ones
    c.client_s_per_input_token = 1e-6;  // tokenization: about a microsecond a token
    c.tp_step_s = 1e-3;                 // the executor sends each step to its worker processes and gathers them
    c.async_step_s = 2e-3;              // as step_s and per_seq_s below: the data say what scheduling ahead hides
    c.async_per_seq_s = 2e-5;
  }
  c.step_s = 0.002;
  c.per_seq_s = 2e-5;
  c.weight_factor = 1.25;  // 80% of peak bandwidth, the roofline default mbu
  c.matmul_factor = 2.0;   // 50% of peak FLOP/s, the roofline default mfu
  c.kv_factor = 1.25;
  c.attention_factor = 2.0;
  c.client_ttft_s = 0.005;
  c.comm_factor = 1.0;
  return c;
}

namespace {

void parallel_for(int n, int threads, const std::function<void(int, HostWorkspace&)>& f) {
  if (threads <= 0) threads = int(std::max(1u, std::thread::hardware_concurrency()));
  threads = std::min(threads, n);
  std::atomic<int> next{0};
  auto work = [&] {
    HostWorkspace ws;
    for (int i; (i = next.fetch_add(1)) < n;) f(i, ws);
  };
  std::vector<std::thread> pool;
  for (int t = 1; t < threads; ++t) pool.emplace_back(work);
  work();
  for (auto& t : pool) t.join();
}

bool fitted_metric(const BenchPoint& p, int m) { return std::isfinite(p.measured[m]) && p.measured[m] > 0; }

}  // namespace

double median_of(std::vector<double>& v) {
  if (v.empty()) return std::nan("");
  std::sort(v.begin(), v.end());
  const size_t k = v.size();
  return k % 2 ? v[k / 2] : 0.5 * (v[k / 2 - 1] + v[k / 2]);
}

ProfileError summarize(const std::vector<PointResult>& r) {
  ProfileError e;
  e.points = int(r.size());  // a run that did not finish counts here, and in no median (fleetsim fit names it)
  for (int m = 0; m < kBenchMetrics; ++m) {
    std::vector<double> v;
    for (const auto& x : r)
      if (std::isfinite(x.error[m])) v.push_back(x.error[m]);
    if (v.empty()) {
      e.median[m] = e.worst[m] = std::nan("");
      continue;
    }
    e.median[m] = median_of(v);  // (sorts v)
    e.worst[m] = v.back();
  }
  return e;
}

std::vector<PointResult> evaluate(const std::vector<const BenchPoint*>& points, const PerfCoefficients* c,
                                  const FitOptions& opt) {
  std::vector<PointResult> out(points.size());
  parallel_for(int(points.size()), opt.threads, [&](int i, HostWorkspace& ws) {
    const PreparedPoint pp = prepare_point(*points[size_t(i)], opt.protocol);
    PointResult& r = out[size_t(i)];
    r.point = points[size_t(i)];
    r.predicted = predict_point(pp, c, ws);
    for (int m = 0; m < kBenchMetrics; ++m)
      r.error[m] = r.predicted.ok ? relative_error(r.predicted.v[m], r.point->measured[m]) : INFINITY;
  });
  return out;
}

PerfCoefficients fit_benchmarks(const std::vector<const BenchPoint*>& points, const FitOptions& opt) {
  const int K = fitted_terms(opt.global);
  std::vector<PreparedPoint> prepared;
  for (const BenchPoint* p : points) prepared.push_back(prepare_point(*p, opt.protocol));
  const PerfCoefficients prior = prior_coefficients(opt.global);
  Eigen::VectorXd theta0(K);
  for (int i = 0; i < K; ++i) theta0[i] = std::log(profile_term(prior, i));
  // The physics fit keeps each efficiency factor at or above 1: no resource runs faster than its
  // datasheet peak, so a factor below 1 would be another term's time hiding in this one.
  auto bound = [&](Eigen::VectorXd t) {
    if (opt.global)
      for (int i : {2, 3, 4, 5}) t[i] = std::max(t[i], 0.0);
    return t;
  };
  // residual layout: one per measured metric per point, then one per coefficient (the prior). The
  // physics fit leaves out closed-loop TTFT: it turns on how the benchmark's clients fall out of
  // step, which no source describes (docs/validation.md), and fitted it pulls the step's terms.
  std::vector<std::pair<int, int>> rows;
  for (size_t i = 0; i < points.size(); ++i)
    for (int m = 0; m < kBenchMetrics; ++m)
      if (fitted_metric(*points[i], m) &&
          (!opt.global || points[i]->concurrency <= 0 || (m != kMeanTtft && m != kP99Ttft)))
        rows.emplace_back(int(i), m);
  const int n_res = int(rows.size()) + K;
  const double prior_w = std::sqrt(opt.prior_weight * double(points.size()) / K);
  constexpr double kHuber = 0.1;

  auto coeffs = [&](const Eigen::VectorXd& th) {
    PerfCoefficients c;  // the terms not fitted stay neutral
    for (int i = 0; i < K; ++i) profile_term(c, i) = std::exp(th[i]);
    return c;
  };
  // residuals of several parameter vectors at once, the points spread over threads
  auto residuals = [&](const std::vector<Eigen::VectorXd>& thetas) {
    std::vector<Eigen::VectorXd> out(thetas.size(), Eigen::VectorXd(n_res));
    std::vector<std::vector<Prediction>> pred(thetas.size(), std::vector<Prediction>(points.size()));
    const int jobs = int(thetas.size() * points.size());
    parallel_for(jobs, opt.threads, [&](int j, HostWorkspace& ws) {
      const size_t t = size_t(j) / points.size(), i = size_t(j) % points.size();
      const PerfCoefficients c = coeffs(thetas[t]);
      pred[t][i] = predict_point(prepared[i], &c, ws);
    });
    for (size_t t = 0; t < thetas.size(); ++t) {
      for (size_t r = 0; r < rows.size(); ++r) {
        const Prediction& p = pred[t][size_t(rows[r].first)];
        const double meas = points[size_t(rows[r].first)]->measured[rows[r].second];
        double v = p.ok && p.v[rows[r].second] > 0 ? std::log(p.v[rows[r].second] / meas) : 3.0;
        // the physics fit's loss is Huber's: beyond kHuber (in log ratio) a miss counts linearly, so
        // a few configurations the model cannot express do not drag every coefficient towards them;
        // this residual's square is that loss
        if (opt.global && std::fabs(v) > kHuber)
          v = std::copysign(std::sqrt(2.0 * kHuber * std::fabs(v) - kHuber * kHuber), v);
        out[t][Eigen::Index(r)] = v;
      }
      for (int i = 0; i < K; ++i) out[t][Eigen::Index(rows.size()) + i] = prior_w * (thetas[t][i] - theta0[i]);
    }
    return out;
  };

  Eigen::VectorXd theta = theta0;
  Eigen::VectorXd r = residuals({theta})[0];
  double cost = r.squaredNorm(), lambda = 1e-2;
  // a coarse search first, one coefficient at a time a factor of 3 either way, since the simulated
  // response is only piecewise smooth and the prior can be far off
  for (int i = 0; i < K; ++i) {
    std::vector<Eigen::VectorXd> cands;
    for (double f : {-1.1, 1.1}) {
      Eigen::VectorXd t = theta;
      t[i] += f;
      cands.push_back(bound(t));
    }
    const auto rc = residuals(cands);
    for (size_t k = 0; k < cands.size(); ++k)
      if (rc[k].squaredNorm() < cost) theta = cands[k], r = rc[k], cost = rc[k].squaredNorm();
  }
  if (opt.progress) {
    char b[96];
    std::snprintf(b, sizeof b, "coarse search: rms log error %.4f", std::sqrt(cost / double(n_res)));
    opt.progress(b);
  }
  const double h = 0.05;  // finite-difference step in log space: the simulation is piecewise smooth
  for (int it = 0; it < opt.max_iterations; ++it) {
    std::vector<Eigen::VectorXd> probes;
    for (int i = 0; i < K; ++i) {
      Eigen::VectorXd t = theta;
      t[i] += h;
      probes.push_back(t);
    }
    const auto rp = residuals(probes);
    Eigen::MatrixXd J(n_res, K);
    for (int i = 0; i < K; ++i) J.col(i) = (rp[size_t(i)] - r) / h;
    const Eigen::MatrixXd JtJ = J.transpose() * J;
    const Eigen::VectorXd g = J.transpose() * r;
    bool improved = false;
    for (int tries = 0; tries < 6 && !improved; ++tries) {
      Eigen::MatrixXd Aug = JtJ;
      for (int i = 0; i < K; ++i) Aug(i, i) += lambda * (JtJ(i, i) + 1e-9);
      Eigen::VectorXd step = Aug.ldlt().solve(-g);
      for (int i = 0; i < K; ++i) step[i] = std::clamp(step[i], -1.5, 1.5);
      const Eigen::VectorXd cand = bound(theta + step);
      const Eigen::VectorXd rc = residuals({cand})[0];
      const double cc = rc.squaredNorm();
      if (cc < cost) {
        const double gain = (cost - cc) / std::max(cost, 1e-30);
        theta = cand, r = rc, cost = cc;
        lambda = std::max(lambda / 3.0, 1e-6);
        improved = true;
        if (opt.progress) {
          char b[160];
          std::snprintf(b, sizeof b, "iteration %d: rms log error %.4f (lambda %.2g)", it + 1,
                        std::sqrt(cost / double(n_res)), lambda);
          opt.progress(b);
        }
        if (gain < 1e-4) it = opt.max_iterations;
      } else {
        lambda *= 4.0;
      }
    }
    if (!improved) break;
  }
  PerfCoefficients c = coeffs(theta);
  // without a point of an engine that schedules ahead the async terms saw no data: leave them unset
  bool any_async = false;
  for (const BenchPoint* p : points) any_async = any_async || p->async_scheduling;
  if (!any_async) c.async_step_s = c.async_per_seq_s = 0;
  return c;
}

std::vector<PointResult> cross_validate(const std::vector<const BenchPoint*>& points, const FitOptions& opt) {
  // a point no fold could predict (its fold had nothing to train on) has no error, not a zero one
  std::vector<PointResult> out(points.size());
  for (size_t i = 0; i < points.size(); ++i) {
    out[i].point = points[i];
    for (double& e : out[i].error) e = std::nan("");
  }
  const int k = std::max(2, opt.folds);
  // folds by benchmark, not by row: repeats of one configuration at one load are held out together
  std::map<std::string, size_t> order;
  std::vector<size_t> fold(points.size());
  for (size_t i = 0; i < points.size(); ++i)
    fold[i] = order.emplace(benchmark_key(*points[i]), order.size()).first->second % size_t(k);
  for (int f = 0; f < k; ++f) {
    std::vector<const BenchPoint*> train, test;
    std::vector<size_t> test_idx;
    for (size_t i = 0; i < points.size(); ++i) {
      if (int(fold[i]) == f)
        test.push_back(points[i]), test_idx.push_back(i);
      else
        train.push_back(points[i]);
    }
    if (test.empty() || train.empty()) continue;
    FitOptions o = opt;
    o.progress = nullptr;
    const PerfCoefficients c = fit_benchmarks(train, o);
    const auto r = evaluate(test, &c, opt);
    for (size_t j = 0; j < r.size(); ++j) out[test_idx[j]] = r[j];
    if (opt.progress) opt.progress("fold " + std::to_string(f + 1) + " of " + std::to_string(k) + " done");
  }
  return out;
}

std::vector<GroupResult> leave_one_group_out(const std::vector<const BenchPoint*>& points,
                                             const std::function<std::string(const BenchPoint&)>& group_of,
                                             const FitOptions& opt) {
  std::vector<std::string> groups;
  for (const BenchPoint* p : points) {
    const std::string g = group_of(*p);
    if (std::find(groups.begin(), groups.end(), g) == groups.end()) groups.push_back(g);
  }
  std::vector<GroupResult> out;
  for (const std::string& g : groups) {
    std::vector<const BenchPoint*> train, test;
    for (const BenchPoint* p : points) (group_of(*p) == g ? test : train).push_back(p);
    if (int(train.size()) < kMinFitPoints) continue;
    FitOptions o = opt;
    o.progress = nullptr;
    const PerfCoefficients c = fit_benchmarks(train, o);
    GroupResult r;
    r.group = g;
    r.fit_points = int(train.size());
    r.held_out = evaluate(test, &c, opt);
    out.push_back(std::move(r));
    if (opt.progress) opt.progress("left out " + g + ": fitted on " + std::to_string(train.size()) + " points");
  }
  return out;
}

}  // namespace fleetsim
