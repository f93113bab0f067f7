// The shipped performance profiles against the published serving runs they were not fitted on
// (docs/validation.md, "Latency"): each profile's held-out median error may not grow past the
// figure it records. Deterministic: simulations, no timing.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "libsim/calibrate/fit.hpp"
#include "validation/latency_validation.hpp"

using namespace fleetsim;
using namespace fleetsim::validation;

TEST_CASE("every shipped profile still predicts its held-out runs as well as it records") {
  const LatencyData d = load_latency_data(std::string(FLEETSIM_SOURCE_DIR) + "/tests/validation");
  FitOptions opt;
  int checked = 0;
  for (const auto& p : builtin_profiles()) {
    const Split* split = split_for(p, d);
    if (!split) continue;
    CAPTURE(p.name);
    const ProfileError e = summarize(evaluate(split->held, &p.c, opt));
    CHECK(e.points == p.held_out.points);
    for (int m = 0; m < kBenchMetrics; ++m) {
      CAPTURE(kProfileMetrics[m]);
      if (!std::isfinite(p.held_out.median[m])) continue;
      CHECK(e.median[m] <= p.held_out.median[m] + 5e-4);  // the file rounds to 4 decimals
    }
    ++checked;
  }
  CHECK(checked >= 10);
}

TEST_CASE("the physics coefficients still predict the held-out vLLM rows of every device as well as they record") {
  const LatencyData d = load_latency_data(std::string(FLEETSIM_SOURCE_DIR) + "/tests/validation");
  std::vector<const BenchPoint*> held;
  for (const auto& [dev, split] : d.by_device) held.insert(held.end(), split.held.begin(), split.held.end());
  const PerfProfile& p = physics_profile();
  FitOptions opt;
  const ProfileError e = summarize(evaluate(held, &p.c, opt));
  CHECK(e.points == p.held_out.points);
  for (int m = 0; m < kBenchMetrics; ++m) {
    CAPTURE(kProfileMetrics[m]);
    if (!std::isfinite(p.held_out.median[m])) continue;
    CHECK(e.median[m] <= p.held_out.median[m] + 5e-4);
  }
  // and the file records the leave-one-device-out error it quotes in every report
  CHECK(p.cross_validated.points > 0);
  CHECK(std::isfinite(p.cross_validated.median[kMeanE2e]));
}

TEST_CASE(
    "the physics coefficients predict the independent vLLM 0.15.1 runs within the goals docs/validation.md quotes") {
  // tests/validation/holdout_points.csv: no fit saw them. Goals: mean TTFT <= 15%, TPOT and e2e
  // <= 10%, p99 TTFT <= 20%, no run saturating where its server did not
  const LatencyData d = load_latency_data(std::string(FLEETSIM_SOURCE_DIR) + "/tests/validation");
  const std::vector<const BenchPoint*> indep = independent_points(d);
  CHECK(indep.size() == 57);
  FitOptions opt;
  const std::vector<PointResult> r = evaluate(indep, &physics_profile().c, opt);
  const ProfileError e = summarize(r);
  CHECK(e.median[kMeanTtft] <= 0.15);
  CHECK(e.median[kMeanTpot] <= 0.10);
  CHECK(e.median[kMeanE2e] <= 0.10);
  CHECK(e.median[kP99Ttft] <= 0.20);
  // the saturation goal is unmet on one run (docs/validation.md, "The physics model against the
  // issue's goals"); any other saturating is a regression
  std::vector<std::string> sat;
  for (const PointResult& x : r)
    if (saturated(x)) sat.push_back(x.point->where.substr(x.point->where.find("tests/")));
  CHECK(sat == std::vector<std::string>{"tests/validation/holdout_points.csv:11"});
}
