// Scenario files: one request class (arrival process, trace, prompt and output lengths) and its
// caching keys.
#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>

#include "base/error.hpp"
#include "catalog/catalog.hpp"
#include "input/scenario_internal.hpp"
#include "input/trace.hpp"

namespace fleetsim::detail {

RequestClassSpec build_class(const N& wl, const PoolSpec& pool, double duration_s, Source& src) {
  RequestClassSpec C;
  const N ar = wl.req("arrival");
  ar.allow_keys({"process", "rate_per_s", "cv", "peak_to_mean", "period_s", "peak_at_s", "path", "time_scale",
                 "start_s", "stop_s", "requests", "clients", "think_time_s", "retry_after_s", "ramp_s", "model",
                 "block_tokens", "turns", "sessions"});
  C.start_s = ar.has("start_s") ? ar.at("start_s").num_in(0, duration_s, "start_s") : 0.0;
  C.stop_s = ar.has("stop_s") ? ar.at("stop_s").num_in(0, 1e12, "stop_s") : duration_s;
  if (C.stop_s < C.start_s) ar.at("stop_s").fail("stop_s must be >= start_s", ErrorKind::inconsistent);
  const std::string proc =
      ar.req("process").choice({"poisson", "gamma", "diurnal", "trace", "constant", "burst", "concurrency"});
  auto only = [&](std::initializer_list<const char*> allowed) {
    for (const char* k : {"rate_per_s", "cv", "peak_to_mean", "period_s", "peak_at_s", "path", "time_scale", "requests",
                          "clients", "think_time_s", "retry_after_s", "ramp_s", "turns"}) {
      bool ok = false;
      for (const char* a : allowed) ok = ok || std::string(a) == k;
      if (!ok && ar.has(k))
        ar.at(k).fail(std::string("'") + k + "' does not apply to process: " + proc, ErrorKind::inconsistent);
    }
  };
  if (proc != "trace")
    for (const char* k : {"model", "block_tokens", "sessions"})
      if (ar.has(k)) ar.at(k).fail(std::string("'") + k + "' applies to process: trace only", ErrorKind::inconsistent);
  if (proc == "poisson") {
    only({"rate_per_s"});
    C.arrival = ArrivalKind::poisson;
    C.rate_per_s = ar.req("rate_per_s").pos(1e6);
  } else if (proc == "gamma") {
    only({"rate_per_s", "cv"});
    C.arrival = ArrivalKind::gamma;
    C.rate_per_s = ar.req("rate_per_s").pos(1e6);
    C.cv = ar.req("cv").num_in(0.05, 30, "cv");
  } else if (proc == "diurnal") {
    only({"rate_per_s", "peak_to_mean", "period_s", "peak_at_s"});
    C.arrival = ArrivalKind::diurnal;
    C.rate_per_s = ar.req("rate_per_s").pos(1e6);
    C.peak_to_mean = ar.req("peak_to_mean").num_in(1, 2, "peak_to_mean");
    // a cycle of at least a minute: shorter ones are not a load pattern, and a vanishing period
    // only feeds sin() arguments past its range reduction
    C.period_s = ar.has("period_s") ? ar.at("period_s").num_in(60, 365.0 * 86400, "period_s") : 86400;
    C.peak_at_s = ar.has("peak_at_s") ? ar.at("peak_at_s").num_in(0, 365.0 * 86400) : 0;
  } else if (proc == "constant") {
    only({"rate_per_s"});
    C.arrival = ArrivalKind::constant;
    C.rate_per_s = ar.req("rate_per_s").pos(1e6);
  } else if (proc == "burst") {
    only({"requests"});
    C.arrival = ArrivalKind::burst;
    C.clients = int(ar.req("requests").integer(1, 10000000));
  } else if (proc == "concurrency") {
    only({"clients", "think_time_s", "retry_after_s", "requests", "ramp_s", "turns"});
    // multi-turn sessions: each user's next request carries the conversation so far (clients.hpp)
    if (ar.has("turns")) {
      // a conversation is what a generative model answers; an embedding or a score has no turns
      if (pool.model.kind != ModelKind::generate)
        ar.at("turns").fail("sessions need a generative model; " + pool.model.name + " is a " +
                                model_kind_name(pool.model.kind) + " model",
                            ErrorKind::inconsistent);
      C.sessions = true;
      C.turns = parse_dist(ar.at("turns"), src.base_dir);
      // the configured mean where rounding changes nothing (integer draws); else the sampler's
      const DistKind tk = C.turns.kind;
      C.mean_turns = tk == DistKind::lognormal || tk == DistKind::exponential ? mean_of(C.turns, 1 << 30, src.cache)
                                                                              : mean_seconds(C.turns);
    }
    if (ar.has("ramp_s")) C.ramp_s = ar.at("ramp_s").num_in(0, 86400);
    C.arrival = ArrivalKind::concurrency;
    C.clients = int(ar.req("clients").integer(1, 1000000));
    if (ar.has("requests")) {
      C.max_requests = ar.at("requests").integer(1, 1000000000);
      if (C.max_requests < C.clients)
        ar.at("requests")
            .fail("requests (" + std::to_string(C.max_requests) + ") must be >= clients (" + std::to_string(C.clients) +
                      "): each user sends at least one",
                  ErrorKind::inconsistent);
    }
    if (ar.has("think_time_s"))
      C.think = parse_dist(ar.at("think_time_s"), src.base_dir, true);
    else
      C.think.describe = "fixed(0)";
    C.think_mean_s = mean_seconds(C.think);
    // a client's back-off: under a millisecond, rejected users only spin against a full queue
    if (ar.has("retry_after_s")) C.retry_after_s = ar.at("retry_after_s").num_in(0.001, 86400, "retry_after_s");
  } else {
    only({"path", "time_scale"});
    C.arrival = ArrivalKind::trace;
    C.trace_path = ar.req("path").str();
    std::string path = C.trace_path;
    if (!std::filesystem::path(path).is_absolute()) path = (std::filesystem::path(src.base_dir) / path).string();
    src.files_read.push_back(path);
    C.time_scale = ar.has("time_scale") ? ar.at("time_scale").pos(1e6) : 1.0;
    TraceOptions topt;
    if (ar.has("model")) {
      topt.model_filter = ar.at("model").str();
      if (topt.model_filter.empty()) ar.at("model").fail("expected the model whose rows to keep, not an empty string");
    }
    if (ar.has("block_tokens")) topt.block_tokens = int32_t(ar.at("block_tokens").integer(1, 1 << 20));
    std::ostringstream key;
    key.precision(17);
    key << path << '\n' << C.time_scale << '\n' << topt.model_filter << '\n' << topt.block_tokens;
    {
      std::unique_lock<std::mutex> lock(src.cache->mutex);
      auto it = src.cache->traces.find(key.str());
      if (it != src.cache->traces.end()) C.trace = it->second;
    }
    if (!C.trace) {
      auto t = std::make_shared<TraceData>();
      try {
        *t = load_trace(path, topt);
      } catch (const InputError& e) {
        // an option the trace refuses is located at the option (a --set of it included), else at path
        const std::string m = e.one_line();
        // (by the loader's own words for each: a path or a row may hold the options' names)
        auto says = [&](const char* w) { return m.find(w) != std::string::npos; };
        const char* at =
            ar.has("model") && (says(": no rows for model '") || says("a model filter applies")) ? "model"
            : ar.has("block_tokens") && (says("block_tokens must be at least") || says("tokens a block do not give"))
                ? "block_tokens"
                : "path";
        ar.at(at).fail(m);
      }
      for (auto& x : t->t_s) x *= C.time_scale;
      std::unique_lock<std::mutex> lock(src.cache->mutex);
      C.trace = src.cache->traces.emplace(key.str(), std::move(t)).first->second;
    }
    if (ar.has("block_tokens") && C.trace->cached_prefix.empty())
      ar.at("block_tokens")
          .fail("block_tokens applies to traces with block hashes (Mooncake JSONL); " + C.trace_path + " is a " +
                    C.trace->layout + " trace",
                ErrorKind::inconsistent);
    // a follow-up turn waits for the answer it replies to; the links come from the block hashes
    if (ar.has("sessions")) {
      C.trace_sessions = ar.at("sessions").boolean();
      if (C.trace_sessions && C.trace->parent.empty())
        ar.at("sessions")
            .fail(
                "sessions are read from a trace's block hashes (Mooncake JSONL: a follow-up's blocks begin with "
                "those of the request it replies to); " +
                    C.trace_path + " is a " + C.trace->layout + " trace, with none",
                ErrorKind::inconsistent);
    }
    if (wl.has("prompt_tokens") || wl.has("output_tokens"))
      (wl.has("prompt_tokens") ? wl.at("prompt_tokens") : wl.at("output_tokens"))
          .fail("a trace supplies its own lengths; remove prompt_tokens/output_tokens", ErrorKind::inconsistent);
    const double span = C.trace->t_s.back() > 0 ? C.trace->t_s.back() : 1.0;
    C.rate_per_s = double(C.trace->t_s.size()) / span;
  }
  const bool generative = pool.model.kind == ModelKind::generate;
  if (C.arrival != ArrivalKind::trace) {
    C.prompt = parse_dist(wl.req("prompt_tokens"), src.base_dir);
    if (generative) {
      C.output = parse_dist(wl.req("output_tokens"), src.base_dir);
    } else {
      if (wl.has("output_tokens"))
        wl.at("output_tokens")
            .fail(std::string("model '") + pool.model.name + "' is a " + model_kind_name(pool.model.kind) +
                      " model: it generates no tokens, so output_tokens does not apply",
                  ErrorKind::inconsistent);
      C.output.kind = DistKind::fixed;
      C.output.a = 1;
      C.output.describe = "none";
    }
    C.mean_prompt_tokens = mean_of(C.prompt, pool.model.max_context, src.cache);
    C.mean_output_tokens = generative ? mean_of(C.output, pool.model.max_context, src.cache) : 0;
  } else {
    double sp = 0, so = 0;
    const TraceData& tr = *C.trace;
    for (size_t i = 0; i < tr.prompt.size(); ++i) {
      sp += tr.prompt[i];
      so += tr.output[i];
    }
    C.mean_prompt_tokens = sp / double(tr.prompt.size());
    C.mean_output_tokens = generative ? so / double(tr.output.size()) : 0;
    C.prompt.describe = "from trace";
    C.output.describe = generative ? "from trace" : "none";
  }

  return C;
}

// The caching keys of a class (or of workload, their default).
void parse_caching(const N& cn, RequestClassSpec& C, const PoolSpec& P) {
  if (cn.has("prefix")) {
    const N px = cn.at("prefix");
    px.allow_keys({"share", "tokens"});
    if (C.trace && !C.trace->cached_prefix.empty())
      px.fail(
          "the trace's block hashes already say which prompt prefixes are cached (engine.prefix_caching "
          "reuses them); remove prefix",
          ErrorKind::inconsistent);
    C.prefix_share = px.req("share").num_in(0, 1, "share");
    C.prefix_tokens = int(px.req("tokens").integer(1, 1 << 20));
    if (C.prefix_tokens >= P.model.max_context)  // a prompt holds the prefix and a token of its own
      px.at("tokens").fail(fmt::format("a prefix of {} tokens leaves no room for the rest of a prompt in {}'s context "
                                       "of {} tokens",
                                       C.prefix_tokens, P.model.name, P.model.max_context),
                           ErrorKind::inconsistent);
  }
  if (cn.has("response_cache")) {
    const N rc = cn.at("response_cache");
    rc.allow_keys({"hit_rate", "latency_s"});
    C.response_cache_hit_rate = rc.req("hit_rate").num_in(0, 1, "hit_rate");
    if (rc.has("latency_s")) C.response_cache_latency_s = rc.at("latency_s").num_in(0, 60);
  }
}

// A response cache that answers every closed-loop request at once, with no think time, is a loop
// without end, and with a think time of a microsecond one the run would take days to end; checked
// once the class's own response_cache has overridden the workload's (cn: the node that gave it).
void check_response_cache_loop(const N& cn, const RequestClassSpec& C, double duration_s) {
  if (cn.has("response_cache")) {
    const N rc = cn.at("response_cache");
    // a think time that is always 0: fixed at 0, uniform over [0, 0], or an empirical list whose
    // every value drawn (of weight above 0) is 0
    const DistSpec& z = C.think;
    bool only_zeros = z.kind == DistKind::empirical;
    for (size_t i = 0; only_zeros && i < z.values.size(); ++i) {
      const double mass = z.cdf.size() == z.values.size() ? z.cdf[i] - (i > 0 ? z.cdf[i - 1] : 0.0) : 1.0;
      if (mass > 0 && z.values[i] > 0) only_zeros = false;
    }
    const bool no_think =
        (z.kind == DistKind::fixed && z.a <= 0) || (z.kind == DistKind::uniform && z.b <= 0) || only_zeros;
    if (C.arrival == ArrivalKind::concurrency && C.response_cache_hit_rate >= 1 && C.response_cache_latency_s <= 0 &&
        no_think)
      rc.fail("closed-loop users answered at once by the cache, with no think time, would send forever at one instant",
              ErrorKind::inconsistent);
    // below 1, each request the fleet serves comes with hit_rate / (1 - hit_rate) answered by the
    // cache; in (almost) no time and with no think time, those are sent at (almost) one instant,
    // events the run counts without time passing
    const double h = C.response_cache_hit_rate;
    if (C.arrival == ArrivalKind::concurrency && h < 1 && h > 0.999 && C.response_cache_latency_s < 1e-3 && no_think)
      rc.at("hit_rate")
          .fail(fmt::format("closed-loop users with no think time, answered by the cache in {:g} s, would send about "
                            "{:.3g} requests at once for each the fleet serves (hit_rate / (1 - hit_rate)): give "
                            "response_cache.latency_s (a lookup's round trip, 0.001 or more) or a think time, or a "
                            "hit_rate of 0.999 or less",
                            C.response_cache_latency_s, h / (1 - h)),
                ErrorKind::inconsistent);
    // every request a hit: a user sends one per think time and cache latency, never waiting on the
    // fleet; past the 1e9 requests a run may hold (as arrival.requests allows) it would not end
    // in any time worth waiting for
    const double cycle_s = C.think_mean_s + C.response_cache_latency_s;
    const double sends = double(C.clients) * duration_s / cycle_s;
    if (C.arrival == ArrivalKind::concurrency && C.response_cache_hit_rate >= 1 && C.max_requests == 0 &&
        !(sends <= 1e9))
      rc.fail(fmt::format("closed-loop users all answered by the cache send one request each per {:.3g} s (mean think "
                          "time plus the cache's latency): about {:.3g} requests in {:g} s, past the 1e9 a run may "
                          "hold; lengthen think_time_s or response_cache.latency_s, lower hit_rate below 1, or cap "
                          "them with arrival.requests",
                          cycle_s, sends, duration_s),
              ErrorKind::inconsistent);
  }
}

// Goodput bounds of a class (or of workload, their default): a completed request that meets every
// given bound counts as good, as `vllm bench serve --goodput` counts it.
void parse_goodput(const N& cn, RequestClassSpec& C) {
  if (!cn.has("goodput")) return;
  const N g = cn.at("goodput");
  g.allow_keys({"ttft_s", "tpot_s", "e2e_s"});
  if (g.has("ttft_s")) C.good_ttft_s = g.at("ttft_s").pos(1e7);
  if (g.has("tpot_s")) C.good_tpot_s = g.at("tpot_s").pos(1e7);
  if (g.has("e2e_s")) C.good_e2e_s = g.at("e2e_s").pos(1e7);
}

}  // namespace fleetsim::detail
