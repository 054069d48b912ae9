// ops/pooling.cc — the pooling operator's instances in the operator library of the device this is
// compiled for (ops/instantiate.h).
#include "instantiate.h"
#include "pooling.h"

namespace tensorexpr {
namespace ops {
TE_OPS_FOR_UNIT_DTYPES(TE_INSTANTIATE_POOLING, TE_OPS_DEVICE, TE_POOLING_FOR_EACH_DTYPE)
}  // namespace ops
}  // namespace tensorexpr
