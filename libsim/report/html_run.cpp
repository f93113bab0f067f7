// The HTML report of a `fleetsim run` document: summary, cost per token, ledger, latency, timeline.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <iterator>
#include <limits>

#include "report/html_internal.hpp"
#include "report/report.hpp"

namespace fleetsim::html {

namespace {

struct BucketStyle {
  std::string key, label, color;
  bool idle = false;  // counted in the idle share of the spend (as the ledger's idle_usd)
};

const BucketStyle kBuckets[] = {
    {"busy_prefill", "busy: prefill", "#2f4f8f", false},
    {"busy_decode", "busy: decode", "#5b8def", false},
    {"busy", "busy", "#4269d0", false},
    {"lost_work", "lost work", "#c2410c", false},
    {"cold_start", "cold start", "#efb118", true},
    {"idle_headroom", "idle: headroom", "#6cc5b0", true},
    {"idle_waste", "idle: waste", "#ff8a8a", true},
    {"committed_unused", "committed or owned, unused", "#a463f2", true},
    {"stranded", "stranded on whole nodes", "#9c6b30", true},
};

BucketStyle bucket_of(const std::string& key, size_t unknown_index) {
  for (const auto& b : kBuckets)
    if (b.key == key) return b;
  std::string label = key;
  std::replace(label.begin(), label.end(), '_', ' ');
  return {key, label, svg::color(6 + unknown_index), label.rfind("idle", 0) == 0};
}

size_t bucket_rank(const std::string& key) {
  for (size_t i = 0; i < std::size(kBuckets); ++i)
    if (kBuckets[i].key == key) return i;
  return std::size(kBuckets);
}

struct LedgerRow {
  std::string name;
  std::vector<double> hours, usd;  // per bucket; NaN where absent
};

// The ledger block, or (without one) busy / cold start / idle estimated from the utilization
// fractions and the cost of each pool and of the fleet.
struct LedgerView {
  bool derived = false;
  std::vector<BucketStyle> buckets;
  std::vector<LedgerRow> rows;  // each pool, then the total
  const LedgerRow* total() const { return rows.empty() ? nullptr : &rows.back(); }
};

double sum(const std::vector<double>& v) {
  double s = 0;
  for (double x : v)
    if (std::isfinite(x)) s += x;
  return s;
}

LedgerView read_ledger(const View& d, const std::string& total_name) {
  LedgerView L;
  const View led = d["ledger"];
  if (led["buckets"].is_object() && led["buckets"].size() > 0) {
    std::vector<std::string> keys;
    auto collect = [&](const View& b) {
      for (const auto& [k, v] : b.items())
        if (v.is_object() && std::find(keys.begin(), keys.end(), k) == keys.end()) keys.push_back(k);
    };
    collect(led["buckets"]);
    for (const auto& [name, p] : led["pools"].items()) collect(p["buckets"]);
    std::stable_sort(keys.begin(), keys.end(),
                     [](const std::string& a, const std::string& b) { return bucket_rank(a) < bucket_rank(b); });
    size_t unknown = 0;
    for (const auto& k : keys) L.buckets.push_back(bucket_of(k, bucket_rank(k) == std::size(kBuckets) ? unknown++ : 0));
    auto row = [&](const std::string& name, const View& b) {
      LedgerRow r{name, {}, {}};
      for (const auto& k : L.buckets) {
        r.hours.push_back(b[k.key]["device_hours"].num_or(kNaN));
        r.usd.push_back(b[k.key]["usd"].num_or(kNaN));
      }
      return r;
    };
    for (const auto& [name, p] : led["pools"].items())
      if (p["buckets"].is_object()) L.rows.push_back(row(name, p["buckets"]));
    L.rows.push_back(row(total_name, led["buckets"]));
    return L;
  }
  L.derived = true;
  static const char* const kDerived[][2] = {{"busy", "busy_fraction"},
                                            {"cold_start", "cold_start_fraction"},
                                            {"idle_headroom", "idle_headroom_fraction"},
                                            {"idle_waste", "idle_waste_fraction"}};
  for (const auto& k : kDerived) L.buckets.push_back(bucket_of(k[0], 0));
  auto row = [&](const std::string& name, const View& sec, LedgerRow& r) {
    const double h = sec["cost"]["device_hours"].num_or(kNaN), u = sec["cost"]["total_usd"].num_or(kNaN);
    bool any = false;
    r.name = name;
    for (const auto& k : kDerived) {
      const double f = sec["utilization"][k[1]].num_or(kNaN);
      any = any || (std::isfinite(f) && (std::isfinite(h) || std::isfinite(u)));
      r.hours.push_back(f * h);
      r.usd.push_back(f * u);
    }
    return any;
  };
  for (const auto& [name, p] : d["pools"].items()) {
    LedgerRow r;
    if (row(name, p, r)) L.rows.push_back(r);
  }
  LedgerRow t;
  if (row(total_name, d, t))
    L.rows.push_back(t);
  else
    L.rows.clear();
  return L;
}

std::string ledger_section(const View& d, const LedgerView& L) {
  if (!L.total()) return note("No ledger and no utilization in this report: nothing to split the cost by.");
  svg::BarChart ch;
  for (const auto& r : L.rows) ch.rows.push_back(r.name);
  for (const auto& b : L.buckets) ch.series.push_back({b.label, b.color});
  ch.groups.assign(L.rows.size(), "pool");
  ch.groups.back() = "total";
  ch.marked.assign(L.rows.size(), false);
  ch.marked.back() = true;
  svg::BarPanel usd{"USD", [](double v) { return svg::usd(v); }, {}, {}, "ledger-usd"};
  svg::BarPanel hours{"Device-hours", [](double v) { return svg::num(v); }, {}, {}, "ledger-hours"};
  for (const auto& r : L.rows) {
    usd.values.push_back(r.usd);
    hours.values.push_back(r.hours);
    std::string tip = r.name + ":";
    for (size_t i = 0; i < L.buckets.size(); ++i)
      if (std::isfinite(r.usd[i]) && r.usd[i] > 0) tip += "\n" + L.buckets[i].label + " " + svg::usd(r.usd[i]);
    usd.tips.push_back(tip);
  }
  ch.panels = {usd, hours};
  std::string cap =
      "Where the money goes: each bar splits the billed device time of a pool, and of the whole fleet (last), into "
      "busy time (prefill and decode), work thrown away (preempted, or lost with a replica), cold starts, idle "
      "time within the chosen headroom, idle time beyond it (waste), committed capacity left unused, and devices "
      "stranded on whole nodes no replica can use.";
  if (L.derived)
    cap += " This report has no ledger block: the split is estimated from the utilization fractions and the cost.";
  std::string o = figure("ledger", svg::bar_chart(ch, "Ledger by bucket"), esc(cap));

  // the buckets: the fleet, then each pool's dollars
  const LedgerRow& T = *L.total();
  const double total_usd = sum(T.usd);
  std::vector<std::string> head = {"Bucket", "Device-hours", "USD", "Share"};
  for (size_t p = 0; p + 1 < L.rows.size(); ++p) head.push_back(esc(L.rows[p].name) + " USD");
  std::vector<Row> rows;
  for (size_t i = 0; i < L.buckets.size(); ++i) {
    Row r{{esc(L.buckets[i].label), svg::fixed(T.hours[i], 2), svg::usd(T.usd[i]),
           total_usd > 0 ? svg::percent(T.usd[i] / total_usd) : svg::num(kNaN)},
          ""};
    for (size_t p = 0; p + 1 < L.rows.size(); ++p) r.cells.push_back(svg::usd(L.rows[p].usd[i]));
    rows.push_back(r);
  }
  Row tr{{"Total", svg::fixed(sum(T.hours), 2), svg::usd(total_usd), total_usd > 0 ? "100%" : svg::num(kNaN)}, "total"};
  for (size_t p = 0; p + 1 < L.rows.size(); ++p) tr.cells.push_back(svg::usd(sum(L.rows[p].usd)));
  rows.push_back(tr);
  o += table(head, rows, L.derived ? "Ledger (estimated from utilization)" : "Ledger by bucket");

  // billing: list and effective prices, for the fleet and each pool
  const View led = d["ledger"];
  if (led.is_object()) {
    std::vector<std::pair<std::string, View>> cols = {{L.total()->name, led}};
    for (const auto& pv : led["pools"].items()) cols.push_back(pv);
    std::vector<std::string> bh = {""};
    for (const auto& c : cols) bh.push_back(esc(c.first));
    auto line = [&](const std::string& label, const std::string& key, svg::Format f) {
      Row r{{esc(label)}, ""};
      bool any = false;
      for (const auto& c : cols) {
        const auto v = c.second.path(key).num();
        any = any || v.has_value();
        r.cells.push_back(v ? f(*v) : svg::num(kNaN));
      }
      return any ? std::optional<Row>(r) : std::nullopt;
    };
    const svg::Format money = [](double v) { return svg::usd(v); };
    std::vector<Row> br;
    for (auto r :
         {line("Billed device-hours", "billed_device_hours", [](double v) { return svg::fixed(v, 2); }),
          line("At list prices", "list_usd", money), line("Effective (after discounts)", "effective_usd", money),
          line("Effective USD per device-hour", "usd_per_device_hour", [](double v) { return svg::usd_rate(v); }),
          line("30-day projection", "projection_30d.effective_usd", money),
          line("Commitment pays off when provisioned over", "committed_break_even_utilization",
               [](double v) { return svg::percent(v) + " of the time"; })})
      if (r) br.push_back(*r);
    o += table(bh, br, "Billing");
    if (const std::string n = led["projection_30d"]["note"].str(); !n.empty())
      o += note("30-day projection: " + esc(n) + ".");
    // device-hours x rate = dollars on every row, as printed (the table's cost lines); each pool's
    // rows where there are pools, which price alike under one category name
    const bool by_pool = led["pools"].size() > 1;
    std::vector<Row> pr;
    auto pricing_rows = [&](const std::string& pool, const View& rows) {
      for (const View& p : rows.elements()) {
        const double l = p["list_usd"].num_or(kNaN), e = p["effective_usd"].num_or(kNaN);
        std::string cat = p["category"].str();
        std::replace(cat.begin(), cat.end(), '_', '-');
        Row r{{}, ""};
        if (by_pool) r.cells.push_back(esc(pool));
        for (const std::string& c : {esc(cat), svg::fixed(p["device_hours"].num_or(kNaN), 2),
                                     svg::usd_rate(p["list_usd_per_hour"].num_or(kNaN)),
                                     svg::usd_rate(p["effective_usd_per_hour"].num_or(kNaN)), svg::usd(l), svg::usd(e),
                                     l > 0 && std::isfinite(e) ? svg::percent(1 - e / l) : svg::num(kNaN)})
          r.cells.push_back(c);
        pr.push_back(r);
      }
    };
    if (by_pool)
      for (const auto& pv : led["pools"].items()) pricing_rows(pv.first, pv.second["pricing"]);
    else
      pricing_rows("", led["pricing"]);
    std::vector<std::string> ph = {"Pricing",  "Device-hours",  "List USD/h", "Effective USD/h",
                                   "List USD", "Effective USD", "Discount"};
    if (by_pool) ph.insert(ph.begin(), "Pool");
    o += table(ph, pr, "By pricing");
  }
  return o;
}

// a pool's (or a one-pool document's scenario's) devices, as fleet_label says them
std::string devices_label(const View& p) {
  const auto n = p["devices"].num();
  const std::string dev = p["device"].str();
  if (!n || dev.empty()) return "";
  return fleet_label(int(*n), int(p["replicas"].num_or(*n)), int(p["replicas_per_device"].num_or(1)), dev,
                     " \xc3\x97 ");
}

std::string pool_label(const std::string& name, const View& p) {
  const std::string devices = devices_label(p);
  return devices.empty() ? name : name + " (" + devices + ")";
}

std::string cost_section(const View& d, const std::string& total_name) {
  const View lc = d["ledger"]["classes"];
  svg::BarChart ch;
  svg::BarPanel out{"USD per 1M output tokens", [](double v) { return svg::usd(v); }, {}, {}, "cost-output"};
  svg::BarPanel in{"USD per 1M input tokens", [](double v) { return svg::usd(v); }, {}, {}, "cost-input"};
  auto add = [&](const std::string& label, const std::string& group, double o, double i) {
    ch.rows.push_back(label);
    ch.groups.push_back(group);
    ch.marked.push_back(group == "total");
    out.values.push_back({o});
    in.values.push_back({i});
  };
  add(total_name, "total", d["cost"]["per_million_output_tokens_usd"].num_or(kNaN),
      d["cost"]["per_million_input_tokens_usd"].num_or(kNaN));
  for (const auto& [name, p] : d["pools"].items())
    add("pool " + pool_label(name, p), "pool", p["cost"]["per_million_output_tokens_usd"].num_or(kNaN),
        p["cost"]["per_million_input_tokens_usd"].num_or(kNaN));
  for (const auto& [name, c] : d["classes"].items()) {
    const View l = lc[name];
    add("class " + name, "class",
        l["per_million_output_tokens_usd"].num().value_or(c["cost"]["per_million_output_tokens_usd"].num_or(kNaN)),
        l["per_million_input_tokens_usd"].num_or(kNaN));
  }
  ch.series = {{"cost", svg::color(0)}};
  // no output tokens anywhere (embedding, reranking): no panel of their cost
  const bool outputs = std::any_of(out.values.begin(), out.values.end(), [](const std::vector<double>& v) {
    return std::any_of(v.begin(), v.end(), [](double x) { return std::isfinite(x); });
  });
  if (outputs)
    ch.panels = {out, in};
  else
    ch.panels = {in};
  std::string o = figure(
      "cost-per-token", svg::bar_chart(ch, "Cost per million tokens"),
      esc(std::string(outputs ? "What a million tokens cost, output tokens (left) and input tokens (right), for "
                                "the fleet, each pool and each class."
                              : "What a million input tokens cost (nothing here generates output tokens), for the "
                                "fleet, each pool and each class.") +
          " Input and output are priced separately: each step's device time is split between its prefill "
          "(input) and decode (output) parts, and idle time in the same proportion; a class pays for the device time "
          "its requests used, plus its share of idle time."));

  // devices on average over the window: an autoscaled pool's count changes
  const double window_h = d["simulation"]["window_s"].num().value_or(d["ledger"]["window_s"].num_or(kNaN)) / 3600;
  auto mean_devices = [&](const View& cost) { return svg::num(cost["device_hours"].num_or(kNaN) / window_h); };
  std::vector<Row> pr;
  for (const auto& [name, p] : d["pools"].items()) {
    const View c = p["cost"];
    pr.push_back(
        {{esc(name), esc(p["device"].str()), mean_devices(c), svg::num(c["device_hours"].num_or(kNaN)),
          svg::usd(c["usd_per_device_hour"].num_or(kNaN)), svg::usd(c["total_usd"].num_or(kNaN)),
          svg::usd(c["per_million_input_tokens_usd"].num_or(kNaN)),
          svg::usd(c["per_million_output_tokens_usd"].num_or(kNaN)), svg::usd(c["per_request_usd"].num_or(kNaN)),
          svg::percent(p["utilization"]["busy_fraction"].num_or(kNaN))},
         ""});
  }
  const View c = d["cost"];
  pr.push_back({{esc(total_name), esc(d["pools"].size() ? "" : d["scenario"]["device"].str()), mean_devices(c),
                 svg::num(c["device_hours"].num_or(kNaN)), svg::usd(c["usd_per_device_hour"].num_or(kNaN)),
                 svg::usd(c["total_usd"].num_or(kNaN)), svg::usd(c["per_million_input_tokens_usd"].num_or(kNaN)),
                 svg::usd(c["per_million_output_tokens_usd"].num_or(kNaN)), svg::usd(c["per_request_usd"].num_or(kNaN)),
                 svg::percent(d["utilization"]["busy_fraction"].num_or(kNaN))},
                "total"});
  o += table({"Pool", "Device", "Billed devices (mean)", "Device-hours", "USD per device-hour", "Cost", "per 1M input",
              "per 1M output", "per request", "Busy (of provisioned replica time)"},
             pr, "Cost by pool", 2);

  std::vector<Row> cr;
  for (const auto& [name, cl] : d["classes"].items()) {
    const View l = lc[name];
    const double usd = l["usd"].num().value_or(cl["cost"]["usd"].num_or(kNaN));
    cr.push_back(
        {{esc(name), esc(cl["pool"].str()), esc(cl["team"].str()), svg::num(cl["requests"]["completed"].num_or(kNaN)),
          svg::usd(usd), svg::usd(l["busy_usd"].num_or(kNaN)), svg::usd(l["idle_share_usd"].num_or(kNaN)),
          svg::usd(l["per_million_input_tokens_usd"].num_or(kNaN)),
          svg::usd(l["per_million_output_tokens_usd"].num().value_or(
              cl["cost"]["per_million_output_tokens_usd"].num_or(kNaN))),
          svg::usd(l["per_request_usd"].num().value_or(cl["cost"]["per_request_usd"].num_or(kNaN))),
          svg::seconds(cl["latency_s"]["ttft"]["p99"].num_or(kNaN))},
         ""});
  }
  o += table({"Class", "Pool", "Team", "Requests", "Cost", "Busy", "Idle share", "per 1M input", "per 1M output",
              "per request", "p99 TTFT"},
             cr, "Cost by class", 3);
  std::vector<Row> tr;
  for (const auto& [name, t] : d["teams"].items())
    tr.push_back({{esc(name), svg::usd(t["usd"].num_or(kNaN)), svg::percent(t["share"].num_or(kNaN))}, ""});
  o += table({"Team", "Cost", "Share"}, tr, "Cost by team");
  return o;
}

std::string timeline_section(const View& d, const std::vector<LatencyBound>& bounds) {
  std::vector<View> tl;
  double end = 0;
  for (const View& e : d["timeline"].elements())
    if (e["t0_s"].num() && e["t1_s"].num()) tl.push_back(e), end = std::max(end, *e["t1_s"].num());
  if (tl.empty()) return note("No timeline in this report.");
  const double unit = end > 7200 ? 3600 : end > 120 ? 60 : 1;
  const std::string ulabel = unit == 3600 ? "time (h)" : unit == 60 ? "time (min)" : "time (s)";
  svg::Series reps{"replicas (mean)", "#1f2937", {}, {}, {}, svg::Mark::line, false, 1.5, "replicas"};
  svg::Series busy{"busy", "#4269d0", {}, {}, {}, svg::Mark::area, false, 0.5, ""};
  svg::Series idle{"idle", "#9498a0", {}, {}, {}, svg::Mark::area, false, 0.5, ""};
  // the ledger's colour for cold start, so that it reads the same in both charts
  svg::Series cold{"cold start", "#efb118", {}, {}, {}, svg::Mark::area, false, 0.5, ""};
  svg::Series wait{"waiting requests (mean)", "#3ca951", {}, {}, {}, svg::Mark::area, false, 1.5, ""};
  svg::Series ttft{"p99 TTFT, every class", "#ff725c", {}, {}, {}, svg::Mark::line, false, 1.8, ""};
  double tmin = 1e300, tmax = 0;
  bool any_busy = false, any_ttft = false, any_cold = false;
  for (const View& e : tl) {
    const double a = *e["t0_s"].num() / unit, b = *e["t1_s"].num() / unit;
    const double r = e["mean_replicas"].num_or(kNaN), bf = e["busy_fraction"].num_or(kNaN);
    const double idf = e["idle_fraction"].num_or(kNaN), w = e["mean_waiting"].num_or(kNaN);
    const double t = e["ttft_p99_s"].num_or(kNaN), cf = e["cold_start_fraction"].num_or(0.0);
    for (double x : {a, b}) {
      reps.pts.push_back({x, r});
      busy.pts.push_back({x, r * bf});
      idle.pts.push_back({x, r * (bf + idf)});
      idle.floor.push_back(r * bf);
      cold.pts.push_back({x, r * (bf + idf + cf)});
      cold.floor.push_back(r * (bf + idf));
      wait.pts.push_back({x, w});
      ttft.pts.push_back({x, t});
    }
    any_busy = any_busy || std::isfinite(r * bf);
    any_ttft = any_ttft || std::isfinite(t);
    any_cold = any_cold || (std::isfinite(r) && r * cf > 0);
    tmin = std::min(tmin, a), tmax = std::max(tmax, b);
  }
  svg::Axis x;
  x.label = ulabel;
  x.lo = tmin;
  x.hi = tmax;
  x.zero = false;
  std::vector<svg::XYPanel> panels;
  svg::XYPanel p1{"Replicas", x, {}, {}, {}, {}, "timeline-replicas"};
  p1.y.label = "replicas";
  if (any_busy) p1.series = {idle, busy};
  if (any_busy && any_cold) p1.series.insert(p1.series.begin(), cold);
  p1.series.push_back(reps);
  panels.push_back(p1);
  svg::XYPanel p2{"Queue", x, {}, {wait}, {}, {}, "timeline-queue"};
  p2.y.label = "requests waiting";
  panels.push_back(p2);
  if (any_ttft) {
    // the fleet's p99 over every class: a class's own budget beside it is about that class only
    svg::XYPanel p3{"p99 TTFT per interval, every class together", x, {}, {ttft}, {}, {}, "timeline-ttft"};
    p3.y.label = "p99 TTFT";  // the ticks carry their unit (ms, s)
    p3.y.fmt = [](double v) { return svg::seconds_axis(v); };
    double lo = 1e300, hi = 0;
    for (const auto& q : ttft.pts)
      if (std::isfinite(q.y) && q.y > 0) lo = std::min(lo, q.y), hi = std::max(hi, q.y);
    if (hi > 50 * lo) p3.y.kind = svg::ScaleKind::log, p3.y.label = "p99 TTFT (log scale)";
    for (const auto& b : bounds)
      if (b.metric == "ttft") p3.refs.push_back({false, b.limit, b.label, b.color, std::nullopt});
    panels.push_back(p3);
  }
  const View e0 = tl.front();
  const double step = *e0["t1_s"].num() - *e0["t0_s"].num();
  return figure("timeline", svg::xy_chart(panels, 1, 200, "Fleet over time"),
                esc("Per interval of " + svg::seconds(step) +
                    ": the mean number of replicas provisioned, split into busy, idle and cold start, the mean "
                    "number of requests waiting, and the p99 TTFT of the requests of every class that arrived in it "
                    "(each class's own percentiles are in the latency section)."));
}

}  // namespace

Page run_page(const Json& doc) {
  const View d(doc);
  const View sc = d["scenario"];
  Page p;
  p.title = sc["name"].str().empty() ? "fleetsim run" : sc["name"].str();
  const bool pools = d["pools"].size() > 0;
  const std::string total_name = pools ? "All pools" : "Fleet";
  const LedgerView L = read_ledger(d, total_name);

  // meta line
  std::vector<std::string> meta = {"Run report"};
  if (const auto src = sc["source"].str(); !src.empty()) meta.push_back("scenario <code>" + esc(src) + "</code>");
  if (const auto s = sc["seed"].text(); !s.empty()) meta.push_back("seed " + esc(s));
  if (const auto dur = sc["duration_s"].num())
    meta.push_back(svg::seconds(*dur) + " simulated" +
                   (sc["warmup_s"].num_or(0) > 0 ? " (" + svg::seconds(*sc["warmup_s"].num()) + " warm-up)" : ""));
  if (const auto m = sc["model"].str(); !m.empty()) meta.push_back("model " + esc(m));
  std::string ov;
  for (const View& o : sc["overrides"].elements())
    if (!o.text().empty()) ov += (ov.empty() ? "" : " ") + std::string("<code>") + esc(o.text()) + "</code>";
  if (!ov.empty()) meta.push_back("overrides " + ov);
  for (size_t i = 0; i < meta.size(); ++i) p.meta += (i ? " \xc2\xb7 " : "") + meta[i];

  // latency bounds: each class's goodput bounds (in its colour when there are several classes)
  std::vector<LatencyCurve> curves = {{"all requests", "#1f2937", d["latency_s"], false}};
  std::vector<LatencyBound> bounds;
  const auto classes = d["classes"].items();
  if (classes.size() >= 2) {
    for (size_t i = 0; i < classes.size(); ++i) {
      curves.push_back({classes[i].first, svg::color(i), classes[i].second["latency_s"], false});
      for (auto b : parse_goodput(classes[i].second["goodput"].str())) {
        b.label = classes[i].first + ": " + b.label;
        b.color = svg::color(i);
        bounds.push_back(b);
      }
    }
  } else {
    bounds = parse_goodput(sc["goodput"].str());
  }

  // the summary in words
  const double eff = d["ledger"]["effective_usd"].num().value_or(d["cost"]["total_usd"].num_or(kNaN));
  const double list = d["ledger"]["list_usd"].num_or(kNaN);
  std::string s = "Over a measured window of " +
                  svg::seconds(d["simulation"]["window_s"].num().value_or(d["ledger"]["window_s"].num_or(kNaN)));
  std::string fleet;
  if (pools) {
    const auto ps = d["pools"].items();
    for (size_t i = 0; i < ps.size(); ++i)
      fleet += std::string(i == 0               ? ""
                           : i + 1 == ps.size() ? " and "
                                                : ", ") +
               esc(pool_label(ps[i].first, ps[i].second));
    fleet = (ps.size() > 1 ? "pools " : "pool ") + fleet;
  } else if (sc["device"].str().size()) {
    const bool scaled = d["fleet"]["scale_ups"].num_or(0) + d["fleet"]["scale_downs"].num_or(0) > 0;
    fleet = scaled ? "an autoscaled fleet of " + esc(sc["device"].str()) + " (" +
                         svg::num(d["fleet"]["mean_replicas"].num_or(kNaN)) + " replicas on average, at most " +
                         svg::num(d["fleet"]["max_replicas"].num_or(kNaN)) + ")"
                   : esc(devices_label(sc));
  }
  if (!fleet.empty()) s += ", " + fleet;
  s += " served " + svg::num(d["requests"]["completed"].num_or(kNaN)) + " requests for <strong>" + svg::usd(eff) +
       "</strong>";
  if (std::isfinite(list) && list > eff * 1.0005) s += " (" + svg::usd(list) + " at list prices)";
  // a fleet that generates no tokens (embedding, reranking) is priced per request and per input token
  const double per_out = d["cost"]["per_million_output_tokens_usd"].num_or(kNaN);
  s += std::isfinite(per_out)
           ? ": <strong>" + svg::usd(per_out) + " per 1M output tokens</strong> and " +
                 svg::usd(d["cost"]["per_million_input_tokens_usd"].num_or(kNaN)) + " per 1M input tokens. "
           : ": <strong>" + svg::usd(d["cost"]["per_request_usd"].num_or(kNaN)) + " per request</strong> and " +
                 svg::usd(d["cost"]["per_million_input_tokens_usd"].num_or(kNaN)) +
                 " per 1M input tokens (it generates no output tokens). ";
  auto against = [&](double v, const std::vector<LatencyBound>& bs) {
    for (const auto& b : bs)
      if (b.metric == "ttft")
        return v <= b.limit ? " <span class=\"good\">within</span> its " + svg::seconds(b.limit) + " goodput bound"
                            : " <span class=\"bad\">above</span> its " + svg::seconds(b.limit) + " goodput bound";
    return std::string();
  };
  if (classes.size() >= 2) {
    s += "p99 TTFT was ";
    for (size_t i = 0; i < classes.size(); ++i) {
      const double v = classes[i].second["latency_s"]["ttft"]["p99"].num_or(kNaN);
      s += (i == 0                    ? ""
            : i + 1 == classes.size() ? " and "
                                      : ", ") +
           svg::seconds(v) + " for " + esc(classes[i].first) +
           (std::isfinite(v) ? against(v, parse_goodput(classes[i].second["goodput"].str())) : "");
    }
    s += ". ";
  } else if (const auto v = d["latency_s"]["ttft"]["p99"].num()) {
    s += "p99 TTFT was " + svg::seconds(*v) + against(*v, bounds) + ". ";
  }
  const auto good = d["requests"]["good_fraction"].num();
  if (good && !bounds.empty())
    s += svg::percent(*good, 4) +
         (sc["goodput"].str().empty()
              ? " of requests met their class's goodput bounds (a class without bounds counts every request). "
              : " of requests met every goodput bound. ");
  double idle_usd = kNaN, idle_share = kNaN;
  if (const LedgerRow* T = L.total()) {
    idle_usd = 0;
    for (size_t i = 0; i < L.buckets.size(); ++i)
      if (L.buckets[i].idle && std::isfinite(T->usd[i])) idle_usd += T->usd[i];
    if (const auto v = d["ledger"]["idle_usd"].num()) idle_usd = *v;
    idle_share = sum(T->usd) > 0 ? idle_usd / sum(T->usd) : kNaN;
    s += std::string(L.derived ? "Capacity not doing work (cold starts, idle time, unused commitments, devices "
                                 "stranded on whole nodes) cost about "
                               : "Capacity not doing work (cold starts, idle time, unused commitments, devices "
                                 "stranded on whole nodes) cost ") +
         svg::usd(idle_usd) + " (" + svg::percent(idle_share) + " of the spend). ";
  }
  const double rej = d["requests"]["rejected"].num_or(0) + d["requests"]["failed"].num_or(0);
  if (rej > 0)
    s += "<span class=\"bad\">" + svg::num(rej) + " requests (" +
         svg::percent(rej / std::max(1.0, d["requests"]["arrived"].num_or(rej))) + ") were rejected or failed.</span> ";
  if (const auto proj = d["ledger"]["projection_30d"]["effective_usd"].num())
    s += "At this rate, 30 days would cost " + svg::usd(*proj) + ".";

  std::string kp = kpi("Spend", svg::usd(eff), std::isfinite(list) ? "list " + svg::usd(list) : "");
  if (std::isfinite(per_out))
    kp += kpi("Per 1M output tokens", svg::usd(per_out),
              "per 1M input " + svg::usd(d["cost"]["per_million_input_tokens_usd"].num_or(kNaN)));
  else
    kp += kpi("Per request", svg::usd(d["cost"]["per_request_usd"].num_or(kNaN)),
              "per 1M input " + svg::usd(d["cost"]["per_million_input_tokens_usd"].num_or(kNaN)));
  std::string tb;
  for (const auto& b : bounds)
    if (b.metric == "ttft" && classes.size() < 2) tb = "bound " + svg::seconds(b.limit);
  kp += kpi("p99 TTFT", svg::seconds(d["latency_s"]["ttft"]["p99"].num_or(kNaN)),
            tb.empty() ? "p50 " + svg::seconds(d["latency_s"]["ttft"]["p50"].num_or(kNaN)) : tb);
  kp += kpi("Requests", svg::num(d["requests"]["completed"].num_or(kNaN)),
            good && !bounds.empty() ? svg::percent(*good, 4) + " good" : "completed");
  if (std::isfinite(idle_share)) kp += kpi("Idle share", svg::percent(idle_share), svg::usd(idle_usd));

  std::string& b = p.body;
  b += "<section id=\"summary\"><h2>Summary</h2><p class=\"lead\">" + s + "</p><dl class=\"kpis\">" + kp + "</dl>";
  // the step-time note (the physics model's errors, what to expect of an uncalibrated one), or,
  // for a calibrated profile, which has none, the table's sentence: the profile and its error
  std::string steps = sc["step_time"]["note"].str();
  if (steps.empty() && sc["step_time"]["calibrated"].flag().value_or(false)) try {
      steps = step_time_summary(doc["scenario"]);
    } catch (const Json::exception&) {  // a document too malformed for it
    }
  // pools whose step times came from different models, or whose error does not apply alike, each
  // say theirs
  if (pools) {
    std::string per, first;
    bool differ = false;
    const auto ps = d["pools"].items();
    for (size_t i = 0; i < ps.size(); ++i) {
      const View& st = ps[i].second["step_time"];
      std::string n = st["note"].str();
      // a calibrated profile says its error as the table does
      if (n.empty() && st["calibrated"].flag().value_or(false)) try {
          const Json& pj = doc.at("pools").at(ps[i].first);
          n = step_time_summary(Json{{"step_time", pj.at("step_time")}, {"perf_model", pj.at("perf_model")}});
        } catch (const Json::exception&) {  // a document too malformed for it
          n = "calibrated profile " + st["profile"].str();
        }
      if (i == 0) first = n;
      differ = differ || n != first;
      per += (i == 0 ? "" : "; ") + ps[i].first + ": " + n;
    }
    if (differ) steps = per;
  }
  if (!steps.empty()) b += note("Step time: " + esc(steps) + ".");
  b += "</section>\n";
  b += "<section><h2>Cost per token</h2>" + cost_section(d, total_name) + "</section>\n";
  b += "<section><h2>Where the money goes</h2>" + ledger_section(d, L) + "</section>\n";
  if (const std::string own = ownership_section(d); !own.empty())
    b += "<section><h2>Owning</h2>" + own + "</section>\n";
  const std::string lat =
      latency_figure(curves, bounds,
                     classes.size() >= 2 ? "Latency of every request and of each class." : "Latency of every request.");
  b += "<section><h2>Latency</h2>" + (lat.empty() ? note("No completed requests: no latency to draw.") : lat) +
       "</section>\n";
  b += "<section><h2>Over time</h2>" + timeline_section(d, bounds) + "</section>\n";
  return p;
}

}  // namespace fleetsim::html
