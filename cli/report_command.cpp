#include "report_command.hpp"

#include <fmt/format.h>
#include <sys/stat.h>

#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>

#include "libsim/backend/runner.hpp"
#include "libsim/base/error.hpp"
#include "libsim/cost/refresh.hpp"
#include "libsim/input/input_file.hpp"
#include "libsim/input/scenario.hpp"
#include "libsim/report/html.hpp"
#include "libsim/report/timeline.hpp"
#include "libsim/sweep/sweep.hpp"
#include "write_file.hpp"

namespace fleetsim::cli {

Json json_document(const ReportArgs& a);
int write_report(const ReportArgs& a, const std::string& html);

namespace {

const char* const kExpected =
    "expected the JSON of `fleetsim run --format json` (kind \"run\") or of `fleetsim sweep "
    "--format json` / `fleetsim merge` (kind \"sweep\")";

std::string read_input(const std::string& path) { return read_text_file(path, "report input"); }

}  // namespace

namespace {

bool is_scenario(const std::string& path) {
  auto ends = [&](const char* e) {  // in any case: SCENARIO.YAML is a scenario too
    const std::string x(e);
    if (path.size() < x.size()) return false;
    for (size_t i = 0; i < x.size(); ++i)
      if (std::tolower(static_cast<unsigned char>(path[path.size() - x.size() + i])) != x[i]) return false;
    return true;
  };
  return path.empty() || ends(".yaml") || ends(".yml");
}

// A scenario's run report, with its timeline.
Json scenario_document(const ReportArgs& a) {
  const ScenarioSource src = (a.input.empty() ? ScenarioSource::builtin_default() : ScenarioSource::from_file(a.input))
                                 .with_overrides(parse_sets(a.sets));
  if (has_sweep_section(src))
    throw InputError(Location{src.name(), 0, 0, ""},
                     "a sweep scenario: run it first (fleetsim sweep " + src.name() +
                         " --format json > sweep.json), then fleetsim report sweep.json");
  const Scenario s = src.instantiate();
  refuse_overwriting_input(a.output, "--output", s.inputs);  // a trace, a length column, a profile
  check_newer_fleets(src, s);
  auto t = std::make_unique<Tally>();
  Json timeline = run_timeline(s, 60, a.threads, 0, t.get());  // the run and its timeline, one simulation
  Json doc = run_report(s, *t);
  add_newer_device_views(doc, src, s, *t, 0);
  doc["timeline"] = std::move(timeline);
  return doc;
}

}  // namespace

int run_report_command(const ReportArgs& a) {
  refuse_overwriting_input(a.output, "--output", {a.input});
  const std::string html = html_report(is_scenario(a.input) ? scenario_document(a) : json_document(a));
  return write_report(a, html);
}

Json json_document(const ReportArgs& a) {
  const std::string text = read_input(a.input);
  if (text.find_first_not_of(" \t\r\n") == std::string::npos)
    throw InputError(Location{a.input, 0, 0, ""}, std::string("is empty: ") + kExpected);
  Json doc;
  try {
    doc = parse_json_located(text, a.input);
  } catch (const InputError& e) {
    throw InputError(e.where(), std::string(e.what()) + " (" + kExpected + ")");
  }
  const std::string kind =
      doc.is_object() && doc.contains("kind") && doc["kind"].is_string() ? doc["kind"].get<std::string>() : "";
  if (kind != "run" && kind != "sweep")
    throw InputError(Location{a.input, 0, 0, ""},
                     std::string(kExpected) + (!doc.is_object() ? ", got a JSON " + std::string(doc.type_name())
                                               : kind.empty()   ? ", got no \"kind\""
                                                                : ", got kind \"" + kind + "\""));
  if (!a.sets.empty())
    throw InputError(Location{"--set " + a.sets[0], 0, 0, ""},
                     "--set changes a scenario; a JSON result is reported as it was run");
  if (a.threads_given)
    throw InputError(Location{"--threads", 0, 0, ""},
                     "--threads sets the threads that run a scenario's timeline; a JSON result is reported as it "
                     "was run, with none");
  // a sweep document is checked as merge checks a shard (and its summary recomputed)
  if (kind == "sweep") return merge_sweeps({{a.input, doc}});
  const Json& ver = doc.contains("schema_version") ? doc["schema_version"] : Json();
  if (!ver.is_number_integer() || ver != kSchemaVersion)
    throw InputError(
        Location{a.input, 0, 0, ""},
        fmt::format("/schema_version: {}: this fleetsim reads schema_version {}", ver.dump(), kSchemaVersion));
  // the sections every run report has: a report of the rest would be a page of dashes
  for (const char* key : {"scenario", "requests", "latency_s", "throughput", "utilization", "cost"})
    if (!doc.contains(key) || !doc[key].is_object())
      throw InputError(Location{a.input, 0, 0, ""},
                       fmt::format("/{}: missing or not an object (a run document from `fleetsim run --format json` "
                                   "has it)",
                                   key));
  check_run_document(doc, a.input);
  return doc;
}

int write_report(const ReportArgs& a, const std::string& html) {
  if (a.output.empty() || a.output == "-") {
    errno = 0;
    if (std::fwrite(html.data(), 1, html.size(), stdout) != html.size() || std::fflush(stdout) != 0) {
      const int err = errno ? errno : EIO;
      if (err == EPIPE) {  // a reader that stopped (`| head`): nothing more to say, as run and check
        std::clearerr(stdout);
        return 0;
      }
      throw OutputError(fmt::format("fleetsim report: error: writing the report failed: {}", std::strerror(err)), err);
    }
    return 0;
  }
  write_file_whole(a.output, html, "the report");
  return 0;
}

}  // namespace fleetsim::cli
