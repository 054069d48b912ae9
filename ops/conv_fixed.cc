// ops/conv_fixed.cc — ConvolutionForwardFixed's instances in the operator library of the device this is
// compiled for (ops/instantiate.h).
#include "instantiate.h"
#include "conv_fixed.h"

namespace tensorexpr {
namespace ops {
TE_INSTANTIATE_CONV_FIXED(TE_OPS_DEVICE)
}  // namespace ops
}  // namespace tensorexpr
