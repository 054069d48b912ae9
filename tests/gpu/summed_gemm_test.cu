// GPU-only cases for the split products of the grouped gemm (cuda/blas.cuh): when PlanInnerChunks splits a
// product's inner size and into what, a product whose matrices would not start on 16 bytes kept whole (and
// still right), half and bf16 partials against float64, and a batch of separate products of a few tiles
// (winograd's weight gradient), each split and summed onto its own result. The float forms of the summed
// call are in ../dot_test.cc.
#include <cmath>
#include <cstdint>
#include <vector>
#include "../test_util.h"

using namespace tensorexpr;
using te_test::ToHost;

namespace {

// A column-major call as the grouped gemm builds it for an NCHW weight gradient: dW (m x n) summed over
// `batch` images of k pixels, A transposed, at fake addresses (the plan only reads their alignment).
expr::GemmCall<float> WeightGradCall(index_t m, index_t n, index_t k, index_t batch, uintptr_t a_at = 256) {
  expr::GemmCall<float> g;
  g.m = m, g.n = n, g.k = k, g.batch = batch;
  g.trans_a = true, g.lda = k, g.stride_a = m * k;
  g.ldb = k, g.stride_b = n * k;
  g.a = reinterpret_cast<const float*>(a_at), g.b = reinterpret_cast<const float*>(uintptr_t(1) << 20);
  g.ldc = m;
  return g;
}

void CheckPlanCovers(const cuda_blas::InnerChunks& plan, index_t k) {
  CHECK(plan.count >= 2);
  CHECK(plan.length % cuda_blas::kChunkAlign == 0);
  CHECK(plan.length >= cuda_blas::kMinChunkInner);
  CHECK(0 < plan.last);
  CHECK(plan.last <= plan.length);
  CHECK((plan.count - 1) * plan.length + plan.last == k);
}

}  // namespace

TEST_CASE("summed gemm: a few images of a small result split their inner size; the rest stay whole", "[gpu][dot]") {
  TE_REQUIRE_GPU();
  const int sms = cuda::CurrentDeviceInfo().sm_count;
  // ResNet-50's 1x1 layer at 56 x 56, 64 channels each side, N = 32: 32 tiles.
  const auto small = WeightGradCall(64, 64, 3136, 32);
  const cuda_blas::InnerChunks plan = cuda_blas::PlanInnerChunks(small, sms);
  if (2 * sms > 32) CheckPlanCovers(plan, 3136);
  // 2^14: a power of two lies in [length, 2 length) and divides it, so the chunks are equal.
  const auto even = WeightGradCall(64, 64, 16384, 8);
  if (2 * sms > 8) {
    CheckPlanCovers(cuda_blas::PlanInnerChunks(even, sms), 16384);
    CHECK(cuda_blas::PlanInnerChunks(even, sms).last == cuda_blas::PlanInnerChunks(even, sms).length);
  }
  // An inner size that no multiple of 32 divides: a shorter last chunk.
  const auto odd = WeightGradCall(64, 64, 3000, 4);
  CheckPlanCovers(cuda_blas::PlanInnerChunks(odd, sms), 3000);
  CHECK(cuda_blas::PlanInnerChunks(odd, sms).last < cuda_blas::PlanInnerChunks(odd, sms).length);
  // Whole: a result of many tiles, a short inner size, a matrix off its 16 bytes.
  CHECK(cuda_blas::PlanInnerChunks(WeightGradCall(1024, 1024, 3136, 32), sms).count == 1);
  CHECK(cuda_blas::PlanInnerChunks(WeightGradCall(64, 64, 500, 2), sms).count == 1);
  CHECK(cuda_blas::PlanInnerChunks(WeightGradCall(64, 64, 3136, 32, 260), sms).count == 1);
}

// dC = sum over images of A_n B_n^T (A_n m x k row-major, B_n n x k), at an offset of `shift` elements
// (1: off its 16 bytes, kept whole), against float64; eighths in [-1, 1] as inputs.
template <typename DType>
void CheckSummed(index_t shift, double tol) {
  const index_t M = 8, N = 8, K = 2048, images = 3;
  std::vector<double> a(size_t(shift + images * M * K)), b(size_t(images * N * K));
  uint32_t x = 12345;
  auto next = [&x] {
    x = x * 1664525u + 1013904223u;
    return double(int(x >> 24) % 17 - 8) / 8.0;
  };
  for (double& v : a) v = next();
  for (double& v : b) v = next();
  TensorContainer<cpu, 1, DType> ha(Shape1(index_t(a.size()))), hb(Shape1(index_t(b.size())));
  for (size_t i = 0; i < a.size(); ++i) ha.dptr_[i] = DType(float(a[i]));
  for (size_t i = 0; i < b.size(); ++i) hb.dptr_[i] = DType(float(b[i]));
  TensorContainer<gpu, 1, DType> da(ha.shape_), db(hb.shape_), dc(Shape1(M * N));
  Copy(da.view(), ha.view());
  Copy(db.view(), hb.view());
  GroupedGemm<gpu, DType>(nullptr, M, N, K, 1.0f, GemmOperand<const DType>{da.dptr_ + shift, K, M * K, 0},
                          Transposed(GemmOperand<const DType>{db.dptr_, K, N * K, 0}), 0.0f,
                          GemmOperand<DType>{dc.dptr_, N, 0, 0}, images, 1, GemmSum::kSeparate);
  const auto got = ToHost(dc.view());
  for (index_t i = 0; i < M; ++i)
    for (index_t j = 0; j < N; ++j) {
      double sum = 0, scale = 0;
      for (index_t n = 0; n < images; ++n)
        for (index_t k = 0; k < K; ++k) {
          const double t = a[size_t(shift + (n * M + i) * K + k)] * b[size_t((n * N + j) * K + k)];
          sum += t, scale += std::fabs(t);
        }
      if (tol == 0) CHECK(double(float(got[i * N + j])) == sum);
      else CHECK(double(float(got[i * N + j])) == Approx(sum).margin(tol * scale));
    }
}

TEST_CASE("summed gemm: split or whole, float, half and bf16 against float64", "[gpu][dot]") {
  TE_REQUIRE_GPU();
  for (index_t shift : {0, 1}) {
    INFO("operand offset " << shift << " elements");
    CheckSummed<float>(shift, 0.0);  // eighths: every sum is exact in float
    CheckSummed<half_t>(shift, 2e-3);
    CheckSummed<bf16_t>(shift, 1.6e-2);
  }
}

// C_n = alpha A_n B_n + beta C_n for `batch` separate products (A_n m x k, B_n k x n, row-major) of one
// tile each over a long inner size: split, each product's chunks summed onto its own C_n, against
// float64. Eighths in [-1, 1]: every partial and sum is exact in float, whatever the split.
template <typename DType>
void CheckSeparate(index_t K) {
  const index_t M = 8, N = 12, batch = 5;
  const float alpha = 0.75f, beta = 0.5f;
  uint32_t x = 777;
  auto next = [&x] {
    x = x * 1664525u + 1013904223u;
    return double(int(x >> 24) % 17 - 8) / 8.0;
  };
  std::vector<double> a(size_t(batch * M * K)), b(size_t(batch * K * N)), c(size_t(batch * M * N));
  for (std::vector<double>* v : {&a, &b, &c})
    for (double& e : *v) e = next();
  auto device = [](const std::vector<double>& v) {
    TensorContainer<cpu, 1, DType> h(Shape1(index_t(v.size())));
    for (size_t i = 0; i < v.size(); ++i) h.dptr_[i] = DType(v[i]);
    TensorContainer<gpu, 1, DType> d(h.shape_);
    Copy(d.view(), h.view());
    return d;
  };
  TensorContainer<gpu, 1, DType> da = device(a), db = device(b), dc = device(c);
  GroupedGemm<gpu, DType>(nullptr, M, N, K, alpha, GemmOperand<const DType>{da.dptr_, K, M * K, 0},
                          GemmOperand<const DType>{db.dptr_, N, K * N, 0}, beta,
                          GemmOperand<DType>{dc.dptr_, N, M * N, 0}, batch, 1);
  const auto got = ToHost(dc.view());
  for (index_t n = 0; n < batch; ++n)
    for (index_t i = 0; i < M; ++i)
      for (index_t j = 0; j < N; ++j) {
        double sum = 0;
        for (index_t k = 0; k < K; ++k) sum += a[size_t((n * M + i) * K + k)] * b[size_t((n * K + k) * N + j)];
        const double want = alpha * sum + beta * c[size_t((n * M + i) * N + j)];
        CHECK(double(got[(n * M + i) * N + j]) == want);
      }
}

TEST_CASE("batched gemm: separate products of a few tiles split their inner size, each onto its own result",
          "[gpu][dot]") {
  TE_REQUIRE_GPU();
  const int sms = cuda::CurrentDeviceInfo().sm_count;
  // 5 separate results of one tile each over 3000 (uneven chunks) or 2048 (equal chunks): fewer tiles than
  // multiprocessors, so each splits.
  for (index_t k : {index_t(3000), index_t(2048)}) {
    expr::GemmCall<float> g = WeightGradCall(12, 8, k, 5);
    g.stride_c = 96;
    CHECK(cuda_blas::ResultTiles(g) < sms);
    CheckPlanCovers(cuda_blas::PlanInnerChunks(g, sms), k);
    INFO("inner size " << k);
    CheckSeparate<float>(k);
    CheckSeparate<double>(k);
  }
}
