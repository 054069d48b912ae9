// ops/fully_connected.cc — the fully connected operator's instances in the operator library of the device this is
// compiled for (ops/instantiate.h).
#include "instantiate.h"
#include "fully_connected.h"

namespace tensorexpr {
namespace ops {
TE_OPS_FOR_EACH_DTYPE(TE_INSTANTIATE_FULLY_CONNECTED, TE_OPS_DEVICE)
}  // namespace ops
}  // namespace tensorexpr
