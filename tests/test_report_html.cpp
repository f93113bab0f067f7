// `fleetsim report`: the HTML page of a run or sweep document is self-contained (no network, no
// script), escapes every string a user wrote, never prints null/nan/inf, draws each chart from the
// numbers (one ledger bar per pool plus the total, one frontier point per Pareto row), and degrades
// to what is there when blocks are missing or malformed.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include "cli/report_command.hpp"
#include "helpers.hpp"
#include "libsim/report/documents.hpp"
#include "libsim/report/html.hpp"
#include "libsim/report/report.hpp"
#include "libsim/report/svg.hpp"
#include "libsim/report/svg_internal.hpp"
#include "libsim/sweep/sweep.hpp"

using namespace fleetsim;
using test::count;

namespace {

Json load(const std::string& name) {
  std::ifstream f(std::string(FLEETSIM_SOURCE_DIR) + "/tests/data/" + name);
  std::stringstream ss;
  ss << f.rdbuf();
  return Json::parse(ss.str());
}

const Json& run_doc() {
  static const Json d = load("report_run.json");
  return d;
}
const Json& sweep_doc() {
  static const Json d = load("report_sweep.json");
  return d;
}

// <figure id="ID"> ... </figure>, or "" when absent
std::string figure_of(const std::string& html, const std::string& id) {
  const size_t a = html.find("<figure id=\"" + id + "\"");
  if (a == std::string::npos) return "";
  return html.substr(a, html.find("</figure>", a) - a);
}

// one chart panel: from its <g class="panel CLS"> to the next panel or the end of its chart
std::string panel_of(const std::string& html, const std::string& cls) {
  const size_t a = html.find("class=\"panel " + cls + "\"");
  if (a == std::string::npos) return "";
  const size_t b = std::min(html.find("class=\"panel ", a + 1), html.find("</svg>", a));
  return html.substr(a, b - a);
}

// null, nan, inf, infinity or undefined as a word anywhere in the page
bool has_non_number_word(const std::string& html) {
  static const std::regex re("\\b(null|nan|inf|infinity|undefined)\\b", std::regex::icase);
  return std::regex_search(html, re);
}

// self-contained: nothing fetched, nothing run
void check_self_contained(const std::string& html) {
  for (const char* bad : {"http://", "https://", "<script", "<link", " src=", "href=", "url(", "@import", "<iframe"})
    CHECK_MESSAGE(html.find(bad) == std::string::npos, bad);
  CHECK_FALSE(has_non_number_word(html));
  CHECK(html.rfind("<!DOCTYPE html>", 0) == 0);
  CHECK(html.find("</html>") != std::string::npos);
}

void check_figures(const std::string& html, const std::vector<std::string>& ids) {
  for (const auto& id : ids) {
    const std::string f = figure_of(html, id);
    CHECK_MESSAGE(!f.empty(), id);
    CHECK_MESSAGE(count(f, "<svg") == 1, id);
    CHECK_MESSAGE(f.find("<figcaption>") != std::string::npos, id);
  }
}

std::vector<std::string> frontier_points(const std::string& html) {
  const std::string key = "<polyline class=\"frontier\" points=\"";
  const size_t a = html.find(key);
  if (a == std::string::npos) return {};
  std::istringstream pts(html.substr(a + key.size(), html.find('"', a + key.size()) - a - key.size()));
  std::vector<std::string> r;
  for (std::string p; pts >> p;) r.push_back(p);
  return r;
}

}  // namespace

TEST_CASE("report: html_escape escapes the five characters HTML gives meaning to") {
  CHECK(html_escape("<script>alert(1)</script> & \"x\" 'y'") ==
        "&lt;script&gt;alert(1)&lt;/script&gt; &amp; &quot;x&quot; &#39;y&#39;");
  CHECK(html_escape("h100-sxm-80gb") == "h100-sxm-80gb");
  CHECK(html_escape("") == "");
}

TEST_CASE("report: numbers for people: sensible precision, never nan or inf") {
  CHECK(svg::num(28231) == "28,231");
  CHECK(svg::num(3.109375) == "3.11");
  CHECK(svg::num(0.000253267) == "0.000253");
  CHECK(svg::num(std::nan("")) == "\xe2\x80\x93");
  CHECK(svg::usd(9.9275) == "$9.93");
  CHECK(svg::usd(7797.6) == "$7,797.60");
  CHECK(svg::usd(0.5) == "$0.50");
  CHECK(svg::usd(0.0239375) == "$0.0239");
  CHECK(svg::usd(1234567.8) == "$1,234,568");
  CHECK(svg::usd(INFINITY) == "\xe2\x80\x93");
  // money in plain decimals however small
  CHECK(svg::usd(3.37e-7) == "$0.000000337");
  CHECK(svg::usd(-5.55e-8) == "-$0.0000000555");
  CHECK(svg::seconds(0.165) == "165 ms");
  CHECK(svg::seconds(7.21875) == "7.22 s");
  CHECK(svg::seconds(3300) == "55 min");
  CHECK(svg::seconds(86400) == "24 h");
  CHECK(svg::percent(0.00828) == "0.828%");
}

TEST_CASE("report: a run report has every chart, the ledger's bars per pool, and its numbers in words") {
  const Json& d = run_doc();
  const std::string html = html_report(d);
  check_self_contained(html);
  check_figures(html, {"cost-per-token", "ledger", "latency-cdf", "timeline"});
  CHECK(html.find("id=\"summary\"") != std::string::npos);
  CHECK(figure_of(html, "pareto").empty());  // a sweep's chart

  // one ledger bar per pool plus the total, in dollars and in device-hours
  const size_t pools = d["ledger"]["pools"].size();
  REQUIRE(pools == 2);
  CHECK(count(panel_of(html, "ledger-usd"), "<g class=\"bar\">") == pools + 1);
  CHECK(count(panel_of(html, "ledger-hours"), "<g class=\"bar\">") == pools + 1);
  // a segment per bucket with hours: busy prefill and decode, idle headroom and waste (interactive)
  CHECK(count(panel_of(html, "ledger-usd"), "<rect ") >= 4);
  // cost per token: the fleet, each pool, each class
  CHECK(count(panel_of(html, "cost-output"), "<g class=\"bar\">") == 1 + pools + d["classes"].size());
  CHECK(count(panel_of(html, "cost-input"), "<g class=\"bar\">") == 1 + pools + d["classes"].size());
  // latency: all requests and each class, with chat's goodput bounds drawn
  const std::string ttft = panel_of(html, "cdf-ttft");
  CHECK(count(ttft, "<polyline") == 3);
  CHECK(ttft.find("chat: bound 500 ms") != std::string::npos);
  CHECK(panel_of(html, "cdf-e2e").find("chat: bound 10 s") != std::string::npos);
  CHECK(panel_of(html, "cdf-tpot").find("class=\"ref\"") == std::string::npos);  // no TPOT bound
  // timeline: replicas, queue, and p99 TTFT with a gap where an interval had none
  CHECK(!panel_of(html, "timeline-replicas").empty());
  CHECK(!panel_of(html, "timeline-queue").empty());
  CHECK(count(panel_of(html, "timeline-ttft"), "<polyline") == 2);

  // the summary: spend, cost per 1M output tokens, p99 TTFT against its bound, idle share
  const size_t s0 = html.find("id=\"summary\""), s1 = html.find("</section>", s0);
  const std::string summary = html.substr(s0, s1 - s0);
  CHECK(summary.find(svg::usd(d["ledger"]["effective_usd"].get<double>())) != std::string::npos);
  CHECK(summary.find(svg::usd(d["ledger"]["list_usd"].get<double>()) + " at list prices") != std::string::npos);
  CHECK(summary.find(svg::usd(d["cost"]["per_million_output_tokens_usd"].get<double>()) + " per 1M output tokens") !=
        std::string::npos);
  CHECK(summary.find("165 ms for chat <span class=\"good\">within</span> its 500 ms goodput bound") !=
        std::string::npos);
  const double idle = d["ledger"]["idle_usd"].get<double>(), eff = d["ledger"]["effective_usd"].get<double>();
  CHECK(summary.find(svg::usd(idle) + " (" + svg::percent(idle / eff) + " of the spend)") != std::string::npos);
  CHECK(summary.find("30 days would cost " + svg::usd(d["ledger"]["projection_30d"]["effective_usd"].get<double>())) !=
        std::string::npos);
  // the ledger table's total is the sum of its buckets
  CHECK(html.find("<tr class=\"total\"><td>Total</td><td class=\"n\">4.58</td><td class=\"n\">$9.93</td>") !=
        std::string::npos);
}

TEST_CASE("report: the over-time chart draws cold start, and names its p99 as every class's") {
  Json d = run_doc();
  CHECK(figure_of(html_report(d), "timeline").find("cold start</text>") == std::string::npos);  // none in this run
  // the first interval half in cold start: a third area between idle and the replicas' line
  d["timeline"][0]["cold_start_fraction"] = 0.5;
  d["timeline"][0]["busy_fraction"] = 0.25;
  d["timeline"][0]["idle_fraction"] = 0.25;
  const std::string html = html_report(d);
  const std::string reps = panel_of(html, "timeline-replicas");
  CHECK(count(reps, "fill=\"#efb118\"") == 1);  // the cold-start area
  CHECK(html.find(">cold start</text>") != std::string::npos);
  CHECK(panel_of(html, "timeline-ttft").find("every class together") != std::string::npos);
  CHECK(figure_of(html, "timeline").find("split into busy, idle and cold start") != std::string::npos);
}

TEST_CASE("report: a sweep report has the frontier, the cheapest marked, and a comparison across devices") {
  const Json& d = sweep_doc();
  const std::string html = html_report(d);
  check_self_contained(html);
  check_figures(html, {"cost-per-token", "pareto", "latency-cdf"});
  CHECK(figure_of(html, "ledger").empty());
  CHECK(figure_of(html, "timeline").empty());

  // the frontier has one point per row of summary.pareto, the cheapest is ringed
  const size_t n = d["summary"]["pareto"].size();
  REQUIRE(n == 10);
  CHECK(frontier_points(html).size() == n);
  const std::string pareto = figure_of(html, "pareto");
  CHECK(count(pareto, "class=\"highlight\"") == 1);
  CHECK(pareto.find("cheapest: #1") != std::string::npos);
  CHECK(pareto.find("SLO: p99 TTFT \xe2\x89\xa4 1 s") != std::string::npos);
  // dots for the 8 feasible configurations, crosses for the 4 that miss the SLO
  size_t feasible = 0, ran = 0;
  for (const auto& r : d["rows"]) feasible += r["feasible"].get<bool>(), ran += r["metrics"].is_object();
  // drawn in this order: the frontier, the crosses, the dots
  const size_t crosses = pareto.find("<g class=\"infeasible\">"), dots = pareto.find("<g class=\"feasible\">");
  REQUIRE(crosses < dots);
  CHECK(count(pareto.substr(crosses, dots - crosses), "<g stroke=") == ran - feasible);
  CHECK(count(pareto.substr(dots, pareto.find("</g>", dots) - dots), "<circle") == feasible);

  // a bar per feasible configuration, cheapest first and marked
  const std::string bars = panel_of(html, "cost-output");
  CHECK(count(bars, "<g class=\"bar\">") == feasible);
  const std::string cost = figure_of(html, "cost-per-token");
  CHECK(count(cost, "rowlabel marked") == 1);
  CHECK(cost.find("rowlabel marked\">#1 \xc2\xb7 1 \xc3\x97 h100-sxm-80gb<") != std::string::npos);
  CHECK(cost.find("left out") == std::string::npos);

  // the summary compares the cheapest with the cheapest on another device
  CHECK(html.find("1 \xc3\x97 h100-sxm-80gb costs <strong>21% less per 1M output tokens (decode share)</strong> than 1 "
                  "\xc3\x97 "
                  "h200-141gb (#9, the cheapest on another device) and keeps p99 TTFT under 1 s") != std::string::npos);
  // latency of both, with the SLO's percentile targets
  CHECK(count(panel_of(html, "cdf-ttft"), "<polyline") == 2);
  CHECK(panel_of(html, "cdf-ttft").find("SLO p99 \xe2\x89\xa4 1 s") != std::string::npos);
  CHECK(panel_of(html, "cdf-e2e").find("SLO p99 \xe2\x89\xa4 15 s") != std::string::npos);
}

TEST_CASE(
    "report: a run stopped once its SLO miss was certain counts as a miss, not drawn, not as one that cannot run") {
  Json d = sweep_doc();
  Json& r = d["rows"][17];  // one of the four that miss the SLO
  REQUIRE(r["reason"] == "misses the SLO");
  r["metrics"] = nullptr;
  r["ci95"] = nullptr;
  r["violations"] =
      Json::array({"latency_s.ttft.p99 > 1 certainly: 3 of at most 200 requests in the window at "
                   "1.01562 s or more (the run stopped at 40 s)"});
  r["stopped_at_s"] = 40.0;
  const std::string html = html_report(d);
  CHECK(html.find("8 meet the SLO") != std::string::npos);
  CHECK(html.find("4 miss it and 12 cannot run") != std::string::npos);
  const std::string pareto = figure_of(html, "pareto");
  CHECK(pareto.find("12 configurations that cannot run are not drawn") != std::string::npos);
  CHECK(
      pareto.find("1 configuration whose run stopped once its SLO miss was certain has no figures and is not drawn") !=
      std::string::npos);
  const size_t crosses = pareto.find("<g class=\"infeasible\">"), dots = pareto.find("<g class=\"feasible\">");
  CHECK(count(pareto.substr(crosses, dots - crosses), "<g stroke=") == 3);
  CHECK(html.find("misses the SLO (certain before its run ended: stopped there)") != std::string::npos);
}

TEST_CASE("report: a sweep over tensor parallelism names a replica's devices, not one device per replica") {
  // the same document with engine.tensor_parallel swept: 4 for #3 (two H100 replicas), 1 elsewhere
  Json d = sweep_doc();
  d["sweep"]["parameters"].push_back({{"path", "engine.tensor_parallel"}, {"values", {1, 4}}});
  for (auto& r : d["rows"]) r["parameters"]["engine.tensor_parallel"] = r["index"].get<int>() == 3 ? 4 : 1;
  REQUIRE(d["rows"][3]["feasible"].get<bool>());
  const std::string cost = figure_of(html_report(d), "cost-per-token");
  CHECK(cost.find(">#1 \xc2\xb7 1 \xc3\x97 h100-sxm-80gb<") != std::string::npos);  // tp 1: as before
  CHECK(cost.find(">#3 \xc2\xb7 2 replicas of 4 \xc3\x97 h100-sxm-80gb<") != std::string::npos);
  CHECK(cost.find("tensor_parallel") == std::string::npos);  // said once, in the devices
}

TEST_CASE("report: a sweep with many feasible configurations shows the 60 cheapest and says how many are left out") {
  Json d = sweep_doc();
  Json rows = Json::array();
  int next = 0;
  for (int copy = 0; copy < 13; ++copy)
    for (auto r : sweep_doc()["rows"]) {
      if (!r["feasible"].get<bool>()) continue;
      r["index"] = next++;
      r["metrics"]["cost"]["per_million_output_tokens_usd"] = 0.2 + 0.01 * next;
      rows.push_back(r);
    }
  REQUIRE(rows.size() == 104);
  d["rows"] = rows;
  d["summary"]["cheapest"]["index"] = 0;
  d["summary"]["pareto"] = Json::array({0, 1});
  const std::string html = html_report(d);
  CHECK(count(panel_of(html, "cost-output"), "<g class=\"bar\">") == 60);
  CHECK(figure_of(html, "cost-per-token").find("Showing the 60 cheapest of 104; 44 more expensive") !=
        std::string::npos);
  CHECK(frontier_points(html).size() == 2);
  CHECK_FALSE(has_non_number_word(html));
}

TEST_CASE("report: every string a user wrote is escaped") {
  const std::string evil = "<script>alert(1)</script> & \"x\"";
  const std::string escaped = "&lt;script&gt;alert(1)&lt;/script&gt; &amp; &quot;x&quot;";
  Json r = run_doc();
  r["scenario"]["name"] = evil;
  r["scenario"]["source"] = evil + ".yaml";
  r["scenario"]["overrides"] = Json::array({evil});
  // a pool, a class and a team named so too
  r["pools"][evil] = r["pools"]["batch"];
  r["ledger"]["pools"][evil] = r["ledger"]["pools"]["batch"];
  r["classes"][evil] = r["classes"]["chat"];
  r["classes"][evil]["team"] = evil;
  r["teams"][evil] = r["teams"]["product"];
  Json s = sweep_doc();
  s["scenario"]["name"] = evil;
  s["rows"][1]["parameters"]["device"] = evil;
  s["sweep"]["parameters"][0]["values"][0] = evil;
  for (const Json* d : {&r, &s}) {
    const std::string html = html_report(*d);
    CHECK(html.find("<script") == std::string::npos);
    CHECK(html.find(evil) == std::string::npos);
    CHECK(html.find("\"x\"") == std::string::npos);
    CHECK(html.find(escaped) != std::string::npos);
    CHECK(html.find("<title>" + escaped + "</title>") != std::string::npos);
  }
}

TEST_CASE("report: a run report without the ledger, CDF and timeline blocks draws what is there") {
  Json d = run_doc();
  d.erase("ledger");
  d.erase("timeline");
  for (auto* lat : {&d["latency_s"], &d["classes"]["chat"]["latency_s"], &d["classes"]["summarize"]["latency_s"]})
    for (auto& [k, m] : lat->items()) m.erase("cdf");
  const std::string html = html_report(d);
  check_self_contained(html);
  check_figures(html, {"cost-per-token", "ledger", "latency-cdf"});
  CHECK(figure_of(html, "timeline").empty());
  CHECK(html.find("No timeline in this report.") != std::string::npos);
  // the ledger estimated from the utilization fractions: still a bar per pool and the total
  CHECK(figure_of(html, "ledger").find("estimated from the utilization fractions") != std::string::npos);
  CHECK(count(panel_of(html, "ledger-usd"), "<g class=\"bar\">") == 3);
  // CDFs through the percentiles
  CHECK(figure_of(html, "latency-cdf").find("drawn through the reported percentiles") != std::string::npos);
  CHECK(count(panel_of(html, "cdf-ttft"), "<polyline") == 3);
}

TEST_CASE("report: a report of a fresh simulation renders") {
  const Scenario sc = test::scenario(
      "name: fresh\nduration_s: 300\nwarmup_s: 30\nseed: 5\ndevice: h100-sxm-80gb\nmodel: llama-3.1-8b\n"
      "fleet: {replicas: 1}\n"
      "workload:\n  arrival: {process: poisson, rate_per_s: 3}\n"
      "  prompt_tokens: {dist: lognormal, median: 800, p99: 4000}\n"
      "  output_tokens: {dist: lognormal, median: 120, p99: 600}\n");
  const Json d = Json::parse(test::run(sc).report.dump());
  const std::string html = html_report(d);
  check_self_contained(html);
  check_figures(html, {"cost-per-token", "ledger", "latency-cdf"});
  CHECK(count(panel_of(html, "ledger-usd"), "<g class=\"bar\">") == d["ledger"]["pools"].size() + 1);
}

TEST_CASE("report: malformed or nearly empty documents never crash and never print null") {
  std::vector<Json> docs = {
      Json{{"kind", "run"}},
      Json{{"kind", "sweep"}},
      Json{{"kind", "sweep"}, {"rows", Json::array()}, {"summary", {{"cheapest", nullptr}, {"pareto", Json::array()}}}},
      Json{{"kind", "run"}, {"scenario", "x"}, {"latency_s", 5}, {"pools", Json::array({1, 2})}, {"timeline", "no"}},
      Json{{"kind", "run"},
           {"cost", {{"total_usd", nullptr}, {"per_million_output_tokens_usd", "7"}}},
           {"ledger", {{"buckets", {{"busy_decode", {{"usd", nullptr}, {"device_hours", "x"}}}}}, {"pools", 3}}},
           {"timeline", Json::array({{{"t0_s", 0}, {"t1_s", 60}, {"mean_replicas", nullptr}}, 7})}},
      Json{{"kind", "sweep"},
           {"sweep", {{"parameters", "x"}, {"slo", Json::array({{{"metric", 3}}})}}},
           {"rows", Json::array({Json{{"index", 0}, {"metrics", nullptr}, {"feasible", false}}, 5})},
           {"summary", {{"pareto", Json::array({0, "x", nullptr})}}}},
      Json{{"kind", "run"},
           {"ledger",
            {{"pools",
              {{"p", {{"ownership", {{"components", 5}, {"years", Json::array({1, nullptr})}, {"usd", "x"}}}}},
               {"q",
                {{"ownership",
                  {{"components", Json::array({Json{{"name", 2}}})},
                   {"newer_device",
                    {{"current", 3},
                     {"years", Json::array({Json{{"year", nullptr}}, "y"})},
                     {"newer_cheaper_from_year", "2"}}}}}}}}}}}},
  };
  Json all_infeasible = sweep_doc();
  for (auto& r : all_infeasible["rows"]) r["feasible"] = false;
  all_infeasible["summary"]["cheapest"] = nullptr;
  all_infeasible["summary"]["message"] = "no configuration meets the SLO; closest is #17";
  docs.push_back(all_infeasible);
  Json nan_run = run_doc();
  nan_run["cost"]["per_million_output_tokens_usd"] = std::nan("");
  nan_run["latency_s"]["ttft"]["p99"] = INFINITY;
  docs.push_back(nan_run);
  for (const auto& d : docs) {
    std::string html;
    CHECK_NOTHROW(html = html_report(d));
    CHECK_FALSE(has_non_number_word(html));
    CHECK(html.find("id=\"summary\"") != std::string::npos);
  }
  const std::string none = html_report(all_infeasible);
  CHECK(none.find("No configuration meets the SLO") != std::string::npos);
  // the sweep's message says it too: once is enough
  CHECK(none.find("no configuration meets the SLO") == std::string::npos);
  CHECK(none.find("Closest is #17.") != std::string::npos);
  CHECK(count(panel_of(none, "cost-output"), "<g class=\"bar\">") == 12);  // those that ran, in grey
}

TEST_CASE("report: html_report refuses documents of another kind") {
  CHECK_THROWS_AS(html_report(Json{{"kind", "capacity"}}), InputError);
  CHECK_THROWS_AS(html_report(Json::array()), InputError);
}

TEST_CASE("report: run_report_command writes the page, and names the file of a bad input or output") {
  namespace fs = std::filesystem;
  const std::string in = std::string(FLEETSIM_SOURCE_DIR) + "/tests/data/report_sweep.json";
  const std::string out = test::temp_path("report.html");
  cli::ReportArgs args;
  args.input = in;
  args.output = out;
  CHECK(cli::run_report_command(args) == 0);
  std::ifstream f(out);
  std::stringstream ss;
  ss << f.rdbuf();
  CHECK(ss.str() == html_report(sweep_doc()));
  fs::remove(out);

  auto error_of = [&](const std::string& input, const std::string& output) -> std::string {
    try {
      cli::ReportArgs args;
      args.input = input;
      args.output = output;
      cli::run_report_command(args);
    } catch (const InputError& e) {
      return e.one_line();
    } catch (const OutputError& e) {
      return std::string("output: ") + e.what();
    }
    return "(no error)";
  };
  CHECK(error_of("/nonexistent/run.json", out).rfind("/nonexistent/run.json: error: cannot open report input", 0) == 0);
  const std::string bad = test::write_temp("report_bad.json", "{\"kind\": \"run\",\n  \"x\": [1, 2,, 3]}\n");
  CHECK(error_of(bad, out).rfind(bad + ":2:", 0) == 0);
  const std::string yaml = test::write_temp("report_yaml.json", "name: chat\nduration_s: 60\n");
  CHECK(error_of(yaml, out).rfind(yaml + ":1:", 0) == 0);
  const std::string cap = test::write_temp("report_cap.json", "{\"kind\": \"capacity\"}");
  CHECK(error_of(cap, out) ==
        cap +
            ": error: expected the JSON of `fleetsim run --format json` (kind \"run\") or of "
            "`fleetsim sweep --format json` / `fleetsim merge` (kind \"sweep\"), got kind \"capacity\"");
  const std::string empty = test::write_temp("report_empty.json", "");
  CHECK(error_of(empty, out).find("is empty") != std::string::npos);
  CHECK(error_of(in, "/nonexistent/dir/report.html").rfind("output: /nonexistent/dir/report.html: error: writing", 0) ==
        0);
  // a run document is one this fleetsim writes, or there is nothing to draw but dashes
  const std::string bare = test::write_temp("report_bare.json", "{\"kind\": \"run\", \"schema_version\": 1}");
  CHECK(error_of(bare, out) == bare +
                                   ": error: /scenario: missing or not an object (a run document from `fleetsim run "
                                   "--format json` has it)");
  const std::string v99 = test::write_temp("report_v99.json", "{\"kind\": \"run\", \"schema_version\": 99}");
  CHECK(error_of(v99, out) == v99 + ": error: /schema_version: 99: this fleetsim reads schema_version 1");
  // a sweep document is checked as merge checks a shard
  Json sweep = sweep_doc();
  sweep["schema_version"] = 2;
  const std::string s2 = test::write_temp("report_sweep_v2.json", sweep.dump());
  CHECK(error_of(s2, out).find("schema_version 1") != std::string::npos);
  // --set belongs to a scenario
  {
    cli::ReportArgs args;
    args.input = in;
    args.output = out;
    args.sets = {"fleet.replicas=3"};
    try {
      cli::run_report_command(args);
      FAIL("--set on a JSON input was taken");
    } catch (const InputError& e) {
      CHECK(e.one_line() ==
            "--set fleet.replicas=3: error: --set changes a scenario; a JSON result is reported as it was run");
    }
  }
}

TEST_CASE("report: a horizontal axis never puts two tick labels into each other") {
  using namespace fleetsim::svg::parts;
  svg::Axis dollars;
  dollars.fmt = [](double v) { return fmt::format("${:.2f}", v); };  // "$100.00": wide labels
  svg::Axis plain;
  for (const svg::Axis* a : {&dollars, &plain})
    for (double width : {80.0, 120.0, 200.0, 320.0, 640.0})
      for (double top : {0.7, 3.0, 9.5, 47.0, 180.0, 1234.0, 98765.0}) {
        const Scale s = make_scale(*a, {0.0, top}, 10.0, 10.0 + width, 70);
        INFO("width " << width << " px, data up to " << top << (a == &dollars ? " dollars" : ""));
        REQUIRE(s.ticks.size() >= 2);
        CHECK(s.hi >= top);
        for (size_t i = 1; i < s.ticks.size(); ++i) {
          // centred labels: the gap between two neighbours' edges is at least 8 px (the test's own
          // width estimate is the one the charts draw with)
          const double apart = s.px(s.ticks[i]) - s.px(s.ticks[i - 1]);
          const double half_a = text_w(tick_label(*a, s.ticks[i - 1]), 11) / 2;
          const double half_b = text_w(tick_label(*a, s.ticks[i]), 11) / 2;
          CHECK(apart - half_a - half_b >= 8.0);
        }
      }
}

TEST_CASE("report: axis ticks are whole multiples of their step, so the tenth of 0.1 reads 1") {
  using namespace fleetsim::svg::parts;
  svg::Axis a;
  a.fmt = [](double v) { return svg::seconds_axis(v); };
  const Scale s = make_scale(a, {0.1, 0.95}, 10.0, 1000.0, 70);
  REQUIRE(s.ticks.size() >= 3);
  // the last tick is exactly 1, not 0.9999999 (which reads "1,000 ms")
  CHECK(s.ticks.back() >= 0.95);
  bool one = false;
  for (double t : s.ticks) one = one || t == 1.0;
  CHECK(one);
  CHECK(svg::seconds_axis(s.ticks.back()) == "1 s");
}

TEST_CASE("report: no axis title says seconds, since latency ticks carry their own unit (ms, s)") {
  static const std::regex title("class=\"alabel\">([^<]*)<");
  for (const std::string& html : {html_report(run_doc()), html_report(sweep_doc())}) {
    int titles = 0;
    for (std::sregex_iterator m(html.begin(), html.end(), title), e; m != e; ++m, ++titles)
      CHECK((*m)[1].str().find("seconds") == std::string::npos);
    CHECK(titles >= 6);
  }
  CHECK(panel_of(html_report(run_doc()), "timeline-ttft").find(">p99 TTFT") != std::string::npos);
}

TEST_CASE("report: a latency CDF is flat where no request fell, so its line agrees with the percentiles") {
  // 999 requests at 3.17 s and one at 1.97 s: the fraction holds at 0.001 up to 3.17 s's bucket
  Histogram h;
  hist_clear(h);
  hist_add(h, 1.97);
  for (int i = 0; i < 999; ++i) hist_add(h, 3.17);
  const Json cdf = hist_cdf(h);
  REQUIRE(cdf.size() >= 3);
  for (size_t i = 1; i < cdf.size(); ++i) {
    CHECK(cdf[i][0].get<double>() >= cdf[i - 1][0].get<double>());
    CHECK(cdf[i][1].get<double>() >= cdf[i - 1][1].get<double>());
  }
  // the point before the last is the lower edge of 3.17 s's bucket, at 1 in 1,000 below it
  const Json& hold = cdf[cdf.size() - 2];
  CHECK(hold[1].get<double>() == doctest::Approx(0.001));
  CHECK(hold[0].get<double>() > 3.0);
  CHECK(hold[0].get<double>() <= 3.17);
  CHECK(cdf.back()[1].get<double>() == 1.0);
  // and it starts at 0 at the fastest request
  CHECK(cdf[0][1].get<double>() == 0.0);
  CHECK(cdf[0][0].get<double>() == doctest::Approx(1.97));
  // every request at 0 s (no queue wait): a step at 0, not a point past it and back
  Histogram z;
  hist_clear(z);
  for (int i = 0; i < 10; ++i) hist_add(z, 0.0);
  const Json zero = hist_cdf(z);
  REQUIRE(zero.size() == 2);
  CHECK(zero[0] == Json::array({0.0, 0.0}));
  CHECK(zero[1] == Json::array({0.0, 1.0}));
}

TEST_CASE("report: an owned pool's sections are checked as every other's, ids hold no white space") {
  const std::string yaml =
      "name: own\nmodel: llama-3.1-8b\nduration_s: 60\ndevice: a100-80gb\npools:\n  my pool:\n"
      "    fleet:\n      replicas: 2\n      pricing:\n        owned:\n"
      "          node_capex_usd: 150000\n          refresh_years: 5\n          years: 2\n"
      "          power: {idle_kw_per_device: 0.06, host_kw_per_node: 2.5, pue: 1.4, usd_per_kwh: 0.12}\n"
      "          newer: {device: h100-sxm-80gb, replicas: 1, node_capex_usd: 400000}\n"
      "classes:\n  chat: {pool: my pool, arrival: {process: poisson, rate_per_s: 1}, prompt_tokens: 100, "
      "output_tokens: 10}\n";
  const ScenarioSource src = ScenarioSource::from_text(yaml, "own.yaml", ".");
  const Json doc = run_document(src, src.instantiate(), 0, 0);
  CHECK_NOTHROW(check_run_document(doc, "own.json"));
  const std::string html = html_report(doc);
  CHECK(html.find("id=\"newer-device-my-pool\"") != std::string::npos);
  CHECK(html.find("id=\"newer-device-my pool\"") == std::string::npos);
  for (const auto& [path, bad] :
       {std::pair<std::string, Json>{"/ledger/pools/my pool/ownership/usd", Json{{"a", 1}}},
        {"/ledger/pools/my pool/ownership/newer_device/years/0/newer_usd_per_million_tokens", Json("x")}}) {
    CAPTURE(path);
    Json d = doc;
    REQUIRE(d.contains(Json::json_pointer(path)));
    d[Json::json_pointer(path)] = bad;
    CHECK_THROWS_AS(check_run_document(d, "own.json"), InputError);
  }
  // the shipped newer-device scenario's document reads back (its view's parts are not names)
  const ScenarioSource shipped =
      ScenarioSource::from_file(std::string(FLEETSIM_SOURCE_DIR) + "/scenarios/newer-device.yaml");
  CHECK_NOTHROW(check_run_document(run_document(shipped, shipped.instantiate(), 0, 0), "newer.json"));
}

TEST_CASE("report: a fleet that generates no tokens is priced per request, without an empty output panel") {
  const Json doc = test::run(load_scenario_file(std::string(FLEETSIM_SOURCE_DIR) + "/scenarios/rag-embedding.yaml",
                                                {"duration_s=300", "warmup_s=0"}))
                       .report;
  REQUIRE(doc["cost"]["per_million_output_tokens_usd"].is_null());
  const std::string html = html_report(doc);
  CHECK(html.find(" per request</strong>") != std::string::npos);
  CHECK(html.find("cost-output") == std::string::npos);
  CHECK(html.find("cost-input") != std::string::npos);
}
