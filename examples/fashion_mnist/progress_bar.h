// examples/fashion_mnist/progress_bar.h — progress within an epoch.
//
// On a terminal: one line redrawn in place about four times a second (a bar, images done, images/s,
// running loss), fitted to the terminal's width so that it never wraps and stacks. When stdout is a file
// or a pipe (CI logs): a plain line about every 10% of the epoch instead, so logs stay readable.
//
// The trainer asks Due() after every minibatch (a clock read) and only then reads the loss, which on the
// GPU waits for the stream: reading it every batch would stall the pipeline.
#pragma once
#include <sys/ioctl.h>
#include <unistd.h>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace fashion_mnist {

// The terminal's width in columns: the tty's, else $COLUMNS, else 80.
inline int TerminalColumns() {
  winsize w{};
  if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &w) == 0 && w.ws_col > 0) return w.ws_col;
  if (const char* env = std::getenv("COLUMNS")) {
    const int c = std::atoi(env);
    if (c > 0) return c;
  }
  return 80;
}

// One progress line of at most columns - 1 characters (the last column stays free: writing into it makes
// some terminals wrap). The bar takes what the numbers leave, up to 30 characters; on a very narrow
// terminal the bar goes first, then the text is cut.
inline std::string FormatProgressLine(const std::string& label, long done, long total, double images_per_second,
                                      double running_loss, int columns) {
  char numbers[128];
  std::snprintf(numbers, sizeof numbers, " %ld/%ld  %.0f img/s  loss %.4f", done, total, images_per_second,
                running_loss);
  const long room = static_cast<long>(columns) - 1 - static_cast<long>(label.size()) -
                    static_cast<long>(std::char_traits<char>::length(numbers)) - 3;  // " [" and "]"
  std::string line = label;
  if (room >= 10) {
    const long width = std::min(room, 30L);
    const long filled = total > 0 ? std::min(width, width * done / total) : width;
    line += " [" + std::string(static_cast<size_t>(filled), '#') + std::string(static_cast<size_t>(width - filled), '.') + "]";
  }
  line += numbers;
  const size_t limit = static_cast<size_t>(std::max(columns - 1, 1));
  if (line.size() > limit) line.resize(limit);
  return line;
}

class ProgressBar {
 public:
  static constexpr double kRedrawSeconds = 0.25;

  ProgressBar(std::string label, long total) : label_(std::move(label)), total_(total), tty_(isatty(fileno(stdout))) {
    start_ = last_draw_ = Clock::now();
  }

  // Whether Draw should be called now that `done` images are processed: a quarter second since the last
  // drawing on a terminal, a new tenth of the epoch otherwise, and always at the end.
  bool Due(long done) const {
    if (done >= total_) return true;
    if (tty_) return Seconds(last_draw_, Clock::now()) >= kRedrawSeconds;
    const long step = std::max(total_ / 10, 1L);
    return done / step != reported_ / step;
  }

  // Draws the progress: `done` images processed so far, `running_loss` the mean loss over them.
  void Draw(long done, double running_loss) {
    const auto now = Clock::now();
    const double elapsed = Seconds(start_, now);
    const double rate = elapsed > 0 ? static_cast<double>(done) / elapsed : 0.0;
    if (tty_) {
      // \r returns to the line's start and ESC[K clears what a longer previous line left.
      std::printf("\r%s\033[K", FormatProgressLine(label_, done, total_, rate, running_loss, TerminalColumns()).c_str());
    } else {
      if (done >= total_ && reported_ >= total_) return;
      std::printf("%s %ld/%ld (%3.0f%%)  %.0f img/s  loss %.4f\n", label_.c_str(), done, total_,
                  total_ > 0 ? 100.0 * static_cast<double>(done) / static_cast<double>(total_) : 100.0, rate,
                  running_loss);
    }
    std::fflush(stdout);
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
