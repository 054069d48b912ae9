// ops/adaptive_update.cc — the adaptive optimisers' (Adam, RMSProp) instances in the operator library of the device this is compiled for
// (ops/instantiate.h).
#include "instantiate.h"
#include "adaptive_update.h"

namespace tensorexpr {
namespace ops {
TE_OPS_FOR_EACH_DTYPE(TE_INSTANTIATE_ADAPTIVE_UPDATE, TE_OPS_DEVICE)
}  // namespace ops
}  // namespace tensorexpr
