#include "report/html.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "base/error.hpp"
#include "report/html_internal.hpp"

namespace fleetsim::html {

// ---- View ----

View View::operator[](const std::string& key) const {
  if (!p_ || !p_->is_object()) return {};
  const auto it = p_->find(key);
  return it == p_->end() ? View() : View(*it);
}

View View::operator[](size_t i) const {
  if (!p_ || !p_->is_array() || i >= p_->size()) return {};
  return View((*p_)[i]);
}

View View::path(const std::string& dotted) const {
  View v = *this;
  size_t start = 0;
  while (start <= dotted.size()) {
    const size_t dot = std::min(dotted.find('.', start), dotted.size());
    v = v[dotted.substr(start, dot - start)];
    start = dot + 1;
  }
  return v;
}

std::optional<double> View::num() const {
  if (!p_ || !p_->is_number()) return std::nullopt;
  const double v = p_->get<double>();
  return std::isfinite(v) ? std::optional<double>(v) : std::nullopt;
}

std::optional<bool> View::flag() const {
  return p_ && p_->is_boolean() ? std::optional<bool>(p_->get<bool>()) : std::nullopt;
}

std::string View::str() const { return p_ && p_->is_string() ? p_->get<std::string>() : std::string(); }

std::string View::text() const {
  if (!p_) return "";
  if (p_->is_string()) return p_->get<std::string>();
  if (p_->is_boolean()) return p_->get<bool>() ? "true" : "false";
  if (p_->is_number_unsigned()) return fmt::format("{}", p_->get<uint64_t>());
  if (p_->is_number_integer()) return fmt::format("{}", p_->get<int64_t>());
  if (const auto v = num())
    return *v == std::floor(*v) && std::fabs(*v) < 1e15 ? fmt::format("{:.0f}", *v) : svg::num(*v, 4);
  return "";
}

size_t View::size() const { return p_ && (p_->is_array() || p_->is_object()) ? p_->size() : 0; }

std::vector<std::pair<std::string, View>> View::items() const {
  std::vector<std::pair<std::string, View>> r;
  if (p_ && p_->is_object())
    for (auto it = p_->begin(); it != p_->end(); ++it) r.emplace_back(it.key(), View(it.value()));
  return r;
}

std::vector<View> View::elements() const {
  std::vector<View> r;
  if (p_ && p_->is_array())
    for (const auto& e : *p_) r.emplace_back(e);
  return r;
}

// ---- page parts ----

std::string table(const std::vector<std::string>& head, const std::vector<Row>& rows, const std::string& caption,
                  size_t first_numeric) {
  if (rows.empty()) return "";
  std::string o = "<div class=\"tw\"><table>";
  if (!caption.empty()) o += "<caption>" + caption + "</caption>";
  o += "<thead><tr>";
  for (size_t i = 0; i < head.size(); ++i) o += (i >= first_numeric ? "<th class=\"n\">" : "<th>") + head[i] + "</th>";
  o += "</tr></thead><tbody>";
  for (const auto& r : rows) {
    o += r.cls.empty() ? "<tr>" : "<tr class=\"" + esc(r.cls) + "\">";
    for (size_t i = 0; i < r.cells.size(); ++i)
      o += (i >= first_numeric ? "<td class=\"n\">" : "<td>") + r.cells[i] + "</td>";
    o += "</tr>";
  }
  return o + "</tbody></table></div>";
}

std::string figure(const std::string& id, const std::string& svg, const std::string& caption_html) {
  // an id holds no white space (HTML): a pool named "my pool" is figure newer-device-my-pool
  std::string clean = id;
  for (char& c : clean)
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f') c = '-';
  return "<figure id=\"" + esc(clean) + "\">" + svg + "<figcaption>" + caption_html + "</figcaption></figure>";
}

std::string kpi(const std::string& label, const std::string& value_html, const std::string& sub_html) {
  return "<div class=\"kpi\"><dt>" + esc(label) + "</dt><dd>" + value_html +
         (sub_html.empty() ? "" : "<small>" + sub_html + "</small>") + "</dd></div>";
}

std::string note(const std::string& html) { return "<p class=\"note\">" + html + "</p>"; }

namespace {

const char* const kLatencyNames[][2] = {
    {"ttft", "TTFT"}, {"tpot", "TPOT"}, {"e2e", "end-to-end latency"}, {"queue_wait", "queue wait"}};

std::string latency_name(const std::string& m) {
  for (const auto& n : kLatencyNames)
    if (m == n[0]) return n[1];
  return m;
}

std::string percentile_name(const std::string& p) {
  if (p == "p999") return "p99.9";
  return p;
}

std::optional<double> percentile_level(const std::string& p) {
  if (p == "max") return 1.0;
  if (p.size() < 2 || p[0] != 'p') return std::nullopt;
  for (size_t i = 1; i < p.size(); ++i)
    if (p[i] < '0' || p[i] > '9') return std::nullopt;
  // p50 -> 0.5, p99 -> 0.99, p999 -> 0.999
  return std::atof(p.c_str() + 1) / std::pow(10.0, double(p.size() - 1));
}

std::string trim(const std::string& s) {
  const size_t a = s.find_first_not_of(" \t"), b = s.find_last_not_of(" \t");
  return a == std::string::npos ? "" : s.substr(a, b - a + 1);
}

}  // namespace

std::string metric_name(const std::string& path) {
  if (path.rfind("latency_s.", 0) == 0) {
    const size_t dot = path.find('.', 10);
    if (dot != std::string::npos)
      return percentile_name(path.substr(dot + 1)) + " " + latency_name(path.substr(10, dot - 10));
  }
  static const char* const kNames[][2] = {
      {"cost.per_million_output_tokens_usd", "cost per 1M output tokens (decode share)"},
      {"cost.per_million_input_tokens_usd", "cost per 1M input tokens (prefill share)"},
      {"cost.per_million_tokens_usd", "cost per 1M tokens in and out"},
      {"cost.per_request_usd", "cost per request"},
      {"cost.total_usd", "total cost"},
      {"requests.rejection_fraction", "rejection fraction"},
      {"requests.good_fraction", "good fraction"},
      {"utilization.busy_fraction", "busy fraction"},
      {"throughput.goodput_per_s", "goodput (requests/s)"},
      {"throughput.output_tokens_per_s", "output tokens/s"},
  };
  for (const auto& n : kNames)
    if (path == n[0]) return n[1];
  return path;
}

std::string metric_value(const std::string& path, double v) {
  auto ends = [&](const std::string& s) {
    return path.size() >= s.size() && path.compare(path.size() - s.size(), s.size(), s) == 0;
  };
  if (path.rfind("latency_s.", 0) == 0) return svg::seconds(v);
  if (ends("_usd")) return svg::usd(v);
  if (ends("fraction") || ends("_share")) return svg::percent(v);
  return svg::num(v);
}

std::vector<LatencyBound> parse_goodput(const std::string& s) {
  std::vector<LatencyBound> r;
  size_t start = 0;
  while (start < s.size()) {
    const size_t comma = std::min(s.find(',', start), s.size());
    const std::string part = s.substr(start, comma - start);
    start = comma + 1;
    const size_t le = part.find("<=");
    if (le == std::string::npos) continue;
    const std::string m = trim(part.substr(0, le));
    char* end = nullptr;
    const std::string rest = trim(part.substr(le + 2));
    const double v = std::strtod(rest.c_str(), &end);
    if (end == rest.c_str() || !std::isfinite(v) || !(v > 0)) continue;
    if (m != "ttft" && m != "tpot" && m != "e2e") continue;
    r.push_back({m, v, std::nullopt, "bound " + svg::seconds(v)});
  }
  return r;
}

std::string latency_figure(const std::vector<LatencyCurve>& curves, const std::vector<LatencyBound>& bounds,
                           const std::string& caption_lead) {
  static const char* const kMetrics[][2] = {
      {"ttft", "Time to first token"}, {"tpot", "Time per output token"}, {"e2e", "End-to-end latency"}};
  static const char* const kPct[] = {"p50", "p90", "p95", "p99", "p999", "max"};
  std::vector<svg::XYPanel> panels;
  bool from_percentiles = false;
  for (const auto& m : kMetrics) {
    svg::XYPanel p;
    p.title = m[1];
    p.cls = std::string("cdf-") + m[0];
    p.x.label = "latency (log scale)";  // the ticks carry their unit (ms, s)
    p.x.kind = svg::ScaleKind::log;
    p.x.fmt = [](double v) { return svg::seconds_axis(v); };
    p.y.label = "requests within";
    p.y.kind = svg::ScaleKind::nines;
    bool any = false;
    for (const auto& c : curves) {
      const View lat = c.latency[m[0]];
      svg::Series s;
      s.name = c.name;
      s.color = c.color;
      s.dashed = c.dashed;
      const View cdf = lat["cdf"];
      if (cdf.size() >= 2) {
        for (const View& e : cdf.elements()) {
          const auto x = e[0].num(), f = e[1].num();
          if (x && f && *f >= 0 && *f <= 1) s.pts.push_back({*x, *f});
        }
        std::stable_sort(s.pts.begin(), s.pts.end(),
                         [](const svg::Point& a, const svg::Point& b) { return a.x < b.x; });
      }
      if (s.pts.size() < 2) {
        s.pts.clear();
        for (const char* k : kPct)
          if (const auto x = lat[k].num()) {
            s.pts.push_back({*x, *percentile_level(k)});
            s.tips.push_back(c.name + ": " + percentile_name(k) + " " + svg::seconds(*x));
          }
        if (s.pts.size() >= 2) from_percentiles = true;
      }
      if (s.pts.size() >= 2) {
        any = true;
        p.series.push_back(std::move(s));
      }
    }
    if (!any) continue;
    for (const auto& b : bounds)
      if (b.metric == m[0]) p.refs.push_back({true, b.limit, b.label, b.color, b.level});
    panels.push_back(std::move(p));
  }
  if (panels.empty()) return "";
  std::string cap = caption_lead +
                    " Each curve is the share of requests answered within a time. The vertical scale is linear up "
                    "to 50% and then stretches the tail, so that 90%, 99% and 99.9% sit evenly apart; time is "
                    "on a logarithmic scale.";
  if (from_percentiles)
    cap += " Curves are drawn through the reported percentiles (p50, p90, p95, p99, p99.9 and the maximum).";
  if (!bounds.empty()) cap += " Dashed lines are the bounds.";
  if (std::any_of(bounds.begin(), bounds.end(), [](const LatencyBound& b) { return b.level.has_value(); }))
    cap += " Where a bound is a percentile, a dot marks the corner the curve must pass to the left of.";
  return figure("latency-cdf", svg::xy_chart(panels, int(panels.size()), 300, "Latency distributions"), esc(cap));
}

namespace {

const char* const kStyle = R"css(
:root{--fg:#1f2937;--muted:#6b7280;--line:#e5e7eb;--accent:#4269d0}
*{box-sizing:border-box}
body{margin:0;font:15px/1.55 system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,sans-serif;color:var(--fg);background:#f4f5f7}
main{max-width:1100px;margin:0 auto;padding:32px 44px 40px;background:#fff;min-height:100vh}
header h1{font-size:26px;line-height:1.25;margin:0 0 6px;overflow-wrap:anywhere}
.meta{color:var(--muted);font-size:13px;margin:0;overflow-wrap:anywhere}
h2{font-size:19px;margin:38px 0 10px;padding-bottom:5px;border-bottom:1px solid var(--line)}
#summary p.lead{font-size:16.5px;margin:14px 0}
.kpis{display:grid;grid-template-columns:repeat(auto-fit,minmax(165px,1fr));gap:12px;margin:18px 0 6px;padding:0}
.kpi{border:1px solid var(--line);border-radius:8px;padding:10px 14px;background:#fcfcfd}
.kpi dt{font-size:11.5px;color:var(--muted);text-transform:uppercase;letter-spacing:.04em}
.kpi dd{margin:2px 0 0;font-size:21px;font-weight:650;font-variant-numeric:tabular-nums}
.kpi dd small{display:block;font-size:12px;font-weight:400;color:var(--muted)}
figure{margin:18px 0 26px}
figure svg.chart{width:100%;height:auto;display:block}
figcaption{font-size:13px;color:var(--muted);margin-top:8px}
svg.chart text{font-size:11px;fill:#4b5563}
svg.chart .ptitle{font-size:12.5px;font-weight:600;fill:#111827}
svg.chart .alabel{font-size:11.5px;fill:#374151}
svg.chart .rowlabel{font-size:12px;fill:#1f2937}
svg.chart .rowlabel.marked{font-weight:700}
svg.chart .value{fill:#111827}
svg.chart .legend{font-size:11.5px;fill:#374151}
svg.chart .rlabel{font-size:10.5px;font-weight:600}
svg.chart .hlabel{font-size:11.5px;font-weight:700;fill:#111827;paint-order:stroke;stroke:#fff;stroke-width:3px}
svg.chart .grid{stroke:#eceef1}
svg.chart .axis{stroke:#9ca3af}
svg.chart .sep{stroke:#d1d5db;stroke-dasharray:2 3}
svg.chart .markrow{fill:#fff4d6}
svg.chart .muted{fill:#9ca3af}
.tw{overflow-x:auto;margin:8px 0 22px}
table{border-collapse:collapse;width:100%;font-size:13.5px;font-variant-numeric:tabular-nums}
caption{text-align:left;font-weight:600;padding:6px 0;font-size:14px}
th,td{padding:5px 8px;border-bottom:1px solid var(--line);text-align:left;vertical-align:top}
td{white-space:nowrap}td:first-child{white-space:normal}
th{font-weight:600;background:#f7f8fa;border-bottom:1px solid #d1d5db;font-size:12.5px}
td.n,th.n{text-align:right}
tbody tr:nth-child(even){background:#fbfbfc}
tr.total td{font-weight:650;border-top:1px solid #9ca3af}
tr.marked td{background:#fff4d6}
.note{font-size:13px;color:var(--muted)}
.good{color:#067647;font-weight:600}.bad{color:#b42318;font-weight:600}
code{font:12.5px ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;background:#f3f4f6;padding:1px 4px;border-radius:3px;overflow-wrap:anywhere}
footer{margin-top:40px;font-size:12px;color:var(--muted);border-top:1px solid var(--line);padding-top:10px}
@media print{body{background:#fff;font-size:10.5pt}main{max-width:none;padding:0;min-height:0}
figure,.tw,.kpis{break-inside:avoid}.tw{overflow:visible}h2{break-after:avoid}.kpi{background:#fff}}
@page{margin:14mm}
)css";

}  // namespace

}  // namespace fleetsim::html

namespace fleetsim {

std::string html_report(const Json& doc) {
  const std::string kind = doc.is_object() && doc.contains("kind") && doc["kind"].is_string()
                               ? doc["kind"].get<std::string>()
                               : std::string();
  if (kind != "run" && kind != "sweep")
    throw InputError(Location{},
                     "expected a `fleetsim run` or `fleetsim sweep` JSON document (kind \"run\" or "
                     "\"sweep\")" +
                         (kind.empty() ? std::string() : ", got kind \"" + kind + "\""));
  const html::Page p = kind == "run" ? html::run_page(doc) : html::sweep_page(doc);
  std::string o;
  o += "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n";
  o += "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n";
  o += "<meta name=\"generator\" content=\"fleetsim report\">\n";
  o += "<title>" + html_escape(p.title) + "</title>\n<style>" + html::kStyle + "</style>\n</head>\n<body>\n<main>\n";
  o += "<header><h1>" + html_escape(p.title) + "</h1><p class=\"meta\">" + p.meta + "</p></header>\n";
  o += p.body;
  o += "\n<footer>Made by <code>fleetsim report</code> from a <code>fleetsim " + kind +
       "</code> document. Every figure is simulated, not measured: how far to trust it depends on the step-time "
       "model (see the notes above and docs/validation.md).</footer>\n</main>\n</body>\n</html>\n";
  return o;
}

}  // namespace fleetsim
