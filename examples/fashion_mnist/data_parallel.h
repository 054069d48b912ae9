// examples/fashion_mnist/data_parallel.h — how the trainer splits its work over ranks (--gpus N).
//
// Every rank shuffles the training set with the same seed, so all see the same order; global minibatch b is
// images [b * B * N, (b + 1) * B * N) of it (B = --batch, N = ranks), and rank r trains on the r-th of N
// equal shares of it. Each rank's gradients are means over its share; their average over the ranks is the
// gradient of the global batch (exactly, when the shares are equal), so N ranks train as one process with
// batch B * N would. A last global batch too small to give every rank an image is left out.
//
// The trainer talks to the other ranks through a Sync: NoSync here (one process: every call does nothing),
// NcclSync (nccl_sync.h) in the CUDA build with NCCL.
#pragma once
#include <algorithm>
#include <cstdint>
#include <utility>
#include <tensorexpr/tensorexpr.h>

namespace fashion_mnist {

using tensorexpr::index_t;

// Rank `rank` of `ranks` training on `images` images with `batch` images per rank per step.
struct Shard {
  int rank = 0, ranks = 1;
  index_t images = 0, batch = 1;

  index_t GlobalBatch() const { return batch * ranks; }
  // Steps per epoch: every full global batch, and a partial last one if each rank gets an image of it.
  index_t Steps() const {
    const index_t full = images / GlobalBatch(), rest = images % GlobalBatch();
    return full + (rest >= ranks ? 1 : 0);
  }
  // Images [begin, end) of the epoch's order that this rank trains on at `step`.
  std::pair<index_t, index_t> Range(index_t step) const {
    const index_t b = step * GlobalBatch(), e = std::min(images, b + GlobalBatch()), n = e - b;
    return {b + n * rank / ranks, b + n * (rank + 1) / ranks};
  }
  // Images all ranks together train on per epoch.
  index_t ImagesPerEpoch() const { return std::min(images, Steps() * GlobalBatch()); }
};

// One process: nothing to share.
struct NoSync {
  int rank() const { return 0; }
  int world_size() const { return 1; }
  bool leader() const { return true; }
  template <typename Tensor> void BroadcastParameters(const Tensor&) {}
  template <typename Tensor> void GradientReady(const Tensor&) {}
  void GradientsDone() {}
  template <typename Tensor> void AverageOverRanks(const Tensor&) {}
};

}  // namespace fashion_mnist
