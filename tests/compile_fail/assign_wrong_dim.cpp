// expect: the expression has a different number of dimensions than the tensor it is assigned to
// A 3-D expression assigned to a 2-D tensor.
#include <tensorexpr/tensorexpr.h>
using namespace tensorexpr;
using namespace tensorexpr::expr;

void Misuse(Tensor<cpu, 2, float> out, Tensor<cpu, 3, float> a) { out = a * 2.0f; }
