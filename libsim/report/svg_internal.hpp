// Internal to the chart files (svg_numbers.cpp, svg_parts.cpp, svg.cpp): the shared drawing pieces.
#pragma once
#include <string>
#include <vector>

#include "report/svg.hpp"

namespace fleetsim::svg {

extern const std::string kDash;  // en dash: a value that is not there

namespace parts {

std::string group_thousands(std::string s);
std::string strip_zeros(std::string s);

// svg_parts.cpp
std::string c(double v);  // a coordinate: one decimal is finer than a pixel
double text_w(const std::string& s, double font);
std::string truncate(const std::string& s, double max_w, double font);
std::string text(double x, double y, const std::string& s, const std::string& attrs = "");
std::string line(double x0, double y0, double x1, double y1, const std::string& attrs);
std::string title_tag(const std::string& tip);
double nice_step(double x);

// The nines scale: 0..50% linear over 1.5 units (the body of the distribution), then one unit per
// nine (90%, 99%, 99.9%); F = 1 (the maximum) is drawn at 99.99%.
constexpr double kBody = 1.5;
constexpr double kHalf = 0.30103;  // -log10(0.5)
constexpr double kNinesTop = kBody + 4 - kHalf;
double nines_t(double f);

struct Scale {
  ScaleKind kind = ScaleKind::linear;
  double lo = 0, hi = 1;  // transformed
  double p0 = 0, p1 = 1;  // pixels
  std::vector<double> ticks;
  double t(double v) const {
    if (kind == ScaleKind::log) return std::log10(v);
    if (kind == ScaleKind::nines) return nines_t(v);
    return v;
  }
  bool ok(double v) const { return std::isfinite(v) && (kind != ScaleKind::log || v > 0); }
  double px(double v) const {
    const double u = std::clamp((t(v) - lo) / (hi - lo), -0.02, 1.02);
    return p0 + u * (p1 - p0);
  }
};

// `gap`: the fewest pixels between ticks, so that their labels do not collide.
Scale make_scale(const Axis& a, const std::vector<double>& data, double p0, double p1, double gap);
std::string tick_label(const Axis& a, double v);

struct LegendItem {
  std::string name, color;
  Mark mark;
  bool dashed;
};

// Items left to right, wrapping; returns the height used.
double legend(std::string& o, const std::vector<LegendItem>& items, double x, double y, double width);
std::string svg_open(double w, double h, const std::string& title);

}  // namespace parts
}  // namespace fleetsim::svg
