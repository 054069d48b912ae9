// expr/range.h — range<DType>(start, stop, step = 1, repeat = 1): the 1-D sequence start, start + step, ...
// up to stop (excluded), each value repeated `repeat` times, like Python's range on floats:
// range<float>(0, 4, 2, 3) is 0 0 0 2 2 2. It lives on no device (as a scalar does), so it is assigned
// to a tensor on either. Values are computed as mshadow did, in float: start + (i / repeat) * step.
#pragma once
#include <cmath>
#include "base.h"

namespace tensorexpr {
namespace expr {

template <typename DType>
struct RangeExp : public Exp<RangeExp<DType>, DType, type::kChainer> {
  static constexpr int kDim = 1;
  static constexpr bool kFlat = false;
  using device_type = AnyDevice;
  float start_, stop_, step_;
  int repeat_;
  RangeExp(float start, float stop, float step, int repeat) : start_(start), stop_(stop), step_(step), repeat_(repeat) {
    TE_CHECK(step != 0.0f, "range: step must not be 0 (start ", start, ", stop ", stop, ")");
    TE_CHECK(repeat > 0, "range: repeat must be > 0, got ", repeat);
    TE_CHECK(step > 0 ? start < stop : start > stop, "range(", start, ", ", stop, ", ", step,
             "): the range is empty or runs away from stop");
    TE_CHECK(std::isfinite(start) && std::isfinite(stop) && std::isfinite(step), "range(", start, ", ", stop, ", ",
             step, "): the bounds and the step must be finite");
  }
  Shape<1> shape() const {
    const double n = std::ceil((static_cast<double>(stop_) - start_) / step_) * repeat_;
    TE_CHECK(n < 9.0e18, "range(", start_, ", ", stop_, ", ", step_, ", ", repeat_, ") has too many elements");
    return Shape1(static_cast<index_t>(n));
  }
  struct Plan {
    float start_, step_;
    index_t repeat_;
    TE_XINLINE DType Eval(index_t, index_t x) const {
      return static_cast<DType>(start_ + static_cast<float>(x / repeat_) * step_);
    }
  };
  Plan plan() const { return Plan{start_, step_, repeat_}; }
};

template <typename DType>
inline RangeExp<DType> range(float start, float stop, float step = 1, int repeat = 1) {
  return RangeExp<DType>(start, stop, step, repeat);
}

}  // namespace expr
}  // namespace tensorexpr
