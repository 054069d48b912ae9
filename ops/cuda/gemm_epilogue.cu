// ops/cuda/gemm_epilogue.cu — ops/gemm_epilogue.h on the GPU: one cublasLtMatmul whose epilogue adds the
// bias and applies the relu, with beta = 1 on C for the added matrix.
//
// A call's descriptors and the heuristic's kernel are kept per thread and per problem (sizes, layouts,
// form, operand alignments, device): the heuristic takes tens of microseconds, as long as a small layer's
// whole gemm. Reductions of split kernels are kept in fp32 (never in the 16-bit output type), as the
// library's cuBLAS handles do (CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION).
#include <cublasLt.h>
#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <tuple>
#include <tensorexpr/cuda/tensorexpr_cuda.cuh>
#include <tensorexpr/ops/conv_problem.h>
#include "../gemm_epilogue.h"

namespace tensorexpr {
namespace ops {
namespace {

// Workspace a kernel may ask for (split reductions), within the caller's limit: cuBLAS's own default on
// Hopper. Taken from the stream-ordered pool, which keeps it for the next call.
constexpr size_t kMaxWorkspaceBytes = size_t(32) << 20;

using cuda_blas::CudaDataType;

// The process's cuBLASLt context for the current device (never destroyed: streams may outlive static
// teardown, as with the workspaces).
cublasLtHandle_t LtHandle(int device) {
  static std::mutex mutex;
  static auto* handles = new std::map<int, cublasLtHandle_t>();
  std::lock_guard<std::mutex> lock(mutex);
  cublasLtHandle_t& h = (*handles)[device];
  if (h == nullptr) TE_CUBLAS_CHECK(cublasLtCreate(&h));
  return h;
}

// The descriptors of one problem and the heuristic's kernel for it (found = false: none).
struct LtPlan {
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, d = nullptr;
  cublasLtMatmulHeuristicResult_t kernel{};
  bool found = false;
  LtPlan() = default;
  LtPlan(const LtPlan&) = delete;
  LtPlan& operator=(const LtPlan&) = delete;
  ~LtPlan() {  // (host memory only)
    if (op != nullptr) cublasLtMatmulDescDestroy(op);
    for (cublasLtMatrixLayout_t l : {a, b, d})
      if (l != nullptr) cublasLtMatrixLayoutDestroy(l);
  }
};

// A preference object, destroyed however the heuristic's call ends.
struct Preference {
  cublasLtMatmulPreference_t p = nullptr;
  Preference() { TE_CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&p)); }
  ~Preference() { cublasLtMatmulPreferenceDestroy(p); }
  Preference(const Preference&) = delete;
  Preference& operator=(const Preference&) = delete;
};

using PlanKey = std::tuple<int, int, bool, bool, bool, index_t, index_t, index_t, index_t, index_t, index_t, bool, bool,
                           bool, int, size_t>;

template <typename DType>
const LtPlan& PlanFor(const expr::GemmCall<DType>& g, const GemmEpilogue<DType>& e, bool tf32, int alignment,
                      size_t workspace_limit) {
  const int device = cuda::CurrentDevice();
  tf32 = tf32 && std::is_same<DType, float>::value;
  const size_t workspace_bytes = std::min(workspace_limit, kMaxWorkspaceBytes);
  const PlanKey key{device, int(CudaDataType<DType>::kValue), tf32, g.trans_a, g.trans_b, g.m, g.n, g.k, g.lda, g.ldb,
                    g.ldc, e.relu, e.bias != nullptr, e.c != nullptr, alignment, workspace_bytes};
  thread_local std::map<PlanKey, std::unique_ptr<LtPlan>> plans;
  std::unique_ptr<LtPlan>& slot = plans[key];
  if (slot != nullptr) return *slot;
  // (A set-up that throws leaves an answer behind: no kernel, not asked again.)
  slot = std::make_unique<LtPlan>();
  auto plan = std::make_unique<LtPlan>();
  const cudaDataType_t type = CudaDataType<DType>::kValue;
  const cublasComputeType_t compute = tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
  TE_CUBLAS_CHECK(cublasLtMatmulDescCreate(&plan->op, compute, CUDA_R_32F));
  const cublasOperation_t ta = g.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, tb = g.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  TE_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(plan->op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof(ta)));
  TE_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(plan->op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof(tb)));
  const cublasLtEpilogue_t epilogue = e.bias != nullptr ? (e.relu ? CUBLASLT_EPILOGUE_RELU_BIAS : CUBLASLT_EPILOGUE_BIAS)
                                                        : (e.relu ? CUBLASLT_EPILOGUE_RELU : CUBLASLT_EPILOGUE_DEFAULT);
  TE_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(plan->op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof(epilogue)));
  // Column-major: A is m x k as op() reads it (stored k x m when transposed), B k x n, D m x n.
  TE_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&plan->a, type, uint64_t(g.trans_a ? g.k : g.m),
                                             uint64_t(g.trans_a ? g.m : g.k), int64_t(g.lda)));
  TE_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&plan->b, type, uint64_t(g.trans_b ? g.n : g.k),
                                             uint64_t(g.trans_b ? g.k : g.n), int64_t(g.ldb)));
  TE_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&plan->d, type, uint64_t(g.m), uint64_t(g.n), int64_t(g.ldc)));
  const Preference pref;
  const uint64_t workspace = workspace_bytes;
  const uint32_t reduction = CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE, align = uint32_t(alignment);
  TE_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(pref.p, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace,
                                                       sizeof(workspace)));
  TE_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(pref.p, CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK, &reduction,
                                                       sizeof(reduction)));
  for (cublasLtMatmulPreferenceAttributes_t attr :
       {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
        CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES})
    TE_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(pref.p, attr, &align, sizeof(align)));
  int returned = 0;
  // C's layout is D's (C is D's shape with D's leading dimension).
  const cublasStatus_t st = cublasLtMatmulAlgoGetHeuristic(LtHandle(device), plan->op, plan->a, plan->b, plan->d,
                                                           plan->d, pref.p, 1, &plan->kernel, &returned);
  // No kernel is an answer (NOT_SUPPORTED), not an error.
  if (st != CUBLAS_STATUS_NOT_SUPPORTED) TE_CUBLAS_CHECK(st);
  plan->found = st == CUBLAS_STATUS_SUCCESS && returned > 0 && plan->kernel.state == CUBLAS_STATUS_SUCCESS;
  slot = std::move(plan);
  return *slot;
}

}  // namespace

template <typename DType>
bool GpuGemmEpilogueSupported(const expr::GemmCall<DType>& g, const GemmEpilogue<DType>& e, bool tf32, int alignment,
                              size_t workspace_limit) {
  if (g.batch != 1 || g.m <= 0 || g.n <= 0 || g.k <= 0) return false;
  return PlanFor(g, e, tf32, alignment, workspace_limit).found;
}

template <typename DType>
void GpuGemmWithEpilogue(Stream<gpu>* s, const expr::GemmCall<DType>& g, const GemmEpilogue<DType>& e, bool tf32,
                         int alignment, size_t workspace_limit) {
  TE_CHECK(g.batch == 1 && g.m > 0 && g.n > 0 && g.k > 0, "gemm with epilogue: one product of positive sizes, not ",
           g.batch, " of ", g.m, " x ", g.n, " x ", g.k);
  TE_CHECK(detail::VectorAligned(e.bias), "gemm with epilogue: the bias must start on a 16-byte boundary");
  const void* c = e.c != nullptr ? static_cast<const void*>(e.c) : static_cast<const void*>(g.c);
  for (const void* p : {static_cast<const void*>(g.a), static_cast<const void*>(g.b), c, static_cast<const void*>(g.c)})
    TE_CHECK(reinterpret_cast<uintptr_t>(p) % uintptr_t(alignment) == 0, "gemm with epilogue: an operand at ", p,
             " is not ", alignment, "-byte aligned as its kernel was chosen for");
  const LtPlan& plan = PlanFor(g, e, tf32, alignment, workspace_limit);
  TE_CHECK(plan.found, "gemm with epilogue: cuBLASLt has no kernel for ", g.m, " x ", g.n, " x ", g.k, " in ",
           DataType<DType>::name(), " with this epilogue");
  const void* bias = e.bias;
  TE_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(plan.op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof(bias)));
  const float alpha = 1.0f, beta = e.c != nullptr ? 1.0f : 0.0f;
  const cudaStream_t stream = Stream<gpu>::GetStream(s);
  cuda::TempBuffer workspace(plan.kernel.workspaceSize, stream);
  TE_CUBLAS_CHECK(cublasLtMatmul(LtHandle(cuda::CurrentDevice()), plan.op, &alpha, g.a, plan.a, g.b, plan.b, &beta, c,
                                 plan.d, g.c, plan.d, &plan.kernel.algo, workspace.get(), plan.kernel.workspaceSize,
                                 stream));
  workspace.Release();
}

#define TE_GEMM_EPILOGUE_INSTANCES(DType)                                                                         \
  template bool GpuGemmEpilogueSupported<DType>(const expr::GemmCall<DType>&, const GemmEpilogue<DType>&, bool, int,  \
                                                 size_t);                                                              \
  template void GpuGemmWithEpilogue<DType>(Stream<gpu>*, const expr::GemmCall<DType>&, const GemmEpilogue<DType>&, bool, \
                                           int, size_t);
TE_GEMM_EPILOGUE_INSTANCES(float)
TE_GEMM_EPILOGUE_INSTANCES(half_t)
TE_GEMM_EPILOGUE_INSTANCES(bf16_t)
#undef TE_GEMM_EPILOGUE_INSTANCES

}  // namespace ops
}  // namespace tensorexpr
