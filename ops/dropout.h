// ops/dropout.h — the template implementation of <tensorexpr/ops/dropout.h> (see there), compiled into
// tensorexpr_ops / tensorexpr_ops_cuda for the standard dtypes. Include it to use another dtype.
#pragma once
#include <tensorexpr/tensorexpr.h>
#include <tensorexpr/ops/dropout.h>
#include <tensorexpr/random.h>
#include <tensorexpr/random_philox.h>
#if defined(__CUDACC__)
#include <tensorexpr/cuda/tensorexpr_cuda.cuh>
#include <tensorexpr/cuda/random.cuh>
#include <tensorexpr/cuda/random_philox.cuh>
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

// The scaled mask (0 < keep < 1) from a Random: uniform values drawn into the mask itself, then
// thresholded in place (two passes).
template <typename Device, typename DType>
void DrawDropoutMask(Random<Device, DType>* rnd, Tensor<Device, 2, DType> mask, compute_t<DType> keep) {
  using A = compute_t<DType>;
  rnd->SampleUniform(mask, A(0), A(1));
  mask = expr::tcast<DType>(expr::F<dropout_mask>(expr::tcast<A>(mask), expr::scalar<A>(keep)));
}
// From a PhiloxRandom in one pass: each element's uniform on [0, 1) in compute_t<DType> (the number
// SampleUniform(t, 0, 1) would give a compute_t<DType> tensor there) thresholded as it is drawn.
template <typename DType>
struct PhiloxDropoutMask {
  using A = compute_t<DType>;
  using Units = ::tensorexpr::detail::PhiloxUnits<A>;
  static constexpr int kPerBlock = Units::kCount;
  A keep;
  TE_XINLINE void operator()(const PhiloxWords& block, DType* out) const {
    A u[4];  // kPerBlock of them
    Units::Draw(block, u);
    TE_UNROLL
    for (int j = 0; j < kPerBlock; ++j) out[j] = static_cast<DType>(dropout_mask::Map(u[j], keep));
  }
};
template <typename Device, typename DType>
void DrawDropoutMask(PhiloxRandom<Device>* rnd, const Tensor<Device, 2, DType>& mask, compute_t<DType> keep) {
  rnd->Generate(mask, PhiloxDropoutMask<DType>{keep}, "DropoutForward");
}

// DropoutForward's body for either generator (Rng: Random<Device, DType> or PhiloxRandom<Device>).
template <typename Device, int dim, typename DType, typename Rng>
void DropoutForwardWith(const DropoutParam& p, bool is_train, Rng* rnd, const Tensor<Device, dim, DType>& data,
                        OpReqType req, const Tensor<Device, dim, DType>& out, const Tensor<Device, dim, DType>& mask) {
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
    DropoutForwardWith(p, is_train, rnd, data.FlatTo2D(), req, out.FlatTo2D(),
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
      DrawDropoutMask(rnd, keep_mask, keep);
    }
    Assign(out, req, data * mask);
  }
}
}  // namespace detail

template <typename Device, int dim, typename DType>
void DropoutForward(const DropoutParam& p, bool is_train, Random<Device, DType>* rnd,
                    const Tensor<Device, dim, DType>& data, OpReqType req, const Tensor<Device, dim, DType>& out,
                    const Tensor<Device, dim, DType>& mask) {
  detail::DropoutForwardWith(p, is_train, rnd, data, req, out, mask);
}
template <typename Device, int dim, typename DType>
void DropoutForward(const DropoutParam& p, bool is_train, PhiloxRandom<Device>* rnd,
                    const Tensor<Device, dim, DType>& data, OpReqType req, const Tensor<Device, dim, DType>& out,
                    const Tensor<Device, dim, DType>& mask) {
  detail::DropoutForwardWith(p, is_train, rnd, data, req, out, mask);
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
  template void DropoutForward<Device, dim, DType>(const DropoutParam& p, bool is_train, PhiloxRandom<Device>* rnd, \
      const Tensor<Device, dim, DType>& data, OpReqType req, const Tensor<Device, dim, DType>& out, \
      const Tensor<Device, dim, DType>& mask); \
  template void DropoutBackward<Device, dim, DType>(const DropoutParam& p, \
      const Tensor<Device, dim, DType>& out_grad, const Tensor<Device, dim, DType>& mask, OpReqType req, \
      const Tensor<Device, dim, DType>& data_grad);
#define TE_INSTANTIATE_DROPOUT(Device, DType) TE_OPS_RANKS_FROM_1(TE_DROPOUT_INSTANCE_, Device, DType)

}  // namespace ops
}  // namespace tensorexpr
