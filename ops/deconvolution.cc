// ops/deconvolution.cc — the deconvolution operator's instances in the operator library of the device this is
// compiled for (ops/instantiate.h).
#include "instantiate.h"
#include "deconvolution.h"

namespace tensorexpr {
namespace ops {
// The convolution's registry, and with it every algorithm's code, is compiled once: in convolution.cc.
#define TE_EXTERN_CONV_REGISTRY_(Device, DType) extern template class ConvRegistry<Device, DType>;
TE_OPS_FOR_EACH_DTYPE(TE_EXTERN_CONV_REGISTRY_, TE_OPS_DEVICE)
#undef TE_EXTERN_CONV_REGISTRY_
TE_OPS_FOR_EACH_DTYPE(TE_INSTANTIATE_DECONVOLUTION, TE_OPS_DEVICE)
}  // namespace ops
}  // namespace tensorexpr
