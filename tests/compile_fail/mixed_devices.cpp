// expect: operands of one expression must live on the same device
// A CPU tensor and a GPU tensor view in one expression; the view needs no CUDA to be declared.
#include <tensorexpr/tensorexpr.h>
using namespace tensorexpr;
using namespace tensorexpr::expr;

void Misuse(Tensor<cpu, 2, float> c) {
  Tensor<gpu, 2, float> g;
  c = c + g;
}
