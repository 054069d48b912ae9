// dist/communicator.cuh — one rank of a data-parallel job: an NCCL communicator, one process per GPU.
//
//   dist::Communicator comm(dist::WorldFromEnvironment());   // TENSOREXPR_RANK, ..._WORLD_SIZE, ..._RENDEZVOUS
//   dist::AllReduce(comm, grads, dist::ReduceOp::kAvg);       // queued on grads.stream_, like any other op
//
// Rank 0 makes the NCCL id and publishes it through the rendezvous (rendezvous.h); every rank joins with it,
// within a deadline. The communicator is NCCL's blocking kind (a non-blocking one hands every collective to
// a thread NCCL starts for it, which doubled the time of a small all-reduce). Nothing waits without a
// deadline: a watchdog thread (world size > 1) watches the collectives in flight, and one that has not
// finished `timeout` after it was queued means a rank is lost or stuck: the watchdog aborts the
// communicator, which ends the GPU work waiting on it; Synchronize polls NCCL's asynchronous error against the
// same deadline. From then on every call on this rank throws tensorexpr::Error naming the rank and what
// failed or timed out.
#pragma once
#include <cuda_runtime.h>
#include <nccl.h>
#include <cstdio>
#include <cstdlib>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>
#include "../base.h"
#include "../cuda/stream.cuh"
#include "../tensor.h"
#include "rendezvous.h"

namespace tensorexpr {
namespace dist {

enum class ReduceOp { kSum, kProd, kMax, kMin, kAvg };

// NCCL's name for a tensor element type.
template <typename DType> struct NcclType;
template <> struct NcclType<float> { static constexpr ncclDataType_t value = ncclFloat32; };
template <> struct NcclType<double> { static constexpr ncclDataType_t value = ncclFloat64; };
template <> struct NcclType<half_t> { static constexpr ncclDataType_t value = ncclFloat16; };
template <> struct NcclType<bf16_t> { static constexpr ncclDataType_t value = ncclBfloat16; };
template <> struct NcclType<int8_t> { static constexpr ncclDataType_t value = ncclInt8; };
template <> struct NcclType<uint8_t> { static constexpr ncclDataType_t value = ncclUint8; };
template <> struct NcclType<int32_t> { static constexpr ncclDataType_t value = ncclInt32; };
template <> struct NcclType<uint32_t> { static constexpr ncclDataType_t value = ncclUint32; };
template <> struct NcclType<int64_t> { static constexpr ncclDataType_t value = ncclInt64; };
template <> struct NcclType<uint64_t> { static constexpr ncclDataType_t value = ncclUint64; };

inline ncclRedOp_t NcclOp(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum: return ncclSum;
    case ReduceOp::kProd: return ncclProd;
    case ReduceOp::kMax: return ncclMax;
    case ReduceOp::kMin: return ncclMin;
    case ReduceOp::kAvg: return ncclAvg;
  }
  Fail("dist: unknown ReduceOp ", static_cast<int>(op));
}

class Communicator {
 public:
  // How long one collective may stay unfinished before its rank declares the job lost. Generous: the first
  // collective of a job also waits for the slowest rank to arrive (loading data, compiling kernels).
  static constexpr double kDefaultTimeoutSeconds = 300;
  // The exit status of a process whose NCCL call stayed stuck past the timeout (see Abort).
  static constexpr int kStuckCallExitStatus = 124;

  // Joins `world` on GPU world.local_rank (made the current device). Waits at most timeout_seconds for the
  // rendezvous and for the other ranks to join.
  explicit Communicator(const WorldSpec& world, double timeout_seconds = kDefaultTimeoutSeconds)
      : rank_(world.rank), world_size_(world.world_size), device_(world.local_rank), timeout_(timeout_seconds) {
    TE_CHECK(timeout_seconds > 0, Where(), "the timeout must be positive, not ", timeout_seconds, " s");
    int devices = 0;
    if (cudaGetDeviceCount(&devices) != cudaSuccess) cudaGetLastError();
    TE_CHECK(device_ >= 0 && device_ < devices, Where(), "local rank ", device_, " names GPU ", device_, ", but this ",
             "process sees ", devices, " GPU", devices == 1 ? "" : "s", " (one process per GPU: local ranks 0..",
             devices - 1, ")");
    TE_CUDA_CHECK(cudaSetDevice(device_));
    // Every connection at start-up, where Join's deadline covers it, rather than inside the first collective
    // of each kind, where a lost peer would hold the calling thread (a setting of the user's wins).
    setenv("NCCL_RUNTIME_CONNECT", "0", /*overwrite=*/0);
    ncclUniqueId id;
    std::vector<uint8_t> blob;
    if (rank_ == 0) {
      Check(ncclGetUniqueId(&id), "ncclGetUniqueId");
      blob.assign(reinterpret_cast<const uint8_t*>(&id), reinterpret_cast<const uint8_t*>(&id) + sizeof id);
    }
    blob = ShareFromRoot(world.rendezvous, rank_, world_size_, blob, timeout_seconds);
    TE_CHECK(blob.size() == sizeof id, Where(), "the rendezvous gave ", blob.size(), " bytes, not an NCCL id (",
             sizeof id, " bytes)");
    std::memcpy(&id, blob.data(), sizeof id);
    comm_ = Join(id);
    if (world_size_ > 1) watchdog_ = std::thread([this] { Watch(); });
  }
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  // Frees the communicator after the work queued on it; an aborted one is already freed. Never throws.
  ~Communicator() {
    {
      std::lock_guard<std::mutex> lock(state_mutex_);
      stopping_ = true;
    }
    if (watchdog_.joinable()) watchdog_.join();
    for (const InFlight& f : in_flight_) cudaEventDestroy(f.done);
    for (cudaEvent_t e : spare_events_) cudaEventDestroy(e);
    if (!aborted_.load() && comm_ != nullptr) {
      if (ncclCommFinalize(comm_) == ncclSuccess) {
        ncclCommDestroy(comm_);
      } else {
        ncclCommAbort(comm_);
      }
    }
    cudaGetLastError();
  }

  int rank() const { return rank_; }
  int world_size() const { return world_size_; }
  int device() const { return device_; }
  double timeout_seconds() const { return timeout_; }
  ncclComm_t handle() const { return comm_; }
  bool aborted() const { return aborted_.load(); }

  // Makes every pending and later call on this communicator fail with `reason`, and ends the GPU work that
  // waits on other ranks. Callable from any thread: the watchdog calls it, and so may a launcher that saw
  // another rank's process die.
  void Abort(const std::string& reason) {
    {
      std::lock_guard<std::mutex> lock(state_mutex_);
      if (aborted_.load()) return;
      abort_reason_ = reason;
      aborted_.store(true);  // from now on no call starts on this communicator
    }
    // A call in progress is let finish first. One that does not return is stuck inside NCCL on the lost rank;
    // aborting the communicator under it crashes NCCL, so the process ends here, saying why (as PyTorch's
    // watchdog does). With every connection made at start-up (NCCL_RUNTIME_CONNECT=0) no call should wait
    // on another rank on the host: the GPU work does, and aborting ends it.
    if (!call_mutex_.try_lock_for(std::chrono::seconds(2))) {
      std::fprintf(stderr, "%s\n%san NCCL call is stuck on the host and cannot be aborted: ending the process\n",
                   reason.c_str(), Where().c_str());
      std::_Exit(kStuckCallExitStatus);
    }
    if (comm_ != nullptr) ncclCommAbort(comm_);
    call_mutex_.unlock();
  }

  // Waits for the work queued on `s` (collectives included). Throws when the communicator fails or was
  // aborted, and aborts it when the work is not done within the timeout.
  void Synchronize(Stream<gpu>* s) {
    const cudaStream_t stream = Stream<gpu>::GetStream(s);
    const auto deadline = Clock::now() + Seconds(timeout_);
    for (;;) {
      const cudaError_t done = cudaStreamQuery(stream);
      if (done != cudaSuccess && done != cudaErrorNotReady) TE_CUDA_CHECK(done);
      CheckHealthy("Synchronize");  // also after the work ends: an aborted collective ends early
      if (done == cudaSuccess) break;
      if (Clock::now() > deadline)
        FailWith(Where() + "Synchronize: the stream's work did not finish within " + SecondsText(timeout_) +
                 " (another rank lost or stuck?)");
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
    if (s != nullptr) s->Wait();  // a kernel's recorded fault, as Stream::Wait reports it
  }

  // Throws when the communicator was aborted or NCCL reports an asynchronous error (which aborts it).
  void CheckHealthy(const std::string& what) {
    ncclResult_t query = ncclSuccess, state = ncclSuccess;
    {
      std::lock_guard<std::timed_mutex> lock(call_mutex_);
      ThrowIfAborted();
      query = ncclCommGetAsyncError(comm_, &state);
    }
    Check(query, "ncclCommGetAsyncError");
    if (state != ncclSuccess && state != ncclInProgress) FailWith(Where() + what + ": " + Describe(state));
  }

  // Runs one NCCL call that queues work on `stream` (call(comm) returns its result) and hands that work to
  // the watchdog. `what` names the call in errors.
  template <typename Call>
  void Enqueue(const std::string& what, cudaStream_t stream, Call&& call) {
    ncclResult_t result = ncclSuccess;
    {
      std::lock_guard<std::timed_mutex> lock(call_mutex_);
      ThrowIfAborted();
      TE_CUDA_CHECK(cudaSetDevice(device_));
      InCall(what);  // the first collective connects to its peers: the watchdog watches the call itself too
      result = call(comm_);
      InCall("");
    }
    Check(result, what);
    Watch(what, stream);
  }

  // "rank R of W: " — how every message of this rank begins.
  std::string Where() const { return Message("rank ", rank_, " of ", world_size_, ": "); }

 private:
  using Clock = std::chrono::steady_clock;
  struct InFlight {
    cudaEvent_t done;
    Clock::time_point queued;
    std::string what;
  };
  static Clock::duration Seconds(double s) {
    return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s));
  }
  static std::string SecondsText(double s) { return Message(s, " s"); }

  // Creates this rank's (blocking) communicator. ncclCommInitRank waits for every rank to join and cannot be
  // interrupted, so it runs on a thread of its own while this one waits for it against the deadline; past
  // it, the rank throws (the thread, if it ever returns, leaves its communicator unused).
  ncclComm_t Join(const ncclUniqueId& id) {
    struct Joining {
      std::mutex mutex;
      std::condition_variable done_cv;
      bool done = false;
      ncclResult_t result = ncclSuccess;
      ncclComm_t comm = nullptr;
    };
    const auto joining = std::make_shared<Joining>();
    const int world_size = world_size_, rank = rank_, device = device_;
    std::thread([joining, id, world_size, rank, device] {
      ncclComm_t comm = nullptr;
      ncclResult_t r = cudaSetDevice(device) == cudaSuccess ? ncclSuccess : ncclUnhandledCudaError;
      if (r == ncclSuccess) r = ncclCommInitRank(&comm, world_size, id, rank);
      std::lock_guard<std::mutex> lock(joining->mutex);
      joining->result = r;
      joining->comm = comm;
      joining->done = true;
      joining->done_cv.notify_all();
    }).detach();
    std::unique_lock<std::mutex> lock(joining->mutex);
    if (!joining->done_cv.wait_for(lock, Seconds(timeout_), [&] { return joining->done; }))
      Fail(Where(), "ncclCommInitRank: the other ranks did not all join within ", SecondsText(timeout_),
           " (is every rank running, with the same world size and rendezvous?)");
    if (joining->result != ncclSuccess)
      Fail(Where(), "ncclCommInitRank: ", ncclGetErrorString(joining->result));
    return joining->comm;
  }

  std::string Describe(ncclResult_t r) const {
    std::string text = ncclGetErrorString(r);
    const char* last = !aborted_.load() && comm_ != nullptr ? ncclGetLastError(comm_) : nullptr;
    if (last != nullptr && *last != '\0') text += std::string(" (") + last + ")";
    return text;
  }
  void Check(ncclResult_t r, const std::string& what) {
    if (r == ncclSuccess) return;
    if (aborted_.load()) ThrowIfAborted();  // the failure is the abort's doing: say why it was aborted
    FailWith(Where() + what + ": " + Describe(r));
  }
  [[noreturn]] void FailWith(const std::string& message) {
    Abort(message);
    ThrowIfAborted();
    throw Error(message);  // not reached: ThrowIfAborted throws the first reason recorded
  }
  void ThrowIfAborted() {
    if (!aborted_.load()) return;
    std::lock_guard<std::mutex> lock(state_mutex_);
    throw Error(abort_reason_);
  }

  // Tells the watchdog that the NCCL call `what` is running on the host (empty: none is).
  void InCall(const std::string& what) {
    std::lock_guard<std::mutex> lock(state_mutex_);
    call_what_ = what;
    call_started_ = Clock::now();
  }

  // Records the end of `what` on `stream` for the watchdog.
  void Watch(const std::string& what, cudaStream_t stream) {
    if (world_size_ == 1) return;
    std::lock_guard<std::mutex> lock(state_mutex_);
    cudaEvent_t e = nullptr;
    if (!spare_events_.empty()) {
      e = spare_events_.back();
      spare_events_.pop_back();
    } else {
      TE_CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
    }
    TE_CUDA_CHECK(cudaEventRecord(e, stream));
    in_flight_.push_back({e, Clock::now(), what});
  }
  // The watchdog: retires finished collectives and aborts the communicator when the oldest one is overdue
  // or NCCL reports an asynchronous error (a peer's connection lost).
  void Watch() {
    if (cudaSetDevice(device_) != cudaSuccess) return;
    for (;;) {
      std::string failure;
      {
        std::lock_guard<std::mutex> lock(state_mutex_);
        if (stopping_ || aborted_.load()) return;
        while (!in_flight_.empty()) {
          const cudaError_t q = cudaEventQuery(in_flight_.front().done);
          if (q == cudaErrorNotReady) break;
          if (q != cudaSuccess) cudaGetLastError();
          spare_events_.push_back(in_flight_.front().done);
          in_flight_.pop_front();
        }
        ncclResult_t state = ncclSuccess;
        if (call_mutex_.try_lock()) {  // busy: the calling thread is in NCCL; look again next round
          if (ncclCommGetAsyncError(comm_, &state) != ncclSuccess) state = ncclSuccess;
          call_mutex_.unlock();
        }
        if (state != ncclSuccess && state != ncclInProgress)
          failure = Where() + "NCCL reported an asynchronous error: " + Describe(state);
        else if (!call_what_.empty() && Clock::now() - call_started_ > Seconds(timeout_))
          failure = Where() + call_what_ + " has not returned within " + SecondsText(timeout_) +
                    ": another rank is lost or stuck; the communicator was aborted";
        else if (!in_flight_.empty() && Clock::now() - in_flight_.front().queued > Seconds(timeout_))
          failure = Where() + in_flight_.front().what + " did not finish within " + SecondsText(timeout_) +
                    " of being queued: another rank is lost or stuck; the communicator was aborted";
      }
      if (!failure.empty()) {
        Abort(failure);
        return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }

  int rank_, world_size_, device_;
  double timeout_;
  ncclComm_t comm_ = nullptr;
  std::atomic<bool> aborted_{false};
  // Held while an NCCL call runs, so that an abort frees the communicator between calls, not under one.
  std::timed_mutex call_mutex_;
  std::mutex state_mutex_;  // guards abort_reason_, call_what_, call_started_, in_flight_, spare_events_, stopping_
  std::string abort_reason_;
  std::string call_what_;
  Clock::time_point call_started_;
  std::deque<InFlight> in_flight_;
  std::vector<cudaEvent_t> spare_events_;
  bool stopping_ = false;
  std::thread watchdog_;
};

namespace detail {
// A tensor a collective can read or write: dense, on the communicator's GPU. `role` names it in errors.
template <int dim, typename DType>
void CheckCollectiveTensor(const Communicator& comm, const char* call, const char* role,
                           const Tensor<gpu, dim, DType>& t) {
  TE_CHECK(t.CheckContiguous() || t.shape_.ProdShape(0, dim - 1) <= 1, comm.Where(), call, ": the ", role,
           " tensor of shape ", t.shape_, " has padded rows (stride ", t.stride_, "); collectives take dense tensors");
  TE_CHECK(t.dptr_ != nullptr || t.shape_.Size() == 0, comm.Where(), call, ": the ", role, " tensor has no memory");
  if (t.dptr_ == nullptr) return;
  cudaPointerAttributes attr;
  if (cudaPointerGetAttributes(&attr, t.dptr_) != cudaSuccess) {
    cudaGetLastError();
    Fail(comm.Where(), call, ": the ", role, " tensor's memory is not known to CUDA");
  }
  TE_CHECK(attr.type == cudaMemoryTypeDevice || attr.type == cudaMemoryTypeManaged, comm.Where(), call, ": the ",
           role, " tensor is not in GPU memory");
  TE_CHECK(attr.type == cudaMemoryTypeManaged || attr.device == comm.device(), comm.Where(), call, ": the ", role,
           " tensor is on GPU ", attr.device, ", the communicator on GPU ", comm.device());
}

template <int dim, typename DType>
std::string DescribeCall(const char* call, const Tensor<gpu, dim, DType>& t) {
  return Message(call, " (", DataType<DType>::name(), ", ", t.shape_.Size(), " elements)");
}
}  // namespace detail

// data = op over all ranks of data, on every rank; queued on data's stream. kAvg divides the sum by the world
// size (in the element type).
template <int dim, typename DType>
void AllReduce(Communicator& comm, const Tensor<gpu, dim, DType>& data, ReduceOp op = ReduceOp::kSum) {
  AllReduce(comm, data, data, op);
}

// dst = op over all ranks of src (out of place; dst may be src). Queued on dst's stream.
template <int dim, typename DType>
void AllReduce(Communicator& comm, const Tensor<gpu, dim, DType>& src, const Tensor<gpu, dim, DType>& dst,
               ReduceOp op = ReduceOp::kSum) {
  detail::CheckCollectiveTensor(comm, "AllReduce", "source", src);
  detail::CheckCollectiveTensor(comm, "AllReduce", "destination", dst);
  TE_CHECK(src.shape_.Size() == dst.shape_.Size(), comm.Where(), "AllReduce: the source has ", src.shape_.Size(),
           " elements, the destination ", dst.shape_.Size());
  const cudaStream_t stream = Stream<gpu>::GetStream(dst.stream_);
  const ncclRedOp_t nop = NcclOp(op);
  comm.Enqueue(detail::DescribeCall("ncclAllReduce", dst), stream, [&](ncclComm_t c) {
    return ncclAllReduce(src.dptr_, dst.dptr_, static_cast<size_t>(dst.shape_.Size()), NcclType<DType>::value, nop,
                         c, stream);
  });
}

// data on every rank = data on `root`. Queued on data's stream.
template <int dim, typename DType>
void Broadcast(Communicator& comm, const Tensor<gpu, dim, DType>& data, int root = 0) {
  TE_CHECK(root >= 0 && root < comm.world_size(), comm.Where(), "Broadcast: root ", root, " is not a rank (0..",
           comm.world_size() - 1, ")");
  detail::CheckCollectiveTensor(comm, "Broadcast", "data", data);
  const cudaStream_t stream = Stream<gpu>::GetStream(data.stream_);
  comm.Enqueue(detail::DescribeCall("ncclBroadcast", data), stream, [&](ncclComm_t c) {
    return ncclBroadcast(data.dptr_, data.dptr_, static_cast<size_t>(data.shape_.Size()), NcclType<DType>::value,
                         root, c, stream);
  });
}

// dst on rank r = part r of (op over all ranks of src), src split into world_size equal parts in element
// order: src has world_size times dst's elements. Queued on dst's stream.
template <int sdim, int ddim, typename DType>
void ReduceScatter(Communicator& comm, const Tensor<gpu, sdim, DType>& src, const Tensor<gpu, ddim, DType>& dst,
                   ReduceOp op = ReduceOp::kSum) {
  detail::CheckCollectiveTensor(comm, "ReduceScatter", "source", src);
  detail::CheckCollectiveTensor(comm, "ReduceScatter", "destination", dst);
  TE_CHECK(src.shape_.Size() == dst.shape_.Size() * comm.world_size(), comm.Where(), "ReduceScatter: the source has ",
           src.shape_.Size(), " elements; it must have world size (", comm.world_size(), ") times the destination's ",
           dst.shape_.Size());
  const cudaStream_t stream = Stream<gpu>::GetStream(dst.stream_);
  const ncclRedOp_t nop = NcclOp(op);
  comm.Enqueue(detail::DescribeCall("ncclReduceScatter", dst), stream, [&](ncclComm_t c) {
    return ncclReduceScatter(src.dptr_, dst.dptr_, static_cast<size_t>(dst.shape_.Size()), NcclType<DType>::value,
                             nop, c, stream);
  });
}

// dst = the src of every rank, rank 0's first, in element order: dst has world_size times src's elements.
// Queued on dst's stream.
template <int sdim, int ddim, typename DType>
void AllGather(Communicator& comm, const Tensor<gpu, sdim, DType>& src, const Tensor<gpu, ddim, DType>& dst) {
  detail::CheckCollectiveTensor(comm, "AllGather", "source", src);
  detail::CheckCollectiveTensor(comm, "AllGather", "destination", dst);
  TE_CHECK(dst.shape_.Size() == src.shape_.Size() * comm.world_size(), comm.Where(), "AllGather: the destination has ",
           dst.shape_.Size(), " elements; it must have world size (", comm.world_size(), ") times the source's ",
           src.shape_.Size());
  const cudaStream_t stream = Stream<gpu>::GetStream(dst.stream_);
  comm.Enqueue(detail::DescribeCall("ncclAllGather", src), stream, [&](ncclComm_t c) {
    return ncclAllGather(src.dptr_, dst.dptr_, static_cast<size_t>(src.shape_.Size()), NcclType<DType>::value, c,
                         stream);
  });
}

}  // namespace dist
}  // namespace tensorexpr
