// Fitting a performance profile to measurements (`fleetsim fit`, docs/validation.md).
//
// Per-step timings (a step's composition -> its measured seconds): the sum of the calibrated
// terms is linear in its coefficients, so they are the non-negative least-squares solution (such a
// profile is composed as a sum).
// Benchmark results (load -> mean TTFT, TPOT, e2e, p99 TTFT): simulation in the loop. Each
// point is simulated with the candidate coefficients and Levenberg-Marquardt minimises the sum
// of squared log ratios predicted / measured, with a weak pull towards the roofline-derived
// prior so that coefficients the data cannot see stay physical.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include <Eigen/Dense>

#include "calibrate/benchmark.hpp"
#include "input/profile.hpp"

namespace fleetsim {

// Non-negative least squares (Lawson-Hanson): argmin |A x - b| subject to x >= 0.
Eigen::VectorXd nnls(const Eigen::MatrixXd& A, const Eigen::VectorXd& b, int max_iterations = 0);

// One measured step: the multipliers of the first six coefficients (1, sequences, weight bytes /
// peak bandwidth, GEMM FLOPs / peak FLOP/s, KV bytes / peak bandwidth, attention FLOPs / peak BF16
// FLOP/s) and its measured time.
struct StepSample {
  std::string where;
  std::string model, weight_dtype;  // catalog model and dtype of the row's configuration
  int tp = 1;
  double x[6] = {};
  double step_s = 0;
};

// Per-step CSV: model, device, tp (optional), weight_dtype (optional), prefill_tokens,
// prefill_seqs (optional), prefill_context_tokens (optional: what the prefilling sequences computed
// in earlier chunks), decode_seqs, decode_context_tokens, step_ms. Work per device is derived from
// the catalog as the simulator derives it.
std::vector<StepSample> read_step_samples(const std::string& path, std::string& device_out);

struct FitOptions {
  int folds = 5;               // k-fold cross-validation (0 or 1: none)
  int max_iterations = 25;     // Levenberg-Marquardt
  BenchProtocol protocol;      // what the data leave unsaid about the benchmark client
  int threads = 0;             // 0: hardware concurrency
  double prior_weight = 0.05;  // pull of each log-coefficient towards its prior, per point
  bool global = false;         // fit the physics terms too, on points of any device and model (fit --global)
  std::function<void(const std::string&)> progress;  // a line per iteration (may be empty)
};

// Errors of a fitted profile on a set of points.
struct PointResult {
  const BenchPoint* point = nullptr;
  Prediction predicted;
  double error[kBenchMetrics];  // relative, NaN where not measured
};

ProfileError summarize(const std::vector<PointResult>& r);
// The median of v (NaN if empty); v is reordered.
double median_of(std::vector<double>& v);

// The starting point and prior of a fit: roofline-like efficiencies and small overheads (with
// `global`, physical guesses for the physics terms too; without, those stay neutral).
PerfCoefficients prior_coefficients(bool global = false);
// How many coefficients a fit solves for: the first kProfileBaseTerms, or with `global` every
// term but the per-output-token client cost (benchmarks cannot tell it from per-sequence cost).
int fitted_terms(bool global);

// Simulate points under coefficients (null: each point's scenario model, i.e. uncalibrated).
std::vector<PointResult> evaluate(const std::vector<const BenchPoint*>& points, const PerfCoefficients* c,
                                  const FitOptions& opt);

// Fit coefficients to benchmark points (all of them simulatable; one device unless opt.global).
PerfCoefficients fit_benchmarks(const std::vector<const BenchPoint*>& points, const FitOptions& opt);

// The fewest points (benchmark points or step timings) fleetsim fit fits to.
constexpr int kMinFitPoints = 3;

// Throws InputError (naming `inputs`) unless every coefficient lies in the range parse_profile
// accepts, so that a fit never writes a profile that a run rejects.
void check_fitted(const PerfCoefficients& c, const std::string& inputs);

// Fit to per-step samples (NNLS) of the sum of the terms (kernel_overlap false); client_ttft_s
// stays 0 (steps do not see the client).
PerfCoefficients fit_steps(const std::vector<StepSample>& samples);
// A sample's step time under c, composed as c says.
double step_prediction(const PerfCoefficients& c, const StepSample& s);

// k-fold cross-validation: each point predicted by a fit that did not see it.
std::vector<PointResult> cross_validate(const std::vector<const BenchPoint*>& points, const FitOptions& opt);

// Leave-one-group-out: the points of each group (a device, a model) predicted by a fit on all the
// other groups' points. Groups with fewer than kMinFitPoints others to fit on are left out.
struct GroupResult {
  std::string group;
  int fit_points = 0;
  std::vector<PointResult> held_out;
};
std::vector<GroupResult> leave_one_group_out(const std::vector<const BenchPoint*>& points,
                                             const std::function<std::string(const BenchPoint&)>& group_of,
                                             const FitOptions& opt);

}  // namespace fleetsim
