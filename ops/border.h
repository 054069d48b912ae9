// ops/border.h — a windowed operator (convolution, pooling) whose padding reads a border that is data
// (auto_pad.h's CheckBorder): the input's spatial dimensions padded into a temporary by expr::pad, so the
// operator runs on it without padding, and the temporary's gradient summed back onto the input by
// expr::unpad.
#pragma once
#include <cmath>
#include <limits>
#include <type_traits>
#include <tensorexpr/tensorexpr.h>
#include <tensorexpr/ops/auto_pad.h>

namespace tensorexpr {
namespace ops {
namespace detail {

// The padding of rank-dim data along its spatial dimensions [first, first + nd); before / after hold the
// resolved padding in three slots, the nd spatial dimensions last (ConvGeometry's and PoolWindows' form).
template <int dim>
struct BorderPads {
  Shape<dim> begin, end;
  bool any = false;  // whether any side is padded at all
};

template <int dim>
BorderPads<dim> MakeBorderPads(int first, int nd, const index_t* before, const index_t* after) {
  BorderPads<dim> b;
  for (int d = 0; d < dim; ++d) b.begin[d] = b.end[d] = 0;
  for (int i = 0; i < nd; ++i) {
    b.begin[first + i] = before[3 - nd + i];
    b.end[first + i] = after[3 - nd + i];
    b.any = b.any || b.begin[first + i] > 0 || b.end[first + i] > 0;
  }
  return b;
}

// pad_value in the data's type; an integer type takes only the integers it holds.
template <typename DType>
DType BorderValue(const char* op, double value) {
  if constexpr (std::is_integral<DType>::value) {
    // The upper bound 2^digits is exact in double (INT64_MAX is not: it rounds up to 2^63).
    TE_CHECK(std::floor(value) == value && value >= double(std::numeric_limits<DType>::lowest()) &&
                 value < std::ldexp(1.0, std::numeric_limits<DType>::digits),
             op, ": pad_value ", value, " is not a value of the data's type ", DataType<DType>::name());
    return static_cast<DType>(value);
  } else if constexpr (std::is_same<DType, double>::value) {
    return value;
  } else {
    return DType(static_cast<float>(value));
  }
}

// The parameters (ConvolutionParam or PoolingParam) that run the operator on the padded copy: explicit
// padding of zero, and no border.
template <typename Param>
Param WithoutPadding(const Param& p) {
  Param q = p;
  q.padding = ConvPadding::kExplicit;
  q.pad.assign(p.kernel.size(), 0);
  q.pad_end.clear();
  q.pad_mode = PadMode::kConstant;
  q.pad_value.reset();
  return q;
}

// The data with its border, in a temporary written and freed on the operator's stream s.
template <typename Device, int dim, typename DType>
TensorContainer<Device, dim, DType> PadBorder(const char* op, const Tensor<Device, dim, DType>& data,
                                              const BorderPads<dim>& pads, PadMode mode, double value,
                                              Stream<Device>* s) {
  TensorContainer<Device, dim, DType> padded;
  padded.set_stream(s);
  padded = expr::pad(data, pads.begin, pads.end, mode, BorderValue<DType>(op, value));
  return padded;
}

// The gradient of the padded copy summed back onto the data (unpad), stored as req says, on stream s.
template <typename Device, int dim, typename DType>
void UnpadInto(Tensor<Device, dim, DType> data_grad, OpReqType req, const Tensor<Device, dim, DType>& padded_grad,
               const BorderPads<dim>& pads, PadMode mode, Stream<Device>* s) {
  data_grad.stream_ = s;
  Assign(data_grad, req, expr::unpad(padded_grad, pads.begin, pads.end, mode));
}

}  // namespace detail
}  // namespace ops
}  // namespace tensorexpr
