// Shared by the parts of the HTML report: report/html.cpp (the page, tables, latency CDFs),
// report/html_run.cpp and report/html_sweep.cpp.
#pragma once
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "report/html.hpp"
#include "report/svg.hpp"

namespace fleetsim::html {

inline constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();  // no number

// A read-only view of a JSON value that tolerates anything: a missing key, an index out of range
// or a value of another type reads as absent, and a null or non-finite number as no number. So a
// report with blocks missing or malformed still renders.
class View {
 public:
  View() = default;
  explicit View(const Json& j) : p_(&j) {}
  View operator[](const std::string& key) const;
  View operator[](size_t i) const;
  View path(const std::string& dotted) const;  // "cost.total_usd"
  bool has() const { return p_ && !p_->is_null(); }
  bool is_object() const { return p_ && p_->is_object(); }
  bool is_array() const { return p_ && p_->is_array(); }
  std::optional<double> num() const;
  std::optional<bool> flag() const;  // a JSON bool
  double num_or(double d) const { return num().value_or(d); }
  std::string str() const;                                  // "" unless a string
  std::string text() const;                                 // a string, number or bool as people read it; "" otherwise
  size_t size() const;                                      // of an array or object; 0 otherwise
  std::vector<std::pair<std::string, View>> items() const;  // an object's members, in order
  std::vector<View> elements() const;                       // an array's elements

 private:
  const Json* p_ = nullptr;
};

inline std::string esc(const std::string& s) { return html_escape(s); }

// Cells are HTML (escape what users wrote); columns from `first_numeric` on are right aligned.
struct Row {
  std::vector<std::string> cells;
  std::string cls;  // "total", "marked" or ""
};
std::string table(const std::vector<std::string>& head, const std::vector<Row>& rows, const std::string& caption,
                  size_t first_numeric = 1);
std::string figure(const std::string& id, const std::string& svg, const std::string& caption_html);
std::string kpi(const std::string& label, const std::string& value_html, const std::string& sub_html = "");
std::string note(const std::string& html);

// Owned pools: cost parts, years against renting, a newer device (empty when none is owned).
std::string ownership_section(const View& d);

// "latency_s.ttft.p99" -> "p99 TTFT", "cost.per_million_output_tokens_usd" -> "cost per 1M output tokens"
std::string metric_name(const std::string& path);
// a value of that metric, with its unit
std::string metric_value(const std::string& path, double v);

// One latency bound drawn on the CDFs: metric is "ttft", "tpot" or "e2e"; a percentile target has
// its cumulative level (0.99 for p99), a per-request bound (goodput) has none.
struct LatencyBound {
  std::string metric;
  double limit = 0;
  std::optional<double> level;
  std::string label;
  std::string color = "#b42318";
};
// "ttft <= 0.5 s, e2e <= 10 s" (goodput bounds as the run report writes them)
std::vector<LatencyBound> parse_goodput(const std::string& s);

struct LatencyCurve {
  std::string name, color;
  View latency;  // a latency_s block
  bool dashed = false;
};
// The TTFT, TPOT and e2e CDFs of every curve, with the bounds; "" when there is nothing to draw.
std::string latency_figure(const std::vector<LatencyCurve>& curves, const std::vector<LatencyBound>& bounds,
                           const std::string& caption_lead);

struct Page {
  std::string title, meta, body;
};
Page run_page(const Json& doc);
Page sweep_page(const Json& doc);

}  // namespace fleetsim::html
