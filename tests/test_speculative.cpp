// Speculative decoding (engine.speculative): the expected tokens per verify step against a Monte
// Carlo of the acceptance process, one request's latency on a linear step model by hand, the
// draft's memory, and located errors.
#include <doctest/doctest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "helpers.hpp"
#include "libsim/core/engine.hpp"
#include "libsim/input/scenario_internal.hpp"

using namespace fleetsim;
using detail::kGiB;
using test::error_of;

namespace {

// A sequence's tokens in one verify step: draft token i is kept with probability a[i] if all
// before it were; the target adds its own token after the first rejection (or after all k).
double monte_carlo_tokens(const std::vector<double>& a, int steps, double& stderr_out) {
  std::mt19937_64 gen(12345);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  double sum = 0, sum2 = 0;
  for (int s = 0; s < steps; ++s) {
    int x = 1;
    for (double p : a) {
      if (u(gen) >= p) break;
      ++x;
    }
    sum += x;
    sum2 += double(x) * x;
  }
  const double mean = sum / steps;
  stderr_out = std::sqrt((sum2 / steps - mean * mean) / steps);
  return mean;
}

std::string one_request(const std::string& spec) {
  return "duration_s: 100\nwarmup_s: 0\ndevice: h100-sxm-80gb\nmodel: llama-3.1-8b\n"
         "engine: {perf_model: linear, step_base_s: 0.01" +
         spec +
         "}\nfleet: {replicas: 1}\n"
         "workload:\n  arrival: {process: burst, requests: 1}\n  prompt_tokens: 100\n  output_tokens: 36\n";
}

// Llama 3.1 8B on one H100 on the roofline with a 1B draft of 4 tokens at `acceptance`, no
// client-side costs and no prefix cache; `arrival` is the workload's arrival map, then its lengths.
std::string roofline_draft(int duration_s, int max_batched_tokens, const std::string& acceptance,
                           const std::string& arrival) {
  return "duration_s: " + std::to_string(duration_s) +
         "\nwarmup_s: 0\ndevice: h100-sxm-80gb\nmodel: llama-3.1-8b\n"
         "engine: {perf_model: roofline, perf_profile: none, async_scheduling: false, client_ttft_s: 0,\n"
         "  client_s_per_input_token: 0, client_s_per_output_token: 0, prefix_caching: false,\n"
         "  max_batched_tokens: " +
         std::to_string(max_batched_tokens) +
         ", speculative: {draft_model: llama-3.2-1b, tokens: 4, acceptance: " + acceptance +
         "}}\nfleet: {replicas: 1}\nworkload: {arrival: " + arrival + "}\n";
}

}  // namespace

TEST_CASE("speculative: (1 - a^(k+1)) / (1 - a) tokens per verify step, as a Monte Carlo of acceptance gives") {
  for (const auto& [a, k] : std::vector<std::pair<double, int>>{{0.5, 2}, {0.7, 4}, {0.9, 8}, {0.3, 1}}) {
    CAPTURE(a);
    CAPTURE(k);
    const std::vector<double> rates(size_t(k), a);
    const double mu = detail::spec_tokens_per_step(rates);
    CHECK(mu == doctest::Approx((1 - std::pow(a, k + 1)) / (1 - a)).epsilon(1e-12));
    double se = 0;
    const double mc = monte_carlo_tokens(rates, 400000, se);
    CHECK(std::fabs(mc - mu) < 4 * se);
  }
  // per position: 1 + 0.8 + 0.8 x 0.5 + 0.8 x 0.5 x 0.25
  double se = 0;
  const std::vector<double> pos = {0.8, 0.5, 0.25};
  CHECK(detail::spec_tokens_per_step(pos) == doctest::Approx(2.3));
  const double mc = monte_carlo_tokens(pos, 400000, se);
  CHECK(std::fabs(mc - 2.3) < 4 * se);
}

TEST_CASE("speculative: one request's decode steps take 1 / tokens_per_step of the verify step each") {
  // a linear model's step is the verify step (10 ms); k = 2 at 0.5 keeps 1.75 tokens a step: the
  // prefill step emits the first token, then 35 tokens take 35 / 1.75 = 20 verify steps
  const auto r =
      test::run(test::scenario(one_request(", speculative: {draft_model: llama-3.2-1b, tokens: 2, acceptance: 0.5}")));
  CHECK(r.drained);
  CHECK(r.all->ttft.max == doctest::Approx(0.01).epsilon(1e-9));
  CHECK(r.all->e2e.max == doctest::Approx(0.01 + 35 * 0.01 / 1.75).epsilon(1e-9));
  CHECK(r.all->tpot.max == doctest::Approx(0.01 / 1.75).epsilon(1e-9));
  const auto plain = test::run(test::scenario(one_request("")));
  CHECK(plain.all->e2e.max == doctest::Approx(0.36).epsilon(1e-9));
  // which is the upper bound on the gain, and the run says that it priced nothing for the draft
  const std::string note = r.report["scenario"]["step_time"]["note"].get<std::string>();
  CHECK(note.find("not priced: the linear model has no term for the draft or the verified tokens") !=
        std::string::npos);
}

TEST_CASE("speculative: the draft's weights and KV come out of the KV cache") {
  const Scenario plain = test::scenario(one_request(""));
  const Scenario spec =
      test::scenario(one_request(", speculative: {draft_model: llama-3.2-1b, tokens: 3, acceptance: [0.8, 0.6, 0.4]}"));
  const Capacity &a = plain.pools[0].capacity, &b = spec.pools[0].capacity;
  // Llama 3.2 1B in bf16 beside the 8B; its KV per token: 16 layers x 8 heads x 64 x 2 x 2 bytes
  CHECK(b.draft_gib == doctest::Approx(1.24e9 * 2 / kGiB).epsilon(0.02));
  CHECK(b.weights_gib == doctest::Approx(a.weights_gib + b.draft_gib));
  CHECK(b.draft_kv_bytes_per_token == doctest::Approx(16.0 * 8 * 64 * 2 * 2));
  CHECK(b.kv_bytes_per_token == doctest::Approx(a.kv_bytes_per_token));
  CHECK(b.kv_blocks ==
        int64_t(std::floor(b.kv_gib * kGiB / ((b.kv_bytes_per_token + b.draft_kv_bytes_per_token) * 16))));
  CHECK(spec.pools[0].spec_tokens_per_step == doctest::Approx(1 + 0.8 + 0.48 + 0.192));
  // the report's capacity says what a block holds: both models' KV
  const Json cap = test::run(spec).report["capacity"];
  CHECK(cap["draft_kv_bytes_per_token"].get<double>() == doctest::Approx(16.0 * 8 * 64 * 2 * 2));
  CHECK(!test::run(plain).report["capacity"].contains("draft_kv_bytes_per_token"));
  // and so does the table's capacity line, whose tokens x bytes add up to its GiB
  CHECK(format_run_table(test::run(spec).report).find("(131072 + 32768 draft B/token)") != std::string::npos);
}

TEST_CASE("speculative: heads on the target's hidden states hold their layers and read its LM head") {
  // Llama 3.1 8B's decoder layer from its config: attention 4096 x (4096 + 2 x 1024 + 4096), the
  // gated MLP 3 x 4096 x 14336, two norms; heads add a 2 x 4096 -> 4096 input projection
  const double layer = 4096.0 * (4096 + 2 * 1024 + 4096) + 3.0 * 4096 * 14336 + 2 * 4096;
  const double projection = 2.0 * 4096 * 4096, lm_head = 128256.0 * 4096;
  const Scenario plain = test::scenario(one_request(""));
  const Scenario one =
      test::scenario(one_request(", speculative: {draft_layers: 1, tokens: 3, acceptance: [0.8, 0.6, 0.4]}"));
  const Capacity &a = plain.pools[0].capacity, &b = one.pools[0].capacity;
  // held: the layer and the projection, not the LM head (the target's); the catalog's 8.03 B
  // parameters give the layer within 0.01% of the config's count
  CHECK(b.draft_gib == doctest::Approx((layer + projection) * 2 / kGiB).epsilon(1e-4));
  CHECK(b.weights_gib == doctest::Approx(a.weights_gib + b.draft_gib));
  CHECK(b.draft_kv_bytes_per_token == doctest::Approx(1.0 * 8 * 128 * 2 * 2));  // one layer's KV
  CHECK(one.pools[0].spec_tokens_per_step == doctest::Approx(1 + 0.8 + 0.48 + 0.192));
  // read every draft step: what they hold and the LM head, whose FLOPs they compute too
  const PoolParams p = one.pools[0].params();
  CHECK(p.spec.draft_weight_bytes == doctest::Approx(b.draft_gib * kGiB + lm_head * 2).epsilon(1e-12));
  CHECK(p.spec.draft_flops_per_token == doctest::Approx(2.0 * (b.draft_gib * kGiB / 2 + lm_head)).epsilon(1e-12));
  CHECK(p.spec.draft_kv_bytes_per_token == doctest::Approx(4096.0));
  // an LM head of their own (EAGLE-3's 32,000 tokens) is held, and read in place of the target's
  const Scenario own = test::scenario(
      one_request(", speculative: {draft_layers: 1, draft_vocab: 32000, tokens: 3, acceptance: [0.8, 0.6, 0.4]}"));
  CHECK(own.pools[0].capacity.draft_gib - b.draft_gib == doctest::Approx(32000.0 * 4096 * 2 / kGiB).epsilon(1e-9));
  CHECK(own.pools[0].params().spec.draft_weight_bytes ==
        doctest::Approx(own.pools[0].capacity.draft_gib * kGiB).epsilon(1e-12));
  // two layers hold two layers' weights and KV
  const Scenario two = test::scenario(one_request(", speculative: {draft_layers: 2, tokens: 3, acceptance: 0.7}"));
  CHECK(two.pools[0].capacity.draft_gib - b.draft_gib == doctest::Approx(layer * 2 / kGiB).epsilon(1e-4));
  CHECK(two.pools[0].capacity.draft_kv_bytes_per_token == doctest::Approx(8192.0));
  // fp8 weights: the layers at a byte a parameter, the shared LM head read as the target holds it (bf16)
  const Scenario fp8 = test::scenario(one_request(", speculative: {draft_layers: 1, tokens: 3, acceptance: 0.7}") +
                                      "weight_dtype: fp8\n");
  CHECK(fp8.pools[0].params().spec.draft_weight_bytes ==
        doctest::Approx(fp8.pools[0].capacity.draft_gib * kGiB + lm_head * 2).epsilon(1e-12));
  CHECK(fp8.pools[0].capacity.draft_gib == doctest::Approx((layer + projection) / kGiB).epsilon(1e-4));
  // the report says which
  const auto r = test::run(one);
  const Json& j = r.report["scenario"]["engine"]["speculative"];
  CHECK(j["draft_layers"] == 1);
  CHECK(j["draft_vocab"] == 128256);
  CHECK(j["shares_lm_head"] == true);
}

TEST_CASE("speculative: bad settings are located errors") {
  const std::string ok = "draft_model: llama-3.2-1b, tokens: 2, acceptance: 0.6";
  auto with = [](const std::string& s) { return one_request(", speculative: {" + s + "}"); };
  CHECK(error_of(with("draft_model: qwen3-0.6b, tokens: 2, acceptance: 0.6"))
            .find("a draft model must generate with the target's vocabulary") != std::string::npos);
  CHECK(error_of(with("draft_model: llama-3.2-1b, tokens: 2, acceptance: [0.6]"))
            .find("expected one acceptance rate per draft token (2)") != std::string::npos);
  CHECK(error_of(with("draft_model: llama-3.2-1b, tokens: 2, acceptance: 1")).find("acceptance") != std::string::npos);
  CHECK(error_of(with("draft_model: llama-3.2-1b, tokens: 0, acceptance: 0.5")).find("tokens") != std::string::npos);
  CHECK(error_of(with("draft_model: no-such-model, tokens: 2, acceptance: 0.5")).find("no-such-model") !=
        std::string::npos);
  CHECK(error_of(with(ok + ", depth: 3")).find("unknown key 'depth'") != std::string::npos);
  // a draft as large as its target costs at least what it saves
  CHECK(error_of(with("draft_model: llama-3.1-8b, tokens: 2, acceptance: 0.6"))
            .find("a draft must be smaller than its target: llama-3.1-8b computes 8.0B parameters a token") !=
        std::string::npos);
  CHECK(error_of(one_request(", speculative: {" + ok + "}") + "time_slicing: 2\n").find("shared device") !=
        std::string::npos);
  // heads: one of draft_model and draft_layers; layers the target has; a vocabulary no larger than its
  CHECK(error_of(with("draft_model: llama-3.2-1b, draft_layers: 1, tokens: 2, acceptance: 0.6"))
            .find("both draft_model and draft_layers given") != std::string::npos);
  CHECK(error_of(with("tokens: 2, acceptance: 0.6")).find("no draft given") != std::string::npos);
  CHECK(error_of(with(ok + ", draft_vocab: 32000")).find("draft_vocab applies to heads") != std::string::npos);
  CHECK(error_of(with("draft_layers: 0, tokens: 2, acceptance: 0.6")).find("draft_layers") != std::string::npos);
  CHECK(error_of(with("draft_layers: 33, tokens: 2, acceptance: 0.6")).find("has 32 layers") != std::string::npos);
  CHECK(error_of(with("draft_layers: 100, tokens: 2, acceptance: 0.6")).find("has 32 layers") != std::string::npos);
  CHECK(error_of(with("tokens: 2, acceptance: 0.6")).find("not both") == std::string::npos);
  CHECK(error_of(with("draft_layers: 1, draft_vocab: 200000, tokens: 2, acceptance: 0.6")).find("draft_vocab") !=
        std::string::npos);
  std::string moe = with("draft_layers: 1, tokens: 2, acceptance: 0.6");
  moe.replace(moe.find("llama-3.1-8b"), std::string("llama-3.1-8b").size(), "qwen3-30b-a3b");
  CHECK(error_of(moe).find("heads of a mixture-of-experts") != std::string::npos);
  // a mixture-of-experts draft would be priced at every expert's weights: refused
  std::string moe_draft = with("draft_model: qwen3-30b-a3b, tokens: 2, acceptance: 0.6");
  moe_draft.replace(moe_draft.find("llama-3.1-8b"), std::string("llama-3.1-8b").size(), "qwen3-235b-a22b");
  CHECK(error_of(moe_draft).find("a mixture-of-experts draft model (qwen3-30b-a3b: 30.5B parameters, 3.4B active) is "
                                 "not modelled: name a dense draft_model") != std::string::npos);
}

TEST_CASE("speculative: the shipped scenario shows where speculation pays and where it stops") {
  const std::string path = std::string(FLEETSIM_SOURCE_DIR) + "/scenarios/speculative-decoding.yaml";
  auto tpot_ms = [&](int clients, const std::string& acceptance, bool draft) {
    std::vector<std::string> sets = {"workload.arrival.clients=" + std::to_string(clients)};
    if (draft)
      sets.push_back("engine.speculative.acceptance=" + acceptance);
    else
      sets.push_back("engine.speculative=null");
    const auto r = test::run(load_scenario_file(path, sets));
    return 1e3 * r.all->tpot.sum / double(r.all->tpot.n);
  };
  const double alone = tpot_ms(1, "", false), crowd = tpot_ms(256, "", false);
  CHECK(alone == doctest::Approx(7.185).epsilon(0.01));
  CHECK(crowd == doctest::Approx(25.06).epsilon(0.01));
  // acceptance 0.7: 7.2 -> 3.8 ms alone; at 256 users a little slower (25.4 ms against 25.1)
  CHECK(tpot_ms(1, "0.7", true) == doctest::Approx(3.849).epsilon(0.01));
  CHECK(tpot_ms(256, "0.7", true) == doctest::Approx(25.42).epsilon(0.01));
  // 0.5: a gain alone, a loss at 256 users; 0.3: no gain even alone
  CHECK(tpot_ms(1, "0.5", true) < alone);
  CHECK(tpot_ms(256, "0.5", true) > crowd);
  CHECK(tpot_ms(1, "0.3", true) > alone);
  // heads of one layer and a 32,000-token LM head: 3.0 ms alone, 22.2 ms at 256 users, below both
  const std::string heads = "{draft_layers: 1, draft_vocab: 32000, tokens: 4, acceptance: 0.7}";
  auto heads_ms = [&](int clients) {
    const auto r = test::run(load_scenario_file(
        path, {"workload.arrival.clients=" + std::to_string(clients), "engine.speculative=" + heads}));
    return 1e3 * r.all->tpot.sum / double(r.all->tpot.n);
  };
  CHECK(heads_ms(1) == doctest::Approx(2.977).epsilon(0.01));
  CHECK(heads_ms(256) == doctest::Approx(22.24).epsilon(0.01));
  CHECK(heads_ms(256) < crowd);
}

TEST_CASE("speculative: on the roofline the draft's steps come before the verify step, not under it") {
  // 256 sequences of 1,000 tokens' context: the verify step is bound by its GEMMs, the draft (a 1B
  // model read 4 times) by its bytes; with acceptance 0 (one token a step) a speculating step costs
  // at least the plain step plus the draft's own roofline time
  const std::string y =
      "duration_s: 100\ndevice: h100-sxm-80gb\nmodel: llama-3.1-8b\n"
      "engine: {perf_model: roofline, perf_profile: none, max_num_seqs: 256}\nfleet: {replicas: 1}\n"
      "workload: {arrival: {process: poisson, rate_per_s: 1}, prompt_tokens: 100, output_tokens: 10}\n";
  const SimParams plain = test::scenario(y).params();
  const SimParams spec =
      test::scenario(y, {"engine.speculative={draft_model: llama-3.2-1b, tokens: 4, acceptance: 0}"}).params();
  const PoolParams &P = plain.pools[0], &S = spec.pools[0];
  REQUIRE(S.spec.tokens_per_step == 1.0);
  const double n = 256, T0 = 256 * 1000.0;
  Replica a{}, b{};
  set_decode_run(P, a, n, T0);
  set_decode_run(S, b, n, T0);
  const double draft_flops_s = 4 * S.spec.draft_flops_per_token * n / S.perf.flops_per_s;
  const double draft_bytes_s =
      4 * (S.spec.draft_weight_bytes + S.spec.draft_kv_bytes_per_token * (T0 + n)) / S.perf.bytes_per_s;
  REQUIRE(draft_bytes_s > draft_flops_s);  // the draft is bound by its bytes
  CHECK(line_step(b.run_line, 0) >= line_step(a.run_line, 0) + draft_bytes_s);
}

TEST_CASE("speculative: a sliding-window draft holds a window per sequence and reads it every draft step") {
  // Llama 3.2 1B as the draft with half its 16 layers on a 1,024-token window: its KV per token is
  // that of its 8 full layers, and each sequence holds a window in the other 8, as the target's
  // window layers hold theirs (the target here has none)
  const std::string y =
      "duration_s: 100\ndevice: h100-sxm-80gb\nmodel: llama-3.1-8b\n"
      "catalog: {models: {llama-3.2-1b: {sliding_layers: 8, sliding_window: 1024}}}\n"
      "engine: {perf_model: roofline, perf_profile: none, max_num_seqs: 256,\n"
      "  speculative: {draft_model: llama-3.2-1b, tokens: 4, acceptance: 0}}\nfleet: {replicas: 1}\n"
      "workload: {arrival: {process: poisson, rate_per_s: 1}, prompt_tokens: 100, output_tokens: 10}\n";
  const Scenario sc = test::scenario(y);
  const Capacity& c = sc.pools[0].capacity;
  const double per_layer = 8.0 * 64 * 2 * 2;  // 8 KV heads of 64, keys and values, bf16
  CHECK(c.draft_kv_bytes_per_token == doctest::Approx(8 * per_layer));
  CHECK(c.window_kv_bytes_per_seq == doctest::Approx(8 * per_layer * 1024));
  const double block_bytes = (c.kv_bytes_per_token + c.draft_kv_bytes_per_token) * 16;
  CHECK(c.window_blocks_per_seq == int64_t(std::ceil(8 * per_layer * 1024 / block_bytes)));
  const SimParams p = sc.params();
  const PoolParams& S = p.pools[0];
  CHECK(S.window_blocks == c.window_blocks_per_seq);
  CHECK(S.spec.draft_window_bytes_per_seq == doctest::Approx(8 * per_layer * 1024));
  // a decode step of 256 sequences: the draft, bound by its bytes, reads 4 windows a sequence more
  PoolParams none = S;
  none.spec.draft_window_bytes_per_seq = 0.0;
  const double n = 256, T0 = 256 * 1000.0;
  Replica a{}, b{};
  set_decode_run(S, a, n, T0);
  set_decode_run(none, b, n, T0);
  CHECK(line_step(a.run_line, 0) - line_step(b.run_line, 0) ==
        doctest::Approx(4 * 8 * per_layer * 1024 * n / S.perf.bytes_per_s).epsilon(1e-9));
}

TEST_CASE("speculative: a mixture of experts' verify step reads the experts its k + 1 tokens per sequence touch") {
  // Qwen3-30B-A3B (8 of 128 experts per token) on the roofline, one sequence, 4 draft tokens: the
  // verify step routes 5 tokens, which touch 1 - (15/16)^5 = 27.5% of the experts, not the 6.25%
  // one token does; a core step's bytes are the verify step's over the tokens it yields
  const std::string y =
      "duration_s: 600\nwarmup_s: 0\ndevice: h100-sxm-80gb\nmodel: qwen3-30b-a3b\n"
      "engine: {perf_profile: none, speculative: {draft_model: qwen3-0.6b, tokens: 4, acceptance: 0.7}}\n"
      "fleet: {replicas: 1}\n"
      "workload: {arrival: {process: burst, requests: 1}, prompt_tokens: 100, output_tokens: 2001}\n";
  const Scenario s = test::scenario(y);
  const SimParams p = s.params();
  const PoolParams& P = p.pools[0];
  REQUIRE(P.moe.expert_bytes > 0);
  CHECK(experts_touched_share(P.moe, 5.0) == doctest::Approx(1.0 - std::pow(15.0 / 16.0, 5)));
  const double W1 = step_weight_bytes(P.work, P.moe, 1.0), W5 = step_weight_bytes(P.work, P.moe, 5.0);
  const auto r = test::run(s);
  REQUIRE(r.all->completed == 1);
  // 2,000 decode tokens (the prompt's step is a few GB more, under 0.1% of the run's)
  const double per_token = r.tally->pools[0].bytes / 2000.0;
  const double tps = s.pools[0].spec_tokens_per_step;
  CHECK(per_token >= 0.999 * W5 / tps);
  CHECK(per_token > 1.5 * W1 / tps);  // what reading one token's experts would give, and more
}

TEST_CASE("speculation: a decoding sequence's draft tokens count against the step's token budget") {
  // A decodes from 0 s; B's 1,000-token prompt arrives at 0.2 s into a budget of 20 tokens a step:
  // 19 left beside A's one token, 15 beside A's 1 + 4 verified tokens
  const std::string trace = test::write_temp("two_long.csv",
                                             "timestamp_s,prompt_tokens,output_tokens\n"
                                             "0,100,2000\n0.2,1000,2\n");
  const std::string yaml =
      "seed: 1\nduration_s: 10\ndevice: h100-sxm-80gb\nmodel: llama-3.1-8b\n"
      "engine: {perf_model: linear, step_base_s: 0.01, per_prefill_token_s: 0.0001, per_decode_seq_s: 0.001, "
      "latency_at: engine, async_scheduling: false, max_batched_tokens: 20, max_num_seqs: 16}\n"
      "fleet: {replicas: 1}\nworkload: {arrival: {process: trace, path: " +
      trace + "}}\n";
  auto b_ttft = [&](const std::vector<std::string>& sets) {
    return test::run(test::scenario(yaml, sets)).report["latency_s"]["ttft"]["max"].get<double>();
  };
  const double plain = b_ttft({}),
               spec = b_ttft({"engine.speculative={draft_model: llama-3.2-1b, tokens: 4, acceptance: 0.7}"});
  MESSAGE("B's TTFT: " << plain << " s without speculation, " << spec << " s with 4 draft tokens");
  // 53 chunks of 19 tokens against 67 of 15
  CHECK(spec / plain > 67.0 / 53.0 * 0.95);
}

TEST_CASE("speculation: with pipeline parallelism it is refused, as vLLM refuses it") {
  const std::string yaml =
      "duration_s: 60\ndevice: h100-sxm-80gb\nmodel: llama-3.1-8b\nfleet: {replicas: 1}\n"
      "workload: {arrival: {process: poisson, rate_per_s: 1}, prompt_tokens: 100, output_tokens: 10}\n";
  CHECK(error_of(yaml, {"engine.pipeline_parallel=2",
                        "engine.speculative={draft_model: llama-3.2-1b, tokens: 4, acceptance: 0.7}"})
            .find("speculative decoding with pipeline parallelism is not modelled") != std::string::npos);
}

TEST_CASE("speculative: across tensor-parallel devices, the verify step's tokens and the draft's layers all-reduce") {
  // one user on two devices, an 8B target (32 layers, hidden 4096) and a 1B draft (16 layers,
  // hidden 2048) at k = 2, acceptance 0.6: mu = 1.96 tokens a verify step. What the link adds to
  // a core step, by hand: per verify step 2 x 32 all-reduces of 3 tokens (the token and the 2
  // drafted), and 2 draft steps of 2 x 16 all-reduces of one token each, over mu.
  const std::string yaml =
      "duration_s: 100\nwarmup_s: 0\ndevice: h100-sxm-80gb\nmodel: llama-3.1-8b\n"
      "engine: {perf_profile: none, tensor_parallel: 2,\n"
      "  speculative: {draft_model: llama-3.2-1b, tokens: 2, acceptance: 0.6}}\nfleet: {replicas: 1}\n"
      "workload: {arrival: {process: burst, requests: 1}, prompt_tokens: 100, output_tokens: 201}\n";
  const double mu = 1.0 + 0.6 + 0.36;
  auto tpot = [&](double gb_s, double latency_us, bool spec) {
    std::vector<std::string> sets = {"catalog.devices.h100-sxm-80gb.link_gb_s=" + std::to_string(gb_s),
                                     "catalog.devices.h100-sxm-80gb.link_latency_us=" + std::to_string(latency_us)};
    if (!spec) sets.push_back("engine.speculative=null");
    const auto r = test::run(test::scenario(yaml, sets));
    REQUIRE(r.tally->classes[0].completed == 1);
    return r.report["latency_s"]["tpot"]["mean"].get<double>();
  };
  // a latency of 100 us per all-reduce: 64 + 2 x 32 of them a verify step
  CHECK(tpot(450, 100, true) - tpot(450, 0, true) == doctest::Approx((64 + 2 * 32) * 100e-6 / mu).epsilon(1e-6));
  CHECK(tpot(450, 100, false) - tpot(450, 0, false) == doctest::Approx(64 * 100e-6).epsilon(1e-6));
  // a token's all-reduce at 1 GB/s against 1 TB/s: 2 (tp - 1) / tp x hidden x 2 bytes
  const double t8 = 4096 * 2 * (1.0 / 1e9 - 1.0 / 1e12), t1 = 2048 * 2 * (1.0 / 1e9 - 1.0 / 1e12);
  CHECK(tpot(1, 0, true) - tpot(1000, 0, true) == doctest::Approx((64 * 3 * t8 + 2 * 32 * t1) / mu).epsilon(1e-6));
}

TEST_CASE("speculative: the draft runs over the prompt too, in the prefill step and so in TTFT") {
  // one request of 8,000 prompt tokens on the roofline: the draft (a 1B model) computes over them
  // and writes their KV before it can propose; its own roofline time comes on top of the target's
  const std::string yaml =
      roofline_draft(100, 8192, "0.7", "{process: burst, requests: 1}, prompt_tokens: 8000, output_tokens: 2");
  const Scenario with = test::scenario(yaml);
  const PoolParams S = with.pools[0].params();
  const double flops_s = S.spec.draft_flops_per_token * 8000 / S.perf.flops_per_s;
  const double bytes_s = (S.spec.draft_weight_bytes + S.spec.draft_kv_bytes_per_token * 8000) / S.perf.bytes_per_s;
  CHECK(flops_s > bytes_s);  // 8,000 tokens of a 1B model: its GEMMs bind
  const double ttft = test::run(with).all->ttft.max;
  const double plain = test::run(test::scenario(yaml, {"engine.speculative=null"})).all->ttft.max;
  CHECK(ttft - plain == doctest::Approx(flops_s).epsilon(1e-9));
  // 2 x 1.24e9 x 8,000 FLOPs at half of 989.4 TFLOP/s: about 40 ms beside the target's 296
  CHECK(flops_s == doctest::Approx(2 * 1.24e9 * 8000 / (989.4e12 * 0.5)).epsilon(0.01));
}

TEST_CASE("speculative: on the roofline a run ends where the draft's bytes overtake its FLOPs") {
  // 256 sequences from 100 tokens: the 1B draft's 4 steps are bound by their FLOPs (5.13 ms) at the
  // start and by their bytes (KV of a growing context) from some step on; the run's line holds
  // the FLOPs only up to that step
  const std::string yaml = roofline_draft(1, 32768, "0.9",
                                          "{process: concurrency, clients: 256, think_time_s: 1000}, prompt_tokens: "
                                          "100, output_tokens: 1000");
  const Scenario sc = test::scenario(yaml);
  const PoolParams S = sc.pools[0].params();
  const SpecParams& sp = S.spec;
  const double n = 256, T0 = 256 * 100.0;
  const double dc = 4 * sp.draft_flops_per_token * n / S.perf.flops_per_s;
  auto dm = [&](double j) {
    return 4 * (sp.draft_weight_bytes + sp.draft_kv_bytes_per_token * (T0 + n + n * j)) / S.perf.bytes_per_s;
  };
  Replica R{};
  const int64_t k = set_decode_run(S, R, n, T0);
  REQUIRE(k > 1);
  CHECK(dm(double(k - 1)) <= dc);
  CHECK(dm(double(k)) > dc);
  // a run from where the bytes bind holds to its end
  Replica B{};
  CHECK(set_decode_run(S, B, n, T0 + n * double(k)) == kLineHolds);
  // TPOT by hand: each core step (verify + the draft's 4 steps, the longer of FLOPs and bytes at
  // that step's context) over mu; holding the FLOPs for the whole run would make it 11% shorter
  const double mu = (1 - std::pow(0.9, 5)) / (1 - 0.9), F = S.perf.flops_per_s, Bw = S.perf.bytes_per_s;
  double sum = 0;
  for (int j = 0; j < 999; ++j) {
    const double ctx = n * (100 + j);
    const double verify =
        std::max((5 * n * S.work.matmul_flops_per_token + 5 * S.work.attn_flops_per_pair * (ctx + n)) / F,
                 (S.work.weight_bytes + S.work.kv_bytes_per_token * (ctx + n)) / Bw);
    const double draft = std::max(dc, 4 * (sp.draft_weight_bytes + sp.draft_kv_bytes_per_token * (ctx + n)) / Bw);
    sum += (S.perf.overhead_s + verify + draft) / mu;
  }
  const test::Result r = test::run(sc);
  REQUIRE(r.tally->classes[0].completed == 256);
  CHECK(r.report["latency_s"]["tpot"]["mean"].get<double>() == doctest::Approx(sum / 999).epsilon(1e-3));
}
