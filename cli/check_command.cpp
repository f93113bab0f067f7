#include "check_command.hpp"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <thread>

#include "libsim/base/error.hpp"
#include "libsim/check/budget.hpp"
#include "libsim/input/input_file.hpp"
#include "libsim/sweep/sweep.hpp"
#include "write_file.hpp"

namespace fleetsim::cli {

namespace {

Scenario load(const std::string& file, const std::vector<std::string>& sets) {
  const ScenarioSource src = file.empty() ? ScenarioSource::builtin_default() : ScenarioSource::from_file(file);
  return src.with_overrides(parse_sets(sets)).instantiate();
}

}  // namespace

namespace {
int check(const CheckArgs& a, const std::function<void(const std::string&)>& emit, std::vector<std::string>& inputs);

// Whether two output paths name one file (neither need exist yet): compared as the absolute paths
// they resolve to, so that "x" and "./x" are one.
bool same_output(const std::string& a, const std::string& b) {
  if (a.empty() || b.empty()) return false;
  std::error_code e1, e2;
  const auto pa = std::filesystem::weakly_canonical(std::filesystem::absolute(a, e1), e1);
  const auto pb = std::filesystem::weakly_canonical(std::filesystem::absolute(b, e2), e2);
  return !e1 && !e2 && pa == pb;
}
}  // namespace

int run_check(const CheckArgs& a, const std::function<void(const std::string&)>& emit) {
  // the files given and those the scenarios read (traces, length columns, profiles), as they load
  std::vector<std::string> inputs = {a.scenario, a.budgets, a.baseline};
  try {
    return check(a, emit, inputs);
  } catch (const InputError& e) {
    // a pipeline that reads the JUnit, the Markdown or the annotations sees the error too; an output
    // that would overwrite an input is the error itself, and stays unwritten
    auto writable = [&](const std::string& out) { return !out.empty() && input_named_by(out, inputs).empty(); };
    try {
      if (writable(a.junit)) write_file_whole(a.junit, check_error_junit(e), "the JUnit report");
      // one file named by both holds the JUnit, which a pipeline's test reporter reads
      if (writable(a.markdown) && !same_output(a.junit, a.markdown))
        write_file_whole(a.markdown, check_error_markdown(e), "the Markdown summary");
    } catch (const OutputError& oe) {
      std::fprintf(stderr, "%s\n", oe.what());  // said, but the input error decides the exit code (2)
    }
    const char* gha = std::getenv("GITHUB_ACTIONS");
    // (beside --format json, on stderr: stdout is the JSON's, as for the budgets' annotations)
    if (gha && std::string(gha) == "true")
      std::fputs(check_error_annotation(e).c_str(), a.format == "json" ? stderr : stdout);
    throw;
  }
}

namespace {
int check(const CheckArgs& a, const std::function<void(const std::string&)>& emit, std::vector<std::string>& inputs) {
  const std::vector<std::string> scenario_only = scenario_sets(a.sets);
  const ScenarioSource src =
      a.scenario.empty() ? ScenarioSource::builtin_default() : ScenarioSource::from_file(a.scenario);
  const Scenario s = src.with_overrides(parse_sets(scenario_only)).instantiate();
  inputs.insert(inputs.end(), s.inputs.begin(), s.inputs.end());
  if (a.budgets.empty() && a.scenario.empty())
    throw InputError(Location{"--budgets", 0, 0, ""},
                     "no budgets: give a budgets file with --budgets, or a scenario with a budgets: section");
  // the scenario's own budgets from the text already read: a pipe gives its text once
  const BudgetSpec spec = a.budgets.empty() ? parse_budgets_text(src.text(), a.scenario, a.sets)
                                            : parse_budgets(a.budgets, a.sets, true, true);
  std::unique_ptr<Scenario> baseline;
  if (!a.baseline.empty()) {
    baseline = std::make_unique<Scenario>(load(a.baseline, scenario_only));
    inputs.insert(inputs.end(), baseline->inputs.begin(), baseline->inputs.end());
  }
  for (const auto& [out, flag] : {std::pair{a.junit, "--junit"}, std::pair{a.markdown, "--markdown"}})
    refuse_overwriting_input(out, flag, inputs);
  // (neither need exist yet: compared as the paths they resolve to)
  if (same_output(a.junit, a.markdown))
    throw InputError(Location{"--markdown", 0, 0, ""},
                     "--markdown " + a.markdown + " is the file --junit names: one would overwrite the other");
  const int threads = a.threads > 0 ? a.threads : int(std::max(1u, std::thread::hardware_concurrency()));
  // progress on stderr: redrawn in place on a terminal, a plain line every 5 s in a CI log
  const bool tty = isatty(STDERR_FILENO);
  const auto start = std::chrono::steady_clock::now();
  double last = 0;
  bool drawn = false;
  auto progress = [&](int sims, const std::string& stage) {
    const double el = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (tty) {
      std::fprintf(stderr, "\rfleetsim check: %d simulations (%s), %.1f s   ", sims, stage.c_str(), el);
      drawn = true;
    } else if (el - last >= 5.0) {
      last = el;
      std::fprintf(stderr, "fleetsim check: %d simulations (%s), %.0f s\n", sims, stage.c_str(), el);
    }
  };
  const CheckResult r = check_budgets(s, spec, baseline.get(), threads, true, progress);
  if (drawn) std::fputc('\n', stderr);

  if (!a.junit.empty()) write_file_whole(a.junit, check_junit(r, s, spec), "the JUnit report");
  if (!a.markdown.empty()) write_file_whole(a.markdown, check_markdown(r, s, spec), "the Markdown summary");
  if (a.format == "json")
    emit(check_json(r, s, spec).dump(2) + "\n");
  else
    emit(check_table(r, s, spec));
  // in GitHub Actions, each violated budget also becomes an annotation at its line
  const char* gha = std::getenv("GITHUB_ACTIONS");
  if (gha && std::string(gha) == "true") {
    const std::string ann = check_annotations(r);
    if (a.format == "json")
      std::fputs(ann.c_str(), stderr);
    else
      emit(ann);
  }
  return r.pass ? 0 : 1;
}
}  // namespace

}  // namespace fleetsim::cli
