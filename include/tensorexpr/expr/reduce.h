// expr/reduce.h — reductions: sumall_except_dim<dim>(e), sum_rows(e), reduce_except_dim<Reducer, dim>(e),
// reduce_with_axis<Reducer, keepdim>(e, axis), and the whole-tensor sumall(e), maxall(e), minall(e).
//
// One node, ReduceExp, covers them all. It is a kChainer node whose plan reduces one output element per
// Eval, accumulating in accum_t<DType> (float for half / bf16, int64 for integers), so a reduction
// composes inside any other expression on any device:
//   dst = sumall_except_dim<1>(a) * 2.0f + v;
// Inside another expression each output element is reduced by one sequential loop (one thread per output
// on the GPU). When a reduction is the whole right-hand side (`dst = e`, `dst += e`, ...), a faster
// top-level evaluator takes over (cpu/reduce.h, cuda/reduce.cuh): parallel over the reduced elements too,
// reading the source contiguously, and deterministic (the same inputs give the same bits on every run,
// whatever the thread count). So for a long reduction with few outputs, assign it to a tensor first.
//
// Whole-tensor reductions are 1-D expressions of shape (1), as in mshadow:
//   TensorContainer<cpu, 1> total(Shape1(1));  total = sumall(a);  float s = total[0];
// An empty reduction gives the reducer's identity: 0 for sum, -inf for maximum and +inf for minimum (the
// lowest / highest value of DType for integers). NaN propagates through maximum and minimum (red.h).
// The destination must not overlap the source.
#pragma once
#include <type_traits>
#include "base.h"
#include "map.h"
#include "../red.h"

namespace tensorexpr {
namespace expr {

// ---- how a reduction walks its source -------------------------------------------------------------------
// The source is read as rows y of nx elements, with the row index split as
//   y = (i0 * n1 + i1) * n2 + i2,      element (y, x), x in [0, nx).
// Every reduction here takes one of two forms:
//   keep_middle:   output i1 reduces over (i0, i2, x)         sumall_except_dim, sumall, reduce over the last axis
//   reduce middle: output (i0, i2, x) reduces over i1         reduce_with_axis, sum_rows
// so the plan and both backends need two loops only. Output element (i0, i2, x) has the flat index
// (i0 * n2 + i2) * nx + x; output i1 has flat index i1 (outputs are numbered in row-major order).
// With `flat`, the source is elementwise over contiguous tensors and is read by flat index y * nx + x:
// trailing dimensions then merge into long rows. Otherwise nx is the source's own last dimension.
struct ReduceLayout {
  index_t n0 = 0, n1 = 0, n2 = 0, nx = 0;
  bool keep_middle = true;
  bool flat = false;
  TE_XINLINE index_t num_outputs() const { return keep_middle ? n1 : n0 * n2 * nx; }
  TE_XINLINE index_t reduce_size() const { return keep_middle ? n0 * n2 * nx : n1; }
};

// The layout of a reduction over shape `s`: `axis` is the dimension kept (keep_axis) or the one reduced;
// axis < 0 keeps nothing (the whole tensor reduces to one value).
template <int ndim>
inline ReduceLayout MakeReduceLayout(const Shape<ndim>& s, int axis, bool keep_axis, bool flat) {
  // (pre, mid, post): the dimensions before `axis`, `axis` itself, the ones after it. A whole-tensor
  // reduction keeps an imaginary middle dimension of extent 1.
  const bool all = axis < 0;
  const index_t pre = all ? 1 : s.ProdShape(0, axis);
  const index_t mid = all ? 1 : s[axis];
  const index_t post = all ? s.Size() : s.ProdShape(axis + 1, ndim);
  ReduceLayout l;
  if (s.Size() == 0) {  // nothing to read: every output (if any) is the reducer's identity
    l.keep_middle = keep_axis;
    if (keep_axis) {
      l.n0 = 0, l.n1 = mid, l.n2 = 1, l.nx = 1;
    } else {
      l.n0 = pre, l.n1 = mid, l.n2 = 1, l.nx = post;
    }
    return l;
  }
  l.flat = flat;
  const index_t last = s[ndim - 1];
  if (post == 1) {
    // `axis` is the fastest-varying dimension (the last one, or followed by extents of 1 only): it becomes
    // the row, and `pre` the middle, which flips the form.
    l.nx = flat ? mid : last;
    l.n0 = 1;
    l.n1 = pre;
    l.n2 = mid / l.nx;
    l.keep_middle = !keep_axis;
  } else {
    l.nx = flat ? post : last;
    l.n0 = pre;
    l.n1 = mid;
    l.n2 = post / l.nx;
    l.keep_middle = keep_axis;
  }
  return l;
}

// Readers of the source: by rows of its own (rows, last-dim) view, or by flat index when the layout allows.
// RowReader and FlatReader fix the choice at compile time (the CPU loops, which vectorise better so);
// SourceReader decides per call from a flag that is the same for every element (the plan and the GPU
// kernels: half the kernel instantiations, and a uniform branch costs nothing there).
template <typename SrcPlan>
struct RowReader {
  SrcPlan p;
  TE_XINLINE auto Load(index_t y, index_t x) const { return p.Eval(y, x); }
};
template <typename SrcPlan>
struct FlatReader {
  SrcPlan p;
  index_t width;
  TE_XINLINE auto Load(index_t y, index_t x) const { return p.EvalFlat(y * width + x); }
};
template <typename SrcPlan, bool kCanFlat>
struct SourceReader {
  SrcPlan p;
  index_t flat_width;  // 0: by rows
  TE_XINLINE auto Load(index_t y, index_t x) const {
    if constexpr (kCanFlat) {
      if (flat_width != 0) return p.EvalFlat(y * flat_width + x);
    }
    return p.Eval(y, x);
  }
};

// Calls fn(reader) with a FlatReader when the layout allows it, else a RowReader.
template <typename SrcExp, typename Fn>
inline void WithReduceReader(const SrcExp& src, const ReduceLayout& l, Fn&& fn) {
  using P = typename SrcExp::Plan;
  if constexpr (SrcExp::kFlat) {
    if (l.flat) {
      fn(FlatReader<P>{src.plan(), l.nx});
      return;
    }
  }
  fn(RowReader<P>{src.plan()});
}

// Writes output element f (row-major flat index) of a destination whose rows may be padded.
template <typename DType, typename I>
struct ReduceOut {
  DType* dptr;
  I width;   // the destination's last dimension
  I stride;  // its row stride
  TE_XINLINE DType& At(I f) const {
    if (width == stride) return dptr[f];
    const I row = f / width;
    return dptr[row * stride + (f - row * width)];
  }
};

// Output element f reduced in one sequential loop (the plan's evaluation; the top-level evaluators
// split the work instead).
template <typename Reducer, typename A, typename DType, typename Reader>
TE_XINLINE A ReduceOneOutput(const Reader& src, const ReduceLayout& l, index_t f) {
  A acc = Reducer::template Init<A, DType>();
  if (l.keep_middle) {
    for (index_t i0 = 0; i0 < l.n0; ++i0) {
      for (index_t i2 = 0; i2 < l.n2; ++i2) {
        const index_t y = (i0 * l.n1 + f) * l.n2 + i2;
        for (index_t x = 0; x < l.nx; ++x) Reducer::Reduce(acc, static_cast<A>(src.Load(y, x)));
      }
    }
  } else {
    const index_t per_i0 = l.n2 * l.nx;
    const index_t i0 = f / per_i0, rest = f - i0 * per_i0;
    const index_t i2 = rest / l.nx, x = rest - i2 * l.nx;
    for (index_t i1 = 0; i1 < l.n1; ++i1) {
      Reducer::Reduce(acc, static_cast<A>(src.Load((i0 * l.n1 + i1) * l.n2 + i2, x)));
    }
  }
  return acc;
}

// ---- the node ----------------------------------------------------------------------------------------------
// kMode: the node's `axis_` is the dimension kept (everything else reduces; axis_ = -1 keeps nothing) or
// the one dimension reduced.
enum ReduceMode { kReduceKeepAxis = 0, kReduceAlongAxis = 1 };

template <typename Reducer, typename SrcExp, typename DType, int kDimOut, int kMode>
struct ReduceExp : public Exp<ReduceExp<Reducer, SrcExp, DType, kDimOut, kMode>, DType, type::kChainer> {
  static_assert(check_operand<SrcExp>::value, "");
  static_assert(SrcExp::kDim >= 1, "a reduction needs a tensor expression with at least one dimension, not a scalar");
  static constexpr int kDim = kDimOut;
  static constexpr int kSrcDim = SrcExp::kDim;
  static constexpr bool kFlat = false;
  // reduce_with_axis with keepdim: the reduced dimension stays, with extent 1.
  static constexpr bool kKeepDim = kMode == kReduceAlongAxis && kDimOut == kSrcDim;
  using device_type = typename SrcExp::device_type;
  using accum_type = accum_t<DType>;

  SrcExp src_;
  int axis_;
  ReduceExp(const SrcExp& src, int axis) : src_(src), axis_(axis) {}

  Shape<kDim> shape() const {
    const Shape<kSrcDim> s = src_.shape();
    Shape<kDim> out;
    if constexpr (kMode == kReduceKeepAxis) {
      out[0] = axis_ < 0 ? 1 : s[axis_];
    } else if constexpr (kKeepDim) {
      out = s;
      out[axis_] = 1;
    } else {
      for (int i = 0, j = 0; i < kSrcDim; ++i) {
        if (i != axis_) out[j++] = s[i];
      }
    }
    return out;
  }
  // A name for messages: "sumall_except_dim<1>", "reduce_with_axis<maximum>(axis 2)", "maxall".
  std::string name() const {
    if constexpr (kMode == kReduceKeepAxis) {
      if (axis_ < 0) return Message("reduce_all<", Reducer::name(), ">");
      return Message("reduce_except_dim<", Reducer::name(), ", ", axis_, ">");
    } else {
      return Message("reduce_with_axis<", Reducer::name(), kKeepDim ? ", keepdim" : "", ">(axis ", axis_, ")");
    }
  }
  // Whether the source can be read by flat index.
  bool source_flat() const {
    if constexpr (SrcExp::kFlat) {
      return src_.contiguous();
    } else {
      return false;
    }
  }
  ReduceLayout layout() const {
    return MakeReduceLayout(src_.shape(), axis_, kMode == kReduceKeepAxis, source_flat());
  }
  using Reader = SourceReader<typename SrcExp::Plan, SrcExp::kFlat>;
  Reader reader(const ReduceLayout& l) const { return Reader{src_.plan(), l.flat ? l.nx : 0}; }

  struct Plan {
    Reader src_;
    ReduceLayout layout_;
    index_t out_width_;  // the output's last dimension: Eval(y, x) is output y * out_width_ + x
    TE_XINLINE DType Eval(index_t y, index_t x) const {
      return static_cast<DType>(ReduceOneOutput<Reducer, accum_type, DType>(src_, layout_, y * out_width_ + x));
    }
  };
  Plan plan() const {
    const ReduceLayout l = layout();
    return Plan{reader(l), l, shape()[kDim - 1]};
  }
};

// ---- builders -----------------------------------------------------------------------------------------------
// Each takes a reducer of ours or one written to mshadow's interface (red::reducer_t, red.h).

// reduce_except_dim<Reducer, dimkeep>(e): 1-D, length e.shape()[dimkeep]; element c reduces every element
// of e whose index along dimkeep is c.
template <typename Reducer, int dimkeep, typename SrcExp, typename DType, int etype>
inline ReduceExp<red::reducer_t<Reducer>, SrcExp, DType, 1, kReduceKeepAxis> reduce_except_dim(const Exp<SrcExp, DType, etype>& e) {
  static_assert(0 <= dimkeep && dimkeep < SrcExp::kDim,
                "reduce_except_dim<Reducer, dimkeep> / sumall_except_dim<dimkeep>: dimkeep must be a dimension of the "
                "expression (0 <= dimkeep < its number of dimensions)");
  return ReduceExp<red::reducer_t<Reducer>, SrcExp, DType, 1, kReduceKeepAxis>(e.self(), dimkeep);
}

// sumall_except_dim<dimkeep>(e): 1-D, length e.shape()[dimkeep]: the sum over every other dimension
// (e.g. the per-channel sum of an (N, C, H, W) gradient with dimkeep = 1).
template <int dimkeep, typename SrcExp, typename DType, int etype>
inline auto sumall_except_dim(const Exp<SrcExp, DType, etype>& e) {
  return reduce_except_dim<red::sum, dimkeep>(e);
}

// sum_rows(e): the sum over all leading dimensions, keeping the last: (R, C) -> (C).
template <typename SrcExp, typename DType, int etype>
inline auto sum_rows(const Exp<SrcExp, DType, etype>& e) {
  static_assert(SrcExp::kDim >= 2,
                "sum_rows(e) sums the rows of a 2-D (or higher) expression; this one has fewer dimensions");
  return reduce_except_dim<red::sum, SrcExp::kDim - 1>(e);
}

// reduce_with_axis<Reducer, keepdim = false>(e, axis): reduces dimension `axis` (0 <= axis < e's number of
// dimensions). Without keepdim the result has one dimension less; with keepdim the same number, with
// extent 1 at `axis`. An axis out of range throws Error.
template <typename Reducer, bool keepdim = false, typename SrcExp, typename DType, int etype>
inline ReduceExp<red::reducer_t<Reducer>, SrcExp, DType, (keepdim ? SrcExp::kDim : SrcExp::kDim - 1), kReduceAlongAxis>
reduce_with_axis(const Exp<SrcExp, DType, etype>& e, int axis) {
  static_assert(keepdim || SrcExp::kDim >= 2,
                "reduce_with_axis without keepdim removes a dimension, so it needs at least 2; for a 1-D expression "
                "use sumall / maxall / minall (shape (1)) or reduce_with_axis<Reducer, true>");
  TE_CHECK(0 <= axis && axis < SrcExp::kDim, "reduce_with_axis<", red::reducer_t<Reducer>::name(), ">: axis ", axis,
           " is out of range for a ", SrcExp::kDim, "-D expression of shape ", e.self().shape(), " (need 0 <= axis < ",
           SrcExp::kDim, ")");
  return ReduceExp<red::reducer_t<Reducer>, SrcExp, DType, (keepdim ? SrcExp::kDim : SrcExp::kDim - 1), kReduceAlongAxis>(e.self(),
                                                                                                           axis);
}

// reduce_all<Reducer>(e): the whole expression reduced to one value, as a 1-D expression of shape (1).
template <typename Reducer, typename SrcExp, typename DType, int etype>
inline ReduceExp<red::reducer_t<Reducer>, SrcExp, DType, 1, kReduceKeepAxis> reduce_all(const Exp<SrcExp, DType, etype>& e) {
  return ReduceExp<red::reducer_t<Reducer>, SrcExp, DType, 1, kReduceKeepAxis>(e.self(), -1);
}
// sumall(e), maxall(e), minall(e): shape (1).
template <typename SrcExp, typename DType, int etype>
inline auto sumall(const Exp<SrcExp, DType, etype>& e) {
  return reduce_all<red::sum>(e);
}
template <typename SrcExp, typename DType, int etype>
inline auto maxall(const Exp<SrcExp, DType, etype>& e) {
  return reduce_all<red::maximum>(e);
}
template <typename SrcExp, typename DType, int etype>
inline auto minall(const Exp<SrcExp, DType, etype>& e) {
  return reduce_all<red::minimum>(e);
}

}  // namespace expr
}  // namespace tensorexpr
