// The public API (include/fleetsim/fleetsim.hpp) over the library's internals: internal errors
// become fleetsim::Error with their located one-line message.
#include "fleetsim/fleetsim.hpp"

#include <fmt/format.h>

#include <utility>

#include "backend/runner.hpp"
#include "base/error.hpp"
#include "cost/refresh.hpp"
#include "input/scenario.hpp"
#include "report/documents.hpp"
#include "report/report.hpp"
#include "sweep/sweep.hpp"

namespace fleetsim {

struct ScenarioHandle::Impl {
  ScenarioSource source;
  Scenario scenario;
  bool sweep = false;
};

namespace {

// Runs f, turning the library's exceptions into fleetsim::Error.
template <class F>
auto guarded(F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const Error&) {
    throw;
  } catch (const InputError& e) {
    throw Error(Error::Kind::input, e.one_line());
  } catch (const OutputError& e) {
    throw Error(Error::Kind::output, e.what());
  } catch (const std::exception& e) {
    throw Error(Error::Kind::failure, e.what());
  } catch (...) {  // a callback's own throw of something else
    throw Error(Error::Kind::failure, "an exception that is not a std::exception");
  }
}

ScenarioHandle make(ScenarioSource src, const std::vector<std::string>& overrides) {
  return guarded([&] {
    auto impl = std::make_shared<ScenarioHandle::Impl>(
        ScenarioHandle::Impl{src.with_overrides(parse_sets(overrides)), Scenario{}, false});
    impl->scenario = impl->source.instantiate();
    impl->sweep = has_sweep_section(impl->source);
    if (impl->sweep) parse_sweep(impl->source);  // as `fleetsim validate`: a bad sweep: section fails here
    return ScenarioHandle::adopt(std::move(impl));
  });
}

double num(const Json& j, const char* a, const char* b, const char* c = nullptr) {
  const Json* v = &j;
  for (const char* k : {a, b, c}) {
    if (!k) break;
    if (!v->is_object() || !v->contains(k)) return 0.0;
    v = &(*v)[k];
  }
  return v->is_number() ? v->get<double>() : 0.0;
}

RunResult run_with(const ScenarioHandle& s, const uint64_t* seed, uint32_t replication) {
  return guarded([&] {
    // a seed is an override, as `fleetsim run --seed`: the report lists it among them
    ScenarioSource src = s.impl().source;
    Scenario sc = s.impl().scenario;
    if (seed) {
      std::vector<Override> all = src.base_overrides();
      all.push_back(parse_set("seed=" + std::to_string(*seed)));
      src = src.with_overrides(std::move(all));
      sc = src.instantiate();
    }
    Json r = run_document(src, sc, replication);
    RunResult out;
    out.json = r.dump(2);
    RunSummary& m = out.summary;
    m.arrived = int64_t(num(r, "requests", "arrived"));
    m.completed = int64_t(num(r, "requests", "completed"));
    m.rejected = int64_t(num(r, "requests", "rejected"));
    m.ttft_p50_s = num(r, "latency_s", "ttft", "p50");
    m.ttft_p99_s = num(r, "latency_s", "ttft", "p99");
    m.tpot_mean_s = num(r, "latency_s", "tpot", "mean");
    m.e2e_p99_s = num(r, "latency_s", "e2e", "p99");
    m.requests_per_s = num(r, "throughput", "requests_per_s");
    m.output_tokens_per_s = num(r, "throughput", "output_tokens_per_s");
    m.busy_fraction = num(r, "utilization", "busy_fraction");
    m.device_hours = num(r, "cost", "device_hours");
    m.total_usd = num(r, "cost", "total_usd");
    m.per_million_tokens_usd = num(r, "cost", "per_million_tokens_usd");
    m.per_request_usd = num(r, "cost", "per_request_usd");
    m.per_million_input_tokens_usd = num(r, "cost", "per_million_input_tokens_usd");
    m.per_million_output_tokens_usd = num(r, "cost", "per_million_output_tokens_usd");
    return out;
  });
}

}  // namespace

ScenarioHandle ScenarioHandle::adopt(std::shared_ptr<const Impl> impl) {
  ScenarioHandle h;
  h.impl_ = std::move(impl);
  return h;
}

ScenarioHandle ScenarioHandle::from_file(const std::string& path, const std::vector<std::string>& overrides) {
  return make(guarded([&] { return ScenarioSource::from_file(path); }), overrides);
}

ScenarioHandle ScenarioHandle::from_yaml(const std::string& yaml, const std::vector<std::string>& overrides,
                                         const std::string& name, const std::string& base_dir) {
  return make(ScenarioSource::from_text(yaml, name, base_dir), overrides);
}

ScenarioHandle ScenarioHandle::builtin_default(const std::vector<std::string>& overrides) {
  return make(ScenarioSource::builtin_default(), overrides);
}

const std::string& ScenarioHandle::name() const { return impl().scenario.name; }
bool ScenarioHandle::has_sweep() const { return impl().sweep; }

RunResult run(const ScenarioHandle& s, uint32_t replication) { return run_with(s, nullptr, replication); }
RunResult run(const ScenarioHandle& s, uint64_t seed, uint32_t replication) { return run_with(s, &seed, replication); }

std::string sweep_json(const ScenarioHandle& s, const SweepSettings& settings) {
  return guarded([&] {
    const SweepSpec spec = parse_sweep(s.impl().source);
    if (settings.threads < 0 || settings.threads > 4096)
      throw InputError(Location{"SweepSettings.threads", 0, 0, ""},
                       fmt::format("{} threads: expected 0 (every hardware thread) to 4096", settings.threads));
    SweepOptions opt;
    opt.threads = settings.threads;
    opt.backend = settings.allow_cuda ? Backend::auto_select : Backend::cpu;
    if (settings.progress)
      opt.progress = [&settings](const SweepProgress& p) {
        settings.progress(p.configurations_done, p.configurations_total);
      };
    return run_sweep(s.impl().source, spec, opt).dump(2);
  });
}

CapacityResult capacity(const CapacityQuery& q) {
  return guarded([&] {
    CapacityRequest r;
    r.model = q.model;
    r.device = q.device;
    r.context = q.context_tokens;
    r.weight_dtype = q.weight_dtype;
    r.kv_dtype = q.kv_dtype;
    r.tp = q.tensor_parallel;
    r.pp = q.pipeline_parallel;
    r.gpu_memory_utilization = q.gpu_memory_utilization;
    r.max_num_seqs = q.max_num_seqs;
    r.max_batched_tokens = q.max_batched_tokens;
    r.kv_block_tokens = q.kv_block_tokens;
    r.expert_weight_dtype = q.expert_weight_dtype;
    r.enforce_eager = q.enforce_eager;
    const CapacityAnswer a = capacity_document(r);
    CapacityResult out;
    out.fits = a.c.fits;
    out.weights_gib = a.c.weights_gib;
    out.kv_gib = a.c.kv_gib;
    out.kv_capacity_tokens = a.c.kv_capacity_tokens;
    out.max_concurrent_at_context = a.doc["capacity"]["max_concurrent_at_context"].get<int64_t>();
    out.json = a.doc.dump(2);
    return out;
  });
}

std::string catalog_json() {
  return guarded([] { return catalog_document().dump(2); });
}

const char* version() { return "0.1.0"; }

}  // namespace fleetsim
