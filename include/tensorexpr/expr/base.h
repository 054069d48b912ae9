// expr/base.h — the expression contract. Read this first.
//
// Every expression node E derives from Exp<E, DType, exp_type> and provides:
//   static constexpr int kDim;        number of dimensions (0 for a scalar, which fits any shape)
//   using device_type = cpu | gpu;    AnyDevice for scalars
//   static constexpr bool kFlat;      true when element i of the result depends only on element i of
//                                     each operand (pure elementwise maps over tensors and scalars)
//   Shape<kDim> shape() const;        the result shape; throws Error on mismatched operands
//   Plan plan() const;                a small trivially-copyable evaluator, usable on host and device:
//     DType Eval(index_t y, index_t x) const   element (y, x) of the (rows, last-dim) 2-D view
// and, when kFlat is true:
//   bool contiguous() const;          every tensor operand is contiguous (no row padding)
//   bool aligned_for(int lanes) const every tensor operand's pointer is aligned for `lanes`-wide vectors
//   Plan::EvalFlat(index_t i), Plan::EvalVec<N>(index_t i)   flat-index and N-lane evaluation
//
// Nodes hold their operands by value (tensors are views, so this is cheap): `auto e = a + 2.0f * b;`
// stays valid after the temporaries of the statement are gone.
//
// Assignment (`dst = e`, `dst += e`, Assign(dst, req, e)) calls EvalInto<Saver>(dst, e), found by
// argument-dependent lookup. The generic EvalInto (assign.h) checks shapes and hands the plan to the
// backend loop (cpu/map.h, cuda/map.cuh). Nodes that need a library call rather than a plan (dot) or a
// faster top-level algorithm (reductions) add their own EvalInto overload next to the node.
#pragma once
#include <type_traits>
#include "../base.h"
#include "../shape.h"
#include "../dtype.h"

namespace tensorexpr {
template <typename Device, int dim, typename DType>
struct Tensor;

namespace expr {

// How an expression may be used.
namespace type {
constexpr int kRValue = 0;   // a tensor
constexpr int kMapper = 1;   // elementwise over operands
constexpr int kChainer = 3;  // evaluable element by element through a plan, not elementwise
constexpr int kComplex = 7;  // needs a whole-expression evaluation (dot): top level only
}  // namespace type

// The device of scalars: fits any other.
struct AnyDevice {};

struct ExpBase {};

template <typename E>
struct TransposeExp;

template <typename SubType, typename DType, int exp_type>
struct Exp : public ExpBase {
  using value_type = DType;
  static constexpr int kExpType = exp_type;
  TE_XINLINE const SubType& self() const { return *static_cast<const SubType*>(this); }
  TE_XINLINE SubType* ptrself() { return static_cast<SubType*>(this); }
  // Transpose of a 2-D expression (lazy; free inside dot).
  template <typename S = SubType>
  TransposeExp<S> T() const {
    static_assert(S::kDim == 2, ".T() transposes 2-D expressions only; use transpose(e, axes) or swapaxis<a, b>(e) for more dimensions");
    return TransposeExp<S>(self());
  }
};

template <typename T>
struct is_exp : std::is_base_of<ExpBase, typename std::decay<T>::type> {};

// N lanes of T, aligned so that one load moves all of them (16 bytes for 4 floats).
template <typename T, int N>
struct alignas(sizeof(T) * N) VecN {
  T v[static_cast<size_t>(N)];
};

// The device shared by two operands (scalars fit either).
template <typename A, typename B>
struct common_device {
  static_assert(std::is_same<A, B>::value || std::is_same<A, AnyDevice>::value || std::is_same<B, AnyDevice>::value,
                "operands of one expression must live on the same device (cpu or gpu); Copy() one of them first");
  using type = typename std::conditional<std::is_same<A, AnyDevice>::value, B, A>::type;
};

// The dimension shared by two operands (a scalar has 0 and fits any).
template <int a, int b>
struct common_dim {
  static_assert(a == 0 || b == 0 || a == b,
                "operands of an elementwise expression must have the same number of dimensions; reshape or broadcast one of them");
  static constexpr int value = a > b ? a : b;
};

// Shape of an operand as seen by a node of dimension `dim` (a scalar reports dim 0: no constraint).
template <int dim, typename E>
inline Shape<dim> ShapeAs(const E& e) {
  if constexpr (E::kDim == 0) {
    return Shape<dim>();
  } else {
    return e.shape();
  }
}

// Calls OP::name() when the functor has one, for error messages.
template <typename OP, typename = void>
struct op_name {
  static const char* get() { return "user functor"; }
};
template <typename OP>
struct op_name<OP, decltype(void(OP::name()))> {
  static const char* get() { return OP::name(); }
};

}  // namespace expr
}  // namespace tensorexpr
