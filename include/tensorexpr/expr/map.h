// expr/map.h — elementwise expressions: scalars, F<OP>(a), F<OP>(a, b), + - * /, tcast<T>(e).
// These are the "flat" nodes: over contiguous tensors they evaluate by one flat index, which is what
// lets the CPU loop vectorise and the GPU kernel use 16-byte loads.
#pragma once
#include <type_traits>
#include "base.h"
#include "../op.h"

namespace tensorexpr {
namespace expr {

// ---- scalar<T>(v): a constant that fits any shape --------------------------------------------------
template <typename DType>
struct ScalarExp : public Exp<ScalarExp<DType>, DType, type::kMapper> {
  static constexpr int kDim = 0;
  static constexpr bool kFlat = true;
  using device_type = AnyDevice;
  DType scalar_;
  explicit ScalarExp(DType s) : scalar_(s) {}
  Shape<0> shape() const { return Shape<0>(); }
  bool contiguous() const { return true; }
  bool aligned_for(int) const { return true; }
  struct Plan {
    DType s_;
    TE_XINLINE DType Eval(index_t, index_t) const { return s_; }
    TE_XINLINE DType EvalFlat(index_t) const { return s_; }
    template <int N>
    TE_XINLINE VecN<DType, N> EvalVec(index_t) const {
      VecN<DType, N> r;
TE_UNROLL
      for (int k = 0; k < N; ++k) r.v[k] = s_;
      return r;
    }
  };
  Plan plan() const { return Plan{scalar_}; }
};

template <typename DType>
inline ScalarExp<DType> scalar(DType s) { return ScalarExp<DType>(s); }

template <typename E>
struct is_scalar_exp : std::false_type {};
template <typename DType>
struct is_scalar_exp<ScalarExp<DType>> : std::true_type {};

// Integer division by zero is undefined (SIGFPE on x86, or a float infinity cast back to an integer): a zero
// scalar divisor is an Error on the host, once, before any loop runs. (`divisor` is any expression; only a
// scalar is checked.)
template <typename E>
inline void CheckIntegerDivisor(const E& divisor, const char* where) {
  if constexpr (is_scalar_exp<E>::value && std::is_integral<typename E::value_type>::value) {
    TE_CHECK(divisor.scalar_ != 0, where, ": integer division by zero (the ",
             DataType<typename E::value_type>::name(), " scalar divisor is ", static_cast<int64_t>(divisor.scalar_),
             ")");
  }
}

// Rejects operand kinds that cannot sit inside an elementwise expression.
template <typename E>
struct check_operand {
  static_assert(E::kExpType != type::kComplex,
                "dot(...) and batch_dot(...) cannot be nested inside another expression; assign the product to a "
                "tensor first (a scalar factor is allowed: dst = alpha * dot(a, b))");
  static constexpr bool value = true;
};

// ---- F<OP>(a) ---------------------------------------------------------------------------------------
template <typename OP, typename TA, typename DType, int etype>
struct UnaryMapExp : public Exp<UnaryMapExp<OP, TA, DType, etype>, DType, etype> {
  static_assert(check_operand<TA>::value, "");
  static constexpr int kDim = TA::kDim;
  static constexpr bool kFlat = TA::kFlat;
  using device_type = typename TA::device_type;
  TA src_;
  explicit UnaryMapExp(const TA& src) : src_(src) {}
  Shape<kDim> shape() const { return src_.shape(); }
  bool contiguous() const { return src_.contiguous(); }
  bool aligned_for(int lanes) const { return src_.aligned_for(lanes); }
  struct Plan {
    typename TA::Plan src_;
    TE_XINLINE DType Eval(index_t y, index_t x) const { return OP::Map(src_.Eval(y, x)); }
    TE_XINLINE DType EvalFlat(index_t i) const { return OP::Map(src_.EvalFlat(i)); }
    template <int N>
    TE_XINLINE VecN<DType, N> EvalVec(index_t i) const {
      VecN<DType, N> a = src_.template EvalVec<N>(i);
TE_UNROLL
      for (int k = 0; k < N; ++k) a.v[k] = OP::Map(a.v[k]);
      return a;
    }
  };
  Plan plan() const { return Plan{src_.plan()}; }
};

// ---- F<OP>(a, b) ------------------------------------------------------------------------------------
template <typename OP, typename TA, typename TB, typename DType, int etype>
struct BinaryMapExp : public Exp<BinaryMapExp<OP, TA, TB, DType, etype>, DType, etype> {
  static_assert(check_operand<TA>::value && check_operand<TB>::value, "");
  static constexpr int kDim = common_dim<TA::kDim, TB::kDim>::value;
  static constexpr bool kFlat = TA::kFlat && TB::kFlat;
  using device_type = typename common_device<typename TA::device_type, typename TB::device_type>::type;
  TA lhs_;
  TB rhs_;
  BinaryMapExp(const TA& lhs, const TB& rhs) : lhs_(lhs), rhs_(rhs) {
    if constexpr (std::is_same<OP, op::div>::value) CheckIntegerDivisor(rhs_, "op::div");
  }
  Shape<kDim> shape() const {
    if constexpr (TA::kDim == 0) {
      return ShapeAs<kDim>(rhs_);
    } else if constexpr (TB::kDim == 0) {
      return lhs_.shape();
    } else {
      Shape<kDim> a = lhs_.shape(), b = rhs_.shape();
      TE_CHECK(a == b, "shape mismatch in elementwise expression (", op_name<OP>::get(), "): left operand ", a,
               " vs right operand ", b);
      return a;
    }
  }
  bool contiguous() const { return lhs_.contiguous() && rhs_.contiguous(); }
  bool aligned_for(int lanes) const { return lhs_.aligned_for(lanes) && rhs_.aligned_for(lanes); }
  struct Plan {
    typename TA::Plan lhs_;
    typename TB::Plan rhs_;
    TE_XINLINE DType Eval(index_t y, index_t x) const { return OP::Map(lhs_.Eval(y, x), rhs_.Eval(y, x)); }
    TE_XINLINE DType EvalFlat(index_t i) const { return OP::Map(lhs_.EvalFlat(i), rhs_.EvalFlat(i)); }
    template <int N>
    TE_XINLINE VecN<DType, N> EvalVec(index_t i) const {
      VecN<DType, N> a = lhs_.template EvalVec<N>(i);
      const VecN<DType, N> b = rhs_.template EvalVec<N>(i);
TE_UNROLL
      for (int k = 0; k < N; ++k) a.v[k] = OP::Map(a.v[k], b.v[k]);
      return a;
    }
  };
  Plan plan() const { return Plan{lhs_.plan(), rhs_.plan()}; }
};

// ---- tcast<T>(e): element type conversion -----------------------------------------------------------
template <typename DstDType, typename TA, typename SrcDType, int etype>
struct TypecastExp : public Exp<TypecastExp<DstDType, TA, SrcDType, etype>, DstDType, etype> {
  static_assert(check_operand<TA>::value, "");
  static constexpr int kDim = TA::kDim;
  static constexpr bool kFlat = TA::kFlat;
  using device_type = typename TA::device_type;
  TA src_;
  explicit TypecastExp(const TA& src) : src_(src) {}
  Shape<kDim> shape() const { return src_.shape(); }
  bool contiguous() const { return src_.contiguous(); }
  // The source is loaded with the same lane count as the destination.
  bool aligned_for(int lanes) const { return src_.aligned_for(lanes); }
  // half/bf16 convert through float; the rest convert directly.
  static TE_XINLINE DstDType Convert(SrcDType v) {
    if constexpr (is_low_precision<SrcDType>::value || is_low_precision<DstDType>::value) {
      return static_cast<DstDType>(static_cast<float>(v));
    } else {
      return static_cast<DstDType>(v);
    }
  }
  struct Plan {
    typename TA::Plan src_;
    TE_XINLINE DstDType Eval(index_t y, index_t x) const { return Convert(src_.Eval(y, x)); }
    TE_XINLINE DstDType EvalFlat(index_t i) const { return Convert(src_.EvalFlat(i)); }
    template <int N>
    TE_XINLINE VecN<DstDType, N> EvalVec(index_t i) const {
      const VecN<SrcDType, N> a = src_.template EvalVec<N>(i);
      VecN<DstDType, N> r;
TE_UNROLL
      for (int k = 0; k < N; ++k) r.v[k] = Convert(a.v[k]);
      return r;
    }
  };
  Plan plan() const { return Plan{src_.plan()}; }
};

template <typename DstDType, typename TA, typename SrcDType, int etype>
inline TypecastExp<DstDType, TA, SrcDType, (etype | type::kMapper)> tcast(const Exp<TA, SrcDType, etype>& e) {
  return TypecastExp<DstDType, TA, SrcDType, (etype | type::kMapper)>(e.self());
}

// ---- builders -----------------------------------------------------------------------------------------
template <typename DA, typename DB>
struct check_same_dtype {
  static_assert(std::is_same<DA, DB>::value,
                "operands of one expression must share a dtype; convert one with tcast<T>(e)");
  static constexpr bool value = true;
};

template <typename OP, typename TA, typename DType, int ta>
inline UnaryMapExp<OP, TA, DType, (ta | type::kMapper)> F(const Exp<TA, DType, ta>& a) {
  return UnaryMapExp<OP, TA, DType, (ta | type::kMapper)>(a.self());
}

template <typename OP, typename TA, typename TB, typename DA, typename DB, int ta, int tb>
inline BinaryMapExp<OP, TA, TB, DA, (ta | tb | type::kMapper)> F(const Exp<TA, DA, ta>& a, const Exp<TB, DB, tb>& b) {
  static_assert(check_same_dtype<DA, DB>::value, "");
  return BinaryMapExp<OP, TA, TB, DA, (ta | tb | type::kMapper)>(a.self(), b.self());
}

// A plain number next to an expression becomes a scalar of the expression's dtype.
template <typename S, typename DType>
struct is_scalar_for
    : std::integral_constant<bool, std::is_arithmetic<S>::value || std::is_same<S, DType>::value> {};

template <typename OP, typename TA, typename DType, int ta, typename S,
          typename = typename std::enable_if<is_scalar_for<S, DType>::value>::type>
inline BinaryMapExp<OP, TA, ScalarExp<DType>, DType, (ta | type::kMapper)> F(const Exp<TA, DType, ta>& a, S b) {
  return BinaryMapExp<OP, TA, ScalarExp<DType>, DType, (ta | type::kMapper)>(a.self(), ScalarExp<DType>(DType(b)));
}
template <typename OP, typename TB, typename DType, int tb, typename S,
          typename = typename std::enable_if<is_scalar_for<S, DType>::value>::type>
inline BinaryMapExp<OP, ScalarExp<DType>, TB, DType, (tb | type::kMapper)> F(S a, const Exp<TB, DType, tb>& b) {
  return BinaryMapExp<OP, ScalarExp<DType>, TB, DType, (tb | type::kMapper)>(ScalarExp<DType>(DType(a)), b.self());
}

#define TE_BINARY_OPERATOR(SYMBOL, OP)                                                                  \
  template <typename TA, typename TB, typename DA, typename DB, int ta, int tb>                          \
  inline auto operator SYMBOL(const Exp<TA, DA, ta>& a, const Exp<TB, DB, tb>& b) {                      \
    return F<OP>(a, b);                                                                                  \
  }                                                                                                      \
  template <typename TA, typename DType, int ta, typename S,                                             \
            typename = typename std::enable_if<is_scalar_for<S, DType>::value>::type>                    \
  inline auto operator SYMBOL(const Exp<TA, DType, ta>& a, S b) {                                        \
    return F<OP>(a, b);                                                                                  \
  }                                                                                                      \
  template <typename TB, typename DType, int tb, typename S,                                             \
            typename = typename std::enable_if<is_scalar_for<S, DType>::value>::type>                    \
  inline auto operator SYMBOL(S a, const Exp<TB, DType, tb>& b) {                                        \
    return F<OP>(a, b);                                                                                  \
  }
TE_BINARY_OPERATOR(+, op::plus)
TE_BINARY_OPERATOR(-, op::minus)
TE_BINARY_OPERATOR(*, op::mul)
TE_BINARY_OPERATOR(/, op::div)
#undef TE_BINARY_OPERATOR

template <typename TA, typename DType, int ta>
inline auto operator-(const Exp<TA, DType, ta>& a) {
  return F<op::negation>(a);
}

}  // namespace expr
}  // namespace tensorexpr
