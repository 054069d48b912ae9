// examples/fashion_mnist/layer_profile.h — where the training time goes (--profile): the wall time of
// each layer's forward and backward call and of the update, summed over the training batches and
// printed as a table at the end.
//
// Each timed call is bracketed by waits on the stream, so a GPU kernel's time lands on the layer that
// launched it. That serialises host and device: a profiled GPU run is slower than a plain one, and only
// the shares are meaningful there. On the CPU every call is synchronous already and the cost is nil.
#pragma once
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>
#include <tensorexpr/stream.h>

namespace fashion_mnist {

class LayerProfile {
 public:
  // Runs f() and adds its wall time to the entry `layer` + " " + `phase` (phase: "fwd", "bwd", ...).
  template <typename Device, typename F>
  void Time(tensorexpr::Stream<Device>* s, const char* layer, const char* phase, F&& f) {
    using Clock = std::chrono::steady_clock;
    s->Wait();
    const auto start = Clock::now();
    f();
    s->Wait();
    Add(layer, phase, std::chrono::duration<double>(Clock::now() - start).count());
  }

  // Adds `seconds` to the entry `layer` + " " + `phase` (what Time measures; tests give exact figures).
  void Add(const char* layer, const char* phase, double seconds) {
    const std::string name = std::string(layer) + " " + phase;
    for (auto& e : entries_) {
      if (e.first == name) {
        e.second += seconds;
        return;
      }
    }
    entries_.emplace_back(name, seconds);
  }

  // Counts one trained batch (the table divides by the count).
  void EndBatch() { ++batches_; }

  // The table, slowest entry first: total seconds, milliseconds per batch and share of the timed total.
  void Print(std::FILE* out) const {
    std::vector<std::pair<std::string, double>> rows = entries_;
    std::stable_sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
    double total = 0;
    for (const auto& r : rows) total += r.second;
    const double per = batches_ > 0 ? 1e3 / static_cast<double>(batches_) : 0.0;
    std::fprintf(out, "profile over %lld batches (each call bracketed by stream waits):\n",
                 static_cast<long long>(batches_));
    std::fprintf(out, "  %-16s %9s %12s %7s\n", "layer", "total s", "ms / batch", "share");
    for (const auto& r : rows)
      std::fprintf(out, "  %-16s %9.3f %12.3f %6.1f%%\n", r.first.c_str(), r.second, r.second * per,
                   total > 0 ? 100.0 * r.second / total : 0.0);
    std::fprintf(out, "  %-16s %9.3f %12.3f\n", "all timed", total, total * per);
  }

 private:
  std::vector<std::pair<std::string, double>> entries_;  // first-seen order; a few dozen entries
  long long batches_ = 0;
};

}  // namespace fashion_mnist
