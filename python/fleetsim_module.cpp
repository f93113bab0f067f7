// `import fleetsim`: scenarios, runs, capacity and the catalog from Python, as the documents the
// CLI prints with --format json (docs/output-schema.md). Sweeps are in fleetsim_sweep.cpp.
#include <fmt/format.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <cmath>
#include <filesystem>

#include <optional>
#include <thread>

#include "fleetsim_python.hpp"
#include "libsim/backend/runner.hpp"
#include "libsim/base/error.hpp"
#include "libsim/cost/refresh.hpp"
#include "libsim/input/json_text.hpp"
#include "libsim/report/documents.hpp"
#include "libsim/report/timeline.hpp"
#include "libsim/sweep/sweep.hpp"

#ifndef FLEETSIM_VERSION
#define FLEETSIM_VERSION "0.0.0"
#endif

namespace fleetsim::py {

namespace {

PyObject* g_input_error = nullptr;  // fleetsim.InputError, a ValueError

// json.dumps's fallback: numpy and pandas values, paths, ranges and other iterables.
pb::object json_default(pb::handle o) {
  if (pb::isinstance<pb::bytes>(o) || pb::isinstance<pb::bytearray>(o))
    throw pb::type_error("fleetsim: a bytes value where a scenario holds text: decode it to a str");
  if (pb::hasattr(o, "tolist")) return o.attr("tolist")();
  if (pb::hasattr(o, "__fspath__")) return pb::module_::import("os").attr("fspath")(o);
  const pb::module_ abc = pb::module_::import("collections.abc");
  if (pb::isinstance(o, abc.attr("Mapping"))) return pb::dict(pb::reinterpret_borrow<pb::object>(o));
  if (pb::isinstance(o, abc.attr("Iterable"))) return pb::list(pb::reinterpret_borrow<pb::object>(o));
  throw pb::type_error("fleetsim: cannot write a value of type " +
                       pb::str(pb::type::handle_of(o).attr("__name__")).cast<std::string>() + " as YAML");
}

// Strings YAML reads back as the same string without quotes: device names, routers, dtypes.
bool plain_yaml_string(const std::string& s) {
  if (s.empty() || !(std::isalpha((unsigned char)s[0]) || s[0] == '_')) return false;
  for (char c : s)
    if (!std::isalnum((unsigned char)c) && c != '_' && c != '-' && c != '.' && c != '/') return false;
  std::string lower;
  for (char c : s) lower += char(std::tolower((unsigned char)c));
  for (const char* word : {"true", "false", "yes", "no", "on", "off", "null", "y", "n"})
    if (lower == word) return false;
  return true;
}

std::string override_value(pb::handle v, const std::string& what) {
  if (pb::isinstance<pb::str>(v)) {
    const std::string s = v.cast<std::string>();
    if (plain_yaml_string(s)) return s;
  }
  return yaml_text(v, -1, what);
}

std::string fspath(pb::handle o) { return pb::module_::import("os").attr("fspath")(o).cast<std::string>(); }

std::string cwd() { return pb::module_::import("os").attr("getcwd")().cast<std::string>(); }

// Instantiate once so that a bad Scenario(...) fails where it is made (run and sweep find out anyway).
void validate(PyScenario& s) {
  pb::gil_scoped_release nogil;
  const Scenario sc = s.src.instantiate();
  s.name = sc.name;
  s.has_sweep = has_sweep_section(s.src);
  if (s.has_sweep) parse_sweep(s.src);  // as `fleetsim validate`: a bad sweep: section fails here too
}

// A source string: a file when it looks like one, YAML text otherwise.
bool looks_like_path(const std::string& s) {
  if (s.find('\n') != std::string::npos) return false;
  auto ends = [&](const char* suf) {
    const std::string x(suf);
    return s.size() >= x.size() && s.compare(s.size() - x.size(), x.size(), x) == 0;
  };
  if (ends(".yaml") || ends(".yml") || ends(".json")) return true;
  const pb::module_ osp = pb::module_::import("os.path");
  if (osp.attr("isfile")(s).cast<bool>() || osp.attr("isdir")(s).cast<bool>()) return true;
  // a scenario's YAML holds a "key: value" (or is a flow mapping); a line without a colon is a
  // path that is not there
  const size_t first = s.find_first_not_of(" \t");
  return s.find(':') == std::string::npos && !(first != std::string::npos && (s[first] == '{' || s[first] == '['));
}

PyScenario scenario_from(pb::handle source, pb::handle path, pb::handle yaml, pb::handle dict, pb::handle overrides,
                         const std::optional<std::string>& name, const std::optional<std::string>& base_dir) {
  int given = !source.is_none() + !path.is_none() + !yaml.is_none() + !dict.is_none();
  if (given > 1) throw pb::type_error("fleetsim.Scenario: give one of source, path=, yaml= or dict=");
  std::vector<std::string> sets = override_texts(overrides);
  if (!source.is_none()) {
    if (pb::isinstance<PyScenario>(source)) return source.cast<PyScenario>().with(sets);
    if (pb::isinstance<pb::str>(source)) {
      const std::string s = source.cast<std::string>();
      if (looks_like_path(s))
        path = source;
      else
        yaml = source;
    } else if (pb::hasattr(source, "__fspath__")) {
      path = source;
    } else if (pb::isinstance(source, pb::module_::import("collections.abc").attr("Mapping"))) {
      dict = source;
    } else {
      throw pb::type_error("fleetsim: a scenario is a Scenario, a path, YAML text, a dict or None, not " +
                           pb::str(pb::type::handle_of(source).attr("__name__")).cast<std::string>());
    }
  }
  if (!path.is_none()) return make_scenario("file", fspath(path), "", "", sets);
  if (!yaml.is_none() && !pb::isinstance<pb::str>(yaml))
    throw pb::type_error("fleetsim.Scenario: yaml= is YAML text (a str), not " +
                         pb::str(pb::type::handle_of(yaml).attr("__name__")).cast<std::string>() +
                         " (a path goes in path=)");
  if (!yaml.is_none())
    return make_scenario("yaml", yaml.cast<std::string>(), name.value_or("<yaml>"), base_dir.value_or(cwd()), sets);
  if (!dict.is_none())
    return make_scenario("dict", yaml_text(dict, 2, name.value_or("<dict>")), name.value_or("<dict>"),
                         base_dir.value_or(cwd()), sets);
  return make_scenario("default", "", "", "", sets);
}

// A whole number argument (not a bool or numpy's bool_, which are no ints here; not a float; a
// numpy integer is one) as its decimal text; `fn` names the function in the TypeError.
std::string integer_text(pb::handle v, const char* what, const char* fn = nullptr) {
  const std::string type = pb::str(pb::type::handle_of(v).attr("__name__")).cast<std::string>();
  if (pb::isinstance<pb::bool_>(v) || type == "bool_" || !PyIndex_Check(v.ptr()))
    throw pb::type_error(std::string("fleetsim") + (fn ? std::string(".") + fn : std::string()) + ": " + what +
                         " must be an int, not " + type);
  return pb::str(pb::int_(pb::reinterpret_borrow<pb::object>(v))).cast<std::string>();
}

}  // namespace

// A whole number argument (not a bool, not a float) in [lo, hi]: a TypeError, or a located range error.
int64_t whole_number(pb::handle v, const char* fn, const char* what, int64_t lo, int64_t hi) {
  const std::string text = integer_text(v, what, fn);
  const pb::int_ n(pb::reinterpret_borrow<pb::object>(v));
  if (n < pb::int_(lo) || n > pb::int_(hi))
    throw InputError(Location{std::string("fleetsim.") + fn, 0, 0, ""},
                     fmt::format("{}={} is out of range (expected a whole number in [{}, {}])", what, text, lo, hi));
  return n.cast<int64_t>();
}

namespace {

pb::object run(pb::handle scenario, pb::handle overrides, pb::handle seed, pb::handle replication_arg,
               pb::handle timeline) {
  const auto replication = uint32_t(whole_number(replication_arg, "run", "replication", 0, 4294967295LL));
  PyScenario ps = coerce_scenario(scenario, overrides);
  if (!seed.is_none()) ps = ps.with({"seed=" + integer_text(seed, "seed")});
  if (!timeline.is_none() && !pb::isinstance<pb::bool_>(timeline))
    throw pb::type_error("fleetsim.run: timeline must be True, False or None, not " +
                         pb::str(pb::type::handle_of(timeline).attr("__name__")).cast<std::string>());
  const int want_timeline = timeline.is_none() ? -1 : int(timeline.cast<bool>());
  Json report;
  {
    pb::gil_scoped_release nogil;  // other Python threads run while this simulates
    report = run_document(ps.src, ps.src.instantiate(), replication, want_timeline);
  }
  return to_python(report);
}

// The CLI's ranges for the capacity flags.
void in_range(const char* name, double v, double lo, double hi) {
  if (v >= lo && v <= hi) return;
  throw InputError(Location{"fleetsim.capacity", 0, 0, ""},
                   fmt::format("{}={} is out of range (expected a number in [{}, {}])", name, v, lo, hi));
}

pb::object capacity(const std::string& model, const std::string& device, pb::handle context_arg,
                    const std::string& weight_dtype, const std::string& kv_dtype, pb::handle tp_arg, pb::handle pp_arg,
                    double gpu_memory_utilization, pb::handle max_num_seqs_arg, pb::handle max_batched_tokens_arg,
                    pb::handle kv_block_tokens_arg, const std::optional<std::string>& expert_weight_dtype,
                    bool enforce_eager) {
  const int64_t context = whole_number(context_arg, "capacity", "context", 0, int64_t(1) << 24);  // 0: the default
  const int tp = int(whole_number(tp_arg, "capacity", "tp", 1, 64));
  const int pp = int(whole_number(pp_arg, "capacity", "pp", 1, 64));
  in_range("gpu_memory_utilization", gpu_memory_utilization, 0.01, 1.0);
  const int max_num_seqs = int(whole_number(max_num_seqs_arg, "capacity", "max_num_seqs", 1, 16384));
  const int max_batched_tokens =
      int(whole_number(max_batched_tokens_arg, "capacity", "max_batched_tokens", 16, 1 << 20));
  const int kv_block_tokens = int(whole_number(kv_block_tokens_arg, "capacity", "kv_block_tokens", 1, 1024));
  CapacityRequest q;
  q.model = model;
  q.device = device;
  q.context = context;
  q.weight_dtype = weight_dtype;
  q.kv_dtype = kv_dtype;
  q.expert_weight_dtype = expert_weight_dtype.value_or("");
  q.gpu_memory_utilization = gpu_memory_utilization;
  q.max_num_seqs = max_num_seqs;
  q.max_batched_tokens = max_batched_tokens;
  q.kv_block_tokens = kv_block_tokens;
  q.tp = tp;
  q.pp = pp;
  q.enforce_eager = enforce_eager;
  return to_python(capacity_document(q).doc);
}

const char* kind_name(ErrorKind k) {
  return k == ErrorKind::inconsistent ? "inconsistent" : k == ErrorKind::does_not_fit ? "does_not_fit" : "input";
}

// libsim's InputError -> fleetsim.InputError (a ValueError) carrying the located one-line message.
void translate(std::exception_ptr p) {
  try {
    if (p) std::rethrow_exception(p);
  } catch (const InputError& e) {
    pb::object exc = pb::reinterpret_borrow<pb::object>(g_input_error)(e.one_line());
    exc.attr("file") = e.where().file;
    exc.attr("line") = e.where().line;
    exc.attr("column") = e.where().column;
    exc.attr("caret") = e.caret();
    exc.attr("kind") = kind_name(e.kind());
    PyErr_SetObject(g_input_error, exc.ptr());
  } catch (const OutputError& e) {
    PyErr_SetString(PyExc_OSError, e.what());
  }
}

}  // namespace

PyScenario PyScenario::with(const std::vector<std::string>& more) const {
  PyScenario s = *this;
  s.overrides.insert(s.overrides.end(), more.begin(), more.end());
  s.src = src.with_overrides(parse_sets(s.overrides));
  return s;
}

PyScenario make_scenario(const std::string& origin, const std::string& text, const std::string& name,
                         const std::string& base_dir, const std::vector<std::string>& overrides) {
  PyScenario s;
  s.origin = origin;
  if (origin == "file")
    s.src = ScenarioSource::from_file(text);
  else if (origin == "default")
    s.src = ScenarioSource::builtin_default();
  else
    s.src = ScenarioSource::from_text(text, name, base_dir);
  s.abs_base_dir = s.src.base_dir().empty() ? std::string() : std::filesystem::absolute(s.src.base_dir()).string();
  return s.with(overrides);
}

PyScenario coerce_scenario(pb::handle scenario, pb::handle overrides) {
  const pb::none none;
  return scenario_from(scenario, none, none, none, overrides, std::nullopt, std::nullopt);
}

std::vector<std::string> override_texts(pb::handle overrides) {
  std::vector<std::string> out;
  if (overrides.is_none()) return out;
  if (pb::isinstance<pb::str>(overrides)) return {overrides.cast<std::string>()};
  if (pb::isinstance<pb::dict>(overrides)) {
    for (auto kv : overrides.cast<pb::dict>()) {
      if (!pb::isinstance<pb::str>(kv.first)) throw pb::type_error("fleetsim: override keys are dotted paths (str)");
      const std::string key = kv.first.cast<std::string>();
      out.push_back(key + "=" + override_value(kv.second, "overrides[" + key + "]"));
    }
    return out;
  }
  if (!pb::isinstance<pb::iterable>(overrides))
    throw pb::type_error("fleetsim: overrides are a dict {path: value} or a list of \"path=value\" strings");
  for (auto item : overrides) {
    if (!pb::isinstance<pb::str>(item))
      throw pb::type_error("fleetsim: overrides are a dict {path: value} or a list of \"path=value\" strings");
    out.push_back(item.cast<std::string>());
  }
  return out;
}

// Where in a value (a dict's keys, a list's indexes, dotted) a NaN or infinity sits; "" if none.
std::string non_finite_at(pb::handle v, int depth = 0) {
  if (depth > 64) return "";
  if (PyFloat_Check(v.ptr())) return std::isfinite(PyFloat_AsDouble(v.ptr())) ? "" : ".";
  auto under = [](const std::string& key, const std::string& rest) { return rest == "." ? key : key + "." + rest; };
  if (pb::isinstance<pb::dict>(v))
    for (auto item : pb::reinterpret_borrow<pb::dict>(v)) {
      const std::string rest = non_finite_at(item.second, depth + 1);
      if (!rest.empty()) return under(pb::str(item.first).cast<std::string>(), rest);
    }
  if (pb::isinstance<pb::list>(v) || pb::isinstance<pb::tuple>(v)) {
    const pb::sequence seq = pb::reinterpret_borrow<pb::sequence>(v);
    for (size_t i = 0; i < seq.size(); ++i) {
      const std::string rest = non_finite_at(seq[i], depth + 1);
      if (!rest.empty()) return under(std::to_string(i), rest);
    }
  }
  return "";
}

std::string yaml_text(pb::handle value, int indent, const std::string& what) {
  pb::object dumps = pb::module_::import("json").attr("dumps");
  try {
    return dumps(value, pb::arg("default") = pb::cpp_function(json_default), pb::arg("allow_nan") = false,
                 pb::arg("ensure_ascii") = false,
                 pb::arg("indent") = indent < 0 ? pb::object(pb::none()) : pb::int_(indent))
        .cast<std::string>();
  } catch (pb::error_already_set& e) {
    // json.dumps refuses NaN and infinity with a ValueError of its own: say which argument held one
    if (!e.matches(PyExc_ValueError)) throw;
    const std::string msg = pb::str(e.value()).cast<std::string>();
    const Location at{what.empty() ? "fleetsim" : what, 0, 0, ""};
    if (msg.find("Out of range float") == std::string::npos)  // a circular reference, ...
      throw InputError(at, "not a value a scenario can hold: " + msg);
    const std::string key = non_finite_at(value);
    throw InputError(at, (key.empty() || key == "." ? "" : key + ": ") +
                             "not a finite number (NaN or infinity): a scenario holds finite numbers");
  }
}

pb::object to_python(const Json& j) {
  const std::string text = j.dump(-1, ' ', false, Json::error_handler_t::replace);
  return pb::module_::import("json").attr("loads")(text);
}

Json from_python(pb::handle value, const std::string& what) {
  return parse_json_located(yaml_text(value, -1, what), what);
}

}  // namespace fleetsim::py

PYBIND11_MODULE(fleetsim, m) {
  using namespace fleetsim;
  using namespace fleetsim::py;
  m.doc() = "fleetsim: simulate LLM inference fleets (latency, capacity, utilization, cost). See docs/python.md.";
  m.attr("__version__") = FLEETSIM_VERSION;

  g_input_error = PyErr_NewExceptionWithDoc("fleetsim.InputError",
                                            "A scenario or argument error: str() is 'file:line:column: error: ...'.",
                                            PyExc_ValueError, nullptr);
  m.attr("InputError") = pb::handle(g_input_error);
  pb::register_exception_translator(translate);

  pb::class_<PyScenario>(m, "Scenario", R"(A validated scenario.

Scenario(source=None, *, path=None, yaml=None, dict=None, overrides=None, name=None, base_dir=None)

source: a file path (str ending .yaml/.yml/.json, an existing file, or a pathlib.Path), YAML text,
a dict (the scenario as data) or another Scenario; None is the built-in default scenario.
overrides: {"fleet.replicas": 3, ...} or ["fleet.replicas=3", ...], applied as `fleetsim --set`.
name, base_dir: for YAML text and dicts, the name errors cite and where relative paths resolve.
Raises fleetsim.InputError (a ValueError) naming the line and column of a mistake.)")
      .def(pb::init([](pb::handle source, pb::handle path, pb::handle yaml, pb::handle dict, pb::handle overrides,
                       const std::optional<std::string>& name, const std::optional<std::string>& base_dir) {
             PyScenario s = scenario_from(source, path, yaml, dict, overrides, name, base_dir);
             validate(s);
             return s;
           }),
           pb::arg("source") = pb::none(), pb::kw_only(), pb::arg("path") = pb::none(), pb::arg("yaml") = pb::none(),
           pb::arg("dict") = pb::none(), pb::arg("overrides") = pb::none(), pb::arg("name") = pb::none(),
           pb::arg("base_dir") = pb::none())
      .def_readonly("name", &PyScenario::name, "the scenario's name: key")
      .def_readonly("origin", &PyScenario::origin, "'file', 'yaml', 'dict' or 'default'")
      .def_readonly("overrides", &PyScenario::overrides, "the 'path=value' overrides applied, in order")
      .def_readonly("has_sweep", &PyScenario::has_sweep, "whether it has a sweep: section")
      .def_property_readonly(
          "source", [](const PyScenario& s) { return s.src.name(); }, "the file errors cite")
      .def_property_readonly(
          "yaml", [](const PyScenario& s) { return s.src.text(); }, "the YAML text, before overrides")
      .def(
          "with_overrides",
          [](const PyScenario& s, pb::handle overrides) {
            PyScenario out = s.with(override_texts(overrides));
            validate(out);
            return out;
          },
          pb::arg("overrides"), "The same scenario with more overrides.")
      .def(
          "run",
          [](pb::handle self, pb::handle overrides, pb::handle seed, pb::handle replication, pb::handle timeline) {
            return run(self, overrides, seed, replication, timeline);
          },
          pb::arg("overrides") = pb::none(), pb::arg("seed") = pb::none(), pb::arg("replication") = 0,
          pb::arg("timeline") = pb::none(), "fleetsim.run(self, ...)")
      // pickled as its text, where it came from and its overrides, so that a Dask or Ray worker
      // rebuilds the same scenario without the file (a trace it names must be there too)
      .def(pb::pickle(
          [](const PyScenario& s) {
            // where its traces are, as an absolute path (taken when it was made: the process may
            // have changed directory since): a worker runs in a directory of its own
            return pb::make_tuple(1, s.origin, s.src.text(), s.src.name(), s.abs_base_dir, s.overrides);
          },
          [](const pb::tuple& t) {
            if (t.size() != 6 || t[0].cast<int>() != 1)
              throw pb::value_error("fleetsim.Scenario: a pickle of another fleetsim version");
            const std::string origin = t[1].cast<std::string>();
            PyScenario s = make_scenario(origin == "default" ? "default" : "yaml", t[2].cast<std::string>(),
                                         t[3].cast<std::string>(), t[4].cast<std::string>(),
                                         t[5].cast<std::vector<std::string>>());
            s.origin = origin;
            validate(s);
            return s;
          }))
      .def("__repr__", [](const PyScenario& s) {
        std::string r = "<fleetsim.Scenario '" + s.name + "' from " + s.src.name();
        for (const auto& o : s.overrides) r += ", " + o;
        return r + ">";
      });

  m.def("run", &run, pb::arg("scenario") = pb::none(), pb::arg("overrides") = pb::none(), pb::arg("seed") = pb::none(),
        pb::arg("replication") = 0, pb::arg("timeline") = pb::none(),
        R"(Simulate one fleet; returns the run report (docs/output-schema.md) as a dict.

scenario: a Scenario, a path, YAML text, a dict, or None for the built-in default.
overrides: {"path": value} or ["path=value"]; seed: the random seed (an int, overrides seed:);
replication: which random stream of the seed; timeline: add the per-interval timeline (None: only
when the fleet autoscales, as `fleetsim run --format json`). The GIL is released while it runs.)");

  m.def("capacity", &capacity, pb::arg("model"), pb::arg("device"), pb::arg("context") = 0,
        pb::arg("weight_dtype") = "bf16", pb::arg("kv_dtype") = "bf16", pb::arg("tp") = 1, pb::arg("pp") = 1,
        pb::arg("gpu_memory_utilization") = 0.9, pb::arg("max_num_seqs") = 256, pb::arg("max_batched_tokens") = 8192,
        pb::arg("kv_block_tokens") = 16, pb::arg("expert_weight_dtype") = pb::none(), pb::arg("enforce_eager") = false,
        "Static memory arithmetic of one replica: the `fleetsim capacity --format json` document as a dict.");

  m.def(
      "catalog", [] { return to_python(catalog_document()); },
      "The built-in devices and models: the `fleetsim catalog --format json` document as a dict.");

  m.def(
      "default_scenario_yaml", [] { return std::string(default_scenario_text()); },
      "The built-in default scenario's YAML (scenarios/chat-default.yaml).");

  bind_sweep(m);
}
