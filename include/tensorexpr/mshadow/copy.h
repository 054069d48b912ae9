// mshadow/copy.h — mshadow's Copy: without a stream argument it returns once the data is there.
// tensorexpr's Copy is asynchronous on the GPU (it queues on the passed stream, else the GPU tensor's,
// else the per-thread default); mshadow code that reads the host side right after `Copy(host, dev)`
// relies on the wait, so the mshadow spelling adds it. With a stream passed, both queue and return.
// On the CPU the two are the same (work runs at once).
//
// A function object, as reduce_with_axis is (mshadow/reduce.h): an unqualified Copy(...) then cannot reach
// tensorexpr::Copy through the arguments' namespace.
#pragma once
#include <type_traits>
#include "../tensorexpr.h"

namespace mshadow {

struct SynchronousCopy {
  template <int dim, typename DType>
  void operator()(::tensorexpr::Tensor<::tensorexpr::cpu, dim, DType> dst,
                  const ::tensorexpr::Tensor<::tensorexpr::cpu, dim, DType>& src,
                  ::tensorexpr::Stream<::tensorexpr::cpu>* stream = nullptr) const {
    ::tensorexpr::Copy(dst, src, stream);
  }
#if defined(__CUDACC__)
  // A GPU on either side (or both): waits on the stream tensorexpr::Copy chose when none was passed, the
  // destination's when it is on the GPU, else the source's (the per-thread default when that is null).
  template <typename DstDevice, typename SrcDevice, int dim, typename DType,
            typename = std::enable_if_t<std::is_same<DstDevice, ::tensorexpr::gpu>::value ||
                                        std::is_same<SrcDevice, ::tensorexpr::gpu>::value>>
  void operator()(::tensorexpr::Tensor<DstDevice, dim, DType> dst,
                  const ::tensorexpr::Tensor<SrcDevice, dim, DType>& src,
                  ::tensorexpr::Stream<::tensorexpr::gpu>* stream = nullptr) const {
    ::tensorexpr::Copy(dst, src, stream);
    if (stream != nullptr) return;
    if constexpr (std::is_same<DstDevice, ::tensorexpr::gpu>::value) {
      ::tensorexpr::WaitStream(dst.stream_);
    } else {
      ::tensorexpr::WaitStream(src.stream_);
    }
  }
#endif
};
inline constexpr SynchronousCopy Copy{};

}  // namespace mshadow
