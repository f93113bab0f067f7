// A run document read back (`fleetsim report run.json`): each value, container or leaf, must have
// the type fleetsim writes at its place, so a hand-edited or foreign file is refused, not drawn.
#include <fmt/format.h>

#include <map>
#include <memory>
#include <string>

#include "backend/runner.hpp"
#include "base/error.hpp"
#include "core/tally.hpp"
#include "report/documents.hpp"
#include "report/report.hpp"
#include "report/timeline.hpp"

namespace fleetsim {

namespace {

// The schema path of a value: names of classes, pools and teams (and the ledger's) stand as "*".
bool keyed_by_name(const std::string& parent) { return parent == "classes" || parent == "pools" || parent == "teams"; }

enum class Kind { number, text, boolean, object, array };

const char* kind_name(Kind k) {
  switch (k) {
    case Kind::number: return "a number or null";
    case Kind::text: return "a string";
    case Kind::boolean: return "true or false";
    case Kind::object: return "an object";
    case Kind::array: return "an array";
  }
  return "";
}

// Every value's kind by schema path; an array's elements stand as "[]" (each like the first).
void kinds_of(const Json& j, const std::string& path, const std::string& last, std::map<std::string, Kind>& out) {
  if (j.is_object()) {
    out.emplace(path, Kind::object);
    for (auto it = j.begin(); it != j.end(); ++it)
      kinds_of(it.value(), path + "/" + (keyed_by_name(last) ? std::string("*") : it.key()), it.key(), out);
  } else if (j.is_array()) {
    out.emplace(path, Kind::array);
    for (const Json& e : j) kinds_of(e, path + "/[]", "[]", out);
  } else if (j.is_number() || j.is_null()) {
    out.emplace(path, Kind::number);  // a metric with no value is null
  } else if (j.is_string()) {
    out.emplace(path, Kind::text);
  } else if (j.is_boolean()) {
    out.emplace(path, Kind::boolean);
  }
}

const std::map<std::string, Kind>& reference_kinds() {
  static const std::map<std::string, Kind> kinds = [] {
    std::map<std::string, Kind> k;
    // a multi-pool, multi-class scenario has every section a run document can have
    const char* const two_pools =
        "model: llama-3.1-8b\nduration_s: 60\npools:\n  a: {device: h100-sxm-80gb, fleet: {replicas: 1}}\n  b: "
        "{device: a100-80gb, fleet: {replicas: 1}}\n"
        "classes:\n"
        "  x: {pool: a, team: t, arrival: {process: poisson, rate_per_s: 1}, prompt_tokens: 100, output_tokens: 10}\n"
        "  y: {pool: b, team: u, arrival: {process: poisson, rate_per_s: 1}, prompt_tokens: 100, output_tokens: 10}\n";
    // and an owned pool's sections: its cost parts, its years and a newer device's view
    const char* const owned =
        "model: llama-3.1-8b\nduration_s: 60\ndevice: a100-80gb\nfleet:\n  replicas: 2\n  pricing:\n    owned:\n"
        "      node_capex_usd: 150000\n      refresh_years: 5\n      years: 2\n"
        "      power: {idle_kw_per_device: 0.06, host_kw_per_node: 2.5, pue: 1.4, usd_per_kwh: 0.12}\n"
        "      space_usd_per_node_month: 600\n"
        "      newer: {device: h100-sxm-80gb, replicas: 1, node_capex_usd: 400000, capex_change_per_year: -0.15}\n"
        "workload: {arrival: {process: poisson, rate_per_s: 1}, prompt_tokens: 100, output_tokens: 10}\n";
    const Scenario one =
        ScenarioSource::builtin_default().with_overrides(parse_sets({"duration_s=120", "warmup_s=10"})).instantiate();
    for (const Scenario& s : {one, load_scenario_text(two_pools, "<reference>", ".", {})}) {
      // an empty run (the keys of a run with nothing in it) and a short real one (filled arrays)
      auto t = std::make_unique<Tally>();
      tally_clear(*t);
      Json r = run_report(s, *t);
      r["timeline"] = Json::array({timeline_row(s, *t, 0.0, 1.0)});
      r["worst_window"] = {{"t0_s", 0.0}, {"t1_s", 1.0}, {"window_s", 1.0}, {"ttft_p99_s", nullptr}};
      kinds_of(r, "", "", k);
      HostWorkspace ws;
      kinds_of(run_report(s, *simulate_once(s.params(), 0, ws)), "", "", k);
    }
    const ScenarioSource src = ScenarioSource::from_text(owned, "<reference>", ".");
    kinds_of(run_document(src, src.instantiate(), 0, 0), "", "", k);
    return k;
  }();
  return kinds;
}

void check_kinds(const Json& j, const std::string& path, const std::string& shown, const std::string& last,
                 const std::map<std::string, Kind>& ref, const std::string& file) {
  const auto r = ref.find(path);
  if (r == ref.end()) return;  // a value this fleetsim does not write: not read either
  const Kind want = r->second;
  const bool ok = want == Kind::number    ? j.is_number() || j.is_null()
                  : want == Kind::text    ? j.is_string()
                  : want == Kind::boolean ? j.is_boolean()
                  : want == Kind::object  ? j.is_object()
                                          : j.is_array();
  if (!ok)
    throw InputError(Location{file, 0, 0, ""},
                     fmt::format("{}: expected {}, got {} (a run document from `fleetsim run --format json`)",
                                 shown.empty() ? "/" : shown, kind_name(want), j.dump().substr(0, 60)));
  if (j.is_object()) {
    for (auto it = j.begin(); it != j.end(); ++it)
      check_kinds(it.value(), path + "/" + (keyed_by_name(last) ? std::string("*") : it.key()), shown + "/" + it.key(),
                  it.key(), ref, file);
  } else if (j.is_array()) {
    for (size_t i = 0; i < j.size(); ++i)
      check_kinds(j[i], path + "/[]", shown + "/" + std::to_string(i), "[]", ref, file);
  }
}

}  // namespace

void check_run_document(const Json& doc, const std::string& file) {
  check_kinds(doc, "", "", "", reference_kinds(), file);
}

}  // namespace fleetsim
