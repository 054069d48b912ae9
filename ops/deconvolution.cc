// ops/deconvolution.cc — the deconvolution operator's instances in the operator library of the device this is
// compiled for (ops/instantiate.h).
#include "instantiate.h"
#include "deconvolution.h"

namespace tensorexpr {
namespace ops {
TE_OPS_FOR_EACH_DTYPE(TE_INSTANTIATE_DECONVOLUTION, TE_OPS_DEVICE)
}  // namespace ops
}  // namespace tensorexpr
