// assign.h — the evaluation contract's entry: EvalInto for plan-evaluable expressions, OpReqType and
// Assign(out, req, expr), MXNet's ASSIGN_DISPATCH.
#pragma once
#include "tensor.h"
#include "expr/map.h"

namespace tensorexpr {

// What an operator is asked to do with its output.
enum OpReqType {
  kNullOp,        // write nothing
  kWriteTo,       // overwrite
  kWriteInplace,  // overwrite; the output may alias an input read elementwise
  kAddTo          // accumulate onto what is there
};

inline const char* OpReqName(OpReqType req) {
  switch (req) {
    case kNullOp: return "kNullOp";
    case kWriteTo: return "kWriteTo";
    case kWriteInplace: return "kWriteInplace";
    case kAddTo: return "kAddTo";
  }
  return "unknown";
}

namespace expr {

// The generic evaluation: check the shape, then run the backend loop over the plan (MapPlan in
// cpu/map.h or cuda/map.cuh, chosen by the destination's device).
template <typename Saver, typename Device, int dim, typename DType, typename E, int etype>
inline void EvalInto(Tensor<Device, dim, DType> dst, const Exp<E, DType, etype>& exp) {
  const E& e = exp.self();
  static_assert(etype != type::kComplex, "this expression has no evaluator for the destination's device");
  static_assert(E::kDim == 0 || E::kDim == dim,
                "the expression has a different number of dimensions than the tensor it is assigned to");
  static_assert(std::is_same<typename E::device_type, Device>::value ||
                    std::is_same<typename E::device_type, AnyDevice>::value,
                "the expression lives on a different device than the tensor it is assigned to; Copy() it first");
  if constexpr (E::kDim != 0) {
    const Shape<dim> s = e.shape();
    TE_CHECK(s == dst.shape_, "shape mismatch in assignment (", Saver::name(), "): destination ", dst.shape_,
             " vs expression ", s);
  }
  if constexpr (etype != type::kComplex) MapPlan<Saver>(dst, e);
}

}  // namespace expr

// Assign(out, req, e): kNullOp writes nothing, kWriteTo / kWriteInplace overwrite, kAddTo accumulates.
template <typename Device, int dim, typename DType, typename E, int etype>
inline void Assign(Tensor<Device, dim, DType> out, OpReqType req, const expr::Exp<E, DType, etype>& e) {
  switch (req) {
    case kNullOp: break;
    case kWriteTo:
    case kWriteInplace: out = e; break;
    case kAddTo: out += e; break;
    default: Fail("Assign: unknown OpReqType ", static_cast<int>(req));
  }
}

}  // namespace tensorexpr
