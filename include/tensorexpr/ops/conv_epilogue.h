// tensorexpr/ops/conv_epilogue.h — a convolution forward whose output passes through an elementwise
// expression before it is stored, written in the library's own syntax:
//
//   auto y = ops::conv_output(out);   // stands for conv(x, W) in the expression
//   ops::ConvolutionForward(p, x, W, kWriteTo, out,
//                           expr::F<op::relu>(y + expr::broadcast<1>(bias, out.shape_) + shortcut));
//
// stores out (req) relu(conv(x, W) + bias + shortcut). The expression may be any elementwise expression of
// conv_output, scalars and tensors (F<op>(...) with the library's or a user's functors, + - * /, tcast,
// broadcast of a vector); p.no_bias must be set, as the bias is part of the expression.
//
// How it runs: an expression of the form act(conv + broadcast<channel axis>(bias) + residual), with act
// op::relu or none and bias and residual each optional, goes to the algorithm as a ConvEpilogue; where
// that algorithm fuses it (cutlass_implicit_gemm on channels-last data: <tensorexpr/ops/conv_algorithm.h>)
// it costs nothing beyond the convolution. Any other expression, or an algorithm that does not fuse it,
// takes one more elementwise pass: the convolution is stored (into out itself when req writes and no
// operand of the expression reads out's memory, else into a temporary) and the expression is evaluated
// over it with req (the recognised form as one epilogue_map, <tensorexpr/ops/conv_epilogue_map.h>).
#pragma once
#include <cstdint>
#include <type_traits>
#include <tensorexpr/tensor.h>
#include <tensorexpr/tensor_container.h>
#include <tensorexpr/ops/convolution.h>
#include <tensorexpr/ops/conv_epilogue_map.h>

namespace tensorexpr {
namespace ops {

// The convolution's result inside an epilogue expression: shaped like the output it was made from.
// It has no value of its own: ConvolutionForward binds it to the convolution.
template <typename Device, int dim, typename DType>
struct ConvOutputExp : public expr::Exp<ConvOutputExp<Device, dim, DType>, DType, expr::type::kRValue> {
  static constexpr int kDim = dim;
  static constexpr bool kFlat = true;
  using device_type = Device;
  Shape<dim> shape_;
  explicit ConvOutputExp(const Shape<dim>& shape) : shape_(shape) {}
  Shape<dim> shape() const { return shape_; }
  bool contiguous() const { return true; }
  bool aligned_for(int) const { return true; }
  struct Plan {
    TE_XINLINE DType Eval(index_t, index_t) const { return DType(0); }
  };
  template <bool kBound = false>
  Plan plan() const {
    static_assert(kBound,
                  "ops::conv_output(...) is evaluated only as the epilogue of ops::ConvolutionForward, and there only "
                  "under elementwise maps (F<op>, + - * /, tcast): it has no value of its own");
    return Plan();
  }
};

template <typename Device, int dim, typename DType>
inline ConvOutputExp<Device, dim, DType> conv_output(const Tensor<Device, dim, DType>& out) {
  return ConvOutputExp<Device, dim, DType>(out.shape_);
}

namespace epilogue {

// ---- Bind(e, v): e with every conv_output replaced by the tensor v ----------------------------------------
template <typename V, typename E>
E Bind(const E& e, const V& v);
template <typename V, typename Device, int dim, typename DType>
V Bind(const ConvOutputExp<Device, dim, DType>& e, const V& v);
template <typename V, typename OP, typename TA, typename DType, int et>
auto Bind(const expr::UnaryMapExp<OP, TA, DType, et>& e, const V& v);
template <typename V, typename OP, typename TA, typename TB, typename DType, int et>
auto Bind(const expr::BinaryMapExp<OP, TA, TB, DType, et>& e, const V& v);
template <typename V, typename Dst, typename TA, typename Src, int et>
auto Bind(const expr::TypecastExp<Dst, TA, Src, et>& e, const V& v);

template <typename V, typename E>
E Bind(const E& e, const V&) {
  return e;
}
template <typename V, typename Device, int dim, typename DType>
V Bind(const ConvOutputExp<Device, dim, DType>&, const V& v) {
  return v;
}
template <typename V, typename OP, typename TA, typename DType, int et>
auto Bind(const expr::UnaryMapExp<OP, TA, DType, et>& e, const V& v) {
  return expr::F<OP>(Bind(e.src_, v));
}
template <typename V, typename OP, typename TA, typename TB, typename DType, int et>
auto Bind(const expr::BinaryMapExp<OP, TA, TB, DType, et>& e, const V& v) {
  return expr::F<OP>(Bind(e.lhs_, v), Bind(e.rhs_, v));
}
template <typename V, typename Dst, typename TA, typename Src, int et>
auto Bind(const expr::TypecastExp<Dst, TA, Src, et>& e, const V& v) {
  return expr::tcast<Dst>(Bind(e.src_, v));
}

// ---- MayRead(e, lo, hi): whether evaluating e may read memory in [lo, hi) ------------------------------------
// Exact for maps, scalars, tensors and broadcast vectors; any other node is assumed to.
inline bool Overlaps(const void* p, size_t bytes, const void* lo, const void* hi) {
  const auto a = reinterpret_cast<uintptr_t>(p);
  return bytes > 0 && a < reinterpret_cast<uintptr_t>(hi) && reinterpret_cast<uintptr_t>(lo) < a + bytes;
}
template <typename E>
bool MayRead(const E&, const void*, const void*) {
  return true;
}
template <typename DType>
bool MayRead(const expr::ScalarExp<DType>&, const void*, const void*) {
  return false;
}
template <typename Device, int dim, typename DType>
bool MayRead(const ConvOutputExp<Device, dim, DType>&, const void*, const void*) {
  return false;
}
template <typename Device, int dim, typename DType>
bool MayRead(const Tensor<Device, dim, DType>& t, const void* lo, const void* hi) {
  const index_t rows = t.shape_.Size() == 0 ? 0 : t.shape_.ProdShape(0, dim - 1);
  return Overlaps(t.dptr_, sizeof(DType) * size_t(rows * t.stride_), lo, hi);
}
template <typename Src, typename DType, int dimdst, int dimcast>
bool MayRead(const expr::Broadcast1DExp<Src, DType, dimdst, dimcast>& e, const void* lo, const void* hi) {
  return MayRead(e.src_, lo, hi);
}
template <typename OP, typename TA, typename DType, int et>
bool MayRead(const expr::UnaryMapExp<OP, TA, DType, et>& e, const void* lo, const void* hi) {
  return MayRead(e.src_, lo, hi);
}
template <typename OP, typename TA, typename TB, typename DType, int et>
bool MayRead(const expr::BinaryMapExp<OP, TA, TB, DType, et>& e, const void* lo, const void* hi) {
  return MayRead(e.lhs_, lo, hi) || MayRead(e.rhs_, lo, hi);
}
template <typename Dst, typename TA, typename Src, int et>
bool MayRead(const expr::TypecastExp<Dst, TA, Src, et>& e, const void* lo, const void* hi) {
  return MayRead(e.src_, lo, hi);
}

// ---- Match(e): the ConvEpilogue e is, when it has that form ---------------------------------------------------
// The sum's terms: conv_output once, at most one bias broadcast along the channel axis, at most one
// dense residual shaped like the output (the same tensor twice is two terms: not this form).
template <typename Device, int dim, typename DType>
struct Terms {
  Shape<dim> out_shape;
  int channel_axis = 0;
  bool ok = true;
  int convs = 0;
  const DType* bias = nullptr;
  const DType* residual = nullptr;
};
template <typename E, typename T>
void CollectTerms(const E&, T* t) {
  t->ok = false;
}
template <typename Device, int dim, typename DType>
void CollectTerms(const ConvOutputExp<Device, dim, DType>&, Terms<Device, dim, DType>* t) {
  ++t->convs;
}
template <typename Device, int dim, typename DType>
void CollectTerms(const Tensor<Device, dim, DType>& r, Terms<Device, dim, DType>* t) {
  if (t->residual != nullptr || !(r.shape_ == t->out_shape) || !r.CheckContiguous()) t->ok = false;
  t->residual = r.dptr_;
}
template <typename Device, int dim, typename DType, int dimcast>
void CollectTerms(const expr::Broadcast1DExp<Tensor<Device, 1, DType>, DType, dim, dimcast>& b,
                  Terms<Device, dim, DType>* t) {
  if (t->bias != nullptr || dimcast != t->channel_axis || !b.src_.CheckContiguous()) t->ok = false;
  t->bias = b.src_.dptr_;
}
template <typename TA, typename TB, typename DType, int et, typename T>
void CollectTerms(const expr::BinaryMapExp<op::plus, TA, TB, DType, et>& e, T* t) {
  CollectTerms(e.lhs_, t);
  CollectTerms(e.rhs_, t);
}

template <typename E>
struct is_relu : std::false_type {};
template <typename TA, typename DType, int et>
struct is_relu<expr::UnaryMapExp<op::relu, TA, DType, et>> : std::true_type {};

template <typename Device, int dim, typename DType, typename E>
ConvEpilogue<DType> Match(const E& e, const Shape<dim>& out_shape, int channel_axis) {
  Terms<Device, dim, DType> t;
  t.out_shape = out_shape;
  t.channel_axis = channel_axis;
  ConvEpilogue<DType> fe;
  if constexpr (is_relu<E>::value) {
    fe.activation = ConvActivation::kRelu;
    CollectTerms(e.src_, &t);
  } else {
    CollectTerms(e, &t);
  }
  fe.active = t.ok && t.convs == 1;
  fe.bias = t.bias;
  fe.residual = t.residual;
  return fe;
}

}  // namespace epilogue

// out (req) epilogue, where epilogue is an elementwise expression of conv_output(out) standing for
// conv(x, W) (see the top of this file). Tensors as for the ConvolutionForward with a bias.
template <typename Device, int ddim, int wdim, typename DType, typename E, int etype>
void ConvolutionForward(const ConvolutionParam& p, const Tensor<Device, ddim, DType>& data,
                        const Tensor<Device, wdim, DType>& weight, OpReqType req,
                        const Tensor<Device, ddim, DType>& out, const expr::Exp<E, DType, etype>& epilogue) {
  static_assert(std::is_same<typename E::device_type, Device>::value ||
                    std::is_same<typename E::device_type, expr::AnyDevice>::value,
                "the epilogue expression must live on the convolution's device");
  static_assert(E::kDim == ddim, "the epilogue expression must have the output's number of dimensions");
  TE_CHECK(p.no_bias, "ConvolutionForward with an epilogue: the bias belongs in the epilogue expression (",
           "broadcast it there) and no_bias must be set");
  const E& e = epilogue.self();
  TE_CHECK(e.shape() == out.shape_, "ConvolutionForward: the epilogue's shape ", e.shape(),
           " differs from the output's ", out.shape_);
  const int spatial = wdim - 2;
  const int channel_axis = p.layout == Layout::kNHWC ? ddim - 1 : ddim - spatial - 1;
  const ConvEpilogue<DType> fused = epilogue::Match<Device, ddim, DType>(e, out.shape_, channel_axis);
  if (fused.active && ConvolutionForwardFused(p, data, weight, fused, req, out)) return;
  if (req == kNullOp) return;
  // out (store) the epilogue of `conv`: the recognised form with a bias, of batched data, as one
  // epilogue_map over rows of whole images; any other expression as written (without a broadcast it is
  // elementwise, which the map engines vectorise over any shape).
  // (Assign): a public header, so an MXNet `#define Assign(out, req, exp)` made before it must not expand.
  auto apply = [&](OpReqType store, const Tensor<Device, ddim, DType>& conv) {
    if constexpr (ddim == wdim) {
      if (fused.active && fused.bias != nullptr) {
        const bool channels_last = p.layout == Layout::kNHWC;
        WithEpilogueRows(channels_last, [&](auto o, auto c) { (Assign)(o, store, epilogue_map(c, fused, channels_last)); },
                         out, conv);
        return;
      }
    }
    (Assign)(out, store, epilogue::Bind(e, conv));
  };
  const Tensor<Device, 1, DType> no_bias;
  const char* const out_begin = reinterpret_cast<const char*>(out.dptr_);
  const char* const out_end = out_begin + sizeof(DType) * size_t(out.shape_.Size());
  if (req != kAddTo && !epilogue::MayRead(e, out_begin, out_end)) {
    ConvolutionForward(p, data, weight, no_bias, kWriteTo, out);
    apply(kWriteTo, out);
  } else {
    TensorContainer<Device, ddim, DType> conv;
    conv.set_stream(out.stream_);
    conv.Resize(out.shape_);
    ConvolutionForward(p, data, weight, no_bias, kWriteTo, conv.view());
    apply(req, conv.view());
  }
}

}  // namespace ops
}  // namespace tensorexpr
