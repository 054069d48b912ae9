// ops/softmax.cc — the softmax and log-softmax operators' instances in the operator library of the device
// this is compiled for (ops/instantiate.h).
#include "instantiate.h"
#include "softmax.h"

namespace tensorexpr {
namespace ops {
TE_OPS_FOR_EACH_DTYPE(TE_INSTANTIATE_SOFTMAX, TE_OPS_DEVICE)
}  // namespace ops
}  // namespace tensorexpr
