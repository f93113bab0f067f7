// Chart primitives for the HTML report: number formats for people, axes, and inline SVG charts
// (horizontal bar charts and x/y panels). Every text passed in is escaped here (html_escape);
// a non-finite number is never drawn or printed.
#pragma once
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace fleetsim::svg {

// Numbers for people. A non-finite value prints as "–" (never "nan" or "inf").
std::string num(double v, int sig = 3);             // 3 significant digits, thousands separated
std::string usd(double v);                          // "$7.15", "$1,234.50", "$0.000253"
std::string seconds(double v);                      // "450 µs", "45 ms", "3.11 s", "12.5 min", "3.2 h"
std::string seconds_axis(double v);                 // the same in ms or s only, for tick labels
std::string percent(double fraction, int sig = 3);  // 0.0253 -> "2.53%"
std::string fixed(double v, int decimals);          // "1,255.60": figures that must multiply out as printed
std::string usd_rate(double v);                     // "$3.075": a price per hour, to tenths of a cent

using Format = std::function<std::string(double)>;

enum class ScaleKind {
  linear,
  log,    // base 10; non-positive values are not drawn
  nines,  // a cumulative fraction: 0-50% linear, then log10(1 - f), so 90%, 99%, 99.9% evenly apart
};

struct Axis {
  std::string label;  // with its unit, e.g. "p99 TTFT (s)"
  ScaleKind kind = ScaleKind::linear;
  Format fmt;                    // tick labels (default: num)
  std::optional<double> lo, hi;  // a fixed range; otherwise the data's, widened to round ticks
  bool zero = true;              // a linear axis starts at 0 when the data are all positive
};

struct Point {
  double x, y;
};

enum class Mark { line, area, dots, hollow, cross };

struct Series {
  std::string name;               // in the legend; "" keeps it out
  std::string color;              // any SVG colour
  std::vector<Point> pts;         // a non-finite point breaks a line
  std::vector<std::string> tips;  // per point hover text (optional)
  std::vector<double> floor;      // an area's lower edge per point (default: the x axis)
  Mark mark = Mark::line;
  bool dashed = false;
  double width = 2;
  std::string cls;  // class of the drawn line or marks, e.g. "frontier"
};

// A reference line (an SLO bound). With `level`, the bound is a percentile target: the line stops
// at that cumulative level and a dot marks the corner the curve must pass left of.
struct RefLine {
  bool vertical = true;
  double at = 0;
  std::string label;
  std::string color = "#b42318";
  std::optional<double> level;
};

struct Highlight {
  Point p;
  std::string label;
};

struct XYPanel {
  std::string title;
  Axis x, y;
  std::vector<Series> series;
  std::vector<RefLine> refs;
  std::vector<Highlight> highlights;
  std::string cls;  // class of the panel's <g>
};

// Panels in a grid of `cols` columns, one legend above them for every named series (by name).
std::string xy_chart(const std::vector<XYPanel>& panels, int cols, double panel_h, const std::string& title,
                     double width = 960);

struct BarSeries {
  std::string name;
  std::string color;
};

struct BarPanel {
  std::string title;                        // with the unit, e.g. "USD per 1M output tokens"
  Format fmt;                               // value labels and ticks (default: num)
  std::vector<std::vector<double>> values;  // [row][series]: stacked; a non-finite or absent value draws nothing
  std::vector<std::string> tips;            // per row hover text (optional)
  std::string cls;                          // class of the panel's <g>
};

// Horizontal bars: one row per label, the labels shared by every panel (side by side), each
// panel on its own scale from 0; a bar is a <g class="bar"> of its stacked segments, its total
// printed at its end. Rows in `marked` are drawn bold with a marker; a change of `groups` between
// rows draws a separator.
struct BarChart {
  std::vector<std::string> rows;
  std::vector<bool> marked;
  std::vector<std::string> groups;
  std::vector<BarSeries> series;  // a legend when there is more than one
  std::vector<BarPanel> panels;
};

std::string bar_chart(const BarChart& c, const std::string& title, double width = 960);

// Palette (Observable's, readable on white and in print) and the colour of series i.
extern const char* const kPalette[10];
inline const char* color(size_t i) { return kPalette[i % 10]; }

}  // namespace fleetsim::svg
