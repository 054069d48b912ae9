// tensorexpr/ops/conv_epilogue_map.h — a convolution's epilogue (conv_algorithm.h's ConvEpilogue:
// act(conv + bias[k] + residual)) as one expression node over any source shaped like the output:
//
//   out (req) epilogue_map(src, ep, channels_last)
//
// What the operator runs where no algorithm fuses the epilogue into its store, and what pointwise_gemm's
// staged channels-first forward reads as it transposes its result back where cuBLASLt's store cannot
// take the epilogue (transpose(epilogue_map(staged)), which keeps the transpose's tiled kernel: a map
// over a transpose would run element by element; the GPU's tiles read the staged tensor through a
// pointer, Plan::ColumnMap). One
// node for every form (bias, residual, relu each optional, read at run time): one kernel per saver,
// where the same form as broadcast and map nodes would be eight. The sum is taken in float for half and
// bf16 and rounded once, as the fused kernels do.
//
// The channel of element (y, x) of the output's (rows, last) view is x channels last and (y / row_step)
// % K channels first, so that a channels-first output is best seen with its spatial dimensions as one
// (epilogue_rows below): rows of whole images (784 wide at 28 x 28) rather than of its last dimension
// (28 wide), which the GPU's map runs element by element where rows are not whole 16-byte vectors.
#pragma once
#include <type_traits>
#include <tensorexpr/tensorexpr.h>
#include <tensorexpr/ops/conv_algorithm.h>

namespace tensorexpr {
namespace ops {

// The epilogue of element (y, x) of an output's (rows, last) view, given v, the source's element there:
// what epilogue_map's plan applies, apart from its source.
template <typename DType>
struct ConvEpilogueApply {
  using Acc = typename std::conditional<is_low_precision<DType>::value, float, DType>::type;
  const DType* bias_;
  const DType* residual_;  // dense, shaped like the output: element (y, x) at y * width_ + x
  index_t width_;
  IndexDiv row_step_;  // rows per channel (channels first)
  IndexDiv channels_;
  bool channels_last_, relu_;
  TE_XINLINE DType operator()(Acc v, index_t y, index_t x) const {
    if (bias_ != nullptr) {
      index_t c = x;
      if (!channels_last_) {
        const index_t r = row_step_.Div(y);
        c = channels_.Rem(r, channels_.Div(r));
      }
      v += static_cast<Acc>(bias_[c]);
    }
    if (residual_ != nullptr) v += static_cast<Acc>(residual_[y * width_ + x]);
    if (relu_) v = op::relu::Map(v);
    return static_cast<DType>(v);
  }
};

template <typename SrcExp, typename DType>
struct ConvEpilogueMapExp : public expr::Exp<ConvEpilogueMapExp<SrcExp, DType>, DType, expr::type::kChainer> {
  static_assert(SrcExp::kExpType != expr::type::kComplex,
                "epilogue_map(...) cannot read dot(...) directly; assign the product to a tensor first");
  static_assert(std::is_same<typename SrcExp::value_type, DType>::value, "epilogue_map: the source must be of the epilogue's type");
  static constexpr int kDim = SrcExp::kDim;
  static constexpr bool kFlat = false;
  using device_type = typename SrcExp::device_type;

  SrcExp src_;
  ConvEpilogue<DType> ep_;
  bool channels_last_;
  ConvEpilogueMapExp(const SrcExp& src, const ConvEpilogue<DType>& ep, bool channels_last)
      : src_(src), ep_(ep), channels_last_(channels_last) {
    static_assert(kDim >= 2, "epilogue_map: the output has a batch and a channel dimension at least");
  }
  Shape<kDim> shape() const { return src_.shape(); }

  struct Plan {
    typename SrcExp::Plan src_;
    ConvEpilogueApply<DType> apply_;
    TE_XINLINE DType Eval(index_t y, index_t x) const {
      return apply_(static_cast<typename ConvEpilogueApply<DType>::Acc>(src_.Eval(y, x)), y, x);
    }

    // For the GPU's tiled transposes (expr/transpose.h's MappedPlanOf), which read the source tensor
    // through a pointer and map what they read: the elements (y + i * step, x) of one column, the
    // epilogue's parameters held by value. Channels last without a residual (a staged convolution's
    // result) the column's bias is read once.
    using MappedPlan = typename SrcExp::Plan;
    TE_XINLINE const MappedPlan& mapped() const { return src_; }
    struct Column {
      using Acc = typename ConvEpilogueApply<DType>::Acc;
      ConvEpilogueApply<DType> apply_;
      index_t y_, x_, step_;
      Acc bias_;  // the column's (channels last), else unused
      TE_XINLINE DType operator()(DType value, index_t i) const {
        if (apply_.channels_last_ && apply_.residual_ == nullptr) {
          const Acc v = static_cast<Acc>(value) + bias_;
          return static_cast<DType>(apply_.relu_ ? op::relu::Map(v) : v);
        }
        return apply_(static_cast<Acc>(value), y_ + i * step_, x_);
      }
    };
    TE_XINLINE Column ColumnMap(index_t y, index_t x, index_t step) const {
      using Acc = typename ConvEpilogueApply<DType>::Acc;
      const bool column_bias = apply_.channels_last_ && apply_.bias_ != nullptr;
      return Column{apply_, y, x, step, column_bias ? static_cast<Acc>(apply_.bias_[x]) : Acc(0)};
    }
  };
  Plan plan() const {
    const Shape<kDim> s = shape();
    // Channels first the channel is dimension 1: rows per channel are the dimensions between it and the last.
    const index_t row_step = channels_last_ ? 1 : s.ProdShape(2, kDim - 1);
    const index_t channels = channels_last_ ? s[kDim - 1] : s[1];
    return Plan{src_.plan(), {ep_.bias, ep_.residual, s[kDim - 1], IndexDiv::Make(row_step), IndexDiv::Make(channels),
                              channels_last_, ep_.activation == ConvActivation::kRelu}};
  }
};

// act(src + bias + residual) as `ep` says (ep.active is not read: a caller applies only active ones).
template <typename SrcExp, typename DType, int etype>
inline ConvEpilogueMapExp<SrcExp, DType> epilogue_map(const expr::Exp<SrcExp, DType, etype>& src,
                                                      const ConvEpilogue<DType>& ep, bool channels_last) {
  return ConvEpilogueMapExp<SrcExp, DType>(src.self(), ep, channels_last);
}

// Calls f(views...) with the tensors (all of one shape, batched: (N, C, spatial...) or (N, spatial..., C))
// as the epilogue is best applied to them: channels first with the spatial dimensions as one, (N, C, P),
// when every one is contiguous; else as they are.
template <typename F, typename Device, int dim, typename DType, typename... More>
inline void WithEpilogueRows(bool channels_last, F f, const Tensor<Device, dim, DType>& t, const More&... more) {
  if constexpr (dim > 3) {
    const bool dense = t.CheckContiguous() && (more.CheckContiguous() && ...);
    if (!channels_last && dense) {
      auto merged = [&t](const auto& u) {
        using U = std::decay_t<decltype(u)>;
        return Tensor<Device, 3, typename U::value_type>(u.dptr_, Shape3(t.shape_[0], t.shape_[1], t.shape_.ProdShape(2, dim)),
                                                          u.stream_);
      };
      f(merged(t), merged(more)...);
      return;
    }
  }
  f(t, more...);
}

// out = epilogue_map(out, ep, channels_last), in place over a batched output in its best row form: an
// epilogue no kernel fused (a convolution's or deconvolution's bias).
template <typename Device, int dim, typename DType>
inline void ApplyEpilogueInPlace(const Tensor<Device, dim, DType>& out, const ConvEpilogue<DType>& ep, bool channels_last) {
  WithEpilogueRows(channels_last, [&](auto y) { y = epilogue_map(y, ep, channels_last); }, out);
}

}  // namespace ops
}  // namespace tensorexpr
