// Sweeps: rows leave in configuration order whatever the thread count. A finished row waits until
// every earlier one has left; a worker may start configuration `pos` only while it is fewer than
// `window` places ahead of the oldest unfinished one, so at most `window` rows are ever held: the
// memory is bounded by the threads, not by the configurations.
#pragma once
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <utility>

#include "report/report.hpp"

namespace fleetsim::sweep_detail {

class RowOrder {
 public:
  // `deliver` is called with each row in order, one call at a time (under the buffer's lock).
  RowOrder(size_t window, std::function<void(Json&&)> deliver) : window_(window), deliver_(std::move(deliver)) {}

  // Block until `pos` is inside the window; false if `give_up()` became true while waiting (a stop,
  // a failure elsewhere). Polled, since a signal handler cannot notify.
  bool admit(size_t pos, const std::function<bool()>& give_up) {
    std::unique_lock<std::mutex> lock(m_);
    while (pos >= next_ + window_) {
      if (give_up()) return false;
      cv_.wait_for(lock, std::chrono::milliseconds(50));
    }
    return true;
  }

  // Row `pos` is finished: deliver it and every held row that now follows in order.
  void put(size_t pos, Json&& row) {
    std::lock_guard<std::mutex> lock(m_);
    held_.emplace(pos, std::move(row));
    if (held_.size() > peak_) peak_ = held_.size();
    bool moved = false;
    for (auto it = held_.begin(); it != held_.end() && it->first == next_; it = held_.erase(it), ++next_, moved = true)
      deliver_(std::move(it->second));
    if (moved) cv_.notify_all();
  }

  size_t delivered() const {
    std::lock_guard<std::mutex> lock(m_);
    return next_;
  }
  size_t peak_held() const {
    std::lock_guard<std::mutex> lock(m_);
    return peak_;
  }

 private:
  size_t window_;
  std::function<void(Json&&)> deliver_;
  mutable std::mutex m_;
  std::condition_variable cv_;
  std::map<size_t, Json> held_;
  size_t next_ = 0, peak_ = 0;
};

}  // namespace fleetsim::sweep_detail
