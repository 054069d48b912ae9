// ops/cuda/cutlass/sm90_row_bias_gemm.cu — row_bias_gemm.h's kernels on Hopper: CUTLASS 3 gemms (TMA loads,
// wgmma, warp-specialised) for half and bf16 whose epilogue adds a bias per row of the result
// (CUTLASS's LinCombPerRowBiasEltAct), the images as the batch mode with the filters' batch stride a static
// 0 (cute leaves such a mode out of the TMA descriptor, so every image reads the same tiles of A). B is read
// along N (pixels), which Hopper's 16-bit MMAs take from shared memory transposed; TF32's do not, so float
// has no kernel here. Compiled for sm_90a only, in all-kernel builds (ops/meson.build).
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
namespace {

// One kernel: element type E, activation Act (CUTLASS's Identity or ReLu), a tile_m x 128 tile stepping 64
// along the reduction, clusters of one block. 128 rows: two warp groups cooperate on each tile; 64 rows
// (products of 64 filters or fewer, which would leave half of a 128-row tile idle): the two take turns
// on tiles of their own (ping-pong), one's epilogue under the other's MMAs.
template <typename E, template <class> class Act, int tile_m>
struct RowBias {
  static_assert(tile_m == 64 || tile_m == 128, "the cooperative schedule needs 128 rows; ping-pong runs 64");
  static constexpr bool kCooperative = tile_m == 128;
  using MainloopSchedule = std::conditional_t<kCooperative, cutlass::gemm::KernelTmaWarpSpecializedCooperative,
                                              cutlass::gemm::KernelTmaWarpSpecializedPingpong>;
  using EpilogueSchedule = std::conditional_t<kCooperative, cutlass::epilogue::TmaWarpSpecializedCooperative,
                                              cutlass::epilogue::TmaWarpSpecialized>;
  using Row = cutlass::layout::RowMajor;
  // A (M, K, L): row-major, the same matrix for every batch (a compile-time 0, not a run-time one).
  using StrideA = cute::Stride<int64_t, cute::Int<1>, cute::Int<0>>;
  static constexpr int kAlignment = 128 / cutlass::sizeof_bits<E>::value;
  using Tile = cute::Shape<cute::Int<tile_m>, cute::_128, cute::_64>;
  using Cluster = cute::Shape<cute::_1, cute::_1, cute::_1>;
  using Fusion = cutlass::epilogue::fusion::LinCombPerRowBiasEltAct<Act, E, float, /*bias=*/E, /*source=*/E, float>;
  using CollectiveEpilogue = typename cutlass::epilogue::collective::CollectiveBuilder<
      cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, Tile, Cluster, cutlass::epilogue::collective::EpilogueTileAuto,
      float, float, E, Row, kAlignment, E, Row, kAlignment, EpilogueSchedule, Fusion>::CollectiveOp;
  using CollectiveMainloop = typename cutlass::gemm::collective::CollectiveBuilder<
      cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, E, StrideA, kAlignment, E, Row, kAlignment, float, Tile, Cluster,
      cutlass::gemm::collective::StageCountAutoCarveout<static_cast<int>(sizeof(typename CollectiveEpilogue::SharedStorage))>,
      MainloopSchedule>::CollectiveOp;
  using Kernel = cutlass::gemm::kernel::GemmUniversal<cute::Shape<int, int, int, int>, CollectiveMainloop,
                                                      CollectiveEpilogue>;
  using Operator = cutlass::gemm::device::GemmUniversalAdapter<Kernel>;
  using Arguments = typename Operator::Arguments;

  static Arguments MakeArguments(const RowBiasShape& s, const RowBiasOperands& o) {
    // A (M, K), one for all batches; B as CUTLASS sees it, (N, K) with N contiguous; C and D (M, N).
    static_assert(std::is_same<typename Kernel::StrideA, StrideA>::value, "A's batch stride is a static 0");
    const auto stride_a = cutlass::make_cute_packed_stride(StrideA{}, cute::make_shape(s.M, s.K, s.L));
    const auto stride_b = cutlass::make_cute_packed_stride(typename Kernel::StrideB{}, cute::make_shape(s.N, s.K, s.L));
    const auto stride_c = cutlass::make_cute_packed_stride(typename Kernel::StrideC{}, cute::make_shape(s.M, s.N, s.L));
    const auto stride_d = cutlass::make_cute_packed_stride(typename Kernel::StrideD{}, cute::make_shape(s.M, s.N, s.L));
    auto* d = static_cast<E*>(o.d);
    const E* source = o.source != nullptr ? static_cast<const E*>(o.source) : d;
    Arguments args{cutlass::gemm::GemmUniversalMode::kGemm,
                   {s.M, s.N, s.K, s.L},
                   {static_cast<const E*>(o.a), stride_a, static_cast<const E*>(o.b), stride_b},
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

template <typename E, template <class> class Act, int tile_m>
RowBiasKernel MakeRowBiasKernel(const char* name, Element element, Epilogue epilogue) {
  using K = RowBias<E, Act, tile_m>;
  return RowBiasKernel{name, element, epilogue, K::kAlignment, tile_m, &K::WhyNot, &K::WorkspaceBytes, &K::Run, 90};
}

}  // namespace

void AppendSm90RowBiasKernels(std::vector<RowBiasKernel>& kernels) {
  using cutlass::epilogue::thread::Identity;
  using cutlass::epilogue::thread::ReLu;
  using cutlass::half_t;
  using cutlass::bfloat16_t;
  kernels.push_back(MakeRowBiasKernel<half_t, Identity, 128>("f16_sm90_row_bias_128x128x64", Element::kF16, Epilogue::kBias));
  kernels.push_back(MakeRowBiasKernel<half_t, ReLu, 128>("f16_sm90_row_bias_relu_128x128x64", Element::kF16, Epilogue::kBiasRelu));
  kernels.push_back(MakeRowBiasKernel<bfloat16_t, Identity, 128>("bf16_sm90_row_bias_128x128x64", Element::kBF16, Epilogue::kBias));
  kernels.push_back(MakeRowBiasKernel<bfloat16_t, ReLu, 128>("bf16_sm90_row_bias_relu_128x128x64", Element::kBF16, Epilogue::kBiasRelu));
  kernels.push_back(MakeRowBiasKernel<half_t, Identity, 64>("f16_sm90_row_bias_64x128x64", Element::kF16, Epilogue::kBias));
  kernels.push_back(MakeRowBiasKernel<half_t, ReLu, 64>("f16_sm90_row_bias_relu_64x128x64", Element::kF16, Epilogue::kBiasRelu));
  kernels.push_back(MakeRowBiasKernel<bfloat16_t, Identity, 64>("bf16_sm90_row_bias_64x128x64", Element::kBF16, Epilogue::kBias));
  kernels.push_back(MakeRowBiasKernel<bfloat16_t, ReLu, 64>("bf16_sm90_row_bias_relu_64x128x64", Element::kBF16, Epilogue::kBiasRelu));
}

}  // namespace cutlass_gemm
}  // namespace ops
}  // namespace tensorexpr
