// ops/cuda/cutlass/conv_kernel.cuh — one CUTLASS 2-D implicit-GEMM device operator as a ConvKernel
// (conv_kernels.h): the problem size, CUTLASS's can_implement, the workspace and the launch, for any
// cutlass::conv::device::ImplicitGemmConvolution whose tensors are all channels last. Included only by the
// kernel units, which name the operators.
#pragma once
#include <string>
#include <type_traits>
#include <vector>
#include <cutlass/conv/conv2d_problem_size.h>
#include <cutlass/conv/device/implicit_gemm_convolution.h>
#include <cutlass/conv/kernel/default_conv2d_dgrad.h>
#include <cutlass/conv/kernel/default_conv2d_fprop.h>
#include <cutlass/conv/kernel/default_conv2d_fprop_with_broadcast.h>
#include <cutlass/conv/kernel/default_conv2d_wgrad.h>
#include <cutlass/cutlass.h>
#include <cutlass/epilogue/thread/activation.h>
#include <cutlass/epilogue/thread/linear_combination.h>
#include <cutlass/epilogue/thread/linear_combination_bias_elementwise.h>
#include <cutlass/epilogue/thread/linear_combination_relu.h>
#include <cutlass/gemm/threadblock/threadblock_swizzle.h>
#include <cutlass/layout/tensor.h>
#include <tensorexpr/base.h>
#include "conv_kernels.h"
#include "operator_calls.cuh"

namespace tensorexpr {
namespace ops {
namespace cutlass_conv {

// Whether an operator's arguments carry a broadcast vector (the kernels with a bias epilogue).
template <typename Arguments, typename = void>
struct has_broadcast_vector : std::false_type {};
template <typename Arguments>
struct has_broadcast_vector<Arguments, decltype(void(&Arguments::ptr_Vector))> : std::true_type {};

template <typename Operator>
struct CutlassConv {
  using Arguments = typename Operator::Arguments;
  static constexpr cutlass::conv::Operator kOperator = Operator::kConvolutionalOperator;
  static constexpr bool kHasBias = has_broadcast_vector<Arguments>::value;

  static cutlass::conv::Conv2dProblemSize ProblemSize(const Conv2dShape& s) {
    return cutlass::conv::Conv2dProblemSize(s.N, s.H, s.W, s.C, s.K, s.R, s.S, s.P, s.Q, s.pad_h, s.pad_w, s.stride_h,
                                            s.stride_w, s.dilation_h, s.dilation_w,
                                            cutlass::conv::Mode::kCrossCorrelation, s.split_k);
  }

  // A, B and C of the implicit GEMM (conv_kernels.h), each packed; slices of a split reduction go to
  // consecutive copies of C (CUTLASS's parallel split-K). The bias, where the kernel has one, is one
  // vector for every row of the output (a row step of 0); so is a source that is one row (strides 0: the
  // epilogue's C iterator steps by the layout's first stride, ConvOutputIteratorParameter).
  static Arguments MakeArguments(const Conv2dShape& s, const ConvOperands& o) {
    using ElementA = typename Operator::ElementA;
    using ElementB = typename Operator::ElementB;
    using ElementC = typename Operator::ElementC;
    using LayoutA = typename Operator::LayoutA;
    using LayoutB = typename Operator::LayoutB;
    using LayoutC = typename Operator::LayoutC;
    const cutlass::conv::Conv2dProblemSize p = ProblemSize(s);
    const auto extent_a = cutlass::conv::implicit_gemm_tensor_a_extent(kOperator, p);
    const auto extent_b = cutlass::conv::implicit_gemm_tensor_b_extent(kOperator, p);
    const auto extent_c = cutlass::conv::implicit_gemm_tensor_c_extent(kOperator, p);
    // CUTLASS's references are to non-const elements; A and B are only read.
    auto* a = static_cast<ElementA*>(const_cast<void*>(o.a));
    auto* b = static_cast<ElementB*>(const_cast<void*>(o.b));
    auto* c = static_cast<ElementC*>(o.c);
    auto* source = o.source != nullptr ? static_cast<ElementC*>(const_cast<void*>(o.source)) : c;
    const auto mode = s.split_k > 1 ? cutlass::conv::SplitKMode::kParallel : cutlass::conv::SplitKMode::kSerial;
    // (A serial split would read its later slices' source from D: a row source needs one slice.)
    if (o.source_is_row && s.split_k > 1) Fail("CUTLASS convolution: a source row with a split reduction");
    const LayoutC source_layout = o.source_is_row ? LayoutC(typename LayoutC::Stride(0)) : LayoutC::packed(extent_c);
    Arguments args(p, {a, LayoutA::packed(extent_a)}, {b, LayoutB::packed(extent_b)}, {source, source_layout},
                   {c, LayoutC::packed(extent_c)}, {1.0f, o.beta}, mode);
    if constexpr (kHasBias) {
      args.ptr_Vector = const_cast<void*>(o.bias);
      args.ldr = 0;
    }
    return args;
  }

  static void GemmSize(const Conv2dShape& s, long long mnk[3]) {
    const cutlass::gemm::GemmCoord g = cutlass::conv::implicit_gemm_problem_size(kOperator, ProblemSize(s));
    mnk[0] = g.m(), mnk[1] = g.n(), mnk[2] = g.k();
  }

  static long long OutputTiles(const Conv2dShape& s) {
    long long mnk[3];
    GemmSize(s, mnk);
    using Tile = typename Operator::ThreadblockShape;
    return (mnk[0] + Tile::kM - 1) / Tile::kM * ((mnk[1] + Tile::kN - 1) / Tile::kN);
  }

  static std::string WhyNot(const Conv2dShape& s) {
    return cutlass_calls::Refusal<Operator>(MakeArguments(s, ConvOperands{}));
  }

  static size_t WorkspaceBytes(const Conv2dShape& s) {
    return Operator::get_workspace_size(MakeArguments(s, ConvOperands{}));
  }

  // What Operator::initialize and run do, less the clearing of a split reduction's slices that initialize
  // queues first: every block writes its whole tile of its slice (none is read), so that was a pass over
  // all of them for nothing. The launch is Operator::run's. (A split is always parallel here: MakeArguments.
  // A serial split would need that clearing, of its semaphores.)
  static void Run(const Conv2dShape& s, const ConvOperands& o, void* workspace, cudaStream_t stream) {
    using Kernel = typename Operator::UnderlyingKernel;
    const typename Kernel::Params params(MakeArguments(s, o), static_cast<int*>(workspace));
    const dim3 grid = typename Operator::ThreadblockSwizzle().get_grid_shape(params.grid_tiled_shape);
    constexpr int smem = int(sizeof(typename Kernel::SharedStorage));
    cudaError_t e = cudaSuccess;
    if (smem >= (48 << 10))
      e = cudaFuncSetAttribute(cutlass::Kernel<Kernel>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
    if (e == cudaSuccess) {
      cutlass::Kernel<Kernel><<<grid, dim3(32 * Operator::kWarpCount, 1, 1), smem, stream>>>(params);
      e = cudaGetLastError();
    }
    TE_CHECK(e == cudaSuccess, "CUTLASS convolution kernel failed to launch: ", cudaGetErrorString(e));
  }
};

// The ConvKernel of `Operator`, with its name and what it needs. bias_in_source: a kBias / kBiasRelu
// kernel without a bias vector, whose bias is its source C (ConvKernel::bias_in_source; its output op
// is LinearCombination or LinearCombinationRelu).
template <typename Operator>
ConvKernel MakeConvKernel(const char* name, Pass pass, Element element, Math math,
                          Epilogue epilogue = Epilogue::kLinear, bool bias_in_source = false) {
  // The weight gradient's kernels write float slices (ConvOperands); the others store the element type.
  const bool float_output = pass == Pass::kWgrad;
  if (float_output && !std::is_same<typename Operator::ElementC, float>::value)
    Fail("CUTLASS kernel ", name, ": a weight-gradient kernel must store float slices");
  using Adapter = CutlassConv<Operator>;
  if (bias_in_source ? Adapter::kHasBias || epilogue == Epilogue::kLinear || pass != Pass::kFprop
                     : Adapter::kHasBias != (epilogue != Epilogue::kLinear))
    Fail("CUTLASS kernel ", name, ": the epilogue named does not match the operator's");
  constexpr int alignment_a = Operator::UnderlyingKernel::Mma::IteratorA::AccessType::kElements;
  constexpr int alignment_c = Operator::UnderlyingKernel::Epilogue::OutputTileIterator::kElementsPerAccess;
  return ConvKernel{name,
                    pass,
                    element,
                    math,
                    epilogue,
                    Operator::kIteratorAlgorithm == cutlass::conv::IteratorAlgorithm::kFixedChannels,
                    bias_in_source,
                    alignment_a > alignment_c ? alignment_a : alignment_c,
                    float_output,
                    Operator::ThreadblockShape::kM,
                    Operator::ThreadblockShape::kN,
                    Operator::ThreadblockShape::kK,
                    &Adapter::WhyNot,
                    &Adapter::WorkspaceBytes,
                    &Adapter::GemmSize,
                    &Adapter::OutputTiles,
                    &Adapter::Run};
}

// The operators on tensor cores, Ampere's multistage mainloop (sm_80 and later, Hopper included): element
// type E in, float accumulation, optimized iterators (C and K multiples of the vector width). Forward and
// data gradient store E; the weight gradient stores float slices (ConvOperands).
template <typename E, typename Out>
using TensorOpEpilogue = cutlass::epilogue::thread::LinearCombination<Out, 128 / cutlass::sizeof_bits<Out>::value,
                                                                      float, float>;

template <typename E, typename ThreadblockShape, typename WarpShape, typename InstructionShape, int kStages,
          typename MathOperator = cutlass::arch::OpMultiplyAdd>
using TensorOpFprop = cutlass::conv::device::ImplicitGemmConvolution<typename cutlass::conv::kernel::DefaultConv2dFprop<
    E, cutlass::layout::TensorNHWC, E, cutlass::layout::TensorNHWC, E, cutlass::layout::TensorNHWC, float,
    cutlass::arch::OpClassTensorOp, cutlass::arch::Sm80, ThreadblockShape, WarpShape, InstructionShape,
    TensorOpEpilogue<E, E>, cutlass::gemm::threadblock::GemmIdentityThreadblockSwizzle<4>, kStages, MathOperator,
    cutlass::conv::IteratorAlgorithm::kOptimized>::Kernel>;

// Forward with the bias epilogues (conv_kernels.h): act(acc + bias + beta * C) in float, stored once; the
// bias is read in the element type. Act is cutlass::epilogue::thread::Identity<float> or ReLu<float>.
template <typename E, typename Act>
using BiasEpilogue =
    cutlass::epilogue::thread::LinearCombinationBiasElementwise<E, float, float, E, E, 128 / cutlass::sizeof_bits<E>::value,
                                                                Act, cutlass::plus<float>, /*StoreT=*/false, E>;

// (CUTLASS's fused-epilogue kernel counts its K steps as the optimized iterators do, so it has no
// fixed-channels form: the stem's kernels take the bias as their source instead, FixedChannelsBiasKernel.)
template <typename E, typename Act, typename ThreadblockShape, typename WarpShape, typename InstructionShape,
          int kStages>
using TensorOpFpropBias =
    cutlass::conv::device::ImplicitGemmConvolution<typename cutlass::conv::kernel::DefaultConv2dFpropWithBroadcast<
        E, cutlass::layout::TensorNHWC, E, cutlass::layout::TensorNHWC, E, cutlass::layout::TensorNHWC, float,
        cutlass::arch::OpClassTensorOp, cutlass::arch::Sm80, ThreadblockShape, WarpShape, InstructionShape,
        BiasEpilogue<E, Act>, cutlass::gemm::threadblock::GemmIdentityThreadblockSwizzle<4>, kStages,
        cutlass::arch::OpMultiplyAdd, cutlass::conv::IteratorAlgorithm::kOptimized>::Kernel>;

// The tiles of the tensor-core kernels, a reduction step of kStep elements (64 halves or 32 floats: a
// stage holds as many bytes either way): a 128 x 128 thread-block tile, and a narrow one for 64 channels
// on the tile's N side, which would waste half of a 128-wide tile.
template <int kStep, typename MmaShape>
struct TileSet {
  using Tile = cutlass::gemm::GemmShape<128, 128, kStep>;
  using Warp = cutlass::gemm::GemmShape<64, 64, kStep>;
  using NarrowTile = cutlass::gemm::GemmShape<128, 64, kStep>;
  using NarrowWarp = cutlass::gemm::GemmShape<64, 32, kStep>;
  // For a data gradient of few channels (a folded stem's 8), where even 64 would waste 7 of 8 products.
  using SlimTile = cutlass::gemm::GemmShape<128, 32, kStep>;
  using SlimWarp = cutlass::gemm::GemmShape<64, 32, kStep>;
  using Mma = MmaShape;
};
using Tiles16 = TileSet<64, cutlass::gemm::GemmShape<16, 8, 16>>;  // half, bf16
using Tiles32 = TileSet<32, cutlass::gemm::GemmShape<16, 8, 8>>;   // float as TF32
// Float as 3xTF32 (OpMultiplyAddFastF32) holds twice TF32's accumulators and operand fragments: on 64-wide
// warps they spill (ptxas, sm_80: 2184 bytes on the 128 x 128 forward, none for TF32), so its warps are
// 32 rows tall, as CUTLASS's own 3xTF32 kernels' are (152 bytes left on the 128 x 128 tile).
struct Tiles32x3 : Tiles32 {
  using Warp = cutlass::gemm::GemmShape<32, 64, 32>;
  using NarrowWarp = cutlass::gemm::GemmShape<32, 32, 32>;
  using SlimWarp = cutlass::gemm::GemmShape<32, 32, 32>;
};

// The bias-epilogue forward kernels for a 16-bit element type E on Tiles16: names
// {bias 128x128, bias 128x64, bias_relu 128x128, bias_relu 128x64}.
template <typename E>
void AppendFpropBias16(std::vector<ConvKernel>& kernels, Element element, const char* const (&names)[4]) {
  using Tile = Tiles16::Tile;
  using Warp = Tiles16::Warp;
  using NarrowTile = Tiles16::NarrowTile;
  using NarrowWarp = Tiles16::NarrowWarp;
  using Mma = Tiles16::Mma;
  using Identity = cutlass::epilogue::thread::Identity<float>;
  using Relu = cutlass::epilogue::thread::ReLu<float>;
  kernels.push_back(MakeConvKernel<TensorOpFpropBias<E, Identity, Tile, Warp, Mma, 3>>(
      names[0], Pass::kFprop, element, Math::kTensorOp, Epilogue::kBias));
  kernels.push_back(MakeConvKernel<TensorOpFpropBias<E, Identity, NarrowTile, NarrowWarp, Mma, 4>>(
      names[1], Pass::kFprop, element, Math::kTensorOp, Epilogue::kBias));
  kernels.push_back(MakeConvKernel<TensorOpFpropBias<E, Relu, Tile, Warp, Mma, 3>>(
      names[2], Pass::kFprop, element, Math::kTensorOp, Epilogue::kBiasRelu));
  kernels.push_back(MakeConvKernel<TensorOpFpropBias<E, Relu, NarrowTile, NarrowWarp, Mma, 4>>(
      names[3], Pass::kFprop, element, Math::kTensorOp, Epilogue::kBiasRelu));
}

// Forward for inputs of exactly one vector of channels per pixel (8 halves, 4 floats: an RGB stem padded
// by staging): each K step of the tile packs several filter taps, where the optimized iterators would
// spend a whole K step per tap on mostly padding. (A 4-half form, 8-byte vectors, did half the MMA work on a
// 3-channel stem and ran 38% slower: 0.215 against 0.156 ms on ResNet-50's stem, H200, N = 32.)
// OutputOp: the plain linear store, or TensorOpReluEpilogue for the stem's bias + relu.
template <typename E, typename ThreadblockShape, typename WarpShape, typename InstructionShape, int kStages,
          typename OutputOp = TensorOpEpilogue<E, E>>
using TensorOpFpropFixedChannels =
    cutlass::conv::device::ImplicitGemmConvolution<typename cutlass::conv::kernel::DefaultConv2dFprop<
        E, cutlass::layout::TensorNHWC, E, cutlass::layout::TensorNHWC, E, cutlass::layout::TensorNHWC, float,
        cutlass::arch::OpClassTensorOp, cutlass::arch::Sm80, ThreadblockShape, WarpShape, InstructionShape,
        OutputOp, cutlass::gemm::threadblock::GemmIdentityThreadblockSwizzle<4>, kStages,
        cutlass::arch::OpMultiplyAdd, cutlass::conv::IteratorAlgorithm::kFixedChannels,
        cutlass::conv::StrideSupport::kStrided, 128 / cutlass::sizeof_bits<E>::value,
        128 / cutlass::sizeof_bits<E>::value>::Kernel>;

// relu(acc + beta * C) in float, stored once: with C the bias read as one row (ConvOperands::source_is_row)
// and beta 1, the stem's bias + relu.
template <typename E>
using TensorOpReluEpilogue =
    cutlass::epilogue::thread::LinearCombinationRelu<E, 128 / cutlass::sizeof_bits<E>::value, float, float>;

// The stem's fused epilogues on the fixed-channels forward of element type E with tile set Tiles, the bias
// its source: kBias is the plain kernel again (listed in the plain kernel's unit, so it is compiled once),
// kBiasRelu its relu form.
template <typename E, typename Tiles, Epilogue kForm>
ConvKernel FixedChannelsBiasKernel(const char* name, Element element) {
  static_assert(kForm != Epilogue::kLinear, "a fused form: kBias or kBiasRelu");
  using OutputOp =
      typename std::conditional<kForm == Epilogue::kBiasRelu, TensorOpReluEpilogue<E>, TensorOpEpilogue<E, E>>::type;
  return MakeConvKernel<TensorOpFpropFixedChannels<E, typename Tiles::NarrowTile, typename Tiles::NarrowWarp,
                                                   typename Tiles::Mma, 3, OutputOp>>(
      name, Pass::kFprop, element, Math::kTensorOp, kForm, /*bias_in_source=*/true);
}

// Data gradient: kUnity for stride 1 (the faster iterators), kStrided for any stride without dilation.
template <typename E, typename ThreadblockShape, typename WarpShape, typename InstructionShape, int kStages,
          cutlass::conv::StrideSupport kStride, typename MathOperator = cutlass::arch::OpMultiplyAdd>
using TensorOpDgrad = cutlass::conv::device::ImplicitGemmConvolution<typename cutlass::conv::kernel::DefaultConv2dDgrad<
    E, cutlass::layout::TensorNHWC, E, cutlass::layout::TensorNHWC, E, cutlass::layout::TensorNHWC, float,
    cutlass::arch::OpClassTensorOp, cutlass::arch::Sm80, ThreadblockShape, WarpShape, InstructionShape,
    TensorOpEpilogue<E, E>,
    typename std::conditional<kStride == cutlass::conv::StrideSupport::kUnity,
                              cutlass::gemm::threadblock::GemmIdentityThreadblockSwizzle<4>,
                              cutlass::conv::threadblock::StridedDgradIdentityThreadblockSwizzle<1>>::type,
    kStages, MathOperator, cutlass::conv::IteratorAlgorithm::kOptimized, kStride>::Kernel>;

template <typename E, typename ThreadblockShape, typename WarpShape, typename InstructionShape, int kStages,
          typename MathOperator = cutlass::arch::OpMultiplyAdd>
using TensorOpWgrad = cutlass::conv::device::ImplicitGemmConvolution<typename cutlass::conv::kernel::DefaultConv2dWgrad<
    E, cutlass::layout::TensorNHWC, E, cutlass::layout::TensorNHWC, float, cutlass::layout::TensorNHWC, float,
    cutlass::arch::OpClassTensorOp, cutlass::arch::Sm80, ThreadblockShape, WarpShape, InstructionShape,
    TensorOpEpilogue<E, float>, cutlass::gemm::threadblock::GemmIdentityThreadblockSwizzle<4>, kStages, MathOperator,
    cutlass::conv::IteratorAlgorithm::kOptimized>::Kernel>;

// Each pass's Ampere kernels for element type E on Tiles (TileSet), named by `names` in the order listed.
// Forward: 128 x 128, 128 x 64.
// MathOperator / math: cutlass::arch::OpMultiplyAdd, or OpMultiplyAddFastF32 for float's 3xTF32 kernels.
template <typename E, typename Tiles, typename MathOperator = cutlass::arch::OpMultiplyAdd>
void AppendFpropKernels(std::vector<ConvKernel>& kernels, Element element, const char* const (&names)[2],
                        Math math = Math::kTensorOp) {
  kernels.push_back(
      MakeConvKernel<TensorOpFprop<E, typename Tiles::Tile, typename Tiles::Warp, typename Tiles::Mma, 3, MathOperator>>(
          names[0], Pass::kFprop, element, math));
  kernels.push_back(MakeConvKernel<TensorOpFprop<E, typename Tiles::NarrowTile, typename Tiles::NarrowWarp,
                                                 typename Tiles::Mma, 4, MathOperator>>(names[1], Pass::kFprop, element,
                                                                                        math));
}

// Data gradient: unit strides 128 x 128 and 128 x 64, then any stride 128 x 128, 128 x 64 and 128 x 32.
template <typename E, typename Tiles, typename MathOperator = cutlass::arch::OpMultiplyAdd>
void AppendDgradKernels(std::vector<ConvKernel>& kernels, Element element, const char* const (&names)[5],
                        Math math = Math::kTensorOp) {
  using cutlass::conv::StrideSupport;
  using T = Tiles;
  using Op = MathOperator;
  kernels.push_back(MakeConvKernel<TensorOpDgrad<E, typename T::Tile, typename T::Warp, typename T::Mma, 3,
                                                 StrideSupport::kUnity, Op>>(names[0], Pass::kDgrad, element, math));
  kernels.push_back(MakeConvKernel<TensorOpDgrad<E, typename T::NarrowTile, typename T::NarrowWarp, typename T::Mma, 4,
                                                 StrideSupport::kUnity, Op>>(names[1], Pass::kDgrad, element, math));
  kernels.push_back(MakeConvKernel<TensorOpDgrad<E, typename T::Tile, typename T::Warp, typename T::Mma, 3,
                                                 StrideSupport::kStrided, Op>>(names[2], Pass::kDgrad, element, math));
  kernels.push_back(MakeConvKernel<TensorOpDgrad<E, typename T::NarrowTile, typename T::NarrowWarp, typename T::Mma, 4,
                                                 StrideSupport::kStrided, Op>>(names[3], Pass::kDgrad, element, math));
  kernels.push_back(MakeConvKernel<TensorOpDgrad<E, typename T::SlimTile, typename T::SlimWarp, typename T::Mma, 4,
                                                 StrideSupport::kStrided, Op>>(names[4], Pass::kDgrad, element, math));
}

// Weight gradient, M the filters (wgrad_f16.cu says why these tiles): 128 x 64, 64 x 64, 64 x 128.
template <typename E, typename Tiles, typename MathOperator = cutlass::arch::OpMultiplyAdd>
void AppendWgradKernels(std::vector<ConvKernel>& kernels, Element element, const char* const (&names)[3],
                        Math math = Math::kTensorOp) {
  using cutlass::gemm::GemmShape;
  constexpr int k = Tiles::Tile::kK;
  using Mma = typename Tiles::Mma;
  using Op = MathOperator;
  kernels.push_back(MakeConvKernel<TensorOpWgrad<E, GemmShape<128, 64, k>, GemmShape<64, 32, k>, Mma, 4, Op>>(
      names[0], Pass::kWgrad, element, math));
  kernels.push_back(MakeConvKernel<TensorOpWgrad<E, GemmShape<64, 64, k>, GemmShape<32, 32, k>, Mma, 5, Op>>(
      names[1], Pass::kWgrad, element, math));
  kernels.push_back(MakeConvKernel<TensorOpWgrad<E, GemmShape<64, 128, k>, GemmShape<32, 64, k>, Mma, 4, Op>>(
      names[2], Pass::kWgrad, element, math));
}

}  // namespace cutlass_conv
}  // namespace ops
}  // namespace tensorexpr
