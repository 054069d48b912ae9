// expect: .T() transposes 2-D expressions only
// .T() of a 3-D tensor.
#include <tensorexpr/tensorexpr.h>
using namespace tensorexpr;
using namespace tensorexpr::expr;

void Misuse(Tensor<cpu, 3, float> out, Tensor<cpu, 3, float> a) { out = a.T(); }
