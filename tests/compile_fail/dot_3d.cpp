// expect: dot(a, b) takes 1-D and 2-D tensors
// dot of 3-D tensors (batch_dot is the batched product).
#include <tensorexpr/tensorexpr.h>
using namespace tensorexpr;
using namespace tensorexpr::expr;

void Misuse(Tensor<cpu, 2, float> out, Tensor<cpu, 3, float> a, Tensor<cpu, 3, float> b) { out = dot(a, b); }
