// expr/chpool.h — chpool<Reducer>(src, nsize[, stride, pad]): pooling across channels, the third dimension
// from the end of an (..., C, H, W) expression: output channel c reduces the source channels
// [c stride - pad, c stride - pad + nsize) that exist (local response normalisation sums squares so:
// chpool<red::sum>(F<op::square>(x), 5)). Without stride and pad, nsize must be odd and the window is
// centred (stride 1, pad nsize / 2), so C stays. Output channels: (C + 2 pad - nsize) / stride + 1.
// Differs from mshadow where mshadow's window at the first channels started at channel 0 and kept its
// full length (summing channels past the centred window) and where stride > 1 gave (C - nsize + 2 pad + 1)
// / stride channels: see the README's "Porting from mshadow".
#pragma once
#include "base.h"
#include "map.h"
#include "../red.h"
#include "../index_div.h"

namespace tensorexpr {
namespace expr {

template <typename Reducer, typename SrcExp>
struct ChannelPoolingExp : public Exp<ChannelPoolingExp<Reducer, SrcExp>, typename SrcExp::value_type, type::kChainer> {
  using DType = typename SrcExp::value_type;
  static_assert(SrcExp::kDim >= 3, "chpool<Reducer>(src, ...) pools channels of (..., C, H, W): src needs 3 or more dimensions");
  static_assert(check_operand<SrcExp>::value, "");
  static constexpr int kDim = SrcExp::kDim;
  static constexpr bool kFlat = false;
  using device_type = typename SrcExp::device_type;
  SrcExp src_;
  index_t nsize_, stride_, pad_;
  Shape<kDim> shape_;
  ChannelPoolingExp(const SrcExp& src, index_t nsize, index_t stride, index_t pad)
      : src_(src), nsize_(nsize), stride_(stride), pad_(pad), shape_(src.shape()) {
    const index_t c = shape_[kDim - 3];
    TE_CHECK(nsize >= 1 && stride >= 1 && pad >= 0, "chpool: nsize = ", nsize, ", stride = ", stride, ", pad = ", pad,
             " (need nsize >= 1, stride >= 1, pad >= 0)");
    TE_CHECK(nsize <= c + 2 * pad, "chpool: the window of ", nsize, " channels is larger than the ", c,
             " channels plus padding ", pad, " on each side (source shape ", shape_, ")");
    shape_[kDim - 3] = (c + 2 * pad - nsize) / stride + 1;
  }
  Shape<kDim> shape() const { return shape_; }
  struct Plan {
    typename SrcExp::Plan src_;
    IndexDiv height_, channels_;  // output rows are ((n, c), h)
    index_t src_channels_, nsize_, stride_, pad_;
    TE_XINLINE DType Eval(index_t y, index_t x) const {
      using A = accum_t<DType>;
      index_t h, c;
      const index_t nc = height_.DivMod(y, &h);
      const index_t n = channels_.DivMod(nc, &c);
      const index_t start = c * stride_ - pad_;
      const index_t lo = start < 0 ? 0 : start;
      const index_t hi = start + nsize_ < src_channels_ ? start + nsize_ : src_channels_;
      A acc = Reducer::template Init<A, DType>();
      for (index_t cc = lo; cc < hi; ++cc)
        Reducer::Reduce(acc, static_cast<A>(src_.Eval((n * src_channels_ + cc) * height_.divisor_ + h, x)));
      return static_cast<DType>(acc);
    }
  };
  Plan plan() const {
    const Shape<kDim> in = src_.shape();
    return Plan{src_.plan(), IndexDiv::Make(in[kDim - 2]), IndexDiv::Make(shape_[kDim - 3]), in[kDim - 3], nsize_,
                stride_, pad_};
  }
};

// Reducer: one of ours or one written to mshadow's interface (red::reducer_t, red.h).
template <typename Reducer, typename SrcExp, typename DType, int etype>
inline ChannelPoolingExp<red::reducer_t<Reducer>, SrcExp> chpool(const Exp<SrcExp, DType, etype>& src, index_t nsize) {
  TE_CHECK(nsize % 2 == 1, "chpool: without stride and pad the window is centred, so nsize must be odd; got ", nsize);
  return ChannelPoolingExp<red::reducer_t<Reducer>, SrcExp>(src.self(), nsize, 1, nsize / 2);
}
template <typename Reducer, typename SrcExp, typename DType, int etype>
inline ChannelPoolingExp<red::reducer_t<Reducer>, SrcExp> chpool(const Exp<SrcExp, DType, etype>& src, index_t nsize,
                                                                 index_t stride, index_t pad) {
  return ChannelPoolingExp<red::reducer_t<Reducer>, SrcExp>(src.self(), nsize, stride, pad);
}

}  // namespace expr
}  // namespace tensorexpr
