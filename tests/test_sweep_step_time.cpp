// What a sweep says about how sure its figures are: each row names the step-time model that
// priced it, in the words a run's table uses, and the summary, the table and the CSV say them.
#include <doctest/doctest.h>

#include <map>
#include <string>

#include "helpers.hpp"
#include "libsim/sweep/sweep.hpp"
#include "sweep_helpers.hpp"

using namespace fleetsim;

namespace {

ScenarioSource source(const std::string& sweep) { return test::sweep_source(sweep); }
Json run(const ScenarioSource& src) { return test::run_sweep_cpu(src); }

}  // namespace

TEST_CASE("each row names the step-time model that priced it, as a run says it, and the summary counts them") {
  const Json doc =
      run(source("sweep:\n  replications: 2\n  parameters:\n    engine.perf_model: [roofline, physics]\n"
                 "    fleet.replicas: [1, 2]\n"));
  std::map<std::string, uint64_t> counted;
  for (const auto& r : doc["rows"]) {
    // the same sentence as the table of a run of that configuration
    const std::string model = r["parameters"]["engine.perf_model"].get<std::string>();
    const Scenario one = source("")
                             .with_overrides(parse_sets({"engine.perf_model=" + model,
                                                         "fleet.replicas=" + r["parameters"]["fleet.replicas"].dump()}))
                             .instantiate();
    CHECK(r["step_time"].get<std::string>() == step_time_line(one));
    CHECK(r["step_time"].get<std::string>().rfind(model == "roofline" ? "roofline (uncalibrated" : "physics model (",
                                                  0) == 0);
    ++counted[r["step_time"].get<std::string>()];
  }
  REQUIRE(counted.size() == 2);
  const Json& st = doc["summary"]["step_time"];
  REQUIRE(st.size() == 2);
  for (const auto& m : st) CHECK(m["configurations"].get<uint64_t>() == counted.at(m["model"].get<std::string>()));
  // the table says it once per model, the CSV in a column of every row
  const std::string table = format_sweep_table(doc);
  CHECK(table.find("steps    " + st[0]["model"].get<std::string>() + " (2 configurations)\n") != std::string::npos);
  CHECK(table.find("         " + st[1]["model"].get<std::string>() + " (2 configurations)\n") != std::string::npos);
  const std::string csv = sweep_to_csv(doc);
  CHECK(csv.substr(0, csv.find('\n')).find(",replications,stopped_at_s,step_time,") != std::string::npos);
  size_t physics_rows = 0;
  for (size_t at = csv.find("\"physics model ("); at != std::string::npos; at = csv.find("\"physics model (", at + 1))
    ++physics_rows;
  CHECK(physics_rows == 2);
}
