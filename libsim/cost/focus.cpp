// The ledger as FinOps FOCUS 1.2 rows (focus_csv), and the billing dates they carry.
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
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
  // every field its digits (sscanf's %2d would also take "+1" or " 1"); 'd' a digit, the rest as written
  auto shaped = [&](const std::string& pattern) {
    if (text.size() != pattern.size()) return false;
    for (size_t i = 0; i < pattern.size(); ++i)
      if (pattern[i] == 'd' ? !std::isdigit(static_cast<unsigned char>(text[i])) : text[i] != pattern[i]) return false;
    return true;
  };
  const bool date_only = shaped("dddd-dd-dd") && std::sscanf(text.c_str(), "%4d-%2d-%2d%c", &y, &mo, &d, &tail) == 3;
  const bool full = !date_only && shaped("dddd-dd-ddTdd:dd:ddZ") &&
                    std::sscanf(text.c_str(), "%4d-%2d-%2dT%2d:%2d:%2dZ%c", &y, &mo, &d, &h, &mi, &sec, &tail) == 6;
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
                                             "SkuPriceId",
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
  // One charge row. ConsumedQuantity and ConsumedUnit are null where nothing was consumed (a
  // commitment's purchase and its unused hours, FOCUS 1.2 consumedquantity.md).
  struct Charge {
    std::string category = "Usage", frequency = "Usage-Based", what, pricing;
    std::string cd_id, cd_name, cd_status, resource_id, resource_name, resource_type, tags, sku_price;
    std::string unit = "Hours";  // of PricingQuantity and ConsumedQuantity
    double qty = 0, billed = 0, effective = 0, contracted_unit = 0, list_unit = 0;
    bool consumed = true;
  };
  auto emit = [&](const Charge& c, const PoolLedger& p) {
    const bool cd = !c.cd_id.empty();
    o += fmt::format(
        "{},{},{},USD,{},{},{},,{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},fleetsim (simulated),{},{},{},{},{},"
        "fleetsim (simulated),fleetsim (simulated),{},{},{},AI and Machine Learning,LLM inference,{},{},{}\n",
        focus_num(c.billed), account, account_name, b1, b0, c.category, csv_quote(c.what), c.frequency, t1, t0,
        cd ? "Usage" : "", c.cd_id, c.cd_name, cd ? focus_num(c.qty) : "", c.cd_status, cd ? "Reserved capacity" : "",
        cd ? "Hours" : "", c.consumed ? focus_num(c.qty) : "", c.consumed ? c.unit : "",
        focus_num(c.qty * c.contracted_unit), focus_num(c.contracted_unit), focus_num(c.effective),
        focus_num(c.qty * c.list_unit), focus_num(c.list_unit), c.pricing, focus_num(c.qty), c.unit, c.resource_id,
        c.resource_name, c.resource_type, csv_quote(p.device), csv_quote(p.device + "/" + c.sku_price), c.tags);
  };
  // Usage of quantity device-hours at a list, a contracted (before commitment discounts) and an
  // effective rate; `commitment` is the commitment's status (Used, Unused) or empty. A commitment's
  // hours are billed on its purchase row: BilledCost 0 here, the discounted rate in EffectiveCost
  // (FOCUS 1.2 effectivecost.md: a commitment's Usage EffectiveCost sums to its Purchase BilledCost).
  auto row = [&](const PoolLedger& p, const PricingLine& line, double qty, const std::string& what,
                 const std::string& commitment, const Json& tags) {
    const bool committed = !commitment.empty();
    Charge c;
    c.what = what;
    c.qty = qty;
    c.effective = qty * line.effective_usd_per_hour;
    c.billed = committed ? 0.0 : c.effective;
    // spot's dynamic price and an owned device's cost are what was agreed; a commitment's discount is not
    c.contracted_unit =
        committed || line.category == "on_demand" ? line.list_usd_per_hour : line.effective_usd_per_hour;
    c.list_unit = line.list_usd_per_hour;
    c.pricing = focus_pricing(line.category);
    c.sku_price = line.category;
    if (committed) {
      c.cd_id = csv_quote("fleetsim:" + s.name + "/" + p.name + "/commitment");
      c.cd_name = csv_quote("commitment, pool " + p.name);
      c.cd_status = commitment;
    }
    c.consumed = commitment != "Unused";
    c.resource_id = csv_quote(s.name + "/" + p.name);
    c.resource_name = csv_quote(p.name);
    c.resource_type = p.cpu_instance ? "CPU instance" : "GPU";
    c.tags = csv_quote(tags.dump());
    emit(c, p);
  };
  // The commitment itself: one recurring purchase of its device-hours at the committed rate, billed
  // here and effective on the usage rows it covers (the pattern of FOCUS 1.2's examples,
  // specification/data/commitment_discount_flexibility/*.csv)
  auto purchase = [&](const PoolLedger& p, const PricingLine& line) {
    Charge c;
    c.category = "Purchase";
    c.frequency = "Recurring";
    c.what = fmt::format("{} device-hours, pool {}, commitment", p.device, p.name);
    c.qty = line.device_hours;
    c.billed = line.device_hours * line.effective_usd_per_hour;
    c.contracted_unit = line.effective_usd_per_hour;
    c.list_unit = line.list_usd_per_hour;
    c.pricing = "Standard";
    c.sku_price = "committed";
    c.cd_id = csv_quote("fleetsim:" + s.name + "/" + p.name + "/commitment");
    c.cd_name = csv_quote("commitment, pool " + p.name);
    c.consumed = false;
    c.resource_id = c.cd_id;
    c.resource_name = c.cd_name;
    c.resource_type = "Commitment";
    c.tags = csv_quote(Json{{"fleetsim-pool", p.name}}.dump());
    emit(c, p);
  };
  // Owned or colocated devices, one row per part of their cost (the ledger's components), each in
  // its own unit (device-hours of capex, kWh of energy, node-months of space, kW-months of
  // colocation) at its own rate, the owner's cost with no provider's list price or discount above
  // it. The devices were bought before this billing period: their purchase's share (capex,
  // spares) is amortized into EffectiveCost and bills nothing here (FOCUS 1.2 billedcost.md,
  // effectivecost.md); energy, space and colocation are paid in the period, billed as they cost.
  auto owned_rows = [&](const PoolLedger& p, const PricingLine& line, double share, const std::string& what,
                        const Json& tags) {
    for (const auto& comp : p.ownership.components) {
      const bool bought = comp.name == "capex" || comp.name == "spares";
      Charge c;
      c.what = what + ", " + (bought ? "amortized purchase (" + comp.name + ")" : comp.name);
      c.qty = comp.quantity * share;
      c.unit = comp.unit == "kWh"           ? "kWh"
               : comp.unit == "node-months" ? "Node-Months"
               : comp.unit == "kW-months"   ? "kW-Months"
                                            : "Hours";  // device-hours, slice-hours
      c.effective = comp.usd() * share;
      c.billed = bought ? 0.0 : c.effective;
      c.contracted_unit = c.list_unit = comp.usd_per_unit;
      c.pricing = focus_pricing(line.category);
      c.sku_price = line.category + "/" + comp.name;
      c.resource_id = csv_quote(s.name + "/" + p.name);
      c.resource_name = csv_quote(p.name);
      c.resource_type = p.cpu_instance ? "CPU instance" : "GPU";
      c.tags = csv_quote(tags.dump());
      emit(c, p);
    }
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
        if (line.category == "owned" || line.category == "colocated")
          owned_rows(p, line, share, what, tags);
        else
          row(p, line, qty, what, committed ? "Used" : "", tags);
      }
      if (unused > 0)
        row(p, line, unused, fmt::format("{} device-hours, pool {}, unused commitment", p.device, p.name), "Unused",
            Json{{"fleetsim-pool", p.name}});
      if (committed) purchase(p, line);
    }
  }
  return o;
}

}  // namespace fleetsim
