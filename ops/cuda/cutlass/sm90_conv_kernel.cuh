// ops/cuda/cutlass/sm90_conv_kernel.cuh — one CUTLASS 3 Hopper convolution (cutlass::conv::device::
// ConvUniversalAdapter over a ConvUniversal kernel) as a ConvKernel (conv_kernels.h). Hopper's kernels load
// their tiles with the Tensor Memory Accelerator in im2col mode (the gather of the implicit GEMM is done by
// the copy engine, not by threads computing addresses) and multiply with warpgroup MMAs (wgmma), a
// producer warp feeding consumer warps through a shared-memory pipeline. Their code exists only for
// compute capability 9.0 (sm_90a), so the ConvKernel says sm = 90. Included only by the kernel units.
#pragma once
#include <string>
#include <cute/tensor.hpp>
#include <cutlass/cutlass.h>
#include <cutlass/kernel_hardware_info.hpp>
#include <cutlass/conv/collective/collective_builder.hpp>
#include <cutlass/conv/convnd_problem_shape.hpp>
#include <cutlass/conv/device/conv_universal_adapter.hpp>
#include <cutlass/conv/dispatch_policy.hpp>
#include <cutlass/conv/kernel/conv_universal.hpp>
#include <cutlass/epilogue/collective/collective_builder.hpp>
#include <tensorexpr/base.h>
#include "conv_kernels.h"

namespace tensorexpr {
namespace ops {
namespace cutlass_conv {

// The forward on Hopper: activations (N, H, W, C) and filters (K, R, S, C) of element type E, output
// (N, P, Q, K) in E, float accumulation, D = acc + beta * C; a thread-block tile of TileShape (M: output
// pixels, N: filters, K: the reduction), clusters of one block.
template <typename E, typename TileShape>
struct Sm90Fprop {
  static constexpr int kAlignment = 128 / cutlass::sizeof_bits<E>::value;
  using Layout = cutlass::layout::TensorNHWC;
  using Cluster = cute::Shape<cute::_1, cute::_1, cute::_1>;
  using CollectiveEpilogue = typename cutlass::epilogue::collective::CollectiveBuilder<
      cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, TileShape, Cluster,
      cutlass::epilogue::collective::EpilogueTileAuto, float, float, E, Layout, kAlignment, E, Layout, kAlignment,
      cutlass::epilogue::collective::EpilogueScheduleAuto>::CollectiveOp;
  using CollectiveMainloop = typename cutlass::conv::collective::CollectiveBuilder<
      cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, cutlass::conv::Operator::kFprop, E, Layout, kAlignment, E,
      Layout, kAlignment, float, TileShape, Cluster,
      cutlass::conv::collective::StageCountAutoCarveout<static_cast<int>(sizeof(typename CollectiveEpilogue::SharedStorage))>,
      cutlass::conv::collective::KernelScheduleAuto>::CollectiveOp;
  using ProblemShape =
      cutlass::conv::ConvProblemShape<cutlass::conv::Operator::kFprop, CollectiveMainloop::DispatchPolicy::NumSpatialDimensions>;
  using Kernel = cutlass::conv::kernel::ConvUniversal<ProblemShape, CollectiveMainloop, CollectiveEpilogue>;
  using Operator = cutlass::conv::device::ConvUniversalAdapter<Kernel>;
};

template <typename Config>
struct Sm90Conv {
  using Operator = typename Config::Operator;
  using Kernel = typename Operator::ConvKernel;
  using ProblemShape = typename Config::ProblemShape;
  using Arguments = typename Operator::Arguments;
  using ElementA = typename Kernel::ElementA;
  using ElementB = typename Kernel::ElementB;
  using ElementC = typename Kernel::ElementC;
  using ElementD = typename Kernel::ElementD;
  using TileShape = typename Kernel::TileShape;

  // The padding after each spatial axis that gives exactly P and Q: CUTLASS derives the output's size
  // from the input and both paddings, and wants neither negative (an output that leaves input rows unread
  // at the end has the same size with no padding after).
  static ProblemShape Problem(const Conv2dShape& s) {
    auto after = [](int in, int out, int k, int pad, int stride, int dilation) {
      const long long need = (long long)(out - 1) * stride + (long long)(k - 1) * dilation + 1 - in - pad;
      return int(need > 0 ? need : 0);
    };
    return ProblemShape(cutlass::conv::Mode::kCrossCorrelation, {s.N, s.H, s.W, s.C}, {s.K, s.R, s.S, s.C},
                        {s.pad_h, s.pad_w},
                        {after(s.H, s.P, s.R, s.pad_h, s.stride_h, s.dilation_h),
                         after(s.W, s.Q, s.S, s.pad_w, s.stride_w, s.dilation_w)},
                        {s.stride_h, s.stride_w}, {s.dilation_h, s.dilation_w}, 1);
  }

  static Arguments MakeArguments(const Conv2dShape& s, const ConvOperands& o) {
    const ProblemShape p = Problem(s);
    typename Kernel::StrideC stride_c;
    typename Kernel::StrideD stride_d;
    cute::for_each(cute::make_seq<cute::rank<0>(typename Kernel::StrideC{})>{}, [&](auto i) {
      cute::get<0, i>(stride_c) = p.stride_C[ProblemShape::RankT - 2 - i];
      cute::get<0, i>(stride_d) = p.stride_C[ProblemShape::RankT - 2 - i];
    });
    auto* c = static_cast<ElementD*>(o.c);
    const auto* source = o.source != nullptr ? static_cast<const ElementC*>(o.source) : c;
    return Arguments{p,
                     {static_cast<const ElementA*>(o.a), static_cast<const ElementB*>(o.b)},
                     {{1.0f, o.beta}, source, stride_c, c, stride_d}};
  }

  static void GemmSize(const Conv2dShape& s, long long mnk[3]) {
    mnk[0] = (long long)s.N * s.P * s.Q, mnk[1] = s.K, mnk[2] = (long long)s.R * s.S * s.C;
  }

  static std::string WhyNot(const Conv2dShape& s) {
    const ProblemShape p = Problem(s);
    // shape_C is (N, P, Q, K) for the forward: CUTLASS's idea of the output must be ours.
    if (p.shape_C[1] != s.P || p.shape_C[2] != s.Q)
      return "CUTLASS's output size for this padding is not the convolution's";
    const cutlass::Status st = Operator::can_implement(MakeArguments(s, ConvOperands{}));
    if (st == cutlass::Status::kSuccess) return std::string();
    return std::string("CUTLASS cannot implement it: ") + cutlassGetStatusString(st);
  }

  static size_t WorkspaceBytes(const Conv2dShape& s) { return Operator::get_workspace_size(MakeArguments(s, ConvOperands{})); }

  static void Run(const Conv2dShape& s, const ConvOperands& o, void* workspace, cudaStream_t stream) {
    Operator op;
    cutlass::Status st = op.initialize(MakeArguments(s, o), workspace, stream);
    if (st == cutlass::Status::kSuccess) st = op.run(stream);
    TE_CHECK(st == cutlass::Status::kSuccess, "CUTLASS Hopper convolution kernel failed: ", cutlassGetStatusString(st),
             " (", cudaGetErrorString(cudaGetLastError()), ")");
  }
};

// The ConvKernel of a Hopper forward configuration (Sm90Fprop).
template <typename Config>
ConvKernel MakeSm90ConvKernel(const char* name, Element element) {
  using Adapter = Sm90Conv<Config>;
  using Tile = typename Adapter::TileShape;
  return ConvKernel{name,
                    Pass::kFprop,
                    element,
                    Math::kTensorOp,
                    Epilogue::kLinear,
                    /*fixed_channels=*/false,
                    Config::kAlignment,
                    /*float_output=*/false,
                    int(cute::size<0>(Tile{})),
                    int(cute::size<1>(Tile{})),
                    int(cute::size<2>(Tile{})),
                    &Adapter::WhyNot,
                    &Adapter::WorkspaceBytes,
                    &Adapter::GemmSize,
                    &Adapter::Run,
                    /*sm=*/90};
}

}  // namespace cutlass_conv
}  // namespace ops
}  // namespace tensorexpr
