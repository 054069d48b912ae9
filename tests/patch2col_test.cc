// Tests for unpack_patch2col (im2col, expr/patch2col.h) and pack_col2patch (col2im, expr/col2patch.h)
// (the divider their plans use, IndexDiv, is tested in layout_test.cc): against float64 loops on fresh random data over strides 1..3,
// dilations 1..2, paddings 0..2, non-square kernels, 3-D and 4-D images with batch 0, 1 and more; the
// adjoint identity <unpack(x), y> == <x, pack(y)>; strided operands, poisoned outputs, +=, the mshadow
// argument forms and the error messages.
#include "test_util.h"
#include <tensorexpr/expr/pad.h>
#include <tensorexpr/expr/patch2col.h>
#include <tensorexpr/expr/col2patch.h>

namespace {
using namespace te_test;
using namespace tensorexpr;
using namespace tensorexpr::expr;

// One im2col configuration, with the output grid computed here independently of the library.
struct Conv {
  index_t n, c, h, w;  // n is the batch (1 for a 3-D image)
  index_t ky, kx, sy, sx, dy, dx, py, px;
  index_t oh() const { return (h + 2 * py - (dy * (ky - 1) + 1)) / sy + 1; }
  index_t ow() const { return (w + 2 * px - (dx * (kx - 1) + 1)) / sx + 1; }
  Shape<2> col_shape() const { return Shape2(c * ky * kx, n * oh() * ow()); }
  bool fits() const { return dy * (ky - 1) + 1 <= h + 2 * py && dx * (kx - 1) + 1 <= w + 2 * px; }
};
std::ostream& operator<<(std::ostream& os, const Conv& p) {
  return os << "image " << p.n << "x" << p.c << "x" << p.h << "x" << p.w << " kernel " << p.ky << "x" << p.kx
            << " stride " << p.sy << "x" << p.sx << " dilate " << p.dy << "x" << p.dx << " pad " << p.py << "x"
            << p.px;
}

template <int dim>
Shape<dim> ImageShape(const Conv& p) {
  if constexpr (dim == 3) {
    return Shape3(p.c, p.h, p.w);
  } else {
    return Shape4(p.n, p.c, p.h, p.w);
  }
}
// Element of a host tensor as double without rounding through float (test_util's At rounds).
template <int dim, typename DType>
double Exact(const Tensor<cpu, dim, DType>& t, const Shape<dim>& idx) {
  index_t row = 0;
  for (int i = 0; i + 1 < dim; ++i) row = row * t.shape_[i] + idx[i];
  return AsDouble(t.dptr_[row * t.stride_ + idx[dim - 1]]);
}
// Image element (n, c, y, x) of a host tensor as double.
template <int dim, typename DType>
double ImageAt(const Tensor<cpu, dim, DType>& t, index_t n, index_t c, index_t y, index_t x) {
  const index_t row = (n * t.shape_[dim - 3] + c) * t.shape_[dim - 2] + y;
  return AsDouble(t.dptr_[row * t.stride_ + x]);
}

// Calls f(row, col, n, c, y, x) for every entry of the column matrix that reads an image pixel.
template <typename F>
void ForEachTap(const Conv& p, F f) {
  for (index_t c = 0; c < p.c; ++c)
    for (index_t i = 0; i < p.ky; ++i)
      for (index_t j = 0; j < p.kx; ++j)
        for (index_t n = 0; n < p.n; ++n)
          for (index_t oy = 0; oy < p.oh(); ++oy)
            for (index_t ox = 0; ox < p.ow(); ++ox) {
              const index_t y = oy * p.sy + i * p.dy - p.py, x = ox * p.sx + j * p.dx - p.px;
              if (y < 0 || y >= p.h || x < 0 || x >= p.w) continue;
              f((c * p.ky + i) * p.kx + j, (n * p.oh() + oy) * p.ow() + ox, n, c, y, x);
            }
}

// The naive im2col of a host image, in double.
template <int dim, typename DType>
std::vector<double> NaiveUnpack(const Conv& p, const Tensor<cpu, dim, DType>& img) {
  const Shape<2> cs = p.col_shape();
  std::vector<double> col(static_cast<size_t>(cs.Size()), 0.0);
  ForEachTap(p, [&](index_t r, index_t k, index_t n, index_t c, index_t y, index_t x) {
    col[r * cs[1] + k] = ImageAt(img, n, c, y, x);
  });
  return col;
}
// The naive col2im (a scatter-add) of a host column matrix, in double, laid out (n, c, y, x).
template <typename DType>
std::vector<double> NaivePack(const Conv& p, const Tensor<cpu, 2, DType>& col) {
  std::vector<double> img(static_cast<size_t>(p.n * p.c * p.h * p.w), 0.0);
  ForEachTap(p, [&](index_t r, index_t k, index_t n, index_t c, index_t y, index_t x) {
    img[((n * p.c + c) * p.h + y) * p.w + x] += AsDouble(col.dptr_[r * col.stride_ + k]);
  });
  return img;
}

template <typename Device, int dim, typename DType>
TensorContainer<Device, dim, DType> Upload(const Tensor<cpu, dim, DType>& h, Stream<Device>* s, bool padded) {
  if (!padded) return ToDevice<Device>(h, s);
  TensorContainer<Device, dim, DType> d(true);
  d.set_stream(s);
  d.Resize(h.shape_);
  Copy(d.view(), h, s);
  Sync(s);
  return d;
}
template <typename Device, int dim, typename DType>
TensorContainer<Device, dim, DType> Poisoned(const Shape<dim>& shape, Stream<Device>* s, bool padded) {
  TensorContainer<cpu, dim, DType> h(shape);
  Poison(h.view());
  return Upload<Device>(h.view(), s, padded);
}

template <typename Device, int dim, typename DType>
auto Unpack(const Conv& p, const Tensor<Device, dim, DType>& img) {
  return unpack_patch2col(img, p.ky, p.kx, p.sy, p.sx, p.dy, p.dx, p.py, p.px);
}
template <typename Device, int dim, typename DType>
auto Pack(const Conv& p, const Tensor<Device, 2, DType>& col) {
  return pack_col2patch(col, ImageShape<dim>(p), p.ky, p.kx, p.sy, p.sx, p.dy, p.dx, p.py, p.px);
}

// unpack and pack of one configuration against the naive loops (=, +=), and the adjoint identity.
template <typename Device, int dim, typename DType = float>
void CheckConv(const Conv& p, bool padded, Stream<Device>* s) {
  INFO(p << (dim == 3 ? " (3-D image)" : " (4-D batch)") << (padded ? ", row-padded operands" : ""));
  const Shape<dim> ishape = ImageShape<dim>(p);
  const Shape<2> cshape = p.col_shape();
  // test_util's At / CheckAll read elements through float, so double results compare at float precision.
  const double tol = std::is_same<DType, double>::value ? 1e-6 : Tol<DType>();

  TensorContainer<cpu, dim, DType> img(ishape);
  FillRandom(img.view());
  auto dimg = Upload<Device>(img.view(), s, padded);
  const auto e = Unpack(p, dimg.view());
  REQUIRE(e.shape() == cshape);
  const std::vector<double> ref_col = NaiveUnpack(p, img.view());
  auto col = Poisoned<Device, 2, DType>(cshape, s, !padded);
  col = e;
  CheckAll(ToHost(col.view()).view(), [&](const Shape<2>& i) { return ref_col[i[0] * cshape[1] + i[1]]; }, tol,
           "unpack_patch2col =");

  TensorContainer<cpu, 2, DType> ycol(cshape);
  FillRandom(ycol.view());
  auto dycol = Upload<Device>(ycol.view(), s, padded);
  const std::vector<double> ref_img = NaivePack(p, ycol.view());
  auto packed = Poisoned<Device, dim, DType>(ishape, s, !padded);
  packed = Pack<Device, dim>(p, dycol.view());
  const auto img_ref = [&](const Shape<dim>& i) {
    const index_t n = dim == 4 ? i[0] : 0;
    return ref_img[((n * p.c + i[dim - 3]) * p.h + i[dim - 2]) * p.w + i[dim - 1]];
  };
  // A pixel sums up to ky kx entries in the accumulation type.
  CheckAll(ToHost(packed.view()).view(), img_ref, tol * 4, "pack_col2patch =");

  // Adjoint: <unpack(x), y> == <x, pack(y)>, both sides from the library's results, in double.
  const auto hcol = ToHost(col.view());
  const auto hpacked = ToHost(packed.view());
  double lhs = 0, rhs = 0, scale = 0;
  ForEachIndex(cshape, [&](const Shape<2>& i) {
    const double v = Exact(hcol.view(), i) * Exact(ycol.view(), i);
    lhs += v;
    scale += std::fabs(v);
  });
  ForEachIndex(ishape, [&](const Shape<dim>& i) { rhs += Exact(img.view(), i) * Exact(hpacked.view(), i); });
  INFO("<unpack(x), y> = " << lhs << ", <x, pack(y)> = " << rhs);
  CHECK(std::fabs(lhs - rhs) <= Tol<DType>() * 4 * std::max(1.0, scale));

  // Nested in another expression, the CPU evaluates the plans (the GPU always does): same values.
  auto col2 = Poisoned<Device, 2, DType>(cshape, s, padded);
  col2 = e * 2;
  CheckAll(ToHost(col2.view()).view(), [&](const Shape<2>& i) { return 2 * ref_col[i[0] * cshape[1] + i[1]]; }, tol,
           "unpack_patch2col plan");
  auto packed2 = Poisoned<Device, dim, DType>(ishape, s, padded);
  packed2 = Pack<Device, dim>(p, dycol.view()) * 2;
  CheckAll(ToHost(packed2.view()).view(), [&](const Shape<dim>& i) { return 2 * img_ref(i); }, tol * 4,
           "pack_col2patch plan");

  // += onto random data.
  TensorContainer<cpu, 2, DType> base_col(cshape);
  FillRandom(base_col.view());
  auto acc_col = Upload<Device>(base_col.view(), s, padded);
  acc_col += e;
  CheckAll(ToHost(acc_col.view()).view(),
           [&](const Shape<2>& i) { return At(base_col.view(), i) + ref_col[i[0] * cshape[1] + i[1]]; }, tol * 2,
           "unpack_patch2col +=");
  TensorContainer<cpu, dim, DType> base_img(ishape);
  FillRandom(base_img.view());
  auto acc_img = Upload<Device>(base_img.view(), s, !padded);
  acc_img += Pack<Device, dim>(p, dycol.view());
  CheckAll(ToHost(acc_img.view()).view(), [&](const Shape<dim>& i) { return At(base_img.view(), i) + img_ref(i); },
           tol * 4, "pack_col2patch +=");
}

// A random image that fits the kernel geometry of `p` (its h, w, c, n are replaced).
Conv RandomImage(Conv p, index_t batch) {
  std::uniform_int_distribution<index_t> extra(0, 6), chans(1, 3);
  const index_t need_h = std::max<index_t>(p.dy * (p.ky - 1) + 1 - 2 * p.py, 1);
  const index_t need_w = std::max<index_t>(p.dx * (p.kx - 1) + 1 - 2 * p.px, 1);
  p.h = need_h + extra(Rng());
  p.w = need_w + extra(Rng());
  p.c = chans(Rng());
  p.n = batch;
  return p;
}

}  // namespace

TE_DEVICE_TEST_CASE("unpack_patch2col and pack_col2patch match the reference over strides, dilations and pads",
                    "[patch2col]") {
  const index_t kernels[][2] = {{1, 1}, {3, 3}, {2, 3}, {3, 1}, {1, 4}, {4, 2}};
  int which = 0;
  for (index_t sy = 1; sy <= 3; ++sy)
    for (index_t sx = 1; sx <= 3; ++sx)
      for (index_t dy = 1; dy <= 2; ++dy)
        for (index_t dx = 1; dx <= 2; ++dx)
          for (index_t py = 0; py <= 2; ++py)
            for (index_t px = 0; px <= 2; ++px, ++which) {
              const auto& k = kernels[which % 6];
              Conv p{1, 1, 1, 1, k[0], k[1], sy, sx, dy, dx, py, px};
              switch (which % 3) {
                case 0: CheckConv<Device, 3>(RandomImage(p, 1), which % 2 == 0, stream); break;
                case 1: CheckConv<Device, 4>(RandomImage(p, 1), which % 2 == 0, stream); break;
                default: CheckConv<Device, 4>(RandomImage(p, 1 + which % 3), which % 2 == 0, stream); break;
              }
            }
}

TE_DEVICE_TEST_CASE("patch2col at the edges: kernel as large as the padded image, 1x1, wide rows, empty batch",
                    "[patch2col]") {
  // The kernel covers the whole padded image: one output position.
  CheckConv<Device, 4>(Conv{2, 3, 5, 4, 3, 2, 1, 1, 2, 3, 1, 1}, false, stream);
  CheckConv<Device, 3>(Conv{1, 2, 1, 1, 3, 3, 2, 2, 1, 1, 1, 1}, true, stream);
  // Stride larger than the kernel: some pixels are read by no window.
  CheckConv<Device, 4>(Conv{2, 2, 11, 13, 2, 3, 3, 5, 1, 1, 0, 0}, true, stream);
  CheckConv<Device, 4>(Conv{1, 1, 9, 9, 2, 2, 3, 3, 2, 2, 2, 2}, false, stream);
  // 1x1 kernel, stride 1: im2col is a reshape.
  CheckConv<Device, 4>(Conv{3, 4, 5, 7, 1, 1, 1, 1, 1, 1, 0, 0}, false, stream);
  // A long row (1000+ columns).
  CheckConv<Device, 3>(Conv{1, 2, 3, 1031, 3, 3, 1, 2, 1, 2, 1, 2}, true, stream);
  // Larger dilation than the brief's minimum, with stride sharing a factor (gcd 2).
  CheckConv<Device, 4>(Conv{2, 2, 13, 12, 3, 3, 2, 2, 4, 2, 2, 1}, false, stream);
  CheckConv<Device, 4>(Conv{1, 1, 17, 16, 3, 2, 3, 2, 3, 5, 2, 0}, true, stream);
  // Dilation 3 with kernels long enough that one pixel meets several taps of one axis.
  CheckConv<Device, 4>(Conv{2, 2, 15, 14, 4, 4, 2, 1, 3, 3, 1, 2}, false, stream);
  CheckConv<Device, 3>(Conv{1, 3, 16, 19, 5, 4, 1, 2, 3, 3, 2, 0}, true, stream);
  // An empty batch: a (C ky kx, 0) matrix.
  TensorContainer<Device, 4, float> img(Shape4(0, 3, 5, 5));
  TensorContainer<Device, 2, float> col(Shape2(27, 0));
  col = unpack_patch2col(img.view(), 3, 3, 1, 1, 1, 1, 1, 1);
  CHECK(col.shape_ == Shape2(27, 0));
  img = pack_col2patch(col.view(), Shape4(0, 3, 5, 5), 3, 3, 1, 1, 1, 1, 1, 1);
  CHECK(img.shape_ == Shape4(0, 3, 5, 5));
}

TE_DEVICE_TEST_CASE("patch2col in double and half", "[patch2col]") {
  CheckConv<Device, 4, double>(Conv{2, 3, 7, 8, 3, 2, 2, 1, 1, 2, 1, 2}, true, stream);
  CheckConv<Device, 3, double>(Conv{1, 2, 9, 6, 2, 3, 1, 3, 2, 1, 2, 1}, false, stream);
  CheckConv<Device, 4, half_t>(Conv{2, 2, 6, 7, 3, 3, 1, 2, 1, 1, 1, 1}, false, stream);
}

TE_DEVICE_TEST_CASE("the mshadow argument forms and a padded source mean the same as the full form",
                    "[patch2col]") {
  TensorContainer<cpu, 4, float> h(Shape4(2, 3, 9, 8));
  FillRandom(h.view());
  auto img = ToDevice<Device>(h.view(), stream);
  const auto same = [&](const auto& got_expr, const Conv& p) {
    INFO(p);
    auto got = Poisoned<Device, 2, float>(p.col_shape(), stream, false);
    got = got_expr;
    const std::vector<double> ref = NaiveUnpack(p, h.view());
    const Shape<2> cs = p.col_shape();
    CheckAll(ToHost(got.view()).view(), [&](const Shape<2>& i) { return ref[i[0] * cs[1] + i[1]]; }, 1e-6);
  };
  // (img, ky, kx, stride, dilate)
  same(unpack_patch2col(img.view(), 3, 2, 2, 2), Conv{2, 3, 9, 8, 3, 2, 2, 2, 2, 2, 0, 0});
  // (img, ky, kx, stride)
  same(unpack_patch2col(img.view(), 2, 3, 3), Conv{2, 3, 9, 8, 2, 3, 3, 3, 1, 1, 0, 0});
  // (img, ky, kx, sy, sx, dy, dx)
  same(unpack_patch2col(img.view(), 3, 3, 1, 2, 2, 1), Conv{2, 3, 9, 8, 3, 3, 1, 2, 2, 1, 0, 0});
  // Padding through pad(img, ...) as mshadow users wrote it, versus the pad arguments.
  same(unpack_patch2col(pad(img.view(), 2, 1), 3, 3, 2, 1, 1, 2), Conv{2, 3, 9, 8, 3, 3, 2, 1, 1, 2, 2, 1});

  // pack_col2patch's short forms against the naive scatter.
  const Conv p{2, 3, 9, 8, 3, 2, 2, 2, 2, 2, 0, 0};
  TensorContainer<cpu, 2, float> hc(p.col_shape());
  FillRandom(hc.view());
  auto col = ToDevice<Device>(hc.view(), stream);
  const std::vector<double> ref = NaivePack(p, hc.view());
  auto out = Poisoned<Device, 4, float>(Shape4(2, 3, 9, 8), stream, true);
  out = pack_col2patch(col.view(), Shape4(2, 3, 9, 8), 3, 2, 2, 2);
  const auto ref_at = [&](const Shape<4>& i) { return ref[((i[0] * 3 + i[1]) * 9 + i[2]) * 8 + i[3]]; };
  CheckAll(ToHost(out.view()).view(), ref_at, 1e-5, "pack (ky, kx, stride, dilate)");
  out = pack_col2patch(col.view(), Shape4(2, 3, 9, 8), 3, 2, 2, 2, 2, 2);
  CheckAll(ToHost(out.view()).view(), ref_at, 1e-5, "pack (ky, kx, sy, sx, dy, dx)");
  const Conv q{2, 3, 9, 8, 2, 3, 3, 3, 1, 1, 0, 0};
  TensorContainer<cpu, 2, float> hq(q.col_shape());
  FillRandom(hq.view());
  auto colq = ToDevice<Device>(hq.view(), stream);
  const std::vector<double> refq = NaivePack(q, hq.view());
  out = pack_col2patch(colq.view(), Shape4(2, 3, 9, 8), 2, 3, 3);
  CheckAll(ToHost(out.view()).view(), [&](const Shape<4>& i) { return refq[((i[0] * 3 + i[1]) * 9 + i[2]) * 8 + i[3]]; },
           1e-5, "pack (ky, kx, stride)");
}

TE_DEVICE_TEST_CASE("patch2col of nested expressions", "[patch2col]") {
  // unpack of (2 a - b) and pack of (3 col): the plans compose with elementwise nodes.
  const Conv p{2, 2, 7, 6, 3, 2, 2, 1, 1, 2, 1, 1};
  TensorContainer<cpu, 4, float> ha(ImageShape<4>(p)), hb(ImageShape<4>(p)), hab(ImageShape<4>(p));
  FillRandom(ha.view());
  FillRandom(hb.view());
  ForEachIndex(hab.shape_, [&](const Shape<4>& i) {
    hab.dptr_[((i[0] * p.c + i[1]) * p.h + i[2]) * p.w + i[3]] = static_cast<float>(2.0 * At(ha.view(), i) - At(hb.view(), i));
  });
  auto a = ToDevice<Device>(ha.view(), stream);
  auto b = ToDevice<Device>(hb.view(), stream);
  auto col = Poisoned<Device, 2, float>(p.col_shape(), stream, false);
  col = unpack_patch2col(a.view() * 2.0f - b.view(), p.ky, p.kx, p.sy, p.sx, p.dy, p.dx, p.py, p.px);
  const std::vector<double> ref = NaiveUnpack(p, hab.view());
  const index_t width = p.col_shape()[1];
  CheckAll(ToHost(col.view()).view(), [&](const Shape<2>& i) { return ref[i[0] * width + i[1]]; }, 1e-5,
           "unpack(2a - b)");

  TensorContainer<cpu, 2, float> hc(p.col_shape());
  FillRandom(hc.view());
  auto dc = ToDevice<Device>(hc.view(), stream);
  const std::vector<double> refp = NaivePack(p, hc.view());
  auto out = Poisoned<Device, 4, float>(ImageShape<4>(p), stream, false);
  out = pack_col2patch(dc.view() * 3.0f, ImageShape<4>(p), p.ky, p.kx, p.sy, p.sx, p.dy, p.dx, p.py, p.px);
  CheckAll(ToHost(out.view()).view(),
           [&](const Shape<4>& i) { return 3.0 * refp[((i[0] * p.c + i[1]) * p.h + i[2]) * p.w + i[3]]; }, 1e-5,
           "pack(3 col)");
}

TE_DEVICE_TEST_CASE("patch2col rejects bad parameters with messages naming them", "[patch2col][errors]") {
  TensorContainer<Device, 4, float> img(Shape4(2, 3, 5, 6));
  const auto message = [](auto&& f) {
    try {
      f();
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  REQUIRE_THROWS_AS(unpack_patch2col(img.view(), 3, 3, 0, 1, 1, 1), Error);
  REQUIRE_THROWS_AS(unpack_patch2col(img.view(), 3, 3, 1, 1, 1, 0), Error);
  REQUIRE_THROWS_AS(unpack_patch2col(img.view(), 0, 3, 1, 1, 1, 1), Error);
  REQUIRE_THROWS_AS(unpack_patch2col(img.view(), 3, 3, 1, 1, 1, 1, -1, 0), Error);
  std::string m = message([&] { (void)unpack_patch2col(img.view(), 3, 3, 1, 0, 1, 1); });
  CHECK(m.find("unpack_patch2col") != std::string::npos);
  CHECK(m.find("stride 1x0") != std::string::npos);
  CHECK(m.find("(2,3,5,6)") != std::string::npos);
  m = message([&] { (void)unpack_patch2col(img.view(), 3, 3, 1, 1, 1, 1, 0, -2); });
  CHECK(m.find("-2") != std::string::npos);
  // Kernel larger than the (padded) image: 6 rows > 5, and 3 dilated by 3 = 7 columns > 6.
  REQUIRE_THROWS_AS(unpack_patch2col(img.view(), 6, 1, 1, 1), Error);
  m = message([&] { (void)unpack_patch2col(img.view(), 3, 3, 1, 1, 1, 3); });
  CHECK(m.find("3x7") != std::string::npos);
  CHECK(m.find("5x6") != std::string::npos);
  // ...which padding makes legal.
  CHECK(unpack_patch2col(img.view(), 3, 3, 1, 1, 1, 3, 0, 1).shape() == Shape2(27, 2 * 3 * 2));

  // pack_col2patch checks the column matrix against the image shape.
  TensorContainer<Device, 2, float> col(Shape2(27, 2 * 3 * 4));
  CHECK(pack_col2patch(col.view(), Shape4(2, 3, 5, 6), 3, 3, 1, 1, 1, 1).shape() == Shape4(2, 3, 5, 6));
  REQUIRE_THROWS_AS(pack_col2patch(col.view(), Shape4(2, 3, 5, 7), 3, 3, 1, 1, 1, 1), Error);
  m = message([&] { (void)pack_col2patch(col.view(), Shape4(1, 3, 5, 6), 3, 3, 1, 1, 1, 1); });
  CHECK(m.find("pack_col2patch") != std::string::npos);
  CHECK(m.find("(27,24)") != std::string::npos);
  CHECK(m.find("(27,12)") != std::string::npos);
  CHECK(m.find("(1,3,5,6)") != std::string::npos);
  REQUIRE_THROWS_AS(pack_col2patch(col.view(), Shape4(2, 3, 5, 6), 3, 3, 1, 1, 0, 1), Error);
  REQUIRE_THROWS_AS(pack_col2patch(col.view(), Shape3(3, 2, 6), 3, 3, 1, 1, 1, 1), Error);
}

TEST_CASE("PatchGeometry::Reach: one past the last window's last tap, saturating instead of wrapping",
          "[patch2col][cpu]") {
  PatchGeometry g;
  // Width 10, kernel 3 dilated by 2 (span 5), stride 2, padding 1 each side (12 padded): 4 outputs, the
  // last window starts at 6 and taps 6, 8 and 10 of the padded row, so 11 coordinates are reached.
  g.in[2] = 10, g.kernel[2] = 3, g.dilate[2] = 2, g.stride[2] = 2, g.pad[2] = 1, g.out[2] = 4;
  CHECK(g.Reach(2) == 11);
  CHECK(g.Reach(0) == 1);  // a filled-in axis: one output, a 1-tap kernel
  const index_t max = std::numeric_limits<index_t>::max();
  g.stride[1] = index_t(1) << 40, g.out[1] = index_t(1) << 30;  // (out - 1) * stride is past 2^63
  CHECK(g.Reach(1) == max);
  g.stride[1] = 1, g.out[1] = 1, g.kernel[1] = 3, g.dilate[1] = max / 2 + 1;  // the taps' span wraps
  CHECK(g.Reach(1) == max);
  g.kernel[1] = 2, g.dilate[1] = 1, g.out[1] = max;  // (max - 1) + 1, then the final + 1 would wrap
  CHECK(g.Reach(1) == max);
}
