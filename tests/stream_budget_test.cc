// The CPU stream's thread budget: evaluation for a stream's tensors keeps to its num_threads(), the
// convolution describes its problem with it, scopes nest and restore, and a bad count is an Error.
#include <algorithm>
#include <atomic>
#include <vector>
#include "test_util.h"
#include <tensorexpr/ops/convolution.h>
#ifdef _OPENMP
#include <omp.h>
#endif

namespace {
using namespace te_test;
using namespace tensorexpr::expr;

// The highest OpenMP thread number that evaluated an element since the last reset.
std::atomic<int> highest_thread{-1};
struct record_thread {
  template <typename DType>
  static DType Map(DType x) {
#ifdef _OPENMP
    const int t = omp_get_thread_num();
#else
    const int t = 0;
#endif
    int seen = highest_thread.load();
    while (t > seen && !highest_thread.compare_exchange_weak(seen, t)) {
    }
    return x;
  }
};

TEST_CASE("a CPU stream's thread budget bounds the threads its evaluation uses", "[cpu][stream]") {
  Stream<cpu> stream;
  CHECK(stream.num_threads() == 0);
  CHECK(ThreadBudget(&stream) == GetNumThreads());
  stream.set_num_threads(1);
  CHECK(ThreadBudget(&stream) == 1);

  // Work far above the serial cutoff: without a budget it would be dealt out to every thread.
  TensorContainer<cpu, 2, float> a(Shape2(512, 1024)), b(Shape2(512, 1024));
  FillRandom(a);
  a.set_stream(&stream);
  b.set_stream(&stream);
  highest_thread = -1;
  b = F<record_thread>(a) * 2.0f;
  CHECK(highest_thread.load() == 0);
  CHECK(b[511][1023] == a[511][1023] * 2.0f);

  // Reductions and gemm on the stream keep to it too; the results do not depend on the budget.
  TensorContainer<cpu, 1, float> sums(Shape1(1024)), sums_ref(Shape1(1024));
  sums.set_stream(&stream);
  sums = sumall_except_dim<1>(a);
  TensorContainer<cpu, 2, float> c(Shape2(512, 512));
  c.set_stream(&stream);
  c = dot(a, a.T());
  Stream<cpu> wide;
  Tensor<cpu, 2, float> aw(a.dptr_, a.shape_, a.stride_, &wide);
  TensorContainer<cpu, 2, float> cw(Shape2(512, 512));
  cw = dot(aw, aw.T());
  sums_ref = sumall_except_dim<1>(aw);
  for (index_t i = 0; i < 512; i += 37) CHECK(c[i][(i * 7) % 512] == Approx(cw[i][(i * 7) % 512]).epsilon(1e-5));
  for (index_t i = 0; i < 1024; i += 41) CHECK(sums[i] == Approx(sums_ref[i]).epsilon(1e-5));
}

TEST_CASE("the convolution runs under its stream's thread budget", "[cpu][stream]") {
  Stream<cpu> stream;
  stream.set_num_threads(1);
  ops::ConvolutionParam p;
  p.kernel = {3, 3};
  p.pad = {1, 1};
  p.num_filter = 8;
  const ops::ConvGeometry g = ops::MakeConvGeometry(p, {4, 6, 12, 12});
  CHECK(ops::MakeConvProblem<cpu, float>(g, &stream, true, p.workspace).threads == 1);

  std::vector<std::string> log;
  ops::ReleaseConvCaches<cpu>();
  ops::SetConvLog([&](const std::string& line) { log.push_back(line); });
  TensorContainer<cpu, 4, float> x(Shape4(4, 6, 12, 12)), w(Shape4(8, 6, 3, 3)), y(Shape4(4, 8, 12, 12));
  TensorContainer<cpu, 4, float> y_default(y.shape_);
  TensorContainer<cpu, 1, float> bias(Shape1(8));
  FillRandom(x);
  FillRandom(w);
  FillRandom(bias);
  y.set_stream(&stream);
  ops::ConvolutionForward(p, x, w, bias, kWriteTo, y);
  ops::ConvolutionForward(p, x, w, bias, kWriteTo, y_default);
  ops::SetConvLog(nullptr);
  REQUIRE(log.size() == 2);  // two problems: they differ in the threads they may use
  CHECK(log[0].find(" threads1 ") != std::string::npos);
  CHECK(log[1].find(" threads" + std::to_string(GetNumThreads()) + " ") != std::string::npos);
  for (index_t i = 0; i < y.shape_.Size(); i += 97)
    CHECK(y.dptr_[i] == Approx(y_default.dptr_[i]).epsilon(1e-5));
  ops::ReleaseConvCaches<cpu>();
}

TEST_CASE("thread limits nest, only narrow, and restore; a negative budget is an Error", "[cpu][stream]") {
  const int outside = GetNumThreads();
  {
    const ScopedThreadLimit two(2);
    CHECK(GetNumThreads() == 2);
    {
      const ScopedThreadLimit none(0);  // 0 adds no limit of its own
      CHECK(GetNumThreads() == 2);
      const ScopedThreadLimit one(1);
      CHECK(GetNumThreads() == 1);
      const ScopedThreadLimit wider(8);  // a nested scope only narrows
      CHECK(GetNumThreads() == 1);
    }
    CHECK(GetNumThreads() == 2);
  }
  CHECK(GetNumThreads() == outside);
  Stream<cpu> stream;
  CHECK_THROWS_AS(stream.set_num_threads(-1), Error);
  CHECK_THROWS_WITH(stream.set_num_threads(-1), Catch::Contains("thread count >= 0"));
  CHECK(stream.num_threads() == 0);
}

}  // namespace
