// ops/conv_workspace.cc — ConvolutionWorkspaceBytes (<tensorexpr/ops/convolution.h>) and the bound
// RunConvPasses keeps to: device-neutral, so compiled once, into tensorexpr_ops.
#include <algorithm>
#include "convolution.h"
#include "conv_im2col_gemm.h"
#include "conv_pointwise_gemm.h"
#include "conv_winograd.h"

namespace tensorexpr {
namespace ops {

namespace detail {

size_t ConvHeuristicWorkspaceBytes(const ConvGeometry& g, size_t limit, size_t dtype_bytes, bool input_contiguous) {
  // pointwise_gemm's staged copies and gathered pixels on the GPU (counted on the CPU too: a bound).
  const bool one_by_one = g.IsPointwise() || pointwise::IsStrided(g);
  const size_t staged =
      one_by_one ? static_cast<size_t>(pointwise::GpuWorkspaceElems(g, limit, dtype_bytes)) * dtype_bytes : 0;
  if (g.IsPointwise() && input_contiguous) return staged;
  // im2col_gemm's columns, or for a weight gradient its joined form's (conv_im2col_gemm.h).
  auto column_bytes = [&](bool weight_grad) {
    return static_cast<size_t>(PlanIm2Col(g, dtype_bytes, limit, weight_grad).WorkspaceElems()) * dtype_bytes;
  };
  const size_t weight_columns = column_bytes(true), columns = std::max(column_bytes(false), weight_columns);
  // winograd_2x2's transforms, the GPU's choice for float's 3x3 stride-1 layers (counted for every 4-byte
  // type on either device: a bound), where they fit the limit (else the selection refuses it). Counted
  // whether or not the input is dense: a forward on dense data takes it beside a padded data gradient.
  size_t transforms = 0;
  if (dtype_bytes == sizeof(float) && winograd::Supports<2>(g, true).ok)
    for (ConvPass pass : {ConvPass::kForward, ConvPass::kBackwardData}) {
      const size_t bytes =
          static_cast<size_t>(winograd::MakePlan<2>(g, pass, dtype_bytes, limit).WorkspaceElems()) * dtype_bytes;
      if (bytes <= limit) transforms = std::max(transforms, bytes);
    }
  // A GPU backward may run the data gradient's transforms at the same time as im2col_gemm's weight gradient
  // columns (a tuned choice, or transforms of the weight gradient over the cap), each in a stream's
  // workspace of its own (whole granules; the stream's may hold the forward's): counted together where
  // together they keep to the cap. Where they do not, the bound leaves them out and RunConvPasses, which
  // runs the two at once only within this bound, runs them in turn.
  const size_t together = InWorkspaceGranules(transforms) + weight_columns;
  const size_t beside = transforms > 0 && together <= limit ? together : 0;
  return std::max({staged, columns, transforms, beside});
}

}  // namespace detail

size_t ConvolutionWorkspaceBytes(const ConvolutionParam& p, const std::vector<index_t>& data_shape,
                                 size_t dtype_bytes, bool input_contiguous) {
  const ConvGeometry g = MakeConvGeometry(p, data_shape);
  const size_t limit = WorkspaceLimitBytes(p.workspace);
  size_t bytes = detail::ConvHeuristicWorkspaceBytes(g, limit, dtype_bytes, input_contiguous);
  // A border that is data runs on a dense padded copy without padding, where a padded 1x1 kernel is a
  // pointwise or strided one (the copy itself is not workspace).
  if (ConvBorderIsData(p)) {
    ConvGeometry copy = g;
    for (int i = 0; i < 3; ++i) copy.in[i] += g.pad[i] + g.pad_end[i], copy.pad[i] = copy.pad_end[i] = 0;
    bytes = std::max(bytes, detail::ConvHeuristicWorkspaceBytes(copy, limit, dtype_bytes, true));
  }
  return bytes;
}

}  // namespace ops
}  // namespace tensorexpr
