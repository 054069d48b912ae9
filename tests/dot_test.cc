// dot_test.cc — dot and batch_dot against a float64 triple loop on fresh random data: every transpose,
// vector forms (two vectors too), batch_dot with a batch of 1 broadcast, odd sizes, padded and offset views
// (operands and destination), alpha, = / += / -=, half and bf16, aliased destinations, empty sums, and the
// errors for mismatched shapes.
#include "test_util.h"

namespace {
using namespace te_test;
using namespace tensorexpr::expr;

enum class StoreOp { kWrite, kAdd, kSub };
const StoreOp kAllStores[] = {StoreOp::kWrite, StoreOp::kAdd, StoreOp::kSub};
const char* Name(StoreOp op) { return op == StoreOp::kWrite ? "=" : op == StoreOp::kAdd ? "+=" : "-="; }

template <typename Device, int dim, typename DType, typename E>
void Store(Tensor<Device, dim, DType> dst, StoreOp op, const E& e) {
  switch (op) {
    case StoreOp::kWrite: dst = e; break;
    case StoreOp::kAdd: dst += e; break;
    case StoreOp::kSub: dst -= e; break;
  }
}

// How the scale is written: dot(a, b), alpha * dot(a, b), dot(a, b) * alpha, -dot(a, b).
constexpr float kAlpha = 0.75f;  // exact in half and bf16
enum class Scale { kNone, kLeft, kRight, kNegate };
const Scale kAllScales[] = {Scale::kNone, Scale::kLeft, Scale::kRight, Scale::kNegate};
double Factor(Scale s) { return s == Scale::kNone ? 1.0 : s == Scale::kNegate ? -1.0 : kAlpha; }
template <typename E>
E Scaled(const E& e, Scale s) {
  switch (s) {
    case Scale::kLeft: return kAlpha * e;
    case Scale::kRight: return e * kAlpha;
    case Scale::kNegate: return -e;
    default: return e;
  }
}

// f(a) or f(a.T()): the transpose is a compile-time property of the expression.
template <typename A, typename F>
void MaybeT(const A& a, bool trans, F f) {
  if (trans) f(a.T()); else f(a);
}
template <bool ta, bool tb, typename A, typename B>
auto BatchDot(const A& a, const B& b) { return batch_dot<ta, tb>(a, b); }
template <typename A, typename B, typename F>
void WithBatchDot(const A& a, const B& b, bool ta, bool tb, F f) {
  if (ta && tb) f(BatchDot<true, true>(a, b));
  else if (ta) f(BatchDot<true, false>(a, b));
  else if (tb) f(BatchDot<false, true>(a, b));
  else f(BatchDot<false, false>(a, b));
}

// ---- device views with gaps: each row sits at column offset 1 of a row 3 elements wider, so the view's
// pointer is offset, its rows are padded, and a write outside the view shows in the poisoned gaps. ------
constexpr double kPoison = 12345.0;
template <typename Device, int dim, typename DType>
struct DeviceView {
  TensorContainer<Device, 2, DType> buf;  // (rows, ld): the view and its gaps
  Tensor<Device, dim, DType> t;           // the view under test
  index_t col0 = 0;
};
// nan_inside: the view holds NaN instead of h (a destination that `=` must overwrite without reading).
template <typename Device, int dim, typename DType>
DeviceView<Device, dim, DType> Upload(const Tensor<cpu, dim, DType>& h, bool padded, Stream<Device>* s,
                                      bool nan_inside = false) {
  const Tensor<cpu, 2, DType> h2 = h.FlatTo2D();
  const index_t rows = h2.shape_[0], cols = h2.shape_[1];
  DeviceView<Device, dim, DType> v;
  v.col0 = padded ? 1 : 0;
  const index_t ld = cols + (padded ? 3 : 0);
  TensorContainer<cpu, 2, DType> host(Shape2(rows, ld));
  Poison(host.view(), kPoison);
  for (index_t y = 0; y < rows; ++y)
    for (index_t x = 0; x < cols; ++x)
      host.dptr_[y * ld + v.col0 + x] = nan_inside ? DType(NAN) : h2.dptr_[y * h2.stride_ + x];
  v.buf = ToDevice<Device>(host, s);
  v.t = Tensor<Device, dim, DType>(v.buf.dptr_ + v.col0, h.shape_, ld, s);
  return v;
}

// ---- the float64 reference ----------------------------------------------------------------------------
// op(t) of a host tensor, in double.
struct RefMat {
  index_t rows = 0, cols = 0;
  std::vector<double> v;
  double at(index_t i, index_t j) const { return v[i * cols + j]; }
};
template <typename DType>
RefMat OpOf(const Tensor<cpu, 2, DType>& t, bool trans) {
  RefMat r;
  r.rows = trans ? t.shape_[1] : t.shape_[0];
  r.cols = trans ? t.shape_[0] : t.shape_[1];
  r.v.resize(r.rows * r.cols);
  for (index_t i = 0; i < r.rows; ++i)
    for (index_t j = 0; j < r.cols; ++j)
      r.v[i * r.cols + j] = AsDouble(trans ? t.dptr_[j * t.stride_ + i] : t.dptr_[i * t.stride_ + j]);
  return r;
}
// A vector as a 1 x n row or an n x 1 column.
template <typename DType>
RefMat VectorOf(const Tensor<cpu, 1, DType>& t, bool as_row) {
  const Tensor<cpu, 2, DType> m(t.dptr_, Shape2(1, t.shape_[0]), t.shape_[0], nullptr);
  return OpOf(m, !as_row);
}
template <int dim, typename DType>
std::vector<double> Values(const Tensor<cpu, dim, DType>& t) {
  std::vector<double> r;
  ForEachIndex(t.shape_, [&](const Shape<dim>& idx) { r.push_back(At(t, idx)); });
  return r;
}

// What the destination should hold, and the size of the terms that made each element (sum of |alpha a b|
// plus |c|): the rounding error of a sum grows with that.
struct Expected {
  std::vector<double> val, mag;
};
void AppendProduct(const RefMat& a, const RefMat& b, double alpha, StoreOp op, const std::vector<double>& c0,
                   index_t c_offset, Expected* out) {
  REQUIRE(a.cols == b.rows);
  for (index_t i = 0; i < a.rows; ++i)
    for (index_t j = 0; j < b.cols; ++j) {
      double sum = 0, mag = 0;
      for (index_t p = 0; p < a.cols; ++p) {
        sum += a.at(i, p) * b.at(p, j);
        mag += std::fabs(a.at(i, p) * b.at(p, j));
      }
      sum *= alpha;
      mag *= std::fabs(alpha);
      const double c = op == StoreOp::kWrite ? 0.0 : c0[c_offset + i * b.cols + j];
      out->val.push_back(op == StoreOp::kWrite ? sum : op == StoreOp::kAdd ? c + sum : c - sum);
      out->mag.push_back(mag + std::fabs(c));
    }
}
Expected RefProduct(const RefMat& a, const RefMat& b, double alpha, StoreOp op, const std::vector<double>& c0) {
  Expected e;
  AppendProduct(a, b, alpha, op, c0, 0, &e);
  return e;
}

// Relative error of the accumulation: fp32 for float, half and bf16 (BLAS accumulates those in float).
template <typename DType> double AccumTol() { return 1e-5; }
template <> double AccumTol<double>() { return 1e-12; }

// Downloads the view's buffer: the view must match `want` within rtol * max(1, |want|) (the rounding of
// the stored result) + accum_tol * magnitude (the rounding of the sum); the gaps must still hold the poison.
template <typename Device, int dim, typename DType>
void CheckView(const DeviceView<Device, dim, DType>& v, const Expected& want, double rtol, const std::string& what,
               double accum_tol = AccumTol<DType>()) {
  const TensorContainer<cpu, 2, DType> host = ToHost(v.buf);
  const Shape<2> s = v.t.shape_.FlatTo2D();
  REQUIRE(static_cast<index_t>(want.val.size()) == s.Size());
  const double poison = AsDouble(static_cast<DType>(static_cast<float>(kPoison)));
  const index_t ld = host.shape_[1];
  index_t bad = 0, gap_bad = 0;
  std::string first;
  for (index_t y = 0; y < s[0]; ++y)
    for (index_t x = 0; x < ld; ++x) {
      const double got = AsDouble(host.dptr_[y * host.stride_ + x]);
      const index_t j = x - v.col0;
      if (j < 0 || j >= s[1]) {
        gap_bad += got != poison;
        continue;
      }
      const double r = want.val[y * s[1] + j];
      const double tol = rtol * std::max(1.0, std::fabs(r)) + accum_tol * want.mag[y * s[1] + j];
      if (!(std::fabs(got - r) <= tol) && bad++ == 0)
        first = Message("first mismatch at row ", y, " col ", j, ": got ", got, ", expected ", r, " (tol ", tol, ")");
    }
  INFO(what);
  INFO(first);
  INFO("mismatches: " << bad << " of " << s.Size() << "; gap elements overwritten: " << gap_bad);
  CHECK(bad == 0);
  CHECK(gap_bad == 0);
}

// ---- one product of each form -------------------------------------------------------------------------

template <typename Device, typename DType>
void RunDot2D(Stream<Device>* s, index_t m, index_t k, index_t n, bool ta, bool tb, StoreOp op, Scale scale,
              bool padded) {
  TensorContainer<cpu, 2, DType> ha(ta ? Shape2(k, m) : Shape2(m, k)), hb(tb ? Shape2(n, k) : Shape2(k, n)),
      hc(Shape2(m, n));
  FillRandom(ha.view());
  FillRandom(hb.view());
  FillRandom(hc.view());
  auto a = Upload<Device>(ha.view(), padded, s), b = Upload<Device>(hb.view(), padded, s);
  auto c = Upload<Device>(hc.view(), padded, s, op == StoreOp::kWrite);
  MaybeT(a.t, ta, [&](const auto& x) { MaybeT(b.t, tb, [&](const auto& y) { Store(c.t, op, Scaled(dot(x, y), scale)); }); });
  const Expected want = RefProduct(OpOf(ha.view(), ta), OpOf(hb.view(), tb), Factor(scale), op, Values(hc.view()));
  CheckView(c, want, Tol<DType>(),
            Message("c ", Name(op), " ", Factor(scale), " * dot(a", ta ? ".T()" : "", ", b", tb ? ".T()" : "",
                    "), m k n = ", m, " ", k, " ", n, ", padded ", padded, ", dtype ", DataType<DType>::name()));
}

// y = dot(A, x) (A given as stored, m x k or, transposed, k x m).
template <typename Device, typename DType>
void RunMatVec(Stream<Device>* s, index_t m, index_t k, bool ta, StoreOp op, Scale scale, bool padded) {
  TensorContainer<cpu, 2, DType> ha(ta ? Shape2(k, m) : Shape2(m, k));
  TensorContainer<cpu, 1, DType> hx(Shape1(k)), hy(Shape1(m));
  FillRandom(ha.view());
  FillRandom(hx.view());
  FillRandom(hy.view());
  auto a = Upload<Device>(ha.view(), padded, s);
  auto x = Upload<Device>(hx.view(), padded, s), y = Upload<Device>(hy.view(), padded, s, op == StoreOp::kWrite);
  MaybeT(a.t, ta, [&](const auto& am) { Store(y.t, op, Scaled(dot(am, x.t), scale)); });
  const Expected want = RefProduct(OpOf(ha.view(), ta), VectorOf(hx.view(), false), Factor(scale), op, Values(hy.view()));
  CheckView(y, want, Tol<DType>(),
            Message("y ", Name(op), " ", Factor(scale), " * dot(A", ta ? ".T()" : "", ", x), m k = ", m, " ", k,
                    ", padded ", padded, ", dtype ", DataType<DType>::name()));
}

// y = dot(x, B) (B given as stored, k x n or, transposed, n x k).
template <typename Device, typename DType>
void RunVecMat(Stream<Device>* s, index_t k, index_t n, bool tb, StoreOp op, Scale scale, bool padded) {
  TensorContainer<cpu, 2, DType> hb(tb ? Shape2(n, k) : Shape2(k, n));
  TensorContainer<cpu, 1, DType> hx(Shape1(k)), hy(Shape1(n));
  FillRandom(hb.view());
  FillRandom(hx.view());
  FillRandom(hy.view());
  auto b = Upload<Device>(hb.view(), padded, s);
  auto x = Upload<Device>(hx.view(), padded, s), y = Upload<Device>(hy.view(), padded, s, op == StoreOp::kWrite);
  MaybeT(b.t, tb, [&](const auto& bm) { Store(y.t, op, Scaled(dot(x.t, bm), scale)); });
  const Expected want = RefProduct(VectorOf(hx.view(), true), OpOf(hb.view(), tb), Factor(scale), op, Values(hy.view()));
  CheckView(y, want, Tol<DType>(),
            Message("y ", Name(op), " ", Factor(scale), " * dot(x, B", tb ? ".T()" : "", "), k n = ", k, " ", n,
                    ", padded ", padded, ", dtype ", DataType<DType>::name()));
}

// r = dot(x, y) of two vectors: shape (1).
template <typename Device, typename DType>
void RunVecVec(Stream<Device>* s, index_t k, StoreOp op, Scale scale, bool padded) {
  TensorContainer<cpu, 1, DType> hx(Shape1(k)), hy(Shape1(k)), hr(Shape1(1));
  FillRandom(hx.view());
  FillRandom(hy.view());
  FillRandom(hr.view());
  auto x = Upload<Device>(hx.view(), padded, s), y = Upload<Device>(hy.view(), padded, s);
  auto r = Upload<Device>(hr.view(), padded, s, op == StoreOp::kWrite);
  Store(r.t, op, Scaled(dot(x.t, y.t), scale));
  const Expected want = RefProduct(VectorOf(hx.view(), true), VectorOf(hy.view(), false), Factor(scale), op,
                                   Values(hr.view()));
  CheckView(r, want, Tol<DType>(),
            Message("r ", Name(op), " ", Factor(scale), " * dot(x, y), k = ", k, ", padded ", padded, ", dtype ",
                    DataType<DType>::name()));
}

// bcast_a / bcast_b: that operand has a batch of 1, which every matrix of the other multiplies.
template <typename Device, typename DType>
void RunBatch(Stream<Device>* s, index_t batch, index_t m, index_t k, index_t n, bool ta, bool tb, StoreOp op,
              Scale scale, bool padded, bool bcast_a = false, bool bcast_b = false) {
  const index_t batch_a = bcast_a ? 1 : batch, batch_b = bcast_b ? 1 : batch;
  TensorContainer<cpu, 3, DType> ha(ta ? Shape3(batch_a, k, m) : Shape3(batch_a, m, k)),
      hb(tb ? Shape3(batch_b, n, k) : Shape3(batch_b, k, n)), hc(Shape3(batch, m, n));
  FillRandom(ha.view());
  FillRandom(hb.view());
  FillRandom(hc.view());
  auto a = Upload<Device>(ha.view(), padded, s), b = Upload<Device>(hb.view(), padded, s);
  auto c = Upload<Device>(hc.view(), padded, s, op == StoreOp::kWrite);
  WithBatchDot(a.t, b.t, ta, tb, [&](const auto& e) { Store(c.t, op, Scaled(e, scale)); });
  Expected want;
  const std::vector<double> c0 = Values(hc.view());
  for (index_t i = 0; i < batch; ++i)
    AppendProduct(OpOf(ha[bcast_a ? 0 : i], ta), OpOf(hb[bcast_b ? 0 : i], tb), Factor(scale), op, c0, i * m * n,
                  &want);
  CheckView(c, want, Tol<DType>(),
            Message("c ", Name(op), " ", Factor(scale), " * batch_dot<", ta, ", ", tb, ">(a, b), batch m k n = ",
                    batch, " ", m, " ", k, " ", n, ", padded ", padded, ", batches of a, b ", batch_a, ", ", batch_b,
                    ", dtype ", DataType<DType>::name()));
}

// (m, k, n): ones (gemv routes when m or n is 1), small odd sizes, and long rows / sums.
struct MKN {
  index_t m, k, n;
};
const MKN kSizes[] = {{1, 1, 1}, {3, 17, 1}, {1, 129, 17}, {17, 3, 129}, {129, 17, 3}, {17, 1, 3}, {3, 1031, 17},
                      {1031, 17, 129}};

template <typename Device, typename DType>
void AllForms(Stream<Device>* s) {
  int round = 0;
  for (const MKN& z : kSizes)
    for (int t = 0; t < 4; ++t)
      for (StoreOp op : kAllStores) {
        const Scale scale = kAllScales[round % 4];
        const bool padded = (round++ / 4) % 2 == 1;
        RunDot2D<Device, DType>(s, z.m, z.k, z.n, t & 1, t & 2, op, scale, padded);
        RunMatVec<Device, DType>(s, z.m, z.k, t & 1, op, scale, !padded);
        RunVecMat<Device, DType>(s, z.k, z.n, t & 2, op, scale, padded);
        if (t == 0) RunVecVec<Device, DType>(s, z.k, op, scale, padded);
      }
  const index_t batches[] = {1, 3, 5};
  round = 0;
  for (const MKN& z : kSizes) {
    if (z.m * z.k * z.n > 100000) continue;  // the batch adds a factor already
    for (int t = 0; t < 4; ++t)
      for (StoreOp op : kAllStores) {
        const Scale scale = kAllScales[round % 4];
        RunBatch<Device, DType>(s, batches[round % 3], z.m, z.k, z.n, t & 1, t & 2, op, scale, (round / 3) % 2 == 1,
                                round % 5 == 1, round % 5 == 3);
        ++round;
      }
  }
}

}  // namespace

TE_DEVICE_TEST_CASE("dot and batch_dot in float: every form, transpose, saver and scale", "[dot]") {
  AllForms<Device, float>(stream);
}

TE_DEVICE_TEST_CASE("dot and batch_dot in double: every form, transpose, saver and scale", "[dot]") {
  AllForms<Device, double>(stream);
}

TE_DEVICE_TEST_CASE("dot and batch_dot in half and bfloat16 (float accumulation)", "[dot]") {
  AllForms<Device, half_t>(stream);
  AllForms<Device, bf16_t>(stream);
}

// batch_dot of rank 4 and 5: each batch dimension equal or 1 on either side (broadcast), every transpose,
// = / += / -=, a scale, padded offset views; against the float64 loop over the broadcast batch indices.
template <typename Device, int dim, typename DType>
void RunBatchDotNd(Stream<Device>* stream, const Shape<dim>& batch, const Shape<dim>& a_one, const Shape<dim>& b_one,
                   bool ta, bool tb, StoreOp op, Scale scale, bool padded) {
  std::uniform_int_distribution<index_t> ext(1, 6);
  const index_t m = ext(Rng()), k = ext(Rng()), n = ext(Rng());
  Shape<dim> as, bs, cs;
  for (int d = 0; d + 2 < dim; ++d) {  // a_one / b_one: 1 where that side broadcasts
    as[d] = a_one[d] ? 1 : batch[d];
    bs[d] = b_one[d] ? 1 : batch[d];
    cs[d] = batch[d];
  }
  as[dim - 2] = ta ? k : m, as[dim - 1] = ta ? m : k;
  bs[dim - 2] = tb ? n : k, bs[dim - 1] = tb ? k : n;
  cs[dim - 2] = m, cs[dim - 1] = n;
  INFO("batch_dot<" << ta << ", " << tb << "> " << as << " x " << bs << " -> " << cs << " " << Name(op) << " scale "
                    << Factor(scale) << " padded " << padded << " dtype " << DataType<DType>::name());
  TensorContainer<cpu, dim, DType> ah(as), bh(bs), ch(cs);
  FillRandom(ah.view()), FillRandom(bh.view()), FillRandom(ch.view());
  auto a = Upload<Device>(ah.view(), padded, stream), b = Upload<Device>(bh.view(), padded, stream);
  auto c = Upload<Device>(ch.view(), padded, stream);
  WithBatchDot(a.t, b.t, ta, tb, [&](const auto& e) { Store(c.t, op, Scaled(e, scale)); });
  std::vector<double> want, mag;
  ForEachIndex(cs, [&](const Shape<dim>& i) {
    Shape<dim> ia = i, ib = i;
    for (int d = 0; d + 2 < dim; ++d) ia[d] = as[d] == 1 ? 0 : i[d], ib[d] = bs[d] == 1 ? 0 : i[d];
    double sum = 0, size = 0;
    for (index_t j = 0; j < k; ++j) {
      Shape<dim> pa = ia, pb = ib;
      pa[dim - 2] = ta ? j : i[dim - 2], pa[dim - 1] = ta ? i[dim - 2] : j;
      pb[dim - 2] = tb ? i[dim - 1] : j, pb[dim - 1] = tb ? j : i[dim - 1];
      sum += At(ah.view(), pa) * At(bh.view(), pb);
      size += std::abs(At(ah.view(), pa) * At(bh.view(), pb));
    }
    const double c0 = At(ch.view(), i), p = Factor(scale) * sum;
    want.push_back(op == StoreOp::kWrite ? p : op == StoreOp::kAdd ? c0 + p : c0 - p);
    mag.push_back(size + std::abs(c0));
  });
  const auto got = ToHost(c.t);
  size_t f = 0, bad = 0;
  ForEachIndex(cs, [&](const Shape<dim>& i) {
    if (!(std::abs(At(got.view(), i) - want[f]) <= 4 * Tol<DType>() * (mag[f] + 1))) ++bad;
    ++f;
  });
  CHECK(bad == 0);
}

TE_DEVICE_TEST_CASE("batch_dot of rank 4 and 5 broadcasts its batch dimensions", "[dot]") {
  int i = 0;
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      const StoreOp op = kAllStores[i % 3];
      const Scale scale = kAllScales[i % 4];
      RunBatchDotNd<Device, 4, float>(stream, Shape4(2, 3, 0, 0), Shape4(0, 0, 0, 0), Shape4(0, 0, 0, 0), ta, tb, op,
                                      scale, i % 2 == 0);
      RunBatchDotNd<Device, 4, double>(stream, Shape4(2, 3, 0, 0), Shape4(1, 0, 0, 0), Shape4(0, 1, 0, 0), ta, tb, op,
                                       scale, i % 2 == 1);
      RunBatchDotNd<Device, 4, float>(stream, Shape4(3, 2, 0, 0), Shape4(0, 1, 0, 0), Shape4(1, 0, 0, 0), ta, tb,
                                      StoreOp::kAdd, scale, true);
      RunBatchDotNd<Device, 5, double>(stream, Shape5(2, 2, 3, 0, 0), Shape5(0, 1, 0, 0, 0), Shape5(1, 0, 1, 0, 0), ta,
                                       tb, op, scale, false);
      RunBatchDotNd<Device, 5, float>(stream, Shape5(1, 3, 2, 0, 0), Shape5(1, 1, 1, 0, 0), Shape5(0, 0, 0, 0, 0), ta,
                                      tb, op, scale, true);
      ++i;
    }
  RunBatchDotNd<Device, 4, half_t>(stream, Shape4(2, 2, 0, 0), Shape4(1, 0, 0, 0), Shape4(0, 0, 0, 0), false, true,
                                   StoreOp::kWrite, Scale::kNone, false);
  RunBatchDotNd<Device, 4, bf16_t>(stream, Shape4(2, 3, 0, 0), Shape4(0, 0, 0, 0), Shape4(0, 1, 0, 0), true, false,
                                   StoreOp::kAdd, Scale::kLeft, true);
  // The destination shares memory with a broadcast operand: b is c's first slab, read for every slab of c.
  {
    TensorContainer<cpu, 4, float> ah(Shape4(2, 1, 2, 2)), ch(Shape4(2, 1, 2, 2));
    FillRandom(ah.view()), FillRandom(ch.view());
    auto ad = ToDevice<Device>(ah.view(), stream), cd = ToDevice<Device>(ch.view(), stream);
    const Tensor<Device, 4, float> bv(cd.dptr_, Shape4(1, 1, 2, 2), 2, stream);
    cd = batch_dot(ad.view(), bv);
    const auto got = ToHost(cd.view());
    for (index_t i = 0; i < 2; ++i)
      for (index_t r = 0; r < 2; ++r)
        for (index_t col = 0; col < 2; ++col) {
          double want = 0;
          for (index_t j = 0; j < 2; ++j) want += double(ah[i][0][r][j]) * double(ch[0][0][j][col]);
          // Two float products that may nearly cancel: the margin is float rounding of the terms.
          CHECK(double(got[i][0][r][col]) == Approx(want).epsilon(1e-5).margin(1e-6));
        }
  }
  // Batch dimensions that differ and neither is 1; inner extents that differ.
  TensorContainer<Device, 4, float> a(Shape4(2, 3, 4, 5)), b(Shape4(3, 3, 5, 2)), b2(Shape4(2, 3, 4, 2));
  a.set_stream(stream), b.set_stream(stream), b2.set_stream(stream);
  RequireError([&] { (void)batch_dot(a.view(), b.view()).shape(); }, {"batch dimension 0", "2 vs 3"});
  RequireError([&] { (void)batch_dot(a.view(), b2.view()).shape(); }, {"inner dimensions differ", "gives 5", "right 4"});
}

TE_DEVICE_TEST_CASE("dot scale factors combine", "[dot]") {
  TensorContainer<cpu, 2, float> ha(Shape2(5, 7)), hb(Shape2(7, 3)), hc(Shape2(5, 3));
  FillRandom(ha.view());
  FillRandom(hb.view());
  FillRandom(hc.view());
  auto a = Upload<Device>(ha.view(), true, stream), b = Upload<Device>(hb.view(), false, stream);
  auto c = Upload<Device>(hc.view(), true, stream);
  c.t -= 2 * (-(dot(a.t, b.t) * 0.5) * 3.0f);  // int, double and float factors: -= (-3) * dot
  const Expected want = RefProduct(OpOf(ha.view(), false), OpOf(hb.view(), false), -3.0, StoreOp::kSub, Values(hc.view()));
  CheckView(c, want, Tol<float>(), "c -= 2 * (-(dot(a, b) * 0.5) * 3)");
}

TE_DEVICE_TEST_CASE("dot with an aliased destination goes through a copy", "[dot][alias]") {
  // 301: larger than OpenBLAS's blocks, so that an unprotected += would read rows it already wrote.
  for (index_t n : {19, 301}) for (bool padded : {false, true}) {
    TensorContainer<cpu, 2, float> ha(Shape2(n, n)), hb(Shape2(n, n));
    FillRandom(ha.view());
    FillRandom(hb.view());
    const RefMat A = OpOf(ha.view(), false), At = OpOf(ha.view(), true), B = OpOf(hb.view(), false);
    const std::vector<double> a0 = Values(ha.view()), b0 = Values(hb.view());
    const std::string tag = Message(" n = ", n, padded ? " (padded)" : "");
    {  // a = dot(a, b)
      auto a = Upload<Device>(ha.view(), padded, stream), b = Upload<Device>(hb.view(), padded, stream);
      a.t = dot(a.t, b.t);
      CheckView(a, RefProduct(A, B, 1, StoreOp::kWrite, a0), Tol<float>(), "a = dot(a, b)" + tag);
    }
    {  // a += dot(a, b)
      auto a = Upload<Device>(ha.view(), padded, stream), b = Upload<Device>(hb.view(), padded, stream);
      a.t += dot(a.t, b.t);
      CheckView(a, RefProduct(A, B, 1, StoreOp::kAdd, a0), Tol<float>(), "a += dot(a, b)" + tag);
    }
    {  // a -= 2 * dot(a.T(), b): the aliased operand transposed
      auto a = Upload<Device>(ha.view(), padded, stream), b = Upload<Device>(hb.view(), padded, stream);
      a.t -= 2.0f * dot(a.t.T(), b.t);
      CheckView(a, RefProduct(At, B, 2, StoreOp::kSub, a0), Tol<float>(), "a -= 2 * dot(a.T(), b)" + tag);
    }
    {  // b = dot(a, b.T()): the right operand aliased and transposed
      auto a = Upload<Device>(ha.view(), padded, stream), b = Upload<Device>(hb.view(), padded, stream);
      b.t = dot(a.t, b.t.T());
      CheckView(b, RefProduct(A, OpOf(hb.view(), true), 1, StoreOp::kWrite, b0), Tol<float>(), "b = dot(a, b.T())" + tag);
    }
    {  // a += dot(a, a): both operands aliased
      auto a = Upload<Device>(ha.view(), padded, stream);
      a.t += dot(a.t, a.t);
      CheckView(a, RefProduct(A, A, 1, StoreOp::kAdd, a0), Tol<float>(), "a += dot(a, a)" + tag);
    }
  }
  const index_t n = 19;
  {  // destination and operand are overlapping row ranges of one buffer
    TensorContainer<cpu, 2, float> hbuf(Shape2(2 * n, n)), hb(Shape2(n, n));
    FillRandom(hbuf.view());
    FillRandom(hb.view());
    auto buf = Upload<Device>(hbuf.view(), true, stream);
    auto b = Upload<Device>(hb.view(), false, stream);
    Tensor<Device, 2, float> x = buf.t.Slice(0, n), dst = buf.t.Slice(n / 2, n / 2 + n);
    const RefMat X = OpOf(hbuf.view().Slice(0, n), false);
    dst = dot(x, b.t);
    // Rows below n / 2 keep their values; the rest hold the product.
    Expected want;
    const std::vector<double> before = Values(hbuf.view());
    for (index_t i = 0; i < (n / 2) * n; ++i) {
      want.val.push_back(before[i]);
      want.mag.push_back(std::fabs(before[i]));
    }
    AppendProduct(X, OpOf(hb.view(), false), 1, StoreOp::kWrite, {}, 0, &want);
    want.val.resize(2 * n * n, 0.0);  // rows after the destination: unchanged
    want.mag.resize(2 * n * n, 0.0);
    for (index_t i = (n / 2 + n) * n; i < 2 * n * n; ++i) {
      want.val[i] = before[i];
      want.mag[i] = std::fabs(before[i]);
    }
    CheckView(buf, want, Tol<float>(), "rows [n/2, n/2 + n) = dot(rows [0, n), b)");
  }
  {  // vectors: x = dot(M, x) and x = dot(x, M.T())
    TensorContainer<cpu, 2, float> hm(Shape2(n, n));
    TensorContainer<cpu, 1, float> hx(Shape1(n));
    FillRandom(hm.view());
    FillRandom(hx.view());
    auto m = Upload<Device>(hm.view(), true, stream);
    auto x = Upload<Device>(hx.view(), false, stream);
    x.t = dot(m.t, x.t);
    CheckView(x, RefProduct(OpOf(hm.view(), false), VectorOf(hx.view(), false), 1, StoreOp::kWrite, {}), Tol<float>(),
              "x = dot(M, x)");
    auto x2 = Upload<Device>(hx.view(), true, stream);
    x2.t += dot(x2.t, m.t.T());
    CheckView(x2, RefProduct(VectorOf(hx.view(), true), OpOf(hm.view(), true), 1, StoreOp::kAdd, Values(hx.view())),
              Tol<float>(), "x += dot(x, M.T())");
  }
  {  // batch: a = batch_dot<false, true>(a, b), and half precision a = dot(a, b)
    TensorContainer<cpu, 3, float> ha(Shape3(3, 5, 5)), hb(Shape3(3, 5, 5));
    FillRandom(ha.view());
    FillRandom(hb.view());
    auto a = Upload<Device>(ha.view(), true, stream), b = Upload<Device>(hb.view(), false, stream);
    a.t = batch_dot<false, true>(a.t, b.t);
    Expected want;
    for (index_t i = 0; i < 3; ++i)
      AppendProduct(OpOf(ha[i], false), OpOf(hb[i], true), 1, StoreOp::kWrite, {}, 0, &want);
    CheckView(a, want, Tol<float>(), "a = batch_dot<false, true>(a, b)");

    TensorContainer<cpu, 2, half_t> hh(Shape2(n, n)), hg(Shape2(n, n));
    FillRandom(hh.view());
    FillRandom(hg.view());
    auto h = Upload<Device>(hh.view(), true, stream), g = Upload<Device>(hg.view(), false, stream);
    h.t += dot(h.t, g.t);
    CheckView(h, RefProduct(OpOf(hh.view(), false), OpOf(hg.view(), false), 1, StoreOp::kAdd, Values(hh.view())),
              Tol<half_t>(), "half: h += dot(h, g)");
  }
}

TE_DEVICE_TEST_CASE("dot with an empty sum or an empty result", "[dot]") {
  for (StoreOp op : kAllStores) {
    // k = 0: `=` writes zeros, += and -= leave the destination as it was.
    TensorContainer<cpu, 2, float> ha(Shape2(3, 0)), hb(Shape2(0, 4)), hc(Shape2(3, 4));
    FillRandom(hc.view());
    auto a = Upload<Device>(ha.view(), false, stream), b = Upload<Device>(hb.view(), false, stream);
    auto c = Upload<Device>(hc.view(), true, stream, op == StoreOp::kWrite);
    Store(c.t, op, dot(a.t, b.t));
    CheckView(c, RefProduct(OpOf(ha.view(), false), OpOf(hb.view(), false), 1, op, Values(hc.view())), 0.0,
              Message("k = 0, c ", Name(op), " dot(a, b)"), 0.0);

    TensorContainer<cpu, 3, double> hp(Shape3(2, 3, 0)), hq(Shape3(2, 0, 5)), hr(Shape3(2, 3, 5));
    FillRandom(hr.view());
    auto p = Upload<Device>(hp.view(), false, stream), q = Upload<Device>(hq.view(), false, stream);
    auto r = Upload<Device>(hr.view(), true, stream, op == StoreOp::kWrite);
    Store(r.t, op, batch_dot(p.t, q.t));
    Expected want;
    for (index_t i = 0; i < 2; ++i)
      AppendProduct(OpOf(hp[i], false), OpOf(hq[i], false), 1, op, Values(hr.view()), i * 15, &want);
    CheckView(r, want, 0.0, Message("k = 0, r ", Name(op), " batch_dot(p, q)"), 0.0);
  }
  // m = 0, n = 0, batch = 0: nothing to write, nothing to fail.
  TensorContainer<cpu, 2, float> h05(Shape2(0, 5)), h54(Shape2(5, 4)), h04(Shape2(0, 4)), h50(Shape2(5, 0)),
      h30(Shape2(3, 0)), h35(Shape2(3, 5));
  auto a0 = Upload<Device>(h05.view(), false, stream), b = Upload<Device>(h54.view(), false, stream);
  auto c0 = Upload<Device>(h04.view(), false, stream);
  c0.t = dot(a0.t, b.t);
  auto b0 = Upload<Device>(h50.view(), false, stream), c30 = Upload<Device>(h30.view(), false, stream);
  auto a35 = Upload<Device>(h35.view(), false, stream);
  c30.t += dot(a35.t, b0.t);
  TensorContainer<cpu, 3, float> e1(Shape3(0, 2, 3)), e2(Shape3(0, 3, 4)), e3(Shape3(0, 2, 4));
  auto d1 = Upload<Device>(e1.view(), false, stream), d2 = Upload<Device>(e2.view(), false, stream);
  auto d3 = Upload<Device>(e3.view(), false, stream);
  d3.t = batch_dot(d1.t, d2.t);
  Sync(stream);
  SUCCEED("empty products ran without touching memory");
}

// The grouped gemm beneath the convolutions (gemm.h) against a float64 loop: images that adjoin in memory
// are joined into one product (a longer inner size for a sum over images, more rows for one B), images
// that do not are not; each form, and each with a sum kept apart on request (GemmSum::kSeparate: partials
// on the GPU, split along a long inner size), gives what the loop gives, with alpha, beta and groups.
// Inputs are eighths in [-1, 1]: every product and every sum of them is exact in float, whatever order
// a form adds them in, so the long sums are held to the short ones' tolerance.
namespace grouped {
struct Operand {
  index_t ld, image_stride, group_stride;
  bool trans;
  // Offset of element (i, j) of op(X)[n][g].
  index_t At(index_t n, index_t g, index_t i, index_t j) const {
    return n * image_stride + g * group_stride + (trans ? j * ld + i : i * ld + j);
  }
  index_t Extent(index_t images, index_t groups, index_t rows, index_t cols) const {
    return At(images - 1, groups - 1, rows - 1, cols - 1) + 1;
  }
};
struct Case {
  const char* what;
  index_t M, N, K, images, groups;
  Operand a, b, c;
};
}  // namespace grouped

TE_DEVICE_TEST_CASE("GroupedGemm joins adjoining images into one product, and matches a float64 loop", "[dot]") {
  using grouped::Case;
  // Channels-last weight gradient: dW[g] = sum_n dY_n[g]^T x_n[g], P = 5 pixels, 6 filters, 8 channels.
  const Case cases[] = {
      {"sum, inner size joined", 3, 4, 5, 3, 2, {6, 30, 3, true}, {8, 40, 4, false}, {4, 0, 12, false}},
      {"sum, images apart (a gap)", 3, 4, 5, 3, 2, {6, 36, 3, true}, {8, 48, 4, false}, {4, 0, 12, false}},
      {"sum, A's columns joined", 3, 4, 5, 3, 1, {16, 5, 0, false}, {4, 20, 0, false}, {4, 0, 0, false}},
      {"one B, rows joined", 5, 3, 4, 3, 2, {8, 40, 4, false}, {4, 0, 12, true}, {6, 30, 3, false}},
      {"one B, rows apart", 5, 3, 4, 3, 2, {8, 48, 4, false}, {4, 0, 12, true}, {6, 36, 3, false}},
      // A long inner size over few images of a small result: on the GPU each product of a sum kept apart
      // splits along its inner size into aligned chunks and a shorter last one (NCHW weight gradient:
      // dW[g] = sum_n dY_n[g] x_n[g]^T over P = 2000 pixels; channels last, images apart, over 1500; and
      // images that adjoin, 3 x 1000, one product when joined, left to cuBLAS), or into chunks of one
      // length where one divides it (2048).
      {"sum over a long inner size", 6, 8, 2000, 3, 2, {2000, 24000, 12000, false}, {2000, 32000, 16000, true},
       {8, 0, 48, false}},
      {"sum over a long inner size, channels last", 4, 4, 1500, 2, 2, {8, 12008, 4, true}, {8, 12008, 4, false},
       {4, 0, 16, false}},
      {"sum over a long inner size, images joined", 4, 4, 1000, 3, 1, {4, 4000, 0, true}, {4, 4000, 0, false},
       {4, 0, 0, false}},
      {"sum over a long inner size in equal chunks", 8, 8, 2048, 2, 1, {2048, 16384, 0, false},
       {2048, 16384, 0, true}, {8, 0, 0, false}},
  };
  const float alpha = 0.75f, beta = 0.5f;
  for (const Case& cs : cases) {
    INFO(cs.what);
    TensorContainer<cpu, 1, float> a(Shape1(cs.a.Extent(cs.images, cs.groups, cs.M, cs.K))),
        b(Shape1(cs.b.Extent(cs.images, cs.groups, cs.K, cs.N))),
        c(Shape1(cs.c.Extent(cs.images, cs.groups, cs.M, cs.N)));
    for (auto* t : {&a, &b, &c}) {
      FillRandom(t->view());
      for (index_t i = 0; i < t->shape_.Size(); ++i) t->dptr_[i] = std::round(t->dptr_[i] * 8.0f) / 8.0f;
    }
    auto da = ToDevice<Device>(a.view(), stream);
    auto db = ToDevice<Device>(b.view(), stream);
    auto operand = [](float* p, const grouped::Operand& o) {
      return GemmOperand<const float>{p, o.ld, o.image_stride, o.group_stride, o.trans};
    };
    // The loop: every element of C each (image, group) writes, beta once per element.
    std::vector<double> expect(c.dptr_, c.dptr_ + c.shape_.Size());
    std::vector<bool> written(expect.size(), false);
    for (index_t n = 0; n < cs.images; ++n)
      for (index_t g = 0; g < cs.groups; ++g)
        for (index_t i = 0; i < cs.M; ++i)
          for (index_t j = 0; j < cs.N; ++j) {
            double sum = 0;
            for (index_t k = 0; k < cs.K; ++k) sum += double(a[cs.a.At(n, g, i, k)]) * double(b[cs.b.At(n, g, k, j)]);
            const index_t at = cs.c.At(n, g, i, j);
            if (!written[at]) expect[at] *= beta, written[at] = true;
            expect[at] += alpha * sum;
          }
    for (GemmSum sum : {GemmSum::kJoin, GemmSum::kSeparate}) {
      INFO((sum == GemmSum::kJoin ? "joined where they adjoin" : "sums kept apart"));
      auto dc = ToDevice<Device>(c.view(), stream);
      GroupedGemm(stream, cs.M, cs.N, cs.K, alpha, operand(da.dptr_, cs.a), operand(db.dptr_, cs.b), beta,
                  GemmOperand<float>{dc.dptr_, cs.c.ld, cs.c.image_stride, cs.c.group_stride}, cs.images, cs.groups,
                  sum);
      const auto got = ToHost(dc.view());
      for (size_t e = 0; e < expect.size(); ++e) CHECK(got[index_t(e)] == Approx(expect[e]).epsilon(1e-5).margin(1e-5));
    }
  }
}

TE_DEVICE_TEST_CASE("dot and batch_dot reject mismatched shapes with an Error naming them", "[dot][error]") {
  TensorContainer<cpu, 2, float> h34(Shape2(3, 4)), h56(Shape2(5, 6)), h45(Shape2(4, 5)), h22(Shape2(2, 2));
  TensorContainer<cpu, 1, float> h5(Shape1(5));
  FillRandom(h22.view());
  auto a = Upload<Device>(h34.view(), false, stream), b = Upload<Device>(h56.view(), false, stream);
  auto b45 = Upload<Device>(h45.view(), false, stream), c = Upload<Device>(h22.view(), false, stream);
  auto v = Upload<Device>(h5.view(), false, stream);
  auto message_of = [](auto&& f) -> std::string {
    try {
      f();
    } catch (const tensorexpr::Error& e) {
      return e.what();
    }
    return "no Error thrown";
  };
  auto contains = [](const std::string& s, const char* part) { return s.find(part) != std::string::npos; };

  REQUIRE_THROWS_AS(c.t = dot(a.t, b.t), tensorexpr::Error);
  std::string msg = message_of([&] { c.t += dot(a.t, b.t); });
  INFO(msg);
  CHECK((contains(msg, "(3,4)") && contains(msg, "(5,6)")));

  msg = message_of([&] { c.t = dot(a.t.T(), b45.t); });  // (4,3) x (4,5)
  INFO(msg);
  CHECK((contains(msg, "(3,4).T()") && contains(msg, "(4,5)")));

  msg = message_of([&] { c.t = dot(a.t, b45.t); });  // fine inner, wrong destination (2,2) vs (3,5)
  INFO(msg);
  CHECK((contains(msg, "(2,2)") && contains(msg, "(3,5)")));

  TensorContainer<cpu, 1, float> h3(Shape1(3)), h4(Shape1(4));
  auto y3 = Upload<Device>(h3.view(), false, stream), y4 = Upload<Device>(h4.view(), false, stream);
  msg = message_of([&] { y3.t = dot(a.t, v.t); });  // (3,4) x (5,)
  INFO(msg);
  CHECK((contains(msg, "(3,4)") && contains(msg, "(5,)")));
  msg = message_of([&] { y4.t = dot(v.t, a.t); });  // (5,) x (3,4)
  INFO(msg);
  CHECK((contains(msg, "(5,)") && contains(msg, "(3,4)")));

  TensorContainer<cpu, 3, float> p(Shape3(2, 3, 4)), q(Shape3(3, 4, 5)), r(Shape3(2, 5, 4)), out(Shape3(2, 3, 5));
  auto dp = Upload<Device>(p.view(), false, stream), dq = Upload<Device>(q.view(), false, stream);
  auto dr = Upload<Device>(r.view(), false, stream), dout = Upload<Device>(out.view(), false, stream);
  msg = message_of([&] { dout.t = batch_dot(dp.t, dq.t); });  // batch 2 vs 3
  INFO(msg);
  CHECK((contains(msg, "(2,3,4)") && contains(msg, "(3,4,5)") && contains(msg, "neither is 1")));
  msg = message_of([&] { dout.t = batch_dot(dp.t, dr.t); });  // inner 4 vs 5
  INFO(msg);
  CHECK((contains(msg, "(2,3,4)") && contains(msg, "(2,5,4)")));

  // Nothing was written by the failed assignments.
  CheckView(c, Expected{Values(h22.view()), std::vector<double>(4, 0.0)}, 0.0, "destination after the Errors", 0.0);
}

#if !defined(__CUDACC__)
// The CPU product is cut into tiles over the library's threads, each one single-threaded OpenBLAS call:
// any thread count (even one that does not divide the matrix) gives the reference result, and OpenBLAS
// is left with one thread of its own. (Sizes are above ParallelFor's serial cut-off.)
TEST_CASE("dot and batch_dot on the CPU tile over the library's threads, with one BLAS thread each", "[cpu][dot]") {
  const int before = GetNumThreads();
  struct Case { index_t batch, m, k, n; };
  for (const Case& cs : {Case{1, 97, 61, 13}, Case{1, 13, 61, 97}, Case{2, 41, 37, 53}, Case{9, 16, 17, 19}}) {
    TensorContainer<cpu, 3, float> a(Shape3(cs.batch, cs.m, cs.k)), b(Shape3(cs.batch, cs.k, cs.n));
    TensorContainer<cpu, 3, float> c(Shape3(cs.batch, cs.m, cs.n));
    FillRandom(a.view());
    FillRandom(b.view());
    auto ref = [&](const Shape<3>& i) {
      double sum = 0;
      for (index_t k = 0; k < cs.k; ++k) sum += double(a[i[0]][i[1]][k]) * double(b[i[0]][k][i[2]]);
      return sum;
    };
    for (int n : {1, 2, 3, 7}) {
      SetNumThreads(n);
      INFO("batch " << cs.batch << ", " << cs.m << "x" << cs.k << " . " << cs.k << "x" << cs.n << ", " << n
                    << " threads");
      c = -1.0f;
      if (cs.batch == 1) {
        c[0] = dot(a[0], b[0]);
      } else {
        c = batch_dot(a, b);
      }
      CheckAll(c.view(), ref, 1e-5, "product");
      CHECK(openblas_get_num_threads() == 1);
    }
  }
  SetNumThreads(before);
}
#endif
