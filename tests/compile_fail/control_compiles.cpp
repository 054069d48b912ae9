// expect-compile
// The control: correct uses of everything the snippets above misuse. It must compile with the same
// flags, which shows that the failures above come from the misuse and not from the set-up.
#include <tensorexpr/tensorexpr.h>
using namespace tensorexpr;
using namespace tensorexpr::expr;

void Use(Tensor<cpu, 2, float> out, Tensor<cpu, 2, float> a, Tensor<cpu, 2, float> b, Tensor<cpu, 2, double> d,
         Tensor<cpu, 3, float> a3, Tensor<cpu, 3, float> b3) {
  out = a + b;
  out = a * tcast<float>(d);
  out += tcast<float>(d * 2.0);
  out = a.T();
  out = dot(a, b);
  out += 2.0f * dot(a, b.T());
  TensorContainer<cpu, 2, float> c;
  c = a + 1.0f;
  TensorContainer<cpu, 3, float> c3;
  c3 = batch_dot(a3, b3);
  Tensor<gpu, 2, float> g;
  (void)g;
}
