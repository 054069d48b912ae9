// expect: operands of an elementwise expression must have the same number of dimensions
// A 2-D and a 3-D tensor in one elementwise expression.
#include <tensorexpr/tensorexpr.h>
using namespace tensorexpr;
using namespace tensorexpr::expr;

void Misuse(Tensor<cpu, 2, float> out, Tensor<cpu, 2, float> a, Tensor<cpu, 3, float> b) { out = a + b; }
