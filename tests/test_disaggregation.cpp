// Disaggregated prefill and decode (pools.<name>.disaggregation): one request's TTFT by hand
// (prefill + KV bytes / link bandwidth + link latency + the decode replica's first step), the
// ledger's identities across the two pools, what the KV transfers add up to, and located errors.
#include <doctest/doctest.h>

#include <cmath>
#include <map>
#include <sstream>
#include <string>

#include "helpers.hpp"
#include "libsim/cost/ledger.hpp"
#include "libsim/input/csv.hpp"

using namespace fleetsim;

namespace {

// Llama 3.1 8B (bf16 KV: 32 layers x 8 heads x 128 x 2 x 2 bytes = 131,072 bytes a token) on a
// step model of a fixed 10 ms, a prefill pool handing its prompts to a decode pool.
std::string pd(const std::string& workload, const std::string& link = "gb_s: 1, latency_us: 500",
               const std::string& extra = "") {
  return "duration_s: 100\nwarmup_s: 0\nmodel: llama-3.1-8b\ndevice: h100-sxm-80gb\n"
         "engine: {perf_model: linear, step_base_s: 0.01}\n"
         "pools:\n"
         "  prefill:\n    fleet: {replicas: 1, usd_per_hour: 2}\n"
         "    disaggregation: {decode_pool: decode, " +
         link +
         "}\n"
         "  decode:\n    fleet: {replicas: 2, usd_per_hour: 3}\n" +
         extra + "classes:\n  chat:\n    pool: prefill\n" + workload;
}

const std::string kOne = "    arrival: {process: burst, requests: 1}\n    prompt_tokens: 100\n    output_tokens: 36\n";

}  // namespace

TEST_CASE("disaggregation: one request's TTFT is prefill + KV bytes / bandwidth + latency + a decode step") {
  const auto r = test::run(test::scenario(pd(kOne)));
  REQUIRE(r.tally->status == 0);
  CHECK(r.drained);
  CHECK(r.all->completed == 1);
  // 10 ms prefill; 100 x 131,072 bytes at 1 GB/s = 13.1072 ms, + 0.5 ms; the decode replica's
  // step over the prompt's last token emits the first output token (10 ms)
  const double transfer = 0.0005 + 100 * 131072.0 / 1e9;
  const double ttft = 0.01 + transfer + 0.01;
  CHECK(r.all->ttft.max == doctest::Approx(ttft).epsilon(1e-9));
  // the other 35 tokens decode there, one step each
  CHECK(r.all->e2e.max == doctest::Approx(ttft + 35 * 0.01).epsilon(1e-9));
  CHECK(r.all->tpot.max == doctest::Approx(0.01).epsilon(1e-9));
  const PoolTally& pf = r.tally->pools[0];
  CHECK(pf.kv_sent == 1);
  CHECK(pf.kv_sent_bytes == doctest::Approx(100 * 131072.0));
  CHECK(pf.kv_sent_s == doctest::Approx(transfer).epsilon(1e-12));
  // one step each side's device computed: the prompt on the prefill pool, its last token and the
  // 35 decode steps on the decode pool
  CHECK(pf.steps == 1);
  CHECK(r.tally->pools[1].steps == 36);
  const Json& d = r.report["pools"]["prefill"]["disaggregation"];
  CHECK(d["decode_pool"] == "decode");
  CHECK(d["link"] == "custom");
  CHECK(d["mean_transfer_s"].get<double>() == doctest::Approx(transfer));

  // over the catalog's network link (50 GB/s per device, 20 us)
  const auto n = test::run(test::scenario(pd(kOne, "link: network")));
  CHECK(n.all->ttft.max == doctest::Approx(0.02 + 20e-6 + 100 * 131072.0 / 50e9).epsilon(1e-9));
}

TEST_CASE("disaggregation: tensor-parallel sides send their shares at once, over the fewer devices' links") {
  // tp 2 prefill, tp 4 decode: each tp-2 device holds half the KV heads, so the 100 tokens'
  // 13.1 MB cross 2 links of 1 GB/s
  std::string y = pd(kOne);
  y.replace(y.find("  prefill:\n    fleet:"), std::string("  prefill:\n    fleet:").size(),
            "  prefill:\n    engine: {tensor_parallel: 2}\n    fleet:");
  y.replace(y.find("  decode:\n    fleet:"), std::string("  decode:\n    fleet:").size(),
            "  decode:\n    engine: {tensor_parallel: 4}\n    fleet:");
  const auto r = test::run(test::scenario(y));
  const double transfer = 0.0005 + 100 * 131072.0 / 2e9;
  CHECK(r.report["pools"]["prefill"]["disaggregation"]["lanes"] == 2);
  CHECK(r.tally->pools[0].kv_sent_s == doctest::Approx(transfer).epsilon(1e-12));
}

TEST_CASE("disaggregation: sliding-window layers send a window's KV, the pipeline's stages each layer once") {
  // gpt-oss-120b: 18 full-attention layers (36,864 bytes a token in bf16) and 18 of a 128-token
  // window (36,864 bytes a token, for at most 128 tokens)
  auto sent = [](int prompt) {
    std::string y = pd("    arrival: {process: burst, requests: 1}\n    prompt_tokens: " + std::to_string(prompt) +
                       "\n    output_tokens: 4\n");
    y.replace(y.find("model: llama-3.1-8b"), 19, "model: gpt-oss-120b\nexpert_weight_dtype: mxfp4");
    y.replace(y.find("device: h100-sxm-80gb"), 21, "device: h200-141gb");
    return test::run(test::scenario(y));
  };
  for (const int prompt : {100, 1000}) {
    CAPTURE(prompt);
    const auto r = sent(prompt);
    REQUIRE(r.all->completed == 1);
    const double bytes = 36864.0 * prompt + 36864.0 * std::min(prompt, 128);
    CHECK(r.tally->pools[0].kv_sent_bytes == doctest::Approx(bytes).epsilon(1e-12));
    CHECK(r.tally->pools[0].kv_sent_s == doctest::Approx(0.0005 + bytes / 1e9).epsilon(1e-12));
    CHECK(r.report["pools"]["prefill"]["disaggregation"]["kv_window_bytes_per_token"].get<double>() == 36864.0);
  }
  // Llama 3.1 8B's 32 layers over 3 stages: 11, 11 and 10 layers, 131,072 bytes a token together
  // (not 3 x 11 layers' worth)
  std::string y = pd(kOne);
  y.replace(y.find("  prefill:\n    fleet:"), std::string("  prefill:\n    fleet:").size(),
            "  prefill:\n    engine: {pipeline_parallel: 3}\n    fleet:");
  const auto r = test::run(test::scenario(y));
  CHECK(r.tally->pools[0].kv_sent_bytes == doctest::Approx(100 * 131072.0).epsilon(1e-12));
  CHECK(r.report["pools"]["prefill"]["disaggregation"]["kv_window_bytes_per_token"].get<double>() == 0.0);
}

TEST_CASE("disaggregation: a request's queue wait is its prefill queue's and its decode queue's") {
  // two prompts computed together in one 10 ms step reach a decode replica of one sequence: the
  // second waits there for the first's 36 steps (its prompt's last token and 35 more)
  std::string y = pd("    arrival: {process: burst, requests: 2}\n    prompt_tokens: 100\n    output_tokens: 36\n");
  y.replace(y.find("  decode:\n    fleet: {replicas: 2"), std::string("  decode:\n    fleet: {replicas: 2").size(),
            "  decode:\n    engine: {max_num_seqs: 1}\n    fleet: {replicas: 1");
  const auto r = test::run(test::scenario(y));
  REQUIRE(r.all->completed == 2);
  CHECK(r.all->queue_wait.min == 0.0);
  CHECK(r.all->queue_wait.max == doctest::Approx(0.36).epsilon(1e-9));
  const double ttft = 0.01 + 0.0005 + 100 * 131072.0 / 1e9 + 0.01;
  CHECK(r.all->ttft.max == doctest::Approx(ttft + 0.36).epsilon(1e-9));
}

TEST_CASE("disaggregation: a decode replica preempted loses what it computed, not the prompt it loaded") {
  // two 1,000-token prompts, 2,000 tokens out each, on a decode pool of about 2,400 tokens of KV:
  // the newer sequence is preempted once, when the two outgrow it; it had loaded 999 tokens and
  // computed 1 + its decode steps, about half of what room was left after the two prompts
  std::string y = pd("    arrival: {process: burst, requests: 2}\n    prompt_tokens: 1000\n    output_tokens: 2000\n",
                     "gb_s: 1, latency_us: 500");
  y.replace(y.find("  decode:\n    fleet: {replicas: 2"), std::string("  decode:\n    fleet: {replicas: 2").size(),
            "  decode:\n    engine: {gpu_memory_utilization: 0.213}\n    fleet: {replicas: 1");
  y.replace(y.find("duration_s: 100"), 15, "duration_s: 300");
  const Scenario s = test::scenario(y);
  const int64_t blocks = s.pools[1].capacity.kv_blocks;
  REQUIRE(blocks * 16 > 2100);
  REQUIRE(blocks * 16 < 4000);
  const auto r = test::run(s);
  REQUIRE(r.all->completed == 2);
  REQUIRE(r.all->preempted == 1);
  const double lost = r.tally->pools[1].lost_tokens;
  const double room = double(blocks * 16 - 2000) / 2.0;  // each sequence's decode tokens when they meet it
  CAPTURE(blocks);
  CHECK(lost > room - 40);
  CHECK(lost < room + 40);
  CHECK(r.tally->pools[0].lost_tokens == 0);
  CHECK(r.tally->classes[0].lost_tokens == lost);
}

TEST_CASE("disaggregation: the ledger bills each pool and splits both among the classes that used them") {
  const std::string load =
      "    arrival: {process: poisson, rate_per_s: 20}\n    prompt_tokens: {dist: lognormal, median: 800, p99: 4000}\n"
      "    output_tokens: {dist: lognormal, median: 200, p99: 800}\n"
      "  direct:\n    pool: decode\n    arrival: {process: poisson, rate_per_s: 2}\n"
      "    prompt_tokens: 300\n    output_tokens: 100\n";
  const Scenario s = test::scenario(pd(load, "link: network"));
  const auto r = test::run(s);
  REQUIRE(r.tally->status == 0);
  CHECK(r.drained);
  const ClassTally& chat = r.tally->classes[0];
  CHECK(chat.arrived == chat.completed + chat.rejected_queue_full + chat.rejected_too_long + chat.failed);
  CHECK(chat.completed > 1000);
  CHECK(r.tally->pools[0].kv_sent == double(chat.completed));
  // the chat class's time is on both pools; the direct class's only on the decode pool
  CHECK(chat.decode_busy_s > 0);
  CHECK(chat.decode_busy_s < chat.busy_s);
  CHECK(r.tally->classes[1].decode_busy_s == 0);
  CHECK(chat.busy_s + r.tally->classes[1].busy_s ==
        doctest::Approx(r.tally->pools[0].busy_s + r.tally->pools[1].busy_s).epsilon(1e-9));

  const Ledger L = make_ledger(s, *r.tally);
  // classes add up to the total, and each pool's class parts to the pool
  double classes_usd = 0;
  for (const auto& c : L.classes) classes_usd += c.usd();
  CHECK(classes_usd == doctest::Approx(L.total.effective_usd()).epsilon(1e-9));
  for (size_t i = 0; i < L.pools.size(); ++i) {
    double parts = 0, share = 0;
    for (const auto& c : L.classes)
      for (const auto& x : c.parts)
        if (x.pool == int(i)) {
          parts += x.busy_usd + x.idle_share_usd;
          share += x.share;
        }
    CAPTURE(i);
    CHECK(parts == doctest::Approx(L.pools[i].cost.effective_usd()).epsilon(1e-9));
    CHECK(share == doctest::Approx(1.0).epsilon(1e-9));
  }
  // rate x hours on every pool's line
  for (const auto& p : L.pools) {
    double lines = 0;
    for (const auto& l : p.cost.lines) lines += l.device_hours * l.effective_usd_per_hour;
    CHECK(lines == doctest::Approx(p.cost.effective_usd()).epsilon(1e-9));
  }
  CHECK(L.classes[0].decode_pool == "decode");
  CHECK(L.classes[0].parts.size() == 2);
  CHECK(L.classes[1].parts.size() == 1);
  // the prefill pool computes prompts only: every output token is the decode pool's
  CHECK(L.pools[0].cost.output_tokens == 0);
  CHECK(L.pools[0].cost.input_tokens == chat.input_tokens);
  CHECK(L.pools[1].cost.output_tokens == chat.output_tokens + r.tally->classes[1].output_tokens);
  CHECK(L.total.completed == double(chat.completed + r.tally->classes[1].completed));
  // its dollars are nearly all input dollars (a prompt's work); the decode pool's mostly output
  CHECK(L.classes[0].input_usd() > L.pools[0].cost.effective_usd() * L.classes[0].parts[0].share * 0.99);
  // the FOCUS export charges each pool's hours to the classes that used it: per pool and class,
  // the rows add up to that class's part of the pool
  std::istringstream in(focus_csv(L, s, 0.0));
  CsvReader rd(in, "<focus>");
  std::map<std::string, double> charged;  // "pool/class"
  while (rd.next()) {
    const std::string tags = rd.get("tags");
    const std::string cls = tags.find("\"fleetsim-class\":\"chat\"") != std::string::npos ? "chat" : "direct";
    charged[rd.get("resourcename") + "/" + cls] += rd.number("effectivecost");
  }
  CHECK(charged.size() == 3);  // chat on both pools, direct on the decode pool
  for (const auto& c : L.classes)
    for (const auto& x : c.parts)
      CHECK(charged[L.pools[size_t(x.pool)].name + "/" + c.name] ==
            doctest::Approx(x.busy_usd + x.idle_share_usd).epsilon(1e-6));
  const Json& cj = r.report["ledger"]["classes"]["chat"];
  CHECK(cj["decode_pool"] == "decode");
  CHECK(cj["by_pool"]["prefill"]["usd"].get<double>() + cj["by_pool"]["decode"]["usd"].get<double>() ==
        doctest::Approx(L.classes[0].usd()).epsilon(1e-9));
}

TEST_CASE("disaggregation: a request too long for the decode pool's KV is turned away at arrival") {
  // the decode pool keeps a quarter of its memory (about 3 GiB of KV beside the 15 GiB of weights:
  // under 30,000 tokens); a 30,000-token prompt fits the prefill pool's
  const std::string big =
      "    arrival: {process: burst, requests: 1}\n    prompt_tokens: 30000\n    output_tokens: 10\n";
  std::string y = pd(big);
  y.replace(y.find("  decode:\n    fleet:"), std::string("  decode:\n    fleet:").size(),
            "  decode:\n    engine: {gpu_memory_utilization: 0.25}\n    fleet:");
  const auto r = test::run(test::scenario(y));
  CHECK(r.all->rejected_too_long == 1);
  CHECK(r.tally->pools[0].steps == 0);
}

TEST_CASE("disaggregation: KV that reaches a central queue counts the whole pool's host jobs against its limit") {
  // Decode replicas with one host core each, 1 s of detokenizing per output token, one central
  // queue of limit 2; 10 ms steps. At t = 0 a 2-token request (chat) lands on replica 0 (its host job ends
  // at 2.03 s), a 100-token one on replica 1 (until 101 s), and the first of `later` (every 4 s,
  // 10 tokens) on replica 0 behind the first (until 12.03 s). At 4, 8 and 12 s the pool's two host
  // jobs fill the queue's limit, though replica 0, the one a central queue names, holds one from
  // 2.03 s on: turned away, as an arrival at the pool's own front door would be. At 16 s one is
  // left: admitted.
  const std::string classes =
      "    arrival: {process: burst, requests: 1}\n    prompt_tokens: 100\n    output_tokens: 2\n"
      "  long:\n    pool: prefill\n    arrival: {process: burst, requests: 1}\n"
      "    prompt_tokens: 100\n    output_tokens: 100\n"
      "  later:\n    pool: prefill\n    arrival: {process: constant, rate_per_s: 0.25}\n"
      "    prompt_tokens: 100\n    output_tokens: 10\n";
  const std::string host =
      "    engine: {perf_model: linear, step_base_s: 0.01, host: {cores: 1, tokenize_s_per_token: 1.0e-6,"
      " detokenize_s_per_token: 1.0}}\n";
  const Scenario sc =
      test::scenario(pd(classes, "gb_s: 100, latency_us: 0", host),
                     {"duration_s=20", "pools.decode.fleet.router=central_queue", "pools.decode.fleet.queue_limit=2"});
  const auto r = test::run(sc);
  REQUIRE(r.tally->status == 0);
  CHECK(r.drained);
  const ClassTally& later = r.tally->classes[2];
  CHECK(later.arrived == 5);
  CHECK(later.rejected_queue_full == 3);
  CHECK(later.completed == 2);
  // the first of them waited on replica 0's core for the short request's job (from 0.030131 s,
  // its second step's end: 10 ms prefill, 0.131 ms of KV, two 10 ms steps), then ran its own 10 s
  CHECK(later.e2e.max == doctest::Approx(0.030131072 + 2.0 + 10.0).epsilon(1e-9));
  CHECK(r.tally->classes[0].completed == 1);
  CHECK(r.tally->classes[1].completed == 1);
}

TEST_CASE("disaggregation: KV in flight counts against the decode pool's queues, and no other pool's room") {
  // 1,000-token prompts over a 200 kB/s link: 655.36 s a transfer, longer than the run, so every
  // prompt computed stays in flight. The decode pool's queue of 10 takes 10 of them; the rest are
  // turned away as their prefill ends. A third pool's queue limit changes nothing (in flight, they
  // once held request slots no queue counted, and a small limit there turned its own requests away).
  const std::string y =
      "duration_s: 600\nwarmup_s: 0\nseed: 1\ndevice: h100-sxm-80gb\nmodel: llama-3.1-8b\n"
      "pools:\n"
      "  prefill:\n    fleet: {replicas: 1, queue_limit: 4}\n    engine: {max_num_seqs: 4}\n"
      "    disaggregation: {decode_pool: decode, gb_s: 0.0002, latency_us: 0}\n"
      "  decode:\n    fleet: {replicas: 1, queue_limit: 10}\n    engine: {max_num_seqs: 64}\n"
      "  spare:\n    fleet: {replicas: 1, queue_limit: 10}\n"
      "classes:\n"
      "  chat:\n    pool: prefill\n    arrival: {process: poisson, rate_per_s: 1}\n"
      "    prompt_tokens: 1000\n    output_tokens: 10\n"
      "  other:\n    pool: spare\n    arrival: {process: poisson, rate_per_s: 0.01}\n"
      "    prompt_tokens: 10\n    output_tokens: 10\n";
  for (const char* spare : {"10", "1000"}) {
    CAPTURE(spare);
    const auto r = test::run(test::scenario(y, {std::string("pools.spare.fleet.queue_limit=") + spare}));
    REQUIRE(r.tally->status == 0);
    const ClassTally &chat = r.tally->classes[0], &other = r.tally->classes[1];
    CHECK(r.tally->pools[0].kv_sent == 10);
    CHECK(r.tally->pools[0].kv_sent_s == doctest::Approx(10 * 1000 * 131072.0 / 2e5).epsilon(1e-12));
    CHECK(chat.completed == 10);
    CHECK(chat.arrived == chat.completed + chat.rejected_queue_full + chat.rejected_too_long);
    CHECK(chat.rejected_queue_full > 500);
    // each prompt turned away after its prefill is work the prefill pool did for nothing
    CHECK(r.tally->pools[0].lost_tokens == 1000.0 * double(chat.rejected_queue_full));
    CHECK(r.report["ledger"]["pools"]["prefill"]["buckets"]["lost_work"]["device_hours"].get<double>() > 0);
    CHECK(other.arrived > 0);
    CHECK(other.rejected_queue_full == 0);
    CHECK(other.completed == other.arrived);
  }
}

TEST_CASE("disaggregation: work a lost prefill replica threw away is the prefill pool's lost work") {
  // spot losses on the prefill pool only; the decode pool, never lost nor short of KV, throws nothing away
  const std::string y =
      "duration_s: 900\nseed: 1\ndevice: h100-sxm-80gb\nmodel: llama-3.1-8b\n"
      "pools:\n"
      "  pre:\n    fleet: {replicas: 2, pricing: {spot: {discount: 0.6, interruptions_per_hour: 20}}}\n"
      "    disaggregation: {decode_pool: dec}\n"
      "  dec:\n    fleet: {replicas: 2}\n"
      "classes:\n  x:\n    pool: pre\n    arrival: {process: poisson, rate_per_s: 4}\n"
      "    prompt_tokens: 8000\n    output_tokens: 100\n";
  const auto r = test::run(test::scenario(y));
  REQUIRE(r.tally->pools[0].interruptions > 0);
  REQUIRE(r.tally->pools[1].interruptions == 0);
  CHECK(r.tally->pools[1].lost_tokens == 0);
  CHECK(r.tally->pools[0].lost_tokens == doctest::Approx(r.tally->classes[0].lost_tokens));
  const Json& l = r.report["ledger"]["pools"];
  CHECK(l["pre"]["buckets"]["lost_work"]["device_hours"].get<double>() > 0);
  CHECK(l["dec"]["buckets"]["lost_work"]["device_hours"].get<double>() == 0);
  // a prefill pool does no decode: the time its lost replicas' runs had taken is prefill time too
  CHECK(r.tally->pools[0].input_busy_s == doctest::Approx(r.tally->pools[0].busy_s).epsilon(1e-9));
}

TEST_CASE("disaggregation: a decode pool autoscaled on TTFT sees its requests' first tokens") {
  // one decode replica of 16 sequences cannot keep up with 8 req/s of 200 output tokens: TTFT grows,
  // and the decode pool, scaling on it, adds replicas (it saw no sample when the prefill pool took
  // them all)
  const std::string y =
      "duration_s: 900\nwarmup_s: 60\nseed: 1\nmodel: llama-3.1-8b\ndevice: h100-sxm-80gb\n"
      "engine: {perf_model: linear, step_base_s: 0.01, per_prefill_token_s: 0.00002, per_decode_seq_s: 0.0005}\n"
      "pools:\n  prefill:\n    fleet: {replicas: 2}\n    disaggregation: {decode_pool: decode}\n"
      "  decode:\n    engine: {max_num_seqs: 16}\n    fleet:\n      replicas: 1\n"
      "      cold_start: {provision_s: 5, image_pull_s: 1, warmup_s: 1}\n"
      "      autoscale: {min_replicas: 1, max_replicas: 8, signal: ttft, target: 0.5}\n"
      "classes:\n  chat:\n    pool: prefill\n    arrival: {process: poisson, rate_per_s: 8}\n"
      "    prompt_tokens: 1000\n    output_tokens: 200\n";
  const auto r = test::run(test::scenario(y));
  CHECK(r.tally->pools[1].scale_ups >= 2);
  CHECK(r.all->rejected_queue_full == 0);
}

TEST_CASE("disaggregation: bad settings are located errors") {
  using test::error_of;
  CHECK(error_of(pd(kOne, "gb_s: 1")).find("(no error)") != std::string::npos);
  std::string typo = pd(kOne);
  typo.replace(typo.find("decode_pool: decode"), 19, "decode_pool: decod");
  CHECK(error_of(typo).find("did you mean 'decode'") != std::string::npos);
  std::string self = pd(kOne);
  self.replace(self.find("decode_pool: decode"), 19, "decode_pool: prefill");
  CHECK(error_of(self).find("cannot decode its own prefills") != std::string::npos);
  std::string other = pd(kOne);
  other.replace(other.find("  decode:\n    fleet:"), std::string("  decode:\n    fleet:").size(),
                "  decode:\n    model: qwen2.5-7b\n    fleet:");
  CHECK(error_of(other).find("must serve the model whose KV it receives") != std::string::npos);
  CHECK(error_of(pd(kOne, "link: infiniband")).find("infiniband") != std::string::npos);
  CHECK(error_of(pd(kOne, "link: network, gb_s: -1")).find("gb_s") != std::string::npos);
  CHECK(error_of(pd(kOne, "link: network, bandwith: 3")).find("unknown key 'bandwith'") != std::string::npos);
  std::string scale = pd(kOne, "link: scale_up");
  scale.replace(scale.find("  decode:\n    fleet:"), std::string("  decode:\n    fleet:").size(),
                "  decode:\n    device: h200-141gb\n    fleet:");
  CHECK(error_of(scale).find("scale_up: the pools run on different devices (h100-sxm-80gb and h200-141gb), which "
                             "share no NVLink 4 via NVSwitch domain; use link: network") != std::string::npos);
  CHECK(error_of(pd(kOne, "link: scale_up")) == "(no error)");  // 1 + 2 of 8 NVLink devices
  // every replica of both pools counts, at its most: 1 + 8 of them do not fit
  std::string many = pd(kOne, "link: scale_up");
  many.replace(many.find("fleet: {replicas: 2, usd_per_hour: 3}"), 37, "fleet: {replicas: 8, usd_per_hour: 3}");
  CHECK(error_of(many).find("domain of 8 h100-sxm-80gb devices (here up to 1 + 8); use link: network") !=
        std::string::npos);
  // a transfer moves the cache as it is: both pools hold it in one dtype
  std::string fp8 = pd(kOne);
  fp8.replace(fp8.find("  decode:\n    fleet:"), std::string("  decode:\n    fleet:").size(),
              "  decode:\n    kv_dtype: fp8\n    fleet:");
  CHECK(error_of(fp8).find("holds its KV cache in fp8, this pool writes bf16") != std::string::npos);
  std::string chain =
      pd(kOne, "link: network", "  third:\n    fleet: {replicas: 1}\n    disaggregation: {decode_pool: prefill}\n");
  CHECK(error_of(chain).find("is itself a prefill pool") != std::string::npos);
  std::string stat = pd(kOne);
  stat.replace(stat.find("  decode:\n    fleet:"), std::string("  decode:\n    fleet:").size(),
               "  decode:\n    engine: {batching: static, max_batch: 8}\n    fleet:");
  CHECK(error_of(stat).find("continuous batching") != std::string::npos);
  std::string spec = pd(kOne);
  spec.replace(spec.find("  prefill:\n    fleet:"), std::string("  prefill:\n    fleet:").size(),
               "  prefill:\n    engine: {speculative: {draft_model: llama-3.2-1b, tokens: 2, acceptance: 0.5}}\n"
               "    fleet:");
  CHECK(error_of(spec).find("belongs to its decode pool") != std::string::npos);
  // located: file, line and column of the key
  CHECK(error_of(typo).find("<test>:9:35:") == 0);
  CHECK(error_of(typo).find("pools.prefill.disaggregation.decode_pool") != std::string::npos);
}

TEST_CASE("disaggregation: the published llm-d P/D run predicts what docs/validation.md quotes") {
  // tests/validation/disaggregated/llm-d-gpt-oss-120b.yaml, its measured means beside (llm-d's
  // guide): TTFT 1.157 s, TPOT 5.70 ms, e2e 2.78 s; docs/validation.md quotes these predictions
  const std::string path = std::string(FLEETSIM_SOURCE_DIR) + "/tests/validation/disaggregated/llm-d-gpt-oss-120b.yaml";
  struct Arm {
    std::vector<std::string> sets;
    double ttft_s, tpot_s, e2e_s;
  };
  const std::vector<std::string> agg = {"pools={agg: {fleet: {replicas: 16, router: round_robin}}}",
                                        "classes.bench.pool=agg"};
  std::vector<Arm> arms = {{{}, 0.1156, 0.008181, 2.153}, {agg, 0.1063, 0.01238, 3.189}};
  arms.push_back({{"engine.perf_model=roofline"}, 0.1449, 0.00589, 1.613});
  for (const auto& a : arms) {
    CAPTURE(a.e2e_s);
    const Scenario s = load_scenario_file(path, a.sets);
    const auto r = test::run(s);
    REQUIRE(r.tally->status == 0);
    CHECK(r.all->completed == 5400);
    CHECK(r.all->ttft.sum / double(r.all->ttft.n) == doctest::Approx(a.ttft_s).epsilon(0.005).scale(0));
    CHECK(r.all->tpot.sum / double(r.all->tpot.n) == doctest::Approx(a.tpot_s).epsilon(0.005).scale(0));
    CHECK(r.all->e2e.sum / double(r.all->e2e.n) == doctest::Approx(a.e2e_s).epsilon(0.005).scale(0));
  }
}
