// Compiled by tests/consumers/check_warnings.sh with -Werror and every strict warning: every public
// header, and calls that instantiate the expression families and the operators' declarations.
#include <tensorexpr/ops/activation.h>
#include <tensorexpr/ops/batch_norm.h>
#include <tensorexpr/ops/convolution.h>
#include <tensorexpr/ops/deconvolution.h>
#include <tensorexpr/ops/dropout.h>
#include <tensorexpr/ops/embedding.h>
#include <tensorexpr/ops/fully_connected.h>
#include <tensorexpr/ops/init.h>
#include <tensorexpr/ops/lrn.h>
#include <tensorexpr/ops/pooling.h>
#include <tensorexpr/ops/sgd.h>
#include <tensorexpr/ops/softmax_output.h>
#include <tensorexpr/tensorexpr.h>

int main() {
  using namespace tensorexpr;
  using namespace tensorexpr::expr;
  TensorContainer<cpu, 3, float> x(Shape3(2, 4, 6), 1.0f), y(Shape3(2, 6, 4));
  TensorContainer<cpu, 1, float> bias(Shape1(4), 0.5f), per_channel(Shape1(4));
  TensorContainer<cpu, 2, float> m(Shape2(4, 6), 2.0f), mt(Shape2(6, 4)), prod(Shape2(4, 4));
  y = swapaxis<2, 1>(x);
  y = transpose(x, Shape3(0, 2, 1));
  x = x + broadcast<1>(bias, x.shape_);
  per_channel = sumall_except_dim<1>(x);
  mt = m.T();
  prod = dot(m, mt);
  TensorContainer<cpu, 2, float> red(Shape2(2, 4));
  red = reduce_with_axis<red::maximum>(x, 2);
  ops::ConvolutionParam p;
  p.kernel = {3, 3};
  p.pad = {1, 1};
  p.num_filter = 2;
  TensorContainer<cpu, 4, float> img(Shape4(1, 3, 5, 5), 1.0f), w(Shape4(2, 3, 3, 3), 0.1f), out(Shape4(1, 2, 5, 5));
  TensorContainer<cpu, 1, float> b(Shape1(2), 0.0f);
  ops::ConvolutionForward(p, img.view(), w.view(), b.view(), kWriteTo, out.view());
  ops::DeconvolutionParam dp;
  dp.kernel = {2, 2};
  dp.stride = {2, 2};
  dp.num_filter = 3;
  TensorContainer<cpu, 4, float> up(Shape4(1, 3, 10, 10)), dw(Shape4(2, 3, 2, 2), 0.5f);
  ops::DeconvolutionForward(dp, out.view(), dw.view(), b.view(), kWriteTo, up.view());
  ops::LRNParam lrn;
  lrn.nsize = 3;
  ops::LRNForward(lrn, out.view(), kWriteInplace, out.view());
  ops::EmbeddingParam emb;
  emb.input_dim = 3;
  emb.output_dim = 2;
  TensorContainer<cpu, 1, int32_t> ids(Shape1(4), 2);
  TensorContainer<cpu, 2, float> table(ops::EmbeddingWeightShape(emb), 0.25f), rows(ops::InferEmbeddingShape(emb, ids.shape_));
  ops::EmbeddingForward(emb, ids.view(), table.view(), kWriteTo, rows.view());
  PhiloxRandom<cpu> philox(7, 1);
  TensorContainer<cpu, 2, half_t> noise(Shape2(3, 5));
  philox.SampleUniform(noise.view(), -1.0f, 1.0f);
  philox.SampleGaussian(&noise, 0.0f, 0.5f);
  TensorContainer<cpu, 2, float> kept(m.shape_);
  ops::DropoutParam drop;
  ops::DropoutForward(drop, true, &philox, m.view(), kWriteTo, m.view(), kept.view());
  return out[0][0][2][2] > 0.0f ? 0 : 1;
}
