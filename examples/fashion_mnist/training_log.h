// examples/fashion_mnist/training_log.h — the per-epoch record and the --log file (CSV, or JSON when the
// file name ends in .json). The log starts with the run's settings (options, device, versions), so a log
// says how it was made; it is written before training (an unwritable path fails at once) and rewritten
// after every epoch, so an interrupted run keeps its log.
//
//   CSV:   "# name: value" lines, then "epoch,seconds,images_per_second,train_loss,test_accuracy" and a row
//          per epoch (pandas: read_csv(path, comment='#'))
//   JSON:  {"settings": {"name": "value", ...}, "epochs": [{"epoch": 1, ...}, ...]}
#pragma once
#include <cstdio>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace fashion_mnist {

struct EpochRecord {
  int epoch = 0;
  double seconds = 0;          // training time of the epoch (evaluation not included)
  double images_per_second = 0;
  double train_loss = 0;       // mean cross-entropy over the epoch's minibatches
  double test_accuracy = 0;    // fraction of the test set classified correctly after the epoch
  std::vector<double> batch_losses;  // each minibatch's mean loss, in order (the plot's curve; not logged)
  double loss_scale = 1;       // mixed precision: the loss scale after the epoch (printed, not logged)
  long long skipped_steps = 0; // mixed precision: steps skipped for non-finite gradients so far
};

// Name / value pairs, in order.
using RunSettings = std::vector<std::pair<std::string, std::string>>;

inline bool EndsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

namespace detail {

// `text` as a JSON string literal.
inline std::string JsonString(const std::string& text) {
  std::string out = "\"";
  for (const char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char esc[8];
      std::snprintf(esc, sizeof esc, "\\u%04x", static_cast<unsigned>(c));
      out += esc;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

// `text` on one CSV comment line: line breaks would end the comment.
inline std::string OneLine(std::string text) {
  for (char& c : text)
    if (c == '\n' || c == '\r') c = ' ';
  return text;
}

}  // namespace detail

// Writes the settings and all records so far; throws std::runtime_error naming the file when it cannot be
// written.
inline void WriteTrainingLog(const std::string& path, const RunSettings& settings,
                             const std::vector<EpochRecord>& records) {
  std::FILE* f = std::fopen(path.c_str(), "w");
  if (f == nullptr) throw std::runtime_error("cannot write the log file " + path);
  if (EndsWith(path, ".json")) {
    std::fprintf(f, "{\n  \"settings\": {");
    for (size_t i = 0; i < settings.size(); ++i)
      std::fprintf(f, "%s\n    %s: %s", i > 0 ? "," : "", detail::JsonString(settings[i].first).c_str(),
                   detail::JsonString(settings[i].second).c_str());
    std::fprintf(f, "%s},\n  \"epochs\": [", settings.empty() ? "" : "\n  ");
    for (size_t i = 0; i < records.size(); ++i) {
      const EpochRecord& r = records[i];
      std::fprintf(f,
                   "%s\n    {\"epoch\": %d, \"seconds\": %.3f, \"images_per_second\": %.1f, \"train_loss\": %.6f, "
                   "\"test_accuracy\": %.4f}",
                   i > 0 ? "," : "", r.epoch, r.seconds, r.images_per_second, r.train_loss, r.test_accuracy);
    }
    std::fprintf(f, "%s]\n}\n", records.empty() ? "" : "\n  ");
  } else {
    for (const auto& [name, value] : settings)
      std::fprintf(f, "# %s: %s\n", detail::OneLine(name).c_str(), detail::OneLine(value).c_str());
    std::fprintf(f, "epoch,seconds,images_per_second,train_loss,test_accuracy\n");
    for (const EpochRecord& r : records)
      std::fprintf(f, "%d,%.3f,%.1f,%.6f,%.4f\n", r.epoch, r.seconds, r.images_per_second, r.train_loss,
                   r.test_accuracy);
  }
  const bool ok = std::ferror(f) == 0;
  if (std::fclose(f) != 0 || !ok) throw std::runtime_error("cannot write the log file " + path);
}

}  // namespace fashion_mnist
