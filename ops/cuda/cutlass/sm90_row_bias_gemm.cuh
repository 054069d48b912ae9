// ops/cuda/cutlass/sm90_row_bias_gemm.cuh — one of row_bias_gemm.h's kernels on Hopper: a CUTLASS 3 gemm
// (TMA loads, wgmma, warp-specialised) whose epilogue adds a bias per filter, the images as the batch mode
// with the filters' batch stride a static 0 (cute leaves such a mode out of the TMA descriptor, so every
// image reads the same tiles of the filters). Included only by the kernel units (sm90_row_bias_f16.cu,
// sm90_row_bias_tf32.cu), compiled for sm_90a in all-kernel builds (ops/meson.build).
#pragma once
#include <string>
#include <type_traits>
#include <cute/tensor.hpp>
#include <cutlass/cutlass.h>
#include <cutlass/epilogue/collective/collective_builder.hpp>
#include <cutlass/epilogue/fusion/operations.hpp>
#include <cutlass/epilogue/thread/activation.h>
#include <cutlass/gemm/collective/collective_builder.hpp>
#include <cutlass/gemm/device/gemm_universal_adapter.h>
#include <cutlass/gemm/kernel/gemm_universal.hpp>
#include <cutlass/util/packed_stride.hpp>
#include <tensorexpr/base.h>
#include "operator_calls.cuh"
#include "row_bias_gemm.h"

namespace tensorexpr {
namespace ops {
namespace cutlass_gemm {

// The kernel for element type E, activation Act (CUTLASS's Identity or ReLu), tile_filters filters per
// tile, clusters of one block. Each image's product y_n (filters, pixels) = W (filters, channels) .
// x_n (channels, pixels) reads x along the pixels, and Hopper's MMAs read shared memory along the
// reduction only, but for 16-bit operands, which they may take transposed. So:
//   16-bit: the product as it stands, filters as the gemm's rows (tile_filters x 128 pixels, 64 channels a
//           step), the bias per row; 128 rows: two warp groups cooperate on each tile; 64 (products of 64
//           filters or fewer, which would leave half of a 128-row tile idle): the two take turns on tiles
//           of their own (ping-pong), one's epilogue under the other's MMAs.
//   float (TF32): its transpose y_n^T = x_n^T . W^T, pixels as the rows (128 pixels x tile_filters, 32
//           channels a step), the result and x column-major, the bias per column. x, the operand read
//           along the rows, then passes through registers (CUTLASS's register-sourced mainloop), where
//           it is transposed for the MMA.
template <typename E, template <class> class Act, int tile_filters>
struct Sm90RowBias {
  static_assert(tile_filters == 64 || tile_filters == 128, "tiles of 64 or 128 filters");
  static constexpr bool kPixelRows = sizeof(E) == 4;
  static constexpr int kAlignment = 128 / cutlass::sizeof_bits<E>::value;
  static constexpr bool kCooperative = kPixelRows || tile_filters == 128;
  using MainloopSchedule = std::conditional_t<kCooperative, cutlass::gemm::KernelTmaWarpSpecializedCooperative,
                                              cutlass::gemm::KernelTmaWarpSpecializedPingpong>;
  using EpilogueSchedule = std::conditional_t<kCooperative, cutlass::epilogue::TmaWarpSpecializedCooperative,
                                              cutlass::epilogue::TmaWarpSpecialized>;
  // The filters (filters, channels), channels contiguous, one matrix for every image (a compile-time 0
  // batch stride, not a run-time one): the gemm's A (M, K, L) for 16-bit, its B (N, K, L) for float.
  using FilterStride = cute::Stride<int64_t, cute::Int<1>, cute::Int<0>>;
  // x and y: row-major (channels or filters by pixels) for 16-bit; their transposes, column-major, for float.
  using Pixels = std::conditional_t<kPixelRows, cutlass::layout::ColumnMajor, cutlass::layout::RowMajor>;
  using GmemA = std::conditional_t<kPixelRows, Pixels, FilterStride>;
  using GmemB = std::conditional_t<kPixelRows, FilterStride, Pixels>;
  using Tile = std::conditional_t<kPixelRows, cute::Shape<cute::_128, cute::Int<tile_filters>, cute::_32>,
                                  cute::Shape<cute::Int<tile_filters>, cute::_128, cute::_64>>;
  using Cluster = cute::Shape<cute::_1, cute::_1, cute::_1>;
  template <template <template <class> class, class, class, class, class, class, int, cutlass::FloatRoundStyle> class Bias>
  using BiasOf = Bias<Act, E, float, /*bias=*/E, /*source=*/E, float, kAlignment, cutlass::FloatRoundStyle::round_to_nearest>;
  using Fusion = std::conditional_t<kPixelRows, BiasOf<cutlass::epilogue::fusion::LinCombPerColBiasEltAct>,
                                    BiasOf<cutlass::epilogue::fusion::LinCombPerRowBiasEltAct>>;
  using CollectiveEpilogue = typename cutlass::epilogue::collective::CollectiveBuilder<
      cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, Tile, Cluster, cutlass::epilogue::collective::EpilogueTileAuto,
      float, float, E, Pixels, kAlignment, E, Pixels, kAlignment, EpilogueSchedule, Fusion>::CollectiveOp;
  using CollectiveMainloop = typename cutlass::gemm::collective::CollectiveBuilder<
      cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, E, GmemA, kAlignment, E, GmemB, kAlignment, float, Tile,
      Cluster,
      cutlass::gemm::collective::StageCountAutoCarveout<static_cast<int>(sizeof(typename CollectiveEpilogue::SharedStorage))>,
      MainloopSchedule>::CollectiveOp;
  using Kernel = cutlass::gemm::kernel::GemmUniversal<cute::Shape<int, int, int, int>, CollectiveMainloop,
                                                      CollectiveEpilogue>;
  using Operator = cutlass::gemm::device::GemmUniversalAdapter<Kernel>;
  using Arguments = typename Operator::Arguments;
  static_assert(std::is_same<std::conditional_t<kPixelRows, typename Kernel::StrideB, typename Kernel::StrideA>,
                             FilterStride>::value,
                "the filters' batch stride is a static 0");

  // row_bias_gemm.h's shape (M filters, N pixels, K channels, L images) as the gemm's (M, N, K, L).
  static cute::Shape<int, int, int, int> Problem(const RowBiasShape& s) {
    return kPixelRows ? cute::make_shape(s.N, s.M, s.K, s.L) : cute::make_shape(s.M, s.N, s.K, s.L);
  }
  static Arguments MakeArguments(const RowBiasShape& s, const RowBiasOperands& o) {
    const auto problem = Problem(s);
    const int M = cute::get<0>(problem), N = cute::get<1>(problem), K = cute::get<2>(problem);
    const auto stride_a = cutlass::make_cute_packed_stride(typename Kernel::StrideA{}, cute::make_shape(M, K, s.L));
    const auto stride_b = cutlass::make_cute_packed_stride(typename Kernel::StrideB{}, cute::make_shape(N, K, s.L));
    const auto stride_c = cutlass::make_cute_packed_stride(typename Kernel::StrideC{}, cute::make_shape(M, N, s.L));
    const auto stride_d = cutlass::make_cute_packed_stride(typename Kernel::StrideD{}, cute::make_shape(M, N, s.L));
    const E* filters = static_cast<const E*>(o.a);
    const E* pixels = static_cast<const E*>(o.b);
    auto* d = static_cast<E*>(o.d);
    const E* source = o.source != nullptr ? static_cast<const E*>(o.source) : d;
    Arguments args{cutlass::gemm::GemmUniversalMode::kGemm,
                   problem,
                   {kPixelRows ? pixels : filters, stride_a, kPixelRows ? filters : pixels, stride_b},
                   {{}, source, stride_c, d, stride_d}};
    args.epilogue.thread.alpha = 1.0f;
    args.epilogue.thread.beta = o.beta;
    args.epilogue.thread.bias_ptr = static_cast<const E*>(o.bias);
    return args;  // (hw_info left as it is: CUTLASS asks for the SM count, as the convolutions' kernels do)
  }

  static std::string WhyNot(const RowBiasShape& s) {
    if (s.M <= 0 || s.N <= 0 || s.K <= 0 || s.L <= 0) return "an empty product";
    if (s.N % kAlignment != 0 || s.K % kAlignment != 0)
      return "N and K must be multiples of " + std::to_string(kAlignment) + " (16-byte rows for TMA)";
    return cutlass_calls::Refusal<Operator>(MakeArguments(s, RowBiasOperands{}));
  }
  static size_t WorkspaceBytes(const RowBiasShape& s) { return Operator::get_workspace_size(MakeArguments(s, RowBiasOperands{})); }
  static void Run(const RowBiasShape& s, const RowBiasOperands& o, void* workspace, cudaStream_t stream) {
    cutlass_calls::InitializeAndRun<Operator>(MakeArguments(s, o), workspace, stream, "CUTLASS row-bias gemm");
  }
};

template <typename E, template <class> class Act, int tile_filters>
RowBiasKernel MakeSm90RowBiasKernel(const char* name, cutlass_conv::Element element, cutlass_conv::Epilogue epilogue) {
  using K = Sm90RowBias<E, Act, tile_filters>;
  return RowBiasKernel{name, element, epilogue, K::kAlignment, tile_filters, &K::WhyNot, &K::WorkspaceBytes, &K::Run, 90};
}

}  // namespace cutlass_gemm
}  // namespace ops
}  // namespace tensorexpr
