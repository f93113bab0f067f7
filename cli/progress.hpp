// Sweep progress on stderr, for people at a terminal and for CI logs.
#pragma once
#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <mutex>
#include <string>

#include "libsim/sweep/sweep.hpp"

namespace fleetsim::cli {

// Sweep progress on stderr. On a terminal, a bar redrawn in place; otherwise (a CI log, a file) a
// plain line every kPlainEvery and one at the end, so a long sweep shows it is alive.
class Progress {
 public:
  static constexpr double kPlainEvery = 5.0;  // seconds

  Progress(bool tty, const std::atomic<bool>& stop)
      : tty_(tty), stop_(stop), start_(std::chrono::steady_clock::now()) {}

  // the sweep stops for a reason of its own (its output failed): no word of signals
  void stopping_silently() {
    std::lock_guard<std::mutex> lock(mutex_);
    announced_ = true;
  }

  void update(const SweepProgress& p) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (ended_) return;
    const double el = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    if (stop_.load() && !announced_) {
      announced_ = true;
      end_line();
      std::fprintf(stderr, "fleetsim sweep: stopping after the simulations under way (signal again to stop at once)\n");
    }
    const bool finished = p.configurations_done == p.configurations_total;
    // the time left, from this run's pace over replications
    const uint64_t reps_now = p.replications_done - std::min(p.replications_done, p.resumed * per_config(p));
    const uint64_t reps_left = p.replications_total - p.replications_done;
    const std::string eta =
        reps_now > 0 && !finished ? fmt::format(", ~{:.0f} s left", el * double(reps_left) / double(reps_now)) : "";
    std::string counts = fmt::format("{}/{} configurations, {}/{} replications", p.configurations_done,
                                     p.configurations_total, p.replications_done, p.replications_total);
    if (p.replications_shared > 0 || p.replications_skipped > 0) {
      std::string why;
      if (p.replications_skipped > 0)
        why = fmt::format("{} not needed once their configuration's verdict was decided", p.replications_skipped);
      if (p.replications_shared > 0)
        why +=
            fmt::format("{}{} served by a run of other engine limits", why.empty() ? "" : ", ", p.replications_shared);
      counts += " (" + why + ")";
    }
    if (tty_) {
      const int width = 30;
      const int fill = p.configurations_total
                           ? int(double(width) * double(p.configurations_done) / double(p.configurations_total))
                           : width;
      std::fprintf(stderr, "\r[%s%s] %s, %.1f s%s   ", std::string(size_t(fill), '#').c_str(),
                   std::string(size_t(width - fill), '.').c_str(), counts.c_str(), el, eta.c_str());
      open_ = true;
      if (finished) end_line();
    } else if (finished) {
      std::fprintf(stderr, "fleetsim sweep: done: %s in %.1f s\n", counts.c_str(), el);
    } else if (el - last_ >= kPlainEvery) {
      last_ = el;
      std::fprintf(stderr, "fleetsim sweep: %s, %.0f s%s\n", counts.c_str(), el, eta.c_str());
    }
    if (finished) ended_ = true;
    std::fflush(stderr);
  }

  // End the bar's line (an interrupted or failed sweep); no further output.
  void close() {
    std::lock_guard<std::mutex> lock(mutex_);
    end_line();
    ended_ = true;
  }

 private:
  static uint64_t per_config(const SweepProgress& p) {
    return p.configurations_total ? p.replications_total / p.configurations_total : 0;
  }
  void end_line() {
    if (open_) std::fputc('\n', stderr);
    open_ = false;
  }

  std::mutex mutex_;
  bool tty_, open_ = false, ended_ = false, announced_ = false;
  const std::atomic<bool>& stop_;
  std::chrono::steady_clock::time_point start_;
  double last_ = 0;
};

}  // namespace fleetsim::cli
