#include "svg.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "report_html.hpp"

namespace fleetsim {

std::string html_escape(const std::string& s) {
  std::string o;
  o.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&':
        o += "&amp;";
        break;
      case '<':
        o += "&lt;";
        break;
      case '>':
        o += "&gt;";
        break;
      case '"':
        o += "&quot;";
        break;
      case '\'':
        o += "&#39;";
        break;
      default:
        o += c;
    }
  }
  return o;
}

}  // namespace fleetsim

namespace fleetsim::svg {

const char* const kPalette[10] = {"#4269d0", "#efb118", "#ff725c", "#6cc5b0", "#3ca951",
                                  "#ff8ab7", "#a463f2", "#97bbf5", "#9c6b4e", "#9498a0"};

namespace {

const std::string kDash = "\xe2\x80\x93";  // en dash: a value that is not there

std::string group_thousands(std::string s) {
  const size_t start = !s.empty() && s[0] == '-' ? 1 : 0;
  const size_t dot = std::min(s.find('.'), s.size());
  for (size_t i = dot; i > start + 3; i -= 3) s.insert(i - 3, ",");
  return s;
}

std::string strip_zeros(std::string s) {
  if (s.find('.') == std::string::npos) return s;
  while (s.back() == '0') s.pop_back();
  if (s.back() == '.') s.pop_back();
  return s == "-0" ? "0" : s;
}

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

std::string text(double x, double y, const std::string& s, const std::string& attrs = "") {
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

// The nines scale: 0..50% linear over 1.5 units (the body of the distribution), then one unit per
// nine (90%, 99%, 99.9%); F = 1 (the maximum) is drawn at 99.99%.
constexpr double kBody = 1.5;
constexpr double kHalf = 0.30103;  // -log10(0.5)
constexpr double kNinesTop = kBody + 4 - kHalf;
double nines_t(double f) {
  if (f <= 0.5) return 2 * kBody * std::max(f, 0.0);
  return kBody + std::min(4.0, -std::log10(std::max(1.0 - f, 1e-4))) - kHalf;
}

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
  const double step = nice_step((hi - lo) / std::clamp(std::floor(std::fabs(p1 - p0) / gap), 2.0, 8.0));
  if (!a.lo) lo = std::floor(lo / step + 1e-9) * step;
  if (!a.hi) hi = std::ceil(hi / step - 1e-9) * step;
  for (double t = std::ceil(lo / step - 1e-9) * step; t <= hi + step * 1e-6 && s.ticks.size() < 20; t += step)
    s.ticks.push_back(std::fabs(t) < step * 1e-9 ? 0 : t);
  s.lo = lo;
  s.hi = hi;
  return s;
}

std::string tick_label(const Axis& a, double v) {
  if (a.kind == ScaleKind::nines) return v >= 0.9999 ? "max" : percent(v, 4);
  return a.fmt ? a.fmt(v) : num(v);
}

struct LegendItem {
  std::string name, color;
  Mark mark;
  bool dashed;
};

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

}  // namespace

std::string num(double v, int sig) {
  if (!std::isfinite(v)) return kDash;
  if (v == 0) return "0";
  const double a = std::fabs(v);
  if (a >= 1e15 || a < 1e-6) return fmt::format("{:.{}g}", v, sig);
  const int decimals = std::max(0, sig - 1 - int(std::floor(std::log10(a))));
  return group_thousands(strip_zeros(fmt::format("{:.{}f}", v, decimals)));
}

std::string usd(double v) {
  if (!std::isfinite(v)) return kDash;
  const std::string sign = v < 0 ? "-$" : "$";
  const double a = std::fabs(v);
  if (a == 0) return "$0";
  if (a >= 1e5) return sign + group_thousands(fmt::format("{:.0f}", a));
  if (a >= 1) return sign + group_thousands(fmt::format("{:.2f}", a));
  std::string s = num(a, 3);
  const size_t dot = s.find('.');
  if (dot == std::string::npos || s.size() - dot - 1 < 2) s = fmt::format("{:.2f}", a);  // cents: $0.50
  return sign + s;
}

std::string seconds(double v) {
  if (!std::isfinite(v)) return kDash;
  const double a = std::fabs(v);
  if (a == 0) return "0 s";
  if (a < 1e-3) return num(v * 1e6) + " \xc2\xb5s";
  if (a < 1) return num(v * 1e3) + " ms";
  if (a < 120) return num(v) + " s";
  if (a < 7200) return num(v / 60) + " min";
  return num(v / 3600) + " h";
}

std::string seconds_axis(double v) {
  if (!std::isfinite(v)) return kDash;
  const double a = std::fabs(v);
  if (a == 0) return "0";
  if (a < 1e-3) return num(v * 1e6) + " \xc2\xb5s";
  if (a < 1) return num(v * 1e3) + " ms";
  return num(v) + " s";
}

std::string percent(double fraction, int sig) {
  if (!std::isfinite(fraction)) return kDash;
  return num(100 * fraction, sig) + "%";
}

std::string xy_chart(const std::vector<XYPanel>& panels, int cols, double panel_h, const std::string& title,
                     double width) {
  cols = std::max(1, std::min(cols, int(panels.size())));
  std::vector<LegendItem> items;
  for (const auto& p : panels) {
    for (const auto& s : p.series) {
      if (s.name.empty()) continue;
      if (std::none_of(items.begin(), items.end(), [&](const LegendItem& i) { return i.name == s.name; }))
        items.push_back({s.name, s.color, s.mark, s.dashed});
    }
  }
  std::string body;
  const double lh = legend(body, items, 8, 4, width - 16);
  const double top = lh > 0 ? lh + 10 : 4;
  const double gap = 28, ml = 62, mr = 16, mt = 24, mb = 42;
  const double pw = (width - (cols - 1) * gap) / cols;
  const int nrows = (int(panels.size()) + cols - 1) / cols;
  const double height = top + nrows * (panel_h + 12);
  for (size_t i = 0; i < panels.size(); ++i) {
    const XYPanel& p = panels[i];
    const double px = double(i % size_t(cols)) * (pw + gap), py = top + double(i / size_t(cols)) * (panel_h + 12);
    const double x0 = px + ml, x1 = px + pw - mr, y0 = py + mt, y1 = py + panel_h - mb;
    std::vector<double> xs, ys;
    for (const auto& s : p.series)
      for (const auto& q : s.pts) xs.push_back(q.x), ys.push_back(q.y);
    for (const auto& r : p.refs) {
      (r.vertical ? xs : ys).push_back(r.at);
      if (r.level) ys.push_back(*r.level);
    }
    const Scale sx = make_scale(p.x, xs, x0, x1, 70), sy = make_scale(p.y, ys, y1, y0, 40);
    std::string o = fmt::format("<g class=\"panel{}\">", p.cls.empty() ? "" : " " + html_escape(p.cls));
    o += text(x0, py + 14, p.title, "class=\"ptitle\"");
    for (double t : sx.ticks) {
      o += line(sx.px(t), y0, sx.px(t), y1, "class=\"grid\"");
      // kept inside the panel: the last label of a wide axis would run off its edge
      const std::string lab = tick_label(p.x, t);
      const double half = text_w(lab, 11) / 2;
      o += text(std::clamp(sx.px(t), px + half, px + pw - half), y1 + 15, lab, "text-anchor=\"middle\"");
    }
    for (double t : sy.ticks) {
      o += line(x0, sy.px(t), x1, sy.px(t), "class=\"grid\"");
      o += text(x0 - 6, sy.px(t) + 4, tick_label(p.y, t), "text-anchor=\"end\"");
    }
    o += line(x0, y1, x1, y1, "class=\"axis\"") + line(x0, y0, x0, y1, "class=\"axis\"");
    o += text((x0 + x1) / 2, y1 + 33, p.x.label, "text-anchor=\"middle\" class=\"alabel\"");
    o += fmt::format(
        "<text transform=\"translate({} {}) rotate(-90)\" text-anchor=\"middle\" class=\"alabel\">{}</text>",
        c(px + 12), c((y0 + y1) / 2), html_escape(p.y.label));
    for (const auto& s : p.series) {
      const std::string cls = s.cls.empty() ? "" : " class=\"" + html_escape(s.cls) + "\"";
      const std::string dash = s.dashed ? " stroke-dasharray=\"6 4\"" : "";
      auto tip = [&](size_t k) { return k < s.tips.size() ? title_tag(s.tips[k]) : std::string(); };
      if (s.mark == Mark::line || s.mark == Mark::area) {
        // runs of drawable points; each keeps its points' indices for an area's lower edge
        std::vector<std::vector<size_t>> runs(1);
        for (size_t k = 0; k < s.pts.size(); ++k) {
          const Point& q = s.pts[k];
          if (sx.ok(q.x) && sy.ok(q.y))
            runs.back().push_back(k);
          else if (!runs.back().empty())
            runs.emplace_back();
        }
        const double base = sy.kind == ScaleKind::linear ? sy.px(std::max(sy.lo, 0.0)) : y1;
        for (const auto& run : runs) {
          if (run.empty()) continue;
          std::string pts;
          for (size_t k : run) pts += (pts.empty() ? "" : " ") + c(sx.px(s.pts[k].x)) + "," + c(sy.px(s.pts[k].y));
          if (s.mark == Mark::area) {
            std::string under;
            for (auto it = run.rbegin(); it != run.rend(); ++it) {
              const double f = *it < s.floor.size() && sy.ok(s.floor[*it]) ? sy.px(s.floor[*it]) : base;
              under += " " + c(sx.px(s.pts[*it].x)) + "," + c(f);
            }
            o += fmt::format("<polygon points=\"{}{}\" fill=\"{}\" fill-opacity=\"0.35\" stroke=\"none\"/>", pts, under,
                             s.color);
          }
          o += fmt::format(
              "<polyline{} points=\"{}\" fill=\"none\" stroke=\"{}\" stroke-width=\"{}\" "
              "stroke-linejoin=\"round\"{}/>",
              cls, pts, s.color, c(s.width), dash);
        }
        continue;
      }
      o += "<g" + cls + ">";
      for (size_t k = 0; k < s.pts.size(); ++k) {
        const Point& q = s.pts[k];
        if (!sx.ok(q.x) || !sy.ok(q.y)) continue;
        const double X = sx.px(q.x), Y = sy.px(q.y);
        if (s.mark == Mark::cross)
          o += fmt::format("<g stroke=\"{}\" stroke-width=\"1.6\">{}{}{}</g>", s.color, tip(k),
                           line(X - 3.5, Y - 3.5, X + 3.5, Y + 3.5, ""), line(X - 3.5, Y + 3.5, X + 3.5, Y - 3.5, ""));
        else
          o += fmt::format(
              "<circle cx=\"{}\" cy=\"{}\" r=\"4\" fill=\"{}\" stroke=\"{}\" stroke-width=\"1.5\">{}</circle>", c(X),
              c(Y), s.mark == Mark::hollow ? "#fff" : s.color, s.color, tip(k));
      }
      o += "</g>";
    }
    for (const auto& r : p.refs) {
      const std::string st = fmt::format("stroke=\"{}\" stroke-width=\"1.5\" stroke-dasharray=\"5 4\"", r.color);
      if (r.vertical) {
        if (!sx.ok(r.at)) continue;
        const double X = sx.px(r.at);
        const double Yl = r.level && sy.ok(*r.level) ? sy.px(*r.level) : y0;
        o += "<g class=\"ref\">" + line(X, y1, X, Yl, st);
        if (r.level && sy.ok(*r.level))
          o += line(x0, Yl, X, Yl, st) +
               fmt::format("<circle cx=\"{}\" cy=\"{}\" r=\"3.5\" fill=\"{}\"/>", c(X), c(Yl), r.color);
        // the label inside the plot, beside the line, on the side with room
        const bool right = X + 6 + text_w(r.label, 10.5) < x1;
        o += text(right ? X + 5 : X - 5, r.level ? Yl + 14 : y0 + 12, r.label,
                  fmt::format("class=\"rlabel\" fill=\"{}\"{}", r.color, right ? "" : " text-anchor=\"end\"")) +
             "</g>";
      } else {
        if (!sy.ok(r.at)) continue;
        const double Y = sy.px(r.at);
        o += "<g class=\"ref\">" + line(x0, Y, x1, Y, st) +
             text(x1 - 4, Y - 4, r.label, fmt::format("class=\"rlabel\" fill=\"{}\" text-anchor=\"end\"", r.color)) +
             "</g>";
      }
    }
    for (const auto& h : p.highlights) {
      if (!sx.ok(h.p.x) || !sy.ok(h.p.y)) continue;
      const double X = sx.px(h.p.x), Y = sy.px(h.p.y);
      const bool left = X + 14 + text_w(h.label, 11) > x1;
      o += fmt::format(
          "<g class=\"highlight\"><circle cx=\"{}\" cy=\"{}\" r=\"9\" fill=\"none\" stroke=\"#111\" "
          "stroke-width=\"2\"/>{}</g>",
          c(X), c(Y),
          text(left ? X - 13 : X + 13, Y - 10, h.label,
               std::string("class=\"hlabel\"") + (left ? " text-anchor=\"end\"" : "")));
    }
    body += o + "</g>";
  }
  return svg_open(width, height, title) + body + "</svg>";
}

std::string bar_chart(const BarChart& ch, const std::string& title, double width) {
  const size_t n = ch.rows.size();
  double lw = 80;
  for (size_t i = 0; i < n; ++i)
    lw = std::max(lw, text_w(ch.rows[i], i < ch.marked.size() && ch.marked[i] ? 13 : 12.5) + 20);
  lw = std::min(lw, width * 0.36);
  std::string o;
  std::vector<LegendItem> items;
  if (ch.series.size() > 1)
    for (const auto& s : ch.series) items.push_back({s.name, s.color, Mark::area, false});
  const double lh = legend(o, items, lw, 4, width - lw);
  const double rh = 22, bh = 14, gap = 28;
  const double y0 = (lh > 0 ? lh + 10 : 0) + 24;
  const double height = y0 + double(n) * rh + 26;
  const size_t k = std::max<size_t>(1, ch.panels.size());
  const double pw = (width - lw - double(k - 1) * gap) / double(k);
  for (size_t i = 0; i < n; ++i) {
    const bool mark = i < ch.marked.size() && ch.marked[i];
    const double y = y0 + double(i) * rh;
    if (mark)
      o += fmt::format("<rect x=\"0\" y=\"{}\" width=\"{}\" height=\"{}\" class=\"markrow\"/>", c(y), c(width), c(rh));
    if (i > 0 && i < ch.groups.size() && ch.groups[i] != ch.groups[i - 1]) o += line(0, y, width, y, "class=\"sep\"");
    const std::string lab = truncate(ch.rows[i], lw - 14, mark ? 13 : 12.5);
    o += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"end\" class=\"rowlabel{}\">{}{}</text>", c(lw - 10),
                     c(y + rh / 2 + 4), mark ? " marked" : "", lab != ch.rows[i] ? title_tag(ch.rows[i]) : "",
                     html_escape(lab));
  }
  for (size_t p = 0; p < ch.panels.size(); ++p) {
    const BarPanel& P = ch.panels[p];
    const Format f = P.fmt ? P.fmt : Format([](double v) { return num(v); });
    const double px = lw + double(p) * (pw + gap), x1 = px + pw - 64;  // room for the value label
    std::vector<double> totals(n, 0);
    for (size_t i = 0; i < n && i < P.values.size(); ++i)
      for (double v : P.values[i])
        if (std::isfinite(v) && v > 0) totals[i] += v;
    Axis ax;
    ax.fmt = f;
    const Scale s = make_scale(ax, totals, px, x1, 72);
    o += fmt::format("<g class=\"panel{}\">", P.cls.empty() ? "" : " " + html_escape(P.cls));
    o += text(px, y0 - 8, P.title, "class=\"ptitle\"");
    for (double t : s.ticks) {
      o += line(s.px(t), y0, s.px(t), y0 + double(n) * rh, "class=\"grid\"");
      o += text(s.px(t), y0 + double(n) * rh + 15, f(t), "text-anchor=\"middle\"");
    }
    o += line(px, y0, px, y0 + double(n) * rh, "class=\"axis\"");
    for (size_t i = 0; i < n; ++i) {
      const double y = y0 + double(i) * rh + (rh - bh) / 2;
      const std::vector<double> none;
      const auto& vals = i < P.values.size() ? P.values[i] : none;
      bool any = false;
      for (double v : vals) any = any || std::isfinite(v);
      if (!any) {
        o += text(px + 6, y + bh - 3, kDash, "class=\"muted\"");
        continue;
      }
      const std::string tip = i < P.tips.size() ? P.tips[i] : ch.rows[i] + ": " + f(totals[i]);
      o += "<g class=\"bar\">" + title_tag(tip);
      double acc = 0;
      for (size_t j = 0; j < vals.size(); ++j) {
        if (!std::isfinite(vals[j]) || vals[j] <= 0) continue;
        const double a = s.px(acc), b = s.px(acc + vals[j]);
        const std::string col = j < ch.series.size() ? ch.series[j].color : color(0);
        o += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\"/>", c(a), c(y),
                         c(std::max(b - a, 0.0)), c(bh), col);
        acc += vals[j];
      }
      o += text(s.px(acc) + 5, y + bh - 3, f(totals[i]), "class=\"value\"") + "</g>";
    }
    o += "</g>";
  }
  return svg_open(width, height, title) + o + "</svg>";
}

}  // namespace fleetsim::svg
