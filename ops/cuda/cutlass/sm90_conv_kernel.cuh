// ops/cuda/cutlass/sm90_conv_kernel.cuh — one CUTLASS 3 Hopper convolution (cutlass::conv::device::
// ConvUniversalAdapter over a ConvUniversal kernel) as a ConvKernel (conv_kernels.h). Hopper's kernels load
// their tiles with the Tensor Memory Accelerator in im2col mode (the gather of the implicit GEMM is done by
// the copy engine, not by threads computing addresses) and multiply with warpgroup MMAs (wgmma), a
// producer warp feeding consumer warps through a shared-memory pipeline. Their code exists only for
// compute capability 9.0 (sm_90a), so the ConvKernel says sm = 90. Included only by the kernel units.
#pragma once
#include <string>
#include <type_traits>
#include <cute/tensor.hpp>
#include <cutlass/cutlass.h>
#include <cutlass/kernel_hardware_info.hpp>
#include <cutlass/conv/collective/collective_builder.hpp>
#include <cutlass/conv/convnd_problem_shape.hpp>
#include <cutlass/conv/device/conv_universal_adapter.hpp>
#include <cutlass/conv/dispatch_policy.hpp>
#include <cutlass/conv/kernel/conv_universal.hpp>
#include <cutlass/epilogue/collective/collective_builder.hpp>
#include <cutlass/epilogue/fusion/operations.hpp>
#include <cutlass/epilogue/thread/activation.h>
#include <cutlass/util/packed_stride.hpp>
#include <tensorexpr/base.h>
#include "conv_kernels.h"
#include "operator_calls.cuh"

namespace tensorexpr {
namespace ops {
namespace cutlass_conv {

// What a Hopper kernel's epilogue computes (conv_kernels.h's Epilogue) as CUTLASS 3's fusion operation: the
// forward's output channel k is the GEMM's column, so the bias is a row broadcast down the tile's rows (a
// null bias adds zeros), summed with acc and beta * C in float and rounded to Out once.
template <Epilogue kEpilogue, typename Out, typename E>
struct Sm90Fusion {
  template <template <class> class Act>
  using BiasAct = cutlass::epilogue::fusion::LinCombPerColBiasEltAct<Act, Out, float, /*bias=*/E, /*source=*/Out, float>;
  using Operation = std::conditional_t<
      kEpilogue == Epilogue::kLinear, cutlass::epilogue::fusion::LinearCombination<Out, float, Out, float>,
      std::conditional_t<kEpilogue == Epilogue::kBias, BiasAct<cutlass::epilogue::thread::Identity>,
                         BiasAct<cutlass::epilogue::thread::ReLu>>>;
  // The plain store is CUTLASS's choice (registers straight to memory); a fused one needs the epilogue
  // that stages its tile in shared memory and stores it by TMA, the one CUTLASS's fusions are built on.
  using Schedule = std::conditional_t<kEpilogue == Epilogue::kLinear, cutlass::epilogue::collective::EpilogueScheduleAuto,
                                      cutlass::epilogue::TmaWarpSpecialized>;
};

// A Hopper convolution of operator Op on activations (N, H, W, C) of element type E, float accumulation,
// D = acc + beta * C (with kEpilogue's bias and relu: forward only), a thread-block tile of TileShape,
// clusters of one block:
//   kFprop  filters (K, R, S, C) in E -> output (N, P, Q, K) in E; the tile's M is output pixels, N filters
//   kDgrad  output gradient and filters in E -> data gradient (N, H, W, C) in E; M is input pixels, N
//           channels (unit strides only: Sm90Conv::WhyNot)
//   kWgrad  output gradient (N, P, Q, K) in E -> filter gradient (K, R, S, C) in float (a slice, as the
//           Ampere weight-gradient kernels write: conv_kernels.h); M is filters, N the filters' taps
template <cutlass::conv::Operator Op, typename E, typename TileShape, Epilogue kEpilogue_ = Epilogue::kLinear>
struct Sm90Config {
  static_assert(kEpilogue_ == Epilogue::kLinear || Op == cutlass::conv::Operator::kFprop,
                "a bias epilogue is the forward's");
  static constexpr cutlass::conv::Operator kOperator = Op;
  static constexpr Epilogue kEpilogue = kEpilogue_;
  static constexpr int kAlignment = 128 / cutlass::sizeof_bits<E>::value;
  using Out = std::conditional_t<Op == cutlass::conv::Operator::kWgrad, float, E>;
  static constexpr int kOutAlignment = 128 / cutlass::sizeof_bits<Out>::value;
  using Activations = cutlass::layout::TensorNHWC;
  using OutLayout = std::conditional_t<Op == cutlass::conv::Operator::kWgrad, cutlass::layout::TensorKCSR,
                                       cutlass::layout::TensorNHWC>;
  using Cluster = cute::Shape<cute::_1, cute::_1, cute::_1>;
  using CollectiveEpilogue = typename cutlass::epilogue::collective::CollectiveBuilder<
      cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, TileShape, Cluster,
      cutlass::epilogue::collective::EpilogueTileAuto, float, float, Out, OutLayout, kOutAlignment, Out, OutLayout,
      kOutAlignment, typename Sm90Fusion<kEpilogue_, Out, E>::Schedule,
      typename Sm90Fusion<kEpilogue_, Out, E>::Operation>::CollectiveOp;
  // The mainloop's two operands are channels last for every operator (the filters are (K, R, S, C), which
  // CUTLASS names NHWC too).
  using CollectiveMainloop = typename cutlass::conv::collective::CollectiveBuilder<
      cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, Op, E, Activations, kAlignment, E, Activations, kAlignment,
      float, TileShape, Cluster,
      cutlass::conv::collective::StageCountAutoCarveout<static_cast<int>(sizeof(typename CollectiveEpilogue::SharedStorage))>,
      cutlass::conv::collective::KernelScheduleAuto>::CollectiveOp;
  using ProblemShape = cutlass::conv::ConvProblemShape<Op, CollectiveMainloop::DispatchPolicy::NumSpatialDimensions>;
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

  static constexpr bool kWgrad = Config::kOperator == cutlass::conv::Operator::kWgrad;
  static constexpr bool kDgrad = Config::kOperator == cutlass::conv::Operator::kDgrad;
  static constexpr Pass kPass = kWgrad ? Pass::kWgrad : kDgrad ? Pass::kDgrad : Pass::kFprop;

  static Arguments MakeArguments(const Conv2dShape& s, const ConvOperands& o) {
    const ProblemShape p = Problem(s);
    typename Kernel::StrideC stride_c;
    typename Kernel::StrideD stride_d;
    if constexpr (kWgrad) {
      stride_c = cutlass::make_cute_packed_stride(stride_c, p.shape_C, p.stride_C, Config::kOperator);
      stride_d = cutlass::make_cute_packed_stride(stride_d, p.shape_C, p.stride_C, Config::kOperator);
    } else {
      // The output's strides (the forward's output, the data gradient): (Q, P, N) pixels, then channels.
      cute::for_each(cute::make_seq<cute::rank<0>(typename Kernel::StrideC{})>{}, [&](auto i) {
        cute::get<0, i>(stride_c) = p.stride_C[ProblemShape::RankT - 2 - i];
        cute::get<0, i>(stride_d) = p.stride_C[ProblemShape::RankT - 2 - i];
      });
    }
    auto* c = static_cast<ElementD*>(o.c);
    const auto* source = o.source != nullptr ? static_cast<const ElementC*>(o.source) : c;
    Arguments args{p,
                   {static_cast<const ElementA*>(o.a), static_cast<const ElementB*>(o.b)},
                   {{1.0f, o.beta}, source, stride_c, c, stride_d}};
    if constexpr (Config::kEpilogue != Epilogue::kLinear)
      args.epilogue.thread.bias_ptr = static_cast<decltype(args.epilogue.thread.bias_ptr)>(o.bias);
    return args;
  }

  static void GemmSize(const Conv2dShape& s, long long mnk[3]) {
    const long long pixels = (long long)s.N * s.P * s.Q, taps = (long long)s.R * s.S * s.C;
    if (kWgrad) mnk[0] = s.K, mnk[1] = taps, mnk[2] = pixels;
    else if (kDgrad) mnk[0] = (long long)s.N * s.H * s.W, mnk[1] = s.C, mnk[2] = (long long)s.K * s.R * s.S;
    else mnk[0] = pixels, mnk[1] = s.K, mnk[2] = taps;
  }

  // The weight gradient's N is (C, S, R) nested, the tile running over C alone: a tile's columns never
  // span two taps, so each tap's channels round up to the tile on their own.
  static long long OutputTiles(const Conv2dShape& s) {
    constexpr long long tm = cute::size<0>(TileShape{}), tn = cute::size<1>(TileShape{});
    long long mnk[3];
    GemmSize(s, mnk);
    if (kWgrad) return (s.K + tm - 1) / tm * ((s.C + tn - 1) / tn) * s.R * s.S;
    return (mnk[0] + tm - 1) / tm * ((mnk[1] + tn - 1) / tn);
  }

  static std::string WhyNot(const Conv2dShape& s) {
    if (s.split_k != 1) return "CUTLASS's Hopper convolutions do not split the reduction";
    // (Its im2col copy walks the output gradient with the forward's stride, which only unit strides make
    // the data gradient's; CUTLASS's can_implement does not check.)
    if (kDgrad && (s.stride_h != 1 || s.stride_w != 1)) return "CUTLASS's Hopper data gradient takes unit strides only";
    const ProblemShape p = Problem(s);
    // The tensor of shape (N, P, Q, K), the forward's output and the gradients' A: CUTLASS's idea of the
    // output's size must be ours.
    const auto& out = kWgrad || kDgrad ? p.shape_A : p.shape_C;
    if (out[1] != s.P || out[2] != s.Q) return "CUTLASS's output size for this padding is not the convolution's";
    const Arguments args = MakeArguments(s, ConvOperands{});
    // The algorithm hands a weight-gradient kernel one buffer, its output (conv_cutlass.h).
    if (kWgrad && Operator::get_workspace_size(args) != 0) return "it would need a workspace beside its output";
    return cutlass_calls::Refusal<Operator>(args);
  }

  static size_t WorkspaceBytes(const Conv2dShape& s) { return Operator::get_workspace_size(MakeArguments(s, ConvOperands{})); }

  static void Run(const Conv2dShape& s, const ConvOperands& o, void* workspace, cudaStream_t stream) {
    cutlass_calls::InitializeAndRun<Operator>(MakeArguments(s, o), workspace, stream, "CUTLASS Hopper convolution kernel");
  }
};

// The tiles of the forward and the data gradient: 128 x 128 and 128 x 64, a reduction step of kStep
// elements (64 halves, or 32 floats: a stage holds as many bytes either way), the step a mode of its own
// (CUTLASS's convolutions split the reduction over channels and taps).
template <int kStep>
struct Sm90Tiles {
  using Wide = cute::Shape<cute::_128, cute::_128, cute::Shape<cute::Int<kStep>>>;
  using Narrow = cute::Shape<cute::_128, cute::_64, cute::Shape<cute::Int<kStep>>>;
};
using Sm90Tiles16 = Sm90Tiles<64>;    // half, bf16
using Sm90TilesTf32 = Sm90Tiles<32>;  // float as TF32

// The ConvKernel of a Hopper configuration (Sm90Config).
template <typename Config>
ConvKernel MakeSm90ConvKernel(const char* name, Element element) {
  using Adapter = Sm90Conv<Config>;
  using Tile = typename Adapter::TileShape;
  return ConvKernel{name,
                    Adapter::kPass,
                    element,
                    Math::kTensorOp,
                    Config::kEpilogue,
                    /*fixed_channels=*/false,
                    /*bias_in_source=*/false,
                    Config::kAlignment,
                    /*float_output=*/Adapter::kWgrad,
                    int(cute::size<0>(Tile{})),
                    int(cute::size<1>(Tile{})),
                    int(cute::size<2>(Tile{})),
                    &Adapter::WhyNot,
                    &Adapter::WorkspaceBytes,
                    &Adapter::GemmSize,
                    &Adapter::OutputTiles,
                    &Adapter::Run,
                    /*sm=*/90};
}

// A pass's kernels of element type E with the Wide and the Narrow tile, named by `names` in that order.
template <cutlass::conv::Operator kOperator, typename E, typename Wide, typename Narrow>
void AppendSm90Kernels(std::vector<ConvKernel>& kernels, Element element, const char* const (&names)[2]) {
  kernels.push_back(MakeSm90ConvKernel<Sm90Config<kOperator, E, Wide>>(names[0], element));
  kernels.push_back(MakeSm90ConvKernel<Sm90Config<kOperator, E, Narrow>>(names[1], element));
}

// The forward's bias and bias + relu kernels of element type E with the Wide and the Narrow tile, named by
// `names` in the order bias Wide, bias Narrow, bias_relu Wide, bias_relu Narrow.
template <typename E, typename Wide, typename Narrow>
void AppendSm90FpropBiasKernels(std::vector<ConvKernel>& kernels, Element element, const char* const (&names)[4]) {
  constexpr cutlass::conv::Operator kFprop = cutlass::conv::Operator::kFprop;
  kernels.push_back(MakeSm90ConvKernel<Sm90Config<kFprop, E, Wide, Epilogue::kBias>>(names[0], element));
  kernels.push_back(MakeSm90ConvKernel<Sm90Config<kFprop, E, Narrow, Epilogue::kBias>>(names[1], element));
  kernels.push_back(MakeSm90ConvKernel<Sm90Config<kFprop, E, Wide, Epilogue::kBiasRelu>>(names[2], element));
  kernels.push_back(MakeSm90ConvKernel<Sm90Config<kFprop, E, Narrow, Epilogue::kBiasRelu>>(names[3], element));
}

// A pass's four 16-bit kernels: half, then bf16, each Wide then Narrow (each sm90_*_f16.cu unit appends
// one pass's).
template <cutlass::conv::Operator kOperator, typename Wide, typename Narrow>
void AppendSm90Kernels16(std::vector<ConvKernel>& kernels, const char* const (&names)[4]) {
  AppendSm90Kernels<kOperator, cutlass::half_t, Wide, Narrow>(kernels, Element::kF16, {names[0], names[1]});
  AppendSm90Kernels<kOperator, cutlass::bfloat16_t, Wide, Narrow>(kernels, Element::kBF16, {names[2], names[3]});
}

}  // namespace cutlass_conv
}  // namespace ops
}  // namespace tensorexpr
