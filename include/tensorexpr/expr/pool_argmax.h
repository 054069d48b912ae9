// expr/pool_argmax.h — pool_argmax(src, windows): where each max-pooling window's maximum is (ONNX MaxPool's
// Indices output, storage_order 0): an int64_t per window, the flat row-major index of that element in the
// source seen as (planes, D, H, W) — for a dense (N, C, spatial...) tensor, its index in the whole tensor.
// The first element equal to the maximum in the window's row-major order wins ties; a window holding NaN
// points at its first NaN (the maximum propagates NaN, red.h). Windows are PoolWindows (expr/pool.h). A
// gather (one thread per window): deterministic on every device.
#pragma once
#include <cstdint>
#include "pool.h"

namespace tensorexpr {
namespace expr {

template <typename E>
struct PoolArgmaxExp : public Exp<PoolArgmaxExp<E>, int64_t, type::kChainer> {
  using DType = typename E::value_type;
  static_assert(E::kDim >= 2, "pool_argmax(src, windows) needs a source of at least two dimensions");
  static_assert(E::kExpType != type::kComplex, "pool_argmax(...) cannot take dot(...) directly; assign the product to a tensor first");
  static constexpr int kDim = E::kDim;
  static constexpr bool kFlat = false;
  using device_type = typename E::device_type;
  E src_;
  PoolWindows w_;

  PoolArgmaxExp(const E& src, const PoolWindows& w) : src_(src), w_(w) {
    TE_CHECK(w.divisor == PoolDivisor::kNone, "pool_argmax: the windows of a maximum are not divided (averaged)");
    w.Check("pool_argmax");
    TE_CHECK(w.nd <= kDim, "pool_argmax: ", w.nd, " pooled dimensions do not fit a source of ", kDim, " dimensions");
    const Shape<kDim> in = src_.shape();
    for (int i = 0; i < w.nd; ++i)
      TE_CHECK(in[kDim - w.nd + i] == w.in[3 - w.nd + i], "pool_argmax: source shape ", in,
               " does not match the windows' image");
  }
  Shape<kDim> shape() const { return detail::WithSpatial(src_.shape(), w_.nd, w_.out); }

  struct Plan {
    typename E::Plan src_;
    detail::PoolRows out_rows_;  // output row -> (plane, od, oh)
    PoolWindows w_;
    TE_XINLINE int64_t Eval(index_t y, index_t x) const {
      const PoolWindows& w = w_;
      index_t od, oh;
      const index_t plane = out_rows_.Split(y, &od, &oh);
      const PoolWindows::Range rd = w.nd < 3 ? PoolWindows::Range{0, 1, 1, 1} : w.At(0, od), rh = w.At(1, oh),
                               rw = w.At(2, x);
      DType best = DType(0);
      int64_t at = -1;
      for (index_t z = rd.lo; z < rd.hi; z += rd.step)
        for (index_t r = (plane * w.in[0] + z) * w.in[1] + rh.lo, r1 = r - rh.lo + rh.hi; r < r1; r += rh.step)
          for (index_t c = rw.lo; c < rw.hi; c += rw.step) {
            const DType v = src_.Eval(r, c);
            // Strictly greater keeps the first of equal values; the first NaN stays once found.
            if (at < 0 || (best == best && (v > best || !(v == v)))) {
              best = v;
              at = r * w.in[2] + c;
            }
          }
      return at;
    }
  };
  Plan plan() const { return Plan{src_.plan(), detail::PoolRows::Make(w_.out[0], w_.out[1]), w_}; }
};

template <typename E, typename DType, int etype>
inline PoolArgmaxExp<E> pool_argmax(const Exp<E, DType, etype>& src, const PoolWindows& windows) {
  return PoolArgmaxExp<E>(src.self(), windows);
}

}  // namespace expr
}  // namespace tensorexpr
