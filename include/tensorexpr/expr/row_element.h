// expr/row_element.h — one index per row picks one column of a matrix (mshadow's names):
//   one_hot_encode<DType = float>(index, K)   (N, K): 1 where the column is index[i], else 0
//   mat_choose_row_element(src, index)         (N):    src[i, index[i]]
//   mat_fill_row_element(src, val, index)      (N, K): src with element (i, index[i]) replaced by val[i]
// index is a 1-D expression of any element type: integers, or whole numbers stored in a floating type (the
// MXNet convention of labels in the data's dtype). An index that is not a whole number in [0, K) picks
// nothing: its one-hot row is all 0, fill leaves the row as it is, choose gives NaN (0 for an integer
// dtype). mshadow read out of bounds there; an operator that must report such an index checks the labels
// first on the CPU, or passes a fault record (fault.h) that a GPU kernel writes for the stream's Wait().
#pragma once
#include <cmath>
#include <limits>
#include <type_traits>
#include "base.h"
#include "../fault.h"

namespace tensorexpr {
namespace expr {

// The column an index value picks among `columns`, or -1 when it is not a whole number in [0, columns);
// such a value is recorded in `fault` (when given) as the index of `row`.
template <typename IType>
TE_XINLINE index_t RowElementIndex(IType v, index_t columns, KernelFault* fault, index_t row) {
  const double d = static_cast<double>(static_cast<compute_t<IType>>(v));
  const bool whole = std::is_integral<IType>::value || d == floor(d);
  if (whole && d >= 0 && d < static_cast<double>(columns)) return static_cast<index_t>(d);
  if (fault != nullptr) fault->Record(FaultKind::kSoftmaxLabel, row, d, std::is_integral<IType>::value, columns);
  return -1;
}

// ---- one_hot_encode ------------------------------------------------------------------------------------
template <typename DType, typename IndexExp>
struct OneHotEncodeExp : public Exp<OneHotEncodeExp<DType, IndexExp>, DType, type::kChainer> {
  static_assert(IndexExp::kDim == 1, "one_hot_encode(index, K): index is a 1-D expression (N)");
  static_assert(check_operand<IndexExp>::value, "");
  static constexpr int kDim = 2;
  static constexpr bool kFlat = false;
  using device_type = typename IndexExp::device_type;
  IndexExp index_;
  index_t columns_;
  KernelFault* fault_;
  OneHotEncodeExp(const IndexExp& index, index_t columns, KernelFault* fault = nullptr)
      : index_(index), columns_(columns), fault_(fault) {
    TE_CHECK(columns >= 0, "one_hot_encode: the number of choices must be non-negative, got ", columns);
  }
  Shape<2> shape() const { return Shape2(index_.shape()[0], columns_); }
  struct Plan {
    typename IndexExp::Plan index_;
    index_t columns_;
    KernelFault* fault_;
    TE_XINLINE DType Eval(index_t y, index_t x) const {
      // Every column reads the index; the first column alone reports a bad one.
      return RowElementIndex(index_.Eval(0, y), columns_, x == 0 ? fault_ : nullptr, y) == x ? DType(1) : DType(0);
    }
  };
  Plan plan() const { return Plan{index_.plan(), columns_, fault_}; }
};

template <typename DType = float, typename IndexExp, typename IType, int etype>
inline OneHotEncodeExp<DType, IndexExp> one_hot_encode(const Exp<IndexExp, IType, etype>& index, index_t num_choices) {
  return OneHotEncodeExp<DType, IndexExp>(index.self(), num_choices);
}

// ---- mat_choose_row_element ------------------------------------------------------------------------------
template <typename SrcExp, typename IndexExp>
struct MatChooseRowElementExp : public Exp<MatChooseRowElementExp<SrcExp, IndexExp>, typename SrcExp::value_type,
                                           type::kChainer> {
  using DType = typename SrcExp::value_type;
  static_assert(SrcExp::kDim == 2 && IndexExp::kDim == 1,
                "mat_choose_row_element(src, index): src is (N, K), index is (N)");
  static_assert(check_operand<SrcExp>::value && check_operand<IndexExp>::value, "");
  static constexpr int kDim = 1;
  static constexpr bool kFlat = false;
  using device_type = typename common_device<typename SrcExp::device_type, typename IndexExp::device_type>::type;
  SrcExp src_;
  IndexExp index_;
  KernelFault* fault_;
  MatChooseRowElementExp(const SrcExp& src, const IndexExp& index, KernelFault* fault = nullptr)
      : src_(src), index_(index), fault_(fault) {
    TE_CHECK(src_.shape()[0] == index_.shape()[0], "mat_choose_row_element: src shape ", src_.shape(),
             " and index shape ", index_.shape(), " disagree on the number of rows");
  }
  Shape<1> shape() const { return index_.shape(); }
  struct Plan {
    typename SrcExp::Plan src_;
    typename IndexExp::Plan index_;
    index_t columns_;
    KernelFault* fault_;
    TE_XINLINE DType Eval(index_t, index_t x) const {  // a 1-D expression is one row: x is the row of src
      const index_t c = RowElementIndex(index_.Eval(0, x), columns_, fault_, x);
      if (c >= 0) return src_.Eval(x, c);
      if constexpr (std::numeric_limits<compute_t<DType>>::has_quiet_NaN) {
        return static_cast<DType>(std::numeric_limits<compute_t<DType>>::quiet_NaN());
      } else {
        return DType(0);
      }
    }
  };
  Plan plan() const { return Plan{src_.plan(), index_.plan(), src_.shape()[1], fault_}; }
};

template <typename SrcExp, typename IndexExp, typename DType, typename IType, int e1, int e2>
inline MatChooseRowElementExp<SrcExp, IndexExp> mat_choose_row_element(const Exp<SrcExp, DType, e1>& src,
                                                                       const Exp<IndexExp, IType, e2>& index) {
  return MatChooseRowElementExp<SrcExp, IndexExp>(src.self(), index.self());
}

// ---- mat_fill_row_element ----------------------------------------------------------------------------
template <typename SrcExp, typename ValExp, typename IndexExp>
struct MatFillRowElementExp : public Exp<MatFillRowElementExp<SrcExp, ValExp, IndexExp>, typename SrcExp::value_type,
                                         type::kChainer> {
  using DType = typename SrcExp::value_type;
  static_assert(SrcExp::kDim == 2 && ValExp::kDim == 1 && IndexExp::kDim == 1,
                "mat_fill_row_element(src, val, index): src is (N, K), val and index are (N)");
  static_assert(check_operand<SrcExp>::value && check_operand<ValExp>::value && check_operand<IndexExp>::value, "");
  static constexpr int kDim = 2;
  static constexpr bool kFlat = false;
  using device_type = typename common_device<
      typename common_device<typename SrcExp::device_type, typename ValExp::device_type>::type,
      typename IndexExp::device_type>::type;
  SrcExp src_;
  ValExp val_;
  IndexExp index_;
  MatFillRowElementExp(const SrcExp& src, const ValExp& val, const IndexExp& index)
      : src_(src), val_(val), index_(index) {
    const index_t n = src_.shape()[0];
    TE_CHECK(val_.shape()[0] == n && index_.shape()[0] == n, "mat_fill_row_element: src shape ", src_.shape(),
             ", val shape ", val_.shape(), " and index shape ", index_.shape(), " disagree on the number of rows");
  }
  Shape<2> shape() const { return src_.shape(); }
  struct Plan {
    typename SrcExp::Plan src_;
    typename ValExp::Plan val_;
    typename IndexExp::Plan index_;
    index_t columns_;
    TE_XINLINE DType Eval(index_t y, index_t x) const {
      if (RowElementIndex(index_.Eval(0, y), columns_, nullptr, y) == x) return static_cast<DType>(val_.Eval(0, y));
      return src_.Eval(y, x);
    }
  };
  Plan plan() const { return Plan{src_.plan(), val_.plan(), index_.plan(), src_.shape()[1]}; }
};

template <typename SrcExp, typename ValExp, typename IndexExp, typename DType, typename VType, typename IType, int e1,
          int e2, int e3>
inline MatFillRowElementExp<SrcExp, ValExp, IndexExp> mat_fill_row_element(const Exp<SrcExp, DType, e1>& src,
                                                                           const Exp<ValExp, VType, e2>& val,
                                                                           const Exp<IndexExp, IType, e3>& index) {
  return MatFillRowElementExp<SrcExp, ValExp, IndexExp>(src.self(), val.self(), index.self());
}

}  // namespace expr
}  // namespace tensorexpr
