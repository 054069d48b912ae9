// ops/softmax_output.cc — the softmax output operator's instances in the operator library of the device this is
// compiled for (ops/instantiate.h).
#include "instantiate.h"
#include "softmax_output.h"

namespace tensorexpr {
namespace ops {
TE_OPS_FOR_EACH_DTYPE(TE_INSTANTIATE_SOFTMAX_OUTPUT, TE_OPS_DEVICE)
}  // namespace ops
}  // namespace tensorexpr
