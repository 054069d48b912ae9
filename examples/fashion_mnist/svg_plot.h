// examples/fashion_mnist/svg_plot.h — the training curve as a self-contained SVG: the training loss per
// minibatch (left axis; faint as measured, bold smoothed) and the test accuracy after each epoch (right
// axis) against the epoch, fractional along the way. The legend sits above the plot, outside the data.
// No plotting library: a few lines, axes, ticks and a legend written by hand, viewable in any browser.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>
#include "training_log.h"

namespace fashion_mnist {

namespace detail {

// A "nice" tick step (1, 2 or 5 times a power of ten) giving about `ticks` intervals over `span`.
inline double NiceStep(double span, int ticks) {
  const double raw = span / ticks;
  const double p = std::pow(10.0, std::floor(std::log10(raw)));
  const double m = raw / p;
  return (m < 1.5 ? 1 : m < 3.5 ? 2 : m < 7.5 ? 5 : 10) * p;
}

// The range [lo, hi] widened to whole tick steps, never empty.
inline void NiceRange(double* lo, double* hi, double* step) {
  if (!(*hi > *lo)) {
    const double pad = std::max(std::fabs(*lo) * 0.05, 1e-3);
    *lo -= pad;
    *hi += pad;
  }
  *step = NiceStep(*hi - *lo, 5);
  *lo = std::floor(*lo / *step) * *step;
  *hi = std::ceil(*hi / *step) * *step;
}

// `text` made safe as SVG (XML) character data or an attribute value: a title holding '<' or '&' would
// otherwise break the document or inject markup.
inline std::string XmlEscape(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      default: out += c;
    }
  }
  return out;
}

// A point of a curve, in data coordinates (epoch, value).
struct PlotPoint {
  double x, y;
};

// The training loss as measured: each minibatch at its fraction of its epoch, (epoch - 1) + (i + 1) / n.
// A record without minibatch losses (a log read back) gives its epoch's mean at the epoch's middle.
inline std::vector<PlotPoint> BatchLossPoints(const std::vector<EpochRecord>& records) {
  std::vector<PlotPoint> points;
  for (const EpochRecord& r : records) {
    const size_t n = r.batch_losses.size();
    if (n == 0) points.push_back({r.epoch - 0.5, r.train_loss});
    for (size_t i = 0; i < n; ++i)
      points.push_back({r.epoch - 1 + static_cast<double>(i + 1) / static_cast<double>(n), r.batch_losses[i]});
  }
  return points;
}

// An exponential moving average over about 1/50 of the points (at least 1: a few points stay as they
// are), debiased so that it starts at the first value instead of rising from 0.
inline std::vector<PlotPoint> Smoothed(const std::vector<PlotPoint>& points) {
  const double window = std::max(1.0, static_cast<double>(points.size()) / 50.0);
  const double keep = 1.0 - 1.0 / window;
  std::vector<PlotPoint> out;
  out.reserve(points.size());
  double average = 0, weight = 0;
  for (const PlotPoint& p : points) {
    average = keep * average + (1.0 - keep) * p.y;
    weight = keep * weight + (1.0 - keep);
    out.push_back({p.x, average / weight});
  }
  return out;
}

// At most `limit` points, evenly picked, the last one kept: a 10-epoch run has ~9,400 minibatches, more
// than a 600-pixel-wide plot can show.
inline std::vector<PlotPoint> Thinned(const std::vector<PlotPoint>& points, size_t limit) {
  if (points.size() <= limit) return points;
  std::vector<PlotPoint> out;
  const double step = static_cast<double>(points.size() - 1) / static_cast<double>(limit - 1);
  for (size_t i = 0; i < limit; ++i) out.push_back(points[static_cast<size_t>(std::lround(static_cast<double>(i) * step))]);
  return out;
}

}  // namespace detail

// The other texts in the plot are fixed words and numbers; only the title comes from the caller.
inline void WriteTrainingCurveSvg(const std::string& path, const std::vector<EpochRecord>& records,
                                  const std::string& title) {
  std::FILE* f = std::fopen(path.c_str(), "w");
  if (f == nullptr) throw std::runtime_error("cannot write the plot file " + path);
  // The top margin holds the title and, below it, the legend: nothing is drawn over the data.
  const double W = 720, H = 440, left = 70, right = 70, top = 75, bottom = 55;
  const double pw = W - left - right, ph = H - top - bottom;
  constexpr size_t kMaxPoints = 600;

  const std::vector<detail::PlotPoint> measured = detail::BatchLossPoints(records);
  const std::vector<detail::PlotPoint> smooth = detail::Thinned(detail::Smoothed(measured), kMaxPoints);
  const std::vector<detail::PlotPoint> raw = detail::Thinned(measured, kMaxPoints);
  double loss_lo = 0, loss_hi = 1, acc_lo = 0, acc_hi = 1;  // loss from zero: its fall reads honestly
  if (!records.empty()) {
    loss_hi = -1e300, acc_lo = 1e300, acc_hi = -1e300;
    for (const detail::PlotPoint& p : raw) loss_hi = std::max(loss_hi, p.y);
    for (const EpochRecord& r : records) {
      acc_lo = std::min(acc_lo, r.test_accuracy);
      acc_hi = std::max(acc_hi, r.test_accuracy);
    }
  }
  acc_hi = std::min(1.0, acc_hi);
  double loss_step, acc_step;
  detail::NiceRange(&loss_lo, &loss_hi, &loss_step);
  detail::NiceRange(&acc_lo, &acc_hi, &acc_step);
  const int epochs = std::max(1, static_cast<int>(records.size()));
  auto X = [&](double epoch) { return left + pw * epoch / epochs; };
  auto YL = [&](double v) { return top + ph * (1 - (v - loss_lo) / (loss_hi - loss_lo)); };
  auto YA = [&](double v) { return top + ph * (1 - (v - acc_lo) / (acc_hi - acc_lo)); };
  const char* loss_color = "#d62728";
  const char* acc_color = "#1f77b4";

  std::fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
               "font-family=\"sans-serif\" font-size=\"12\">\n", W, H);
  std::fprintf(f, "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n");
  std::fprintf(f, "<text x=\"%.0f\" y=\"25\" text-anchor=\"middle\" font-size=\"15\">%s</text>\n", W / 2,
               detail::XmlEscape(title).c_str());
  std::fprintf(f, "<rect x=\"%.0f\" y=\"%.0f\" width=\"%.0f\" height=\"%.0f\" fill=\"none\" stroke=\"#444\"/>\n",
               left, top, pw, ph);
  // Epoch ticks from 0 (at most ~10 labels).
  const int estep = std::max(1, static_cast<int>(std::ceil(epochs / 10.0)));
  for (int e = 0; e <= epochs; e += estep) {
    std::fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#eee\"/>\n", X(e), top, X(e),
                 top + ph);
    std::fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%d</text>\n", X(e), top + ph + 18, e);
  }
  std::fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">epoch</text>\n", left + pw / 2, H - 12);
  // Left axis: loss. Right axis: accuracy.
  for (double v = loss_lo; v <= loss_hi + loss_step * 1e-6; v += loss_step)
    std::fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\" fill=\"%s\">%.3g</text>\n", left - 6,
                 YL(v) + 4, loss_color, v);
  for (double v = acc_lo; v <= acc_hi + acc_step * 1e-6; v += acc_step)
    std::fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" fill=\"%s\">%.3g</text>\n", left + pw + 6, YA(v) + 4, acc_color, v);
  std::fprintf(f, "<text transform=\"translate(18,%.1f) rotate(-90)\" text-anchor=\"middle\" fill=\"%s\">"
               "training loss</text>\n", top + ph / 2, loss_color);
  std::fprintf(f, "<text transform=\"translate(%.1f,%.1f) rotate(90)\" text-anchor=\"middle\" fill=\"%s\">"
               "test accuracy</text>\n", W - 18, top + ph / 2, acc_color);
  // The curves: the loss as measured (faint) and smoothed; the accuracy with a marker per epoch, so that a
  // single epoch still shows.
  auto polyline = [&](const char* color, double width, double opacity, const std::vector<detail::PlotPoint>& pts,
                      auto y_of) {
    std::fprintf(f, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"%g\" stroke-opacity=\"%g\" points=\"",
                 color, width, opacity);
    for (const detail::PlotPoint& p : pts) std::fprintf(f, "%.1f,%.1f ", X(p.x), y_of(p.y));
    std::fprintf(f, "\"/>\n");
  };
  polyline(loss_color, 1, 0.25, raw, YL);
  polyline(loss_color, 2, 1, smooth, YL);
  std::vector<detail::PlotPoint> accuracy;
  for (const EpochRecord& r : records) accuracy.push_back({static_cast<double>(r.epoch), r.test_accuracy});
  polyline(acc_color, 2, 1, accuracy, YA);
  for (const detail::PlotPoint& p : accuracy)
    std::fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3\" fill=\"%s\"/>\n", X(p.x), YA(p.y), acc_color);
  // Legend, with the final values, in the top margin; each entry starts after the previous one's text
  // (~7 pixels a character at this font size).
  double legend_x = left;
  auto legend = [&](const char* color, const std::string& text) {
    std::fprintf(f, "<line x1=\"%.1f\" y1=\"52\" x2=\"%.1f\" y2=\"52\" stroke=\"%s\" stroke-width=\"2\"/>\n",
                 legend_x, legend_x + 20, color);
    std::fprintf(f, "<text x=\"%.1f\" y=\"56\" fill=\"%s\">%s</text>\n", legend_x + 26, color, text.c_str());
    legend_x += 26 + 7.0 * static_cast<double>(text.size()) + 24;
  };
  char text[96];
  std::snprintf(text, sizeof text, "training loss, smoothed (last epoch %.4f)",
                records.empty() ? 0.0 : records.back().train_loss);
  legend(loss_color, records.empty() ? "training loss, smoothed" : text);
  std::snprintf(text, sizeof text, "test accuracy (last %.4f)", records.empty() ? 0.0 : records.back().test_accuracy);
  legend(acc_color, records.empty() ? "test accuracy" : text);
  std::fprintf(f, "</svg>\n");
  const bool ok = std::ferror(f) == 0;
  if (std::fclose(f) != 0 || !ok) throw std::runtime_error("cannot write the plot file " + path);
}

}  // namespace fashion_mnist
