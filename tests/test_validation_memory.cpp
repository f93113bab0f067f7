// The memory model against public vLLM start-up logs (tests/validation/kv_cache_points.csv), with
// the bounds docs/validation.md ("Memory") documents. Deterministic: no timing, no randomness.
#include <doctest/doctest.h>

#include <cmath>

#include "validation/memory_validation.hpp"

using namespace fleetsim;
using namespace fleetsim::validation;

namespace {
const std::string kDir = std::string(FLEETSIM_SOURCE_DIR) + "/tests/validation";

// The documented bounds (docs/validation.md, "Memory").
constexpr double kHeldOutMedianPct = 3.0;  // median |error| of the held-out points
constexpr double kFitMedianPct = 1.0;      // median |error| of the fit points
constexpr double kWorstPct = 25.0;         // any scored point
}  // namespace

TEST_CASE("memory validation: vLLM's logged KV cache, held-out median within 3%, every point within 25%") {
  const std::vector<Point> pts = load_points(kDir);
  REQUIRE(pts.size() == 22);
  std::vector<Prediction> pred;
  for (const Point& p : pts) pred.push_back(predict(p));

  const Summary held = summarize(pts, pred, "held-out"), fit = summarize(pts, pred, "fit");
  MESSAGE("held-out: " << held.points << " points, median " << held.median_abs_pct << "%, worst " << held.worst_abs_pct
                       << "% (row " << held.worst_row << "); fit: " << fit.points << " points, median "
                       << fit.median_abs_pct << "%, worst " << fit.worst_abs_pct << "% (row " << fit.worst_row << ")");
  CHECK(held.points >= 5);
  CHECK(held.points + fit.points >= 10);
  CHECK(held.median_abs_pct <= kHeldOutMedianPct);
  CHECK(fit.median_abs_pct <= kFitMedianPct);
  for (size_t i = 0; i < pts.size(); ++i) {
    CAPTURE(pts[i].row);
    CAPTURE(pts[i].source);
    if (pred[i].scored) CHECK(std::fabs(pred[i].error_pct) <= kWorstPct);
    // an excluded point says why
    if (pts[i].set == "excluded")
      CHECK_FALSE(pts[i].notes.empty());
    else
      CHECK(pts[i].set != "");
  }
}

TEST_CASE("memory validation: the runs vLLM refused to start do not start, the others do") {
  const std::vector<Point> pts = load_points(kDir);
  int failed = 0;
  for (const Point& p : pts) {
    if (p.set == "excluded") continue;
    CAPTURE(p.row);
    const Prediction r = predict(p);
    REQUIRE(r.predicted);
    CHECK(r.starts == !p.failed_start);
    failed += p.failed_start;
  }
  CHECK(failed == 3);  // llm-d's 70B FP8 on one H100, vllm#10517 at 29k, vllm#13061
}

TEST_CASE("memory validation: the scored points span 24 GB, 40 GB and 80 GB cards and tensor parallelism") {
  const std::vector<Point> pts = load_points(kDir);
  int small = 0, forty = 0, eighty = 0, parallel = 0;
  for (const Point& p : pts) {
    if (!predict(p).scored) continue;
    const double gib = p.device_gib > 0 ? p.device_gib : named(builtin_devices(), p.device).memory_gib;
    small += gib < 25;
    forty += gib > 35 && gib < 45;
    eighty += gib > 75 && gib < 100;
    parallel += p.tp * p.pp > 1;
  }
  CHECK(small >= 2);
  CHECK(forty >= 1);
  CHECK(eighty >= 5);
  CHECK(parallel >= 3);
  // no point on a 141 GB or larger card, and none at pp > 1: see docs/validation.md
}

TEST_CASE("memory validation: refitting on the fit set reproduces the shipped constants") {
  const VllmMemoryConstants k = fit_constants(load_points(kDir)), shipped;
  CHECK(k.non_torch_gib == doctest::Approx(shipped.non_torch_gib).epsilon(0.01));
  CHECK(k.collective_gib == doctest::Approx(shipped.collective_gib).epsilon(0.01));
  CHECK(k.forward_scale == doctest::Approx(shipped.forward_scale).epsilon(0.001));
  CHECK(k.pytorch_bytes_per_logit == doctest::Approx(shipped.pytorch_bytes_per_logit).epsilon(0.002));
  CHECK(k.flashinfer_bytes_per_logit == doctest::Approx(shipped.flashinfer_bytes_per_logit).epsilon(0.002));
}
