// ops/clip_global_norm.cc — the global-norm gradient clipping's instances in the operator library of the device this is compiled for
// (ops/instantiate.h).
#include "instantiate.h"
#include "clip_global_norm.h"

namespace tensorexpr {
namespace ops {
TE_OPS_FOR_EACH_DTYPE(TE_INSTANTIATE_CLIP_GLOBAL_NORM, TE_OPS_DEVICE)
}  // namespace ops
}  // namespace tensorexpr
