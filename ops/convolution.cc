// ops/convolution.cc — the convolution operator's instances in the operator library of the device this is
// compiled for (ops/instantiate.h).
#include "instantiate.h"
#include "convolution.h"

namespace tensorexpr {
namespace ops {

// nvcc compiles the GPU instances one dtype per unit (ops/cuda/convolution_<dtype>.cu, TE_OPS_DTYPE), side
// by side: all four in one unit took about 8 minutes on the GPU machine's 16 cores.
#if defined(TE_OPS_DTYPE)
TE_INSTANTIATE_CONVOLUTION(TE_OPS_DEVICE, TE_OPS_DTYPE)
#else
TE_OPS_FOR_EACH_DTYPE(TE_INSTANTIATE_CONVOLUTION, TE_OPS_DEVICE)
#endif

}  // namespace ops
}  // namespace tensorexpr
