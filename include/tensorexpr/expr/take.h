// expr/take.h — rows picked by index, and the gradient that sends them back (mshadow's embedding lookup):
//   take<clip = true>(index, src)                  (N, C): row i is src[index[i]] for a 1-D index (N)
//                                                  and a 2-D table src (K, C)
//   take_grad<clip = true>(index, grad, K)         (K, C): row k sums the rows i of grad (N, C) whose
//                                                  index picks k
//   AddTakeGrad(dst, index, grad)                  dst += take_grad(index, grad, K) (dst (K, C)), mshadow's
//                                                  function
// An index is stored in any type; it is truncated towards zero, and one outside [0, K) is clipped to 0 or
// K - 1 (clip = true: mshadow's AddTakeGrad and MXNet's default) or wrapped modulo K (clip = false). A NaN
// index picks row 0. K = 0 with a non-empty index is an Error (no row to pick).
// Both are gathers (one output element per thread), so they are deterministic; take_grad's element reads
// the whole index, so on the GPU it costs N per output element. On the CPU, `dst = take_grad(...)` and
// `dst += take_grad(...)` scatter the rows instead (one pass over grad, in index order).
#pragma once
#include <cmath>
#include <type_traits>
#include "base.h"
#include "../tensor.h"

namespace tensorexpr {
namespace expr {

// The row an index value picks among `rows` (> 0).
template <bool clip, typename IType>
TE_XINLINE index_t TakeRow(IType v, index_t rows) {
  double d = static_cast<double>(static_cast<compute_t<IType>>(v));
  if (!(d == d)) d = 0;  // NaN
  d = trunc(d);
  if constexpr (clip) {
    if (d <= 0) return 0;
    if (d >= static_cast<double>(rows)) return rows - 1;
    return static_cast<index_t>(d);
  } else {
    d = fmod(d, static_cast<double>(rows));  // exact; |d| < rows after it, so the cast is in range
    index_t r = static_cast<index_t>(d);
    return r < 0 ? r + rows : r;
  }
}

// ---- take -----------------------------------------------------------------------------------------------
template <bool clip, typename IndexExp, typename SrcExp>
struct TakeExp : public Exp<TakeExp<clip, IndexExp, SrcExp>, typename SrcExp::value_type, type::kChainer> {
  using DType = typename SrcExp::value_type;
  static_assert(IndexExp::kDim == 1 && SrcExp::kDim == 2, "take(index, src): index is (N), src is (K, C)");
  static_assert(check_operand<IndexExp>::value && check_operand<SrcExp>::value, "");
  static constexpr int kDim = 2;
  static constexpr bool kFlat = false;
  using device_type = typename common_device<typename IndexExp::device_type, typename SrcExp::device_type>::type;
  IndexExp index_;
  SrcExp src_;
  TakeExp(const IndexExp& index, const SrcExp& src) : index_(index), src_(src) {
    TE_CHECK(src_.shape()[0] > 0 || index_.shape()[0] == 0, "take: the table of shape ", src_.shape(),
             " has no rows for the ", index_.shape()[0], " indices to pick");
  }
  Shape<2> shape() const { return Shape2(index_.shape()[0], src_.shape()[1]); }
  struct Plan {
    typename IndexExp::Plan index_;
    typename SrcExp::Plan src_;
    index_t rows_;
    TE_XINLINE DType Eval(index_t y, index_t x) const { return src_.Eval(TakeRow<clip>(index_.Eval(0, y), rows_), x); }
  };
  Plan plan() const { return Plan{index_.plan(), src_.plan(), src_.shape()[0]}; }
};

template <bool clip = true, typename IndexExp, typename SrcExp, typename IType, typename DType, int e1, int e2>
inline TakeExp<clip, IndexExp, SrcExp> take(const Exp<IndexExp, IType, e1>& index, const Exp<SrcExp, DType, e2>& src) {
  return TakeExp<clip, IndexExp, SrcExp>(index.self(), src.self());
}

// ---- take_grad ------------------------------------------------------------------------------------------
template <bool clip, typename IndexExp, typename GradExp>
struct TakeGradExp : public Exp<TakeGradExp<clip, IndexExp, GradExp>, typename GradExp::value_type, type::kChainer> {
  using DType = typename GradExp::value_type;
  static_assert(IndexExp::kDim == 1 && GradExp::kDim == 2, "take_grad(index, grad, K): index is (N), grad is (N, C)");
  static_assert(check_operand<IndexExp>::value && check_operand<GradExp>::value, "");
  static constexpr int kDim = 2;
  static constexpr bool kFlat = false;
  using device_type = typename common_device<typename IndexExp::device_type, typename GradExp::device_type>::type;
  IndexExp index_;
  GradExp grad_;
  index_t rows_;
  TakeGradExp(const IndexExp& index, const GradExp& grad, index_t rows) : index_(index), grad_(grad), rows_(rows) {
    TE_CHECK(index_.shape()[0] == grad_.shape()[0], "take_grad: index shape ", index_.shape(), " and gradient shape ",
             grad_.shape(), " disagree on N");
    TE_CHECK(rows > 0 || index_.shape()[0] == 0, "take_grad: input_dim = ", rows,
             " leaves no row for the gradient of shape ", grad_.shape());
    TE_CHECK(rows >= 0, "take_grad: input_dim must be non-negative, got ", rows);
  }
  Shape<2> shape() const { return Shape2(rows_, grad_.shape()[1]); }
  struct Plan {
    typename IndexExp::Plan index_;
    typename GradExp::Plan grad_;
    index_t rows_, n_;
    TE_XINLINE DType Eval(index_t y, index_t x) const {
      accum_t<DType> acc = 0;
      for (index_t i = 0; i < n_; ++i) {
        if (TakeRow<clip>(index_.Eval(0, i), rows_) == y) acc += static_cast<accum_t<DType>>(grad_.Eval(i, x));
      }
      return static_cast<DType>(acc);
    }
  };
  Plan plan() const { return Plan{index_.plan(), grad_.plan(), rows_, index_.shape()[0]}; }
};

template <bool clip = true, typename IndexExp, typename GradExp, typename IType, typename DType, int e1, int e2>
inline TakeGradExp<clip, IndexExp, GradExp> take_grad(const Exp<IndexExp, IType, e1>& index,
                                                      const Exp<GradExp, DType, e2>& grad, index_t input_dim) {
  return TakeGradExp<clip, IndexExp, GradExp>(index.self(), grad.self(), input_dim);
}

// On the CPU, = and += scatter: each row of grad is added to the row its index picks, in index order (for
// `=` the gather's order and so its sums). Other savers, and half / bf16 (which sum in float), gather.
template <typename Saver, int dim, typename DType, bool clip, typename IndexExp, typename GradExp, int etype>
inline void EvalInto(Tensor<cpu, dim, DType> dst, const Exp<TakeGradExp<clip, IndexExp, GradExp>, DType, etype>& exp) {
  static_assert(dim == 2, "take_grad(...) is 2-D: assign it to a 2-D tensor");
  const auto& e = exp.self();
  const Shape<2> s = e.shape();
  TE_CHECK(s == dst.shape_, "shape mismatch in assignment (", Saver::name(), "): destination ", dst.shape_,
           " vs expression ", s);
  constexpr bool kScatter = std::is_same<Saver, sv::saveto>::value || std::is_same<Saver, sv::plusto>::value;
  if constexpr (kScatter && std::is_same<DType, accum_t<DType>>::value) {
    if constexpr (std::is_same<Saver, sv::saveto>::value) dst = DType(0);
    const auto index = e.index_.plan();
    const auto grad = e.grad_.plan();
    for (index_t i = 0; i < e.index_.shape()[0]; ++i) {
      DType* row = dst.dptr_ + TakeRow<clip>(index.Eval(0, i), e.rows_) * dst.stride_;
      for (index_t x = 0; x < s[1]; ++x) row[x] += grad.Eval(i, x);
    }
  } else {
    MapPlan<Saver>(dst, e);
  }
}

}  // namespace expr

// mshadow's AddTakeGrad(dst, index, grad): dst (K, C) += take_grad(index, grad, K), indices clipped.
template <typename Device, typename IType, typename DType>
inline void AddTakeGrad(Tensor<Device, 2, DType> dst, const Tensor<Device, 1, IType>& index,
                        const Tensor<Device, 2, DType>& grad) {
  dst += expr::take_grad(index, grad, dst.shape_[0]);
}

}  // namespace tensorexpr
