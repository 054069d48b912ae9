// expect: the expression has a different number of dimensions than the tensor it is assigned to
// The same through a TensorContainer, which resizes to the expression's shape first.
#include <tensorexpr/tensorexpr.h>
using namespace tensorexpr;
using namespace tensorexpr::expr;

void Misuse(Tensor<cpu, 3, float> a) {
  TensorContainer<cpu, 2, float> out;
  out = a + 1.0f;
}
