// Stopping a run once its SLO miss is certain (sweep/settle.hpp): the rule's allowances by hand,
// a burst turned away stopped at its moment, and on a trace every stopped run misses, in
// the run to its end, the term it names, with the other rows and the cheapest as without stopping.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "helpers.hpp"
#include "libsim/sweep/settle.hpp"
#include "libsim/sweep/streams.hpp"
#include "libsim/sweep/sweep.hpp"

using namespace fleetsim;

namespace {

Json sweep(const std::string& yaml, bool share = true, uint32_t shard = 0, uint32_t shards = 1) {
  return test::sweep_shard(yaml, shard, shards, 2, share);
}

// 100 requests at once, 30 s in, on one replica of 4 sequences whose queue holds `queue_limit`.
std::string burst(const std::string& sweep_section) {
  return "name: settle-burst\nduration_s: 600\nwarmup_s: 0\nseed: 2\ndevice: h100-sxm-80gb\n"
         "model: llama-3.1-8b\nengine: {perf_profile: none, max_num_seqs: 4}\n"
         "fleet: {replicas: 1, queue_limit: 10}\n"
         "workload:\n  arrival: {process: burst, requests: 100, start_s: 30}\n"
         "  prompt_tokens: {dist: fixed, value: 500}\n  output_tokens: {dist: fixed, value: 100}\n" +
         sweep_section;
}

SloTerm max_term(const std::string& metric, double limit) { return SloTerm{metric, limit, true}; }

const std::string kTrace = "  arrival: {process: trace, path: scenarios/traces/azure-llm-2023-conv.csv}\n";
const std::string kPoisson =
    "  arrival: {process: poisson, rate_per_s: 5}\n  prompt_tokens: {dist: lognormal, median: 1000, p99: 6000}\n"
    "  output_tokens: {dist: lognormal, median: 200, p99: 800}\n";

// Fifteen minutes of the Azure conversation trace (or of `arrivals`) on fleets from hopeless to ample.
std::string azure(int replications, const std::string& extra = "", const std::string& arrivals = kTrace) {
  return "name: settle-azure\nseed: 1\nduration_s: 900\nwarmup_s: 60\ndevice: h100-sxm-80gb\n"
         "model: llama-3.1-8b\nfleet: {replicas: 1, queue_limit: 4096}\n"
         "workload:\n" +
         arrivals +
         "sweep:\n  parameters:\n    device: [h100-sxm-80gb, l4-24gb]\n    fleet.replicas: [1, 2, 4]\n"
         "    engine.max_num_seqs: [16, 256]\n  replications: " +
         std::to_string(replications) +
         "\n  slo:\n    latency_s.ttft.p99: 1.0\n    latency_s.e2e.p90: 30\n"
         "    requests.rejection_fraction: 0.001\n    latency_s.tpot.max: 0.5\n" +
         extra;
}

}  // namespace

TEST_CASE("the rule's allowances, by hand") {
  const Scenario s = test::scenario(burst(""));
  const SimParams p = s.params();
  SweepSpec spec;
  spec.replications = 1;
  spec.slo = {max_term("requests.rejection_fraction", 0.3), max_term("latency_s.ttft.p99", 1.0),
              max_term("latency_s.e2e.p50", 2.0),           max_term("latency_s.queue_wait.max", 4.0),
              max_term("cost.per_request_usd", 0.01),       SloTerm{"throughput.requests_per_s", 1.0, false}};
  std::vector<size_t> slo_of;
  SettleRule rule = settle_rule(spec, p, &slo_of);
  REQUIRE(rule.n == 4);  // neither the cost nor a lower bound has a rule
  CHECK(settle_may_apply(spec));
  {  // nor does the rule apply where only they are left, or where it is off
    SweepSpec none = spec;
    none.slo = {spec.slo[4], spec.slo[5], max_term("latency_s.ttft.p42", 1.0)};
    CHECK_FALSE(settle_may_apply(none));
    CHECK(settle_rule(none, p).n == 0);
    none.slo = spec.slo;
    none.stop_certain_misses = false;
    CHECK_FALSE(settle_may_apply(none));
    CHECK(settle_rule(none, p).n == 0);
  }
  CHECK(slo_of == std::vector<size_t>{0, 1, 2, 3});
  // 30% of at most 100 requests: the 31st rejection settles it
  CHECK(rule.terms[0].kind == SettleKind::rejections);
  CHECK(rule.terms[0].allowed == 30);
  // p99 of n <= 100 values is the ceil(0.99 n)-th smallest: two at 1 + 1/64 s (the first bucket
  // whose every value is above 1 s) or more put it above the limit
  CHECK(rule.terms[1].kind == SettleKind::ttft);
  CHECK(rule.terms[1].allowed == 1);
  CHECK(rule.terms[1].at_least == 1.015625);
  // the median: 51 at 2 + 2/64 s or more
  CHECK(rule.terms[2].kind == SettleKind::e2e);
  CHECK(rule.terms[2].allowed == 50);
  CHECK(rule.terms[2].at_least == 2.03125);
  // the maximum: one value above the limit
  CHECK(rule.terms[3].kind == SettleKind::queue_wait);
  CHECK(rule.terms[3].allowed == 0);
  CHECK(rule.terms[3].at_least > 4.0);
  CHECK(rule.terms[3].at_least < 4.0 + 1e-6);

  // two replications judged on their mean: one replication's figure must be above twice the limit
  spec.replications = 2;
  spec.feasible_on_bound = false;
  rule = settle_rule(spec, p);
  CHECK(rule.terms[0].allowed == 60);
  CHECK(rule.terms[1].at_least == 2.03125);
  // judged on the 95% bound, one above the limit is enough: mean + 12.7 |x - y| / 2 >= x
  spec.feasible_on_bound = true;
  rule = settle_rule(spec, p);
  CHECK(rule.terms[0].allowed == 30);
  CHECK(rule.terms[1].at_least == 1.015625);
  // eight: above 8 / (1 + t_7) = 2.3777 times the limit (the bucket [2.375, 2.40625) holds it)
  spec.replications = 8;
  CHECK(settle_factor(spec) == doctest::Approx(8.0 / (1.0 + 2.3646)).epsilon(1e-4));
  CHECK(settle_rule(spec, p).terms[1].at_least == 2.40625);
  // a limit no run can pass has no rule: 60% of two replications' mean is more than every request
  spec.replications = 2;
  spec.feasible_on_bound = false;
  spec.slo = {max_term("requests.rejection_fraction", 0.6)};
  CHECK(settle_rule(spec, p).n == 0);
  spec.feasible_on_bound = true;

  spec.replications = 1;
  spec.slo = {max_term("latency_s.ttft.p99", 1.0)};
  spec.stop_certain_misses = false;
  CHECK(settle_rule(spec, p).n == 0);
  spec.stop_certain_misses = true;
  // drawn arrivals are counted before the run: the most any replication has in the window, as
  // its common request stream holds them (the core's own draws, sweep/streams.hpp)
  const Scenario poisson = test::scenario(
      burst(""), {"workload.arrival={process: poisson, rate_per_s: 5}", "warmup_s=100", "duration_s=400"});
  for (uint32_t reps : {1u, 3u}) {
    CAPTURE(reps);
    RequestStreams streams;
    int64_t most = 0;
    for (uint32_t r = 0; r < reps; ++r) {
      const SimParams pr = streams.with_streams(poisson.params(), r);
      const ArrivalParams& a = pr.classes[0].arrivals;
      REQUIRE(a.kind == ArrivalKind::trace);
      int64_t n = 0;
      for (int64_t i = 0; i < a.trace_n; ++i)
        n += a.trace_t_s[i] + a.start_s >= 100.0 && a.trace_t_s[i] + a.start_s < 400.0;
      most = std::max(most, n);
    }
    CHECK(most > 1300);  // 5 per second for 300 s
    CHECK(most < 1700);
    CHECK(settle_request_bound(poisson.params(), reps) == most);
    spec.replications = reps;
    spec.slo = {max_term("requests.rejection_fraction", 0.01)};
    rule = settle_rule(spec, poisson.params());
    REQUIRE(rule.n == 1);
    CHECK(rule.terms[0].allowed == int64_t(std::floor(0.01 * settle_factor(spec) * double(most) * (1.0 + 1e-9))));
  }
  // closed-loop users send again as answers come: nothing bounds them before the run
  const Scenario closed = test::scenario(burst(""), {"workload.arrival={process: concurrency, clients: 4}"});
  CHECK(settle_request_bound(closed.params(), 1) == 0);
  CHECK(settle_rule(spec, closed.params()).n == 0);
}

TEST_CASE("one replication above the factor times the limit misses the row's bound, whatever the others") {
  // the row's verdict (mean + half-width of the 95% interval, row.cpp) over n <= R replications,
  // one of them just above F L and the others anywhere in [0, 3 F L], the extremes among them
  std::mt19937_64 g(7);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  for (bool on_bound : {true, false})
    for (uint32_t reps = 1; reps <= 20; ++reps) {
      SweepSpec spec;
      spec.replications = reps;
      spec.feasible_on_bound = on_bound;
      const double limit = 0.7;
      const double x = settle_factor(spec) * limit * (1.0 + 1e-12);
      for (uint32_t n = 1; n <= reps; ++n)
        for (int k = 0; k < 200; ++k) {
          std::vector<double> xs{x};
          for (uint32_t i = 1; i < n; ++i)
            xs.push_back(k == 0 ? 0.0 : k == 1 ? x : k == 2 ? x * u(g) : 3.0 * x * u(g) * u(g));
          const MeanCI m = mean_ci(xs);
          const double judged = on_bound ? m.mean + m.half_width : m.mean;
          CAPTURE(reps);
          CAPTURE(n);
          CAPTURE(k);
          REQUIRE(judged > limit);
        }
    }
}

TEST_CASE("a burst the queue turns away stops at its moment") {
  // of 100 sent at t = 30 s the first starts a step at once and 10 wait for its end: 89 are
  // turned away at once, and the 51st of them settles a 50% limit there
  const std::string section =
      "sweep:\n  parameters:\n    fleet.queue_limit: [10, 200]\n  slo:\n    requests.rejection_fraction: 0.5\n";
  const Json on = sweep(burst(section));
  const Json off = sweep(burst(section + "  stop_certain_misses: false\n"));
  const Json& stopped = on["rows"][0];
  CHECK(stopped["feasible"] == false);
  CHECK(stopped["reason"] == "misses the SLO");
  CHECK(stopped["metrics"].is_null());
  CHECK(stopped["stopped_at_s"] == 30.0);
  REQUIRE(stopped["violations"].size() == 1);
  CHECK(stopped["violations"][0] ==
        "requests.rejection_fraction > 0.5 certainly: 51 of at most 100 requests in the window rejected (the run "
        "stopped at 30 s)");
  // to its end, the run turns away what the queue cannot hold
  const Json& full = off["rows"][0];
  CHECK(full["metrics"]["requests"]["rejected"] == 89.0);
  CHECK(full["feasible"] == false);
  CHECK(!full.contains("stopped_at_s"));
  // the queue that holds them all runs to its end, as without the rule
  CHECK(on["rows"][1] == off["rows"][1]);
  CHECK(on["rows"][1]["feasible"] == true);
  CHECK(on["summary"]["stopped_early"] == 1);
  CHECK(off["summary"]["stopped_early"] == 0);
  CHECK(on["summary"]["infeasible_slo"] == 1);
  CHECK(on["summary"]["infeasible_config"] == 0);
  CHECK(on["summary"]["replications_run"] == 2);
  CHECK(on["summary"]["cheapest"] == off["summary"]["cheapest"]);
  CHECK(on["sweep"]["stop_certain_misses"] == true);
  CHECK(on["sweep"]["fingerprint"] != off["sweep"]["fingerprint"]);
  CHECK(format_sweep_table(on).find("1 of the misses stopped once they were certain") != std::string::npos);
  // CSV: the moment in its own column, empty for the run that went to its end; a sweep that
  // stops no run has no such column
  const std::string csv = sweep_to_csv(on);
  const std::string head = csv.substr(0, csv.find('\n'));
  CHECK(head.find(",replications,stopped_at_s,") != std::string::npos);
  const std::string row0 = csv.substr(head.size() + 1, csv.find('\n', head.size() + 1) - head.size() - 1);
  CHECK(row0.find(",1,30.0,") != std::string::npos);
  const std::string row1 = csv.substr(csv.find('\n', head.size() + 1) + 1);
  CHECK(row1.find(",true,,,1,,") != std::string::npos);
  CHECK(sweep_to_csv(off).find("stopped_at_s") == std::string::npos);
}

TEST_CASE("on a trace or drawn arrivals, every stopped run misses the term it names in the run to its end") {
  for (int reps : {1, 2})
    for (const std::string& arrivals : {kTrace, kPoisson}) {
      CAPTURE(reps);
      CAPTURE(arrivals);
      const Json on = sweep(azure(reps, "", arrivals));
      const Json off = sweep(azure(reps, "  stop_certain_misses: false\n", arrivals));
      REQUIRE(on["rows"].size() == off["rows"].size());
      int stopped = 0;
      for (size_t i = 0; i < on["rows"].size(); ++i) {
        const Json& a = on["rows"][i];
        const Json& b = off["rows"][i];
        CAPTURE(i);
        if (!a.contains("stopped_at_s")) {
          CHECK(a == b);
          continue;
        }
        ++stopped;
        CHECK(b["feasible"] == false);
        CHECK(a["stopped_at_s"].get<double>() < 900.0);
        // the term it names is missed in the row of every replication run to its end: its 95% bound
        // is above the limit (with one replication, its figure)
        const std::string v = a["violations"][0].get<std::string>();
        const std::string metric = v.substr(0, v.find(' '));
        bool named = false;
        for (const auto& w : b["violations"]) named = named || w.get<std::string>().rfind(metric + " ", 0) == 0;
        CHECK(named);
      }
      CHECK(stopped >= 4);  // every L4 fleet but the largest, at least
      CHECK(on["summary"]["stopped_early"] == stopped);
      CHECK(on["summary"]["cheapest"] == off["summary"]["cheapest"]);
      CHECK(on["summary"]["feasible"] == off["summary"]["feasible"]);
      CHECK(on["summary"]["infeasible_slo"] == off["summary"]["infeasible_slo"]);
      // a stopped run serves the limits it would not have changed as a whole run does: the same rows
      CHECK(sweep(azure(reps, "", arrivals), false).dump() == on.dump());
    }
}

TEST_CASE("shards with stopped runs merge into the whole sweep") {
  const Json whole = sweep(azure(1));
  const Json a = sweep(azure(1), true, 0, 2);
  const Json b = sweep(azure(1), true, 1, 2);
  CHECK(merge_sweeps({{"a.json", a}, {"b.json", b}}).dump() == whole.dump());
  // a stopped row without its stop's time, or with figures, is not a row of this schema
  Json bad = a;
  for (Json& r : bad["rows"])
    if (r.contains("stopped_at_s")) {
      r["stopped_at_s"] = "soon";
      break;
    }
  CHECK_THROWS_AS(merge_sweeps({{"a.json", bad}, {"b.json", b}}), InputError);
}
