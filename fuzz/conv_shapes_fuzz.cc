// fuzz/conv_shapes_fuzz.cc — convolution, deconvolution and pooling shape, cost and workspace inference under hostile
// 64-bit parameters and shapes. A tensorexpr::Error is a fine answer; any other answer must hold together
// (positive output extents, shapes that follow from the parameters, costs and workspace that are
// non-negative numbers). Overflow, wrapped extents and float-to-integer casts out of range are left to
// ASan / UBSan, which stop the run.
#include <algorithm>
#include <cstdlib>
#include <limits>
#include <string>
#include <tensorexpr/ops/convolution.h>
#include <tensorexpr/ops/deconv_param.h>
#include <tensorexpr/ops/pooling.h>
#include "fuzz_util.h"

namespace {
using namespace tensorexpr;
using te_fuzz::Hostile;
using te_fuzz::HostileVec;

void FuzzConv(FuzzedDataProvider& f) {
  ops::ConvolutionParam p;
  p.kernel = HostileVec(f, 4);  // 0 and 4 entries are errors
  p.stride = HostileVec(f, 3);
  p.dilate = HostileVec(f, 3);
  p.pad = HostileVec(f, 3);
  p.pad_end = HostileVec(f, 3);
  p.num_filter = Hostile(f);
  p.num_group = Hostile(f, 4);
  p.no_bias = f.ConsumeBool();
  p.workspace = te_fuzz::HostileDouble(f);
  p.padding = static_cast<ops::ConvPadding>(f.ConsumeIntegralInRange<int>(0, 3));
  const std::vector<index_t> data = HostileVec(f, 6);
  const size_t dtype_bytes = size_t(1) << f.ConsumeIntegralInRange<int>(0, 3);
  const bool contiguous = f.ConsumeBool();

  ops::ConvShapes s;
  try {
    s = ops::InferConvShapes(p, data);
  } catch (const Error&) {
    return;  // the same parameters must then fail everywhere
  }
  // It succeeded: the shapes follow from the parameters.
  te_fuzz::Context() = "conv kernel " + te_fuzz::VecStr(p.kernel) + " stride " + te_fuzz::VecStr(p.stride) +
                       " dilate " + te_fuzz::VecStr(p.dilate) + " pad " + te_fuzz::VecStr(p.pad) + " pad_end " +
                       te_fuzz::VecStr(p.pad_end) + " num_filter " + std::to_string(p.num_filter) + " num_group " +
                       std::to_string(p.num_group) + " workspace " + std::to_string(p.workspace) + " padding " +
                       ops::ConvPaddingName(p.padding) + " data " + te_fuzz::VecStr(data) + " dtype_bytes " +
                       std::to_string(dtype_bytes) + (contiguous ? " contiguous" : " strided");
  te_fuzz::Trace();
  const size_t nd = p.kernel.size();
  const bool batched = data.size() == nd + 2;
  TE_FUZZ_CHECK(nd >= 1 && nd <= 3 && (batched || data.size() == nd + 1));
  TE_FUZZ_CHECK(s.out.size() == data.size());
  if (batched) TE_FUZZ_CHECK(s.out[0] == data[0]);
  TE_FUZZ_CHECK(s.out[batched ? 1 : 0] == p.num_filter);
  for (size_t i = 0; i < nd; ++i) TE_FUZZ_CHECK(s.out[data.size() - nd + i] >= 1);
  const index_t C = data[batched ? 1 : 0];
  TE_FUZZ_CHECK(s.weight.size() == nd + 2 && s.weight[0] == p.num_filter && s.weight[1] * p.num_group == C);
  for (size_t i = 0; i < nd; ++i) TE_FUZZ_CHECK(s.weight[2 + i] == p.kernel[i]);
  TE_FUZZ_CHECK(p.no_bias ? s.bias.empty() : (s.bias.size() == 1 && s.bias[0] == p.num_filter));

  const ops::ConvCost c = ops::InferConvCost(p, data, dtype_bytes);
  for (double v : {c.forward_flops, c.backward_data_flops, c.backward_weight_flops, c.backward_bias_flops,
                   c.forward_bytes, c.backward_bytes})
    TE_FUZZ_CHECK(v >= 0);  // NaN fails too

  size_t ws = 0;
  try {
    ws = ops::ConvolutionWorkspaceBytes(p, data, dtype_bytes, contiguous);
  } catch (const Error&) {
    return;  // a workspace that does not fit in 64 bits may be an Error
  }
  TE_FUZZ_CHECK(ws % dtype_bytes == 0);
  // Within the cap, except that one column of the buffer (C * kernel elements) is always granted.
  double kernel_size = 1;
  for (index_t k : p.kernel) kernel_size *= double(k);
  const double column = double(C) * kernel_size * double(dtype_bytes);
  TE_FUZZ_CHECK(double(ws) <= std::max(p.workspace * 1048576.0, column) * (1 + 1e-12));
}

// A deconvolution's output extent along one axis, from its parameters alone (128-bit: no wrap).
__int128 DeconvExtent(const ops::DeconvolutionParam& p, size_t i, index_t in) {
  auto at = [i](const std::vector<index_t>& v, index_t dflt) { return v.empty() ? dflt : v[i]; };
  const __int128 s = at(p.stride, 1), span = __int128(p.kernel[i] - 1) * at(p.dilate, 1) + 1;
  const __int128 full = s * (in - 1) + span + at(p.adj, 0);
  if (!p.target_shape.empty()) return p.target_shape[i];
  if (p.padding == ops::ConvPadding::kSameUpper || p.padding == ops::ConvPadding::kSameLower) return __int128(in) * s;
  if (p.padding == ops::ConvPadding::kValid) return full;
  const index_t pad = at(p.pad, 0);
  return full - pad - (p.pad_end.empty() ? pad : p.pad_end[i]);
}

void FuzzDeconv(FuzzedDataProvider& f) {
  ops::DeconvolutionParam p;
  p.kernel = HostileVec(f, 4);
  p.stride = HostileVec(f, 3);
  p.dilate = HostileVec(f, 3);
  p.pad = HostileVec(f, 3);
  p.pad_end = HostileVec(f, 3);
  p.adj = HostileVec(f, 3);
  if (f.ConsumeBool()) p.target_shape = HostileVec(f, 3, 64);
  p.num_filter = Hostile(f);
  p.num_group = Hostile(f, 4);
  p.no_bias = f.ConsumeBool();
  p.workspace = te_fuzz::HostileDouble(f);
  p.padding = static_cast<ops::ConvPadding>(f.ConsumeIntegralInRange<int>(0, 3));
  p.layout = f.ConsumeBool() ? ops::Layout::kNHWC : ops::Layout::kNCHW;
  const std::vector<index_t> data = HostileVec(f, 6);

  ops::DeconvShapes s;
  try {
    s = ops::InferDeconvShapes(p, data);
  } catch (const Error& e) {
    // Parameters that do not fit are Errors; the library's own consistency checks must never fire.
    if (std::string(e.what()).find("internal") != std::string::npos) te_fuzz::Bug(e.what());
    return;
  }
  te_fuzz::Context() = "deconv kernel " + te_fuzz::VecStr(p.kernel) + " stride " + te_fuzz::VecStr(p.stride) +
                       " dilate " + te_fuzz::VecStr(p.dilate) + " pad " + te_fuzz::VecStr(p.pad) + " pad_end " +
                       te_fuzz::VecStr(p.pad_end) + " adj " + te_fuzz::VecStr(p.adj) + " target_shape " +
                       te_fuzz::VecStr(p.target_shape) + " num_filter " + std::to_string(p.num_filter) +
                       " num_group " + std::to_string(p.num_group) + " padding " + ops::ConvPaddingName(p.padding) +
                       " layout " + ops::LayoutName(p.layout) + " data " + te_fuzz::VecStr(data);
  te_fuzz::Trace();
  // It succeeded: the shapes follow from the parameters.
  const size_t nd = p.kernel.size();
  const bool batched = data.size() == nd + 2, last = p.layout == ops::Layout::kNHWC;
  TE_FUZZ_CHECK(nd >= 1 && nd <= 3 && (batched || data.size() == nd + 1));
  const size_t first = (batched ? 1 : 0) + (last ? 0 : 1);  // the first spatial axis
  const index_t C = last ? data.back() : data[first - 1];
  TE_FUZZ_CHECK(s.out.size() == data.size());
  if (batched) TE_FUZZ_CHECK(s.out[0] == data[0]);
  TE_FUZZ_CHECK((last ? s.out.back() : s.out[first - 1]) == p.num_filter);
  for (size_t i = 0; i < nd; ++i) {
    TE_FUZZ_CHECK(s.out[first + i] >= 1);
    TE_FUZZ_CHECK(s.out[first + i] == DeconvExtent(p, i, data[first + i]));
  }
  const index_t Kg = p.num_filter / p.num_group;
  TE_FUZZ_CHECK(s.weight.size() == nd + 2 && s.weight[0] == C && C % p.num_group == 0);
  TE_FUZZ_CHECK((last ? s.weight.back() : s.weight[1]) == Kg && Kg * p.num_group == p.num_filter);
  for (size_t i = 0; i < nd; ++i) TE_FUZZ_CHECK(s.weight[(last ? 1 : 2) + i] == p.kernel[i]);
  TE_FUZZ_CHECK(p.no_bias ? s.bias.empty() : (s.bias.size() == 1 && s.bias[0] == p.num_filter));
}

template <int dim>
void CheckPoolShape(const ops::PoolingParam& p, const std::vector<index_t>& data, const ops::PoolGeometry& g) {
  Shape<dim> in;
  for (int i = 0; i < dim; ++i) in[i] = data[i];
  const Shape<dim> out = ops::InferPoolingShape(p, in);
  for (int i = 0; i < dim - g.nd; ++i) TE_FUZZ_CHECK(out[i] == in[i]);
  for (int i = 0; i < g.nd; ++i) {
    TE_FUZZ_CHECK(out[dim - g.nd + i] >= 1);
    if (p.global_pool) TE_FUZZ_CHECK(out[dim - g.nd + i] == 1);
  }
}

void FuzzPool(FuzzedDataProvider& f) {
  ops::PoolingParam p;
  p.kernel = HostileVec(f, 4);
  p.stride = HostileVec(f, 3);
  p.pad = HostileVec(f, 3);
  p.pool_type = f.ConsumeBool() ? ops::PoolType::kMax : ops::PoolType::kAvg;
  p.pooling_convention = f.ConsumeBool() ? ops::PoolingConvention::kValid : ops::PoolingConvention::kFull;
  p.global_pool = f.ConsumeBool();
  p.count_include_pad = f.ConsumeBool();
  std::vector<index_t> data = HostileVec(f, 6);
  ops::PoolGeometry g;
  try {
    g = ops::MakePoolGeometry(p, data);
  } catch (const Error&) {
    return;
  }
  te_fuzz::Context() = "pool kernel " + te_fuzz::VecStr(p.kernel) + " stride " + te_fuzz::VecStr(p.stride) +
                       " pad " + te_fuzz::VecStr(p.pad) + (p.global_pool ? " global" : "") +
                       (p.pooling_convention == ops::PoolingConvention::kFull ? " full" : " valid") + " data " +
                       te_fuzz::VecStr(data);
  TE_FUZZ_CHECK(g.nd >= 1 && g.nd <= 3 && data.size() >= size_t(g.nd) + 1);
  TE_FUZZ_CHECK(g.planes >= 0);
  for (int i = 0; i < 3; ++i) TE_FUZZ_CHECK(g.out[i] >= 1 && g.k[i] >= 1 && g.s[i] >= 1 && g.p[i] >= 0);
  switch (data.size()) {
    case 2: return CheckPoolShape<2>(p, data, g);
    case 3: return CheckPoolShape<3>(p, data, g);
    case 4: return CheckPoolShape<4>(p, data, g);
    case 5: return CheckPoolShape<5>(p, data, g);
    case 6: return CheckPoolShape<6>(p, data, g);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* bytes, size_t size) {
  FuzzedDataProvider f(bytes, size);
  if (f.ConsumeBool()) FuzzConv(f);  // kept first: the seeds found for convolution still reach it
  else if (f.ConsumeBool()) FuzzDeconv(f);
  else FuzzPool(f);
  return 0;
}
