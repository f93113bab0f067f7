// The deterministic building blocks of the core, against the standard library and closed forms.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <random>
#include <vector>

#include "libsim/core/engine.hpp"

using namespace fleetsim;

TEST_CASE("deterministic log, exp and sin agree with libm to a few ulp") {
  for (double x = 1e-300; x < 1e300; x *= 1.37)
    CHECK(std::fabs(dm::log(x) - std::log(x)) <= 4e-16 * std::max(1.0, std::fabs(std::log(x))));
  for (double x = -700; x < 700; x += 0.731) CHECK(std::fabs(dm::exp(x) - std::exp(x)) <= 4e-16 * std::exp(x));
  for (double x = -50; x < 50; x += 0.0137) CHECK(std::fabs(dm::sin(x) - std::sin(x)) <= 4e-16 * (1.0 + std::fabs(x)));
  CHECK(dm::floor(-1.5) == -2.0);
  CHECK(dm::ceil(1.0000001) == 2.0);
  CHECK(dm::lround(2.5) == 3);
}

TEST_CASE("Philox4x32-10 matches the Random123 known-answer vectors") {
  Philox4x32 c0{{0, 0, 0, 0}};
  Philox4x32 r0 = philox4x32_10(c0, 0, 0);
  CHECK(r0.v[0] == 0x6627e8d5u);
  CHECK(r0.v[1] == 0xe169c58du);
  CHECK(r0.v[2] == 0xbc57ac4cu);
  CHECK(r0.v[3] == 0x9b00dbd8u);
  Philox4x32 c1{{0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu}};
  Philox4x32 r1 = philox4x32_10(c1, 0xffffffffu, 0xffffffffu);
  CHECK(r1.v[0] == 0x408f276du);
  CHECK(r1.v[1] == 0x41c83b0eu);
  CHECK(r1.v[2] == 0xa20bc7c6u);
  CHECK(r1.v[3] == 0x6d5451fdu);
  Philox4x32 c2{{0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u}};
  Philox4x32 r2 = philox4x32_10(c2, 0xa4093822u, 0x299f31d0u);
  CHECK(r2.v[0] == 0xd16cfe09u);
  CHECK(r2.v[1] == 0x94fdccebu);
  CHECK(r2.v[2] == 0x5001e420u);
  CHECK(r2.v[3] == 0x24126ea1u);
}

TEST_CASE("histogram quantiles are within 1% of the exact sample quantiles, and merge adds") {
  const Rng rng = make_rng(7, 0);
  std::vector<double> xs;
  auto h = std::make_unique<Histogram>();
  auto a = std::make_unique<Histogram>();
  auto b = std::make_unique<Histogram>();
  hist_clear(*h);
  hist_clear(*a);
  hist_clear(*b);
  for (int i = 0; i < 200000; ++i) {
    const double x = dm::exp(-3.0 + 2.0 * normal_quantile(rng.uniform(Stream::prompt, 0, uint64_t(i), 0)));
    xs.push_back(x);
    hist_add(*h, x);
    hist_add(i % 2 ? *a : *b, x);
  }
  std::sort(xs.begin(), xs.end());
  for (double q : {0.01, 0.1, 0.5, 0.9, 0.95, 0.99, 0.999}) {
    const double exact = xs[size_t(std::ceil(q * double(xs.size()))) - 1];
    CHECK(std::fabs(hist_quantile(*h, q) / exact - 1.0) <= 0.01);
  }
  CHECK(hist_quantile(*h, 1.0) == xs.back());
  hist_merge(*a, *b);
  CHECK(a->n == h->n);
  for (int i = 0; i < kHistBuckets; ++i) REQUIRE(a->counts[i] == h->counts[i]);
  CHECK(hist_quantile(*a, 0.99) == hist_quantile(*h, 0.99));
}

TEST_CASE("histogram quantiles resolve waits of days, as long as the longest run (30 days)") {
  auto h = std::make_unique<Histogram>();
  hist_clear(*h);
  // 1 to 29 days, one value a day: the median is the 15th day, p90 the 27th
  for (int d = 1; d <= 29; ++d) hist_add(*h, 86400.0 * d);
  CHECK(std::fabs(hist_quantile(*h, 0.5) / (86400.0 * 15) - 1.0) <= 0.01);
  CHECK(std::fabs(hist_quantile(*h, 0.9) / (86400.0 * 27) - 1.0) <= 0.01);
}

TEST_CASE("closed-form run time equals the step-by-step sum, through the roofline crossover") {
  // compute line starts lower but grows faster: the bandwidth line dominates first
  Line l{
      0.001, 0.002, 3e-5, 0.004, 1e-5,
  };
  double acc = 0;
  for (int64_t k = 0; k <= 400; ++k) {
    CHECK(line_sum(l, k) == doctest::Approx(acc).epsilon(1e-12));
    acc += line_step(l, k);
  }
  Line flat{0.01, 0, 0, 0, 0};
  CHECK(line_sum(flat, 100) == doctest::Approx(1.0));
  CHECK(line_steps_until(flat, 100, 0.0349) == 4);
  CHECK(line_steps_until(flat, 100, 0.04) == 4);
  CHECK(line_steps_until(flat, 100, 50.0) == 100);
}

TEST_CASE("a central queue's note calendar finds the earliest (time, index) note, as a scan does") {
  // Notes set at random: ties, notes laps ahead, spreads from 0.1 ms to 100 s (so the width is
  // refitted), removals; after each, the calendar's earliest against a scan over every replica.
  for (const int32_t n : {3, 9, 40, 128}) {
    std::vector<Replica> rep(static_cast<size_t>(n));
    std::vector<CalNote> notes(static_cast<size_t>(n));
    std::vector<int32_t> buckets(static_cast<size_t>(4 * n), kNone);
    for (Replica& R : rep) R.wake_at = kInf;
    PoolState ps{};
    ps.n_replicas = n;
    ps.cq_mask = cal_bucket_count(n) - 1;
    ps.cq_w = 1e-3;
    ps.cq_inv_w = 1e3;
    Sim s{};
    s.rep = rep.data();
    s.cq_note = notes.data();
    s.cq_bucket = buckets.data();
    CHECK((n <= kCalScan) == (ps.cq_mask == 0));
    if (n > kCalScan) {
      CHECK(ps.cq_mask + 1 >= 2 * n);
      CHECK(ps.cq_mask + 1 < 4 * n);
    }
    std::mt19937_64 g{uint64_t(n)};
    std::uniform_real_distribution<double> u(0.0, 1.0);
    double now = 0.0;
    int wrong = 0, filed = 0, refits = 0;
    const double spreads[] = {1e-4, 0.02, 3.0, 100.0};
    for (int i = 0; i < 40000; ++i) {
      const double spread = spreads[(i / 5000) % 4];
      const int32_t r = int32_t(g() % uint64_t(n));
      const double x = u(g);
      double at = now + spread * u(g);
      if (x < 0.15)
        at = kInf;
      else if (x < 0.3)
        at = rep[size_t(g() % uint64_t(n))].wake_at;  // a tie (or none)
      else if (x < 0.35)
        at = now + 50.0 * spread * double(ps.cq_mask + 1);  // laps ahead
      const double w0 = ps.cq_w;
      cal_set(s, ps, r, at);
      int32_t want = kNone;
      for (int32_t k = 0; k < n; ++k)
        if (rep[size_t(k)].wake_at < kInf && (want == kNone || rep[size_t(k)].wake_at < rep[size_t(want)].wake_at))
          want = k;
      const int32_t got = cal_min(s, ps);
      wrong += got != want;
      refits += ps.cq_w != w0;
      int32_t count = 0;
      for (const Replica& R : rep) count += R.wake_at < kInf;
      filed += count == ps.cq_n;
      if (got != kNone && u(g) < 0.5) now = rep[size_t(got)].wake_at;  // time moves on to it
    }
    CHECK(wrong == 0);
    CHECK(filed == 40000);
    if (n > kCalScan) CHECK(refits > 3);
  }
}

namespace {
double sample_mean(const DistParams& d, int n, double* p99 = nullptr, double* median = nullptr) {
  const Rng rng = make_rng(11, 3);
  std::vector<double> xs;
  double s = 0;
  for (int i = 0; i < n; ++i) {
    const double x = double(sample_length(d, rng, Stream::output, 0, uint64_t(i)));
    xs.push_back(x);
    s += x;
  }
  std::sort(xs.begin(), xs.end());
  if (p99) *p99 = xs[size_t(0.99 * n)];
  if (median) *median = xs[size_t(0.5 * n)];
  return s / n;
}
}  // namespace

TEST_CASE("length distributions have the moments they were given") {
  DistParams geo{DistKind::geometric, 200.0, 1.0 / std::log(1.0 - 1.0 / 200.0), nullptr, nullptr, 0};
  CHECK(sample_mean(geo, 200000) == doctest::Approx(200.0).epsilon(0.01));
  double p99, med;
  DistParams ln{DistKind::lognormal, std::log(1000.0), std::log(5.0) / 2.326, nullptr, nullptr, 0};
  sample_mean(ln, 200000, &p99, &med);
  CHECK(med == doctest::Approx(1000.0).epsilon(0.02));
  CHECK(p99 == doctest::Approx(5000.0).epsilon(0.03));
  DistParams uni{DistKind::uniform, 10.0, 20.0, nullptr, nullptr, 0};
  CHECK(sample_mean(uni, 100000) == doctest::Approx(15.0).epsilon(0.01));
  const double vals[] = {10, 100};
  const double cdf[] = {0.25, 1.0};
  DistParams emp{DistKind::empirical, 0, 0, vals, cdf, 2};
  CHECK(sample_mean(emp, 100000) == doctest::Approx(0.25 * 10 + 0.75 * 100).epsilon(0.01));
}

TEST_CASE("gamma inter-arrivals have the requested mean and coefficient of variation") {
  for (double cv : {0.5, 1.0, 3.0}) {
    ArrivalParams a{};
    a.kind = ArrivalKind::gamma;
    a.rate_per_s = 4.0;
    a.gamma_shape = 1.0 / (cv * cv);
    a.gamma_scale_s = cv * cv / 4.0;
    a.stop_s = kInf;
    const Rng rng = make_rng(5, 0);
    ArrivalCursor c{0, 0, 0};
    double t = 0, s = 0, s2 = 0;
    const int n = 200000;
    for (int i = 0; i < n; ++i) {
      const double t2 = next_arrival(a, rng, 0, c, t, 1e12);
      const double g = t2 - t;
      s += g;
      s2 += g * g;
      t = t2;
    }
    const double mean = s / n, var = s2 / n - mean * mean;
    CHECK(mean == doctest::Approx(0.25).epsilon(0.02));
    CHECK(std::sqrt(var) / mean == doctest::Approx(cv).epsilon(0.04));
  }
}

TEST_CASE("diurnal arrivals follow the rate curve") {
  ArrivalParams a{};
  a.kind = ArrivalKind::diurnal;
  a.rate_per_s = 10.0;
  a.diurnal_amplitude = 0.5;
  a.diurnal_period_s = 1000.0;
  a.diurnal_peak_at_s = 250.0;
  a.stop_s = kInf;
  const Rng rng = make_rng(9, 0);
  ArrivalCursor c{0, 0, 0};
  double t = 0;
  int peak = 0, trough = 0, total = 0;
  for (;;) {
    t = next_arrival(a, rng, 0, c, t, 100000.0);
    if (t >= kInf) break;
    ++total;
    const double ph = std::fmod(t, 1000.0);
    if (ph >= 200 && ph < 300) ++peak;    // around the peak
    if (ph >= 700 && ph < 800) ++trough;  // around the trough
  }
  CHECK(double(total) / 100000.0 == doctest::Approx(10.0).epsilon(0.02));
  // integral of 1 + 0.5 cos(2 pi u / 1000) over +-50 s of the peak and the trough: 100 +- 0.5 (1000 / 2 pi) 2 sin(pi /
  // 10)
  const double lift = 0.5 * (1000.0 / (2.0 * M_PI)) * 2.0 * std::sin(M_PI / 10.0) / 100.0;
  CHECK(double(peak) / double(trough) == doctest::Approx((1 + lift) / (1 - lift)).epsilon(0.05));
}
