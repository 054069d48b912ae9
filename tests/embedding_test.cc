// embedding_test.cc — the Embedding operator (ops/embedding.h) against a float64 reference on fresh random
// indices and weights: data of rank 1 to 4, int32 / int64 / float indices, every weight dtype, padded weight
// and output rows, every req, repeated indices; mode clip (out of range, fractional, NaN) and mode raise;
// the weight gradient by central differences and the adjoint identity in double, and run to run
// determinism; errors name the bad parameter. The ONNX oracle's Gather cases are in onnx_oracle_test.cc.
#include "ops_test_util.h"
#include <tensorexpr/ops/embedding.h>

namespace {
using namespace te_test;
using ops::EmbeddingMode;

// The row an index value picks: truncated toward zero, clipped to [0, K), NaN to 0.
index_t RefRow(double v, index_t K) {
  if (!(v >= 1)) return 0;
  return v >= double(K) ? K - 1 : index_t(v);
}

// Index values: in range (integers, and for float fractions and values in (-1, 0) that truncate to 0), or
// also beyond both ends (and NaN for float) when `outside`. Each value repeats often (few rows, many picks).
template <int idim, typename IType>
TensorContainer<cpu, idim, IType> RandomIndices(const Shape<idim>& s, index_t K, bool outside) {
  TensorContainer<cpu, idim, IType> t(s);
  std::uniform_int_distribution<index_t> row(outside ? -3 : 0, outside ? K + 2 : K - 1);
  for (index_t i = 0; i < s.Size(); ++i) {
    const index_t r = row(Rng());
    if constexpr (std::is_floating_point<IType>::value) {
      const double frac = i % 3 == 1 ? 0.75 : 0.0;
      t.dptr_[i] = IType(r == 0 && i % 4 == 2 ? -0.5 : double(r) + frac);
      if (outside && i == 1) t.dptr_[i] = std::numeric_limits<IType>::quiet_NaN();
    } else {
      t.dptr_[i] = IType(r);
    }
  }
  return t;
}

template <typename Device, int idim, typename IType, typename DType>
void RunEmbedding(Stream<Device>* stream, const Shape<idim>& dshape, index_t K, index_t D, EmbeddingMode mode,
                  bool outside, bool padded, OpReqType req) {
  ops::EmbeddingParam p;
  p.input_dim = K;
  p.output_dim = D;
  p.mode = mode;
  const Shape<idim + 1> oshape = ops::InferEmbeddingShape(p, dshape);
  INFO("data " << dshape << " input_dim " << K << " output_dim " << D << " mode " << ops::EmbeddingModeName(mode)
               << " padded " << padded << " req " << OpReqName(req) << " index " << DataType<IType>::name()
               << " dtype " << DataType<DType>::name());
  auto ih = RandomIndices<idim, IType>(dshape, K, outside);
  auto wh = Uniform<2, DType>(Shape2(K, D));
  auto dyh = Uniform<idim + 1, DType>(oshape);
  TensorContainer<cpu, idim + 1, DType> yh(oshape);
  TensorContainer<cpu, 2, DType> dwh(Shape2(K, D));
  const Vec idx = ToVec(ih.view()), w = ToVec(wh.view()), dy = ToVec(dyh.view());
  const Vec y0 = Prefill(yh.view(), req), dw0 = Prefill(dwh.view(), req);
  Vec y(dy.size()), dw(w.size(), 0.0);
  for (size_t i = 0; i < idx.size(); ++i) {
    const size_t r = size_t(RefRow(idx[i], K));
    for (size_t d = 0; d < size_t(D); ++d) {
      y[i * size_t(D) + d] = w[r * size_t(D) + d];
      dw[r * size_t(D) + d] += dy[i * size_t(D) + d];
    }
  }
  auto id = Dev<Device>(ih.view(), stream);
  auto wd = Dev<Device>(wh.view(), stream, padded), dwd = Dev<Device>(dwh.view(), stream, padded);
  auto yd = Dev<Device>(yh.view(), stream, padded), dyd = Dev<Device>(dyh.view(), stream, padded);
  ops::EmbeddingForward(p, id.view(), wd.view(), req, yd.view());
  CheckVec(ToHost(yd.view()).view(), Expect(req, y0, y), req == kAddTo ? Tol<DType>() : 0, "forward");  // a copy
  ops::EmbeddingBackward(p, dyd.view(), id.view(), req, dwd.view());
  CheckVec(ToHost(dwd.view()).view(), Expect(req, dw0, dw), 8 * Tol<DType>(), "backward (weight)");
}

TE_DEVICE_TEST_CASE("Embedding matches the float64 reference", "[ops][embedding]") {
  for (OpReqType req : kAllReqs) {
    RunEmbedding<Device, 2, int32_t, float>(stream, Shape2(3, 4), 5, 6, EmbeddingMode::kClip, false, true, req);
    RunEmbedding<Device, 1, float, double>(stream, Shape1(40), 7, 3, EmbeddingMode::kRaise, false, false, req);
  }
  for (EmbeddingMode mode : {EmbeddingMode::kClip, EmbeddingMode::kRaise}) {
    const bool outside = mode == EmbeddingMode::kClip;
    RunEmbedding<Device, 1, int64_t, double>(stream, Shape1(9), 4, 5, mode, outside, false, kWriteTo);
    RunEmbedding<Device, 3, float, float>(stream, Shape3(2, 3, 5), 6, 4, mode, outside, true, kAddTo);
    RunEmbedding<Device, 4, int32_t, double>(stream, Shape4(2, 1, 3, 2), 3, 7, mode, outside, false, kWriteTo);
    RunEmbedding<Device, 2, int64_t, half_t>(stream, Shape2(4, 6), 5, 8, mode, outside, true, kAddTo);
    RunEmbedding<Device, 2, float, bf16_t>(stream, Shape2(5, 3), 9, 4, mode, outside, false, kWriteTo);
  }
  RunEmbedding<Device, 1, int32_t, float>(stream, Shape1(1000), 3, 33, EmbeddingMode::kClip, false, false, kWriteTo);
  RunEmbedding<Device, 1, int32_t, float>(stream, Shape1(0), 3, 4, EmbeddingMode::kRaise, false, false, kWriteTo);
  RunEmbedding<Device, 2, int64_t, float>(stream, Shape2(2, 3), 1, 5, EmbeddingMode::kClip, true, true, kAddTo);
}

TE_DEVICE_TEST_CASE("Embedding's weight gradient: finite differences, the adjoint identity, determinism",
                    "[ops][embedding]") {
  ops::EmbeddingParam p;
  p.input_dim = 6;
  p.output_dim = 4;
  const Shape<2> dshape = Shape2(5, 3);
  const Shape<3> oshape = ops::InferEmbeddingShape(p, dshape);
  auto ih = RandomIndices<2, int64_t>(dshape, p.input_dim, true);
  auto wh = Uniform<2, double>(Shape2(6, 4));
  auto dyh = Uniform<3, double>(oshape);
  const Vec w = ToVec(wh.view()), dy = ToVec(dyh.view());
  auto id = Dev<Device>(ih.view(), stream);
  auto forward = [&](const Vec& wv) {
    auto wd = Dev<Device>(FromVec<2, double>(Shape2(6, 4), wv).view(), stream);
    TensorContainer<Device, 3, double> yd(oshape);
    yd.set_stream(stream);
    ops::EmbeddingForward(p, id.view(), wd.view(), kWriteTo, yd.view());
    return ToVec(ToHost(yd.view()).view());
  };
  auto dyd = Dev<Device>(dyh.view(), stream);
  TensorContainer<Device, 2, double> dwd(Shape2(6, 4));
  dwd.set_stream(stream);
  ops::EmbeddingBackward(p, dyd.view(), id.view(), kWriteTo, dwd.view());
  const Vec dw = ToVec(ToHost(dwd.view()).view());
  CheckFiniteDifferences(w, dy, forward, dw, "Embedding weight");
  // Linear in the weight: <E(W), dY> = <W, E^T(dY)>.
  const Vec y = forward(w);
  double lhs = 0, rhs = 0;
  for (size_t i = 0; i < y.size(); ++i) lhs += y[i] * dy[i];
  for (size_t i = 0; i < w.size(); ++i) rhs += w[i] * dw[i];
  CHECK(std::fabs(lhs - rhs) <= 1e-12 * std::max(1.0, std::fabs(lhs)));

  // Many positions per row, in float: the sums come out bit for bit the same on every run.
  ops::EmbeddingParam q;
  q.input_dim = 7;
  q.output_dim = 5;
  auto many = RandomIndices<1, int32_t>(Shape1(3000), 7, false);
  auto gh = Uniform<2, float>(Shape2(3000, 5));
  auto md = Dev<Device>(many.view(), stream);
  auto gd = Dev<Device>(gh.view(), stream);
  TensorContainer<Device, 2, float> first(Shape2(7, 5)), again(Shape2(7, 5));
  first.set_stream(stream);
  again.set_stream(stream);
  ops::EmbeddingBackward(q, gd.view(), md.view(), kWriteTo, first.view());
  const Vec want = ToVec(ToHost(first.view()).view());
  for (int run = 0; run < 3; ++run) {
    ops::EmbeddingBackward(q, gd.view(), md.view(), kWriteTo, again.view());
    CheckVec(ToHost(again.view()).view(), want, 0, "a second run");
  }
}

TE_DEVICE_TEST_CASE("Embedding names bad parameters, shapes and indices out of range", "[ops][embedding][error]") {
  ops::EmbeddingParam p;
  TensorContainer<Device, 2, float> idx(Shape2(2, 3)), w(Shape2(4, 5)), w_bad(Shape2(5, 4));
  TensorContainer<Device, 3, float> y(Shape3(2, 3, 5)), y_bad(Shape3(2, 3, 4));
  for (auto* t : {&idx, &w, &w_bad}) t->set_stream(stream);
  y.set_stream(stream);
  RequireError([&] { ops::EmbeddingForward(p, idx.view(), w.view(), kWriteTo, y.view()); }, {"input_dim = 0", ">= 1"});
  p.input_dim = 4;
  RequireError([&] { ops::EmbeddingForward(p, idx.view(), w.view(), kWriteTo, y.view()); }, {"output_dim = 0"});
  p.output_dim = 5;
  RequireError([&] { ops::EmbeddingForward(p, idx.view(), w_bad.view(), kWriteTo, y.view()); },
               {"Embedding forward", "weight shape (5,4)", "(4,5)"});
  RequireError([&] { ops::EmbeddingForward(p, idx.view(), w.view(), kWriteTo, y_bad.view()); },
               {"output shape (2,3,4)", "(2,3,5)"});
  RequireError([&] { ops::EmbeddingBackward(p, y_bad.view(), idx.view(), kWriteTo, w.view()); },
               {"Embedding backward", "output gradient shape (2,3,4)"});
  RequireError([&] { ops::EmbeddingBackward(p, y.view(), idx.view(), kWriteTo, w_bad.view()); },
               {"weight gradient shape (5,4)"});
  RequireError([&] { ops::EmbeddingForward(p, idx.view(), w.view(), static_cast<OpReqType>(6), y.view()); },
               {"unknown OpReqType 6"});
  ops::EmbeddingParam bad_mode = p;
  bad_mode.mode = static_cast<EmbeddingMode>(5);
  RequireError([&] { ops::EmbeddingForward(bad_mode, idx.view(), w.view(), kWriteTo, y.view()); }, {"unknown mode 5"});
  TensorContainer<Device, 2, int32_t> padded(Shape2(2, 3), true);
  padded.set_stream(stream);
  if (padded.stride_ != 3)
    RequireError([&] { ops::EmbeddingForward(p, padded.view(), w.view(), kWriteTo, y.view()); },
                 {"padded rows", "contiguous"});
  // Mode raise: a value that truncates outside [0, 4) (4, -1, NaN) is an Error on either pass.
  p.mode = EmbeddingMode::kRaise;
  for (float bad : {4.0f, -1.0f, std::numeric_limits<float>::quiet_NaN()}) {
    TensorContainer<cpu, 2, float> ih(Shape2(2, 3));
    for (index_t i = 0; i < 6; ++i) ih.dptr_[i] = float(i % 4);
    ih.dptr_[4] = bad;
    auto id = Dev<Device>(ih.view(), stream);
    RequireError([&] { ops::EmbeddingForward(p, id.view(), w.view(), kWriteTo, y.view()); },
                 {"Embedding forward", "mode raise", "input_dim = 4"});
    RequireError([&] { ops::EmbeddingBackward(p, y.view(), id.view(), kWriteTo, w.view()); },
                 {"Embedding backward", "mode raise"});
  }
}

}  // namespace
