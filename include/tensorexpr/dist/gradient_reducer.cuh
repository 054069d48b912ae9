// dist/gradient_reducer.cuh — averages gradients over the ranks while the backward pass still runs.
//
//   dist::GradientReducer reducer(&comm, compute_stream);
//   ... backward of the last layer ...   reducer.Ready(grad_w3);  reducer.Ready(grad_b3);
//   ... backward of the layer before ... reducer.Ready(grad_w2);  ...
//   reducer.Finish();                     // the compute stream now waits for the averaged gradients
//   optimizer step
//
// Gradients are gathered into buckets in the order the backward pass hands them over; a bucket that reaches
// bucket_bytes is all-reduced at once (one NCCL group) on the reducer's own high-priority stream, after
// the kernels queued so far on the compute stream, so the all-reduce of the last layers overlaps the backward
// of the first ones. Small buckets start sooner but each pays the all-reduce's latency; large ones start
// later (README: the α-β model of this trade-off).
#pragma once
#include <cuda_runtime.h>
#include <nccl.h>
#include <cstddef>
#include <string>
#include <vector>
#include "communicator.cuh"

namespace tensorexpr {
namespace dist {

class GradientReducer {
 public:
  static constexpr size_t kDefaultBucketBytes = size_t{4} << 20;

  // Reduces with `op` (the average: each rank's gradient is a mean over its share of the global batch) the
  // gradients that kernels on `compute` write. comm and compute must outlive the reducer.
  GradientReducer(Communicator* comm, Stream<gpu>* compute, size_t bucket_bytes = kDefaultBucketBytes,
                  ReduceOp op = ReduceOp::kAvg)
      : comm_(comm), compute_(Stream<gpu>::GetStream(compute)), bucket_bytes_(bucket_bytes), op_(NcclOp(op)) {
    TE_CHECK(comm != nullptr, "GradientReducer: no communicator");
    TE_CHECK(bucket_bytes > 0, comm->Where(), "GradientReducer: the bucket size must be positive");
    TE_CUDA_CHECK(cudaSetDevice(comm->device()));
    int least = 0, greatest = 0;  // CUDA's priorities: a lower number is a higher priority
    TE_CUDA_CHECK(cudaDeviceGetStreamPriorityRange(&least, &greatest));
    TE_CUDA_CHECK(cudaStreamCreateWithPriority(&stream_, cudaStreamNonBlocking, greatest));
    TE_CUDA_CHECK(cudaEventCreateWithFlags(&ready_, cudaEventDisableTiming));
    TE_CUDA_CHECK(cudaEventCreateWithFlags(&reduced_, cudaEventDisableTiming));
  }
  GradientReducer(const GradientReducer&) = delete;
  GradientReducer& operator=(const GradientReducer&) = delete;
  ~GradientReducer() {
    // Work still queued finishes on its own (CUDA defers the stream's destruction until then).
    cudaEventDestroy(ready_);
    cudaEventDestroy(reduced_);
    cudaStreamDestroy(stream_);
    cudaGetLastError();
  }

  // The gradient `grad` is final once the kernels queued so far on the compute stream have run: it joins the
  // current bucket, which is sent when full. grad must stay alive and unwritten until Finish.
  template <int dim, typename DType>
  void Ready(const Tensor<gpu, dim, DType>& grad) {
    detail::CheckCollectiveTensor(*comm_, "GradientReducer::Ready", "gradient", grad);
    const size_t count = static_cast<size_t>(grad.shape_.Size());
    if (count == 0) return;
    pending_.push_back({grad.dptr_, count, NcclType<DType>::value});
    pending_bytes_ += count * sizeof(DType);
    if (pending_bytes_ >= bucket_bytes_) Send();
  }

  // Sends the last bucket and makes the compute stream wait until every gradient handed over is reduced.
  void Finish() {
    if (!pending_.empty()) Send();
    TE_CUDA_CHECK(cudaEventRecord(reduced_, stream_));
    TE_CUDA_CHECK(cudaStreamWaitEvent(compute_, reduced_, 0));
  }

  // Buckets sent since the reducer was made.
  long long buckets_sent() const { return buckets_sent_; }
  // The reducer's stream (the one its all-reduces run on).
  cudaStream_t stream() const { return stream_; }

 private:
  struct Piece {
    void* data;
    size_t count;
    ncclDataType_t type;
  };

  // All-reduces the pending pieces as one NCCL group on the reducer's stream, after the compute stream's
  // work so far.
  void Send() {
    TE_CUDA_CHECK(cudaEventRecord(ready_, compute_));
    TE_CUDA_CHECK(cudaStreamWaitEvent(stream_, ready_, 0));
    const std::string what = Message("gradient bucket ", buckets_sent_, " (", pending_.size(), " tensors, ",
                                     pending_bytes_, " bytes)");
    comm_->Enqueue(what, stream_, [&](ncclComm_t c) {
      ncclResult_t r = ncclGroupStart();
      if (r != ncclSuccess) return r;
      for (const Piece& p : pending_) {
        r = ncclAllReduce(p.data, p.data, p.count, p.type, op_, c, stream_);
        if (r != ncclSuccess && r != ncclInProgress) break;
      }
      const ncclResult_t end = ncclGroupEnd();
      return r != ncclSuccess && r != ncclInProgress ? r : end;
    });
    pending_.clear();
    pending_bytes_ = 0;
    ++buckets_sent_;
  }

  Communicator* comm_;
  cudaStream_t compute_;
  size_t bucket_bytes_;
  ncclRedOp_t op_;
  cudaStream_t stream_ = nullptr;
  cudaEvent_t ready_ = nullptr, reduced_ = nullptr;
  std::vector<Piece> pending_;
  size_t pending_bytes_ = 0;
  long long buckets_sent_ = 0;
};

}  // namespace dist
}  // namespace tensorexpr
