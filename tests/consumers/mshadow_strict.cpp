// Compiled by tests/consumers/check_warnings.sh with -Werror and every strict warning: <tensorexpr/mshadow.h>
// and the names it adds to tensorexpr's (its macros, logging, utils, mshadow's reduce_with_axis, TBlob, the
// random API of mshadow's last random.h).
#include <tensorexpr/mshadow.h>

namespace {
struct add_one {
  template <typename DType>
  MSHADOW_XINLINE static DType Map(DType a) {
    return a + DType(1);
  }
};
}  // namespace

int main() {
  using namespace mshadow;
  using namespace mshadow::expr;
  float data[6] = {0.5f, 2.0f, 1.0f, 3.0f, -1.0f, 0.0f};
  Tensor<cpu, 2> x(data, Shape2(2, 3));
  TensorContainer<cpu, 1> best(Shape1(2));
  best = reduce_with_axis<red::maximum, true>(F<add_one>(x), 1);
  CHECK_EQ(best[0], 1.0f) << "argmax of the first row";
  TBlob blob = x;
  utils::Check(blob.ndim() == 2, "a blob of %d dimensions", blob.ndim());
  Tensor<cpu, 3> three = blob.FlatTo3D<cpu, float>(1);
  TensorContainer<cpu, 2> y(x.shape_);
  y = F<add_one>(x) * 2.0f;
  int bytes = 0;
  MSHADOW_REAL_TYPE_SWITCH(default_type_flag, DType, { bytes = static_cast<int>(sizeof(DType)); });
  // mshadow's last random.h: integer generators, sequence ids, GetRandInt, the PCG distributions.
  Random<cpu, int16_t> dice(1, 2);
  TensorContainer<cpu, 2, int16_t> rolls(Shape2(2, 3));
  dice.SampleUniform(&rolls, int16_t(1), int16_t(6));
  TensorContainer<cpu, 1, uint64_t> words(Shape1(4));
  TensorContainer<cpu, 1, int8_t> bytes8(Shape1(4));
  dice.GetRandInt(words);
  dice.GetRandInt(bytes8);
  Random<cpu, uint64_t> wide(3);
  wide.Seed(4, 5);
  TensorContainer<cpu, 1, uint64_t> any(Shape1(4));
  wide.SampleUniform(&any, uint64_t(0), ~uint64_t(0));
  Random<cpu, int8_t> tiny(6);
  tiny.SampleUniform(&bytes8, int8_t(-100), int8_t(100));
  Random<cpu, uint32_t> u32(7, 8);
  TensorContainer<cpu, 1, uint32_t> w32(Shape1(4));
  u32.SampleUniform(w32.view(), 5u, 9u);
  Random<cpu, half::half_t> hr(9);
  TensorContainer<cpu, 1, half::half_t> h(Shape1(5));
  hr.SampleUniform(&h, 0.0f, 1.0f);
  hr.SampleGaussian(&h, 0.0f, 1.0f);
  PCGRandom32 r32;
  PCGRandom64 r64(7, 8);
  UniformRealDistribution<cpu, PCGRandom32, float> uniform;
  UniformRealDistribution<cpu, PCGRandom64, half::half_t> uniform_half;
  GaussianDistribution<cpu, PCGRandom64, double> normal(0.0, 2.0);
  GaussianDistribution<cpu, PCGRandom32, bfloat::bf16_t> normal_bf16;
  const double drawn = double(uniform(r32)) + normal(r64) + double(float(uniform_half(r64))) +
                       double(float(normal_bf16(r32))) + double(rolls[0][0]) + double(any[0] % 2u) +
                       double(w32[0]) + double(dice.GetSeed());
  return static_cast<int>(three[0][0][0] + y[1][2]) + bytes + (drawn > 0 ? 0 : 1);
}
