// examples/fashion_mnist/trainer.h — the training loop, the same for both devices.
//
// Data path: the training images stay as bytes on the host; each epoch they are shuffled and normalised
// ((pixel / 255 - mean) / std, the training set's own statistics) into one float buffer in a single pass,
// which on the GPU is uploaded once per epoch — minibatches are then contiguous slices (no per-batch
// gather or copy). The test set is normalised (and uploaded) once. The loss is summed on the device
// (softmax_output's kAddTo); after each minibatch the running sum is copied into a per-batch array on the
// device (no wait), which is read once per epoch for the plot. The host reads the sum itself only when the
// progress line is redrawn, so the GPU is not synchronised per batch.
#pragma once
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <random>
#include <string>
#include <vector>
#include "data_parallel.h"
#include "idx_dataset.h"
#include "layer_profile.h"
#include "network.h"
#include "options.h"
#include "progress_bar.h"
#include "training_log.h"

namespace fashion_mnist {

// Mean and standard deviation of the pixels (in [0, 1]) of the first `count` images.
struct PixelStats {
  double mean = 0, std = 1;
};

inline PixelStats ComputePixelStats(const ImageSet& s, int64_t count) {
  const int64_t n = count * s.PixelsPerImage();
  double sum = 0, sum_sq = 0;
  for (size_t i = 0; i < static_cast<size_t>(n); ++i) {
    const double v = s.pixels[i] / 255.0;
    sum += v;
    sum_sq += v * v;
  }
  PixelStats st;
  const double count_d = static_cast<double>(n);
  st.mean = n > 0 ? sum / count_d : 0;
  st.std = n > 0 ? std::sqrt(std::max(sum_sq / count_d - st.mean * st.mean, 1e-12)) : 1;
  return st;
}

// Images order[0..n) of `s`, normalised, into dst (n, 1, rows, cols) on the host; their labels into
// labels. Image i is mirrored left to right where flip[i] is set (augmentation; empty: none).
inline void NormaliseInto(const ImageSet& s, const std::vector<int64_t>& order, const PixelStats& st,
                          const Tensor<cpu, 4, float>& dst, const Tensor<cpu, 1, int32_t>& labels,
                          const std::vector<bool>& flip = {}) {
  const int64_t pixels = s.PixelsPerImage(), cols = s.cols;
  const float scale = static_cast<float>(1.0 / (255.0 * st.std)), shift = static_cast<float>(st.mean / st.std);
  ParallelFor(static_cast<index_t>(order.size()), pixels, [&](index_t begin, index_t end) {
    for (index_t i = begin; i < end; ++i) {
      const size_t at = static_cast<size_t>(i);
      const uint8_t* src = s.pixels.data() + order[at] * pixels;
      float* out = dst.dptr_ + i * pixels;
      if (!flip.empty() && flip[at]) {
        for (int64_t p = 0; p < pixels; p += cols)
          for (int64_t x = 0; x < cols; ++x) out[p + x] = src[p + cols - 1 - x] * scale - shift;
      } else {
        for (int64_t p = 0; p < pixels; ++p) out[p] = src[p] * scale - shift;
      }
      labels.dptr_[i] = s.labels[static_cast<size_t>(order[at])];
    }
  });
}

// A fresh random left-right flip per image for one epoch (--augment), else none.
inline std::vector<bool> RandomFlips(bool augment, size_t n, std::mt19937_64* rng) {
  std::vector<bool> flip;
  if (!augment) return flip;
  flip.resize(n);
  for (size_t i = 0; i < n; ++i) flip[i] = ((*rng)() >> 63) != 0;
  return flip;
}

// Host buffers, and where the device needs its own copy, device buffers of the same shapes.
template <typename Device>
struct DeviceData {
  TensorContainer<cpu, 4, float> host_images;
  TensorContainer<cpu, 1, int32_t> host_labels;
  TensorContainer<Device, 4, float> images;  // unused on the CPU: the host buffers are the data
  TensorContainer<Device, 1, int32_t> labels;

  DeviceData(index_t n, Stream<Device>* s) : host_images(Shape4(n, 1, 28, 28)), host_labels(Shape1(n)) {
    if constexpr (!std::is_same<Device, cpu>::value) {
      images.set_stream(s);
      labels.set_stream(s);
      images.Resize(host_images.shape_);
      labels.Resize(host_labels.shape_);
    }
  }
  // Makes the device see what the host buffers hold.
  void Upload(Stream<Device>* s) {
    if constexpr (!std::is_same<Device, cpu>::value) {
      Copy(images.view(), host_images.view(), s);
      Copy(labels.view(), host_labels.view(), s);
      s->Wait();  // the host buffers are rewritten next epoch
    }
  }
  Tensor<Device, 4, float> Images(index_t b, index_t e) const {
    if constexpr (std::is_same<Device, cpu>::value) return host_images.Slice(b, e);
    else return images.Slice(b, e);
  }
  Tensor<Device, 1, int32_t> Labels(index_t b, index_t e) const {
    if constexpr (std::is_same<Device, cpu>::value) return host_labels.Slice(b, e);
    else return labels.Slice(b, e);
  }
};

template <typename Device>
inline float ReadScalar(const Tensor<Device, 1, float>& t, Stream<Device>* s) {
  if constexpr (std::is_same<Device, cpu>::value) {
    return t.dptr_[0];
  } else {
    TensorContainer<cpu, 1, float> h(Shape1(1));
    Copy(h.view(), t, s);
    s->Wait();
    return h.dptr_[0];
  }
}

// Fraction of the test set the network classifies correctly (inference mode: no dropout, running BN).
template <typename Device, typename DType>
double Evaluate(ConvNet<Device, DType>* net, const DeviceData<Device>& test, const ImageSet& raw, Stream<Device>* s) {
  const index_t n = test.host_labels.size(0), chunk = 500;
  TensorContainer<cpu, 2, float> prob_host;
  int64_t correct = 0;
  for (index_t b = 0; b < n; b += chunk) {
    const index_t e = std::min(n, b + chunk);
    net->Forward(test.Images(b, e), test.Labels(b, e), false, kNullOp);
    const Tensor<Device, 2, float> prob = net->Probabilities();
    prob_host.Resize(prob.shape_);
    Copy(prob_host.view(), prob, s);
    s->Wait();
    for (index_t i = 0; i < e - b; ++i) {
      const float* row = prob_host.dptr_ + i * prob_host.stride_;
      const index_t guess = std::max_element(row, row + prob_host.size(1)) - row;
      correct += guess == raw.labels[static_cast<size_t>(b + i)];
    }
  }
  return n > 0 ? static_cast<double>(correct) / static_cast<double>(n) : 0.0;
}

// The learning rate of minibatch `step` (0-based) of `steps`: a linear ramp over the first o.warmup
// steps, then o.lr, or with the cosine schedule o.lr * (1 + cos(pi * t)) / 2 for t going from 0 to 1
// over the remaining steps. Ending at a small rate lets the last epochs settle into a minimum instead of
// bouncing around it at full rate (about +2% test accuracy on this net for the same epochs).
inline double LearningRate(const Options& o, int64_t step, int64_t steps) {
  if (step < o.warmup) return o.lr * static_cast<double>(step + 1) / o.warmup;
  if (!o.cosine || steps <= o.warmup) return o.lr;
  const double t = static_cast<double>(step - o.warmup) / static_cast<double>(steps - o.warmup);
  return o.lr * 0.5 * (1.0 + std::cos(3.14159265358979323846 * t));
}

// Throws when a minibatch's loss (or the running mean) is not finite: training diverged.
inline void CheckFinite(double loss, int epoch, index_t batch) {
  if (!std::isfinite(loss))
    throw std::runtime_error("the training loss is " + std::to_string(loss) + " at epoch " + std::to_string(epoch) +
                             ", batch " + std::to_string(batch) + ": training diverged (try a smaller --lr, or --bn)");
}

// Each minibatch's loss from the running sums after each one (differences, in double).
template <typename Device>
std::vector<double> BatchLosses(const Tensor<Device, 1, float>& sums, Stream<Device>* s) {
  TensorContainer<cpu, 1, float> host(sums.shape_);
  Copy(host.view(), sums, s);
  s->Wait();
  std::vector<double> losses(static_cast<size_t>(sums.size(0)));
  double before = 0;
  for (size_t i = 0; i < losses.size(); ++i) {
    const double sum = host.dptr_[i];
    losses[i] = sum - before;
    before = sum;
  }
  return losses;
}

// Trains ConvNet<Device, DType> for o.epochs on the first `train_count` training images, as one rank of
// `sync` (data_parallel.h: NoSync for one process); calls on_epoch after each epoch. Only the leader (rank 0)
// draws progress and measures the test accuracy (the other ranks' records carry NaN).
template <typename Device, typename DType, typename Sync, typename OnEpoch>
void TrainIn(const Options& o, const Dataset& data, int64_t train_count, Stream<Device>* s, Sync* sync,
             OnEpoch on_epoch) {
  using Clock = std::chrono::steady_clock;
  const PixelStats st = ComputePixelStats(data.train, train_count);
  NetConfig cfg;
  cfg.batch_norm = o.batch_norm;
  cfg.dropout = o.dropout;
  cfg.seed = o.seed;
  cfg.conv_algorithm = o.conv_algorithm;
  cfg.dropout_sequence = static_cast<uint64_t>(sync->rank());
  ConvNet<Device, DType> net(cfg, s);
  sync->BroadcastParameters(net.MasterWeights());
  net.WeightsChanged();
  if (sync->world_size() > 1)
    net.set_gradient_hook([sync](const Tensor<Device, 1, DType>& grad) { sync->GradientReady(grad); });
  const bool leader = sync->leader();
  LayerProfile profile;
  if (o.profile) net.set_profile(&profile);
  if (leader)
    std::printf("network: %lld parameters%s%s; pixels normalised with mean %.4f, std %.4f\n",
                static_cast<long long>(net.NumParameters()), o.batch_norm ? ", batch norm" : "",
                o.dropout > 0 ? ", dropout" : "", st.mean, st.std);

  DeviceData<Device> train(train_count, s), test(data.test.count, s);
  std::vector<int64_t> test_order(static_cast<size_t>(data.test.count));
  std::iota(test_order.begin(), test_order.end(), 0);
  NormaliseInto(data.test, test_order, st, test.host_images.view(), test.host_labels.view());
  test.Upload(s);

  std::vector<int64_t> order(static_cast<size_t>(train_count));
  std::iota(order.begin(), order.end(), 0);
  std::mt19937_64 shuffle_rng(o.seed);
  Shard shard;
  shard.rank = sync->rank();
  shard.ranks = sync->world_size();
  shard.images = train_count;
  shard.batch = o.batch;
  const index_t batches = shard.Steps();
  // The running loss sum after each minibatch of the epoch: copied on the device, read once per epoch.
  TensorContainer<Device, 1, float> loss_sums(Shape1(batches));
  loss_sums.set_stream(s);
  int64_t step = 0;  // minibatches trained so far, over all epochs
  for (int epoch = 1; epoch <= o.epochs; ++epoch) {
    std::shuffle(order.begin(), order.end(), shuffle_rng);
    NormaliseInto(data.train, order, st, train.host_images.view(), train.host_labels.view(),
                  RandomFlips(o.augment, order.size(), &shuffle_rng));
    train.Upload(s);
    s->Wait();
    const auto start = Clock::now();
    ProgressBar bar("epoch " + std::to_string(epoch) + "/" + std::to_string(o.epochs), shard.ImagesPerEpoch());
    net.LossTensor() = 0.0f;
    for (index_t bi = 0; bi < batches; ++bi) {
      const auto [b, e] = shard.Range(bi);
      const Tensor<Device, 1, int32_t> labels = train.Labels(b, e);
      net.Forward(train.Images(b, e), labels, true, kAddTo);
      net.Backward(labels);
      sync->GradientsDone();  // the update waits for the gradients averaged over the ranks
      net.Update(LearningRate(o, step++, batches * o.epochs), o.momentum, o.weight_decay);
      Copy(loss_sums.Slice(bi, bi + 1), net.LossTensor(), s);
      const index_t done = std::min(shard.ImagesPerEpoch(), (bi + 1) * shard.GlobalBatch());
      if (leader && bar.Due(done)) {
        const double loss = ReadScalar(net.LossTensor(), s) / static_cast<double>(bi + 1);
        CheckFinite(loss, epoch, bi + 1);
        bar.Draw(done, loss);
      }
    }
    EpochRecord r;
    sync->AverageOverRanks(loss_sums.view());  // each rank summed its own shares' losses
    r.batch_losses = BatchLosses(loss_sums.view(), s);
    s->Wait();
    const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
    if (leader) bar.Finish();
    for (size_t i = 0; i < r.batch_losses.size(); ++i) CheckFinite(r.batch_losses[i], epoch, static_cast<index_t>(i + 1));
    r.epoch = epoch;
    r.seconds = seconds;
    r.images_per_second = seconds > 0 ? static_cast<double>(shard.ImagesPerEpoch()) / seconds : 0;
    r.train_loss = std::accumulate(r.batch_losses.begin(), r.batch_losses.end(), 0.0) / static_cast<double>(batches);
    r.loss_scale = net.Scaler().scale;
    r.skipped_steps = net.Scaler().skipped;
    net.set_profile(nullptr);  // the profile covers training only
    r.test_accuracy = leader ? Evaluate(&net, test, data.test, s) : std::nan("");
    if (o.profile) net.set_profile(&profile);
    on_epoch(r);
  }
  if (o.profile) profile.Print(stdout);
}

// Trains in the precision o.dtype asks for: fp32, or fp16 / bf16 mixed precision on the GPU (ParseOptions
// and main refuse them on the CPU).
template <typename Device, typename Sync, typename OnEpoch>
void Train(const Options& o, const Dataset& data, int64_t train_count, Stream<Device>* s, Sync* sync,
           OnEpoch on_epoch) {
  if constexpr (std::is_same<Device, cpu>::value) {
    if (o.dtype != Precision::kFloat32)
      throw std::runtime_error(std::string("--dtype ") + PrecisionName(o.dtype) + " trains on the GPU only");
    TrainIn<Device, float>(o, data, train_count, s, sync, on_epoch);
  } else {
    switch (o.dtype) {
      case Precision::kFloat32: TrainIn<Device, float>(o, data, train_count, s, sync, on_epoch); break;
      case Precision::kFloat16: TrainIn<Device, half_t>(o, data, train_count, s, sync, on_epoch); break;
      case Precision::kBFloat16: TrainIn<Device, bf16_t>(o, data, train_count, s, sync, on_epoch); break;
    }
  }
}

}  // namespace fashion_mnist
