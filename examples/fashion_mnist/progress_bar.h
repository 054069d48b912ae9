// examples/fashion_mnist/progress_bar.h — progress within an epoch.
//
// On a terminal: one line redrawn in place (a bar, images done, images/s, running loss). When stdout is a
// file or a pipe (CI logs): a plain line about every 10% of the epoch instead, so logs stay readable.
#pragma once
#include <unistd.h>
#include <chrono>
#include <cstdio>
#include <string>

namespace fashion_mnist {

class ProgressBar {
 public:
  ProgressBar(std::string label, long total) : label_(std::move(label)), total_(total), tty_(isatty(fileno(stdout))) {
    start_ = last_draw_ = Clock::now();
  }

  // `done` images processed so far, `running_loss` the mean loss over them.
  void Update(long done, double running_loss) {
    const auto now = Clock::now();
    const double elapsed = Seconds(start_, now);
    const double rate = elapsed > 0 ? done / elapsed : 0.0;
    if (tty_) {
      if (done < total_ && Seconds(last_draw_, now) < 0.1) return;  // ~10 redraws a second
      const int width = 30;
      const int filled = total_ > 0 ? static_cast<int>(width * done / total_) : width;
      std::string bar(filled, '#');
      bar.append(width - filled, '.');
      std::printf("\r%s [%s] %ld/%ld  %.0f img/s  loss %.4f ", label_.c_str(), bar.c_str(), done, total_, rate,
                  running_loss);
      std::fflush(stdout);
    } else {
      const long step = total_ / 10 > 0 ? total_ / 10 : 1;
      if (done / step == reported_ / step && done < total_) return;
      if (done >= total_ && reported_ >= total_) return;
      std::printf("%s %ld/%ld (%3.0f%%)  %.0f img/s  loss %.4f\n", label_.c_str(), done, total_,
                  total_ > 0 ? 100.0 * done / total_ : 100.0, rate, running_loss);
      std::fflush(stdout);
    }
    reported_ = done;
    last_draw_ = now;
  }

  // Ends the in-place line (the final bar stays) so that the next output starts on a fresh one.
  void Finish() {
    if (tty_) std::printf("\n");
    std::fflush(stdout);
  }

 private:
  using Clock = std::chrono::steady_clock;
  static double Seconds(Clock::time_point a, Clock::time_point b) {
    return std::chrono::duration<double>(b - a).count();
  }
  std::string label_;
  long total_;
  bool tty_;
  long reported_ = 0;
  Clock::time_point start_, last_draw_;
};

}  // namespace fashion_mnist
