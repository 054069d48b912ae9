// expr/pool.h — pooling of images over their last 1, 2 or 3 dimensions, and its gradient.
//   pool<Reducer>(src, ky, kx, sy, sx)          reduces every ky x kx window (stride sy, sx) of the last two
//                                               dimensions with red::maximum / red::sum / red::minimum;
//                                               output ((H - ky) / sy + 1, (W - kx) / sx + 1)
//   pool<Reducer>(src, pshape, ky, kx, sy, sx)  the same with the output size given (windows that run past
//                                               the image are clipped, as mshadow did: "ceil" pooling)
//   avg_pool(src, ...)                          pool<red::sum>(src, ...) / (ky kx)
//   unpool<Reducer>(src, pooled, grad, ky, kx, sy, sx)
//       the gradient of pool with respect to src: each input pixel receives the sum of grad over the
//       windows that cover it; for red::maximum / red::minimum only over the windows whose pooled value
//       it equals (ties all receive the gradient, as in mshadow).
//   pool<Reducer>(src, [pshape,] ky, kx, stride), unpool<Reducer>(src, pooled, grad, ky, kx, stride)
//       mshadow's one-stride forms (sy = sx = stride)
//   pool<Reducer>(src, windows), unpool<Reducer>(src, pooled, grad, windows)
//       the general form the Pooling operator runs: 1 to 3 spatial dimensions, dilation, padding (before
//       and after), and averages that divide by the padded or the valid window (PoolWindows).
// Both are gathers (each output element is computed by one thread), so they are deterministic. On the
// CPU a top-level unpool walks the windows instead (cpu/pool.h).
#pragma once
#include <algorithm>
#include <type_traits>
#include "base.h"
#include "map.h"
#include "../red.h"
#include "../index_div.h"
#include "../tensor.h"

namespace tensorexpr {

// How a pooled sum is divided: not at all (max, min, mshadow's sum), by the window clipped to the padded
// image (count_include_pad), or by the number of image elements in it.
enum class PoolDivisor { kNone, kPaddedWindow, kValidWindow };

// The windows of a pooling over the last nd (1 to 3) dimensions, held as 3-D (the leading spatial
// dimensions of extent 1, kernel 1, stride 1, dilation 1, no padding). Along an axis, window o reads the k
// taps o s - p + t d (t < k) that lie in the image [0, in); its padded extent counts the taps inside the
// padded image [-p, in + pe).
struct PoolWindows {
  int nd = 2;  // the axes before 3 - nd have extent 1, kernel 1, stride 1, no padding (Check says so)
  index_t in[3] = {1, 1, 1}, out[3] = {1, 1, 1}, k[3] = {1, 1, 1}, s[3] = {1, 1, 1}, p[3] = {0, 0, 0};
  index_t pe[3] = {0, 0, 0};  // padding after
  index_t d[3] = {1, 1, 1};   // dilation: the distance between taps
  PoolDivisor divisor = PoolDivisor::kNone;

  // Window o along axis a: image elements lo, lo + step, ... below hi; `span` taps in the padded image.
  struct Range {
    index_t lo, hi, span, step;
  };
  TE_XINLINE Range At(int a, index_t o) const {
    const index_t start = o * s[a] - p[a], step = d[a];
    const index_t lo = start >= 0 ? start : start + (step - 1 - start) / step * step;  // the first tap >= 0
    const index_t last = start + (k[a] - 1) * step;
    const index_t padded = (in[a] + pe[a] - start + step - 1) / step;  // taps before the padded image's end
    return Range{lo, last < in[a] ? last + 1 : in[a], padded < k[a] ? padded : k[a], step};
  }
  // The taps of a range inside the image.
  TE_XINLINE static index_t Taps(const Range& r) { return r.hi > r.lo ? (r.hi - r.lo + r.step - 1) / r.step : 0; }
  // What the sum of the window (od, oh, ow), given its three ranges, is divided by.
  TE_XINLINE index_t Count(const Range& rd, const Range& rh, const Range& rw) const {
    return divisor == PoolDivisor::kPaddedWindow ? rd.span * rh.span * rw.span : Taps(rd) * Taps(rh) * Taps(rw);
  }
  // Throws unless nd is 1 to 3, the leading axes are trivial and every window holds an image element.
  void Check(const char* op) const {
    TE_CHECK(nd >= 1 && nd <= 3, op, ": pooling over ", nd, " dimensions (1 to 3 are supported)");
    for (int a = 0; a < 3; ++a) {
      const bool leading = a < 3 - nd;
      TE_CHECK(!leading || (in[a] == 1 && out[a] == 1 && k[a] == 1 && s[a] == 1 && p[a] == 0 && pe[a] == 0 && d[a] == 1),
               op, ": axis ", a, " is outside the ", nd,
               " pooled dimensions, so its extent, kernel, stride and dilation must be 1 and its padding 0");
      const bool sizes = k[a] >= 1 && s[a] >= 1 && d[a] >= 1 && in[a] >= 0 && out[a] >= 0;
      TE_CHECK(sizes && p[a] >= 0 && p[a] <= (k[a] - 1) * d[a] && pe[a] >= 0 && pe[a] <= (k[a] - 1) * d[a], op,
               ": axis ", a, " has kernel ", k[a], ", stride ", s[a], ", dilation ", d[a], ", padding ", p[a], " and ",
               pe[a], " (need kernel, stride and dilation >= 1, 0 <= padding < the dilated kernel's extent)");
      TE_CHECK(out[a] == 0 || (out[a] - 1) <= (in[a] + p[a] - 1) / s[a], op, ": axis ", a, " has ", out[a],
               " windows; the last starts past the image (", in[a], " + padding ", p[a], ", stride ", s[a], ")");
      // Undilated windows that start inside the image or its leading padding, shorter than the kernel, always
      // hold an element; dilated ones may step over a small image.
      for (index_t o = 0; d[a] > 1 && o < out[a]; ++o)
        TE_CHECK(Taps(At(a, o)) > 0, op, ": window ", o, " of axis ", a, " (kernel ", k[a], ", dilation ", d[a],
                 ", stride ", s[a], ", padding ", p[a], ") holds no element of the ", in[a], " the axis has");
    }
  }
  // Whether the windows tile the image (kernel = stride, no padding or dilation): each element lies in at
  // most one.
  bool Tiles() const {
    for (int a = 0; a < 3; ++a)
      if (k[a] != s[a] || p[a] != 0 || pe[a] != 0 || d[a] != 1) return false;
    return true;
  }
  // 2 x 2 windows of stride 2 over an image (the commonest pooling), which the CPU loops read row by row.
  bool TwoByTwoTiles() const { return nd == 2 && Tiles() && k[1] == 2 && k[2] == 2; }
  // The windows that may cover coordinate i along axis a: [*o0, *o1] (empty when *o0 > *o1); with dilation
  // only those whose taps land on i (Hits) do. by_stride divides by s[a] (a plan's IndexDiv: a 64-bit
  // division is slow on a GPU).
  TE_XINLINE void Covering(int a, const IndexDiv& by_stride, index_t i, index_t* o0, index_t* o1) const {
    const index_t reach = (k[a] - 1) * d[a];  // from a window's first tap to its last
    *o0 = i + p[a] <= reach ? 0 : by_stride.Div(i + p[a] - reach - 1) + 1;
    const index_t last = by_stride.Div(i + p[a]);
    *o1 = last < out[a] - 1 ? last : out[a] - 1;
  }
  TE_XINLINE bool Hits(int a, index_t i, index_t o) const { return d[a] == 1 || (i + p[a] - o * s[a]) % d[a] == 0; }
};

namespace expr {

namespace detail {
inline void CheckPoolWindow(const char* op, index_t in_h, index_t in_w, index_t out_h, index_t out_w, index_t ksize_y,
                            index_t ksize_x, index_t stride_y, index_t stride_x) {
  TE_CHECK(ksize_y >= 1 && ksize_x >= 1 && stride_y >= 1 && stride_x >= 1, op,
           ": kernel and stride must be at least 1, got kernel ", ksize_y, "x", ksize_x, ", stride ", stride_y, "x",
           stride_x, " for image ", in_h, "x", in_w);
  TE_CHECK(ksize_y <= in_h && ksize_x <= in_w, op, ": kernel ", ksize_y, "x", ksize_x, " is larger than the image ",
           in_h, "x", in_w);
  // Every window must start inside the image, or it would reduce nothing: (out - 1) stride < in, written as a
  // division so that a huge out or stride cannot wrap.
  TE_CHECK(out_h >= 0 && out_w >= 0 && (out_h == 0 || out_h - 1 <= (in_h - 1) / stride_y) &&
               (out_w == 0 || out_w - 1 <= (in_w - 1) / stride_x), op,
           ": pooled size ", out_h, "x", out_w, " has windows starting outside the image ", in_h, "x", in_w,
           " (stride ", stride_y, "x", stride_x, ")");
}

// mshadow's 2-D windows: no padding, the output size given, nothing divided.
inline PoolWindows Windows2D(index_t in_h, index_t in_w, index_t out_h, index_t out_w, index_t ksize_y,
                             index_t ksize_x, index_t stride_y, index_t stride_x) {
  PoolWindows w;
  w.nd = 2;
  w.in[1] = in_h, w.in[2] = in_w, w.out[1] = out_h, w.out[2] = out_w;
  w.k[1] = ksize_y, w.k[2] = ksize_x, w.s[1] = stride_y, w.s[2] = stride_x;
  return w;
}

// Image row -> (plane, z, y) for rows of extents (D, H) per plane (rows count over every plane).
struct PoolRows {
  IndexDiv height, depth;
  bool flat;  // a depth of 1: one division
  static PoolRows Make(index_t depth, index_t height) {
    return PoolRows{IndexDiv::Make(height), IndexDiv::Make(depth), depth == 1};
  }
  TE_XINLINE index_t Split(index_t row, index_t* z, index_t* y) const {
    if (flat) {
      *z = 0;
      return height.DivMod(row, y);
    }
    return depth.DivMod(height.DivMod(row, y), z);
  }
};

// The shape of the last nd dimensions replaced by extents[3 - nd...].
template <int dim>
inline Shape<dim> WithSpatial(Shape<dim> s, int nd, const index_t* extents) {
  for (int i = 0; i < nd; ++i) s[dim - nd + i] = extents[3 - nd + i];
  return s;
}
}  // namespace detail

// ---- pool<Reducer>(src, ...) ------------------------------------------------------------------------
template <typename Reducer, typename E>
struct PoolingExp : public Exp<PoolingExp<Reducer, E>, typename E::value_type, type::kChainer> {
  using DType = typename E::value_type;
  static_assert(E::kDim >= 2, "pool<Reducer>(src, ...) pools the last two dimensions (H, W) or more, so its source needs at least two dimensions");
  static_assert(E::kExpType != type::kComplex, "pool(...) cannot take dot(...) directly; assign the product to a tensor first");
  static constexpr int kDim = E::kDim;
  static constexpr bool kFlat = false;
  using device_type = typename E::device_type;
  // Only a sum is divided (an average); max and min windows are not.
  static constexpr bool kDivides = std::is_same<Reducer, red::sum>::value;
  E src_;
  PoolWindows w_;

  PoolingExp(const E& src, const PoolWindows& w) : src_(src), w_(w) {
    TE_CHECK(kDivides || w.divisor == PoolDivisor::kNone, "pool: only red::sum windows are divided (averaged)");
    w.Check("pool");
    TE_CHECK(w.nd <= kDim, "pool: ", w.nd, " pooled dimensions do not fit a source of ", kDim, " dimensions");
    const Shape<kDim> in = src_.shape();
    for (int i = 0; i < w.nd; ++i)
      TE_CHECK(in[kDim - w.nd + i] == w.in[3 - w.nd + i], "pool: source shape ", in, " does not match the windows' image");
  }
  Shape<kDim> shape() const { return detail::WithSpatial(src_.shape(), w_.nd, w_.out); }

  // The pooled value of one window of a plane, given its ranges: what Eval computes, and what the CPU's
  // row loop (cpu/pool.h) computes without the per-element index split.
  TE_XINLINE static DType Window(const typename E::Plan& src, const PoolWindows& w, index_t plane,
                                 const PoolWindows::Range& rd, const PoolWindows::Range& rh,
                                 const PoolWindows::Range& rw) {
    using A = accum_t<DType>;
    A acc = Reducer::template Init<A, DType>();
    for (index_t d = rd.lo; d < rd.hi; d += rd.step)
      for (index_t r = (plane * w.in[0] + d) * w.in[1] + rh.lo, r1 = r - rh.lo + rh.hi; r < r1; r += rh.step)
        for (index_t c = rw.lo; c < rw.hi; c += rw.step) Reducer::template Reduce<A>(acc, static_cast<A>(src.Eval(r, c)));
    if constexpr (kDivides) {
      if (w.divisor != PoolDivisor::kNone) acc = acc / static_cast<A>(w.Count(rd, rh, rw));
    }
    return static_cast<DType>(acc);
  }

  struct Plan {
    typename E::Plan src_;
    detail::PoolRows out_rows_;  // output row -> (plane, od, oh)
    PoolWindows w_;
    TE_XINLINE DType Eval(index_t y, index_t x) const {
      index_t od, oh;
      const index_t plane = out_rows_.Split(y, &od, &oh);
      const PoolWindows::Range rd = w_.nd < 3 ? PoolWindows::Range{0, 1, 1, 1} : w_.At(0, od);
      return Window(src_, w_, plane, rd, w_.At(1, oh), w_.At(2, x));
    }
  };
  Plan plan() const { return Plan{src_.plan(), detail::PoolRows::Make(w_.out[0], w_.out[1]), w_}; }
};

// The general form: the windows say everything (Pooling's N-D, padded, averaging form).
// Reducer: one of ours or one written to mshadow's interface (red::reducer_t, red.h).
template <typename Reducer, typename E, typename DType, int etype>
inline PoolingExp<red::reducer_t<Reducer>, E> pool(const Exp<E, DType, etype>& src, const PoolWindows& windows) {
  return PoolingExp<red::reducer_t<Reducer>, E>(src.self(), windows);
}
// Output pshape (rows, columns of windows); windows running past the image are clipped.
template <typename Reducer, typename E, typename DType, int etype>
inline PoolingExp<red::reducer_t<Reducer>, E> pool(const Exp<E, DType, etype>& src, Shape<2> pshape, index_t ksize_y,
                                   index_t ksize_x, index_t stride_y, index_t stride_x) {
  const Shape<E::kDim> in = src.self().shape();
  const index_t h = in[E::kDim - 2], w = in[E::kDim - 1];
  detail::CheckPoolWindow("pool", h, w, pshape[0], pshape[1], ksize_y, ksize_x, stride_y, stride_x);
  return PoolingExp<red::reducer_t<Reducer>, E>(src.self(),
                                                detail::Windows2D(h, w, pshape[0], pshape[1], ksize_y, ksize_x, stride_y, stride_x));
}
// Output ((H - ky) / sy + 1, (W - kx) / sx + 1).
template <typename Reducer, typename E, typename DType, int etype>
inline PoolingExp<red::reducer_t<Reducer>, E> pool(const Exp<E, DType, etype>& src, index_t ksize_y,
                                                   index_t ksize_x, index_t stride_y, index_t stride_x) {
  const Shape<E::kDim> in = src.self().shape();
  const index_t h = in[E::kDim - 2], w = in[E::kDim - 1];
  detail::CheckPoolWindow("pool", h, w, 1, 1, ksize_y, ksize_x, stride_y, stride_x);
  return pool<Reducer>(src, Shape2((h - ksize_y) / stride_y + 1, (w - ksize_x) / stride_x + 1), ksize_y, ksize_x,
                       stride_y, stride_x);
}

// mshadow's one-stride forms: the same stride along both axes.
template <typename Reducer, typename E, typename DType, int etype>
inline auto pool(const Exp<E, DType, etype>& src, index_t ksize_y, index_t ksize_x, index_t stride) {
  return pool<Reducer>(src, ksize_y, ksize_x, stride, stride);
}
template <typename Reducer, typename E, typename DType, int etype>
inline auto pool(const Exp<E, DType, etype>& src, Shape<2> pshape, index_t ksize_y, index_t ksize_x, index_t stride) {
  return pool<Reducer>(src, pshape, ksize_y, ksize_x, stride, stride);
}

// Average pooling: the window sum times 1 / (ky kx) (clipped windows are still divided by ky kx).
template <typename E, typename DType, int etype>
inline auto avg_pool(const Exp<E, DType, etype>& src, index_t ksize_y, index_t ksize_x, index_t stride_y,
                     index_t stride_x) {
  static_assert(!std::is_integral<DType>::value, "avg_pool needs a floating-point dtype; use pool<red::sum> for integers");
  return pool<red::sum>(src, ksize_y, ksize_x, stride_y, stride_x) *
         DType(1.0 / static_cast<double>(ksize_y * ksize_x));
}
template <typename E, typename DType, int etype>
inline auto avg_pool(const Exp<E, DType, etype>& src, Shape<2> pshape, index_t ksize_y, index_t ksize_x,
                     index_t stride_y, index_t stride_x) {
  static_assert(!std::is_integral<DType>::value, "avg_pool needs a floating-point dtype; use pool<red::sum> for integers");
  return pool<red::sum>(src, pshape, ksize_y, ksize_x, stride_y, stride_x) *
         DType(1.0 / static_cast<double>(ksize_y * ksize_x));
}

// ---- unpool<Reducer>(src, pooled, grad, ...) --------------------------------------------------------
// Which windows pass their gradient to an input pixel.
template <typename Reducer>
struct unpool_route {
  static_assert(std::is_same<Reducer, red::sum>::value || std::is_same<Reducer, red::maximum>::value ||
                    std::is_same<Reducer, red::minimum>::value,
                "unpool<Reducer> knows the gradients of red::sum, red::maximum and red::minimum only");
  // sum: every covering window; maximum / minimum: the windows whose pooled value the pixel equals.
  static constexpr bool kEveryWindow = std::is_same<Reducer, red::sum>::value;
  // Whether a pixel of value v receives the gradient of a window pooled to m. NaN propagates through max /
  // min (red.h), so a NaN window passes its gradient to its NaN pixels (NaN == NaN is false).
  template <typename DType>
  TE_XINLINE static bool Routes(DType v, DType m) {
    return v == m || (!(v == v) && !(m == m));
  }
};

template <typename Reducer, typename ES, typename EP, typename EG>
struct UnPoolingExp : public Exp<UnPoolingExp<Reducer, ES, EP, EG>, typename ES::value_type, type::kChainer> {
  using DType = typename ES::value_type;
  static_assert(ES::kDim >= 2, "unpool<Reducer>(src, ...) routes gradients over the last two dimensions (H, W) or more, so its operands need at least two dimensions");
  static_assert(ES::kDim == EP::kDim && ES::kDim == EG::kDim, "unpool(src, pooled, grad, ...): the three operands must have the same number of dimensions");
  static_assert(ES::kExpType != type::kComplex && EP::kExpType != type::kComplex && EG::kExpType != type::kComplex,
                "unpool(...) cannot take dot(...) directly; assign the product to a tensor first");
  static constexpr int kDim = ES::kDim;
  static constexpr bool kFlat = false;
  using device_type = typename common_device<typename common_device<typename ES::device_type, typename EP::device_type>::type,
                                             typename EG::device_type>::type;
  ES src_;
  EP pooled_;
  EG grad_;
  PoolWindows w_;

  UnPoolingExp(const ES& src, const EP& pooled, const EG& grad, const PoolWindows& w)
      : src_(src), pooled_(pooled), grad_(grad), w_(w) {
    TE_CHECK(unpool_route<Reducer>::kEveryWindow || w.divisor == PoolDivisor::kNone,
             "unpool: only red::sum windows are divided (averaged)");
    w.Check("unpool");
    TE_CHECK(w.nd <= kDim, "unpool: ", w.nd, " pooled dimensions do not fit operands of ", kDim, " dimensions");
    const Shape<kDim> s = src_.shape(), p = pooled_.shape(), g = grad_.shape();
    TE_CHECK(p == g, "unpool: pooled data shape ", p, " and pooled gradient shape ", g, " differ");
    TE_CHECK(s == detail::WithSpatial(p, w.nd, w.in) && p == detail::WithSpatial(s, w.nd, w.out),
             "unpool: source shape ", s, " and pooled shape ", p, " do not match the windows (", w.nd,
             " pooled dimensions)");
  }
  Shape<kDim> shape() const { return src_.shape(); }

  struct Plan {
    typename ES::Plan src_;
    typename EP::Plan pooled_;
    typename EG::Plan grad_;
    detail::PoolRows in_rows_;  // input row -> (plane, z, y)
    IndexDiv by_stride_[3];
    bool tiles_;  // kernel = stride, no padding or dilation along every axis
    PoolWindows w_;
    TE_XINLINE DType Eval(index_t y, index_t x) const {
      using A = accum_t<DType>;
      const PoolWindows& w = w_;
      index_t iz, iy;
      const index_t plane = in_rows_.Split(y, &iz, &iy);
      index_t d0 = 0, d1 = 0, h0, h1, w0, w1;
      if (tiles_) {  // windows that tile the image: at most one covers the pixel
        d0 = d1 = by_stride_[0].Div(iz), h0 = h1 = by_stride_[1].Div(iy), w0 = w1 = by_stride_[2].Div(x);
      } else {
        if (w.nd == 3) w.Covering(0, by_stride_[0], iz, &d0, &d1);
        w.Covering(1, by_stride_[1], iy, &h0, &h1);
        w.Covering(2, by_stride_[2], x, &w0, &w1);
      }
      if (w0 >= w.out[2] || h0 >= w.out[1] || d0 >= w.out[0]) return DType(0);  // past the last window
      DType v = DType(0);
      if constexpr (!unpool_route<Reducer>::kEveryWindow) v = src_.Eval(y, x);
      A acc = A(0);
      for (index_t od = d0; od <= d1; ++od)
        for (index_t oh = h0; oh <= h1; ++oh) {
          if (!w.Hits(0, iz, od) || !w.Hits(1, iy, oh)) continue;  // a dilated window stepping over the pixel
          const index_t row = (plane * w.out[0] + od) * w.out[1] + oh;
          for (index_t ow = w0; ow <= w1; ++ow) {
            if (!w.Hits(2, x, ow)) continue;
            // Both operands are read before the test (the loads then overlap), and a window that does not
            // route adds an exact zero (a NaN gradient stays in its own window).
            A g = static_cast<A>(grad_.Eval(row, ow));
            if constexpr (unpool_route<Reducer>::kEveryWindow) {
              if (w.divisor != PoolDivisor::kNone) g = g / static_cast<A>(w.Count(w.At(0, od), w.At(1, oh), w.At(2, ow)));
            } else {
              g = unpool_route<Reducer>::Routes(v, pooled_.Eval(row, ow)) ? g : A(0);
            }
            acc += g;
          }
        }
      return static_cast<DType>(acc);
    }
  };
  Plan plan() const {
    return Plan{src_.plan(), pooled_.plan(), grad_.plan(), detail::PoolRows::Make(w_.in[0], w_.in[1]),
                {IndexDiv::Make(w_.s[0]), IndexDiv::Make(w_.s[1]), IndexDiv::Make(w_.s[2])}, w_.Tiles(), w_};
  }
};

// The general form: the windows the forward pool<Reducer>(src, windows) used.
template <typename Reducer, typename ES, typename EP, typename EG, typename DType, int es, int ep, int eg>
inline UnPoolingExp<Reducer, ES, EP, EG> unpool(const Exp<ES, DType, es>& data_src, const Exp<EP, DType, ep>& data_pooled,
                                                const Exp<EG, DType, eg>& grad_pooled, const PoolWindows& windows) {
  return UnPoolingExp<Reducer, ES, EP, EG>(data_src.self(), data_pooled.self(), grad_pooled.self(), windows);
}
// mshadow's form: the 2-D windows of pool<Reducer>(src, pshape, ky, kx, sy, sx), pshape read from pooled.
template <typename Reducer, typename ES, typename EP, typename EG, typename DType, int es, int ep, int eg>
inline UnPoolingExp<Reducer, ES, EP, EG> unpool(const Exp<ES, DType, es>& data_src, const Exp<EP, DType, ep>& data_pooled,
                                                const Exp<EG, DType, eg>& grad_pooled, index_t ksize_y,
                                                index_t ksize_x, index_t stride_y, index_t stride_x) {
  constexpr int kDim = ES::kDim;
  const Shape<kDim> s = data_src.self().shape(), p = data_pooled.self().shape();
  detail::CheckPoolWindow("unpool", s[kDim - 2], s[kDim - 1], p[kDim - 2], p[kDim - 1], ksize_y, ksize_x, stride_y,
                          stride_x);
  return unpool<Reducer>(data_src, data_pooled, grad_pooled,
                         detail::Windows2D(s[kDim - 2], s[kDim - 1], p[kDim - 2], p[kDim - 1], ksize_y, ksize_x,
                                           stride_y, stride_x));
}

// mshadow's one-stride form.
template <typename Reducer, typename ES, typename EP, typename EG, typename DType, int es, int ep, int eg>
inline auto unpool(const Exp<ES, DType, es>& data_src, const Exp<EP, DType, ep>& data_pooled,
                   const Exp<EG, DType, eg>& grad_pooled, index_t ksize_y, index_t ksize_x, index_t stride) {
  return unpool<Reducer>(data_src, data_pooled, grad_pooled, ksize_y, ksize_x, stride, stride);
}

}  // namespace expr
}  // namespace tensorexpr
