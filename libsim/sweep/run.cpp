// Sweeps: running (a shard of) a sweep on CPU threads or the GPU; each row's statistics; the document and summary.
#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <set>
#include <thread>
#include <utility>

#include "backend/runner.hpp"
#include "sweep/internal.hpp"
#include "sweep/order.hpp"
#include "sweep/streams.hpp"

namespace fleetsim {

namespace sweep_detail {

void numeric_leaves(const Json& j, const std::string& prefix, std::vector<std::pair<std::string, const Json*>>& out) {
  if (j.is_object()) {
    for (auto it = j.begin(); it != j.end(); ++it)
      numeric_leaves(it.value(), prefix.empty() ? it.key() : prefix + "." + it.key(), out);
  } else if (j.is_number() || j.is_null()) {
    out.emplace_back(prefix, &j);
  }
}

const Json* at_path(const Json& j, const std::string& path) {
  const Json* cur = &j;
  size_t start = 0;
  while (start <= path.size()) {
    const size_t dot = path.find('.', start);
    const std::string key = path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    if (!cur->is_object() || !cur->contains(key)) return nullptr;
    cur = &(*cur)[key];
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  return cur;
}

}  // namespace sweep_detail

using sweep_detail::at_path;
using sweep_detail::kHeadline;
using sweep_detail::kMetricSections;
using sweep_detail::num_or_nan;
using sweep_detail::numeric_leaves;
using sweep_detail::RowOrder;
using sweep_detail::SummaryAccumulator;
using sweep_detail::sweep_header;

namespace {

void set_path(Json& j, const std::string& path, Json v) {
  Json* cur = &j;
  size_t start = 0;
  for (;;) {
    const size_t dot = path.find('.', start);
    if (dot == std::string::npos) {
      (*cur)[path.substr(start)] = std::move(v);
      return;
    }
    cur = &(*cur)[path.substr(start, dot - start)];
    start = dot + 1;
  }
}

}  // namespace

double t_critical_95(uint32_t dof) {
  static const double t[] = {0,     12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
                             2.201, 2.179,  2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080,
                             2.074, 2.069,  2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042};
  if (dof == 0) return 0;
  if (dof <= 30) return t[dof];
  return 1.95996 + 2.4 / double(dof);  // within 0.2% of the t quantile beyond 30
}

MeanCI mean_ci(const std::vector<double>& xs) {
  MeanCI r;
  r.n = uint32_t(xs.size());
  if (xs.empty()) return r;
  double s = 0;
  for (double x : xs) s += x;
  r.mean = s / double(xs.size());
  if (xs.size() < 2) return r;
  double ss = 0;
  for (double x : xs) ss += (x - r.mean) * (x - r.mean);
  const double sd = std::sqrt(ss / double(xs.size() - 1));
  r.half_width = t_critical_95(uint32_t(xs.size() - 1)) * sd / std::sqrt(double(xs.size()));
  return r;
}

namespace {

// An SLO term's value in every replication's report, into xs; false if one lacks it.
bool term_values(const std::vector<Json>& reports, const std::string& metric, std::vector<double>& xs) {
  for (const auto& rep : reports) {
    const Json* v = at_path(rep, metric);
    if (!v || !v->is_number()) return false;
    xs.push_back(v->get<double>());
  }
  return !xs.empty();
}

}  // namespace

Json sweep_row(const SweepSpec& spec, uint64_t config, const Scenario* s, const std::vector<const Tally*>& reps,
               const std::string& infeasible_reason, std::vector<Json>* given) {
  Json row;
  row["index"] = config;
  row["parameters"] = spec.parameters_json(config);
  if (!infeasible_reason.empty() || !s) {
    row["feasible"] = false;
    row["reason"] = infeasible_reason;
    row["violations"] = Json::array();
    row["metrics"] = nullptr;
    row["ci95"] = nullptr;
    row["replications"] = reps.size();
    return row;
  }
  // per-replication reports -> means over replications (nulls skipped)
  std::vector<Json> own;
  std::vector<Json>& reports = given ? *given : own;
  for (size_t i = reports.size(); i < reps.size(); ++i) reports.push_back(run_report(*s, *reps[i]));
  reports.resize(reps.size());
  std::vector<std::pair<std::string, const Json*>> leaves;
  for (const char* sec : kMetricSections)
    if (reports[0].contains(sec)) numeric_leaves(reports[0][sec], sec, leaves);
  Json metrics = Json::object();
  for (const auto& [path, _] : leaves) {
    std::vector<double> xs;
    for (const auto& rep : reports) {
      const Json* v = at_path(rep, path);
      if (v && v->is_number()) xs.push_back(v->get<double>());
    }
    set_path(metrics, path, xs.empty() ? Json(nullptr) : Json(mean_ci(xs).mean));
  }
  Json ci = Json::object();
  for (const char* h : kHeadline) {
    std::vector<double> xs;
    for (const auto& rep : reports) {
      const Json* v = at_path(rep, h);
      if (v && v->is_number()) xs.push_back(v->get<double>());
    }
    ci[h] = xs.size() >= 2 && xs.size() == reports.size() ? Json(mean_ci(xs).half_width) : Json(nullptr);
  }
  // each SLO term judged on its 95% confidence bound over the replications (the side of the
  // interval towards the limit), as `fleetsim check` judges a budget; or on the mean alone
  Json violations = Json::array();
  for (const auto& t : spec.slo) {
    std::vector<double> xs;
    if (!term_values(reports, t.metric, xs)) {
      violations.push_back(fmt::format("{} has no value", t.metric));
      continue;
    }
    const MeanCI m = mean_ci(xs);
    const double hw = spec.feasible_on_bound ? m.half_width : 0.0;
    const double x = t.is_max ? m.mean + hw : m.mean - hw;
    if (t.is_max ? !(x <= t.limit) : !(x >= t.limit)) {
      if (hw > 0)
        violations.push_back(fmt::format("{} 95% bound {:.6g} {} {:.6g} (mean {:.6g} ± {:.3g})", t.metric, x,
                                         t.is_max ? ">" : "<", t.limit, m.mean, hw));
      else
        violations.push_back(fmt::format("{} = {:.6g} {} {:.6g}", t.metric, x, t.is_max ? ">" : "<", t.limit));
    }
  }
  row["feasible"] = violations.empty();
  row["reason"] = violations.empty() ? Json(nullptr) : Json("misses the SLO");
  row["violations"] = violations;
  row["metrics"] = metrics;
  row["ci95"] = ci;
  row["replications"] = reps.size();
  return row;
}

bool settled_after(const SweepSpec& spec, const Scenario& s, const std::vector<const Tally*>& reps,
                   std::vector<Json>& reports) {
  if (!spec.sequential || spec.slo.empty() || reps.size() >= spec.replications) return false;
  for (const Tally* t : reps)
    if (t->status != 0 || t->unfinished != 0) return true;  // the row is "did not finish" whatever follows
  if (reps.size() < kSequentialMin) return false;
  for (size_t i = reports.size(); i < reps.size(); ++i) reports.push_back(run_report(s, *reps[i]));
  bool all_met = true;
  for (const auto& t : spec.slo) {
    std::vector<double> xs;
    if (!term_values(reports, t.metric, xs)) return true;  // "has no value" whatever follows
    const MeanCI m = mean_ci(xs);
    const double lo = m.mean - m.half_width, hi = m.mean + m.half_width;
    const bool met = t.is_max ? hi <= t.limit : lo >= t.limit;
    const bool missed = t.is_max ? lo > t.limit : hi < t.limit;
    if (missed) return true;
    if (!met) all_met = false;
  }
  return all_met;
}

namespace sweep_detail {

double num_or_nan(const Json& row, const std::string& path) {
  if (!row["metrics"].is_object()) return std::nan("");
  const Json* v = at_path(row["metrics"], path);
  return v && v->is_number() ? v->get<double>() : std::nan("");
}

Json sweep_header(const ScenarioSource& src, const SweepSpec& spec, const Scenario& base, uint32_t shard_index,
                  uint32_t shard_count) {
  Json h;
  h["schema_version"] = kSchemaVersion;
  h["kind"] = "sweep";
  h["scenario"] = {{"name", base.name}, {"source", src.name()}, {"seed", base.seed}};
  Json params = Json::array();
  for (const auto& p : spec.params) params.push_back({{"path", p.path}, {"values", p.json_values}});
  Json slo = Json::array();
  for (const auto& t : spec.slo)
    slo.push_back({{"metric", t.metric}, {"bound", t.is_max ? "max" : "min"}, {"limit", t.limit}});
  h["sweep"] = {{"parameters", params},
                {"grid_size", spec.grid_size},
                {"sample", spec.sample ? Json(spec.sample) : Json(nullptr)},
                {"configurations", spec.count()},
                {"replications", spec.replications},
                {"objective", spec.objective},
                {"feasible_on", spec.feasible_on_bound ? "bound" : "mean"},
                {"sequential", spec.sequential},
                {"slo", slo},
                {"fingerprint", spec.fingerprint}};
  h["shard"] = {{"index", shard_index}, {"count", shard_count}};
  return h;
}

}  // namespace sweep_detail

namespace {

std::string reason_of(const InputError& e) {
  switch (e.kind()) {
    case ErrorKind::does_not_fit: return std::string("does not fit: ") + e.what();
    case ErrorKind::inconsistent: return std::string("inconsistent: ") + e.what();
    default: return std::string("invalid: ") + e.what();
  }
}

}  // namespace

uint64_t sweep_simulations(const SweepSpec& spec, const SweepOptions& opt) {
  const uint64_t n = spec.count(), k = opt.shard_index, m = std::max<uint32_t>(1, opt.shard_count);
  const uint64_t mine = k < n ? (n - k + m - 1) / m : 0;
  const uint64_t left = mine > opt.finished.size() ? mine - opt.finished.size() : 0;
  return left * spec.replications;
}

Backend resolve_backend(Backend requested, std::string* note, uint64_t simulations, int threads) {
  std::string why;
  if (requested == Backend::cpu) {
    if (note) *note = "cpu backend";
    return Backend::cpu;
  }
  const bool have = cuda_available(&why);
  if (requested == Backend::cuda) {
    if (!have) throw InputError(Location{"--backend", 0, 0, ""}, "cuda backend unavailable: " + why);
    if (note) *note = "cuda backend (" + cuda_device_name() + ")";
    return Backend::cuda;
  }
  if (have) {
    const unsigned t = threads > 0 ? unsigned(threads) : std::max(1u, std::thread::hardware_concurrency());
    if (auto_picks_cuda(simulations, t, &why)) {
      if (note) *note = "cuda backend (" + cuda_device_name() + "), picked automatically: " + why;
      return Backend::cuda;
    }
    if (note) *note = "cpu backend, picked automatically over " + cuda_device_name() + ": " + why;
    return Backend::cpu;
  }
  if (note) *note = "cpu backend, picked automatically: " + why;
  return Backend::cpu;
}

Json sweep_document_header(const ScenarioSource& src, const SweepSpec& spec, uint32_t shard_index,
                           uint32_t shard_count) {
  return sweep_header(src, spec, src.instantiate(), shard_index, shard_count);
}

Json run_sweep(const ScenarioSource& src, const SweepSpec& spec, const SweepOptions& opt) {
  if (opt.shard_count == 0 || opt.shard_index >= opt.shard_count)
    throw InputError(Location{"--shard", 0, 0, ""}, "expected K/N with 0 <= K < N");
  const Scenario base = src.instantiate();
  // configurations finished earlier (a journal) are not run again
  std::set<uint64_t> finished;
  for (const Json& r : opt.finished) {
    const uint64_t i = r.at("index").get<uint64_t>();
    if (i >= spec.count() || i % opt.shard_count != opt.shard_index || !finished.insert(i).second)
      throw InputError(Location{"--resume", 0, 0, ""}, fmt::format("configuration {} does not belong here", i));
  }
  std::vector<uint64_t> configs;
  for (uint64_t c = opt.shard_index; c < spec.count(); c += opt.shard_count)
    if (!finished.count(c)) configs.push_back(c);
  const Backend backend = resolve_backend(opt.backend, nullptr, sweep_simulations(spec, opt), opt.threads);
  const unsigned hw = std::max(1u, std::thread::hardware_concurrency());
  const unsigned threads = opt.threads > 0 ? unsigned(opt.threads) : hw;
  std::atomic<uint64_t> next{0}, done{0}, reps_done{0};
  const uint64_t total = configs.size() + finished.size();
  auto stopping = [&] { return opt.stop && opt.stop->load(std::memory_order_relaxed); };

  // Rows leave in index order: run rows through the reorder buffer, journal rows merged in their
  // place; the summary is accumulated as they pass, and the rows are kept only without a streaming sink.
  const Json header = sweep_header(src, spec, base, opt.shard_index, opt.shard_count);
  SummaryAccumulator summary(header);
  std::vector<Json> rows;
  std::vector<const Json*> resumed;
  for (const Json& r : opt.finished) resumed.push_back(&r);
  std::sort(resumed.begin(), resumed.end(), [](const Json* a, const Json* b) {
    return a->at("index").get<uint64_t>() < b->at("index").get<uint64_t>();
  });
  size_t resumed_out = 0;
  auto pass = [&](const Json& row) {
    summary.add(row);
    if (opt.ordered_row) opt.ordered_row(row);
  };
  auto flush_resumed = [&](uint64_t below) {
    for (; resumed_out < resumed.size() && resumed[resumed_out]->at("index").get<uint64_t>() < below; ++resumed_out) {
      pass(*resumed[resumed_out]);
      if (!opt.ordered_row) rows.push_back(*resumed[resumed_out]);
    }
  };
  RowOrder order(4 * size_t(threads) + 4, [&](Json&& row) {
    flush_resumed(row["index"].get<uint64_t>());
    pass(row);
    if (!opt.ordered_row) rows.push_back(std::move(row));
  });
  std::atomic<bool> failed{false};

  // Instantiate configuration `pos`; returns nullptr with a reason when it cannot run.
  auto prepare = [&](size_t pos, std::string& reason) -> std::unique_ptr<Scenario> {
    try {
      return std::make_unique<Scenario>(src.instantiate(spec.overrides(configs[pos])));
    } catch (const InputError& e) {
      reason = reason_of(e);
      return nullptr;
    }
  };
  std::mutex row_mutex;
  auto finish = [&](size_t pos, const Scenario* s, const std::vector<const Tally*>& reps, std::string reason,
                    std::vector<Json>* reports) {
    for (const Tally* t : reps)
      if (reason.empty() && (t->status != 0 || t->unfinished != 0))
        reason = "simulation did not finish: the configuration is so overloaded that its queues never drain";
    if (!s) reps_done.fetch_add(spec.replications);  // nothing to run counts as done
    Json row = sweep_row(spec, configs[pos], reason.empty() ? s : nullptr,
                         reason.empty() ? reps : std::vector<const Tally*>{}, reason, reports);
    if (opt.on_row) {
      std::lock_guard<std::mutex> lock(row_mutex);
      opt.on_row(row);
    }
    order.put(pos, std::move(row));
    done.fetch_add(1);
  };

  auto snapshot = [&] {
    SweepProgress p;
    p.resumed = finished.size();
    p.configurations_total = total;
    p.configurations_done = finished.size() + done.load();
    p.replications_total = total * spec.replications;
    p.replications_done = (finished.size() * spec.replications) + reps_done.load();
    return p;
  };
  std::mutex stop_mutex;
  std::condition_variable stop_cv;
  bool stop_progress = false;
  auto report_progress = [&]() {
    std::unique_lock<std::mutex> lock(stop_mutex);
    while (!stop_progress) {
      lock.unlock();
      opt.progress(snapshot());
      lock.lock();
      stop_cv.wait_for(lock, std::chrono::milliseconds(200), [&] { return stop_progress; });
    }
  };
  std::thread progress_thread;
  if (opt.progress) progress_thread = std::thread(report_progress);

  std::exception_ptr failure;
  std::mutex failure_mutex;
  auto guarded = [&](auto&& fn) {
    try {
      fn();
    } catch (...) {
      std::lock_guard<std::mutex> lock(failure_mutex);
      if (!failure) failure = std::current_exception();
      failed = true;
      next.store(configs.size() + 1);
    }
  };

  if (backend == Backend::cpu) {
    RequestStreams streams;
    auto worker = [&]() {
      guarded([&] {
        HostWorkspace ws;
        std::vector<std::unique_ptr<Tally>> tallies(spec.replications);
        for (;;) {
          if (stopping()) return;
          const uint64_t pos = next.fetch_add(1);
          if (pos >= configs.size() || !order.admit(pos, [&] { return stopping() || failed.load(); })) return;
          std::string reason;
          auto s = prepare(pos, reason);
          std::vector<const Tally*> reps;
          std::vector<Json> reports;
          if (s) {
            const SimParams p = s->params();
            for (uint32_t r = 0; r < spec.replications; ++r) {
              if (stopping()) return;  // this configuration is dropped; a resumed sweep runs it again
              if (!tallies[r]) tallies[r] = std::make_unique<Tally>();
              if (opt.common_streams) {
                const SimParams pr = streams.with_streams(p, r);
                simulate(pr, r, ws.for_params(pr), *tallies[r]);
              } else {
                simulate(p, r, ws.for_params(p), *tallies[r]);
              }
              reps.push_back(tallies[r].get());
              reps_done.fetch_add(1);
              if (settled_after(spec, *s, reps, reports)) {
                reps_done.fetch_add(spec.replications - reps.size());  // not needed: counted as done
                break;
              }
            }
          }
          finish(pos, s.get(), reps, reason, &reports);
        }
      });
    };
    std::vector<std::thread> pool;
    for (unsigned i = 1; i < threads; ++i) pool.emplace_back(worker);
    worker();
    for (auto& t : pool) t.join();
  } else {
    // Waves of configurations, pipelined: the host threads instantiate wave k + 1 and summarise
    // wave k - 1 while the device runs wave k (the device is never waiting on one host thread).
    struct Wave {
      size_t w0 = 0, w1 = 0;
      std::vector<std::unique_ptr<Scenario>> sc;
      std::vector<std::string> reasons;
      std::vector<SimParams> params;
      std::vector<size_t> first_job;
      std::vector<SimJob> jobs;
      CompactTallies results;
    };
    auto each = [&](size_t n, const std::function<void(size_t)>& fn) {
      std::atomic<size_t> nx{0};
      auto run = [&] {
        guarded([&] {
          for (size_t i; (i = nx.fetch_add(1)) < n && !failed.load();) fn(i);
        });
      };
      std::vector<std::thread> pool;
      for (unsigned i = 1; i < threads; ++i) pool.emplace_back(run);
      run();
      for (auto& t : pool) t.join();
    };
    const size_t wave = std::max<size_t>(1, 32768 / spec.replications);
    auto prepare_wave = [&](size_t w0) {
      auto w = std::make_unique<Wave>();
      w->w0 = w0;
      w->w1 = std::min(configs.size(), w0 + wave);
      const size_t m = w->w1 - w0;
      w->sc.resize(m);
      w->reasons.resize(m);
      w->params.resize(m);
      w->first_job.resize(m);
      each(m, [&](size_t i) {
        w->sc[i] = prepare(w0 + i, w->reasons[i]);
        if (w->sc[i]) w->params[i] = w->sc[i]->params();
      });
      for (size_t i = 0; i < m; ++i) {
        w->first_job[i] = w->jobs.size();
        if (w->sc[i])
          for (uint32_t r = 0; r < spec.replications; ++r) w->jobs.push_back(SimJob{&w->params[i], r});
      }
      return w;
    };
    auto summarise = [&](Wave& w) {
      each(w.w1 - w.w0, [&](size_t i) {
        std::vector<std::unique_ptr<Tally>> t;
        std::vector<const Tally*> reps;
        std::vector<Json> reports;
        // the device ran every replication; the row keeps those the CPU would have run
        if (w.sc[i])
          for (uint32_t r = 0; r < spec.replications; ++r) {
            t.push_back(std::make_unique<Tally>());  // value-initialised, as expand needs
            w.results.expand(w.first_job[i] + r, *t.back());
            reps.push_back(t.back().get());
            if (settled_after(spec, *w.sc[i], reps, reports)) break;
          }
        finish(w.w0 + i, w.sc[i].get(), reps, w.reasons[i], &reports);
      });
    };
    std::unique_ptr<Wave> ready = configs.empty() ? nullptr : prepare_wave(0), finished_wave;
    while (ready && !failed.load() && !stopping()) {
      std::unique_ptr<Wave> running = std::move(ready);
      std::exception_ptr device_error;
      std::thread device([&] {
        try {
          if (!running->jobs.empty()) running->results = cuda_simulate_compact(running->jobs);
        } catch (...) {
          device_error = std::current_exception();
        }
      });
      if (finished_wave) summarise(*finished_wave);
      finished_wave.reset();
      if (running->w1 < configs.size()) ready = prepare_wave(running->w1);
      device.join();
      if (device_error) guarded([&] { std::rethrow_exception(device_error); });
      reps_done.fetch_add(running->jobs.size());
      finished_wave = std::move(running);
    }
    if (finished_wave && !failed.load()) summarise(*finished_wave);
  }
  {
    std::lock_guard<std::mutex> lock(stop_mutex);
    stop_progress = true;
  }
  stop_cv.notify_all();
  if (progress_thread.joinable()) progress_thread.join();
  if (opt.progress) opt.progress(snapshot());
  if (failure) std::rethrow_exception(failure);
  if (done.load() < configs.size()) throw SweepInterrupted(finished.size() + done.load(), total);
  flush_resumed(spec.count());
  Json doc = header;
  doc["summary"] = summary.summary();
  if (!opt.ordered_row) doc["rows"] = std::move(rows);
  return doc;
}

}  // namespace fleetsim
