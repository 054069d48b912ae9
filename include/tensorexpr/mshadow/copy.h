// mshadow/copy.h — mshadow's Copy: without a stream argument it returns once the data is there.
// tensorexpr's Copy is asynchronous on the GPU (it queues on the passed stream, else the GPU tensor's,
// else the per-thread default); mshadow code that reads the host side right after `Copy(host, dev)`
// relies on the wait, so the mshadow spelling adds it. With a stream passed, both queue and return.
// On the CPU the two are the same (work runs at once).
//
// A function object, as reduce_with_axis is (mshadow/reduce.h): an unqualified Copy(...) then cannot reach
// tensorexpr::Copy through the arguments' namespace.
#pragma once
#include "../tensorexpr.h"
#if defined(__CUDACC__)
#include "../cuda/tensorexpr_cuda.cuh"
#endif

namespace mshadow {

struct SynchronousCopy {
  template <int dim, typename DType>
  void operator()(::tensorexpr::Tensor<::tensorexpr::cpu, dim, DType> dst,
                  const ::tensorexpr::Tensor<::tensorexpr::cpu, dim, DType>& src,
                  ::tensorexpr::Stream<::tensorexpr::cpu>* stream = nullptr) const {
    ::tensorexpr::Copy(dst, src, stream);
  }
#if defined(__CUDACC__)
  // Waits on the stream tensorexpr::Copy chose: the GPU tensor's, else the per-thread default.
  template <int dim, typename DType>
  void operator()(::tensorexpr::Tensor<::tensorexpr::gpu, dim, DType> dst,
                  const ::tensorexpr::Tensor<::tensorexpr::cpu, dim, DType>& src,
                  ::tensorexpr::Stream<::tensorexpr::gpu>* stream = nullptr) const {
    ::tensorexpr::Copy(dst, src, stream);
    if (stream == nullptr) ::tensorexpr::WaitStream(dst.stream_);
  }
  template <int dim, typename DType>
  void operator()(::tensorexpr::Tensor<::tensorexpr::cpu, dim, DType> dst,
                  const ::tensorexpr::Tensor<::tensorexpr::gpu, dim, DType>& src,
                  ::tensorexpr::Stream<::tensorexpr::gpu>* stream = nullptr) const {
    ::tensorexpr::Copy(dst, src, stream);
    if (stream == nullptr) ::tensorexpr::WaitStream(src.stream_);
  }
  template <int dim, typename DType>
  void operator()(::tensorexpr::Tensor<::tensorexpr::gpu, dim, DType> dst,
                  const ::tensorexpr::Tensor<::tensorexpr::gpu, dim, DType>& src,
                  ::tensorexpr::Stream<::tensorexpr::gpu>* stream = nullptr) const {
    ::tensorexpr::Copy(dst, src, stream);
    if (stream == nullptr) ::tensorexpr::WaitStream(dst.stream_);
  }
#endif
};
inline constexpr SynchronousCopy Copy{};

}  // namespace mshadow
