// The step-time and engine sections of a run report: which model produced the latencies, how
// sure it is, and which engine settings the scenario left to the engine's defaults.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

#include "report/report.hpp"

namespace fleetsim {

// How sure the step-time model is: a calibrated profile names itself and quotes its error on
// measurements held out of its fit; the roofline and linear models say they are uncalibrated.
Json step_time_json(const PoolSpec& P) {
  Json j;
  j["model"] = perf_name(P);
  // what the latencies include: the client's view (API server, tokenization) or the engine's
  j["latency_at"] = P.engine_side ? "engine" : "client";
  // whether the engine forms each step while the last runs (a new request then waits a step more)
  j["async_scheduling"] = P.async_scheduling;
  if (P.perf_model == PerfKind::calibrated && P.profile && P.profile->device.empty()) {
    // the physics model: its error is that on devices and models its fit never saw
    const PerfProfile& f = *P.profile;
    j["calibrated"] = true;
    j["profile"] = f.name;
    j["profile_source"] = f.origin;
    if (!f.data.empty()) j["fitted_on"] = f.data;
    for (const auto& [key, e] : {std::pair<const char*, const ProfileError*>{"held_out", &f.held_out},
                                 {"cross_validated", &f.cross_validated}}) {
      Json h;
      h["points"] = e->points;
      for (int k = 0; k < 4; ++k)
        if (std::isfinite(e->median[k])) h["median_abs_error_" + std::string(kProfileMetrics[k])] = e->median[k];
      j[key] = h;
    }
    // fitted on vLLM servers: another engine's scheduler and kernels are outside what it measured
    // no data-parallel-attention run is in its fit set either, nor one expressed with expert parallelism
    j["error_applies"] = P.engine_kind == EngineKind::vllm && P.dp == 1 && P.ep == 1;
    // the figures themselves, so that every view that prints the note (the HTML report) quotes them
    auto medians = [](const ProfileError& e) {
      std::string out;
      for (int k : {0, 1, 2})
        if (std::isfinite(e.median[k]))
          out += fmt::format("{}{} {:.0f}%", out.empty() ? "" : ", ", kProfileMetrics[k], 100.0 * e.median[k]);
      return out.empty() ? std::string("not measured") : out;
    };
    j["note"] = P.dp > 1   ? "physics step model fitted on vLLM runs without data-parallel attention; this pool's "
                             "ranks share their experts, so its measured error does not apply here (uncalibrated "
                             "for data-parallel attention)"
                : P.ep > 1 ? "physics step model fitted on vLLM runs without expert parallelism; this pool holds whole "
                             "experts per device, so its measured error does not apply here (uncalibrated for expert "
                             "parallelism)"
                : P.engine_kind == EngineKind::vllm
                    ? "physics step model, one set of coefficients fitted on every device; median error on runs the "
                      "fit never saw: " +
                          medians(f.held_out) + "; with each device left out of the fit: " + medians(f.cross_validated)
                    : std::string("physics step model fitted on vLLM runs; this pool's engine is ") +
                          engine_kind_name(P.engine_kind) +
                          ", so its measured error does not apply here (uncalibrated for this engine)";
  } else if (P.perf_model == PerfKind::calibrated && P.profile) {
    const PerfProfile& f = *P.profile;
    j["calibrated"] = true;
    j["profile"] = f.name;
    j["profile_source"] = f.origin;
    if (!f.engine.empty()) j["engine"] = f.engine;
    if (!f.data.empty()) j["fitted_on"] = f.data;
    if (!f.weight_dtype.empty()) j["fitted_weight_dtype"] = f.weight_dtype;
    Json held;
    held["points"] = f.held_out.points;
    for (int k = 0; k < 4; ++k)
      if (std::isfinite(f.held_out.median[k]))
        held["median_abs_error_" + std::string(kProfileMetrics[k])] = f.held_out.median[k];
    j["held_out"] = held;
    // a fit to per-step timings measured its error on step times
    if (f.step_time.steps > 0) {
      Json e;
      e["steps"] = f.step_time.steps;
      e["median_abs_error"] = std::isfinite(f.step_time.median) ? Json(f.step_time.median) : Json();
      e["held_out_median_abs_error"] = std::isfinite(f.step_time.held_out) ? Json(f.step_time.held_out) : Json();
      j["step_time_error"] = e;
    }
    // the profile's error was measured on its own configuration: quoted as this pool's only there
    std::string why;
    bool applies = profile_applies(f, P.model.name, P.tp, P.pp, P.weight_dtype, why, engine_kind_name(P.engine_kind),
                                   P.async_scheduling ? 1 : 0);
    // every profile was fitted on replicas without expert or data parallelism
    for (const auto& [degree, name] : {std::pair{P.ep, "ep 1"}, std::pair{P.dp, "dp 1"}})
      if (degree > 1) {
        why += (why.empty() ? "" : ", ") + std::string(name);
        applies = false;
      }
    j["error_applies"] = applies;
    if (!why.empty())
      j["note"] = "profile fitted on " + why +
                  "; this pool differs, so its measured error does not apply here "
                  "(uncalibrated for this configuration)";
  } else {
    j["calibrated"] = false;
    j["note"] = P.perf_model == PerfKind::roofline
                    ? "uncalibrated roofline: expect tens of percent error (docs/validation.md); fit a profile with "
                      "`fleetsim fit`"
                    : "linear model with user-given costs: uncalibrated unless they were measured";
  }
  // no fit saw a speculating server: its verify and draft steps are the step model's extrapolation
  if (P.spec_tokens > 0) {
    if (j.contains("error_applies")) j["error_applies"] = false;
    j["note"] = j.value("note", std::string()) +
                (P.perf_model == PerfKind::linear
                     // no work terms: the step costs what a plain decode step does, the draft nothing
                     ? fmt::format("; speculative decoding ({} drafts {} tokens, {:.2f} kept a step) not priced: the "
                                   "linear model has no term for the draft or the verified tokens, so a step is a "
                                   "plain decode step over {:.2f} tokens (an upper bound on the gain)",
                                   P.spec_draft.name, P.spec_tokens, P.spec_tokens_per_step, P.spec_tokens_per_step)
                     : fmt::format("; speculative decoding ({} drafts {} tokens, {:.2f} kept a step) priced from this "
                                   "step model, fitted on runs without it (uncalibrated for speculative decoding)",
                                   P.spec_draft.name, P.spec_tokens, P.spec_tokens_per_step));
  }
  if (!P.engine_side && P.client_ttft_s > 0) j["client_ttft_s"] = P.client_ttft_s;
  if (!P.engine_side && P.client_s_per_input_token > 0) j["client_s_per_input_token"] = P.client_s_per_input_token;
  if (!P.engine_side && P.client_s_per_output_token > 0) j["client_s_per_output_token"] = P.client_s_per_output_token;
  return j;
}

// The engine a pool runs as, and which of its settings came from that engine's defaults rather
// than from the scenario (docs/model.md, "Engines").
Json engine_json(const PoolSpec& P) {
  Json j;
  j["kind"] = engine_kind_name(P.engine_kind);
  j[engine_fraction_key(P.engine_kind)] = P.gpu_memory_utilization;
  j["max_num_seqs"] = P.max_num_seqs;
  j["max_batched_tokens"] = P.max_batched_tokens;
  j["kv_block_tokens"] = P.kv_block_tokens;
  j["assumed"] = P.engine_assumed;
  if (P.spec_tokens > 0) {
    j["speculative"] = {{"draft_model", P.spec_draft.name},
                        {"tokens", P.spec_tokens},
                        {"acceptance", P.spec_acceptance},
                        {"tokens_per_step", P.spec_tokens_per_step},
                        {"draft_gib", P.capacity.draft_gib}};
    if (P.spec_heads > 0) {  // heads on the target's hidden states; their LM head the target's, or their own
      j["speculative"]["draft_layers"] = P.spec_heads;
      j["speculative"]["draft_vocab"] = P.spec_draft.vocab > 0 ? P.spec_draft.vocab : P.model.vocab;
      j["speculative"]["shares_lm_head"] = P.spec_draft.vocab == 0;
    }
  }
  return j;
}

// A sweep configuration's step times, as the run table's "steps" line says them: one sentence
// where every pool's is the same, else each pool's by name.
std::string step_time_line(const Scenario& s) {
  std::vector<std::string> each;
  for (const PoolSpec& P : s.pools)
    each.push_back(step_time_summary(Json{{"step_time", step_time_json(P)}, {"perf_model", perf_name(P)}}));
  if (std::all_of(each.begin(), each.end(), [&](const std::string& e) { return e == each.front(); }))
    return each.empty() ? std::string() : each.front();
  std::string o;
  for (size_t i = 0; i < each.size(); ++i) o += (i == 0 ? "" : "; ") + s.pools[i].name + ": " + each[i];
  return o;
}

}  // namespace fleetsim
