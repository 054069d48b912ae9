// examples/fashion_mnist/training_log.h — the per-epoch record and the --log file (CSV, or JSON when the
// file name ends in .json). The file is rewritten after every epoch, so an interrupted run keeps its log.
#pragma once
#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

namespace fashion_mnist {

struct EpochRecord {
  int epoch = 0;
  double seconds = 0;          // training time of the epoch (evaluation not included)
  double images_per_second = 0;
  double train_loss = 0;       // mean cross-entropy over the epoch's minibatches
  double test_accuracy = 0;    // fraction of the test set classified correctly after the epoch
};

inline bool EndsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// Writes all records so far; throws std::runtime_error naming the file when it cannot be written.
inline void WriteTrainingLog(const std::string& path, const std::vector<EpochRecord>& records) {
  std::FILE* f = std::fopen(path.c_str(), "w");
  if (f == nullptr) throw std::runtime_error("cannot write the log file " + path);
  if (EndsWith(path, ".json")) {
    std::fprintf(f, "[\n");
    for (size_t i = 0; i < records.size(); ++i) {
      const EpochRecord& r = records[i];
      std::fprintf(f,
                   "  {\"epoch\": %d, \"seconds\": %.3f, \"images_per_second\": %.1f, \"train_loss\": %.6f, "
                   "\"test_accuracy\": %.4f}%s\n",
                   r.epoch, r.seconds, r.images_per_second, r.train_loss, r.test_accuracy,
                   i + 1 < records.size() ? "," : "");
    }
    std::fprintf(f, "]\n");
  } else {
    std::fprintf(f, "epoch,seconds,images_per_second,train_loss,test_accuracy\n");
    for (const EpochRecord& r : records)
      std::fprintf(f, "%d,%.3f,%.1f,%.6f,%.4f\n", r.epoch, r.seconds, r.images_per_second, r.train_loss,
                   r.test_accuracy);
  }
  const bool ok = std::ferror(f) == 0;
  if (std::fclose(f) != 0 || !ok) throw std::runtime_error("cannot write the log file " + path);
}

}  // namespace fashion_mnist
