// `fleetsim check`: budgets judged on 95% bounds over replications, worst windows, headroom.
#include <doctest/doctest.h>

#include <fmt/format.h>

#include <fstream>
#include <iterator>

#include "helpers.hpp"
#include "libsim/check/budget.hpp"
#include "libsim/sweep/sweep.hpp"

using namespace fleetsim;

namespace {

const std::string kExample = std::string(FLEETSIM_SOURCE_DIR) + "/examples/ci/chat-fleet.yaml";

const BudgetOutcome& outcome(const CheckResult& r, const std::string& name) {
  for (const auto& o : r.outcomes)
    if (o.budget.name == name) return o;
  FAIL("no budget " << name);
  return r.outcomes.front();
}

}  // namespace

TEST_CASE("measurement windows partition the run: the trajectory does not depend on them") {
  const Scenario s = load_scenario_file(kExample);
  SimParams p = s.params();
  HostWorkspace ws;
  const auto whole = simulate_once(p, 1, ws);
  int64_t arrived = 0, completed = 0;
  double busy = 0, replica = 0;
  for (double from = s.warmup_s; from < s.duration_s; from += 1200) {
    p.measure_from_s = from;
    p.measure_to_s = std::min(from + 1200, s.duration_s);
    const auto t = simulate_once(p, 1, ws);
    CHECK(t->window_s == doctest::Approx(p.measure_to_s - p.measure_from_s));
    CHECK(t->events == whole->events);
    for (int c = 0; c < t->n_classes; ++c) {
      arrived += t->classes[c].arrived;
      completed += t->classes[c].completed;
    }
    busy += t->pools[0].busy_s;
    replica += t->pools[0].replica_s;
  }
  CHECK(arrived == whole->classes[0].arrived + whole->classes[1].arrived);
  CHECK(completed == whole->classes[0].completed + whole->classes[1].completed);
  CHECK(busy == doctest::Approx(whole->pools[0].busy_s).epsilon(1e-9));
  CHECK(replica == doctest::Approx(whole->pools[0].replica_s).epsilon(1e-9));
}

TEST_CASE("a launch spike: p99 TTFT holds over the whole run, the worst window catches the miss") {
  const Scenario s = load_scenario_file(kExample);
  const BudgetSpec spec = parse_budgets(kExample, {});
  const CheckResult r = check_budgets(s, spec, nullptr, 2, false);
  const BudgetOutcome& whole = outcome(r, "p99-ttft");
  const BudgetOutcome& peak = outcome(r, "peak-p99-ttft");
  MESSAGE("whole run: p99 TTFT " << whole.mean << " +- " << whole.half_width << "; worst 600 s window: " << peak.mean
                                 << " +- " << peak.half_width << " from t = " << peak.window_start_s);
  CHECK(whole.pass);
  CHECK_FALSE(peak.pass);
  CHECK(peak.windows == 12);  // 6,900 s: eleven of 600 s, and the 300 s left in one that ends with the span
  CHECK(peak.window_start_s == doctest::Approx(3900));  // the window the spike falls in
  CHECK(peak.bound > whole.bound);
  CHECK_FALSE(r.pass);
  // the bound is the mean plus the half-width of a t interval over the replications
  CHECK(whole.half_width > 0);
  CHECK(whole.bound == doctest::Approx(whole.mean + whole.half_width));
  // JUnit: one failure, named
  const std::string junit = check_junit(r, s, spec);
  CHECK(junit.find("failures=\"1\"") != std::string::npos);
  CHECK(junit.find("name=\"peak-p99-ttft\"") != std::string::npos);
  // a scenario name is the user's: markup and control characters do not reach the XML as such
  Scenario odd = s;
  odd.name = "a<b>&'\"\x1b";
  CHECK(check_junit(r, odd, spec).find("name=\"a&lt;b&gt;&amp;&#39;&quot;\\e\"") != std::string::npos);
  const std::string ann = check_annotations(r);
  CHECK(ann.rfind("::error file=", 0) == 0);
  CHECK(ann.find(fmt::format("line={}", peak.budget.where.line)) != std::string::npos);
  CHECK(peak.budget.where.line == 31);  // the budget's line in the example
}

TEST_CASE("a spike in the span's remainder, shorter than a window, is judged in a window that ends with the span") {
  // 6,900 s in windows of 1,300 s: five of them end at 6,800 s; the launch comes at 6,850 s
  const Scenario s =
      load_scenario_file(kExample, {"classes.launch.arrival.start_s=6850", "classes.launch.arrival.stop_s=7200"});
  const BudgetSpec spec = parse_budgets(kExample, {"budgets.peak-p99-ttft.window_s=1300", "budgets.replications=2"});
  const CheckResult r = check_budgets(s, spec, nullptr, 2, false);
  const BudgetOutcome& peak = outcome(r, "peak-p99-ttft");
  CHECK(peak.windows == 6);
  CHECK(peak.window_start_s == doctest::Approx(5900));
  CHECK_FALSE(peak.pass);
}

TEST_CASE("a budget's windows are measured as whole runs measured over each window would be") {
  // check measures each window on a copy of one run (windows.hpp); the worst window's values must
  // be those of whole runs, one per window and replication, bit for bit
  const Scenario s = load_scenario_file(kExample);
  const BudgetSpec spec = parse_budgets(kExample, {});
  const CheckResult r = check_budgets(s, spec, nullptr, 2, false);
  const BudgetOutcome& peak = outcome(r, "peak-p99-ttft");
  REQUIRE(peak.window_start_s >= 0);
  const double len = peak.budget.window_s;
  SimParams p = s.params();
  p.measure_from_s = peak.window_start_s;
  p.measure_to_s = peak.window_start_s + len;
  HostWorkspace ws;
  std::vector<double> xs;
  for (int r = 0; r < spec.replications; ++r) {
    const auto t = simulate_once(p, uint32_t(r), ws);
    xs.push_back(run_report(s, *t)["latency_s"]["ttft"]["p99"].get<double>());
  }
  const MeanCI m = mean_ci(xs);
  CHECK(peak.mean == m.mean);
  CHECK(peak.half_width == m.half_width);
}

TEST_CASE("a min budget needs its lower bound above the limit, a loose max budget passes with headroom") {
  const std::string yaml =
      "name: h\nseed: 2\nduration_s: 900\nwarmup_s: 100\nmodel: llama-3.1-8b\ndevice: h100-sxm-80gb\n"
      "fleet: {replicas: 1}\n"
      "workload: {arrival: {process: poisson, rate_per_s: 3}, prompt_tokens: {dist: fixed, value: 3000}, "
      "output_tokens: {dist: fixed, value: 200}}\n";
  const Scenario s = test::scenario(yaml);
  const std::string path = test::write_temp("budgets.yaml",
                                            "budgets:\n  replications: 3\n  ttft: {metric: p99_ttft_s, max: 0.5}\n  "
                                            "busy: {metric: busy_fraction, min: 0.01}\n");
  const BudgetSpec spec = parse_budgets(path, {});
  const CheckResult r = check_budgets(s, spec, nullptr, 2, true);
  CHECK(r.pass);
  CHECK(outcome(r, "busy").bound == doctest::Approx(outcome(r, "busy").mean - outcome(r, "busy").half_width));
  // the headroom multiplier is where the p99 budget breaks: holds at it, fails a little above
  REQUIRE(r.headroom > 1.0);
  MESSAGE("headroom " << r.headroom << "x");
  auto at = [&](double m) {
    Scenario x = s;
    x.classes[0].rate_per_s *= m;
    return check_budgets(x, spec, nullptr, 2, false).pass;
  };
  CHECK(at(r.headroom));
  CHECK_FALSE(at(r.headroom * 1.1));
  // --set overrides a threshold
  CHECK_FALSE(check_budgets(s, parse_budgets(path, {"budgets.ttft.max=0.001"}), nullptr, 2, false).pass);
  // one replication has no interval: the JSON's half-width is null, the outputs say so
  const BudgetSpec one = parse_budgets(path, {"budgets.replications=1"});
  const CheckResult r1 = check_budgets(s, one, nullptr, 2, false);
  const Json j = check_json(r1, s, one);
  CHECK(j["budgets"][0]["ci95_half_width"].is_null());
  CHECK(j["budgets"][0]["bound_95"].get<double>() == j["budgets"][0]["mean"].get<double>());
  CHECK(check_table(r1, s, one).find("one replication, no interval: value") != std::string::npos);
  CHECK(check_markdown(r1, s, one).find("1 replication per budget, so no interval") != std::string::npos);
  CHECK(check_json(r, s, spec)["budgets"][0]["ci95_half_width"].is_number());
}

TEST_CASE("budget errors are located and say what was expected") {
  const Scenario s = load_scenario_file(kExample);
  auto error = [&](const std::string& text) {
    const std::string path = test::write_temp("bad_budgets.yaml", text);
    try {
      check_budgets(s, parse_budgets(path, {}), nullptr, 1, false);
    } catch (const InputError& e) {
      return e.one_line();
    }
    return std::string("(no error)");
  };
  CHECK(error("budgets:\n  x: {metric: latency_s.ttft.p99}\n").find("give exactly one of max") != std::string::npos);
  CHECK(error("budgets:\n  x: {metric: latency_s.ttft.p99, max: 1, min: 0}\n").find("exactly one") !=
        std::string::npos);
  CHECK(error("budgets:\n  x: {metric: latency.p99, max: 1}\n").find(":2:") != std::string::npos);
  CHECK(
      error("budgets:\n  x: {metric: latency.p99, max: 1}\n").find("'latency.p99' is not a number in the run report") !=
      std::string::npos);
  CHECK(error("budgets:\n  x: {metric: latency_s.ttft.p99, max: 1, class: nope}\n").find("no request class 'nope'") !=
        std::string::npos);
  CHECK(error("budgets:\n  x: {metric: latency_s.ttft.p99, max: 1, window_s: 99999}\n")
            .find("longer than the measured") != std::string::npos);
  CHECK(error("budgets:\n  x: {metric: latency_s.ttft.p99, maxx: 1}\n").find("unknown key 'maxx'") !=
        std::string::npos);
  CHECK(error("nothing: 1\n").find("no budgets section") != std::string::npos);
  // a limit below zero on a figure that never is can never be met (a minimum there is met always)
  CHECK(error("budgets:\n  x: {metric: requests.rejection_fraction, max: -0.001}\n")
            .find(":2:49: error: budgets.x.max: requests.rejection_fraction is never negative, so at most -0.001 "
                  "can never be met") != std::string::npos);
  CHECK(error("budgets:\n  x: {metric: latency_s.ttft.p99, min: -1}\n") == "(no error)");
  // the ledger's dollars and a team's too, by any name
  for (const char* m : {"monthly_spend_usd", "ledger.effective_usd", "ledger.buckets.idle_waste.usd",
                        "teams.product.usd", "ledger.pools.default.effective_usd", "ledger.classes.default.usd"})
    CHECK(error(std::string("budgets:\n  x: {metric: ") + m + ", max: -1}\n").find("is never negative") !=
          std::string::npos);
  // an empty class names no class: not the whole scenario by default
  CHECK(error("budgets:\n  x: {metric: latency_s.ttft.p99, max: 1, class: \"\"}\n")
            .find(":2:50: error: budgets.x.class: expected a name, got an empty string") != std::string::npos);
  // a --set that changed the budget is where its error is: not the file's line, which still holds
  // what the --set replaced
  const std::string path =
      test::write_temp("set_budgets.yaml", "budgets:\n  x: {metric: latency_s.ttft.p99, max: 1}\n");
  for (const auto& [set, says] : {std::pair<std::string, std::string>{"budgets.x.metric=nope", "is not a number"},
                                  {"budgets.x.class=nope", "no request class"},
                                  {"budgets.x.window_s=99999", "longer than the measured"}}) {
    CAPTURE(set);
    std::string e;
    try {
      validate_budgets(s, parse_budgets(path, {set}));
    } catch (const InputError& x) {
      e = x.one_line();
    }
    CHECK(e.rfind("--set " + set + ": error: ", 0) == 0);
    CHECK(e.find(says) != std::string::npos);
  }
}

TEST_CASE("a budgets file holds only budgets, a class name holds no dot, limits print as written") {
  const Scenario s = load_scenario_file(kExample);
  const std::string typo =
      test::write_temp("typo_budgets.yaml",
                       "budgets:\n  x: {metric: p99_ttft_s, max: 1}\nbudgts:\n  y: {metric: p99_ttft_s, max: 0.001}\n");
  CHECK(test::input_error([&] {
          parse_budgets(typo, {}, true, true);
        }).find(":3:1: error: budgts: unknown key 'budgts'") != std::string::npos);
  // the same text as a scenario's section: the scenario's other keys are the scenario's
  CHECK(parse_budgets_text("name: x\nbudgets:\n  a: {metric: p99_ttft_s, max: 1}\n", "s.yaml", {}).budgets.size() == 1);

  // a class whose name holds a dot cannot be addressed by a path (classes.NAME.latency_s...): an
  // error where it is named
  std::ifstream in(kExample);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t at = text.find("  launch:\n");
  REQUIRE(at != std::string::npos);
  text.replace(at, 10, "  launch.v2:\n");
  CHECK(test::error_of(text).find(":23:3: error: classes: a class name cannot hold '.' ('launch.v2')") !=
        std::string::npos);

  // a limit of 4319.99 is shown as written, and a bound beside it with the digits that differ
  BudgetOutcome o;
  o.budget.metric = "monthly_spend_usd";
  o.budget.limit = 4319.99;
  o.mean = o.bound = 4320.0001;
  CheckResult one;
  one.outcomes = {o};
  Scenario tiny = s;
  const std::string table = check_table(one, tiny, BudgetSpec{});
  CHECK(table.find("<= 4319.99") != std::string::npos);
  CHECK(table.find("95% bound 4320 > 4319.99") != std::string::npos);
  // a baseline of 0 is no base for a percentage
  one.outcomes[0].has_baseline = true;
  one.outcomes[0].baseline = 0;
  CHECK(check_table(one, tiny, BudgetSpec{}).find("0 -> 4320") != std::string::npos);
  CHECK(check_table(one, tiny, BudgetSpec{}).find("+0.0%") == std::string::npos);
}

TEST_CASE("headroom of closed-loop users is the load their rounded number bore") {
  const std::string yaml =
      "name: c\nseed: 3\nduration_s: 300\nwarmup_s: 0\nmodel: llama-3.1-8b\ndevice: h100-sxm-80gb\n"
      "engine: {perf_profile: none}\nfleet: {replicas: 1}\n"
      "workload: {arrival: {process: concurrency, clients: 3}, prompt_tokens: {dist: fixed, value: 500}, "
      "output_tokens: {dist: fixed, value: 100}}\n";
  const Scenario s = test::scenario(yaml);
  const BudgetSpec spec = parse_budgets_text(
      "budgets:\n  replications: 2\n  n: {metric: requests.mean_in_system, max: 4.2}\n", "b.yaml", {});
  const CheckResult r = check_budgets(s, spec, nullptr, 2, true);
  REQUIRE(r.pass);
  MESSAGE("headroom " << r.headroom << "x");
  // 4 users hold (mean in system about 4), 5 do not: the headroom is 4/3
  CHECK(r.headroom == doctest::Approx(4.0 / 3.0));
}
