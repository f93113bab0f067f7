// The C ABI (include/fleetsim/fleetsim.h) over the C++ API: no exception crosses it.
#include "fleetsim/fleetsim.h"

#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "fleetsim/fleetsim.hpp"

struct fleetsim_scenario {
  fleetsim::ScenarioHandle handle;
};

namespace {

char* copy(const std::string& s) {
  char* p = static_cast<char*>(std::malloc(s.size() + 1));
  if (p) std::memcpy(p, s.c_str(), s.size() + 1);
  return p;
}

template <class F>
auto caught(char** error, F&& f) -> decltype(f()) {
  if (error) *error = nullptr;
  try {
    return f();
  } catch (const std::exception& e) {
    if (error) *error = copy(e.what());
  } catch (...) {
    if (error) *error = copy("fleetsim: unknown error");
  }
  return nullptr;
}

std::vector<std::string> list(const char* const* v, int n) {
  std::vector<std::string> out;
  for (int i = 0; v && i < n; ++i)
    if (v[i]) out.emplace_back(v[i]);
  return out;
}

}  // namespace

extern "C" {

fleetsim_scenario* fleetsim_scenario_from_yaml(const char* yaml, const char* const* overrides, int n_overrides,
                                               char** error) {
  return caught(error, [&]() -> fleetsim_scenario* {
    const auto o = list(overrides, n_overrides);
    return new fleetsim_scenario{yaml ? fleetsim::ScenarioHandle::from_yaml(yaml, o)
                                      : fleetsim::ScenarioHandle::builtin_default(o)};
  });
}

fleetsim_scenario* fleetsim_scenario_from_file(const char* path, const char* const* overrides, int n_overrides,
                                               char** error) {
  return caught(error, [&]() -> fleetsim_scenario* {
    if (!path) throw fleetsim::Error(fleetsim::Error::Kind::input, "fleetsim_scenario_from_file: no path");
    return new fleetsim_scenario{fleetsim::ScenarioHandle::from_file(path, list(overrides, n_overrides))};
  });
}

void fleetsim_scenario_free(fleetsim_scenario* s) { delete s; }

char* fleetsim_run_json(const fleetsim_scenario* s, uint32_t replication, char** error) {
  return caught(error, [&]() -> char* {
    if (!s) throw fleetsim::Error(fleetsim::Error::Kind::input, "fleetsim_run_json: no scenario");
    return copy(fleetsim::run(s->handle, replication).json);
  });
}

char* fleetsim_run_json_seed(const fleetsim_scenario* s, uint64_t seed, uint32_t replication, char** error) {
  return caught(error, [&]() -> char* {
    if (!s) throw fleetsim::Error(fleetsim::Error::Kind::input, "fleetsim_run_json_seed: no scenario");
    return copy(fleetsim::run(s->handle, seed, replication).json);
  });
}

void fleetsim_free_string(char* text) { std::free(text); }

const char* fleetsim_version(void) { return fleetsim::version(); }

}  // extern "C"
