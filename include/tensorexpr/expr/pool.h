// expr/pool.h — spatial pooling of images (..., C, H, W) and its gradient.
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
}  // namespace detail

// ---- pool<Reducer>(src, ...) ------------------------------------------------------------------------
template <typename Reducer, typename E>
struct PoolingExp : public Exp<PoolingExp<Reducer, E>, typename E::value_type, type::kChainer> {
  using DType = typename E::value_type;
  static_assert(E::kDim >= 2, "pool<Reducer>(src, ...) pools the last two dimensions (H, W), so its source needs at least two dimensions");
  static_assert(E::kExpType != type::kComplex, "pool(...) cannot take dot(...) directly; assign the product to a tensor first");
  static constexpr int kDim = E::kDim;
  static constexpr bool kFlat = false;
  using device_type = typename E::device_type;
  E src_;
  index_t ksize_y_, ksize_x_, stride_y_, stride_x_, out_height_, out_width_;

  PoolingExp(const E& src, Shape<2> pshape, index_t ksize_y, index_t ksize_x, index_t stride_y, index_t stride_x)
      : src_(src), ksize_y_(ksize_y), ksize_x_(ksize_x), stride_y_(stride_y), stride_x_(stride_x),
        out_height_(pshape[0]), out_width_(pshape[1]) {
    const Shape<kDim> in = src_.shape();
    detail::CheckPoolWindow("pool", in[kDim - 2], in[kDim - 1], out_height_, out_width_, ksize_y, ksize_x, stride_y,
                            stride_x);
  }
  Shape<kDim> shape() const {
    Shape<kDim> s = src_.shape();
    s[kDim - 2] = out_height_;
    s[kDim - 1] = out_width_;
    return s;
  }

  struct Plan {
    typename E::Plan src_;
    IndexDiv out_height_;  // output row -> (plane, window row)
    index_t in_height_, in_width_, ksize_y_, ksize_x_, stride_y_, stride_x_;
    TE_XINLINE DType Eval(index_t y, index_t x) const {
      using A = accum_t<DType>;
      index_t py;
      const index_t plane = out_height_.DivMod(y, &py);
      const index_t y0 = py * stride_y_, x0 = x * stride_x_;
      const index_t y1 = y0 + ksize_y_ < in_height_ ? y0 + ksize_y_ : in_height_;
      const index_t x1 = x0 + ksize_x_ < in_width_ ? x0 + ksize_x_ : in_width_;
      A acc = Reducer::template Init<A, DType>();
      for (index_t r = plane * in_height_ + y0, r1 = plane * in_height_ + y1; r < r1; ++r) {
        for (index_t c = x0; c < x1; ++c) Reducer::template Reduce<A>(acc, static_cast<A>(src_.Eval(r, c)));
      }
      return static_cast<DType>(acc);
    }
  };
  Plan plan() const {
    const Shape<kDim> in = src_.shape();
    return Plan{src_.plan(), IndexDiv::Make(out_height_), in[kDim - 2], in[kDim - 1],
                ksize_y_, ksize_x_, stride_y_, stride_x_};
  }
};

// Output ((H - ky) / sy + 1, (W - kx) / sx + 1).
template <typename Reducer, typename E, typename DType, int etype>
inline PoolingExp<Reducer, E> pool(const Exp<E, DType, etype>& src, index_t ksize_y, index_t ksize_x,
                                   index_t stride_y, index_t stride_x) {
  const Shape<E::kDim> in = src.self().shape();
  const index_t h = in[E::kDim - 2], w = in[E::kDim - 1];
  detail::CheckPoolWindow("pool", h, w, 1, 1, ksize_y, ksize_x, stride_y, stride_x);
  return PoolingExp<Reducer, E>(src.self(), Shape2((h - ksize_y) / stride_y + 1, (w - ksize_x) / stride_x + 1),
                                ksize_y, ksize_x, stride_y, stride_x);
}
// Output pshape (rows, columns of windows); windows running past the image are clipped.
template <typename Reducer, typename E, typename DType, int etype>
inline PoolingExp<Reducer, E> pool(const Exp<E, DType, etype>& src, Shape<2> pshape, index_t ksize_y,
                                   index_t ksize_x, index_t stride_y, index_t stride_x) {
  return PoolingExp<Reducer, E>(src.self(), pshape, ksize_y, ksize_x, stride_y, stride_x);
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
  static_assert(ES::kDim >= 2, "unpool<Reducer>(src, ...) routes gradients over the last two dimensions (H, W), so its operands need at least two dimensions");
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
  index_t ksize_y_, ksize_x_, stride_y_, stride_x_;

  UnPoolingExp(const ES& src, const EP& pooled, const EG& grad, index_t ksize_y, index_t ksize_x, index_t stride_y,
               index_t stride_x)
      : src_(src), pooled_(pooled), grad_(grad), ksize_y_(ksize_y), ksize_x_(ksize_x), stride_y_(stride_y),
        stride_x_(stride_x) {
    const Shape<kDim> s = src_.shape(), p = pooled_.shape(), g = grad_.shape();
    TE_CHECK(p == g, "unpool: pooled data shape ", p, " and pooled gradient shape ", g, " differ");
    bool same_planes = true;
    for (int k = 0; k < kDim - 2; ++k) same_planes = same_planes && s[k] == p[k];
    TE_CHECK(same_planes, "unpool: source shape ", s, " and pooled shape ", p, " differ before the last two dimensions");
    detail::CheckPoolWindow("unpool", s[kDim - 2], s[kDim - 1], p[kDim - 2], p[kDim - 1], ksize_y, ksize_x, stride_y,
                            stride_x);
  }
  Shape<kDim> shape() const { return src_.shape(); }

  struct Plan {
    typename ES::Plan src_;
    typename EP::Plan pooled_;
    typename EG::Plan grad_;
    IndexDiv in_height_, stride_y_, stride_x_;
    index_t ksize_y_, ksize_x_, pooled_height_, pooled_width_;
    TE_XINLINE DType Eval(index_t y, index_t x) const {
      using A = accum_t<DType>;
      index_t iy;
      const index_t plane = in_height_.DivMod(y, &iy);
      // Windows o cover i when o s <= i < o s + k: o in [(i - k) / s + 1, i / s] (clipped to the grid).
      const index_t oy0 = iy < ksize_y_ ? 0 : stride_y_.Div(iy - ksize_y_) + 1;
      const index_t ox0 = x < ksize_x_ ? 0 : stride_x_.Div(x - ksize_x_) + 1;
      index_t oy1 = stride_y_.Div(iy), ox1 = stride_x_.Div(x);
      if (oy1 > pooled_height_ - 1) oy1 = pooled_height_ - 1;
      if (ox1 > pooled_width_ - 1) ox1 = pooled_width_ - 1;
      A acc = A(0);
      if constexpr (unpool_route<Reducer>::kEveryWindow) {
        for (index_t r = plane * pooled_height_ + oy0, r1 = plane * pooled_height_ + oy1; r <= r1; ++r)
          for (index_t c = ox0; c <= ox1; ++c) acc += static_cast<A>(grad_.Eval(r, c));
      } else {
        const DType v = src_.Eval(y, x);
        for (index_t r = plane * pooled_height_ + oy0, r1 = plane * pooled_height_ + oy1; r <= r1; ++r)
          for (index_t c = ox0; c <= ox1; ++c)
            acc += static_cast<A>(unpool_route<Reducer>::Routes(v, pooled_.Eval(r, c))) * static_cast<A>(grad_.Eval(r, c));
      }
      return static_cast<DType>(acc);
    }
  };
  Plan plan() const {
    const Shape<kDim> s = src_.shape(), p = pooled_.shape();
    return Plan{src_.plan(), pooled_.plan(), grad_.plan(),
                IndexDiv::Make(s[kDim - 2]), IndexDiv::Make(stride_y_), IndexDiv::Make(stride_x_),
                ksize_y_, ksize_x_, p[kDim - 2], p[kDim - 1]};
  }
};

template <typename Reducer, typename ES, typename EP, typename EG, typename DType, int es, int ep, int eg>
inline UnPoolingExp<Reducer, ES, EP, EG> unpool(const Exp<ES, DType, es>& data_src, const Exp<EP, DType, ep>& data_pooled,
                                                const Exp<EG, DType, eg>& grad_pooled, index_t ksize_y,
                                                index_t ksize_x, index_t stride_y, index_t stride_x) {
  return UnPoolingExp<Reducer, ES, EP, EG>(data_src.self(), data_pooled.self(), grad_pooled.self(), ksize_y, ksize_x,
                                           stride_y, stride_x);
}

}  // namespace expr
}  // namespace tensorexpr
