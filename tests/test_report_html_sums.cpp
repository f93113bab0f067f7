// `fleetsim report` of fresh simulations: each pool's step-time model said with its error, the
// pricing lines per pool whose device-hours times rate is their dollars as printed, and a sweep's
// step-time models and intervals beside the figures they are of.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <regex>
#include <string>

#include "helpers.hpp"
#include "libsim/report/html.hpp"
#include "libsim/sweep/sweep.hpp"
#include "sweep_helpers.hpp"

using namespace fleetsim;
using test::count;

namespace {

// the <table> whose caption is `caption`, as its rows' cells (tags dropped)
std::vector<std::vector<std::string>> table_cells(const std::string& html, const std::string& caption) {
  const size_t c = html.find("<caption>" + caption + "</caption>");
  REQUIRE(c != std::string::npos);
  const std::string t = html.substr(c, html.find("</table>", c) - c);
  std::vector<std::vector<std::string>> rows;
  static const std::regex tr("<tr[^>]*>(.*?)</tr>"), td("<t[dh][^>]*>(.*?)</t[dh]>");
  for (std::sregex_iterator r(t.begin(), t.end(), tr), e; r != e; ++r) {
    const std::string row = (*r)[1];
    rows.emplace_back();
    for (std::sregex_iterator d(row.begin(), row.end(), td); d != e; ++d) rows.back().push_back((*d)[1]);
  }
  return rows;
}

double money(std::string s) {  // "$1,255.60" -> 1255.6
  s.erase(std::remove_if(s.begin(), s.end(), [](char ch) { return ch == '$' || ch == ','; }), s.end());
  return std::stod(s);
}

}  // namespace

TEST_CASE(
    "report: every pool says its step-time model and its error, and each pricing line multiplies out as printed") {
  // one pool on a calibrated TensorRT-LLM profile, one on the physics model, priced differently
  const Scenario sc = test::scenario(
      "name: mixed\nduration_s: 600\nwarmup_s: 60\nseed: 3\ndevice: h100-sxm-80gb\nmodel: llama-3.1-8b\n"
      "pools:\n"
      "  cal:\n    engine: {kind: trtllm, perf_profile: h100-sxm-80gb/llama-3.1-8b/tp1-trtllm, "
      "free_gpu_memory_fraction: 0.9}\n    fleet: {replicas: 1}\n"
      "  phys:\n    device: h200-141gb\n    fleet: {replicas: 2}\n"
      "classes:\n"
      "  a: {pool: cal, arrival: {process: poisson, rate_per_s: 3}, prompt_tokens: 800, output_tokens: 120}\n"
      "  b: {pool: phys, arrival: {process: poisson, rate_per_s: 3}, prompt_tokens: 800, output_tokens: 120}\n");
  const Json d = Json::parse(test::run(sc).report.dump());
  const std::string html = html_report(d);
  const size_t at = html.find("Step time: ");
  REQUIRE(at != std::string::npos);
  const std::string steps = html.substr(at, html.find("</p>", at) - at);
  CHECK(steps.find("cal: calibrated profile h100-sxm-80gb/llama-3.1-8b/tp1-trtllm (median error on ") !=
        std::string::npos);
  CHECK(steps.find("phys: physics step model") != std::string::npos);

  // Pool, pricing, device-hours, list and effective USD/h, list and effective USD, discount
  const auto rows = table_cells(html, "By pricing");
  REQUIRE(rows.size() == 3);  // the header and one line per pool
  CHECK(rows[0][0] == "Pool");
  CHECK(rows[1][0] == "cal");
  CHECK(rows[2][0] == "phys");
  for (size_t i = 1; i < rows.size(); ++i) {
    const double hours = std::stod(rows[i][2]), rate = money(rows[i][4]), usd = money(rows[i][6]);
    CAPTURE(rows[i][0]);
    CHECK(rows[i][2].size() - rows[i][2].find('.') == 3);  // hours to two decimals, rate to three
    CHECK(rows[i][4].size() - rows[i][4].find('.') == 4);
    CHECK(std::fabs(hours * rate - usd) <= 0.005 * rate + 0.005);
  }
}

TEST_CASE("report: a sweep says which step-time models priced it, intervals beside the figures they are of") {
  const ScenarioSource src = test::sweep_source(
      "sweep:\n  replications: 3\n  parameters:\n    engine.perf_model: [roofline, physics]\n"
      "  slo: {latency_s.ttft.p99: {max: 5}}\n");
  const Json doc = test::run_sweep_cpu(src);
  const std::string html = html_report(doc);
  // two models: one list item each (a model's sentence may hold "; " itself)
  const size_t at = html.find("Step time, by the configurations each model priced:");
  REQUIRE(at != std::string::npos);
  const size_t ul = html.find("<ul class=\"steps\">", at);
  REQUIRE(ul != std::string::npos);
  const std::string steps = html.substr(ul, html.find("</ul>", ul) - ul);
  CHECK(count(steps, "<li>") == 2);
  CHECK(steps.find("<li>roofline (uncalibrated") != std::string::npos);
  CHECK(steps.find("<li>physics model (median error on ") != std::string::npos);
  CHECK(count(steps, "(1 configuration)</li>") == 2);
  // the objective's interval in its own column, p99 TTFT's in its, each "figure ± half-width"
  const auto rows = table_cells(html, "Configurations that meet the SLO");
  REQUIRE(rows.size() == 3);
  const auto& head = rows[0];
  CHECK(std::find(head.begin(), head.end(), "p99 TTFT \xc2\xb1 95%") != head.end());
  CHECK(std::count_if(head.begin(), head.end(),
                      [](const std::string& h) { return h.find("\xc2\xb1") != std::string::npos; }) == 2);
  for (size_t i = 1; i < rows.size(); ++i)
    CHECK(std::count_if(rows[i].begin(), rows[i].end(),
                        [](const std::string& c) { return c.find(" \xc2\xb1 ") != std::string::npos; }) == 2);
}
