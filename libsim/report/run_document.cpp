// A run document read back (`fleetsim report run.json`): each value must have the type fleetsim
// writes at its place, so a hand-edited or foreign file is refused, not drawn.
#include <fmt/format.h>

#include <map>
#include <memory>
#include <string>

#include "base/error.hpp"
#include "core/tally.hpp"
#include "report/report.hpp"

namespace fleetsim {

namespace {

// The schema path of a value: names of classes, pools and teams (and the ledger's) stand as "*".
bool keyed_by_name(const std::string& parent) {
  return parent == "classes" || parent == "pools" || parent == "teams" || parent == "newer_device";
}

enum class Kind { number, text, boolean };

void leaf_kinds(const Json& j, const std::string& path, const std::string& last, std::map<std::string, Kind>& out) {
  if (j.is_object()) {
    for (auto it = j.begin(); it != j.end(); ++it)
      leaf_kinds(it.value(), path + "/" + (keyed_by_name(last) ? std::string("*") : it.key()), it.key(), out);
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
    for (const Scenario& s : {load_default_scenario(), load_scenario_text(two_pools, "<reference>", ".", {})}) {
      auto t = std::make_unique<Tally>();
      tally_clear(*t);
      leaf_kinds(run_report(s, *t), "", "", k);
    }
    return k;
  }();
  return kinds;
}

void check_leaves(const Json& j, const std::string& path, const std::string& shown, const std::string& last,
                  const std::map<std::string, Kind>& ref, const std::string& file) {
  if (j.is_object()) {
    for (auto it = j.begin(); it != j.end(); ++it)
      check_leaves(it.value(), path + "/" + (keyed_by_name(last) ? std::string("*") : it.key()), shown + "/" + it.key(),
                   it.key(), ref, file);
    return;
  }
  const auto r = ref.find(path);
  if (r == ref.end()) return;  // a value this fleetsim does not write: not read either
  const bool ok = r->second == Kind::number    ? j.is_number() || j.is_null()
                  : r->second == Kind::text    ? j.is_string()
                  : r->second == Kind::boolean ? j.is_boolean()
                                               : true;
  if (!ok)
    throw InputError(Location{file, 0, 0, ""},
                     fmt::format("{}: expected {}, got {} (a run document from `fleetsim run --format json`)", shown,
                                 r->second == Kind::number ? "a number or null"
                                 : r->second == Kind::text ? "a string"
                                                           : "true or false",
                                 j.dump().substr(0, 60)));
}

}  // namespace

void check_run_document(const Json& doc, const std::string& file) {
  check_leaves(doc, "", "", "", reference_kinds(), file);
}

}  // namespace fleetsim
