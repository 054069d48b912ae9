// examples/fashion_mnist/svg_plot.h — the training curve as a self-contained SVG: training loss (left
// axis) and test accuracy (right axis) against the epoch. No plotting library: a few lines, axes, ticks
// and a legend written by hand, viewable in any browser.
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

}  // namespace detail

// The other texts in the plot are fixed words and numbers; only the title comes from the caller.
inline void WriteTrainingCurveSvg(const std::string& path, const std::vector<EpochRecord>& records,
                                  const std::string& title) {
  std::FILE* f = std::fopen(path.c_str(), "w");
  if (f == nullptr) throw std::runtime_error("cannot write the plot file " + path);
  const double W = 720, H = 420, left = 70, right = 70, top = 50, bottom = 60;
  const double pw = W - left - right, ph = H - top - bottom;

  double loss_lo = 1e300, loss_hi = -1e300, acc_lo = 1e300, acc_hi = -1e300;
  for (const EpochRecord& r : records) {
    loss_lo = std::min(loss_lo, r.train_loss);
    loss_hi = std::max(loss_hi, r.train_loss);
    acc_lo = std::min(acc_lo, r.test_accuracy);
    acc_hi = std::max(acc_hi, r.test_accuracy);
  }
  if (records.empty()) loss_lo = 0, loss_hi = 1, acc_lo = 0, acc_hi = 1;
  loss_lo = std::min(loss_lo, 0.0);  // loss from zero: its fall reads honestly
  acc_hi = std::min(1.0, acc_hi);
  double loss_step, acc_step;
  detail::NiceRange(&loss_lo, &loss_hi, &loss_step);
  detail::NiceRange(&acc_lo, &acc_hi, &acc_step);
  const int n = static_cast<int>(records.size());
  const double e_lo = 1, e_hi = std::max(2, n);
  auto X = [&](double epoch) { return left + pw * (epoch - e_lo) / (e_hi - e_lo); };
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
  // Epoch ticks (at most ~10 labels).
  const int estep = std::max(1, static_cast<int>(std::ceil((e_hi - e_lo + 1) / 10.0)));
  for (int e = 1; e <= e_hi; e += estep) {
    std::fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#eee\"/>\n", X(e), top, X(e),
                 top + ph);
    std::fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%d</text>\n", X(e), top + ph + 18, e);
  }
  std::fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">epoch</text>\n", left + pw / 2, H - 15);
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
  // The two curves, with a marker per epoch (a single epoch still shows as points).
  auto curve = [&](const char* color, auto y_of) {
    std::fprintf(f, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\" points=\"", color);
    for (const EpochRecord& r : records) std::fprintf(f, "%.1f,%.1f ", X(r.epoch), y_of(r));
    std::fprintf(f, "\"/>\n");
    for (const EpochRecord& r : records)
      std::fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3\" fill=\"%s\"/>\n", X(r.epoch), y_of(r), color);
  };
  curve(loss_color, [&](const EpochRecord& r) { return YL(r.train_loss); });
  curve(acc_color, [&](const EpochRecord& r) { return YA(r.test_accuracy); });
  // Legend, with the final values.
  if (!records.empty()) {
    const EpochRecord& last = records.back();
    std::fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" fill=\"%s\">training loss (last %.4f)</text>\n", left + 10,
                 top + 18, loss_color, last.train_loss);
    std::fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" fill=\"%s\">test accuracy (last %.4f)</text>\n", left + 10,
                 top + 36, acc_color, last.test_accuracy);
  }
  std::fprintf(f, "</svg>\n");
  const bool ok = std::ferror(f) == 0;
  if (std::fclose(f) != 0 || !ok) throw std::runtime_error("cannot write the plot file " + path);
}

}  // namespace fashion_mnist
