#include "report/svg.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "report/html.hpp"
#include "report/svg_internal.hpp"

namespace fleetsim::svg {

const char* const kPalette[10] = {"#4269d0", "#efb118", "#ff725c", "#6cc5b0", "#3ca951",
                                  "#ff8ab7", "#a463f2", "#97bbf5", "#9c6b4e", "#9498a0"};

using namespace parts;

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
    const std::string ttl = truncate(p.title, x1 - x0, 12.5);
    o += fmt::format("<text x=\"{}\" y=\"{}\" class=\"ptitle\">{}{}</text>", c(x0), c(py + 14),
                     ttl != p.title ? title_tag(p.title) : "", html_escape(ttl));
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
    // labels of several bound lines stack instead of printing over one another
    int top_labels = 0;
    std::vector<double> side_labels;
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
        const bool right = X + 6 + text_w(r.label, 10.5) < x1 || X - 6 - text_w(r.label, 10.5) < x0;
        o += text(right ? X + 5 : X - 5, r.level ? Yl + 14 : y0 + 12 + 13 * top_labels++, r.label,
                  fmt::format("class=\"rlabel\" fill=\"{}\"{}", r.color, right ? "" : " text-anchor=\"end\"")) +
             "</g>";
      } else {
        if (!sy.ok(r.at)) continue;
        const double Y = sy.px(r.at);
        double ly = Y - 4;
        for (bool moved = true; moved;) {  // above the line, and above any label already within 12 px
          moved = false;
          for (double u : side_labels)
            if (std::fabs(u - ly) < 12) ly = u - 12, moved = true;
        }
        side_labels.push_back(ly);
        o += "<g class=\"ref\">" + line(x0, Y, x1, Y, st) +
             text(x1 - 4, ly, r.label, fmt::format("class=\"rlabel\" fill=\"{}\" text-anchor=\"end\"", r.color)) +
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
    // a title wider than its panel is cut (its whole text on hover), not run into the next one's
    const std::string ttl = truncate(P.title, pw - 4, 12.5);
    o += fmt::format("<text x=\"{}\" y=\"{}\" class=\"ptitle\">{}{}</text>", c(px), c(y0 - 8),
                     ttl != P.title ? title_tag(P.title) : "", html_escape(ttl));
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
