// examples/fashion_mnist/nccl_sync.h — the trainer's Sync (data_parallel.h) over NCCL: one rank per GPU.
//
// At the start rank 0's weights go to every rank (they are drawn from the same seed anyway; the broadcast
// makes replicas identical by construction). During the backward pass each parameter's gradient is handed to
// a dist::GradientReducer as soon as its layer is done, which averages it over the ranks on its own stream
// while the earlier layers' backward runs; the update waits for it. The rank that started the others (rank 0
// of a --gpus launch) also watches their processes: when one dies, its communicator is aborted, so that rank
// 0 stops with an error instead of waiting for a peer that will never come.
#pragma once
#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <tensorexpr/dist/communicator.cuh>
#include <tensorexpr/dist/gradient_reducer.cuh>
#include <tensorexpr/dist/launch.h>

namespace fashion_mnist {

class NcclSync {
 public:
  // Joins `world` on GPU world.local_rank; `children`, when this process started the other ranks, is
  // watched until the sync is destroyed.
  NcclSync(const tensorexpr::dist::WorldSpec& world, tensorexpr::Stream<tensorexpr::gpu>* stream,
           tensorexpr::dist::RankProcesses* children)
      : comm_(world), reducer_(&comm_, stream, kBucketBytes) {
    if (children != nullptr) watch_ = std::thread([this, children] { WatchChildren(children); });
  }
  ~NcclSync() {
    stop_.store(true);
    if (watch_.joinable()) watch_.join();
  }
  NcclSync(const NcclSync&) = delete;
  NcclSync& operator=(const NcclSync&) = delete;

  int rank() const { return comm_.rank(); }
  int world_size() const { return comm_.world_size(); }
  bool leader() const { return comm_.rank() == 0; }

  template <typename Tensor>
  void BroadcastParameters(const Tensor& values) {
    tensorexpr::dist::Broadcast(comm_, values, 0);
  }
  template <typename Tensor>
  void GradientReady(const Tensor& grad) {
    reducer_.Ready(grad);
  }
  void GradientsDone() { reducer_.Finish(); }
  template <typename Tensor>
  void AverageOverRanks(const Tensor& t) {
    tensorexpr::dist::AllReduce(comm_, t, tensorexpr::dist::ReduceOp::kAvg);
  }

 private:
  // This network's gradients: fc2 (41 KB), fc1 (12.8 MB), conv2 (205 KB), conv1 (3 KB) in the order the
  // backward pass finishes them. 1 MB sends fc2 + fc1 as one bucket as soon as fc1 is done, overlapping
  // the all-reduce of 98% of the bytes with both convolutions' backward, and the small rest at the end.
  static constexpr size_t kBucketBytes = size_t{1} << 20;

  void WatchChildren(tensorexpr::dist::RankProcesses* children) {
    while (!stop_.load()) {
      if (const auto failure = children->PollFailure()) {
        comm_.Abort(comm_.Where() + *failure + "; stopping");
        return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }

  tensorexpr::dist::Communicator comm_;
  tensorexpr::dist::GradientReducer reducer_;
  std::atomic<bool> stop_{false};
  std::thread watch_;
};

}  // namespace fashion_mnist
