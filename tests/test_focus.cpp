// The ledger as FinOps FOCUS 1.2 rows: the mandatory columns, a commitment's purchase and its used
// and unused hours, billing dates, what each row bought, and owned devices' amortized purchase.
#include <doctest/doctest.h>

#include <cmath>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "helpers.hpp"
#include "libsim/cost/ledger.hpp"
#include "libsim/input/csv.hpp"
#include "libsim/input/input_file.hpp"

using namespace fleetsim;

TEST_CASE("FOCUS 1.2: every mandatory column, unused commitment on its own row, --billing-start moves every period") {
  // FinOps-Open-Cost-and-Usage-Spec/FOCUS_Spec, tag v1.2, specification/columns/*.md: the columns
  // whose "Feature level" is Mandatory
  const std::vector<std::string> mandatory = {
      "BilledCost",         "BillingAccountId", "BillingAccountName", "BillingCurrency",   "BillingPeriodEnd",
      "BillingPeriodStart", "ChargeCategory",   "ChargeClass",        "ChargeDescription", "ChargePeriodEnd",
      "ChargePeriodStart",  "ContractedCost",   "EffectiveCost",      "InvoiceIssuerName", "ListCost",
      "PricingQuantity",    "PricingUnit",      "ProviderName",       "PublisherName",     "ServiceCategory",
      "ServiceName"};
  const Scenario s = test::scenario(read_text_file(FLEETSIM_SOURCE_DIR "/scenarios/committed-and-spot.yaml", "x"));
  const test::Result r = test::run(s);
  const Ledger L = make_ledger(s, *r.tally);
  const std::string at0 = focus_csv(L, s, 0.0);
  const double start = 1793491200;  // 2026-11-01T00:00:00Z
  CHECK(parse_utc_time("2026-11-01", "--billing-start") == start);
  CHECK(parse_utc_time("2024-02-29T12:30:05Z", "--billing-start") == 1709209805);
  for (const char* bad : {"2026-02-30", "2026-13-01", "1969-12-31", "2026-11-01T25:00:00Z", "2026-11-01 00:00", "x",
                          "2026-+1-01", "2026-01- 1", "2026-11-01T 1:00:00Z"})
    CHECK(test::input_error([&] { parse_utc_time(bad, "--billing-start"); }).find("--billing-start: expected") !=
          std::string::npos);
  std::istringstream in0(at0), in1(focus_csv(L, s, start));
  CsvReader a(in0, "<focus>"), b(in1, "<focus>");
  for (const auto& c : mandatory) CHECK_MESSAGE(a.has(c), c);
  double eff = 0, billed = 0, used_h = 0, unused_h = 0, purchase_billed = 0, covered_eff = 0, purchase_h = 0;
  int unused_rows = 0, purchases = 0;
  while (a.next()) {
    REQUIRE(b.next());
    for (const char* col : {"billingperiodstart", "billingperiodend", "chargeperiodstart", "chargeperiodend"})
      CHECK(parse_utc_time(b.get(col), "x") - parse_utc_time(a.get(col), "x") == start);
    CHECK(a.get("billingcurrency") == "USD");
    CHECK(a.get("chargeclass").empty());  // not a correction
    CHECK(!a.get("billingaccountid").empty());
    CHECK(!a.get("invoiceissuername").empty());
    CHECK(!a.get("providername").empty());
    CHECK(a.number("pricingquantity") * a.number("contractedunitprice") == doctest::Approx(a.number("contractedcost")));
    eff += a.number("effectivecost");
    billed += a.number("billedcost");
    const std::string status = a.get("commitmentdiscountstatus");
    // FOCUS 1.2 effectivecost.md: a commitment's Usage rows' EffectiveCost sums to its Purchase
    // rows' BilledCost; they bill nothing themselves, and the purchase is effective on none
    if (a.get("chargecategory") == "Purchase") {
      ++purchases;
      CHECK(a.get("chargefrequency") == "Recurring");
      CHECK(a.number("effectivecost") == 0.0);
      CHECK(a.get("consumedquantity").empty());
      CHECK(!a.get("commitmentdiscountid").empty());
      purchase_billed += a.number("billedcost");
      purchase_h += a.number("commitmentdiscountquantity");
      continue;
    }
    CHECK(a.get("chargecategory") == "Usage");
    if (!status.empty()) {
      CHECK(a.number("billedcost") == 0.0);
      covered_eff += a.number("effectivecost");
    } else {
      CHECK(a.number("billedcost") == doctest::Approx(a.number("effectivecost")));
    }
    // a commitment's rows count its hours, used or not; other rows have none
    if (status.empty()) {
      CHECK(a.get("commitmentdiscountquantity").empty());
      CHECK(a.get("commitmentdiscountunit").empty());
    } else {
      CHECK(a.number("commitmentdiscountquantity") == doctest::Approx(a.number("pricingquantity")));
      CHECK(a.get("commitmentdiscountunit") == "Hours");
    }
    if (status == "Unused") {
      ++unused_rows;
      unused_h += a.number("pricingquantity");
      CHECK(a.get("tags").find("fleetsim-class") == std::string::npos);  // no class consumed it
      // FOCUS 1.2: ConsumedQuantity and ConsumedUnit are null on unused commitment rows
      CHECK(a.get("consumedquantity").empty());
      CHECK(a.get("consumedunit").empty());
    } else if (status == "Used") {
      CHECK(a.number("consumedquantity") == doctest::Approx(a.number("pricingquantity")));
      CHECK(a.get("consumedunit") == "Hours");
      used_h += a.number("pricingquantity");
      CHECK(a.get("tags").find("fleetsim-class") != std::string::npos);
    }
    // a commitment's contracted price is the list price; its discount shows in the effective cost
    if (a.get("pricingcategory") == "Committed")
      CHECK(a.number("contractedunitprice") == doctest::Approx(a.number("listunitprice")));
  }
  CHECK(unused_rows == 1);
  // FOCUS's Numeric Format: no exponent, even for a class of a few cents' worth
  const Scenario tiny = test::scenario(read_text_file(FLEETSIM_SOURCE_DIR "/scenarios/committed-and-spot.yaml", "x"),
                                       {"classes.summarize.pool=chat", "classes.summarize.arrival.rate_per_s=0.01",
                                        "classes.summarize.prompt_tokens=16", "classes.summarize.output_tokens=1"});
  std::istringstream tin(focus_csv(make_ledger(tiny, *test::run(tiny).tally), tiny, 0.0));
  CsvReader t(tin, "<focus>");
  double smallest = 1e300;
  while (t.next())
    for (const char* col : {"billedcost", "effectivecost", "listcost", "contractedcost", "pricingquantity",
                            "consumedquantity", "listunitprice", "contractedunitprice", "commitmentdiscountquantity"}) {
      const std::string v = t.get(col);
      CHECK_MESSAGE(v.find_first_of("eE") == std::string::npos, v);
      if (!v.empty() && t.number(col) > 0) smallest = std::min(smallest, t.number(col));
    }
  CHECK(smallest < 1e-4);  // the check saw a value that {:.9g} would have written with an exponent
  const PoolLedger& chat = L.pools[0];
  CHECK(unused_h == doctest::Approx(chat.cost.hours[size_t(Bucket::committed_unused)]));
  CHECK(unused_h > 0);
  CHECK(used_h + unused_h == doctest::Approx(chat.cost.lines[0].device_hours));
  CHECK(eff == doctest::Approx(L.total.effective_usd()));
}

TEST_CASE("FOCUS ResourceType: what each pool's hours bought, a GPU or a CPU instance") {
  const Scenario s = test::scenario(read_text_file(FLEETSIM_SOURCE_DIR "/scenarios/reranker-cpu-vs-gpu.yaml", "x"),
                                    {"duration_s=600", "warmup_s=60"});
  const test::Result r = test::run(s);
  std::istringstream in(focus_csv(make_ledger(s, *r.tally), s, 0.0));
  CsvReader rd(in, "<focus>");
  int cpu = 0, gpu = 0;
  while (rd.next()) {
    const std::string sku = rd.get("skuid");
    CAPTURE(sku);
    const bool on_cpu = sku.rfind("c7i-", 0) == 0 || sku.rfind("c6i-", 0) == 0;
    CHECK(rd.get("resourcetype") == (on_cpu ? "CPU instance" : "GPU"));
    (on_cpu ? cpu : gpu)++;
  }
  CHECK(cpu > 0);
  CHECK(gpu > 0);
}

TEST_CASE(
    "FOCUS: owned devices are a row per part of their cost, the purchase amortized and billed when it was bought") {
  // own-vs-rent: the devices' capex spread over their refresh years, energy and space. FOCUS 1.2
  // (specification/columns/billedcost.md, effectivecost.md): an amortized purchase is in
  // EffectiveCost only; the running costs are billed in the period; no provider list price, so no
  // discount against one
  const Scenario s = test::scenario(read_text_file(FLEETSIM_SOURCE_DIR "/scenarios/own-vs-rent.yaml", "x"),
                                    {"duration_s=1800", "warmup_s=300"});
  const test::Result r = test::run(s);
  const Ledger L = make_ledger(s, *r.tally);
  const OwnershipLedger& o = L.pools[0].ownership;
  std::map<std::string, double> part_usd;
  for (const auto& c : o.components) part_usd[c.name] = c.usd();
  REQUIRE(part_usd.size() == 3);  // capex, energy, space
  std::istringstream in(focus_csv(L, s, 0.0));
  CsvReader rd(in, "<focus>");
  double billed = 0, effective = 0;
  int rows = 0;
  while (rd.next()) {
    ++rows;
    const std::string part = rd.get("skupriceid").substr(rd.get("skupriceid").rfind('/') + 1);
    CAPTURE(part);
    REQUIRE(part_usd.count(part) == 1);
    CHECK(rd.get("skupriceid") == "h100-sxm-80gb/owned/" + part);
    CHECK(rd.number("effectivecost") == doctest::Approx(part_usd[part]));
    CHECK(rd.number("billedcost") == (part == "capex" ? 0.0 : doctest::Approx(part_usd[part])));
    CHECK(rd.number("listcost") == doctest::Approx(rd.number("effectivecost")));
    CHECK(rd.number("contractedcost") == doctest::Approx(rd.number("effectivecost")));
    CHECK(rd.number("pricingquantity") * rd.number("listunitprice") == doctest::Approx(rd.number("listcost")));
    CHECK(rd.get("pricingcategory") == "Other");
    // each part in its own unit: the device-hours are counted once
    const std::map<std::string, std::string> unit = {{"capex", "Hours"}, {"energy", "kWh"}, {"space", "Node-Months"}};
    CHECK(rd.get("pricingunit") == unit.at(part));
    CHECK(rd.get("consumedunit") == unit.at(part));
    if (part == "capex") CHECK(rd.number("consumedquantity") == doctest::Approx(o.owned_unit_hours));
    billed += rd.number("billedcost");
    effective += rd.number("effectivecost");
  }
  CHECK(rows == 3);
  CHECK(effective == doctest::Approx(L.total.effective_usd()));
  CHECK(billed == doctest::Approx(L.total.effective_usd() - part_usd["capex"]));
}
