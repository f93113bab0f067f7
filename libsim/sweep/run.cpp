// Sweeps: running (a shard of) a sweep on CPU threads or the GPU; the document and summary.
#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <set>
#include <system_error>
#include <thread>
#include <utility>

#include "backend/backend_launch.hpp"
#include "backend/runner.hpp"
#include "sweep/internal.hpp"
#include "sweep/order.hpp"
#include "sweep/settle.hpp"
#include "sweep/share.hpp"
#include "sweep/streams.hpp"

namespace fleetsim {

using sweep_detail::RowOrder;
using sweep_detail::SummaryAccumulator;
using sweep_detail::sweep_header;

namespace sweep_detail {

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
                {"stop_certain_misses", spec.stop_certain_misses},
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

uint64_t shard_configurations(const SweepSpec& spec, const SweepOptions& opt) {
  const uint64_t n = spec.count(), k = opt.shard_index, m = std::max<uint32_t>(1, opt.shard_count);
  return k < n ? (n - k + m - 1) / m : 0;
}

uint64_t sweep_simulations(const SweepSpec& spec, const SweepOptions& opt) {
  const uint64_t mine = shard_configurations(spec, opt);
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
  std::atomic<uint64_t> next{0}, done{0}, reps_done{0}, reps_shared{0}, reps_skipped{0};
  const uint64_t total = configs.size() + finished.size();
  auto stopping = [&] { return opt.stop && opt.stop->load(std::memory_order_relaxed); };

  // On the CPU, stretches of configurations that differ only in engine limits go to one thread
  // each, most generous limits first, so that a run can serve the rest (sweep/share.hpp).
  std::vector<size_t> limit_params;
  for (size_t i = 0; i < spec.params.size(); ++i)
    if (is_limit_path(spec.params[i].path)) limit_params.push_back(i);
  const bool sharing = backend == Backend::cpu && opt.share_runs && !limit_params.empty();
  std::vector<std::pair<size_t, size_t>> stretches;
  if (sharing) {
    stretches = limit_stretches(
        configs.size(),
        [&](size_t pos) {
          std::string key;
          const auto ov = spec.overrides(configs[pos]);
          for (size_t i = 0; i < ov.size(); ++i)
            if (!is_limit_path(ov[i].path)) key += ov[i].label + '\n';
          return key;
        },
        kMaxLimitStretch);
  } else {
    for (size_t pos = 0; pos < configs.size(); ++pos) stretches.emplace_back(pos, pos + 1);
  }
  size_t longest = 1;
  for (const auto& st : stretches) longest = std::max(longest, st.second - st.first);

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
  RowOrder order(4 * size_t(threads) + 4 + size_t(threads) * longest, [&](Json&& row) {
    flush_resumed(row["index"].get<uint64_t>());
    pass(row);
    if (!opt.ordered_row) rows.push_back(std::move(row));
  });
  std::atomic<bool> failed{false};

  // Instantiate configuration `pos`; returns nullptr with a reason when it cannot run.
  auto prepare = [&](size_t pos, std::string& reason) -> std::unique_ptr<Scenario> {
    try {
      return std::make_unique<Scenario>(src.instantiate_configuration(spec.overrides(configs[pos])));
    } catch (const InputError& e) {
      reason = reason_of(e);
      return nullptr;
    }
  };
  std::mutex row_mutex;
  auto finish = [&](size_t pos, const Scenario* s, const std::vector<const Tally*>& reps, std::string reason,
                    std::vector<Json>* reports) {
    const bool ran = reason.empty() && s;
    for (const Tally* t : reps)
      if (reason.empty() && t->status != int32_t(SimStatus::settled) && (t->status != 0 || t->unfinished != 0))
        reason = t->status == int32_t(SimStatus::event_limit)
                     ? "simulation did not finish: it ran out of its event budget (an overloaded fleet whose queue "
                       "keeps growing, or step times too short to advance time)"
                     : "simulation did not finish: a step took longer than any simulated time can hold";
    if (!s) reps_done.fetch_add(spec.replications);  // nothing to run counts as done
    Json row = sweep_row(spec, configs[pos], reason.empty() ? s : nullptr,
                         reason.empty() ? reps : std::vector<const Tally*>{}, reason, reports);
    // a run that did not finish still names the step-time model it ran with
    if (ran && !reason.empty()) row["step_time"] = step_time_line(*s);
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
    p.replications_shared = reps_shared.load();
    p.replications_skipped = reps_skipped.load();
    return p;
  };
  std::exception_ptr failure;
  std::mutex failure_mutex;
  // the first exception of any thread (a caller's progress callback too) stops the sweep, and
  // run_sweep throws it on the caller's thread
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
  // Threads beyond the caller's own: as many as the system will start (a container's process limit
  // may allow fewer); the rows do not depend on how many run.
  auto start_threads = [](std::vector<std::thread>& pool, unsigned n, const auto& fn) {
    try {
      for (unsigned i = 0; i < n; ++i) pool.emplace_back(fn);
    } catch (const std::system_error&) {
    }
  };

  std::mutex stop_mutex;
  std::condition_variable stop_cv;
  bool stop_progress = false;
  auto report_progress = [&]() {
    std::unique_lock<std::mutex> lock(stop_mutex);
    while (!stop_progress && !failed.load()) {
      lock.unlock();
      guarded([&] { opt.progress(snapshot()); });
      lock.lock();
      stop_cv.wait_for(lock, std::chrono::milliseconds(200), [&] { return stop_progress; });
    }
  };
  std::thread progress_thread;
  if (opt.progress) {
    try {
      progress_thread = std::thread(report_progress);
    } catch (const std::system_error&) {  // no thread to spare: progress only at the end
    }
  }

  if (backend == Backend::cpu) {
    RequestStreams streams;
    // a configuration's value of each limit parameter, as a number where it is one
    auto limit_values = [&](size_t pos) {
      std::vector<double> v;
      const Json values = spec.parameters_json(configs[pos]);
      for (size_t i : limit_params) {
        const Json& x = values[spec.params[i].path];
        v.push_back(x.is_number() ? x.get<double>() : 0.0);
      }
      return v;
    };
    // A simulated replication kept for the rest of its stretch: the configuration's parameters
    // and its tally, compact (backend_launch.hpp).
    struct Ran {
      SimParams p;
      std::unique_ptr<SimParams> bare;            // without_limits(p)
      std::vector<std::vector<uint8_t>> tallies;  // by replication; empty where it was shared
    };
    auto worker = [&]() {
      guarded([&] {
        HostWorkspace ws;
        std::vector<std::unique_ptr<Tally>> tallies(spec.replications);
        for (;;) {
          if (stopping()) return;
          const uint64_t u = next.fetch_add(1);
          if (u >= stretches.size()) return;
          const size_t b = stretches[u].first, e = stretches[u].second;
          if (!order.admit(e - 1, [&] { return stopping() || failed.load(); })) return;
          std::vector<size_t> todo;
          for (size_t pos = b; pos < e; ++pos) todo.push_back(pos);
          if (e - b > 1) {
            std::vector<std::vector<double>> lv(e - b);
            for (size_t pos = b; pos < e; ++pos) lv[pos - b] = limit_values(pos);
            std::stable_sort(todo.begin(), todo.end(), [&](size_t x, size_t y) { return lv[x - b] > lv[y - b]; });
          }
          std::vector<std::unique_ptr<Ran>> ran;
          for (const size_t pos : todo) {
            std::string reason;
            auto s = prepare(pos, reason);
            std::vector<const Tally*> reps;
            std::vector<Json> reports;
            if (s) {
              SimParams p = s->params();
              p.settle = settle_rule(spec, p);
              const auto bare = sharing && e - b > 1 ? without_limits(p) : nullptr;
              std::unique_ptr<Ran> mine;
              for (uint32_t r = 0; r < spec.replications; ++r) {
                if (stopping()) return;  // this configuration is dropped; a resumed sweep runs it again
                if (!tallies[r]) tallies[r] = std::make_unique<Tally>();
                const Ran* from = nullptr;
                for (const auto& d : ran) {
                  if (d->tallies.size() <= r || d->tallies[r].empty()) continue;
                  RunLimits use;
                  std::memcpy(static_cast<void*>(&use), d->tallies[r].data() + offsetof(Tally, limits), sizeof(use));
                  if (std::memcmp(d->bare.get(), bare.get(), sizeof(SimParams)) == 0 && limits_serve(d->p, use, p)) {
                    from = d.get();
                    break;
                  }
                }
                if (from) {
                  std::memset(static_cast<void*>(tallies[r].get()), 0, sizeof(Tally));
                  compact_expand(from->tallies[r].data(), *tallies[r]);
                  reps_shared.fetch_add(1);
                } else {
                  if (opt.common_streams) {
                    const SimParams pr = streams.with_streams(p, r);
                    simulate(pr, r, ws.for_params(pr), *tallies[r]);
                  } else {
                    simulate(p, r, ws.for_params(p), *tallies[r]);
                  }
                  // kept for the rest of the stretch unless every limit decided (it can serve nobody)
                  if (sharing && e - b > 1 && limits_left_room(p, tallies[r]->limits)) {
                    if (!mine) {
                      mine = std::make_unique<Ran>();
                      mine->p = p;
                      mine->bare = without_limits(p);
                    }
                    const CompactLayout lay{tallies[r]->n_pools, tallies[r]->n_classes};
                    mine->tallies.resize(r + 1);
                    mine->tallies[r].resize(lay.bytes());
                    compact_store(*tallies[r], mine->tallies[r].data());
                    // the row reads the tally as the shared one would be read: expanded from its compact form
                    std::memset(static_cast<void*>(tallies[r].get()), 0, sizeof(Tally));
                    compact_expand(mine->tallies[r].data(), *tallies[r]);
                  }
                }
                reps.push_back(tallies[r].get());
                reps_done.fetch_add(1);
                if (settled_after(spec, *s, reps, reports)) {
                  reps_done.fetch_add(spec.replications - reps.size());  // not needed: counted as done
                  reps_skipped.fetch_add(spec.replications - reps.size());
                  break;
                }
              }
              if (mine) ran.push_back(std::move(mine));
            }
            finish(pos, s.get(), reps, reason, &reports);
          }
        }
      });
    };
    std::vector<std::thread> pool;
    start_threads(pool, threads - 1, worker);
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
      start_threads(pool, threads - 1, run);
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
        if (w->sc[i]) {
          w->params[i] = w->sc[i]->params();
          w->params[i].settle = settle_rule(spec, w->params[i]);
        }
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
  if (opt.progress && !failed.load()) guarded([&] { opt.progress(snapshot()); });
  if (failure) std::rethrow_exception(failure);
  if (done.load() < configs.size()) {
    // the journal's rows before the first configuration this run did not finish are out too: the
    // stream holds every row up to the first unfinished one
    const size_t next = order.delivered();
    flush_resumed(next < configs.size() ? configs[next] : spec.count());
    throw SweepInterrupted(finished.size() + done.load(), total);
  }
  flush_resumed(spec.count());
  Json doc = header;
  doc["summary"] = summary.summary();
  if (!opt.ordered_row) doc["rows"] = std::move(rows);
  return doc;
}

}  // namespace fleetsim
