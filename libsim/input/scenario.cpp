// Scenario files: the whole document (top-level keys, pools, classes) built from YAML with its
// overrides; each section's parsing is in scenario_<section>.cpp, sources and --set in
// scenario_source.cpp.
#include "input/scenario.hpp"

#include <algorithm>

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "base/error.hpp"
#include "core/workspace.hpp"
#include "input/input_file.hpp"
#include "input/scenario_internal.hpp"
#include "input/yaml_node.hpp"

namespace fleetsim {

const char* router_name(Router r) {
  switch (r) {
    case Router::round_robin: return "round_robin";
    case Router::least_outstanding: return "least_outstanding";
    case Router::central_queue: return "central_queue";
    case Router::session_affinity: return "session_affinity";
    case Router::prefix_aware: return "prefix_aware";
  }
  return "?";
}
const char* batching_name(Batching b) { return b == Batching::continuous ? "continuous" : "static"; }
const char* arrival_name(ArrivalKind a) {
  switch (a) {
    case ArrivalKind::poisson: return "poisson";
    case ArrivalKind::gamma: return "gamma";
    case ArrivalKind::diurnal: return "diurnal";
    case ArrivalKind::trace: return "trace";
    case ArrivalKind::constant: return "constant";
    case ArrivalKind::burst: return "burst";
    case ArrivalKind::concurrency: return "concurrency";
  }
  return "?";
}
const char* perf_name(PerfKind p) {
  return p == PerfKind::roofline ? "roofline" : p == PerfKind::linear ? "linear" : "calibrated";
}
const char* perf_name(const PoolSpec& p) {
  return p.perf_model == PerfKind::calibrated && p.profile && p.profile->device.empty() ? "physics"
                                                                                        : perf_name(p.perf_model);
}

namespace {

// A pool's, class's or team's name is one part of the dotted paths that address it (--set
// pools.NAME.fleet.replicas, a budget's classes.NAME.latency_s..., the run CSV's columns): a dot in
// it would split it in two.
std::string path_name(const detail::N& parent, const YAML::Node& key, const char* what) {
  const std::string name = parent.key_name(key);
  if (name.find_first_not_of(" \t") == std::string::npos)
    detail::N{key, parent.path, parent.src}.fail(std::string("expected a ") + what +
                                                 " name, got an empty one (it is a part of paths such as --set "
                                                 "pools.NAME.KEY and of the report's columns)");
  if (name.find('.') != std::string::npos)
    detail::N{key, parent.path, parent.src}.fail(
        std::string("a ") + what + " name cannot hold '.' ('" + name +
        "'): it separates the parts of a path such as --set pools.NAME.KEY; use "
        "'-' or '_'");
  return name;
}

using namespace detail;

namespace {
// Whether the scenario's sweep section sets a key under `section` (pools, classes), or the whole of it.
bool swept_under(const N& root, const std::string& section) {
  if (!root.has("sweep") || !root.at("sweep").node.IsMap() || !root.at("sweep").has("parameters")) return false;
  const YAML::Node ps = root.at("sweep").at("parameters").node;
  if (!ps.IsMap()) return false;
  for (auto it = ps.begin(); it != ps.end(); ++it) {
    const std::string p = it->first.IsScalar() ? it->first.Scalar() : "";
    if (p == section || p.rfind(section + ".", 0) == 0) return true;
  }
  return false;
}
}  // namespace

constexpr double kMaxDurationS = 30.0 * 86400;
constexpr double kMinWindowS = 1.0;  // the shortest measured window
// (within rounding: 1.9 - 0.9 is 0.9999999999999999 in binary, a window of 1 s as written)
static bool window_too_short(double duration_s, double warmup_s) {
  return duration_s - warmup_s < kMinWindowS * (1.0 - 1e-12);
}

Scenario build(const YAML::Node& root_node, Source& src, const std::vector<Override>& overrides) {
  const N root{root_node, "", &src};
  if (!root_node.IsMap()) root.fail("a scenario must be a YAML mapping (key: value lines)");
  root.allow_keys({"name",      "description",  "seed",   "duration_s", "warmup_s",     "device",
                   "partition", "time_slicing", "mps",    "model",      "weight_dtype", "expert_weight_dtype",
                   "kv_dtype",  "engine",       "fleet",  "workload",   "pools",        "classes",
                   "catalog",   "sweep",        "budgets"});
  Scenario s;
  s.source = src.file;
  for (const auto& o : overrides) s.overrides.push_back(o.label);
  s.name = root.has("name") ? root.at("name").name() : std::filesystem::path(src.file).stem().string();
  if (root.has("description")) s.description = root.at("description").str();
  s.seed = root.has("seed") ? root.at("seed").unsigned_integer() : 1;
  // duration_s: trace_end runs to the last arrival of any replayed trace (set once the classes are read)
  const N dur = root.req("duration_s");
  const bool to_trace_end = dur.node.IsScalar() && dur.node.Scalar() == "trace_end";
  if (!to_trace_end && dur.node.IsScalar()) {
    const std::string& v = dur.node.Scalar();
    char* end = nullptr;
    std::strtod(v.c_str(), &end);
    if (v.empty() || *end != '\0')
      dur.fail("expected a number of seconds, or trace_end (run to the last trace arrival); got '" + v + "'");
  }
  s.duration_s = to_trace_end ? kMaxDurationS : dur.pos(kMaxDurationS);
  s.warmup_s = root.has("warmup_s") ? root.at("warmup_s").num_in(0, kMaxDurationS, "warmup_s") : 0.0;
  if (!to_trace_end && s.warmup_s >= s.duration_s)
    root.at("warmup_s").fail("warmup_s must be less than duration_s", ErrorKind::inconsistent);
  // rates, percentiles and dollars per hour need time to be measured over
  auto too_short = [&](double span) {
    return fmt::format("the measured window (duration_s - warmup_s) is {:g} s; it must be at least {:g} s", span,
                       kMinWindowS);
  };
  if (!to_trace_end && window_too_short(s.duration_s, s.warmup_s))
    dur.fail(too_short(s.duration_s - s.warmup_s), ErrorKind::inconsistent);

  // catalogs, with the scenario's overrides and additions
  std::vector<DeviceSpec> devices = builtin_devices();
  std::vector<ModelSpec> models = builtin_models();
  merge_catalog(root, src, devices, models);

  // pools: the top-level device, model, dtypes, engine and fleet are the defaults of every pool
  static const char* const kPoolKeys[] = {"device",       "partition",           "time_slicing", "mps",    "model",
                                          "weight_dtype", "expert_weight_dtype", "kv_dtype",     "engine", "fleet"};
  if (root.has("pools")) {
    const N pools = root.at("pools");
    pools.require_map();
    if (pools.node.size() == 0) pools.fail("no pools (expected e.g. pools: {interactive: {fleet: {replicas: 2}}})");
    if (pools.node.size() > size_t(kMaxPools)) pools.fail("at most " + std::to_string(kMaxPools) + " pools");
    for (auto it = pools.node.begin(); it != pools.node.end(); ++it) {
      const std::string name = path_name(pools, it->first, "pool");
      const N en{it->second, "pools." + name, &src};
      en.allow_keys({"device", "partition", "time_slicing", "mps", "model", "weight_dtype", "expert_weight_dtype",
                     "kv_dtype", "engine", "fleet", "disaggregation"});
      // (the merged map has no place in the file: a key neither gives is missing here)
      for (const char* k : {"device", "model", "fleet"})
        if (!en.has(k) && !root.has(k))
          en.fail(std::string("missing required key '") + k + "' (give it here, or at the top level for every pool)");
      YAML::Node merged(YAML::NodeType::Map);
      for (const char* k : kPoolKeys) {
        const std::string key = k;
        if (key == "engine" || key == "fleet") {
          if (!root.has(k) && !en.has(k)) continue;
          // the key nodes themselves, not their names, go into the merged map: an unknown key is
          // then located where it is written (nodes are inserted, never assigned: a yaml-cpp
          // assignment would rewrite the node it replaces, in the file's own tree)
          std::set<std::string> own;  // the pool's own keys (null: left out, the default holds)
          if (en.has(k)) {
            en.at(k).require_map();
            for (auto kv = en.node[key].begin(); kv != en.node[key].end(); ++kv)
              if (!kv->second.IsNull()) own.insert(en.at(k).key_name(kv->first));
          }
          YAML::Node m(YAML::NodeType::Map);
          if (root.has(k)) {
            root.at(k).require_map();
            for (auto kv = root_node[key].begin(); kv != root_node[key].end(); ++kv)
              if (!own.count(root.at(k).key_name(kv->first))) m.force_insert(kv->first, kv->second);
          }
          if (en.has(k))
            for (auto kv = en.node[key].begin(); kv != en.node[key].end(); ++kv)
              if (!kv->second.IsNull()) m.force_insert(kv->first, kv->second);
          merged[key] = m;
        } else if (en.has(k)) {
          merged[key] = it->second[key];
        } else if (root.has(k)) {
          merged[key] = root_node[key];
        }
      }
      // a top-level key the pool inherits and a --set changed is located at that --set
      Source psrc = src;
      for (const auto& [path, origin] : src.overridden) {
        const std::string key = path.substr(0, path.find_first_of(".["));
        if (std::find(std::begin(kPoolKeys), std::end(kPoolKeys), key) == std::end(kPoolKeys) || !root.has(key.c_str()))
          continue;
        bool inherited = !en.has(key.c_str());
        if (!inherited && (key == "engine" || key == "fleet") && path.size() > key.size() && path[key.size()] == '.') {
          const std::string sub =
              path.substr(key.size() + 1, path.find_first_of(".[", key.size() + 1) - key.size() - 1);
          inherited = !en.at(key.c_str()).has(sub.c_str());
        }
        if (inherited) psrc.overridden.emplace("pools." + name + "." + path, origin);
      }
      PoolSpec P = build_pool(N{merged, "pools." + name, &psrc}, devices, models, psrc);
      P.name = name;
      s.pools.push_back(std::move(P));
    }
    size_t i = 0;
    for (auto it = pools.node.begin(); it != pools.node.end(); ++it, ++i) {
      const N en{it->second, "pools." + s.pools[i].name, &src};
      if (en.has("disaggregation")) parse_disaggregation(en.at("disaggregation"), s.pools, i);
    }
    check_disaggregation(pools, s.pools);
    // a default every pool overrides applies to none: refused, not ignored (a --set of it would
    // change nothing, and a bad value in it would pass unread) -- unless a sweep sets pools' keys,
    // whose values (~ among them) may leave it to some configurations
    // (or the newer-device view of an owned pool, derived from a scenario already checked: its
    // device for the one pool may leave the top-level one to none)
    const bool swept_pools =
        swept_under(root, "pools") || std::any_of(overrides.begin(), overrides.end(),
                                                  [](const Override& o) { return o.label.rfind("newer: ", 0) == 0; });
    auto dead = [&](const N& at, const std::string& what) {
      at.fail("every pool gives its own " + what + ": this default applies to none (remove it, or leave " + what +
                  " out of a pool)",
              ErrorKind::inconsistent);
    };
    auto all_pools_have = [&](const char* k, const std::string& sub) {
      for (auto it = pools.node.begin(); it != pools.node.end(); ++it) {
        const N en{it->second, "pools", &src};
        if (!en.has(k) || (!sub.empty() && (!en.at(k).node.IsMap() || !en.at(k).has(sub.c_str())))) return false;
      }
      return true;
    };
    for (const char* k : kPoolKeys) {
      if (swept_pools || !root.has(k)) continue;
      const std::string key = k;
      if (key != "engine" && key != "fleet") {
        if (all_pools_have(k, "")) dead(root.at(k), key);
        continue;
      }
      const N m = root.at(k);
      for (auto kv = m.node.begin(); kv != m.node.end(); ++kv) {
        const std::string sub = m.key_name(kv->first);
        if (all_pools_have(k, sub)) dead(m.at(sub.c_str()), key + "." + sub);
      }
    }
    s.multi = true;
  } else {
    PoolSpec P = build_pool(root, devices, models, src);
    P.name = "default";
    s.pools.push_back(std::move(P));
  }

  // classes: workload's arrival and lengths are the defaults of every class
  const N wl = root.has("workload") ? root.at("workload") : N{YAML::Node(YAML::NodeType::Map), "workload", &src};
  wl.allow_keys({"arrival", "prompt_tokens", "output_tokens", "checkpointed", "max_retries", "prefix", "response_cache",
                 "goodput"});
  // (read again once trace_end has its length: start_s and the response-cache loop check against it)
  bool length_known = !to_trace_end;
  const size_t files_before = src.files_read.size();  // the classes' files, listed once
  auto read_classes = [&] {
    if (root.has("classes")) {
      const N classes = root.at("classes");
      classes.require_map();
      if (classes.node.size() == 0) classes.fail("no classes (expected e.g. classes: {chat: {pool: interactive}})");
      if (classes.node.size() > size_t(kMaxClasses))
        classes.fail("at most " + std::to_string(kMaxClasses) + " request classes");
      // the workload's defaults some class takes (a trace brings its own lengths)
      std::map<std::string, bool> taken;
      for (auto it = classes.node.begin(); it != classes.node.end(); ++it) {
        const std::string name = path_name(classes, it->first, "class");
        const N en{it->second, "classes." + name, &src};
        en.allow_keys({"pool", "team", "priority", "arrival", "prompt_tokens", "output_tokens", "checkpointed",
                       "max_retries", "prefix", "response_cache", "goodput"});
        int pool = 0;
        if (en.has("pool")) {
          std::vector<std::string> names;
          for (const auto& P : s.pools) names.push_back(P.name);
          pool = -1;
          const std::string pn = en.at("pool").str();
          for (size_t i = 0; i < names.size(); ++i)
            if (names[i] == pn) pool = int(i);
          if (pool < 0) {
            const std::string sug = did_you_mean(pn, names);
            en.at("pool").fail("unknown pool '" + pn + "'" + (sug.empty() ? "" : " (did you mean '" + sug + "'?)"));
          }
        } else if (s.pools.size() > 1) {
          en.fail("missing required key 'pool' (which pool serves this class?)");
        }
        // a trace brings its own lengths: the workload's are the other classes' default, not its
        const YAML::Node arrival = en.has("arrival")   ? en.at("arrival").node
                                   : wl.has("arrival") ? wl.at("arrival").node
                                                       : YAML::Node();
        const bool trace = arrival.IsMap() && arrival["process"] && arrival["process"].IsScalar() &&
                           arrival["process"].Scalar() == "trace";
        YAML::Node merged(YAML::NodeType::Map);
        for (const char* k : {"arrival", "prompt_tokens", "output_tokens"}) {
          if (en.has(k))
            merged[k] = it->second[k];
          else if (wl.has(k) && !(trace && std::string(k) != "arrival"))
            merged[k] = wl.node[k], taken[k] = true;
        }
        // a workload default the class inherits is located where its value came from: the file's
        // workload, or a --set of it (not a --set that left the class's own key out)
        Source csrc = src;
        for (const char* k : {"arrival", "prompt_tokens", "output_tokens"}) {
          if (en.has(k)) continue;
          const std::string own = "classes." + name + "." + k;
          for (auto o = csrc.overridden.begin(); o != csrc.overridden.end();)
            o = o->first == own || o->first.rfind(own + ".", 0) == 0 || o->first.rfind(own + "[", 0) == 0
                    ? csrc.overridden.erase(o)
                    : std::next(o);
          const std::string from = std::string("workload.") + k;
          for (const auto& [path, origin] : src.overridden)
            if (path == from || path.rfind(from + ".", 0) == 0 || path.rfind(from + "[", 0) == 0)
              csrc.overridden.emplace(own + path.substr(from.size()), origin);
            else if (path == "workload")  // the whole workload replaced
              csrc.overridden.emplace(own, origin);
        }
        RequestClassSpec C = build_class(N{merged, "classes." + name, &csrc}, s.pools[size_t(pool)], s.duration_s, src);
        C.name = name;
        C.pool = pool;
        C.team = en.has("team") ? en.at("team").name() : name;
        if (C.team.find('.') != std::string::npos)
          en.at("team").fail("a team name cannot hold '.' ('" + C.team +
                             "'): it separates the parts of a path such as teams.NAME in the report; use '-' or '_'");
        if (en.has("priority")) C.priority = int(en.at("priority").integer(-1000, 1000));
        const N* ck = en.has("checkpointed") ? &en : wl.has("checkpointed") ? &wl : nullptr;
        if (ck) C.checkpointed = ck->at("checkpointed").boolean();
        const N* mr = en.has("max_retries") ? &en : wl.has("max_retries") ? &wl : nullptr;
        taken["checkpointed"] = taken["checkpointed"] || ck == &wl;
        taken["max_retries"] = taken["max_retries"] || mr == &wl;
        if (mr) C.max_retries = int(mr->at("max_retries").integer(0, 1000));
        parse_caching(wl, C, s.pools[size_t(pool)]);
        parse_caching(en, C, s.pools[size_t(pool)]);
        if (length_known) check_response_cache_loop(en.has("response_cache") ? en : wl, C, s.duration_s);
        parse_goodput(wl, C);
        parse_goodput(en, C);
        s.classes.push_back(std::move(C));
      }
      // a default no class takes: refused, not ignored (a --set of it would change nothing), unless
      // a sweep sets classes' keys
      for (const char* k : {"arrival", "prompt_tokens", "output_tokens", "checkpointed", "max_retries"})
        if (wl.has(k) && !taken[k] && !swept_under(root, "classes"))
          wl.at(k).fail(std::string("no class takes this workload.") + k + ": each gives its own" +
                            (std::string(k).find("_tokens") != std::string::npos ? " or replays a trace's" : "") +
                            "; remove it, or leave " + k + " out of a class",
                        ErrorKind::inconsistent);
      // a pool that a --set or a sweep value made (not the file's) and nothing sends work to is a
      // misspelt name: refused, where it would run billed idle beside the pool that was meant
      if (root.has("pools")) {
        const N pools = root.at("pools");
        size_t i = 0;
        for (auto it = pools.node.begin(); it != pools.node.end(); ++it, ++i) {
          const std::string& name = s.pools[i].name;
          bool fed = std::find(src.file_pools.begin(), src.file_pools.end(), name) != src.file_pools.end();
          for (const auto& C : s.classes) fed = fed || C.pool == int(i);
          for (const auto& o : s.pools) fed = fed || o.decode_pool == int(i);
          if (fed) continue;
          std::vector<std::string> names;
          for (const auto& P : s.pools)
            if (P.name != name) names.push_back(P.name);
          const std::string sug = did_you_mean(name, names);
          N{it->second, "pools." + name, &src}.fail(
              "no pool '" + name + "' in the scenario" + (sug.empty() ? "" : " (did you mean '" + sug + "'?)") +
                  ": this makes one that serves nothing, as no class names it as its pool and no prefill pool " +
                  "hands it prompts; to add a pool, also set a class's pool to it",
              ErrorKind::inconsistent);
        }
      }
      s.multi = true;
    } else {
      // one workload: the pool it arrives at is the only one, or the only one no other hands its
      // prompts to (a prefill pool before its decode pool)
      int front = 0, fronts = 0;
      for (size_t i = 0; i < s.pools.size(); ++i) {
        bool fed = false;
        for (const auto& o : s.pools) fed = fed || o.decode_pool == int(i);
        if (!fed) front = int(i), ++fronts;
      }
      if (fronts != 1)
        root.at("pools").fail(fmt::format("{} pools and one workload: say which pool serves it in classes: (classes: "
                                          "{{NAME: {{pool: POOL, arrival: ...}}}}, in place of workload:)",
                                          s.pools.size()),
                              ErrorKind::inconsistent);
      RequestClassSpec C = build_class(root.req("workload"), s.pools[size_t(front)], s.duration_s, src);
      C.pool = front;
      C.name = "default";
      C.team = "default";
      if (wl.has("checkpointed")) C.checkpointed = wl.at("checkpointed").boolean();
      if (wl.has("max_retries")) C.max_retries = int(wl.at("max_retries").integer(0, 1000));
      parse_caching(wl, C, s.pools[size_t(front)]);
      if (length_known) check_response_cache_loop(wl, C, s.duration_s);
      parse_goodput(wl, C);
      s.classes.push_back(std::move(C));
    }
  };
  read_classes();
  check_prefix_caches(root, s);
  if (to_trace_end) {
    double last = -1.0;
    for (const auto& C : s.classes)
      if (C.arrival == ArrivalKind::trace) last = std::max(last, C.trace->t_s.back() + C.start_s);
    if (last < 0.0)
      dur.fail("trace_end needs a class that replays a trace (arrival: {process: trace, path: ...})",
               ErrorKind::inconsistent);
    if (!(last < kMaxDurationS))
      dur.fail(
          fmt::format("trace_end: the last trace arrival is at {:.0f} s, past the longest run ({:.0f} s, 30 days); cut "
                      "the trace or give duration_s in seconds",
                      last, kMaxDurationS),
          ErrorKind::inconsistent);
    // arrivals are taken while t < duration_s: the run ends just after the last one (it is included)
    s.duration_s = std::nextafter(last, kMaxDurationS * 2.0);
    if (s.warmup_s >= s.duration_s)
      root.at("warmup_s")
          .fail("warmup_s must be less than duration_s (trace_end: " + std::to_string(last) + " s)",
                ErrorKind::inconsistent);
    if (window_too_short(s.duration_s, s.warmup_s))
      dur.fail(fmt::format("trace_end: the last trace arrival is at {:g} s, which leaves less than {:g} s after the "
                           "{:g} s of warmup_s to measure over; give duration_s in seconds",
                           last, kMinWindowS, s.warmup_s),
               ErrorKind::inconsistent);
    // every class again against the run's length (they were read against the longest run allowed)
    s.classes.clear();
    src.files_read.resize(files_before);
    length_known = true;
    read_classes();
    for (auto& C : s.classes) C.stop_s = std::min(C.stop_s, s.duration_s);
  }
  // the workspace must stay reasonable (it is per simulation, and sweeps run thousands)
  const SimParams p = s.params();
  const WorkspaceLayout layout = workspace_layout(p);
  const double ws = double(layout.total);
  s.inputs = src.files_read;
  // (blocks of bounded prefix caches: a few indices each, and their tables)
  const int64_t blocks = layout.cache_entries + layout.cpu_entries + layout.rem_entries;
  const double cache_bytes =
      16.0 * double(blocks) + 4.0 * double(layout.cache_slots + layout.cpu_slots + layout.rem_slots);
  if ((ws > 2.0 * kGiB || !layout_fits(p, layout)) && cache_bytes > 0.5 * ws) {
    root.fail(fmt::format("this fleet needs {} MiB of simulation state, most of it for the {} blocks its prefix "
                          "caches can hold (per replica, host tiers and shared stores); at most 2048 MiB: lower "
                          "engine.prefix_cache's max_tokens, cpu_gib or remote.gib, or replay the trace in larger "
                          "blocks",
                          int64_t(ws / (1024 * 1024)), blocks),
              ErrorKind::inconsistent);
  }
  if (ws > 2.0 * kGiB || !layout_fits(p, layout)) {
    root.fail(
        "this fleet needs " + std::to_string(int64_t(ws / (1024 * 1024))) + " MiB of simulation state for " +
            std::to_string(layout.req_cap) +
            " request slots (queues x queue_limit + replicas x max_num_seqs); at most 2048 MiB: lower queue_limit "
            "or replicas",
        ErrorKind::inconsistent);
  }
  return s;
}

}  // namespace

namespace detail {

Scenario load_from(const std::string& text, Source src, const std::vector<Override>& overrides) {
  src.lines = split_lines(text);
  if (const size_t bad = invalid_utf8_at(text); bad != std::string::npos) {
    const int line = int(std::count(text.begin(), text.begin() + long(bad), '\n')) + 1;
    const size_t bol = text.rfind('\n', bad == 0 ? 0 : bad - 1);
    const int col = int(bad - (bol == std::string::npos || bad == 0 ? 0 : bol + 1)) + 1;
    throw InputError(Location{src.file, line, col, ""}, "not valid UTF-8 (a scenario file must be UTF-8 text)");
  }
  YAML::Node root = load_located(text, src);
  if (!root.IsDefined() || root.IsNull()) throw InputError(Location{src.file, 1, 1, ""}, "empty scenario file");
  if (root.IsMap() && root["pools"] && root["pools"].IsMap())  // before the overrides: which pools a --set made
    for (auto it = root["pools"].begin(); it != root["pools"].end(); ++it)
      if (it->first.IsScalar()) src.file_pools.push_back(it->first.Scalar());
  if (root.IsMap())
    for (const auto& o : overrides) apply_override(root, o, src);
  try {
    return build(root, src, overrides);
  } catch (const YAML::Exception& e) {
    throw InputError(Location{src.file, e.mark.line + 1, e.mark.column + 1, ""}, e.msg);
  }
}

}  // namespace detail

}  // namespace fleetsim
