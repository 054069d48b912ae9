// assign.h — the evaluation contract's entry: EvalInto for plan-evaluable expressions, OpReqType and
// Assign(out, req, expr), MXNet's ASSIGN_DISPATCH.
#pragma once
#include "tensor.h"
#include "expr/map.h"

namespace tensorexpr {

// What an operator is asked to do with its output. The fixed underlying type makes any int a valid value
// of the type, so a value outside the four is defined behaviour that DecodeReq / Assign report.
enum OpReqType : int {
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

// An OpReqType decoded once, at an operator's boundary, into what its kernels act on: whether the output
// is stored at all, and whether the store is sv::saveto (a BLAS beta of 0) or sv::plusto (beta 1).
struct ReqStore {
  bool active = false;  // false: kNullOp, nothing is written
  bool add = false;     // true: kAddTo, accumulate onto the output
  float beta() const { return add ? 1.0f : 0.0f; }
};

// Throws Error naming `op` for a value outside the enum.
inline ReqStore DecodeReq(OpReqType req, const char* op) {
  switch (req) {
    case kNullOp: return ReqStore{false, false};
    case kWriteTo:
    case kWriteInplace: return ReqStore{true, false};
    case kAddTo: return ReqStore{true, true};
  }
  Fail(op, ": unknown OpReqType ", static_cast<int>(req), " (expected kNullOp, kWriteTo, kWriteInplace or kAddTo)");
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
// The name is parenthesised so that MXNet's function-like `#define Assign(out, req, exp)`, defined before
// this header, does not expand here; callers are unaffected.
template <typename Device, int dim, typename DType, typename E, int etype>
inline void (Assign)(Tensor<Device, dim, DType> out, OpReqType req, const expr::Exp<E, DType, etype>& e) {
  const ReqStore store = DecodeReq(req, "Assign");
  if (!store.active) return;
  if (store.add) out += e; else out = e;
}

}  // namespace tensorexpr
