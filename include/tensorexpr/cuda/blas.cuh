// cuda/blas.cuh — dot and batch_dot on the GPU through cuBLAS, queued on the destination's stream with
// that stream's handle (Stream<gpu>::blas_handle(); TF32 for float only when the stream asks for it).
// float / double: Sgemm / Dgemm (Sgemv / Dgemv for one output row or column) and their strided-batched
// forms; half_t / bf16_t: GemmEx / GemmStridedBatchedEx with fp32 compute. The 64-bit (_64) entry points
// keep index_t sizes without a 32-bit limit. A destination that overlaps an operand gets a private,
// stream-ordered copy of that operand first, as on the CPU (cpu/blas.h). Also the device call of the
// grouped gemm (gemm.h), BatchedGemm.
#pragma once
#include "sum_slices.cuh"
#include <cstdint>
#include <type_traits>
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include "../expr/dot.h"
#include "check.cuh"
#include "device.cuh"
#include "map.cuh"
#include "memory.cuh"
#include "stream.cuh"

#if !defined(CUBLAS_VER_MAJOR) || CUBLAS_VER_MAJOR < 12
#error "tensorexpr's cuBLAS backend needs cuBLAS 12 or newer (it uses the 64-bit _64 interface)"
#endif

namespace tensorexpr {
namespace cuda_blas {

// The CUDA library type of an element type (cuBLAS's Ex calls, cuBLASLt's layouts).
template <typename DType>
struct CudaDataType;
template <>
struct CudaDataType<float> {
  static constexpr cudaDataType_t kValue = CUDA_R_32F;
};
template <>
struct CudaDataType<half_t> {
  static constexpr cudaDataType_t kValue = CUDA_R_16F;
};
template <>
struct CudaDataType<bf16_t> {
  static constexpr cudaDataType_t kValue = CUDA_R_16BF;
};

inline cublasOperation_t Op(bool trans) { return trans ? CUBLAS_OP_T : CUBLAS_OP_N; }

inline void Gemv(cublasHandle_t h, const expr::GemvCall<float>& v, float alpha, float beta) {
  TE_CUBLAS_CHECK(cublasSgemv_64(h, Op(v.trans), v.rows, v.cols, &alpha, v.a, v.lda, v.x, v.incx, &beta, v.y, v.incy));
}
inline void Gemv(cublasHandle_t h, const expr::GemvCall<double>& v, double alpha, double beta) {
  TE_CUBLAS_CHECK(cublasDgemv_64(h, Op(v.trans), v.rows, v.cols, &alpha, v.a, v.lda, v.x, v.incx, &beta, v.y, v.incy));
}

inline void Gemm(cublasHandle_t h, const expr::GemmCall<float>& g, float alpha, float beta) {
  expr::GemvCall<float> v;
  if (g.batch == 1 && expr::AsGemv(g, &v)) {
    Gemv(h, v, alpha, beta);
  } else if (g.batch == 1) {
    TE_CUBLAS_CHECK(cublasSgemm_64(h, Op(g.trans_a), Op(g.trans_b), g.m, g.n, g.k, &alpha, g.a, g.lda, g.b, g.ldb,
                                   &beta, g.c, g.ldc));
  } else {
    TE_CUBLAS_CHECK(cublasSgemmStridedBatched_64(h, Op(g.trans_a), Op(g.trans_b), g.m, g.n, g.k, &alpha, g.a, g.lda,
                                                 g.stride_a, g.b, g.ldb, g.stride_b, &beta, g.c, g.ldc, g.stride_c,
                                                 g.batch));
  }
}
inline void Gemm(cublasHandle_t h, const expr::GemmCall<double>& g, double alpha, double beta) {
  expr::GemvCall<double> v;
  if (g.batch == 1 && expr::AsGemv(g, &v)) {
    Gemv(h, v, alpha, beta);
  } else if (g.batch == 1) {
    TE_CUBLAS_CHECK(cublasDgemm_64(h, Op(g.trans_a), Op(g.trans_b), g.m, g.n, g.k, &alpha, g.a, g.lda, g.b, g.ldb,
                                   &beta, g.c, g.ldc));
  } else {
    TE_CUBLAS_CHECK(cublasDgemmStridedBatched_64(h, Op(g.trans_a), Op(g.trans_b), g.m, g.n, g.k, &alpha, g.a, g.lda,
                                                 g.stride_a, g.b, g.ldb, g.stride_b, &beta, g.c, g.ldc, g.stride_c,
                                                 g.batch));
  }
}
// 16-bit storage, fp32 accumulation; alpha and beta are float.
template <typename DType, typename = typename std::enable_if<is_low_precision<DType>::value>::type>
inline void Gemm(cublasHandle_t h, const expr::GemmCall<DType>& g, float alpha, float beta) {
  const cudaDataType_t t = CudaDataType<DType>::kValue;
  if (g.batch == 1) {
    TE_CUBLAS_CHECK(cublasGemmEx_64(h, Op(g.trans_a), Op(g.trans_b), g.m, g.n, g.k, &alpha, g.a, t, g.lda, g.b, t,
                                    g.ldb, &beta, g.c, t, g.ldc, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
  } else {
    TE_CUBLAS_CHECK(cublasGemmStridedBatchedEx_64(h, Op(g.trans_a), Op(g.trans_b), g.m, g.n, g.k, &alpha, g.a, t,
                                                  g.lda, g.stride_a, g.b, t, g.ldb, g.stride_b, &beta, g.c, t, g.ldc,
                                                  g.stride_c, g.batch, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
  }
}

// The batched form with a pointer per matrix (arrays in device memory): for batches whose matrices are
// not one stride apart.
inline void GemmBatched(cublasHandle_t h, const expr::GemmCall<float>& g, const float* const* a,
                        const float* const* b, float* const* c, float alpha, float beta) {
  TE_CUBLAS_CHECK(cublasSgemmBatched_64(h, Op(g.trans_a), Op(g.trans_b), g.m, g.n, g.k, &alpha, a, g.lda, b, g.ldb,
                                        &beta, c, g.ldc, g.batch));
}
inline void GemmBatched(cublasHandle_t h, const expr::GemmCall<double>& g, const double* const* a,
                        const double* const* b, double* const* c, double alpha, double beta) {
  TE_CUBLAS_CHECK(cublasDgemmBatched_64(h, Op(g.trans_a), Op(g.trans_b), g.m, g.n, g.k, &alpha, a, g.lda, b, g.ldb,
                                        &beta, c, g.ldc, g.batch));
}
template <typename DType, typename = typename std::enable_if<is_low_precision<DType>::value>::type>
inline void GemmBatched(cublasHandle_t h, const expr::GemmCall<DType>& g, const DType* const* a,
                        const DType* const* b, DType* const* c, float alpha, float beta) {
  const cudaDataType_t t = CudaDataType<DType>::kValue;
  TE_CUBLAS_CHECK(cublasGemmBatchedEx_64(h, Op(g.trans_a), Op(g.trans_b), g.m, g.n, g.k, &alpha,
                                         reinterpret_cast<const void* const*>(a), t, g.lda,
                                         reinterpret_cast<const void* const*>(b), t, g.ldb, &beta,
                                         reinterpret_cast<void* const*>(c), t, g.ldc, g.batch, CUBLAS_COMPUTE_32F,
                                         CUBLAS_GEMM_DEFAULT));
}

// The rows x cols of a view's (rows, last-dim) form and its row pitch in bytes (a single row's pitch is
// its width: the stride of a one-row view carries no meaning).
template <int dim, typename DType>
inline size_t PitchBytes(const Tensor<gpu, dim, DType>& t) {
  const Shape<2> s = t.shape_.FlatTo2D();
  return static_cast<size_t>(s[0] == 1 ? s[1] : t.stride_) * sizeof(DType);
}

// A contiguous private copy of `t` in stream-ordered memory when `needed` (the destination overlaps t);
// otherwise view() is t itself. Freed on the stream when it goes out of scope.
template <int dim, typename DType>
class PrivateCopy {
 public:
  PrivateCopy(const Tensor<gpu, dim, DType>& t, bool needed, cudaStream_t stream)
      : buffer_(needed ? sizeof(DType) * static_cast<size_t>(t.shape_.Size()) : 0, stream), view_(t) {
    if (!needed) return;
    const Shape<2> s = t.shape_.FlatTo2D();
    const size_t row_bytes = static_cast<size_t>(s[1]) * sizeof(DType);
    TE_CUDA_CHECK(cudaMemcpy2DAsync(buffer_.get(), row_bytes, t.dptr_, PitchBytes(t), row_bytes,
                                    static_cast<size_t>(s[0]), cudaMemcpyDeviceToDevice, stream));
    view_ = Tensor<gpu, dim, DType>(static_cast<DType*>(buffer_.get()), t.shape_, t.stream_);
  }
  PrivateCopy(const PrivateCopy&) = delete;
  PrivateCopy& operator=(const PrivateCopy&) = delete;
  const Tensor<gpu, dim, DType>& view() const { return view_; }

 private:
  cuda::TempBuffer buffer_;  // freed on the stream when the copy goes out of scope (or its copy throws)
  Tensor<gpu, dim, DType> view_;
};

// dst Saver= e for E = DotExp or BatchDotExp over device tensors, shape already checked.
template <typename Saver, int dim, typename DType, typename E>
inline void ProductInto(Tensor<gpu, dim, DType> dst, const E& e) {
  if (dst.shape_.Size() == 0) return;
  Stream<gpu>* stream = StreamOrDefault(dst.stream_);
  if (e.inner() == 0) {  // an empty sum: `=` writes zeros (all-zero bits in every dtype), += and -= nothing
    if (std::is_same<Saver, sv::saveto>::value) {
      const Shape<2> s = dst.shape_.FlatTo2D();
      TE_CUDA_CHECK(cudaMemset2DAsync(dst.dptr_, PitchBytes(dst), 0, static_cast<size_t>(s[1]) * sizeof(DType),
                                      static_cast<size_t>(s[0]), stream->stream()));
    }
    return;
  }
  // cuBLAS reads the operands while it writes the destination: they must not share memory.
  const PrivateCopy<decltype(e.lhs_)::kDim, DType> a(e.lhs_, expr::MemoryOverlaps(dst, e.lhs_), stream->stream());
  const PrivateCopy<decltype(e.rhs_)::kDim, DType> b(e.rhs_, expr::MemoryOverlaps(dst, e.rhs_), stream->stream());
  using Scale = typename E::scale_type;
  const Scale alpha = e.scale_ * static_cast<Scale>(Saver::kAlphaBLAS), beta = static_cast<Scale>(Saver::kBetaBLAS);
  Gemm(stream->blas_handle(), expr::MakeGemmCall(dst, e.Rebind(a.view(), b.view(), e.scale_)), alpha, beta);
}

}  // namespace cuda_blas

namespace expr {

// dst = / += / -= [alpha *] dot(a, b) on the GPU.
template <typename Saver, int dim, typename DType, typename TA, typename TB, bool lt, bool rt>
inline void EvalInto(Tensor<gpu, dim, DType> dst, const DotExp<TA, TB, lt, rt, DType>& e) {
  if constexpr (check_product_assignment<Saver, gpu, dim, DotExp<TA, TB, lt, rt, DType>>::value) {
    CheckProductDestination<Saver>(dst, e);
    cuda_blas::ProductInto<Saver>(dst, e);
  }
}

// dst = / += / -= [alpha *] batch_dot<ta, tb>(a, b) on the GPU.
template <typename Saver, int dim, typename DType, typename TA, typename TB, bool lt, bool rt>
inline void EvalInto(Tensor<gpu, dim, DType> dst, const BatchDotExp<TA, TB, lt, rt, DType>& e) {
  if constexpr (check_product_assignment<Saver, gpu, dim, BatchDotExp<TA, TB, lt, rt, DType>>::value) {
    CheckProductDestination<Saver>(dst, e);
    cuda_blas::ProductInto<Saver>(dst, e);
  }
}

}  // namespace expr
namespace cuda_blas {
// Elements of partial products the summed form of BatchedGemm keeps at once (64 MiB in float).
constexpr index_t kSummedPartialElems = index_t(1) << 24;
// The summed form's split of each product's inner size: at least this long a chunk, a multiple of
// kChunkAlign (so every chunk starts as aligned as the product does, for the vector loads of cuBLAS's
// kernels), and enough chunks for kChunkWaves results' tiles of kChunkTile^2 per multiprocessor.
constexpr index_t kMinChunkInner = 256, kChunkAlign = 32, kChunkTile = 64, kChunkWaves = 2;

// How a summed product splits its inner size: `count` chunks, all `length` long but the last (`last`).
struct InnerChunks {
  index_t count = 1, length = 0, last = 0;
};

// Elements between consecutive steps of the inner index in the call's A and B (column-major, as cuBLAS
// reads them: op(A) is m x k, op(B) is k x n).
template <typename DType>
inline index_t InnerStepA(const expr::GemmCall<DType>& g) { return g.trans_a ? 1 : g.lda; }
template <typename DType>
inline index_t InnerStepB(const expr::GemmCall<DType>& g) { return g.trans_b ? g.ldb : 1; }

// The call's result tiles of kChunkTile^2, every product of the batch counted.
template <typename DType>
inline index_t ResultTiles(const expr::GemmCall<DType>& g) {
  return ((g.m + kChunkTile - 1) / kChunkTile) * ((g.n + kChunkTile - 1) / kChunkTile) * g.batch;
}

// A batched call computes each tile of a product's result in one block over the whole inner size, so a
// sum over a few images of a small result leaves most multiprocessors idle and each busy one on a long
// loop. Splitting each product's inner size into chunks, each a partial of its own, makes tiles enough to
// fill the GPU twice over. (Strict fp32's 1x1 weight gradient at 56 x 56 with 64 channels each side,
// NCHW, N = 32, H200: 0.077 ms split against 0.113 whole; with the data gradient beside it on the side
// stream, 0.110 against 0.253.) Chunks of equal length where one in [length, 2 length) divides the inner
// size (one batched call takes them all), else chunks of `length` and a shorter last one (a second call,
// after the first).
template <typename DType>
inline InnerChunks PlanInnerChunks(const expr::GemmCall<DType>& g, int sm_count) {
  InnerChunks plan;
  plan.length = plan.last = g.k;
  const index_t tiles = ResultTiles(g);
  const index_t wanted = (index_t(kChunkWaves) * sm_count + tiles - 1) / tiles;
  const index_t count = std::min(wanted, g.k / kMinChunkInner);
  // (A result large enough for partials to crowd the buffer already has tiles enough.)
  if (count < 2 || 2 * count * g.m * g.n > kSummedPartialElems) return plan;
  index_t length = ((g.k + count - 1) / count + kChunkAlign - 1) / kChunkAlign * kChunkAlign;
  for (index_t even = length; even < 2 * length && even < g.k; even += kChunkAlign)
    if (g.k % even == 0) {
      length = even;
      break;
    }
  // cuBLAS cannot see how a pointer array is aligned: split only where every matrix starts on 16 bytes.
  const auto aligned = [](index_t elems) { return elems * index_t(sizeof(DType)) % 16 == 0; };
  if (reinterpret_cast<uintptr_t>(g.a) % 16 != 0 || reinterpret_cast<uintptr_t>(g.b) % 16 != 0 ||
      !aligned(g.stride_a) || !aligned(g.stride_b) || !aligned(g.m * g.n) || !aligned(length * InnerStepA(g)) ||
      !aligned(length * InnerStepB(g)))
    return plan;
  plan.length = length;
  plan.count = (g.k + plan.length - 1) / plan.length;
  plan.last = g.k - (plan.count - 1) * plan.length;
  return plan;
}

// The matrices of products (image, chunk) = (i / chunks, i % chunks) for i < count: A and B start at the
// image's matrix plus `chunk` inner steps per chunk; C is partial image * per_image + chunk.
template <typename DType>
__global__ void ChunkPointersKernel(expr::GemmCall<DType> g, index_t chunks, index_t per_image, index_t chunk_a,
                                    index_t chunk_b, index_t count, const DType** a, const DType** b, DType** c) {
  for (index_t i = blockIdx.x * index_t(blockDim.x) + threadIdx.x; i < count; i += index_t(blockDim.x) * gridDim.x) {
    const index_t image = i / chunks, chunk = i % chunks;
    a[i] = g.a + image * g.stride_a + chunk * chunk_a;
    b[i] = g.b + image * g.stride_b + chunk * chunk_b;
    c[i] = g.c + (image * per_image + chunk) * g.stride_c;
  }
}

// The partials of g's products split as `plan` says, g.c the first of them (g.stride_c apart), image by
// image: partial n * plan.count + j is chunk j of image n. The chunks of full length run as one
// pointer-array call; a shorter last chunk of each image (where the chunks are not equal) as a second,
// strided call.
template <typename DType>
inline void ChunkedProducts(Stream<gpu>* s, const expr::GemmCall<DType>& g, const InnerChunks& plan, float alpha) {
  using Scale = compute_t<DType>;
  const cudaStream_t stream = Stream<gpu>::GetStream(s);
  cublasHandle_t handle = StreamOrDefault(s)->blas_handle();
  const index_t whole = plan.last == plan.length ? plan.count : plan.count - 1, count = g.batch * whole;
  const index_t chunk_a = plan.length * InnerStepA(g), chunk_b = plan.length * InnerStepB(g);
  cuda::TempBuffer pointers(3 * sizeof(void*) * static_cast<size_t>(count), stream);
  char* array = static_cast<char*>(pointers.get());
  const DType** a = reinterpret_cast<const DType**>(array);
  const DType** b = reinterpret_cast<const DType**>(array + sizeof(void*) * count);
  DType** c = reinterpret_cast<DType**>(array + 2 * sizeof(void*) * count);
  const unsigned blocks = static_cast<unsigned>(std::min<index_t>((count + 255) / 256, 1024));
  ChunkPointersKernel<<<blocks, 256, 0, stream>>>(g, whole, plan.count, chunk_a, chunk_b, count, a, b, c);
  TE_CUDA_CHECK_LAUNCH("gemm chunk pointers");
  expr::GemmCall<DType> chunks = g;
  chunks.k = plan.length, chunks.batch = count;
  GemmBatched(handle, chunks, a, b, c, static_cast<Scale>(alpha), static_cast<Scale>(0.0f));
  pointers.Release();
  if (whole == plan.count) return;
  expr::GemmCall<DType> last = g;
  last.k = plan.last, last.a += whole * chunk_a, last.b += whole * chunk_b;
  last.c += whole * g.stride_c, last.stride_c = plan.count * g.stride_c;
  Gemm(handle, last, static_cast<Scale>(alpha), static_cast<Scale>(0.0f));
}
}  // namespace cuda_blas

// The device call of GroupedGemm (gemm.h) on the GPU, on stream s: one cuBLAS (strided-batched) call.
// stride_c == 0 with batch > 1 sums the products into the one C (beta applies once), a weight gradient's
// sum over images: a batched call cannot write one C from every matrix, and one small gemm per matrix
// costs a launch each, so the products go to partial matrices, a batched call per slice of the batch
// (each product split along its inner size where the batch alone leaves the GPU idle: PlanInnerChunks),
// and a kernel adds them onto C in a fixed order (the same sums on every run on one model of GPU: the
// split follows its multiprocessor count). Only matrices too large for a useful slice run one by one.
// A batch of separate float or double products with less than one wave of tiles splits the same way,
// each product's partials summed onto its own C: winograd's weight gradient, one product per transform
// point over every tile of the images (strict fp32, ResNet-50's 3x3 layer at 56 x 56 with 64 channels,
// N = 32: 16 results of 64 x 64 over 25088 tiles). A single product is left to cuBLAS's own split: ours
// made channels-last 1x1 weight gradients at 28 x 28 and 14 x 14 slower (0.12 ms against 0.09, H200).
template <typename DType>
inline void BatchedGemm(Stream<gpu>* s, const expr::GemmCall<DType>& g, float alpha, float beta) {
  if (g.m == 0 || g.n == 0 || g.batch == 0) return;
  const int sm_count = cuda::CurrentDeviceInfo().sm_count;
  const bool summed = g.stride_c == 0 && g.batch > 1;
  const bool few = !summed && g.batch > 1 &&
                   (std::is_same<DType, float>::value || std::is_same<DType, double>::value) &&
                   cuda_blas::ResultTiles(g) < sm_count;
  const cuda_blas::InnerChunks chunks =
      summed || few ? cuda_blas::PlanInnerChunks(g, sm_count) : cuda_blas::InnerChunks{1, g.k, g.k};
  if (summed || chunks.count > 1) {
    const index_t size = g.m * g.n;
    const index_t per_image = size * chunks.count;
    const index_t slice = std::min<index_t>(g.batch, cuda_blas::kSummedPartialElems / std::max<index_t>(per_image, 1));
    expr::GemmCall<DType> part = g;
    if (slice <= 1) {  // a sum of matrices too large for two partials (a split never makes one)
      part.batch = 1;
      for (index_t b = 0; b < g.batch; ++b, part.a += g.stride_a, part.b += g.stride_b)
        BatchedGemm(s, part, alpha, b == 0 ? beta : 1.0f);
      return;
    }
    const cudaStream_t stream = Stream<gpu>::GetStream(s);
    cuda::TempBuffer partial(sizeof(DType) * static_cast<size_t>(slice * per_image), stream);
    part.c = static_cast<DType*>(partial.get()), part.ldc = g.m, part.stride_c = size;
    for (index_t b0 = 0; b0 < g.batch; b0 += slice) {
      part.a = g.a + b0 * g.stride_a, part.b = g.b + b0 * g.stride_b;
      part.batch = std::min(slice, g.batch - b0);
      if (chunks.count > 1) cuda_blas::ChunkedProducts(s, part, chunks, alpha);
      else BatchedGemm(s, part, alpha, 0.0f);
      if (summed)
        cuda::SumSlices(part.c, part.batch * chunks.count, size, g.m, g.ldc, b0 == 0 ? beta : 1.0f, g.c, stream);
      else  // each product's chunks onto its own C
        cuda::SumSlices(part.c, chunks.count, size, g.m, g.ldc, beta, g.c + b0 * g.stride_c, stream, part.batch,
                        g.stride_c);
    }
    partial.Release();
    return;
  }
  using Scale = compute_t<DType>;
  cuda_blas::Gemm(StreamOrDefault(s)->blas_handle(), g, static_cast<Scale>(alpha), static_cast<Scale>(beta));
}

}  // namespace tensorexpr
