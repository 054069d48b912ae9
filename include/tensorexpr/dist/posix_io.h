// dist/posix_io.h — what the rendezvous transports (rendezvous_file.h, rendezvous_tcp.h) share: integers
// parsed strictly, errno as text, an owned file descriptor, a deadline, and the prefix of their errors.
#pragma once
#include <unistd.h>
#include <algorithm>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>
#include "../base.h"

namespace tensorexpr {
namespace dist {

namespace detail {

// The integer `text` spells (decimal, an optional '-'), or nullopt. A value beyond long long saturates, so
// that range checks call it out of range rather than not a number.
inline std::optional<long long> ParseInteger(const std::string& text) {
  long long value = 0;
  const char* first = text.data();
  const char* last = first + text.size();
  const auto [end, ec] = std::from_chars(first, last, value);
  if (first == last || end != last) return std::nullopt;
  if (ec == std::errc::result_out_of_range) return text[0] == '-' ? LLONG_MIN : LLONG_MAX;
  if (ec != std::errc()) return std::nullopt;
  return value;
}

// strerror, safe to call from several threads (ranks run as threads in tests). strerror_r is the GNU
// variant (returns the text) or the XSI one (fills the buffer): the overloads take either.
inline std::string StrerrorText(const char* text, const char*, int) { return text; }
inline std::string StrerrorText(int rc, const char* buffer, int err) {
  return rc == 0 ? std::string(buffer) : Message("error ", err);
}
inline std::string ErrnoText(int err) {
  char buffer[256] = {};
  return StrerrorText(strerror_r(err, buffer, sizeof buffer), buffer, err);
}

// Closes its descriptor on every path out.
class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  Fd(Fd&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  Fd& operator=(Fd&& other) noexcept {
    if (this != &other) {
      Reset();
      fd_ = std::exchange(other.fd_, -1);
    }
    return *this;
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() { Reset(); }
  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  void Reset() noexcept {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }
  // Gives the descriptor up to the caller, who closes it.
  int Release() noexcept { return std::exchange(fd_, -1); }

 private:
  int fd_ = -1;
};

// The moment every wait of one rendezvous counts down to.
class Deadline {
 public:
  using Clock = std::chrono::steady_clock;
  // Beyond a year the clock arithmetic could overflow, and no job waits that long.
  explicit Deadline(double seconds)
      : end_(Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                std::chrono::duration<double>(std::min(seconds, 365.0 * 24 * 3600)))) {}
  bool Passed() const { return Clock::now() >= end_; }
  // Milliseconds left, rounded up so that a wait never wakes just short of the deadline and spins.
  int MillisecondsLeft() const {
    const double left = std::chrono::duration<double, std::milli>(end_ - Clock::now()).count();
    return left <= 0 ? 0 : static_cast<int>(std::min(std::ceil(left), double(INT_MAX)));
  }
  // Sleeps `step`, or less when the deadline is nearer: the pause between two polls.
  void SleepAtMost(std::chrono::milliseconds step) const {
    std::this_thread::sleep_for(std::min<Clock::duration>(step, std::max(end_ - Clock::now(), Clock::duration(0))));
  }

 private:
  Clock::time_point end_;
};

// Who is failing at what: every message of one ShareFromRoot call starts "rank R of W: rendezvous SPEC: ".
struct Context {
  std::string prefix;
  double timeout_seconds;
  template <typename... Args>
  [[noreturn]] void Fail(const Args&... args) const {
    ::tensorexpr::Fail(prefix, args...);
  }
};
}  // namespace detail
}  // namespace dist
}  // namespace tensorexpr
