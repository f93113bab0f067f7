// The ledger's identities: every line is rate x hours, buckets sum to what was billed, classes and
// pools sum to the total, the exports carry the same dollars; and the seeds' cost arithmetic.
#include <doctest/doctest.h>

#include <cmath>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include "helpers.hpp"
#include "libsim/cost/ledger.hpp"
#include "libsim/input/csv.hpp"
#include "libsim/input/input_file.hpp"

using namespace fleetsim;

namespace {

Scenario shipped(const std::string& name, const std::vector<std::string>& sets = {}) {
  return load_scenario_file(std::string(FLEETSIM_SOURCE_DIR) + "/scenarios/" + name + ".yaml", sets);
}

double num(const Json& j) { return j.get<double>(); }

// Every identity a cost block of the report must satisfy.
void check_block(const Json& b, const std::string& what, bool one_rate = true) {
  INFO(what);
  double hours = 0, usd = 0, list = 0, eff = 0, line_hours = 0;
  // a pool's buckets are billed at one rate, but for an unused commitment's (at the committed
  // rate): the rest of its dollars over the rest of its hours
  const Json& cu = b["buckets"]["committed_unused"];
  const double rest_h = num(b["billed_device_hours"]) - num(cu["device_hours"]);
  const double rest_rate = rest_h > 0 ? (num(b["effective_usd"]) - num(cu["usd"])) / rest_h : 0.0;
  if (num(cu["device_hours"]) == 0) CHECK(rest_rate == doctest::Approx(num(b["usd_per_device_hour"])));
  for (auto it = b["buckets"].begin(); it != b["buckets"].end(); ++it) {
    hours += num(it.value()["device_hours"]);
    usd += num(it.value()["usd"]);
    if (one_rate && it.key() != "committed_unused")
      CHECK(num(it.value()["usd"]) == doctest::Approx(num(it.value()["device_hours"]) * rest_rate));
  }
  for (const auto& l : b["pricing"]) {
    CHECK(num(l["list_usd"]) == doctest::Approx(num(l["device_hours"]) * num(l["list_usd_per_hour"])));
    CHECK(num(l["effective_usd"]) == doctest::Approx(num(l["device_hours"]) * num(l["effective_usd_per_hour"])));
    CHECK(num(l["effective_usd_per_hour"]) <= num(l["list_usd_per_hour"]));
    list += num(l["list_usd"]);
    eff += num(l["effective_usd"]);
    line_hours += num(l["device_hours"]);
  }
  CHECK(hours == doctest::Approx(num(b["billed_device_hours"])).epsilon(1e-12));
  CHECK(line_hours == doctest::Approx(num(b["billed_device_hours"])).epsilon(1e-12));
  CHECK(usd == doctest::Approx(num(b["effective_usd"])).epsilon(1e-12));
  CHECK(eff == doctest::Approx(num(b["effective_usd"])).epsilon(1e-12));
  CHECK(list == doctest::Approx(num(b["list_usd"])).epsilon(1e-12));
  CHECK(num(b["billed_device_hours"]) * num(b["usd_per_device_hour"]) == doctest::Approx(num(b["effective_usd"])));
}

// A `cost` block: rate x hours = total, input + output = total, per-unit figures from them.
void check_cost(const Json& c, double completed, double in_tokens, double out_tokens, const std::string& what) {
  INFO(what);
  CHECK(num(c["device_hours"]) * num(c["usd_per_device_hour"]) == doctest::Approx(num(c["total_usd"])));
  CHECK(num(c["input_usd"]) + num(c["output_usd"]) == doctest::Approx(num(c["total_usd"])));
  CHECK(num(c["per_request_usd"]) == doctest::Approx(num(c["total_usd"]) / completed));
  CHECK(num(c["per_million_input_tokens_usd"]) == doctest::Approx(num(c["input_usd"]) * 1e6 / in_tokens));
  CHECK(num(c["per_million_output_tokens_usd"]) == doctest::Approx(num(c["output_usd"]) * 1e6 / out_tokens));
}

}  // namespace

TEST_CASE("two pools, committed and spot: every line of the report reconciles") {
  const Scenario s = shipped("committed-and-spot");
  const auto r = test::run(s);
  REQUIRE(r.drained);
  const Json& j = r.report;
  const Json& L = j["ledger"];
  const double window_h = 3300.0 / 3600.0;

  check_block(L, "total", false);
  double pool_usd = 0, pool_hours = 0, pool_in = 0;
  for (auto it = L["pools"].begin(); it != L["pools"].end(); ++it) {
    check_block(it.value(), "pool " + it.key());
    pool_usd += num(it.value()["effective_usd"]);
    pool_hours += num(it.value()["billed_device_hours"]);
  }
  CHECK(pool_usd == doctest::Approx(num(L["effective_usd"])));
  CHECK(pool_hours == doctest::Approx(num(L["billed_device_hours"])));

  // committed H100s: 3 reserved for the whole window at 60% of $3.00, 2 of them running
  const Json& chat = L["pools"]["chat"];
  REQUIRE(chat["pricing"].size() == 1);
  CHECK(chat["pricing"][0]["category"] == "committed");
  CHECK(num(chat["pricing"][0]["device_hours"]) == doctest::Approx(3 * window_h));
  CHECK(num(chat["pricing"][0]["effective_usd_per_hour"]) == doctest::Approx(1.80));
  CHECK(num(chat["buckets"]["committed_unused"]["device_hours"]) == doctest::Approx(1 * window_h));
  CHECK(num(chat["committed_break_even_utilization"]) == doctest::Approx(0.6));
  // spot A100s: billed at 40% of $1.86, and the reclaims show as cold starts
  const Json& batch = L["pools"]["batch"];
  CHECK(batch["pricing"][0]["category"] == "spot");
  CHECK(num(batch["pricing"][0]["effective_usd_per_hour"]) == doctest::Approx(1.86 * 0.4));
  CHECK(num(j["pools"]["batch"]["fleet"]["interruptions"]) > 0);
  CHECK(num(batch["buckets"]["cold_start"]["device_hours"]) > 0);
  // and split by stage, adding up to the bucket; a spot replacement pulls its image on a new node
  double stages = 0;
  for (auto it = batch["cold_start_by_stage_device_hours"].begin();
       it != batch["cold_start_by_stage_device_hours"].end(); ++it)
    stages += num(it.value());
  CHECK(stages == doctest::Approx(num(batch["buckets"]["cold_start"]["device_hours"])));
  CHECK(num(batch["cold_start_by_stage_device_hours"]["image_pull"]) > 0);
  // the pool `cost` blocks are the ledger's: the JSON no longer quotes a rate it does not bill
  CHECK(num(j["pools"]["chat"]["cost"]["usd_per_device_hour"]) == doctest::Approx(1.80));
  CHECK(num(j["pools"]["chat"]["cost"]["total_usd"]) == doctest::Approx(num(chat["effective_usd"])));

  // classes: busy + idle share = what they pay, and they add up to their pools and the teams'
  double class_usd = 0, team_usd = 0, class_in = 0;
  for (size_t k = 0; k < s.classes.size(); ++k) {
    const Json& c = j["classes"][s.classes[k].name];
    const ClassTally& ct = r.tally->classes[k];
    check_cost(c["cost"], double(ct.completed), ct.input_tokens, ct.output_tokens, "class " + s.classes[k].name);
    CHECK(num(c["cost"]["busy_usd"]) + num(c["cost"]["idle_share_usd"]) == doctest::Approx(num(c["cost"]["usd"])));
    CHECK(num(c["cost"]["usd"]) == doctest::Approx(num(L["pools"][c["pool"].get<std::string>()]["effective_usd"])));
    class_usd += num(c["cost"]["usd"]);
    class_in += num(c["cost"]["input_usd"]);
  }
  for (auto it = j["teams"].begin(); it != j["teams"].end(); ++it) team_usd += num(it.value()["usd"]);
  CHECK(class_usd == doctest::Approx(num(j["cost"]["total_usd"])));
  CHECK(team_usd == doctest::Approx(num(j["cost"]["total_usd"])));
  for (auto it = j["pools"].begin(); it != j["pools"].end(); ++it) pool_in += num(it.value()["cost"]["input_usd"]);
  CHECK(pool_in == doctest::Approx(num(j["cost"]["input_usd"])));
  CHECK(class_in == doctest::Approx(num(j["cost"]["input_usd"])));
  const ClassTally all = *r.all;
  check_cost(j["cost"], double(all.completed), all.input_tokens, all.output_tokens, "total");

  SUBCASE("the ledger CSV: hours x rate = dollars on every row, buckets and lines sum to the total") {
    const std::string csv = ledger_csv(make_ledger(s, *r.tally));
    std::istringstream in(csv);
    CsvReader rd(in, "<ledger>");
    double buckets = 0, lines = 0;
    int rows = 0;
    while (rd.next()) {
      ++rows;
      const double h = rd.number("device_hours"), rate = rd.number("usd_per_device_hour"), usd = rd.number("usd");
      CHECK(h * rate == doctest::Approx(usd));
      if (rd.get("scope") == "pool" && rd.get("kind") == "bucket") buckets += usd;
      if (rd.get("scope") == "pool" && rd.get("kind") == "effective") lines += usd;
    }
    CHECK(rows == 2 * kBuckets + 2 * 2 + 2 * 2 + kBuckets + 2 * 2);
    CHECK(buckets == doctest::Approx(num(L["effective_usd"])));
    CHECK(lines == doctest::Approx(num(L["effective_usd"])));
  }
  SUBCASE("the FOCUS export: effective and list cost sum to the ledger's, tagged by pool, class and team") {
    std::istringstream in(focus_csv(make_ledger(s, *r.tally), s, 0.0));
    CsvReader rd(in, "<focus>");  // (columns are looked up in lower case)
    double eff = 0, list = 0, billed = 0;
    int rows = 0, unused_rows = 0;
    while (rd.next()) {
      ++rows;
      CHECK(rd.number("pricingquantity") * rd.number("contractedunitprice") ==
            doctest::Approx(rd.number("contractedcost")));
      CHECK(rd.number("pricingquantity") * rd.number("listunitprice") == doctest::Approx(rd.number("listcost")));
      billed += rd.number("billedcost");
      // the commitment's purchase: billed there, effective on the usage rows it covers
      if (rd.get("chargecategory") == "Purchase") continue;
      // a commitment's usage bills nothing itself (its purchase does); the rest bills what it costs
      if (rd.get("commitmentdiscountstatus").empty())
        CHECK(rd.number("billedcost") == doctest::Approx(rd.number("effectivecost")));
      else
        CHECK(rd.number("billedcost") == 0.0);
      // every consumed row names its class's team; the unused commitment is no class's
      const bool unused = rd.get("commitmentdiscountstatus") == "Unused";
      unused_rows += unused ? 1 : 0;
      CHECK((rd.get("tags").find("\"team\":") != std::string::npos) == !unused);
      eff += rd.number("effectivecost");
      list += rd.number("listcost");
    }
    // chat's commitment bought, its hours used and unused, batch's spot hours
    CHECK(rows == 4);
    CHECK(unused_rows == 1);
    CHECK(billed == doctest::Approx(num(L["effective_usd"])));
    CHECK(eff == doctest::Approx(num(L["effective_usd"])));
    CHECK(list == doctest::Approx(num(L["list_usd"])));
  }
  SUBCASE("the table prints each pricing line as hours x rate = dollars that multiply out") {
    const std::string table = format_run_table(j);
    const std::regex line(R"(([0-9.]+)  x  \$([0-9.]+)/h  =  \$([0-9.]+))");
    int n = 0;
    for (std::sregex_iterator it(table.begin(), table.end(), line), end; it != end; ++it, ++n)
      CHECK(std::stod((*it)[1]) * std::stod((*it)[2]) == doctest::Approx(std::stod((*it)[3])).epsilon(0.01));
    CHECK(n == 3);  // two pools and the total
    CHECK(table.find("2 x h100-sxm-80gb") != std::string::npos);
    CHECK(table.find("2 x a100-80gb") != std::string::npos);
    CHECK(table.find("class summarize") != std::string::npos);
  }
}

TEST_CASE("cold start by stage adds up to the cold-start bucket, a start asked for before the window included") {
  // scale-from-zero: the first start is asked for before the 60 s warm-up ends and runs into the
  // window; its stages' time inside the window is what the bucket holds
  const std::string y =
      "duration_s: 600\nwarmup_s: 60\ndevice: h100-sxm-80gb\nmodel: llama-3.2-1b\n"
      "fleet: {replicas: 0, autoscale: {min_replicas: 0, max_replicas: 1, signal: inflight, target: 8,"
      " interval_s: 5}}\n"
      "workload: {arrival: {process: poisson, rate_per_s: 1}, prompt_tokens: 500, output_tokens: 100}\n";
  for (const char* warmup : {"60", "0", "100"}) {
    CAPTURE(warmup);
    const auto r = test::run(test::scenario(y, {std::string("warmup_s=") + warmup}));
    const Json& l = r.report["ledger"];
    const double cold = num(l["buckets"]["cold_start"]["device_hours"]);
    double stages = 0;
    for (const auto& x : l["cold_start_by_stage_device_hours"].items()) stages += num(x.value());
    CHECK(cold > 0);
    CHECK(stages == doctest::Approx(cold).epsilon(1e-9));
  }
}

TEST_CASE("a start cut short counts only the stages it ran: the stages add up to the cold-start bucket") {
  // a burst scales up, the queue drains within a provisioning, and the starts are cancelled
  // before their image pull: their time is all provisioning
  const std::string y =
      "name: cut\nseed: 1\nduration_s: 600\nwarmup_s: 0\ndevice: h100-sxm-80gb\nmodel: llama-3.1-8b\n"
      "engine: {max_num_seqs: 64}\n"
      "fleet: {replicas: 1, router: central_queue, autoscale: {min_replicas: 1, max_replicas: 4, signal: queue_depth,"
      " target: 5, interval_s: 15, scale_down_window_s: 0, cooldown_s: 0}}\n"
      "workload: {arrival: {process: burst, requests: 3000, start_s: 1}, prompt_tokens: 200, output_tokens: 100}\n";
  for (const char* provision : {"120", "5"}) {  // cut in provisioning; or after starts that ran to the end
    CAPTURE(provision);
    const auto r = test::run(test::scenario(y, {std::string("fleet.cold_start={provision_s: ") + provision + "}"}));
    const Json& l = r.report["ledger"];
    const double cold = num(l["buckets"]["cold_start"]["device_hours"]);
    double stages = 0;
    for (const auto& x : l["cold_start_by_stage_device_hours"].items()) stages += num(x.value());
    CHECK(r.report["fleet"]["scale_ups"].get<double>() > 0);
    CHECK(cold > 0);
    CHECK(stages == doctest::Approx(cold).epsilon(1e-9));
    if (std::string(provision) == "120") {
      CHECK(r.report["fleet"]["scale_downs"].get<double>() > 0);  // the starts were cancelled
      CHECK(num(l["cold_start_by_stage_device_hours"]["provisioning"]) == doctest::Approx(cold).epsilon(1e-9));
    }
  }
}

TEST_CASE("a pool that never had a replica up has no busy, idle or cold-start fraction") {
  const std::string y =
      "duration_s: 600\nwarmup_s: 0\ndevice: h100-sxm-80gb\nmodel: llama-3.2-1b\n"
      "pools:\n  main: {fleet: {replicas: 1}}\n"
      "  spare: {fleet: {replicas: 0, autoscale: {min_replicas: 0, max_replicas: 1, signal: inflight, target: 8}}}\n"
      "classes:\n  chat: {pool: main, arrival: {process: poisson, rate_per_s: 1}, prompt_tokens: 500,"
      " output_tokens: 100}\n";
  const auto r = test::run(test::scenario(y));
  const Json& spare = r.report["pools"]["spare"]["utilization"];
  for (const char* k : {"busy_fraction", "idle_fraction", "cold_start_fraction", "idle_waste_fraction"}) {
    CAPTURE(k);
    CHECK(spare[k].is_null());
  }
  const Json& main = r.report["pools"]["main"]["utilization"];
  CHECK(num(main["busy_fraction"]) + num(main["idle_fraction"]) + num(main["cold_start_fraction"]) ==
        doctest::Approx(1.0).epsilon(1e-12));
}

TEST_CASE(
    "a pool that only ever prefills bills all of its dollars to input and none, not minus a rounding, to output") {
  for (const char* name : {"cpu-bound-tokenizer", "reranker-cpu-vs-gpu", "disaggregated-prefill"}) {
    CAPTURE(name);
    const auto r = test::run(shipped(name, {"duration_s=900", "warmup_s=0"}));
    auto split = [](const Json& c, const std::string& what) {
      INFO(what);
      CHECK(num(c["output_usd"]) >= 0.0);
      CHECK(num(c["input_usd"]) >= 0.0);
      CHECK(num(c["input_usd"]) + num(c["output_usd"]) == doctest::Approx(num(c["total_usd"])).epsilon(1e-12));
    };
    for (auto it = r.report["pools"].begin(); it != r.report["pools"].end(); ++it)
      split(it.value()["cost"], "pool " + it.key());
    for (auto it = r.report["ledger"]["classes"].begin(); it != r.report["ledger"]["classes"].end(); ++it)
      split(it.value(), "class " + it.key());
  }
}

TEST_CASE("the seeds' arithmetic: $4/h at 1,000 tokens/s is $1.11 per 1M tokens, ten times that at 10%") {
  const Scenario s = test::scenario(
      "name: seeds\nduration_s: 3600\nwarmup_s: 0\nmodel: llama-3.1-8b\ndevice: h100-sxm-80gb\n"
      "fleet: {replicas: 1, usd_per_hour: 4}\n"
      "workload: {arrival: {process: poisson, rate_per_s: 1}, prompt_tokens: {dist: fixed, value: 200}, "
      "output_tokens: {dist: fixed, value: 50}}\n");
  for (double busy : {1.0, 0.1}) {
    auto t = std::make_unique<Tally>();
    tally_clear(*t, 1, 1);
    t->window_s = 3600;
    t->pools[0].replica_s = 3600;
    t->pools[0].busy_s = 3600 * busy;
    t->pools[0].waste_s = 3600 * (1 - busy);
    t->pools[0].input_busy_s = 0.5 * t->pools[0].busy_s;
    t->classes[0].busy_s = t->pools[0].busy_s;
    t->classes[0].input_busy_s = t->pools[0].input_busy_s;
    t->classes[0].completed = 1000;
    t->classes[0].input_tokens = 0.5 * 1000.0 * busy * 3600;  // 1,000 tokens/s while busy
    t->classes[0].output_tokens = 0.5 * 1000.0 * busy * 3600;
    const Json r = run_report(s, *t);
    CAPTURE(busy);
    CHECK(num(r["cost"]["per_million_tokens_usd"]) == doctest::Approx(4.0 / 3.6 / busy));
    CHECK(num(r["ledger"]["buckets"]["idle_waste"]["usd"]) == doctest::Approx(4.0 * (1 - busy)));
  }
}

TEST_CASE("committed capacity beats on-demand above its break-even utilization and loses below") {
  // two replicas always running; four committed ones are used half of the time
  const std::string yaml =
      "name: commit\nseed: 1\nduration_s: 1200\nwarmup_s: 0\nmodel: llama-3.1-8b\ndevice: h100-sxm-80gb\n"
      "fleet: {replicas: 2, usd_per_hour: 3}\n"
      "workload: {arrival: {process: poisson, rate_per_s: 1}, prompt_tokens: {dist: fixed, value: 200}, "
      "output_tokens: {dist: fixed, value: 50}}\n";
  const double on_demand = num(test::run(test::scenario(yaml)).report["cost"]["total_usd"]);
  CHECK(on_demand == doctest::Approx(2 * 3.0 * 1200 / 3600));
  for (double discount : {0.6, 0.4}) {
    const auto r = test::run(test::scenario(
        yaml, {"fleet.pricing.committed_replicas=4", "fleet.pricing.committed_discount=" + std::to_string(discount)}));
    const Json& L = r.report["ledger"];
    const double break_even = num(L["pools"]["default"]["committed_break_even_utilization"]);
    const double used = 2.0 / 4.0;
    const double committed = num(L["effective_usd"]);
    CAPTURE(discount);
    CHECK(break_even == doctest::Approx(1 - discount));
    CHECK(num(L["buckets"]["committed_unused"]["device_hours"]) == doctest::Approx(2 * 1200 / 3600.0));
    CHECK((committed < on_demand) == (used > break_even));
  }
}

TEST_CASE("tensor-parallel replicas bill every device on the on-demand line") {
  const auto r = test::run(test::scenario(
      "name: tp\nseed: 1\nduration_s: 400\nwarmup_s: 40\nmodel: llama-3.1-70b\ndevice: h100-sxm-80gb\n"
      "engine: {tensor_parallel: 2}\nfleet: {replicas: 2, usd_per_hour: 3, pricing: {committed_replicas: 1}}\n"
      "workload: {arrival: {process: poisson, rate_per_s: 1}, prompt_tokens: {dist: fixed, value: 200}, "
      "output_tokens: {dist: fixed, value: 50}}\n"));
  const Json& L = r.report["ledger"];
  check_block(L, "tp2");
  double h = 0;
  for (const auto& l : L["pricing"]) h += num(l["device_hours"]);
  CHECK(h == doctest::Approx(2 * 2 * 360 / 3600.0));
  CHECK(num(L["pricing"][1]["device_hours"]) ==
        doctest::Approx(1 * 2 * 360 / 3600.0));  // the replica beyond the commitment
}

TEST_CASE("work thrown away by preemption is its own bucket, carved out of busy time") {
  const auto r = test::run(shipped("oom-restart-loop"));
  const Json& L = r.report["ledger"];
  check_block(L, "oom-restart-loop");
  double lost = 0;
  for (int c = 0; c < r.tally->n_classes; ++c) lost += r.tally->classes[c].lost_tokens;
  MESSAGE("lost tokens " << lost << ", lost work " << num(L["buckets"]["lost_work"]["device_hours"]) << " device-h");
  CHECK(lost > 0);
  CHECK(num(L["buckets"]["lost_work"]["device_hours"]) > 0);
}

TEST_CASE("an unused commitment costs the committed rate, in the ledger as on FOCUS's Unused row") {
  // three committed replicas at 40% off, autoscaled from 1 to 6: hours of the commitment unused
  // early on, on-demand hours above it at the peak
  const Scenario s = test::scenario(
      "name: commit-burst\nseed: 4\nduration_s: 3600\nwarmup_s: 300\ndevice: h100-sxm-80gb\nmodel: llama-3.1-8b\n"
      "pools:\n  chat:\n    fleet:\n      replicas: 1\n      usd_per_hour: 3.0\n"
      "      autoscale: {min_replicas: 1, max_replicas: 6, signal: inflight, target: 8, interval_s: 15,"
      " scale_down_window_s: 60, cooldown_s: 60}\n"
      "      pricing: {committed_replicas: 3, committed_discount: 0.4}\n"
      "classes:\n"
      "  a: {pool: chat, team: ta, arrival: {process: diurnal, rate_per_s: 12, peak_to_mean: 2, period_s: 3600},"
      " prompt_tokens: 1000, output_tokens: 150}\n"
      "  b: {pool: chat, team: tb, arrival: {process: poisson, rate_per_s: 2}, prompt_tokens: 3000,"
      " output_tokens: 100}\n");
  const test::Result r = test::run(s);
  const Ledger L = make_ledger(s, *r.tally);
  const PoolLedger& chat = L.pools[0];
  REQUIRE(chat.cost.lines.size() == 2);  // committed and on-demand
  const double unused_h = chat.cost.hours[size_t(Bucket::committed_unused)];
  REQUIRE(unused_h > 0);
  REQUIRE(chat.cost.lines[1].device_hours > 0);
  CHECK(chat.cost.usd[size_t(Bucket::committed_unused)] == doctest::Approx(unused_h * 3.0 * 0.6));
  check_block(r.report["ledger"]["pools"]["chat"], "chat");
  // FOCUS: the Unused row's dollars are the bucket's; each class's rows are its ledger dollars less
  // its share of that bucket
  std::istringstream in(focus_csv(L, s, 0.0));
  CsvReader f(in, "<focus>");
  double unused_usd = 0;
  std::map<std::string, double> by_class;
  while (f.next()) {
    if (f.get("commitmentdiscountstatus") == "Unused") unused_usd += f.number("effectivecost");
    const std::string tags = f.get("tags");
    for (const auto& c : L.classes)
      if (tags.find("\"fleetsim-class\":\"" + c.name + "\"") != std::string::npos)
        by_class[c.name] += f.number("effectivecost");
  }
  CHECK(unused_usd == doctest::Approx(chat.cost.usd[size_t(Bucket::committed_unused)]));
  for (const auto& c : L.classes) {
    CAPTURE(c.name);
    const double share = c.parts.at(0).share;
    CHECK(by_class[c.name] == doctest::Approx(c.usd() - share * unused_usd));
  }
  // the ledger CSV: the pool's other buckets, empty ones too, at the one rate they share
  std::istringstream csv(ledger_csv(L));
  CsvReader g(csv, "<ledger>");
  std::set<double> rates;
  while (g.next())
    if (g.get("scope") == "pool" && g.get("kind") == "bucket" && g.get("item") != "committed_unused")
      rates.insert(std::round(g.number("usd_per_device_hour") * 1e6));
  CHECK(rates.size() == 1);
}

TEST_CASE("a shared device in use is paid whole: one replica of a device time-sliced four ways pays for the device") {
  // a fixed pool of R replicas, k to a device: ceil(R / k) devices for the window, on the
  // on-demand line, the places no replica holds in the stranded bucket
  const std::string y =
      "name: ts\nseed: 3\nduration_s: 1200\nwarmup_s: 0\ndevice: h100-sxm-80gb\nmodel: llama-3.2-1b\n"
      "engine: {gpu_memory_utilization: 0.2}\nfleet: {usd_per_hour: 3.0}\n"
      "workload: {arrival: {process: poisson, rate_per_s: 1}, prompt_tokens: 200, output_tokens: 20}\n";
  for (const auto& [k, replicas] : std::vector<std::pair<int, int>>{{4, 1}, {4, 4}, {4, 5}, {2, 3}, {1, 3}}) {
    CAPTURE(k);
    CAPTURE(replicas);
    const auto r = test::run(
        test::scenario(y, {"time_slicing=" + std::to_string(k), "fleet.replicas=" + std::to_string(replicas)}));
    const Json& L = r.report["ledger"];
    check_block(L, "ts");
    const double devices = double((replicas + k - 1) / k);
    CHECK(num(L["billed_device_hours"]) == doctest::Approx(devices * 1200 / 3600.0));
    CHECK(num(L["effective_usd"]) == doctest::Approx(devices * 3.0 * 1200 / 3600.0));
    CHECK(num(L["buckets"]["stranded"]["device_hours"]) ==
          doctest::Approx((devices - double(replicas) / k) * 1200 / 3600.0));
  }
}

TEST_CASE("a commitment on a shared device: its places are paid once, used or not, only places beyond it on demand") {
  // one H100 time-sliced four ways, its four places committed at half price: one replica or four
  // pay for that device alone, at the committed rate; a fifth needs a second device, on demand
  const std::string y =
      "name: ts\nseed: 3\nduration_s: 1200\nwarmup_s: 0\ndevice: h100-sxm-80gb\nmodel: llama-3.2-1b\n"
      "time_slicing: 4\nengine: {gpu_memory_utilization: 0.2}\n"
      "fleet: {usd_per_hour: 3.0, pricing: {committed_replicas: 4, committed_discount: 0.5}}\n"
      "workload: {arrival: {process: poisson, rate_per_s: 1}, prompt_tokens: 200, output_tokens: 20}\n";
  const double h = 1200 / 3600.0;
  for (int replicas : {1, 4, 5}) {
    CAPTURE(replicas);
    const auto r = test::run(test::scenario(y, {"fleet.replicas=" + std::to_string(replicas)}));
    const Json& L = r.report["ledger"];
    check_block(L, "ts");
    const double on_demand_devices = replicas > 4 ? 1.0 : 0.0;
    CHECK(num(L["billed_device_hours"]) == doctest::Approx((1.0 + on_demand_devices) * h));
    CHECK(num(L["effective_usd"]) == doctest::Approx((1.5 + 3.0 * on_demand_devices) * h));
    CHECK(num(L["buckets"]["committed_unused"]["device_hours"]) ==
          doctest::Approx(std::max(0, 4 - replicas) / 4.0 * h));
  }
}
