// expect: the right-hand side has a different dtype than the tensor it is assigned to
// A double expression assigned to a float tensor.
#include <tensorexpr/tensorexpr.h>
using namespace tensorexpr;
using namespace tensorexpr::expr;

void Misuse(Tensor<cpu, 2, float> out, Tensor<cpu, 2, double> a) { out += a * 2.0; }
