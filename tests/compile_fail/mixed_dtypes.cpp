// expect: operands of one expression must share a dtype
// float and double tensors in one expression (no implicit conversion: use tcast<T>).
#include <tensorexpr/tensorexpr.h>
using namespace tensorexpr;
using namespace tensorexpr::expr;

void Misuse(Tensor<cpu, 2, float> out, Tensor<cpu, 2, float> a, Tensor<cpu, 2, double> b) { out = a * b; }
