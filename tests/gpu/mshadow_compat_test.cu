// The GPU side of <tensorexpr/mshadow.h> (tests/mshadow_compat_test.cc is the CPU suite): mshadow's
// reduce_with_axis<Reducer, true> (the index the reducer settles on) as a GPU kernel, Copy without a
// stream, which returns once the data is there, NewStream's blocking streams, and the MXNet-style convolution of
// tests/mshadow_conv_op-inl.h, the file the CPU suite instantiates for cpu, here for gpu. Catch2 is included first, so CHECK is Catch's here (the
// mshadow logging macros define themselves only where nothing did).
#include <cmath>
#include <random>
#include "../test_util.h"
#include <tensorexpr/mshadow.h>
#include "../mshadow_conv_check.h"

namespace {

// out(o, i) = the first k at which a(o, k, i) reaches its maximum (or minimum), as a naive loop.
template <bool kMax>
int FirstExtreme(const tensorexpr::TensorContainer<tensorexpr::cpu, 3, float>& a, tensorexpr::index_t o,
                 tensorexpr::index_t i) {
  int best = 0;
  for (tensorexpr::index_t k = 1; k < a.shape_[1]; ++k) {
    const float v = a[o][k][i], b = a[o][best][i];
    if (kMax ? v > b : v < b) best = int(k);
  }
  return best;
}

}  // namespace

TEST_CASE("mshadow on the GPU: reduce_with_axis<Reducer, true> gives the argmax / argmin, Copy waits",
          "[gpu][mshadow]") {
  // nvcc compiles this file: the GPU backend is in, so code under `#if MSHADOW_USE_CUDA` compiles.
  STATIC_REQUIRE(MSHADOW_USE_CUDA == 1);
  TE_REQUIRE_GPU();
  namespace ms = mshadow;
  using tensorexpr::index_t;
  const index_t O = 3, K = 37, I = 5;
  tensorexpr::TensorContainer<tensorexpr::cpu, 3, float> h(tensorexpr::Shape3(O, K, I));
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> small(-4, 4);  // few values: many ties, the first one must win
  for (index_t n = 0; n < h.shape_.Size(); ++n) h.dptr_[n] = float(small(rng));
  ms::TensorContainer<ms::gpu, 3, float> d(h.shape_);
  ms::Copy(d.view(), h.view());  // waits: h may change right after
  ms::TensorContainer<ms::gpu, 2, float> argmax(tensorexpr::Shape2(O, I)), argmin(tensorexpr::Shape2(O, I));
  argmax = ms::expr::reduce_with_axis<ms::red::maximum, true>(d.view(), 1);
  argmin = ms::expr::reduce_with_axis<ms::red::minimum, true>(d.view(), 1);
  tensorexpr::TensorContainer<tensorexpr::cpu, 2, float> got_max(argmax.shape_), got_min(argmin.shape_);
  ms::Copy(got_max.view(), argmax.view());
  ms::Copy(got_min.view(), argmin.view());
  for (index_t o = 0; o < O; ++o)
    for (index_t i = 0; i < I; ++i) {
      INFO("o " << o << " i " << i);
      CHECK(got_max[o][i] == float(FirstExtreme<true>(h, o, i)));
      CHECK(got_min[o][i] == float(FirstExtreme<false>(h, o, i)));
    }
}

namespace {
// Spins for about `cycles` clock cycles, then writes `value`: slow enough that a copy not ordered after
// it would read the old value.
__global__ void WriteLate(int* out, int value, long long cycles) {
  const long long start = clock64();
  while (clock64() - start < cycles) {
  }
  *out = value;
}
}  // namespace

TEST_CASE("mshadow on the GPU: NewStream's streams are blocking, as mshadow's were; tensorexpr's are not",
          "[gpu][mshadow]") {
  TE_REQUIRE_GPU();
  namespace ms = mshadow;
  ms::Stream<ms::gpu>* blocking = ms::NewStream<ms::gpu>(false, false);
  ms::Stream<ms::gpu>* own = tensorexpr::NewStream<tensorexpr::gpu>(false, false);
  unsigned flags = 0;
  REQUIRE(cudaStreamGetFlags(blocking->stream(), &flags) == cudaSuccess);
  CHECK(flags == cudaStreamDefault);
  REQUIRE(cudaStreamGetFlags(own->stream(), &flags) == cudaSuccess);
  CHECK(flags == cudaStreamNonBlocking);
  // mshadow code may read a kernel's result on such a stream with a plain cudaMemcpy (the legacy stream),
  // as mshadow's test_random_gpu.cu does: the copy waits for the kernel.
  int* d = nullptr;
  REQUIRE(cudaMalloc(&d, sizeof(int)) == cudaSuccess);
  REQUIRE(cudaMemset(d, 0, sizeof(int)) == cudaSuccess);
  WriteLate<<<1, 1, 0, blocking->stream()>>>(d, 42, 20000000);  // ~10 ms
  int h = 0;
  REQUIRE(cudaMemcpy(&h, d, sizeof(int), cudaMemcpyDeviceToHost) == cudaSuccess);
  CHECK(h == 42);
  REQUIRE(cudaFree(d) == cudaSuccess);
  ms::DeleteStream(blocking);
  tensorexpr::DeleteStream(own);
}

TEST_CASE("mshadow on the GPU: the MXNet-style convolution operator (-inl.h shared with the .cc) matches a naive "
          "convolution", "[gpu][mshadow]") {
  TE_REQUIRE_GPU();
  mxnet_style::ConvParam p;
  p.kernel_y = 3, p.kernel_x = 2, p.stride_y = 2, p.stride_x = 1, p.dilate_y = 1, p.dilate_x = 2;
  p.pad_y = 1, p.pad_x = 1, p.num_filter = 6, p.num_group = 2;
  for (auto req : {mxnet_style::kWriteTo, mxnet_style::kAddTo, mxnet_style::kNullOp, mxnet_style::kWriteInplace}) {
    INFO("req " << int(req));
    const auto e = mshadow_conv_check::RunConvCase<mshadow::gpu>(p, 3, 4, 7, 6, req, te_test::Seed());
    CHECK(e.out < 1e-5);
    CHECK(e.grad_data < 1e-5);
    CHECK(e.grad_weight < 1e-5);
    CHECK(e.grad_bias < 1e-5);
  }
}
