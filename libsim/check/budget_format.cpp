// `fleetsim check` results for people (table, Markdown for a PR comment), for machines (JSON,
// JUnit XML) and for GitHub Actions (workflow-command annotations at the budget's line).
#include <fmt/format.h>

#include <cmath>
#include <string>

#include "base/text.hpp"
#include "check/budget.hpp"
#include "report/html.hpp"

namespace fleetsim {

namespace {

std::string what(const Budget& b) {
  std::string w = b.metric;
  if (!b.cls.empty()) w += " [class " + b.cls + "]";
  if (b.window_s > 0) w += fmt::format(" (worst {} s window)", b.window_s);
  return w;
}

std::string value(const BudgetOutcome& o) {
  if (!o.has_value) return "no value";
  // (a spread of rounding alone, where every replication gave the same figure, is none)
  return o.half_width > 1e-9 * std::abs(o.mean) ? fmt::format("{:.4g} ± {:.2g}", o.mean, o.half_width)
                                                : fmt::format("{:.4g}", o.mean);
}

// The limit as written (shortest form that reads back the same).
std::string rule(const Budget& b) { return fmt::format("{} {}", b.is_max ? "<=" : ">=", b.limit); }

// A bound beside its limit, with the digits that tell them apart: 4 where they do.
std::string bound_text(double bound, double limit) {
  for (int digits = 4; digits < 17; ++digits) {
    const std::string a = fmt::format("{:.{}g}", bound, digits), b = fmt::format("{:.{}g}", limit, digits);
    if (a != b || bound == limit) return a;
  }
  return fmt::format("{}", bound);
}

std::string verdict(const BudgetOutcome& o) {
  if (!o.has_value)
    return o.window_start_s >= 0
               ? fmt::format(
                     "no value in the window from t = {} s of a replication (a window without the figure "
                     "cannot pass)",
                     o.window_start_s)
               : std::string("no value in a replication (a run without the figure cannot pass)");
  std::string v = fmt::format("{} {} {} {}", o.interval ? "95% bound" : "one replication, no interval: value",
                              bound_text(o.bound, o.budget.limit),
                              o.pass ? (o.budget.is_max ? "<=" : ">=") : (o.budget.is_max ? ">" : "<"), o.budget.limit);
  if (o.window_start_s >= 0) v += fmt::format(", worst window from t = {} s", o.window_start_s);
  return v;
}

std::string change(const BudgetOutcome& o) {
  if (!o.has_baseline || !o.has_value) return "";
  if (o.baseline == 0) return fmt::format("0 -> {:.4g}{}", o.mean, o.mean == 0 ? " (no change)" : "");
  const double d = (o.mean - o.baseline) / std::fabs(o.baseline);
  return fmt::format("{:.4g} -> {:.4g} ({:+.1f}%)", o.baseline, o.mean, 100.0 * d);
}

std::string headroom(const CheckResult& r) {
  if (r.headroom < 0) return r.headroom_note;
  return r.headroom_capped
             ? fmt::format("every budget holds even at {:g}x today's load (the largest tried)", r.headroom)
             : fmt::format("every budget holds up to {:.2f}x today's load", r.headroom);
}

// XML 1.0 has no control characters but tab, CR and LF: the others are written out; markup is
// escaped as the HTML report escapes it (&#39; for a quote is XML too).
std::string xml(const std::string& raw) { return html_escape(printable(raw)); }

// GitHub's workflow commands escape %, CR and LF in messages (and , and : in properties).
std::string gh(const std::string& raw, bool property) {
  const std::string s = printable(raw);  // a line break in a name is not the message's own
  std::string o;
  for (char c : s) {
    if (c == '%')
      o += "%25";
    else if (c == '\r')
      o += "%0D";
    else if (c == '\n')
      o += "%0A";
    else if (property && c == ':')
      o += "%3A";
    else if (property && c == ',')
      o += "%2C";
    else
      o += c;
  }
  return o;
}

// A place in a file (a line there), or a flag or --set (line 0: its text is all there is).
bool in_file(const Location& w) { return w.line > 0 && !w.file.empty(); }
std::string place(const Location& w) { return in_file(w) ? fmt::format("{}:{}", w.file, w.line) : w.file; }
// JUnit's file and line attributes, where there is a file to point at
std::string junit_file(const Location& w) {
  return in_file(w) ? fmt::format(" file=\"{}\" line=\"{}\"", xml(w.file), w.line) : std::string();
}

}  // namespace

Json check_json(const CheckResult& r, const Scenario& s, const BudgetSpec& spec) {
  Json j;
  j["schema_version"] = kSchemaVersion;
  j["kind"] = "check";
  j["scenario"] = {{"name", s.name}, {"source", s.source}, {"overrides", s.overrides}};
  j["budgets_source"] = spec.source;
  j["replications"] = spec.replications;
  j["pass"] = r.pass;
  Json bs = Json::array();
  for (const auto& o : r.outcomes) {
    Json b;
    b["name"] = o.budget.name;
    b["metric"] = o.budget.metric;
    b["path"] = o.budget.path();
    b["class"] = o.budget.cls.empty() ? Json(nullptr) : Json(o.budget.cls);
    b["bound"] = o.budget.is_max ? "max" : "min";
    b["limit"] = o.budget.limit;
    b["window_s"] = o.budget.window_s > 0 ? Json(o.budget.window_s) : Json(nullptr);
    b["pass"] = o.pass;
    b["mean"] = o.has_value ? Json(o.mean) : Json(nullptr);
    b["ci95_half_width"] = o.has_value && o.interval ? Json(o.half_width) : Json(nullptr);
    b["bound_95"] = o.has_value ? Json(o.bound) : Json(nullptr);
    b["worst_window_start_s"] = o.window_start_s >= 0 ? Json(o.window_start_s) : Json(nullptr);
    b["windows"] = o.windows;
    if (o.has_baseline) b["baseline_mean"] = o.baseline;
    b["where"] = place(o.budget.where);
    bs.push_back(b);
  }
  j["budgets"] = bs;
  j["headroom"] = {{"load_multiplier", r.headroom >= 0 ? Json(r.headroom) : Json(nullptr)},
                   {"capped", r.headroom_capped},
                   {"note", headroom(r)}};
  j["simulations"] = r.simulations;
  return j;
}

std::string check_table(const CheckResult& r, const Scenario& s, const BudgetSpec& spec) {
  std::string o = fmt::format("check  {}  ({} budgets from {}, {} replication{} each, {} simulations)\n\n",
                              printable(s.name), r.outcomes.size(), printable(spec.source), spec.replications,
                              spec.replications == 1 ? "" : "s", r.simulations);
  for (const auto& x : r.outcomes) {
    o += fmt::format("  {}  {}: {} {}  mean {}  ({})", x.pass ? "pass" : "FAIL", printable(x.budget.name),
                     printable(what(x.budget)), rule(x.budget), value(x), verdict(x));
    if (x.has_baseline) o += "  baseline " + change(x);
    o += "\n";
  }
  o += fmt::format("\nheadroom  {}\n", headroom(r));
  o += r.pass ? "result    pass\n" : "result    FAIL: a budget is violated\n";
  return o;
}

std::string check_markdown(const CheckResult& r, const Scenario& s, const BudgetSpec& spec) {
  auto cell = [](const std::string& t) { return markdown_cell(t); };
  std::string o = fmt::format("### fleetsim check: {} {}\n\n", cell(s.name), r.pass ? "passes" : "**fails**");
  o += spec.replications >= 2
           ? fmt::format("{} replications per budget; a budget passes when its 95% bound is within it.\n\n",
                         spec.replications)
           : std::string("1 replication per budget, so no interval: a budget passes when its value is within it.\n\n");
  const bool base = std::any_of(r.outcomes.begin(), r.outcomes.end(), [](const auto& x) { return x.has_baseline; });
  o += base ? "| | budget | metric | limit | mean ± 95% CI | 95% bound | baseline → now "
              "|\n|---|---|---|---|---|---|---|\n"
            : "| | budget | metric | limit | mean ± 95% CI | 95% bound |\n|---|---|---|---|---|---|\n";
  for (const auto& x : r.outcomes) {
    o += fmt::format("| {} | {} | {} | {} | {} | {} |", x.pass ? "✅" : "❌", cell(x.budget.name), cell(what(x.budget)),
                     cell(rule(x.budget)), cell(value(x)), x.has_value ? bound_text(x.bound, x.budget.limit) : "–");
    if (base) o += " " + cell(change(x)) + " |";
    o += "\n";
  }
  o += fmt::format("\nHeadroom: {}.\n", headroom(r));
  return o;
}

std::string check_junit(const CheckResult& r, const Scenario& s, const BudgetSpec& spec) {
  int failures = 0;
  for (const auto& x : r.outcomes) failures += x.pass ? 0 : 1;
  std::string o = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  o += fmt::format("<testsuites name=\"fleetsim check\" tests=\"{}\" failures=\"{}\">\n", r.outcomes.size(), failures);
  o += fmt::format("  <testsuite name=\"{}\" tests=\"{}\" failures=\"{}\" errors=\"0\" skipped=\"0\">\n", xml(s.name),
                   r.outcomes.size(), failures);
  o += fmt::format(
      "    <properties><property name=\"budgets\" value=\"{}\"/><property name=\"replications\" value=\"{}\"/>"
      "<property name=\"headroom\" value=\"{}\"/></properties>\n",
      xml(spec.source), spec.replications, xml(headroom(r)));
  for (const auto& x : r.outcomes) {
    o += fmt::format("    <testcase classname=\"{}\" name=\"{}\"{}>", xml(s.name), xml(x.budget.name),
                     junit_file(x.budget.where));
    if (!x.pass)
      o += fmt::format("\n      <failure message=\"{}\">{}: {} {}, mean {}</failure>\n    ",
                       xml(what(x.budget) + " " + rule(x.budget) + ": " + verdict(x)), xml(x.budget.name),
                       xml(what(x.budget)), xml(rule(x.budget)), xml(value(x)));
    o += "</testcase>\n";
  }
  o += "  </testsuite>\n</testsuites>\n";
  return o;
}

namespace {
std::string error_file(const InputError& e) { return e.where().file.empty() ? "fleetsim check" : e.where().file; }
// "file:line" or, for a flag or --set (no line in a file), its text
std::string error_place(const InputError& e) {
  std::string p = error_file(e);
  if (e.where().line > 0) p += fmt::format(":{}", e.where().line);
  if (e.where().line > 0 && e.where().column > 0) p += fmt::format(":{}", e.where().column);
  return p;
}
}  // namespace

std::string check_error_markdown(const InputError& e) {
  return fmt::format(
      "### fleetsim check: **could not run**\n\nThe input has an error, so no budget was judged (exit 2).\n\n"
      "| | where | error |\n|---|---|---|\n| ❌ | {} | {} |\n",
      markdown_cell(error_place(e)), markdown_cell(e.what()));
}

std::string check_error_junit(const InputError& e) {
  std::string o = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  o += "<testsuites name=\"fleetsim check\" tests=\"1\" failures=\"0\" errors=\"1\">\n";
  o += "  <testsuite name=\"fleetsim check\" tests=\"1\" failures=\"0\" errors=\"1\" skipped=\"0\">\n";
  o += fmt::format("    <testcase classname=\"fleetsim check\" name=\"input\"{}>", junit_file(e.where()));
  o += fmt::format("\n      <error message=\"{}\">{}: {}</error>\n    </testcase>\n", xml(e.what()),
                   xml(error_place(e)), xml(e.what()));
  o += "  </testsuite>\n</testsuites>\n";
  return o;
}

std::string check_error_annotation(const InputError& e) {
  std::string o = "::error ";
  if (in_file(e.where())) {
    o += fmt::format("file={},line={}", gh(e.where().file, true), e.where().line);
    if (e.where().column > 0) o += fmt::format(",col={}", e.where().column);
    o += ",";
  }
  // a flag or a --set is no file to annotate: the message names it
  const std::string msg = !in_file(e.where()) && !e.where().file.empty() ? e.where().file + ": " + e.what() : e.what();
  return o + fmt::format("title={}::{}\n", gh("fleetsim check: input error", true), gh(msg, false));
}

std::string check_annotations(const CheckResult& r) {
  std::string o;
  for (const auto& x : r.outcomes) {
    if (x.pass) continue;
    const Location& w = x.budget.where;
    const std::string at = in_file(w) ? fmt::format("file={},line={},", gh(w.file, true), w.line) : std::string();
    o += fmt::format("::error {}title={}::{}{}\n", at, gh("budget " + x.budget.name, true),
                     in_file(w) ? std::string() : gh(w.file + ": ", false),
                     gh(what(x.budget) + " " + rule(x.budget) + ": " + verdict(x) + ", mean " + value(x), false));
  }
  return o;
}

}  // namespace fleetsim
