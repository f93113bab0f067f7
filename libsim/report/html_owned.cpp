// The run report's "Owning" section: each owned pool's cost parts, its years against renting,
// and the newer-device comparison with its chart of cost per 1M tokens by year.
#include <cmath>

#include "report/html_internal.hpp"
#include "report/svg.hpp"

namespace fleetsim::html {
namespace {

// "1 node", "3 nodes"
std::string counted(const View& n, const std::string& what) {
  return svg::num(n.num_or(kNaN)) + " " + what + (n.num_or(0) == 1 ? "" : "s");
}

std::string from_year(const View& v, const std::string& never) {
  const auto y = v.num();
  return y ? "from year " + svg::num(*y) : never;
}

std::string newer_part(const std::string& name, const View& n) {
  const View cur = n["current"], nw = n["newer"];
  std::vector<Row> rows;
  svg::Series s_new, s_cur, s_run;
  s_new.name = "buy " + nw["device"].str();
  s_new.color = svg::color(0);
  s_cur.name = "buy " + cur["device"].str();
  s_cur.color = svg::color(1);
  s_run.name = "keep " + cur["device"].str() + " (running costs)";
  s_run.color = svg::color(2);
  s_run.dashed = true;
  for (const View& y : n["years"].elements()) {
    const double k = y["year"].num_or(kNaN);
    const double a = y["newer_usd_per_million_tokens"].num_or(kNaN),
                 b = y["current_usd_per_million_tokens"].num_or(kNaN),
                 c = y["current_running_usd_per_million_tokens"].num_or(kNaN);
    rows.push_back(
        {{svg::num(k), svg::usd(y["newer_node_capex_usd"].num_or(kNaN)), svg::usd(a), svg::usd(b), svg::usd(c)},
         a < b ? "marked" : ""});
    s_new.pts.push_back({k, a});
    s_cur.pts.push_back({k, b});
    s_run.pts.push_back({k, c});
  }
  const std::string who = esc(svg::num(nw["replicas"].num_or(kNaN)) + " × " + nw["device"].str() + " against " +
                              svg::num(cur["replicas"].num_or(kNaN)) + " × " + cur["device"].str());
  svg::XYPanel p;
  p.title = "Pool " + name + ": " + nw["device"].str() + " against " + cur["device"].str();
  p.x.label = "year";
  p.x.zero = false;
  // years are whole: a point each, no line between them (two lines would cross between years, where
  // no fleet is bought), and a tick label only at a whole year
  p.x.fmt = [](double v) { return v == std::floor(v) ? svg::num(v) : std::string(); };
  for (svg::Series* x : {&s_new, &s_cur, &s_run}) x->mark = svg::Mark::dots;
  p.y.label = "USD per 1M tokens";
  p.y.fmt = [](double v) { return svg::usd(v); };
  p.series = {s_new, s_cur, s_run};
  std::string o = figure("newer-device-" + name, svg::xy_chart({p}, 1, 260, "Cost per 1M tokens by year"),
                         "Pool " + esc(name) + ", " + who +
                             ": the newer fleet bought at each year's price, the current one "
                             "bought at its own, and kept on its running costs alone.");
  o += table({"Year", "Newer node price", "Newer USD / 1M tokens", "Current, all-in", "Current, running costs"}, rows,
             "Newer device, pool " + esc(name) + " (marked: the newer fleet is the cheaper to buy)");
  o +=
      note("Cheaper to buy " + from_year(n["newer_cheaper_from_year"], "in no year of the view") +
           "; replacing the paid-for fleet pays " + from_year(n["replacing_pays_from_year"], "in no year of the view") +
           ". Both fleets served the same arrivals: p99 TTFT " + svg::seconds(nw["p99_ttft_s"].num_or(kNaN)) +
           " against " + svg::seconds(cur["p99_ttft_s"].num_or(kNaN)) + ", mean TPOT " +
           svg::seconds(nw["mean_tpot_s"].num_or(kNaN)) + " against " + svg::seconds(cur["mean_tpot_s"].num_or(kNaN)) +
           ", " + svg::num(nw["rejected"].num_or(kNaN) + nw["failed"].num_or(kNaN)) + " against " +
           svg::num(cur["rejected"].num_or(kNaN) + cur["failed"].num_or(kNaN)) + " requests rejected or failed.");
  return o;
}

std::string pool_part(const std::string& name, const View& w) {
  std::vector<Row> parts;
  for (const View& c : w["components"].elements())
    parts.push_back({{esc(c["name"].str()), esc(c["unit"].str()), svg::num(c["quantity"].num_or(kNaN)),
                      svg::usd(c["usd_per_unit"].num_or(kNaN)), svg::usd(c["usd"].num_or(kNaN))},
                     ""});
  parts.push_back({{"owned line", "", "", "", svg::usd(w["usd"].num_or(kNaN))}, "total"});
  std::string o = table({"Part", "Unit", "Quantity", "USD per unit", "USD"}, parts,
                        "Pool " + esc(name) + ": " + esc(w["model"].str()) + ", " +
                            counted(w["owned_replicas"], "replica") + " on " + counted(w["owned_nodes"], "node"),
                        2);
  o += note(svg::usd(w["usd_per_device_hour"].num_or(kNaN)) + " per device-hour against " +
            svg::usd(w["on_demand_usd_per_device_hour"].num_or(kNaN)) + " on demand: owning breaks even " +
            (w["break_even_utilization"].num()
                 ? "at " + svg::percent(w["break_even_utilization"].num_or(kNaN)) + " of the owned hours; "
                 : std::string("never (on-demand capacity is free); ")) +
            svg::num(w["stranded_device_hours"].num_or(kNaN)) + " device-hours stranded on whole nodes.");
  std::vector<Row> years;
  for (const View& y : w["years"].elements())
    years.push_back({{svg::num(y["year"].num_or(kNaN)), svg::usd(y["capex_paid_usd"].num_or(kNaN)),
                      svg::usd(y["energy_usd"].num_or(kNaN)), svg::usd(y["space_usd"].num_or(kNaN)),
                      svg::usd(y["own_cumulative_usd"].num_or(kNaN)), svg::usd(y["rent_cumulative_usd"].num_or(kNaN))},
                     y["own_cumulative_usd"].num_or(kNaN) <= y["rent_cumulative_usd"].num_or(kNaN) ? "marked" : ""});
  if (!years.empty())
    o += table({"Year", "Capex paid", "Energy", "Space", "Owning, cumulative", "Renting, cumulative"}, years,
               "Years, pool " + esc(name) + " (marked: owning has cost less in total); owning is cheaper " +
                   from_year(w["owning_cheaper_from_year"], "in no year of the view"));
  if (w["newer_device"].is_object()) o += newer_part(name, w["newer_device"]);
  return o;
}

}  // namespace

std::string ownership_section(const View& d) {
  std::string o;
  for (const auto& [name, p] : d["ledger"]["pools"].items())
    if (p["ownership"].is_object()) o += pool_part(name, p["ownership"]);
  return o;
}

}  // namespace fleetsim::html
