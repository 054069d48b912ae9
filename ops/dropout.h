// ops/dropout.h — the template implementation of <tensorexpr/ops/dropout.h> (see there), compiled into
// tensorexpr_ops / tensorexpr_ops_cuda for the standard dtypes. Include it to use another dtype.
#pragma once
#include <tensorexpr/tensorexpr.h>
#include <tensorexpr/ops/dropout.h>
#include <tensorexpr/random.h>
#if defined(__CUDACC__)
#include <tensorexpr/cuda/tensorexpr_cuda.cuh>
#include <tensorexpr/cuda/random.cuh>
#endif

namespace tensorexpr {
namespace ops {

namespace detail {
// The kept-and-scaled mask from a uniform sample u in [0, 1) (or (0, 1] on the GPU): 1 / keep when
// u < keep, else 0.
struct dropout_mask {
  static const char* name() { return "dropout_mask"; }
  template <typename T>
  TE_XINLINE static T Map(T u, T keep) {
    return u < keep ? T(1) / keep : T(0);
  }
};

inline void CheckDropoutParam(const DropoutParam& p) {
  TE_CHECK(p.p >= 0 && p.p <= 1, "Dropout: p = ", p.p, " must lie in [0, 1]");
}
}  // namespace detail

template <typename Device, int dim, typename DType>
void DropoutForward(const DropoutParam& p, bool is_train, Random<Device, DType>* rnd,
                    const Tensor<Device, dim, DType>& data, OpReqType req, const Tensor<Device, dim, DType>& out,
                    const Tensor<Device, dim, DType>& mask) {
  using A = compute_t<DType>;  // the threshold and the scale are not rounded to half / bf16 first
  detail::CheckDropoutParam(p);
  TE_CHECK(req == kNullOp || req == kWriteTo || req == kWriteInplace || req == kAddTo, "Dropout forward: unknown req ",
           static_cast<int>(req));
  TE_CHECK(out.shape_ == data.shape_, "Dropout: output shape ", out.shape_, " does not match data shape ",
           data.shape_);
  if (is_train) {
    TE_CHECK(mask.shape_ == data.shape_, "Dropout: mask shape ", mask.shape_, " does not match data shape ",
             data.shape_);
    TE_CHECK(rnd != nullptr, "Dropout: training needs a random generator (got null) for data shape ", data.shape_);
  }
  // Elementwise, so every rank runs as its (rows, last dimension) view: one instance of the kernels.
  if constexpr (dim != 2) {
    DropoutForward(p, is_train, rnd, data.FlatTo2D(), req, out.FlatTo2D(),
                   is_train ? mask.FlatTo2D() : Tensor<Device, 2, DType>());
  } else {
    if (!is_train) {
      Assign(out, req, expr::F<op::identity>(data));
      return;
    }
    if (data.shape_.Size() == 0) return;
    Tensor<Device, dim, DType> keep_mask = mask;
    const A keep = A(1.0 - p.p);
    if (p.p == 0) {
      keep_mask = DType(1.0f);
    } else if (p.p == 1) {
      keep_mask = DType(0.0f);
    } else {
      rnd->SampleUniform(keep_mask, A(0), A(1));
      keep_mask = expr::tcast<DType>(expr::F<detail::dropout_mask>(expr::tcast<A>(keep_mask), expr::scalar<A>(keep)));
    }
    Assign(out, req, data * mask);
  }
}

template <typename Device, int dim, typename DType>
void DropoutBackward(const DropoutParam& p, const Tensor<Device, dim, DType>& out_grad,
                     const Tensor<Device, dim, DType>& mask, OpReqType req, const Tensor<Device, dim, DType>& data_grad) {
  detail::CheckDropoutParam(p);
  TE_CHECK(req == kNullOp || req == kWriteTo || req == kWriteInplace || req == kAddTo,
           "Dropout backward: unknown req ", static_cast<int>(req));
  TE_CHECK(mask.shape_ == out_grad.shape_, "Dropout backward: mask shape ", mask.shape_,
           " does not match output gradient shape ", out_grad.shape_);
  TE_CHECK(data_grad.shape_ == out_grad.shape_, "Dropout backward: data gradient shape ", data_grad.shape_,
           " does not match output gradient shape ", out_grad.shape_);
  if constexpr (dim != 2) {
    DropoutBackward(p, out_grad.FlatTo2D(), mask.FlatTo2D(), req, data_grad.FlatTo2D());
  } else {
    Assign(data_grad, req, out_grad * mask);
  }
}

// Explicit instantiations for one device and dtype, ranks 1 to 5 (ops/dropout.cc).
#define TE_DROPOUT_INSTANCE_(Device, dim, DType) \
  template void DropoutForward<Device, dim, DType>(const DropoutParam& p, bool is_train, Random<Device, DType>* rnd, \
      const Tensor<Device, dim, DType>& data, OpReqType req, const Tensor<Device, dim, DType>& out, \
      const Tensor<Device, dim, DType>& mask); \
  template void DropoutBackward<Device, dim, DType>(const DropoutParam& p, \
      const Tensor<Device, dim, DType>& out_grad, const Tensor<Device, dim, DType>& mask, OpReqType req, \
      const Tensor<Device, dim, DType>& data_grad);
#define TE_INSTANTIATE_DROPOUT(Device, DType) TE_OPS_RANKS_FROM_1(TE_DROPOUT_INSTANCE_, Device, DType)

}  // namespace ops
}  // namespace tensorexpr
