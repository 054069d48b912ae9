// ops/conv_workspace.cc — ConvolutionWorkspaceBytes (<tensorexpr/ops/convolution.h>): device-neutral, so
// compiled once, into tensorexpr_ops.
#include <algorithm>
#include <tensorexpr/ops/convolution.h>
#include "conv_im2col_gemm.h"
#include "conv_pointwise_gemm.h"

namespace tensorexpr {
namespace ops {

size_t ConvolutionWorkspaceBytes(const ConvolutionParam& p, const std::vector<index_t>& data_shape,
                                 size_t dtype_bytes, bool input_contiguous) {
  const ConvGeometry g = MakeConvGeometry(p, data_shape);
  const size_t limit = WorkspaceLimitBytes(p.workspace);
  // pointwise_gemm's staged copies and gathered pixels on the GPU (counted on the CPU too: a bound).
  const bool one_by_one = g.IsPointwise() || pointwise::IsStrided(g);
  const size_t staged =
      one_by_one ? static_cast<size_t>(pointwise::GpuWorkspaceElems(g, limit, dtype_bytes)) * dtype_bytes : 0;
  if (g.IsPointwise() && input_contiguous) return staged;
  return std::max(staged, static_cast<size_t>(PlanIm2Col(g, dtype_bytes, limit).col_elems) * dtype_bytes);
}

}  // namespace ops
}  // namespace tensorexpr
