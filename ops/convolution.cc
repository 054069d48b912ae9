// ops/convolution.cc — the convolution operator's instances in the operator library of the device this is
// compiled for (ops/instantiate.h).
#include "instantiate.h"
#include "convolution.h"

namespace tensorexpr {
namespace ops {

TE_OPS_FOR_UNIT_DTYPES(TE_INSTANTIATE_CONVOLUTION, TE_OPS_DEVICE, TE_OPS_FOR_EACH_DTYPE)

}  // namespace ops
}  // namespace tensorexpr
