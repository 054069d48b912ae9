// tensorexpr/ops/embedding.h — the embedding lookup (MXNet's Embedding; ONNX's Gather on axis 0 of the
// weight), forward and the weight gradient, on any device, for float, double, half_t and bf16_t weights
// and int32_t, int64_t or float indices, data of rank 1 to 4:
//
//   out[i..., :] = weight[row(data[i...]), :]         data (any shape), weight (input_dim, output_dim),
//                                                     out = data's shape + (output_dim)
//   weight_grad[k, :] (req) = sum of out_grad[i..., :] over the i whose row(data[i]) is k
//
// row(v) truncates v toward zero. An index outside [0, input_dim) after that is, by `mode`:
//   kClip   clipped to 0 or input_dim - 1 (NaN to 0): MXNet's Embedding and its take mode "clip", the core's
//           take<true> (expr/take.h), which the forward is; the default
//   kRaise  an Error naming input_dim and the smallest and largest index (a reduction over the indices and,
//           on the GPU, a wait for it before anything is computed)
// The gradient is deterministic on both devices: the positions are sorted by their row (stably: a GPU radix
// sort, a CPU stable sort) and each row sums its positions in order, in accum_t<DType> (float for half /
// bf16), so both devices add in the same order. Rows no index picks get zero (kWriteTo) or keep their
// value (kAddTo). The data must be contiguous; weight, out and out_grad may have padded rows.
//
// Declarations: the library tensorexpr_ops (tensorexpr_ops_cuda for the GPU) holds them for the dtypes above;
// ops/embedding.h is the template implementation, for other dtypes.
#pragma once
#include <tensorexpr/tensorexpr.h>

namespace tensorexpr {
namespace ops {

enum class EmbeddingMode { kClip, kRaise };

inline const char* EmbeddingModeName(EmbeddingMode m) {
  switch (m) {
    case EmbeddingMode::kClip: return "clip";
    case EmbeddingMode::kRaise: return "raise";
  }
  return "unknown";
}

struct EmbeddingParam {
  index_t input_dim = 0;   // rows of the weight: the index values allowed (required, >= 1)
  index_t output_dim = 0;  // columns of the weight: the embedding's size (required, >= 1)
  EmbeddingMode mode = EmbeddingMode::kClip;
};

// The output shape for data of `data_shape` (data's shape + (output_dim)); Error naming the parameter
// when one is out of range.
template <int idim>
inline Shape<idim + 1> InferEmbeddingShape(const EmbeddingParam& p, const Shape<idim>& data_shape) {
  TE_CHECK(p.input_dim >= 1, "Embedding: input_dim = ", p.input_dim, " must be >= 1 (the weight's rows)");
  TE_CHECK(p.output_dim >= 1, "Embedding: output_dim = ", p.output_dim, " must be >= 1 (the weight's columns)");
  TE_CHECK(p.mode == EmbeddingMode::kClip || p.mode == EmbeddingMode::kRaise, "Embedding: unknown mode ",
           static_cast<int>(p.mode));
  Shape<idim + 1> s;
  for (int i = 0; i < idim; ++i) s[i] = data_shape[i];
  s[idim] = p.output_dim;
  return s;
}
inline Shape<2> EmbeddingWeightShape(const EmbeddingParam& p) { return Shape2(p.input_dim, p.output_dim); }

// out = the weight's rows the data picks, stored as req says.
template <typename Device, int idim, typename IType, typename DType>
void EmbeddingForward(const EmbeddingParam& p, const Tensor<Device, idim, IType>& data,
                      const Tensor<Device, 2, DType>& weight, OpReqType req, const Tensor<Device, idim + 1, DType>& out);

// weight_grad (req) = out_grad's rows summed into the rows the data picked.
template <typename Device, int idim, typename IType, typename DType>
void EmbeddingBackward(const EmbeddingParam& p, const Tensor<Device, idim + 1, DType>& out_grad,
                       const Tensor<Device, idim, IType>& data, OpReqType req, const Tensor<Device, 2, DType>& weight_grad);

}  // namespace ops
}  // namespace tensorexpr
