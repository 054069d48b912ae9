// ops/leaky_relu.cc — the leaky rectifiers' instances in the operator library of the device
// this is compiled for (ops/instantiate.h).
#include "instantiate.h"
#include "leaky_relu.h"

namespace tensorexpr {
namespace ops {
TE_OPS_FOR_EACH_DTYPE(TE_INSTANTIATE_LEAKY_RELU, TE_OPS_DEVICE)
}  // namespace ops
}  // namespace tensorexpr
