// mshadow/reduce_index.h — ReduceIndexExp: along one axis, the position the reducer settles on, as mshadow's
// reduce_with_axis<Reducer, true> (its "mask" form) computes it: for red::maximum the index of the first
// maximum (argmax), for red::minimum of the first minimum. The position is the last one at which the
// reducer's running value changed; our maximum / minimum let a NaN win, so the first NaN's index is the
// answer when there is one (mshadow's std::max skipped NaN). The index is returned in the source's DType,
// as in mshadow (half_t holds integers exactly up to 2048).
//
// kKeepDim: the reduced axis stays with extent 1 (mshadow's reduce_keepdim<Reducer, true>).
// A kChainer node: each output element runs one loop over the axis, on the CPU and in a GPU kernel alike.
#pragma once
#include "../tensorexpr.h"

namespace mshadow {
namespace expr {

template <typename Reducer, typename SrcExp, typename DType, bool kKeepDim = false>
struct ReduceIndexExp : public ::tensorexpr::expr::Exp<ReduceIndexExp<Reducer, SrcExp, DType, kKeepDim>, DType,
                                                       ::tensorexpr::expr::type::kChainer> {
  using index_t = ::tensorexpr::index_t;
  using Accum = ::tensorexpr::accum_t<DType>;
  static_assert(::tensorexpr::expr::check_operand<SrcExp>::value, "");
  static_assert(kKeepDim || SrcExp::kDim >= 2,
                "reduce_with_axis<Reducer, true> removes the axis it reduces, so its source needs at least 2 dimensions");
  static constexpr int kSrcDim = SrcExp::kDim;
  static constexpr int kDim = kKeepDim ? kSrcDim : kSrcDim - 1;
  static constexpr bool kFlat = false;
  using device_type = typename SrcExp::device_type;

  SrcExp src_;
  int axis_;
  ReduceIndexExp(const SrcExp& src, int axis) : src_(src), axis_(axis) {
    TE_CHECK(0 <= axis && axis < kSrcDim, "reduce_with_axis<", ::tensorexpr::expr::op_name<Reducer>::get(),
             ", true>: axis ", axis, " is out of range for a ", kSrcDim, "-D expression of shape ", src.shape(),
             " (need 0 <= axis < ", kSrcDim, ")");
  }

  ::tensorexpr::Shape<kDim> shape() const {
    const ::tensorexpr::Shape<kSrcDim> s = src_.shape();
    ::tensorexpr::Shape<kDim> out;
    if constexpr (kKeepDim) {
      out = s;
      out[axis_] = 1;
    } else {
      for (int i = 0, j = 0; i < kSrcDim; ++i) {
        if (i != axis_) out[j++] = s[i];
      }
    }
    return out;
  }

  // Source element at flat position (outer * mid + k) * post + inner, read through the source's (rows,
  // last-dim) view; output element f is (outer, inner) with f = outer * post + inner.
  struct Plan {
    typename SrcExp::Plan src_;
    index_t out_width_;  // the output's last dimension
    index_t mid_;        // extent of the reduced axis
    index_t post_;       // elements after the axis
    index_t src_width_;  // the source's last dimension
    TE_XINLINE static bool Changed(Accum before, Accum after) {
      const bool both_nan = before != before && after != after;
      return !(before == after || both_nan);
    }
    TE_XINLINE DType Eval(index_t y, index_t x) const {
      const index_t f = y * out_width_ + x;
      const index_t outer = f / post_, inner = f - outer * post_;
      Accum acc = Reducer::template Init<Accum, DType>();
      index_t settled = 0;
      for (index_t k = 0; k < mid_; ++k) {
        const index_t pos = (outer * mid_ + k) * post_ + inner;
        const index_t row = pos / src_width_;
        const Accum before = acc;
        Reducer::Reduce(acc, static_cast<Accum>(src_.Eval(row, pos - row * src_width_)));
        if (Changed(before, acc)) settled = k;
      }
      return static_cast<DType>(settled);
    }
  };
  Plan plan() const {
    const ::tensorexpr::Shape<kSrcDim> s = src_.shape();
    return Plan{src_.plan(), shape()[kDim - 1], s[axis_], s.ProdShape(axis_ + 1, kSrcDim), s[kSrcDim - 1]};
  }
};

}  // namespace expr
}  // namespace mshadow
