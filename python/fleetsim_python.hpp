// Shared by the Python module's sources: scenarios as Python sees them, and JSON <-> Python.
#pragma once
#include <pybind11/pybind11.h>

#include <string>
#include <vector>

#include "libsim/input/scenario.hpp"
#include "libsim/report/report.hpp"

namespace fleetsim::py {

namespace pb = pybind11;

// A scenario source and the "path=value" overrides applied to it.
struct PyScenario {
  ScenarioSource src;  // with `overrides` as its base overrides
  std::vector<std::string> overrides;
  std::string origin;        // "file", "yaml", "dict" or "default"
  std::string name;          // the scenario's own name: key (once validated)
  bool has_sweep = false;    // (once validated)
  std::string abs_base_dir;  // where its relative paths resolve, made absolute when it was made

  PyScenario with(const std::vector<std::string>& more) const;
};

// Build from a file path, YAML text or the built-in default ("file", "yaml"/"dict", "default"); the
// text is parsed when instantiated. Throws InputError for a bad override or an unreadable file.
PyScenario make_scenario(const std::string& origin, const std::string& text, const std::string& name,
                         const std::string& base_dir, const std::vector<std::string>& overrides);

// A Scenario, a path, YAML text, a dict or None (the built-in default), plus overrides.
PyScenario coerce_scenario(pb::handle scenario, pb::handle overrides);

// {"a.b": 3} -> ["a.b=3"]; a list of "path=value" strings or one string passes through.
std::vector<std::string> override_texts(pb::handle overrides);

// A Python value as YAML text (JSON is YAML): numpy scalars and arrays, ranges and paths too.
// `value` as JSON text (YAML reads it); `what` names the argument in an error (NaN, infinity).
std::string yaml_text(pb::handle value, int indent = -1, const std::string& what = "");

// nlohmann JSON -> Python dicts and lists, through Python's json module.
pb::object to_python(const Json& j);
// ... and back: a dict of a document (from to_python, or unpickled) as JSON.
Json from_python(pb::handle value, const std::string& what);

// A whole number argument of fleetsim.FN (a bool or a float is a TypeError) in [lo, hi].
int64_t whole_number(pb::handle v, const char* fn, const char* what, int64_t lo, int64_t hi);

void bind_sweep(pb::module_& m);

}  // namespace fleetsim::py
