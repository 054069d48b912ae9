// ops/softmax_output.h — the template implementation of <tensorexpr/ops/softmax_output.h> (see there), compiled into
// tensorexpr_ops / tensorexpr_ops_cuda for the standard dtypes. Include it to use another dtype.
#pragma once
#include <cmath>
#include <limits>
#include <type_traits>
#include <tensorexpr/tensorexpr.h>
#include <tensorexpr/ops/softmax_output.h>
#include <tensorexpr/workspace.h>
#if defined(__CUDACC__)
#include <tensorexpr/cuda/tensorexpr_cuda.cuh>
#endif

namespace tensorexpr {
namespace ops {

namespace detail {

template <typename Device, typename LType>
inline void CheckSoftmaxShapes(const char* what, const Shape<2>& data, const Tensor<Device, 1, LType>& label) {
  TE_CHECK(data[1] >= 1, "SoftmaxOutput ", what, ": data shape ", data, " has K = ", data[1],
           " classes; need at least 1");
  TE_CHECK(label.shape_[0] == data[0], "SoftmaxOutput ", what, ": label shape ", label.shape_,
           " does not match data shape ", data, " (one label per row)");
}

// On the CPU every label is checked before use, so a bad one changes nothing: a whole number in [0, K).
// A device whose memory the host cannot read checks in the kernels instead (the fault record of
// mat_choose_row_element and one_hot_encode, expr/row_element.h), and the stream's next Wait() throws.
template <typename LType>
inline void CheckLabels(Stream<cpu>*, const Tensor<cpu, 1, LType>& label, index_t classes) {
  for (index_t i = 0; i < label.shape_[0]; ++i) {
    const double v = static_cast<double>(static_cast<compute_t<LType>>(label.dptr_[i]));
    if (v == std::floor(v) && v >= 0 && v < static_cast<double>(classes)) continue;
    // An integer label is printed as the integer (a double prints INT_MIN as -2.14748e+09).
    if constexpr (std::is_integral<LType>::value)
      Fail("SoftmaxOutput: label[", i, "] = ", static_cast<long long>(label.dptr_[i]),
           " is not a class index in [0, ", classes, ")");
    else
      Fail("SoftmaxOutput: label[", i, "] = ", v, " is not a class index in [0, ", classes, ")");
  }
}
template <typename Device, typename LType>
inline void CheckLabels(Stream<Device>*, const Tensor<Device, 1, LType>&, index_t) {}

inline void CheckSoftmaxReq(const char* what, OpReqType req, bool allow_add) {
  TE_CHECK(req == kNullOp || req == kWriteTo || req == kWriteInplace || (allow_add && req == kAddTo),
           "SoftmaxOutput ", what, ": req ", OpReqName(req), " (", static_cast<int>(req), ") is not supported");
}

}  // namespace detail

template <typename Device, typename DType, typename LType>
void SoftmaxOutputForward(const SoftmaxOutputParam& /*p: grad_scale acts in the backward only*/,
                          const Tensor<Device, 2, DType>& data,
                          const Tensor<Device, 1, LType>& label, OpReqType req_prob,
                          const Tensor<Device, 2, DType>& prob, OpReqType req_loss,
                          const Tensor<Device, 1, DType>& loss) {
  detail::CheckSoftmaxShapes("forward", data.shape_, label);
  detail::CheckSoftmaxReq("forward (prob)", req_prob, false);
  detail::CheckSoftmaxReq("forward (loss)", req_loss, true);
  TE_CHECK(req_prob != kNullOp, "SoftmaxOutput forward: prob is needed by backward and the loss; req kNullOp "
           "is not supported for it");
  TE_CHECK(prob.shape_ == data.shape_, "SoftmaxOutput forward: prob shape ", prob.shape_,
           " does not match data shape ", data.shape_);
  if (req_loss != kNullOp)
    TE_CHECK(loss.shape_[0] == 1, "SoftmaxOutput forward: loss shape ", loss.shape_, " must be (1)");
  const index_t N = data.shape_[0], K = data.shape_[1];
  detail::CheckLabels(label.stream_, label, K);
  Stream<Device>* s = prob.stream_;
  // Workspace: the row maxima (N, 1), the row sums (N, 1), data[i, label[i]] (N), the total (1).
  Tensor<Device, 1, DType> ws = get_space_typed<Device, 1, DType>(Shape1(3 * N + 1), s);
  Tensor<Device, 2, DType> row_max(ws.dptr_, Shape2(N, 1), s), row_sum(ws.dptr_ + N, Shape2(N, 1), s);
  Tensor<Device, 1, DType> max1(ws.dptr_, Shape1(N), s), sum1(ws.dptr_ + N, Shape1(N), s);
  Tensor<Device, 1, DType> nll(ws.dptr_ + 2 * N, Shape1(N), s), total(ws.dptr_ + 3 * N, Shape1(1), s);
  if (N > 0) {
    // Read before prob is written: prob may alias data.
    if (req_loss != kNullOp)
      nll = expr::MatChooseRowElementExp<Tensor<Device, 2, DType>, Tensor<Device, 1, LType>>(data, label, FaultRecord(s));
    ::tensorexpr::detail::SoftmaxAlongAxis1(prob, data, row_max, row_sum);
  }
  if (req_loss == kNullOp) return;
  if (N > 0) {
    // -log p[label] = max + log(sum exp(x - max)) - x[label]
    nll = max1 + expr::F<op::log>(sum1) - nll;
    total = expr::sumall(nll);
  } else {
    total = DType(0);
  }
  Assign(loss, req_loss, total * DType(1.0 / static_cast<double>(N > 0 ? N : 1)));
}

template <typename Device, typename DType, typename LType>
void SoftmaxOutputBackward(const SoftmaxOutputParam& p, const Tensor<Device, 2, DType>& prob,
                           const Tensor<Device, 1, LType>& label, OpReqType req,
                           const Tensor<Device, 2, DType>& data_grad) {
  detail::CheckSoftmaxShapes("backward", prob.shape_, label);
  detail::CheckSoftmaxReq("backward", req, true);
  TE_CHECK(data_grad.shape_ == prob.shape_, "SoftmaxOutput backward: data gradient shape ", data_grad.shape_,
           " does not match prob shape ", prob.shape_);
  if (req == kNullOp) return;
  const index_t N = prob.shape_[0], K = prob.shape_[1];
  detail::CheckLabels(label.stream_, label, K);
  if (N == 0) return;
  const DType scale(p.grad_scale / static_cast<double>(N));
  Assign(data_grad, req, (prob - expr::OneHotEncodeExp<DType, Tensor<Device, 1, LType>>(label, K, FaultRecord(data_grad.stream_))) * scale);
}

template <typename Device, typename DType, typename LType>
void SoftmaxOutputBackward(const SoftmaxOutputParam& p, const Tensor<Device, 2, DType>& prob,
                           const Tensor<Device, 1, LType>& label, const Tensor<Device, 1, DType>& loss_grad,
                           OpReqType req, const Tensor<Device, 2, DType>& data_grad) {
  detail::CheckSoftmaxShapes("backward", prob.shape_, label);
  detail::CheckSoftmaxReq("backward", req, true);
  TE_CHECK(data_grad.shape_ == prob.shape_, "SoftmaxOutput backward: data gradient shape ", data_grad.shape_,
           " does not match prob shape ", prob.shape_);
  TE_CHECK(loss_grad.shape_[0] == 1, "SoftmaxOutput backward: loss gradient shape ", loss_grad.shape_,
           " must be (1)");
  if (req == kNullOp) return;
  const index_t N = prob.shape_[0], K = prob.shape_[1];
  detail::CheckLabels(label.stream_, label, K);
  if (N == 0) return;
  const DType scale(p.grad_scale / static_cast<double>(N));
  const Tensor<Device, 2, DType> g11(loss_grad.dptr_, Shape2(1, 1), loss_grad.stream_);
  Assign(data_grad, req,
         (prob - expr::OneHotEncodeExp<DType, Tensor<Device, 1, LType>>(label, K, FaultRecord(data_grad.stream_))) * scale *
             expr::broadcast_keepdim(expr::broadcast_keepdim(g11, 0, N), 1, K));
}

// Explicit instantiations for one device and dtype, with labels of that dtype or int32_t (ops/softmax_output.cc).
#define TE_SOFTMAX_OUTPUT_INSTANCE_(Device, DType, LType) \
  template void SoftmaxOutputForward<Device, DType, LType>( \
      const SoftmaxOutputParam& /*p: grad_scale acts in the backward only*/, const Tensor<Device, 2, DType>& data, \
      const Tensor<Device, 1, LType>& label, OpReqType req_prob, const Tensor<Device, 2, DType>& prob, \
      OpReqType req_loss, const Tensor<Device, 1, DType>& loss); \
  template void SoftmaxOutputBackward<Device, DType, LType>(const SoftmaxOutputParam& p, \
      const Tensor<Device, 2, DType>& prob, const Tensor<Device, 1, LType>& label, OpReqType req, \
      const Tensor<Device, 2, DType>& data_grad); \
  template void SoftmaxOutputBackward<Device, DType, LType>(const SoftmaxOutputParam& p, \
      const Tensor<Device, 2, DType>& prob, const Tensor<Device, 1, LType>& label, \
      const Tensor<Device, 1, DType>& loss_grad, OpReqType req, const Tensor<Device, 2, DType>& data_grad);
#define TE_INSTANTIATE_SOFTMAX_OUTPUT(Device, DType) \
  TE_SOFTMAX_OUTPUT_INSTANCE_(Device, DType, DType) TE_SOFTMAX_OUTPUT_INSTANCE_(Device, DType, int32_t)

}  // namespace ops
}  // namespace tensorexpr
