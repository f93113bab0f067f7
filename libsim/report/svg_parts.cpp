// The pieces every chart is drawn from: coordinates, text and lines, axes and their ticks (linear,
// log and the nines scale), legends and the <svg> element.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "report/html.hpp"
#include "report/svg_internal.hpp"

namespace fleetsim::svg::parts {

// A coordinate: one decimal is finer than a pixel.
std::string c(double v) { return std::isfinite(v) ? strip_zeros(fmt::format("{:.1f}", v)) : "0"; }

double text_w(const std::string& s, double font) {
  size_t n = 0;
  for (unsigned char ch : s) n += (ch & 0xC0) != 0x80;  // UTF-8 characters, not bytes
  return double(n) * font * 0.58;
}

std::string truncate(const std::string& s, double max_w, double font) {
  if (text_w(s, font) <= max_w) return s;
  std::string t = s;
  while (!t.empty() && text_w(t, font) + font > max_w) {
    t.pop_back();
    while (!t.empty() && (static_cast<unsigned char>(t.back()) & 0xC0) == 0x80) t.pop_back();
    if (!t.empty() && (static_cast<unsigned char>(t.back()) & 0xC0) == 0xC0) t.pop_back();
  }
  return t + "\xe2\x80\xa6";
}

std::string text(double x, double y, const std::string& s, const std::string& attrs) {
  return fmt::format("<text x=\"{}\" y=\"{}\"{}>{}</text>", c(x), c(y), attrs.empty() ? "" : " " + attrs,
                     html_escape(s));
}

std::string line(double x0, double y0, double x1, double y1, const std::string& attrs) {
  return fmt::format("<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" {}/>", c(x0), c(y0), c(x1), c(y1), attrs);
}

std::string title_tag(const std::string& tip) { return tip.empty() ? "" : "<title>" + html_escape(tip) + "</title>"; }

double nice_step(double x) {
  if (!(x > 0) || !std::isfinite(x)) return 1;
  const double p = std::pow(10.0, std::floor(std::log10(x)));
  const double m = x / p;
  return (m < 1.5 ? 1 : m < 3 ? 2 : m < 7 ? 5 : 10) * p;
}

double nines_t(double f) {
  if (f <= 0.5) return 2 * kBody * std::max(f, 0.0);
  return kBody + std::min(4.0, -std::log10(std::max(1.0 - f, 1e-4))) - kHalf;
}

// `gap`: the fewest pixels between ticks, so that their labels do not collide.
Scale make_scale(const Axis& a, const std::vector<double>& data, double p0, double p1, double gap) {
  Scale s;
  s.kind = a.kind;
  s.p0 = p0;
  s.p1 = p1;
  std::vector<double> v;
  for (double x : data)
    if (s.ok(x)) v.push_back(x);
  double lo = a.lo && s.ok(*a.lo) ? *a.lo
              : v.empty()         ? (a.kind == ScaleKind::log ? 1 : 0)
                                  : *std::min_element(v.begin(), v.end());
  double hi = a.hi && s.ok(*a.hi) ? *a.hi
              : v.empty()         ? (a.kind == ScaleKind::log ? 10 : 1)
                                  : *std::max_element(v.begin(), v.end());
  if (hi < lo) std::swap(lo, hi);
  if (a.kind == ScaleKind::nines) {
    static const double kTicks[] = {0, 0.25, 0.5, 0.9, 0.99, 0.999, 0.9999};
    double start = 0;
    for (double t : kTicks)
      if (t <= lo) start = t;
    if (a.lo) start = *a.lo;
    for (double t : kTicks)
      if (t >= start) s.ticks.push_back(t);
    s.lo = s.t(start);
    s.hi = kNinesTop;
    return s;
  }
  if (a.kind == ScaleKind::log) {
    if (hi <= lo) lo /= 2, hi *= 2;
    double e0 = std::floor(std::log10(lo)), e1 = std::ceil(std::log10(hi));
    if (e1 <= e0) e1 = e0 + 1;
    // a short range ends on 1-2-5 values; whole decades otherwise
    const bool fine = e1 - e0 <= 2;
    std::vector<double> ends;
    for (double e = e0; e <= e1; ++e)
      for (double m : {1.0, 2.0, 5.0})
        if (m == 1.0 || fine) ends.push_back(m * std::pow(10.0, e));
    if (!a.lo) {
      double l = ends.front();
      for (double t : ends)
        if (t <= lo * (1 + 1e-9)) l = t;
      lo = l;
    }
    if (!a.hi) {
      double h = ends.back();
      for (auto it = ends.rbegin(); it != ends.rend(); ++it)
        if (*it >= hi * (1 - 1e-9)) h = *it;
      hi = h;
    }
    // ticks: the densest of 1-2-5, 1-3 and decades whose labels have room
    const double decades = std::log10(hi) - std::log10(lo);
    for (const auto& ms : std::vector<std::vector<double>>{{1, 2, 5}, {1, 3}, {1}}) {
      std::vector<double> t;
      for (double e = e0; e <= e1; ++e)
        for (double m : ms) {
          const double v = m * std::pow(10.0, e);
          if (v >= lo * (1 - 1e-9) && v <= hi * (1 + 1e-9)) t.push_back(v);
        }
      const double step_px = std::fabs(p1 - p0) * (decades > 0 ? 1 / decades : 1) / double(ms.size());
      s.ticks = t;
      if (step_px >= gap * 0.8 && t.size() >= 2) break;
    }
    s.lo = std::log10(lo);
    s.hi = std::log10(hi);
    return s;
  }
  if (a.zero && !a.lo && lo > 0) lo = 0;
  if (a.zero && !a.hi && hi < 0) hi = 0;
  if (hi - lo <= 0) hi = lo + (lo == 0 ? 1 : std::fabs(lo) * 0.1);
  const double lo0 = lo, hi0 = hi;
  double step = nice_step((hi - lo) / std::clamp(std::floor(std::fabs(p1 - p0) / gap), 2.0, 8.0));
  // a horizontal axis widens its step until its widest tick label fits between two ticks ("$100.00"
  // at 11 px needs more than the usual gap), so labels never run into each other
  for (int widen = 0;; ++widen) {
    lo = lo0;
    hi = hi0;
    if (!a.lo) lo = std::floor(lo / step + 1e-9) * step;
    if (!a.hi) hi = std::ceil(hi / step - 1e-9) * step;
    s.ticks.clear();
    // each tick a whole multiple of the step, not a sum of steps (0.1 added ten times is 0.9999999)
    const double k0 = std::ceil(lo / step - 1e-9);
    for (int i = 0; s.ticks.size() < 20; ++i) {
      const double t = (k0 + i) * step;
      if (t > hi + step * 1e-6) break;
      s.ticks.push_back(std::fabs(t) < step * 1e-9 ? 0 : t);
    }
    if (p1 <= p0 || s.ticks.size() < 3 || widen == 8) break;
    double widest = 0;
    for (double t : s.ticks) widest = std::max(widest, text_w(tick_label(a, t), 11));
    if (widest + 8 <= (p1 - p0) * step / (hi - lo)) break;
    step = nice_step(step * 1.5);
  }
  s.lo = lo;
  s.hi = hi;
  return s;
}

std::string tick_label(const Axis& a, double v) {
  if (a.kind == ScaleKind::nines) return v >= 0.9999 ? "max" : percent(v, 4);
  return a.fmt ? a.fmt(v) : num(v);
}

// Items left to right, wrapping; returns the height used.
double legend(std::string& o, const std::vector<LegendItem>& items, double x, double y, double width) {
  if (items.empty()) return 0;
  double cx = x, cy = y + 10;
  for (const auto& it : items) {
    const double w = 24 + text_w(it.name, 11) + 18;
    if (cx + w > x + width && cx > x) cx = x, cy += 18;
    if (it.mark == Mark::line || it.mark == Mark::area)
      o += line(cx, cy, cx + 18, cy,
                fmt::format("stroke=\"{}\" stroke-width=\"{}\"{}", it.color, it.mark == Mark::area ? 8 : 2.5,
                            it.dashed ? " stroke-dasharray=\"5 3\"" : ""));
    else if (it.mark == Mark::cross)
      o += line(cx + 5, cy - 4, cx + 13, cy + 4, fmt::format("stroke=\"{}\" stroke-width=\"2\"", it.color)) +
           line(cx + 5, cy + 4, cx + 13, cy - 4, fmt::format("stroke=\"{}\" stroke-width=\"2\"", it.color));
    else
      o += fmt::format("<circle cx=\"{}\" cy=\"{}\" r=\"4\" fill=\"{}\" stroke=\"{}\" stroke-width=\"1.5\"/>",
                       c(cx + 9), c(cy), it.mark == Mark::hollow ? "#fff" : it.color, it.color);
    o += text(cx + 24, cy + 4, it.name, "class=\"legend\"");
    cx += w;
  }
  return cy - y + 12;
}

std::string svg_open(double w, double h, const std::string& title) {
  return fmt::format(
      "<svg class=\"chart\" viewBox=\"0 0 {} {}\" width=\"{}\" height=\"{}\" "
      "role=\"img\" aria-label=\"{}\"><title>{}</title>",
      c(w), c(h), c(w), c(h), html_escape(title), html_escape(title));
}

}  // namespace fleetsim::svg::parts
