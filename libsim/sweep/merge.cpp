// Sweeps: shard documents checked against the schema and merged; JSON parsed with located errors; shard files read.
#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <limits>
#include <map>
#include <set>

#include "input/input_file.hpp"
#include "sweep/internal.hpp"

namespace fleetsim {

using sweep_detail::assemble;
using sweep_detail::At;
using sweep_detail::check_row;
using sweep_detail::describe;
using sweep_detail::Fail;
using sweep_detail::first_difference;
using sweep_detail::grid_point;
using sweep_detail::kHeadline;
using sweep_detail::pointer_token;
using sweep_detail::SweepShape;
using sweep_detail::value_at;

namespace sweep_detail {

namespace {
// Whether a container is small enough to write out whole: a few values, a few levels deep (a
// file's nesting can be as deep as its size, and writing it out would recurse that deep).
bool small_container(const Json& v, int depth = 0) {
  if (!v.is_structured()) return true;
  if (depth > 3 || v.size() > 8) return false;
  for (const auto& x : v)
    if (!small_container(x, depth + 1)) return false;
  return true;
}
}  // namespace

// A value as an error message shows it: strings quoted and cut short, containers by kind.
std::string describe(const Json& v) {
  switch (v.type()) {
    case Json::value_t::null: return "null";
    case Json::value_t::discarded: return "nothing";
    case Json::value_t::object:
    case Json::value_t::array: {
      if (!small_container(v)) return v.is_object() ? "an object" : "an array";
      const std::string s = v.dump(-1, ' ', false, Json::error_handler_t::replace);
      if (s.size() <= 48) return s;
      return v.is_object() ? "an object" : "an array";
    }
    default: {
      std::string s = v.dump(-1, ' ', false, Json::error_handler_t::replace);
      if (s.size() > 48) s = s.substr(0, 44) + (v.is_string() ? "...\"" : "...");
      return s;
    }
  }
}

std::string pointer_token(const std::string& key) {
  std::string out;
  for (char c : key) out += c == '~' ? std::string("~0") : c == '/' ? std::string("~1") : std::string(1, c);
  return out;
}

}  // namespace sweep_detail

namespace {

// The parameters of grid point g (the last parameter varies fastest).
Json grid_parameters(const std::vector<std::pair<std::string, std::vector<Json>>>& params, uint64_t g) {
  const auto idx = grid_point(g, params.size(), [&](size_t k) { return params[k].second.size(); });
  Json j = Json::object();
  for (size_t k = 0; k < params.size(); ++k) j[params[k].first] = params[k].second[idx[k]];
  return j;
}

void check_metrics(const At& m, int depth) {
  if (depth > 8) m.fail("nested too deeply for a metrics section");
  for (auto it = m.object().begin(); it != m.v.end(); ++it) {
    const At x = m[it.key()];
    if (x.v.is_object())
      check_metrics(x, depth + 1);
    else if (!x.v.is_number() && !x.v.is_null())
      x.fail("expected a number, null or an object, got " + describe(x.v));
  }
}

}  // namespace

namespace sweep_detail {

// One row (docs/output-schema.md, rows[]); returns its configuration index.
uint64_t check_row(const At& row, const SweepShape& sh) {
  row.object();
  const At index = row["index"];
  const uint64_t i = index.uint();
  if (i >= sh.configurations)
    index.fail(fmt::format("configuration {} is out of range: the sweep has {} configurations (0..{})", i,
                           sh.configurations, sh.configurations - 1));
  if (i % sh.shard_count != sh.shard_index)
    index.fail(fmt::format("configuration {} belongs to shard {} of {}, not to shard {}", i, i % sh.shard_count,
                           sh.shard_count, sh.shard_index));
  const At params = row["parameters"];
  params.object();
  const Json expected = sh.expected_parameters ? sh.expected_parameters(i) : Json(nullptr);
  for (const auto& [path, values] : sh.params) {
    const At v = params[path];
    if (expected.is_object()) {
      if (v.v != expected[path])
        v.fail(fmt::format("{}, but configuration {} of the sweep has {}", describe(v.v), i, describe(expected[path])));
    } else if (std::find(values.begin(), values.end(), v.v) == values.end()) {
      v.fail(fmt::format("{} is not one of the values swept for {}", describe(v.v), path));
    }
  }
  if (params.v.size() != sh.params.size())
    for (auto it = params.v.begin(); it != params.v.end(); ++it)
      if (std::none_of(sh.params.begin(), sh.params.end(), [&](const auto& p) { return p.first == it.key(); }))
        params[it.key()].fail("not a parameter of the sweep");
  const bool feasible = row["feasible"].boolean();
  // 0 for a configuration that cannot run; fewer than the sweep's where sequential stopping settled it
  if (row.has("replications")) row["replications"].uint(0, sh.replications);
  if (row.has("step_time")) row["step_time"].str();  // the step-time model that priced it
  const At reason = row["reason"];
  reason.string_or_null();
  const At violations = row["violations"];
  for (size_t k = 0; k < violations.array().size(); ++k) violations.item(k).str();
  const At metrics = row["metrics"], ci = row["ci95"];
  if (row.has("stopped_at_s")) {  // a run stopped once its miss was certain
    const At at = row["stopped_at_s"];
    if (!at.v.is_number() || !(at.v.get<double>() >= 0.0)) at.fail("expected a time in seconds, got " + describe(at.v));
    if (!metrics.v.is_null()) metrics.fail("expected null (the run stopped early), got " + describe(metrics.v));
    if (violations.v.empty()) violations.fail("empty, but the run stopped on a certain miss");
  }
  if (metrics.v.is_null()) {
    // a configuration that cannot run
    if (feasible) row["feasible"].fail("true, but a configuration without metrics cannot be feasible");
    reason.str();
    if (!ci.v.is_null()) ci.fail("expected null (the configuration has no metrics), got " + describe(ci.v));
  } else {
    check_metrics(metrics, 0);
    ci.object();
    for (const char* h : kHeadline) {
      // (a document from before the default objective had an interval has none for it)
      if (std::string(h) == "cost.per_million_tokens_usd" && !ci.has(h)) continue;
      const At c = ci[h];
      if (!c.v.is_number() && !c.v.is_null()) c.fail("expected a number or null, got " + describe(c.v));
    }
    for (auto it = ci.v.begin(); it != ci.v.end(); ++it) {
      const bool slo = std::find(sh.slo_metrics.begin(), sh.slo_metrics.end(), it.key()) != sh.slo_metrics.end();
      if (!slo &&
          std::none_of(std::begin(kHeadline), std::end(kHeadline), [&](const char* h) { return it.key() == h; }))
        ci[it.key()].fail("not a metric with a confidence interval (a headline metric or an SLO term's)");
      if (slo && !it.value().is_number() && !it.value().is_null())
        ci[it.key()].fail("expected a number or null, got " + describe(it.value()));
    }
    if (feasible != violations.v.empty())
      row["feasible"].fail(feasible
                               ? fmt::format("true, but violations lists {} missed SLO bounds", violations.v.size())
                               : "false, but the configuration ran and violations is empty");
    if (!feasible) reason.str();
  }
  return i;
}

// The first place where two checked headers differ, as a JSON pointer, or "".
std::string first_difference(const Json& a, const Json& b, const std::string& ptr) {
  if (a.is_object() && b.is_object()) {
    for (auto it = a.begin(); it != a.end(); ++it) {
      const std::string p = ptr + "/" + pointer_token(it.key());
      if (!b.contains(it.key())) return p;
      const std::string d = first_difference(it.value(), b[it.key()], p);
      if (!d.empty()) return d;
    }
    for (auto it = b.begin(); it != b.end(); ++it)
      if (!a.contains(it.key())) return ptr + "/" + pointer_token(it.key());
    return "";
  }
  if (a.is_array() && b.is_array() && a.size() == b.size()) {
    for (size_t i = 0; i < a.size(); ++i) {
      const std::string d = first_difference(a[i], b[i], ptr + "/" + std::to_string(i));
      if (!d.empty()) return d;
    }
    return "";
  }
  return a == b ? "" : ptr;
}

std::string value_at(const Json& doc, const std::string& ptr) {
  const Json::json_pointer p(ptr);
  return doc.contains(p) ? describe(doc.at(p)) : std::string("nothing");
}

}  // namespace sweep_detail

namespace {

// The header of a sweep document: everything but rows and summary (the summary is recomputed).
SweepShape check_header(const At& doc) {
  doc.object();
  if (!doc.has("kind")) doc.fail("missing key \"kind\": not a fleetsim sweep document");
  if (doc["kind"].v != "sweep")
    doc["kind"].fail(describe(doc["kind"].v) + ": not a fleetsim sweep document (kind \"sweep\")");
  const At ver = doc["schema_version"];
  if (!ver.v.is_number_integer() || ver.v != kSchemaVersion)
    ver.fail(fmt::format("{}: this fleetsim reads schema_version {}", describe(ver.v), kSchemaVersion));
  const At sc = doc["scenario"];
  sc["name"].str();
  sc["source"].str();
  sc["seed"].uint();

  SweepShape sh;
  const At sw = doc["sweep"];
  const At ps = sw["parameters"];
  if (ps.array().empty()) ps.fail("expected at least one parameter, got an empty array");
  long double grid = 1;
  for (size_t k = 0; k < ps.v.size(); ++k) {
    const At p = ps.item(k);
    const std::string& path = p["path"].str();
    if (path.empty()) p["path"].fail("expected a parameter path, got an empty string");
    for (const auto& q : sh.params)
      if (q.first == path) p["path"].fail(fmt::format("parameter \"{}\" appears twice", path));
    const At vals = p["values"];
    if (vals.array().empty()) vals.fail("expected at least one value, got an empty array");
    for (size_t j = 0; j < vals.v.size(); ++j)
      if (!vals.v[j].is_number() && !vals.v[j].is_string())
        vals.item(j).fail("expected a number or a string, got " + describe(vals.v[j]));
    sh.params.emplace_back(path, std::vector<Json>(vals.v.begin(), vals.v.end()));
    grid *= (long double)vals.v.size();
  }
  const At gs = sw["grid_size"];
  sh.grid_size = gs.uint(1);
  if ((long double)sh.grid_size != grid)
    gs.fail(fmt::format("{}, but the parameters' values make a grid of {}", sh.grid_size, double(grid)));
  const At sample = sw["sample"];
  sh.sampled = !sample.v.is_null();
  if (sh.sampled && sh.grid_size < 2)
    sample.fail(fmt::format("expected null for a grid of {}, got {}", sh.grid_size, describe(sample.v)));
  const uint64_t n = sh.sampled ? sample.uint(1, sh.grid_size - 1) : sh.grid_size;
  const At cf = sw["configurations"];
  sh.configurations = cf.uint(1);
  if (sh.configurations != n)
    cf.fail(fmt::format("{}, but the {} has {}", sh.configurations, sh.sampled ? "sample" : "grid", n));
  sh.replications = sw["replications"].uint(1, 10000);
  sw["objective"].str();
  // (documents written before these settings existed have none of them)
  if (sw.has("feasible_on")) {
    const At on = sw["feasible_on"];
    if (on.v != "bound" && on.v != "mean") on.fail("expected \"bound\" or \"mean\", got " + describe(on.v));
  }
  for (const char* flag : {"sequential", "stop_certain_misses"})
    if (sw.has(flag)) sw[flag].boolean();
  const At slo = sw["slo"];
  for (size_t k = 0; k < slo.array().size(); ++k) {
    const At t = slo.item(k);
    sh.slo_metrics.push_back(t["metric"].str());
    const At b = t["bound"];
    if (b.v != "max" && b.v != "min") b.fail("expected \"max\" or \"min\", got " + describe(b.v));
    t["limit"].number();
  }
  sw["fingerprint"].str();
  if (!sh.sampled) sh.expected_parameters = [params = sh.params](uint64_t i) { return grid_parameters(params, i); };

  const At shard = doc["shard"];
  sh.shard_count = uint32_t(shard["count"].uint(1, std::numeric_limits<uint32_t>::max()));
  const At si = shard["index"];
  sh.shard_index = uint32_t(si.uint());
  if (si.v.get<uint64_t>() >= sh.shard_count)
    si.fail(fmt::format("shard {} is out of range for {} shards (0..{})", si.v.get<uint64_t>(), sh.shard_count,
                        sh.shard_count - 1));
  return sh;
}

// Configurations k, k+n, k+2n, ... below `total`: how many.
uint64_t shard_size(uint64_t total, uint32_t k, uint32_t n) { return total > k ? (total - 1 - k) / n + 1 : 0; }

// The first configuration of shard k/n missing from `seen` (ascending), which holds fewer.
uint64_t first_missing(const std::set<uint64_t>& seen, uint32_t k, uint32_t n) {
  uint64_t want = k;
  for (uint64_t i : seen) {
    if (i != want) return want;
    want += n;
  }
  return want;
}

// Check one shard document; returns its shape and rows (already checked).
SweepShape check_shard(const std::string& file, const Json& doc) {
  const Fail fail = [&](const std::string& ptr, const std::string& msg) {
    throw InputError(Location{file, 0, 0, ""}, (ptr.empty() ? "/" : ptr) + ": " + msg);
  };
  const At root{doc, "", &fail};
  SweepShape sh = check_header(root);
  const At rows = root["rows"];
  std::map<uint64_t, size_t> seen;
  for (size_t r = 0; r < rows.array().size(); ++r) {
    const At row = rows.item(r);
    const uint64_t i = check_row(row, sh);
    const auto [it, fresh] = seen.emplace(i, r);
    if (!fresh) row["index"].fail(fmt::format("configuration {} appears twice (also at /rows/{})", i, it->second));
  }
  const uint64_t want = shard_size(sh.configurations, sh.shard_index, sh.shard_count);
  if (seen.size() != want) {
    std::set<uint64_t> ids;
    for (const auto& [i, _] : seen) ids.insert(i);
    rows.fail(fmt::format("configuration {} is missing: shard {} of {} holds {} configurations, this file has {}",
                          first_missing(ids, sh.shard_index, sh.shard_count), sh.shard_index, sh.shard_count, want,
                          seen.size()));
  }
  return sh;
}

}  // namespace

void check_sweep_document(const std::string& file, const Json& doc) { check_shard(file, doc); }

Json merge_sweeps(const std::vector<std::pair<std::string, Json>>& shards) {
  if (shards.empty()) throw InputError(Location{"fleetsim merge", 0, 0, ""}, "no shard files given");
  auto bad = [](const std::string& file, const std::string& msg) { throw InputError(Location{file, 0, 0, ""}, msg); };
  const auto& [first_file, first] = shards[0];
  std::map<uint32_t, std::string> seen;
  std::vector<Json> rows;
  uint32_t count = 0;
  const Json* shard0 = &first;  // the header, whatever order the files come in
  for (const auto& [file, doc] : shards) {
    const SweepShape sh = check_shard(file, doc);
    // the same sweep: every field of scenario (but where the file was read from) and of sweep
    // equal to the first shard's; the fingerprint (of the scenario text and overrides) last
    Json a = {{"scenario", doc["scenario"]}, {"sweep", doc["sweep"]}};
    Json b = {{"scenario", first["scenario"]}, {"sweep", first["sweep"]}};
    for (Json* j : {&a, &b}) {
      (*j)["scenario"].erase("source");
      (*j)["sweep"].erase("fingerprint");
    }
    std::string d = first_difference(a["scenario"], b["scenario"], "/scenario");
    if (d.empty()) d = first_difference(a["sweep"], b["sweep"], "/sweep");
    if (d.empty() && doc["sweep"]["fingerprint"] != first["sweep"]["fingerprint"]) d = "/sweep/fingerprint";
    if (!d.empty())
      bad(file, fmt::format("{}: {}, but {} has {}: the shards are of different sweeps{}", d, value_at(doc, d),
                            first_file, value_at(first, d),
                            d == "/sweep/fingerprint" ? " (the scenario's text or its --set overrides differ)" : ""));
    const uint32_t k = sh.shard_index, n = sh.shard_count;
    if (count == 0) count = n;
    if (n != count)
      bad(file,
          fmt::format("/shard/count: {}, but {} has {}: the shards are of different splits", n, first_file, count));
    if (seen.count(k)) bad(file, fmt::format("/shard/index: shard {} appears twice (also {})", k, seen[k]));
    seen[k] = file;
    if (k == 0) shard0 = &doc;
    for (const auto& r : doc["rows"]) rows.push_back(r);
  }
  if (seen.size() != count) {
    std::string missing;
    int listed = 0;
    for (uint32_t k = 0; k < count; ++k) {
      if (seen.count(k)) continue;
      if (listed++ == 8) {
        missing += ", ...";
        break;
      }
      missing += (missing.empty() ? "" : ", ") + std::to_string(k);
    }
    bad(first_file, fmt::format("incomplete: {} of {} shards given; missing shard {}", seen.size(), count, missing));
  }
  Json header = *shard0;
  header.erase("rows");
  header.erase("summary");
  header["shard"] = {{"index", 0}, {"count", 1}};
  return assemble(header, std::move(rows));
}

Json read_json_file(const std::string& path) {
  const std::string text = read_text_file(path, "shard file");
  // a sweep's CSV (or table) output has lost what merging needs: say which format to write
  const size_t first = text.find_first_not_of(" \t\r\n\xEF\xBB\xBF");
  if (first != std::string::npos && text[first] != '{' && text[first] != '[') {
    const std::string line = text.substr(first, text.find('\n', first) - first);
    if (line.rfind("index,", 0) == 0 || line.rfind("sweep ", 0) == 0)
      throw InputError(Location{path, 1, 1, line.substr(0, 200)},
                       "a sweep's CSV or table output, not a shard document: merge reads the JSON a shard writes "
                       "with `fleetsim sweep --shard K/N --format json`");
  }
  return parse_json_located(text, path);
}

}  // namespace fleetsim
