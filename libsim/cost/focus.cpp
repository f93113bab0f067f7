// The ledger as FinOps FOCUS 1.2 rows (focus_csv), and the billing dates they carry.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <ctime>

#include "base/error.hpp"
#include "base/text.hpp"
#include "cost/ledger.hpp"
#include "input/csv.hpp"

namespace fleetsim {

namespace {
std::string iso8601(double unix_s) {
  const std::time_t t = std::time_t(std::floor(unix_s));
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}
const char* focus_pricing(const std::string& category) {
  return category == "committed"   ? "Committed"
         : category == "spot"      ? "Dynamic"
         : category == "on_demand" ? "Standard"
                                   : "Other";  // owned or colocated: not a provider's charge
}
}  // namespace

double parse_utc_time(const std::string& text, const std::string& what) {
  int y = 0, mo = 0, d = 0, h = 0, mi = 0, sec = 0;
  char tail = 0;
  const bool date_only = std::sscanf(text.c_str(), "%4d-%2d-%2d%c", &y, &mo, &d, &tail) == 3 && text.size() == 10;
  const bool full = !date_only && text.size() == 20 &&
                    std::sscanf(text.c_str(), "%4d-%2d-%2dT%2d:%2d:%2dZ%c", &y, &mo, &d, &h, &mi, &sec, &tail) == 6 &&
                    text.back() == 'Z';
  std::tm tm{};
  tm.tm_year = y - 1900;
  tm.tm_mon = mo - 1;
  tm.tm_mday = d;
  tm.tm_hour = h;
  tm.tm_min = mi;
  tm.tm_sec = sec;
  const std::time_t t = (date_only || full) ? timegm(&tm) : std::time_t(-1);
  // timegm normalises 2026-02-30 to March: a date that does not round-trip does not exist
  std::tm back{};
  if (t != std::time_t(-1)) gmtime_r(&t, &back);
  if (!(date_only || full) || y < 1970 || y > 9999 || back.tm_mday != d || back.tm_mon != mo - 1 || h > 23 || mi > 59 ||
      sec > 59)
    throw InputError(Location{what, 0, 0, ""},
                     what + ": expected a UTC date YYYY-MM-DD or time YYYY-MM-DDTHH:MM:SSZ from 1970 on, got '" +
                         printable(text) + "'");
  return double(t);
}

// FOCUS 1.2 (FinOps-Open-Cost-and-Usage-Spec/FOCUS_Spec, tag v1.2, specification/columns/): every
// column whose feature level is Mandatory, and the conditional ones this data can fill.
const std::vector<std::string>& focus_columns() {
  static const std::vector<std::string> c = {"BilledCost",
                                             "BillingAccountId",
                                             "BillingAccountName",
                                             "BillingCurrency",
                                             "BillingPeriodEnd",
                                             "BillingPeriodStart",
                                             "ChargeCategory",
                                             "ChargeClass",
                                             "ChargeDescription",
                                             "ChargeFrequency",
                                             "ChargePeriodEnd",
                                             "ChargePeriodStart",
                                             "CommitmentDiscountCategory",
                                             "CommitmentDiscountId",
                                             "CommitmentDiscountName",
                                             "CommitmentDiscountQuantity",
                                             "CommitmentDiscountStatus",
                                             "CommitmentDiscountType",
                                             "CommitmentDiscountUnit",
                                             "ConsumedQuantity",
                                             "ConsumedUnit",
                                             "ContractedCost",
                                             "ContractedUnitPrice",
                                             "EffectiveCost",
                                             "InvoiceIssuerName",
                                             "ListCost",
                                             "ListUnitPrice",
                                             "PricingCategory",
                                             "PricingQuantity",
                                             "PricingUnit",
                                             "ProviderName",
                                             "PublisherName",
                                             "ResourceId",
                                             "ResourceName",
                                             "ResourceType",
                                             "ServiceCategory",
                                             "ServiceName",
                                             "SkuId",
                                             "Tags"};
  return c;
}

namespace {
// FOCUS's Numeric Format: a plain decimal, no exponent; 12 significant digits (cents on any bill)
std::string focus_num(double x) {
  if (x == 0.0 || !std::isfinite(x)) return "0";
  const int mag = int(std::floor(std::log10(std::fabs(x))));
  std::string t = fmt::format("{:.{}f}", x, std::clamp(11 - mag, 0, 30));
  if (t.find('.') != std::string::npos) {
    while (t.back() == '0') t.pop_back();
    if (t.back() == '.') t.pop_back();
  }
  return t;
}
}  // namespace

std::string focus_csv(const Ledger& l, const Scenario& s, double start_unix_s) {
  std::string o;
  for (const auto& c : focus_columns()) o += (o.empty() ? "" : ",") + c;
  o += "\n";
  // the billing period is the simulated run; each charge covers its measured window
  const std::string b0 = iso8601(start_unix_s), b1 = iso8601(start_unix_s + s.duration_s);
  const std::string t0 = iso8601(start_unix_s + s.warmup_s), t1 = iso8601(start_unix_s + s.warmup_s + l.window_s);
  const std::string account = csv_quote("fleetsim:" + s.name), account_name = csv_quote(s.name);
  // one row: quantity device-hours at a list, a contracted (before commitment discounts) and an
  // effective rate; `commitment` is the commitment's status (Used, Unused) or empty
  auto row = [&](const PoolLedger& p, const PricingLine& line, double qty, const std::string& what,
                 const std::string& commitment, const Json& tags) {
    const bool committed = !commitment.empty();
    // spot's dynamic price and an owned device's cost are what was agreed; a commitment's discount is not
    const double contracted =
        committed || line.category == "on_demand" ? line.list_usd_per_hour : line.effective_usd_per_hour;
    const std::string cd_id = committed ? csv_quote("fleetsim:" + s.name + "/" + p.name + "/commitment") : "";
    // FOCUS: ConsumedQuantity and ConsumedUnit are null on a commitment's unused hours (nothing consumed)
    const bool unused = commitment == "Unused";
    const std::string consumed = unused ? "," : focus_num(qty) + ",Hours";
    // a commitment's hours consumed on this row, or left unused (FOCUS_Spec v1.2,
    // specification/columns/commitmentdiscountquantity.md), in device-hours
    const std::string cd_qty = committed ? focus_num(qty) : "";
    const std::string billed = focus_num(qty * line.effective_usd_per_hour);
    o += fmt::format(
        "{},{},{},USD,{},{},Usage,,{},Usage-Based,{},{},{},{},{},{},{},{},{},{},{},{},{},"
        "fleetsim (simulated),{},{},{},{},Hours,fleetsim (simulated),fleetsim (simulated),{},{},{},"
        "AI and Machine Learning,LLM inference,{},{}\n",
        billed, account, account_name, b1, b0, csv_quote(what), t1, t0, committed ? "Usage" : "", cd_id,
        committed ? csv_quote("commitment, pool " + p.name) : "", cd_qty, commitment,
        committed ? "Reserved capacity" : "", committed ? "Hours" : "", consumed, focus_num(qty * contracted),
        focus_num(contracted), billed, focus_num(qty * line.list_usd_per_hour), focus_num(line.list_usd_per_hour),
        focus_pricing(line.category), focus_num(qty), csv_quote(s.name + "/" + p.name), csv_quote(p.name),
        p.cpu_instance ? "CPU instance" : "GPU", csv_quote(p.device), csv_quote(tags.dump()));
  };
  for (size_t i = 0; i < l.pools.size(); ++i) {
    const PoolLedger& p = l.pools[i];
    // a commitment's unused hours are the pool's, on a row of their own: no class consumed them
    const double unused_h = p.cost.hours[size_t(Bucket::committed_unused)];
    // each class carries its share of the pool's consumed lines (busy time plus shared idle); a
    // pool no class uses is charged whole, untagged by class
    std::vector<std::pair<const ClassLedger*, double>> members;
    double class_usd = 0;
    for (const auto& c : l.classes)
      for (const auto& x : c.parts)
        if (x.pool == int(i)) {
          members.emplace_back(&c, x.busy_usd + x.idle_share_usd);
          class_usd += x.busy_usd + x.idle_share_usd;
        }
    for (auto& m : members) m.second = class_usd > 0 ? m.second / class_usd : 1.0 / double(members.size());
    if (members.empty()) members.emplace_back(nullptr, 1.0);
    for (const auto& line : p.cost.lines) {
      const bool committed = line.category == "committed";
      const double unused = committed ? std::min(unused_h, line.device_hours) : 0.0;
      for (const auto& [c, share] : members) {
        const double qty = (line.device_hours - unused) * share;
        if (qty <= 0 && line.device_hours > 0) continue;
        Json tags = {{"fleetsim-pool", p.name}};
        if (c) {
          tags["fleetsim-class"] = c->name;
          tags["team"] = c->team;
        }
        const std::string what = c ? fmt::format("{} device-hours, pool {}, class {}", p.device, p.name, c->name)
                                   : fmt::format("{} device-hours, pool {}", p.device, p.name);
        row(p, line, qty, what, committed ? "Used" : "", tags);
      }
      if (unused > 0)
        row(p, line, unused, fmt::format("{} device-hours, pool {}, unused commitment", p.device, p.name), "Unused",
            Json{{"fleetsim-pool", p.name}});
    }
  }
  return o;
}

}  // namespace fleetsim
