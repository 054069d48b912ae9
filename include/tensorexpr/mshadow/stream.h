// mshadow/stream.h — mshadow's NewStream. On the GPU it makes the CUDA stream as mshadow did, with
// cudaStreamCreate: a blocking stream, which the legacy default stream waits for, so mshadow code may launch
// a kernel on it and read the result with a plain cudaMemcpy (mshadow's test_random_gpu.cu does).
// tensorexpr's own streams are non-blocking: no hidden waits on unrelated work. On the CPU both are the same.
#pragma once
#include <type_traits>
#include "../tensorexpr.h"

namespace mshadow {

template <typename Device>
inline ::tensorexpr::Stream<Device>* NewStream(bool create_blas_handle = true, bool create_dnn_handle = false,
                                               int dev_id = -1) {
#if defined(__CUDACC__)
  if constexpr (std::is_same<Device, ::tensorexpr::gpu>::value)
    return ::tensorexpr::cuda::NewStreamWithFlags(create_blas_handle, dev_id, cudaStreamDefault);
#endif
  return ::tensorexpr::NewStream<Device>(create_blas_handle, create_dnn_handle, dev_id);
}

}  // namespace mshadow
