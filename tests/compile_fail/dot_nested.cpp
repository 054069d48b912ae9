// expect: cannot be nested inside another expression
// A matrix product used as an operand of an elementwise expression.
#include <tensorexpr/tensorexpr.h>
using namespace tensorexpr;
using namespace tensorexpr::expr;

void Misuse(Tensor<cpu, 2, float> out, Tensor<cpu, 2, float> a, Tensor<cpu, 2, float> b) { out = dot(a, b) + a; }
