// ops/batch_norm.cc — the batch norm operator's instances in the operator library of the device this is
// compiled for (ops/instantiate.h).
#include "instantiate.h"
#include "batch_norm.h"

namespace tensorexpr {
namespace ops {
TE_OPS_FOR_EACH_DTYPE(TE_INSTANTIATE_BATCH_NORM, TE_OPS_DEVICE)
}  // namespace ops
}  // namespace tensorexpr
