// ops/embedding.h — the template implementation of <tensorexpr/ops/embedding.h> (see there), compiled into
// tensorexpr_ops / tensorexpr_ops_cuda for the standard dtypes. Include it to use another dtype.
#pragma once
#include <tensorexpr/tensorexpr.h>
#include <tensorexpr/ops/embedding.h>
#include <tensorexpr/workspace.h>
#include "embedding_row.h"
#if defined(__CUDACC__)
#include <tensorexpr/cuda/tensorexpr_cuda.cuh>
#include "cuda/embedding_grad.cuh"
#else
#include "cpu/embedding_grad.h"
#endif

namespace tensorexpr {
namespace ops {

namespace detail {

// The data as one row of indices (it must be contiguous), after the checks every pass makes.
template <typename Device, int idim, typename IType, typename DType>
inline Tensor<Device, 1, IType> EmbeddingIndices(const char* what, const EmbeddingParam& p,
                                                 const Tensor<Device, idim, IType>& data,
                                                 const Tensor<Device, 2, DType>& weight, const char* weight_name,
                                                 const Shape<idim + 1>& out, const char* out_name) {
  static_assert(idim >= 1 && idim <= 4, "Embedding takes data of rank 1 to 4 (the output adds output_dim)");
  const Shape<idim + 1> want = InferEmbeddingShape(p, data.shape_);
  TE_CHECK(weight.shape_ == EmbeddingWeightShape(p), what, ": ", weight_name, " shape ", weight.shape_,
           " must be (input_dim, output_dim) = ", EmbeddingWeightShape(p));
  TE_CHECK(out == want, what, ": ", out_name, " shape ", out, " must be the data's shape ", data.shape_,
           " + (output_dim) = ", want);
  TE_CHECK(data.CheckContiguous() || data.shape_.Size() == 0, what, ": the data of shape ", data.shape_,
           " has padded rows (stride ", data.stride_, "); the indices must be contiguous");
  return Tensor<Device, 1, IType>(data.dptr_, Shape1(data.shape_.Size()), data.stream_);
}

// kRaise: an Error unless every index truncates into [0, input_dim). The smallest and largest index are
// reduced on the device and brought back (NaN fails both comparisons).
template <typename Device, typename IType>
inline void CheckEmbeddingRange(const char* what, const EmbeddingParam& p, const Tensor<Device, 1, IType>& idx) {
  if (p.mode != EmbeddingMode::kRaise || idx.shape_.Size() == 0) return;
  Stream<Device>* s = idx.stream_;
  const Tensor<Device, 1, double> range = get_space_typed<Device, 1, double>(Shape1(2), s);
  Tensor<Device, 1, double> lo(range.dptr_, Shape1(1), s), hi(range.dptr_ + 1, Shape1(1), s);
  lo = expr::minall(expr::tcast<double>(idx));
  hi = expr::maxall(expr::tcast<double>(idx));
  TensorContainer<cpu, 1, double> host(Shape1(2));
  Copy(host.view(), range, s);
  WaitStream(s);
  TE_CHECK(host.dptr_[0] > -1 && host.dptr_[1] < static_cast<double>(p.input_dim), what,
           ": mode raise: the indices range from ", host.dptr_[0], " to ", host.dptr_[1], "; each must lie in [0, input_dim = ",
           p.input_dim, ") once truncated toward zero (mode clip clips them)");
}

}  // namespace detail

template <typename Device, int idim, typename IType, typename DType>
void EmbeddingForward(const EmbeddingParam& p, const Tensor<Device, idim, IType>& data,
                      const Tensor<Device, 2, DType>& weight, OpReqType req, const Tensor<Device, idim + 1, DType>& out) {
  const Tensor<Device, 1, IType> idx =
      detail::EmbeddingIndices("Embedding forward", p, data, weight, "weight", out.shape_, "output");
  if (!DecodeReq(req, "Embedding forward").active || idx.shape_.Size() == 0) return;
  detail::CheckEmbeddingRange("Embedding forward", p, idx);
  Assign(out.FlatTo2D(), req, expr::take<true>(idx, weight));  // the clip is take's, TakeRow<true>
}

template <typename Device, int idim, typename IType, typename DType>
void EmbeddingBackward(const EmbeddingParam& p, const Tensor<Device, idim + 1, DType>& out_grad,
                       const Tensor<Device, idim, IType>& data, OpReqType req, const Tensor<Device, 2, DType>& weight_grad) {
  const Tensor<Device, 1, IType> idx = detail::EmbeddingIndices("Embedding backward", p, data, weight_grad,
                                                                "weight gradient", out_grad.shape_, "output gradient");
  const ReqStore store = DecodeReq(req, "Embedding backward");
  if (!store.active) return;
  detail::CheckEmbeddingRange("Embedding backward", p, idx);
  // Rows no index picks get zero; the picked ones then add their sums to it.
  if (!store.add) Assign(weight_grad, kWriteTo, expr::scalar<DType>(DType(0)));
  const index_t n = idx.shape_.Size();
  if (n == 0) return;
  const Tensor<Device, 2, DType> dy = out_grad.FlatTo2D();
  detail::EmbeddingGradRows(weight_grad.stream_, idx.dptr_, n, p.input_dim, dy.dptr_, dy.stride_, p.output_dim,
                            weight_grad.dptr_, weight_grad.stride_);
}

// Explicit instantiations for one device and weight dtype: data of rank 1 to 4, indices int32_t, int64_t
// and float (ops/embedding.cc).
#define TE_EMBEDDING_INSTANCE_(Device, idim, IType, DType) \
  template void EmbeddingForward<Device, idim, IType, DType>(const EmbeddingParam& p, \
      const Tensor<Device, idim, IType>& data, const Tensor<Device, 2, DType>& weight, OpReqType req, \
      const Tensor<Device, idim + 1, DType>& out); \
  template void EmbeddingBackward<Device, idim, IType, DType>(const EmbeddingParam& p, \
      const Tensor<Device, idim + 1, DType>& out_grad, const Tensor<Device, idim, IType>& data, OpReqType req, \
      const Tensor<Device, 2, DType>& weight_grad);
#define TE_EMBEDDING_RANKS_(Device, IType, DType) \
  TE_EMBEDDING_INSTANCE_(Device, 1, IType, DType) TE_EMBEDDING_INSTANCE_(Device, 2, IType, DType) \
  TE_EMBEDDING_INSTANCE_(Device, 3, IType, DType) TE_EMBEDDING_INSTANCE_(Device, 4, IType, DType)
#define TE_INSTANTIATE_EMBEDDING(Device, DType) \
  TE_EMBEDDING_RANKS_(Device, int32_t, DType) TE_EMBEDDING_RANKS_(Device, int64_t, DType) \
  TE_EMBEDDING_RANKS_(Device, float, DType)

}  // namespace ops
}  // namespace tensorexpr
