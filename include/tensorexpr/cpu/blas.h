// cpu/blas.h — dot and batch_dot on the host through OpenBLAS (cblas_sgemm / dgemm, sgemv / dgemv).
// half_t and bf16_t go through float copies of the operands (OpenBLAS has no 16-bit gemm for them);
// a destination that overlaps an operand gets a private copy of that operand first. Also the device call
// of the grouped gemm (gemm.h), BatchedGemm.
#pragma once
#include <cstdio>
#include <cstdlib>
#include <string>
#include <type_traits>
#include <vector>
// OpenBLAS's header (it also declares openblas_set_num_threads) uses C99's _Complex, which clang flags under
// -Wpedantic in a C++ program that includes us: not ours to fix, so not ours to show.
#if defined(__clang__)
#pragma clang diagnostic push
#pragma clang diagnostic ignored "-Wc99-extensions"
#endif
#include <cblas.h>
#if defined(__clang__)
#pragma clang diagnostic pop
#endif
#include <climits>
#include "../expr/dot.h"
#include "../tensor_container.h"
#include "map.h"
#include "memory.h"
#include "device.h"
#include "threads.h"

namespace tensorexpr {
namespace cpu_blas {

// OpenBLAS runs its own threads; give it the library's thread count (cpu/threads.h), set only when it
// changed because the call reconfigures OpenBLAS's pool.
// OpenBLAS builds older than the CPU (Debian 12's 0.3.21 on Sapphire Rapids, say) fall back to their
// generic SSE3 "Prescott" kernels, 5-10x slower than the AVX2/AVX-512 ones. The kernel is chosen when the
// library loads, so all we can do is say so once, with the fix.
inline void WarnIfGenericKernel() {
  static const bool warned = [] {
#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
    const char* core = openblas_get_corename();
    if (core != nullptr && std::string(core) == "Prescott" && __builtin_cpu_supports("avx2") &&
        std::getenv("OPENBLAS_CORETYPE") == nullptr) {
      std::fprintf(stderr,
                   "tensorexpr: OpenBLAS did not recognise this CPU and uses its generic Prescott kernels; "
                   "set OPENBLAS_CORETYPE=%s (before the program starts) for the fast ones\n",
                   __builtin_cpu_supports("avx512f") ? "SkylakeX" : "Haswell");
    }
#endif
    return true;
  }();
  (void)warned;
}

// OpenBLAS runs single-threaded: the library splits each product into tiles over its own (OpenMP)
// threads (ParallelGemm below). Two thread pools on the same cores would spin against each other, and a
// small gemm per image threaded inside OpenBLAS spends more time waking threads than multiplying.
// Note the setting is process-wide: other OpenBLAS callers in the program also get one thread.
inline void UseOneBlasThread() {
  WarnIfGenericKernel();
  if (openblas_get_num_threads() != 1) openblas_set_num_threads(1);
}

// The CBLAS interface takes 32-bit sizes.
inline blasint Int(index_t v, const char* what) {
  TE_CHECK(v <= INT_MAX, "dot on the CPU: ", what, " = ", v, " exceeds the 32-bit size of the BLAS interface");
  return static_cast<blasint>(v);
}
inline CBLAS_TRANSPOSE Op(bool trans) { return trans ? CblasTrans : CblasNoTrans; }

inline void Gemv(const expr::GemvCall<float>& v, float alpha, float beta) {
  cblas_sgemv(CblasColMajor, Op(v.trans), Int(v.rows, "rows"), Int(v.cols, "cols"), alpha, v.a, Int(v.lda, "lda"),
              v.x, Int(v.incx, "incx"), beta, v.y, Int(v.incy, "incy"));
}
inline void Gemv(const expr::GemvCall<double>& v, double alpha, double beta) {
  cblas_dgemv(CblasColMajor, Op(v.trans), Int(v.rows, "rows"), Int(v.cols, "cols"), alpha, v.a, Int(v.lda, "lda"),
              v.x, Int(v.incx, "incx"), beta, v.y, Int(v.incy, "incy"));
}
inline void Gemm(const expr::GemmCall<float>& g, float alpha, float beta) {
  cblas_sgemm(CblasColMajor, Op(g.trans_a), Op(g.trans_b), Int(g.m, "m"), Int(g.n, "n"), Int(g.k, "k"), alpha, g.a,
              Int(g.lda, "lda"), g.b, Int(g.ldb, "ldb"), beta, g.c, Int(g.ldc, "ldc"));
}
inline void Gemm(const expr::GemmCall<double>& g, double alpha, double beta) {
  cblas_dgemm(CblasColMajor, Op(g.trans_a), Op(g.trans_b), Int(g.m, "m"), Int(g.n, "n"), Int(g.k, "k"), alpha, g.a,
              Int(g.lda, "lda"), g.b, Int(g.ldb, "ldb"), beta, g.c, Int(g.ldc, "ldc"));
}

// One matrix: gemv when a single output row or column makes it one, else gemm.
template <typename DType>
inline void RunOne(const expr::GemmCall<DType>& g, DType alpha, DType beta) {
  expr::GemvCall<DType> v;
  if (expr::AsGemv(g, &v)) {
    Gemv(v, alpha, beta);
  } else {
    Gemm(g, alpha, beta);
  }
}

// Every matrix of the (column-major, strided-batched) call, threaded by the library: the work is cut
// into units of one tile of one output matrix, each computed by single-threaded BLAS with the full inner
// dimension. A batch of outputs gives one unit per matrix once there are at least as many matrices as
// threads; fewer matrices are cut into column (or row) tiles until every thread has one.
// stride_c == 0 with batch > 1 sums the batch's products into the one C (beta applies once): each tile
// loops over the batch, so threads never share an output element and need no partial copies.
template <typename DType>
inline void ParallelGemm(const expr::GemmCall<DType>& g, DType alpha, DType beta) {
  if (g.m == 0 || g.n == 0 || g.batch == 0) return;
  UseOneBlasThread();
  const bool summed = g.batch > 1 && g.stride_c == 0;
  const index_t outputs = summed ? 1 : g.batch, terms = summed ? g.batch : 1;
  const index_t threads = GetNumThreads();
  // Split the longer side of C, in multiples of the BLAS micro-kernel's register tile.
  const bool split_cols = g.n >= g.m;
  const index_t extent = split_cols ? g.n : g.m, align = split_cols ? 4 : 16;
  const index_t wanted = outputs >= threads ? 1 : (threads + outputs - 1) / outputs;
  const index_t tiles_max = std::max<index_t>(1, std::min(wanted, extent / align));
  const index_t tile = (extent + tiles_max - 1) / tiles_max;
  const index_t tiles = (extent + tile - 1) / tile;
  const index_t unit_cost = g.m * g.n / tiles * std::max<index_t>(g.k, 1) * terms;
  ParallelFor(outputs * tiles, unit_cost, [&](index_t begin, index_t end) {
    for (index_t u = begin; u < end; ++u) {
      const index_t out = u / tiles, lo = (u % tiles) * tile, len = std::min(tile, extent - lo);
      for (index_t t = 0; t < terms; ++t) {
        const index_t b = summed ? t : out;
        expr::GemmCall<DType> one = g;
        one.batch = 1;
        one.a += b * g.stride_a;
        one.b += b * g.stride_b;
        one.c += summed ? 0 : b * g.stride_c;
        if (split_cols) {  // columns [lo, lo + len) of C and of op(B)
          one.n = len;
          one.b += lo * (g.trans_b ? 1 : g.ldb);
          one.c += lo * g.ldc;
        } else {  // rows [lo, lo + len) of C and of op(A)
          one.m = len;
          one.a += lo * (g.trans_a ? g.lda : 1);
          one.c += lo;
        }
        RunOne(one, alpha, t == 0 ? beta : DType(1));
      }
    }
  });
}

// A contiguous private copy of an operand, for a destination that overlaps it.
template <int dim, typename DType>
inline TensorContainer<cpu, dim, DType> PrivateCopy(const Tensor<cpu, dim, DType>& t) {
  TensorContainer<cpu, dim, DType> c(t.shape_);
  Copy(c.view(), t);
  return c;
}

// dst Saver= e for E = DotExp or BatchDotExp over host tensors, shape already checked.
template <typename Saver, int dim, typename DType, typename E>
inline void ProductInto(Tensor<cpu, dim, DType> dst, const E& e) {
  if (dst.shape_.Size() == 0) return;
  if (e.inner() == 0) {  // an empty sum: BLAS may not be called with k = 0 on every library
    if (std::is_same<Saver, sv::saveto>::value) dst = DType(0);
    return;
  }
  if constexpr (is_low_precision<DType>::value) {
    // Float copies of the operands, a float product, then one rounding while the saver stores it.
    TensorContainer<cpu, E::kDim, float> product(dst.shape_);
    TensorContainer<cpu, decltype(e.lhs_)::kDim, float> a;
    TensorContainer<cpu, decltype(e.rhs_)::kDim, float> b;
    a = expr::tcast<float>(e.lhs_);
    b = expr::tcast<float>(e.rhs_);
    ProductInto<sv::saveto>(product.view(), e.Rebind(a.view(), b.view(), e.scale_));
    EvalInto<Saver>(dst, expr::tcast<DType>(product.view()));
  } else {
    // BLAS reads the operands while it writes the destination: they must not share memory.
    const bool lhs_aliased = expr::MemoryOverlaps(dst, e.lhs_), rhs_aliased = expr::MemoryOverlaps(dst, e.rhs_);
    if (lhs_aliased || rhs_aliased) {
      TensorContainer<cpu, decltype(e.lhs_)::kDim, DType> a;
      TensorContainer<cpu, decltype(e.rhs_)::kDim, DType> b;
      if (lhs_aliased) a = PrivateCopy(e.lhs_);
      if (rhs_aliased) b = PrivateCopy(e.rhs_);
      ProductInto<Saver>(dst, e.Rebind(lhs_aliased ? a.view() : e.lhs_, rhs_aliased ? b.view() : e.rhs_, e.scale_));
      return;
    }
    const DType alpha = e.scale_ * static_cast<DType>(Saver::kAlphaBLAS);
    ParallelGemm(expr::MakeGemmCall(dst, e), alpha, static_cast<DType>(Saver::kBetaBLAS));
  }
}

// One column-major call of 16-bit storage, accumulated in float: each thread owns whole columns of C
// (contiguous in memory) and keeps a float accumulator column. (OpenBLAS has no half / bf16 gemm, and
// float copies of every image's operands would cost more memory traffic than this loop.)
template <typename DType>
void LowPrecisionGemm(const expr::GemmCall<DType>& g, float alpha, float beta) {
  ParallelFor(g.n, g.m * g.k, [&](index_t begin, index_t end) {
    std::vector<float> acc(static_cast<size_t>(g.m));
    for (index_t j = begin; j < end; ++j) {
      std::fill(acc.begin(), acc.end(), 0.0f);
      for (index_t k = 0; k < g.k; ++k) {
        const float b = static_cast<float>(g.trans_b ? g.b[j + k * g.ldb] : g.b[k + j * g.ldb]);
        if (g.trans_a) {
          for (index_t i = 0; i < g.m; ++i) acc[i] += static_cast<float>(g.a[k + i * g.lda]) * b;
        } else {
          const DType* column = g.a + k * g.lda;
          for (index_t i = 0; i < g.m; ++i) acc[i] += static_cast<float>(column[i]) * b;
        }
      }
      DType* out = g.c + j * g.ldc;
      for (index_t i = 0; i < g.m; ++i) {
        const float prev = beta == 0.0f ? 0.0f : beta * static_cast<float>(out[i]);  // beta 0 never reads C
        out[i] = static_cast<DType>(alpha * acc[i] + prev);
      }
    }
  });
}

}  // namespace cpu_blas

namespace expr {

// dst = / += / -= [alpha *] dot(a, b) on the CPU.
template <typename Saver, int dim, typename DType, typename TA, typename TB, bool lt, bool rt>
inline void EvalInto(Tensor<cpu, dim, DType> dst, const DotExp<TA, TB, lt, rt, DType>& e) {
  const StreamThreadScope threads(dst.stream_);  // the stream's thread budget
  if constexpr (check_product_assignment<Saver, cpu, dim, DotExp<TA, TB, lt, rt, DType>>::value) {
    CheckProductDestination<Saver>(dst, e);
    cpu_blas::ProductInto<Saver>(dst, e);
  }
}

// dst = / += / -= [alpha *] batch_dot<ta, tb>(a, b) on the CPU.
template <typename Saver, int dim, typename DType, typename TA, typename TB, bool lt, bool rt>
inline void EvalInto(Tensor<cpu, dim, DType> dst, const BatchDotExp<TA, TB, lt, rt, DType>& e) {
  const StreamThreadScope threads(dst.stream_);  // the stream's thread budget
  if constexpr (check_product_assignment<Saver, cpu, dim, BatchDotExp<TA, TB, lt, rt, DType>>::value) {
    CheckProductDestination<Saver>(dst, e);
    cpu_blas::ProductInto<Saver>(dst, e);
  }
}

}  // namespace expr
// The device call of GroupedGemm (gemm.h) on the CPU, on the stream's threads: float and double through
// ParallelGemm, half_t and bf16_t through the float-accumulating loop. stride_c == 0 with batch > 1 sums
// the products into the one C (beta applies once).
template <typename DType>
inline void BatchedGemm(Stream<cpu>* s, const expr::GemmCall<DType>& g, float alpha, float beta) {
  const StreamThreadScope threads(s);
  if (g.m == 0 || g.n == 0 || g.batch == 0) return;
  if constexpr (std::is_same<DType, float>::value || std::is_same<DType, double>::value) {
    cpu_blas::ParallelGemm(g, DType(alpha), DType(beta));
  } else {
    static_assert(is_low_precision<DType>::value, "BatchedGemm supports float, double, half_t and bf16_t");
    for (index_t b = 0; b < g.batch; ++b) {
      expr::GemmCall<DType> one = g;
      one.batch = 1;
      one.a += b * g.stride_a, one.b += b * g.stride_b, one.c += b * g.stride_c;
      cpu_blas::LowPrecisionGemm(one, alpha, b > 0 && g.stride_c == 0 ? 1.0f : beta);
    }
  }
}

}  // namespace tensorexpr
