// ops/conv_workspace.cc — ConvolutionWorkspaceBytes (<tensorexpr/ops/convolution.h>): device-neutral, so
// compiled once, into tensorexpr_ops.
#include <tensorexpr/ops/convolution.h>
#include "conv_im2col_gemm.h"

namespace tensorexpr {
namespace ops {

size_t ConvolutionWorkspaceBytes(const ConvolutionParam& p, const std::vector<index_t>& data_shape,
                                 size_t dtype_bytes, bool input_contiguous) {
  const ConvGeometry g = MakeConvGeometry(p, data_shape);
  if (g.IsPointwise() && input_contiguous) return 0;
  return static_cast<size_t>(PlanIm2Col(g, dtype_bytes, WorkspaceLimitBytes(p.workspace)).col_elems) * dtype_bytes;
}

}  // namespace ops
}  // namespace tensorexpr
