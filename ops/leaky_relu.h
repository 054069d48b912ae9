// ops/leaky_relu.h — the template implementation of <tensorexpr/ops/leaky_relu.h> (see there), compiled into
// tensorexpr_ops / tensorexpr_ops_cuda for the standard dtypes. Include it to use another dtype.
#pragma once
#include <tensorexpr/tensorexpr.h>
#include <tensorexpr/ops/leaky_relu.h>
#if defined(__CUDACC__)
#include <tensorexpr/cuda/tensorexpr_cuda.cuh>
#endif

namespace tensorexpr {
namespace ops {

namespace detail {

inline void CheckLeakyReLUReq(const LeakyReLUParam& p, const char* what, OpReqType req) {
  TE_CHECK(req == kNullOp || req == kWriteTo || req == kWriteInplace || req == kAddTo, "LeakyReLU(",
           LeakyReLUTypeName(p.act_type), ") ", what, ": unknown req ", static_cast<int>(req));
}

// PReLU's data as (outer, C, inner), gamma's C slopes along the middle: (N, C, rest) for one slope per
// channel, (1, 1, everything) for one slope.
template <typename Device, int dim, typename DType>
inline Tensor<Device, 3, DType> PReLUChannels(const Tensor<Device, dim, DType>& t, const Shape<1>& gamma,
                                             const char* name) {
  const index_t slopes = gamma[0];
  TE_CHECK(slopes == 1 || (dim >= 2 && slopes == t.shape_[dim >= 2 ? 1 : 0]), "LeakyReLU(prelu): gamma shape ",
           gamma, " must be (1) (one slope) or (C) (one per channel, data dimension 1) for ", name, " shape ",
           t.shape_);
  TE_CHECK(t.CheckContiguous() || t.shape_.Size() == 0, "LeakyReLU(prelu): ", name, " of shape ", t.shape_,
           " has padded rows (stride ", t.stride_, "); PReLU reads gamma across the data and needs it contiguous");
  const index_t n = t.shape_.Size();
  if (slopes == 1) return Tensor<Device, 3, DType>(t.dptr_, Shape3(1, 1, n), t.stream_);
  const index_t outer = t.shape_[0], inner = outer * slopes == 0 ? 0 : n / (outer * slopes);
  return Tensor<Device, 3, DType>(t.dptr_, Shape3(outer, slopes, inner), t.stream_);
}

}  // namespace detail

template <typename Device, int dim, typename DType>
void LeakyReLUForward(const LeakyReLUParam& p, const Tensor<Device, dim, DType>& data,
                      const Tensor<Device, 1, DType>& gamma, OpReqType req, const Tensor<Device, dim, DType>& out) {
  detail::CheckLeakyReLUReq(p, "forward", req);
  TE_CHECK(data.shape_ == out.shape_, "LeakyReLU(", LeakyReLUTypeName(p.act_type), ") forward: data shape ",
           data.shape_, " and output shape ", out.shape_, " differ");
  using A = compute_t<DType>;
  switch (p.act_type) {
    case LeakyReLUType::kLeaky:
    case LeakyReLUType::kELU: {
      if (req == kNullOp) return;
      const auto x = expr::tcast<A>(data.FlatTo2D());
      const auto slope = expr::scalar<A>(A(p.slope));
      if (p.act_type == LeakyReLUType::kLeaky)
        Assign(out.FlatTo2D(), req, expr::tcast<DType>(expr::F<op::leaky_relu>(x, slope)));
      else
        Assign(out.FlatTo2D(), req, expr::tcast<DType>(expr::F<op::elu>(x, slope)));
      return;
    }
    case LeakyReLUType::kPReLU: {
      const Tensor<Device, 3, DType> x3 = detail::PReLUChannels(data, gamma.shape_, "data");
      const Tensor<Device, 3, DType> y3 = detail::PReLUChannels(out, gamma.shape_, "output");
      if (req == kNullOp || x3.shape_.Size() == 0) return;
      Assign(y3, req, expr::tcast<DType>(expr::F<op::leaky_relu>(
                          expr::tcast<A>(x3), expr::broadcast<1>(expr::tcast<A>(gamma), x3.shape_))));
      return;
    }
  }
  Fail("LeakyReLU: unknown act_type ", static_cast<int>(p.act_type));
}

template <typename Device, int dim, typename DType>
void LeakyReLUBackward(const LeakyReLUParam& p, const Tensor<Device, dim, DType>& out_grad,
                       const Tensor<Device, dim, DType>& data, const Tensor<Device, 1, DType>& gamma,
                       OpReqType req_data, const Tensor<Device, dim, DType>& data_grad, OpReqType req_gamma,
                       const Tensor<Device, 1, DType>& gamma_grad) {
  detail::CheckLeakyReLUReq(p, "backward (data)", req_data);
  detail::CheckLeakyReLUReq(p, "backward (gamma)", req_gamma);
  TE_CHECK(out_grad.shape_ == data.shape_ && (req_data == kNullOp || data_grad.shape_ == data.shape_), "LeakyReLU(",
           LeakyReLUTypeName(p.act_type), ") backward: output gradient shape ", out_grad.shape_, ", data shape ",
           data.shape_, " and data gradient shape ", data_grad.shape_, " must be equal");
  using A = compute_t<DType>;
  switch (p.act_type) {
    case LeakyReLUType::kLeaky:
    case LeakyReLUType::kELU: {
      if (req_data == kNullOp) return;
      const auto x = expr::tcast<A>(data.FlatTo2D());
      const auto dy = expr::tcast<A>(out_grad.FlatTo2D());
      const auto slope = expr::scalar<A>(A(p.slope));
      if (p.act_type == LeakyReLUType::kLeaky)
        Assign(data_grad.FlatTo2D(), req_data, expr::tcast<DType>(dy * expr::F<op::leaky_relu_grad>(x, slope)));
      else
        Assign(data_grad.FlatTo2D(), req_data, expr::tcast<DType>(dy * expr::F<op::elu_grad>(x, slope)));
      return;
    }
    case LeakyReLUType::kPReLU: {
      const Tensor<Device, 3, DType> x3 = detail::PReLUChannels(data, gamma.shape_, "data");
      const Tensor<Device, 3, DType> dy3 = detail::PReLUChannels(out_grad, gamma.shape_, "output gradient");
      // gamma's gradient first: the data gradient may overwrite out_grad.
      if (req_gamma != kNullOp) {
        TE_CHECK(gamma_grad.shape_ == gamma.shape_, "LeakyReLU(prelu) backward: gamma gradient shape ",
                 gamma_grad.shape_, " does not match gamma shape ", gamma.shape_);
        Assign(gamma_grad, req_gamma,
               expr::tcast<DType>(expr::sumall_except_dim<1>(
                   expr::tcast<A>(dy3) * expr::F<op::minimum>(expr::tcast<A>(x3), expr::scalar<A>(A(0))))));
      }
      if (req_data == kNullOp || x3.shape_.Size() == 0) return;
      const Tensor<Device, 3, DType> dx3 = detail::PReLUChannels(data_grad, gamma.shape_, "data gradient");
      Assign(dx3, req_data,
             expr::tcast<DType>(expr::tcast<A>(dy3) *
                                expr::F<op::leaky_relu_grad>(expr::tcast<A>(x3),
                                                             expr::broadcast<1>(expr::tcast<A>(gamma), x3.shape_))));
      return;
    }
  }
  Fail("LeakyReLU: unknown act_type ", static_cast<int>(p.act_type));
}

// Explicit instantiations for one device and dtype, ranks 1 to 5 (ops/leaky_relu.cc).
#define TE_LEAKY_RELU_INSTANCE_(Device, dim, DType) \
  template void LeakyReLUForward<Device, dim, DType>(const LeakyReLUParam& p, \
      const Tensor<Device, dim, DType>& data, const Tensor<Device, 1, DType>& gamma, OpReqType req, \
      const Tensor<Device, dim, DType>& out); \
  template void LeakyReLUBackward<Device, dim, DType>(const LeakyReLUParam& p, \
      const Tensor<Device, dim, DType>& out_grad, const Tensor<Device, dim, DType>& data, \
      const Tensor<Device, 1, DType>& gamma, OpReqType req_data, const Tensor<Device, dim, DType>& data_grad, \
      OpReqType req_gamma, const Tensor<Device, 1, DType>& gamma_grad);
#define TE_INSTANTIATE_LEAKY_RELU(Device, DType) TE_OPS_RANKS_FROM_1(TE_LEAKY_RELU_INSTANCE_, Device, DType)

}  // namespace ops
}  // namespace tensorexpr
