// fuzz/conv_run_fuzz.cc — small CPU convolution and pooling runs (forward and backward, float and double,
// every req, NCHW and NHWC convolutions, padded-row views, forced algorithms, workspace caps that force
// chunking) with fuzzed parameters, against a naive float64 reference written here from the definitions. Each run is tiny
// (data up to 2x4x9x9, or 2x4x5x5x5 in 3-D). A case the reference says is invalid must be an Error; a valid
// one must not be (except a forced algorithm that cannot implement it) and must match the reference.
#include <algorithm>
#include <cmath>
#include <random>
#include <string>
// The implementations, instantiated here under the harness's sanitizers (tools/fuzz.sh links the
// selection state and workspace estimate, ops/conv_select.cc and ops/conv_workspace.cc).
#include "../ops/convolution.h"
#include "../ops/pooling.h"
#include "fuzz_util.h"

namespace {
using namespace tensorexpr;
using Vec = std::vector<index_t>;

const OpReqType kReqs[] = {kNullOp, kWriteTo, kWriteInplace, kAddTo};
OpReqType PickReq(FuzzedDataProvider& f) { return kReqs[f.ConsumeIntegralInRange<int>(0, 3)]; }

// A host buffer viewed as a tensor, rows padded by `pad` elements. Values are drawn from the fuzz seed;
// `quantized` draws from a few values so that max pooling sees ties.
template <int dim, typename DType>
struct Buf {
  std::vector<DType> mem;
  Tensor<cpu, dim, DType> t;
  Buf(const Vec& shape, index_t pad, std::mt19937_64& rng, bool quantized = false) {
    Shape<dim> s;
    for (int i = 0; i < dim; ++i) s[i] = shape[i];
    const index_t rows = s.ProdShape(0, dim - 1), stride = s[dim - 1] + pad;
    mem.resize(static_cast<size_t>(std::max<index_t>(rows * stride, 1)));
    std::uniform_real_distribution<double> u(-1, 1);
    for (DType& v : mem) v = DType(quantized ? std::round(u(rng) * 2) / 2 : u(rng));
    t = Tensor<cpu, dim, DType>(mem.data(), s, stride, nullptr);
  }
  // Element i of the logical (unpadded) row-major order.
  DType& at(index_t i) const {
    const index_t w = t.shape_[dim - 1];
    return t.dptr_[(i / w) * t.stride_ + i % w];
  }
  index_t size() const { return t.shape_.Size(); }
  std::vector<double> values() const {
    std::vector<double> v(static_cast<size_t>(size()));
    for (index_t i = 0; i < size(); ++i) v[i] = double(at(i));
    return v;
  }
};

// What `out` must hold after storing `ref` (with |terms| summing to `mag`) as req says over `before`.
template <int dim, typename DType>
void Expect(const Buf<dim, DType>& out, const std::vector<double>& before, const std::vector<double>& ref,
            const std::vector<double>& mag, OpReqType req, const char* what) {
  const double tol = sizeof(DType) == 4 ? 2e-5 : 1e-12;
  for (index_t i = 0; i < out.size(); ++i) {
    const double got = double(out.at(i));
    double want = ref[i], m = mag[i];
    if (req == kNullOp) want = before[i], m = 0;
    if (req == kAddTo) want += before[i], m += std::fabs(before[i]);
    const bool same = std::isnan(want) ? std::isnan(got) : got == want || std::fabs(got - want) <= tol * m;
    if (!same) {
      te_fuzz::Context() += std::string(" | ") + what + " element " + std::to_string(i) + ": got " +
                            std::to_string(got) + ", want " + std::to_string(want);
      te_fuzz::Bug("result differs from the float64 reference");
    }
  }
}

// ---- convolution -----------------------------------------------------------------------------------------
struct ConvCase {
  ops::ConvolutionParam p;
  int nd = 2;
  bool batched = true;
  index_t N = 1, C = 1, in[3] = {1, 1, 1};
  index_t pad_rows = 0, pad_grad_rows = 0;
  OpReqType req_out = kWriteTo, req_dx = kWriteTo, req_dw = kWriteTo, req_db = kWriteTo;
  uint64_t seed = 0;
};

// The reference geometry (3-D, leading extents 1); false when the parameters do not fit the data.
struct RefGeom {
  index_t k[3] = {1, 1, 1}, s[3] = {1, 1, 1}, d[3] = {1, 1, 1}, pb[3] = {0, 0, 0}, in[3] = {1, 1, 1}, out[3] = {1, 1, 1};
};
bool MakeRefGeom(const ConvCase& c, RefGeom* r) {
  const auto& p = c.p;
  const int off = 3 - c.nd;
  for (int i = 0; i < c.nd; ++i) {
    const index_t k = p.kernel[i], s = p.stride.empty() ? 1 : p.stride[i], d = p.dilate.empty() ? 1 : p.dilate[i];
    const index_t in = c.in[off + i], span = (k - 1) * d + 1;
    index_t pb = 0, pe = 0;
    if (p.padding == ops::ConvPadding::kExplicit) {
      pb = p.pad.empty() ? 0 : p.pad[i];
      pe = !p.pad_end.empty() ? p.pad_end[i] : pb;
    } else if (p.padding == ops::ConvPadding::kSame || p.padding == ops::ConvPadding::kSameLower) {
      // SAME: output ceil(in / s), the odd pixel of padding at the end (SAME_UPPER) or the beginning.
      const index_t out = (in + s - 1) / s, total = std::max<index_t>(0, (out - 1) * s + span - in);
      pe = p.padding == ops::ConvPadding::kSame ? total - total / 2 : total / 2;
      pb = total - pe;
    }
    if (span > in + pb + pe) return false;
    r->k[off + i] = k, r->s[off + i] = s, r->d[off + i] = d, r->pb[off + i] = pb, r->in[off + i] = in;
    r->out[off + i] = (in + pb + pe - span) / s + 1;
  }
  return true;
}

// Where the reference (which works channels first) and a buffer that may hold channels last meet: a
// (lead, ch, inner) tensor held as (lead, inner, ch) when `last`. Weights are (K, Cg, kk) first and
// (K, kk, Cg) last.
struct ChannelOrder {
  bool last;
  index_t ch, inner;
  // Channels-first index i -> its index in the buffer.
  index_t ToBuffer(index_t i) const {
    if (!last) return i;
    const index_t l = i / (ch * inner), c = i / inner % ch, q = i % inner;
    return (l * inner + q) * ch + c;
  }
  std::vector<double> FirstOf(const std::vector<double>& buffer) const {
    std::vector<double> v(buffer.size());
    for (size_t i = 0; i < v.size(); ++i) v[i] = buffer[ToBuffer(index_t(i))];
    return v;
  }
  std::vector<double> BufferOf(const std::vector<double>& first) const {
    std::vector<double> v(first.size());
    for (size_t i = 0; i < v.size(); ++i) v[ToBuffer(index_t(i))] = first[i];
    return v;
  }
};

template <typename DType, int nd, bool batched>
void RunConvNd(const ConvCase& c) {
  constexpr int ddim = batched ? nd + 2 : nd + 1, wdim = nd + 2;
  const auto& p = c.p;
  RefGeom r;
  const bool valid = MakeRefGeom(c, &r);
  // Channels last (NWC, NHWC, NDHWC): the buffers hold that layout; the reference below works channels
  // first, and ToBuffer maps its indices into the buffers.
  const bool last = p.layout == ops::Layout::kNHWC;
  ops::ConvShapes shapes;
  Vec dshape;
  if (batched) dshape.push_back(c.N);
  if (!last) dshape.push_back(c.C);
  for (int i = 0; i < nd; ++i) dshape.push_back(c.in[3 - nd + i]);
  if (last) dshape.push_back(c.C);
  try {
    shapes = ops::InferConvShapes(p, dshape);
  } catch (const Error& e) {
    if (valid) te_fuzz::Bug("a valid convolution was rejected");
    return;
  }
  TE_FUZZ_CHECK(valid);
  const index_t N = c.N, C = c.C, K = p.num_filter, G = p.num_group, Cg = C / G, Kg = K / G;
  const index_t P = r.out[0] * r.out[1] * r.out[2], S = r.in[0] * r.in[1] * r.in[2];
  const index_t kk = r.k[0] * r.k[1] * r.k[2];
  Vec oshape;
  if (batched) oshape.push_back(N);
  if (!last) oshape.push_back(K);
  for (int i = 0; i < nd; ++i) oshape.push_back(r.out[3 - nd + i]);
  if (last) oshape.push_back(K);
  TE_FUZZ_CHECK(shapes.out == oshape);

  std::mt19937_64 rng(c.seed);
  Buf<ddim, DType> x(dshape, c.pad_rows, rng), dx(dshape, c.pad_grad_rows, rng);
  Buf<ddim, DType> y(oshape, 0, rng), dy(oshape, 0, rng);
  Buf<wdim, DType> w(shapes.weight, 0, rng), dw(shapes.weight, 0, rng);
  Buf<1, DType> b(Vec{K}, 0, rng), db(Vec{K}, 0, rng);
  auto first_order = [last](const std::vector<double>& v, index_t ch, index_t inner) {
    return ChannelOrder{last, ch, inner}.FirstOf(v);
  };
  auto buffer_order = [last](const std::vector<double>& v, index_t ch, index_t inner) {
    return ChannelOrder{last, ch, inner}.BufferOf(v);
  };
  const std::vector<double> xv = first_order(x.values(), C, S), wv = first_order(w.values(), Cg, kk);
  const std::vector<double> bv = b.values(), dyv = first_order(dy.values(), K, P);
  const std::vector<double> y0 = y.values(), dx0 = dx.values(), dw0 = dw.values(), db0 = db.values();

  // The reference: every (output, input, weight) triple that meets.
  std::vector<double> yr(y0.size(), 0), ym(y0.size(), 0), dxr(dx0.size(), 0), dxm(dx0.size(), 0);
  std::vector<double> dwr(dw0.size(), 0), dwm(dw0.size(), 0), dbr(K, 0), dbm(K, 0);
  for (index_t n = 0; n < N; ++n)
    for (index_t o = 0; o < K; ++o)
      for (index_t q = 0; q < P; ++q) {
        const index_t oz = q / (r.out[1] * r.out[2]), oy = q / r.out[2] % r.out[1], ox = q % r.out[2];
        const index_t yi = (n * K + o) * P + q;
        for (index_t cg = 0; cg < Cg; ++cg)
          for (index_t t = 0; t < kk; ++t) {
            const index_t kz = t / (r.k[1] * r.k[2]), ky = t / r.k[2] % r.k[1], kx = t % r.k[2];
            const index_t z = oz * r.s[0] - r.pb[0] + kz * r.d[0], yy = oy * r.s[1] - r.pb[1] + ky * r.d[1],
                          xx = ox * r.s[2] - r.pb[2] + kx * r.d[2];
            if (z < 0 || z >= r.in[0] || yy < 0 || yy >= r.in[1] || xx < 0 || xx >= r.in[2]) continue;
            const index_t xi = (n * C + (o / Kg) * Cg + cg) * S + (z * r.in[1] + yy) * r.in[2] + xx;
            const index_t wi = (o * Cg + cg) * kk + t;
            yr[yi] += xv[xi] * wv[wi], ym[yi] += std::fabs(xv[xi] * wv[wi]);
            dxr[xi] += wv[wi] * dyv[yi], dxm[xi] += std::fabs(wv[wi] * dyv[yi]);
            dwr[wi] += xv[xi] * dyv[yi], dwm[wi] += std::fabs(xv[xi] * dyv[yi]);
          }
        if (!p.no_bias) yr[yi] += bv[o], ym[yi] += std::fabs(bv[o]);
        dbr[o] += dyv[yi], dbm[o] += std::fabs(dyv[yi]);
      }

  // Winograd's transforms mix each output tile's pixels, so an output's rounding scales with its tile's
  // terms, not its own: an output whose window lies in padding came out 1e-17 beside data of order 1.
  // Where Winograd may run (forced, or left to the heuristic on a 3 x 3 stride-1 2-D problem), each plane's
  // outputs are held to the plane's largest sum of |terms|.
  const bool forced = !p.algorithm.empty();
  const bool winograd_shape = nd == 2 && r.k[1] == 3 && r.k[2] == 3 && r.s[1] == 1 && r.s[2] == 1 &&
                              r.d[1] == 1 && r.d[2] == 1;
  if (forced ? p.algorithm.rfind("winograd", 0) == 0 : winograd_shape) {
    auto widen_to_planes = [](std::vector<double>& mag, index_t plane) {
      if (plane <= 0) return;
      for (size_t start = 0; start < mag.size(); start += size_t(plane)) {
        const auto first = mag.begin() + std::ptrdiff_t(start), end = first + std::ptrdiff_t(plane);
        std::fill(first, end, *std::max_element(first, end));
      }
    };
    widen_to_planes(ym, P);
    widen_to_planes(dxm, S);
  }
  try {
    ops::ConvolutionForward(p, x.t, w.t, b.t, c.req_out, y.t);
  } catch (const Error& e) {
    if (!forced) te_fuzz::Bug(e.what());
    return;  // a forced algorithm that cannot implement the problem
  }
  Expect(y, y0, buffer_order(yr, K, P), buffer_order(ym, K, P), c.req_out, "forward output");
  try {
    ops::ConvolutionBackward(p, dy.t, x.t, w.t, c.req_dx, dx.t, c.req_dw, dw.t, c.req_db, db.t);
  } catch (const Error& e) {
    if (!forced) te_fuzz::Bug(e.what());
    return;
  }
  Expect(dx, dx0, buffer_order(dxr, C, S), buffer_order(dxm, C, S), c.req_dx, "data gradient");
  Expect(dw, dw0, buffer_order(dwr, Cg, kk), buffer_order(dwm, Cg, kk), c.req_dw, "weight gradient");
  if (!p.no_bias) Expect(db, db0, dbr, dbm, c.req_db, "bias gradient");
}

template <typename DType>
void RunConvTyped(const ConvCase& c) {
  switch (c.nd * 2 + c.batched) {
    case 2: return RunConvNd<DType, 1, false>(c);
    case 3: return RunConvNd<DType, 1, true>(c);
    case 4: return RunConvNd<DType, 2, false>(c);
    case 5: return RunConvNd<DType, 2, true>(c);
    case 6: return RunConvNd<DType, 3, false>(c);
    default: return RunConvNd<DType, 3, true>(c);
  }
}

void FuzzConv(FuzzedDataProvider& f) {
  ConvCase c;
  auto& p = c.p;
  c.nd = f.ConsumeIntegralInRange<int>(1, 3);
  const index_t max_in = c.nd == 3 ? 5 : 9, max_k = c.nd == 3 ? 3 : 4;
  c.batched = f.ConsumeBool();
  c.N = c.batched ? f.ConsumeIntegralInRange<index_t>(0, 2) : 1;
  p.num_group = index_t(1) << f.ConsumeIntegralInRange<int>(0, 2);
  c.C = p.num_group * f.ConsumeIntegralInRange<index_t>(1, 4 / p.num_group);
  p.num_filter = p.num_group * f.ConsumeIntegralInRange<index_t>(1, 4 / p.num_group);
  for (int i = 0; i < c.nd; ++i) {
    c.in[3 - c.nd + i] = f.ConsumeIntegralInRange<index_t>(0, max_in);
    p.kernel.push_back(f.ConsumeIntegralInRange<index_t>(1, max_k));
  }
  auto per_dim = [&](index_t lo, index_t hi) {
    Vec v;
    if (f.ConsumeBool())
      for (int i = 0; i < c.nd; ++i) v.push_back(f.ConsumeIntegralInRange<index_t>(lo, hi));
    return v;
  };
  p.stride = per_dim(1, 3);
  p.dilate = per_dim(1, 3);
  p.padding = static_cast<ops::ConvPadding>(f.ConsumeIntegralInRange<int>(0, 3));
  if (p.padding == ops::ConvPadding::kExplicit) {
    p.pad = per_dim(0, 3);
    p.pad_end = p.pad.empty() ? Vec() : per_dim(0, 3);
  }
  p.no_bias = f.ConsumeBool();
  static const double kWorkspaceMB[] = {1024.0, 0.0, 1e-6, 2e-5, 1e-4};  // small caps chunk the batch
  p.workspace = kWorkspaceMB[f.ConsumeIntegralInRange<int>(0, 4)];
  static const std::vector<std::string> algorithms = ops::ListConvAlgorithms<cpu, float>();
  const size_t a = f.ConsumeIntegralInRange<size_t>(0, algorithms.size());
  p.algorithm = a == algorithms.size() ? "" : algorithms[a];
  c.pad_rows = f.ConsumeIntegralInRange<index_t>(0, 2);
  c.pad_grad_rows = f.ConsumeIntegralInRange<index_t>(0, 2);
  c.req_out = PickReq(f), c.req_dx = PickReq(f), c.req_dw = PickReq(f), c.req_db = PickReq(f);
  const bool dbl = f.ConsumeBool();
  c.seed = f.ConsumeIntegral<uint64_t>();
  p.layout = f.ConsumeBool() ? ops::Layout::kNHWC : ops::Layout::kNCHW;  // last: older seeds stay NCHW
  te_fuzz::Context() = "conv " + std::string(dbl ? "double" : "float") + " N " + std::to_string(c.N) +
                       (c.batched ? "" : " (unbatched)") + " C " + std::to_string(c.C) + " in " +
                       te_fuzz::VecStr(Vec(c.in + 3 - c.nd, c.in + 3)) + " kernel " + te_fuzz::VecStr(p.kernel) +
                       " stride " + te_fuzz::VecStr(p.stride) + " dilate " + te_fuzz::VecStr(p.dilate) + " pad " +
                       te_fuzz::VecStr(p.pad) + " pad_end " + te_fuzz::VecStr(p.pad_end) + " padding " +
                       ops::ConvPaddingName(p.padding) + " K " + std::to_string(p.num_filter) + " G " +
                       std::to_string(p.num_group) + (p.no_bias ? " no_bias" : "") + " workspace " +
                       std::to_string(p.workspace) + " algorithm '" + p.algorithm + "' row pads " +
                       std::to_string(c.pad_rows) + "," + std::to_string(c.pad_grad_rows) + " reqs " +
                       OpReqName(c.req_out) + "," + OpReqName(c.req_dx) + "," + OpReqName(c.req_dw) + "," +
                       OpReqName(c.req_db) + " layout " + ops::LayoutName(p.layout);
  te_fuzz::Trace();
  if (dbl) RunConvTyped<double>(c);
  else RunConvTyped<float>(c);
}

// ---- pooling ---------------------------------------------------------------------------------------------
struct PoolCase {
  ops::PoolingParam p;
  int nd = 2;
  index_t N = 1, C = 1, in[3] = {1, 1, 1};
  index_t pad_rows = 0;
  OpReqType req = kWriteTo, req_grad = kWriteTo;
  bool quantized = false, with_nan = false;
  uint64_t seed = 0;
};

template <typename DType, int nd>
void RunPoolNd(const PoolCase& c) {
  constexpr int dim = nd + 2;
  const auto& p = c.p;
  // The reference geometry; invalid parameters must be an Error.
  index_t k[3] = {1, 1, 1}, s[3] = {1, 1, 1}, pd[3] = {0, 0, 0}, out[3] = {1, 1, 1};
  const index_t* in = c.in;
  bool valid = true;
  for (int i = 3 - nd; i < 3; ++i) {
    const int j = i - (3 - nd);
    k[i] = p.global_pool ? in[i] : p.kernel[j];
    s[i] = p.global_pool || p.stride.empty() ? 1 : p.stride[j];
    pd[i] = p.global_pool || p.pad.empty() ? 0 : p.pad[j];
    if (p.global_pool ? in[i] < 1 : (pd[i] >= k[i] || k[i] > in[i] + 2 * pd[i])) {
      valid = false;
      continue;
    }
    const index_t span = in[i] + 2 * pd[i] - k[i];
    if (p.pooling_convention == ops::PoolingConvention::kValid) {
      out[i] = span / s[i] + 1;
    } else {
      out[i] = (span + s[i] - 1) / s[i] + 1;
      if ((out[i] - 1) * s[i] >= in[i] + pd[i]) --out[i];  // a window starts inside the image or its left padding
    }
  }
  // Channels last (NWC, NHWC, NDHWC): the buffers hold that layout; the reference works channels first.
  const bool last = p.layout == ops::Layout::kNHWC;
  Vec dshape = {c.N}, oshape = {c.N};
  if (!last) dshape.push_back(c.C), oshape.push_back(c.C);
  for (int i = 3 - nd; i < 3; ++i) dshape.push_back(in[i]), oshape.push_back(out[i]);
  if (last) dshape.push_back(c.C), oshape.push_back(c.C);
  Shape<dim> ds;
  for (int i = 0; i < dim; ++i) ds[i] = dshape[i];
  Shape<dim> os;
  try {
    os = ops::InferPoolingShape(p, ds);
  } catch (const Error&) {
    if (valid) te_fuzz::Bug("a valid pooling was rejected");
    return;
  }
  TE_FUZZ_CHECK(valid);
  for (int i = 0; i < dim; ++i) TE_FUZZ_CHECK(os[i] == oshape[i]);

  std::mt19937_64 rng(c.seed);
  Buf<dim, DType> x(dshape, c.pad_rows, rng, c.quantized), dx(dshape, c.pad_rows, rng);
  Buf<dim, DType> y(oshape, 0, rng), dy(oshape, 0, rng);
  if (c.with_nan && x.size() > 0) x.at(static_cast<index_t>(rng() % uint64_t(x.size()))) = DType(NAN);
  const index_t planes = c.N * c.C, O = out[0] * out[1] * out[2], I = in[0] * in[1] * in[2];
  const ChannelOrder in_order{last, c.C, I}, out_order{last, c.C, O};
  const std::vector<double> xv = in_order.FirstOf(x.values()), dyv = out_order.FirstOf(dy.values());
  const std::vector<double> y0 = y.values(), dx0 = dx.values();
  const bool is_max = p.pool_type == ops::PoolType::kMax;
  // Every tap of every window inside the padded image: f(output index, input index or -1 for padding).
  auto for_each_tap = [&](auto f) {
    for (index_t n = 0; n < planes; ++n)
      for (index_t q = 0; q < O; ++q) {
        const index_t oz = q / (out[1] * out[2]), oy = q / out[2] % out[1], ox = q % out[2];
        for (index_t a = 0; a < k[0]; ++a)
          for (index_t b = 0; b < k[1]; ++b)
            for (index_t e = 0; e < k[2]; ++e) {
              const index_t z = oz * s[0] - pd[0] + a, yy = oy * s[1] - pd[1] + b, xx = ox * s[2] - pd[2] + e;
              if (z >= in[0] + pd[0] || yy >= in[1] + pd[1] || xx >= in[2] + pd[2]) continue;
              const bool real = z >= 0 && yy >= 0 && xx >= 0 && z < in[0] && yy < in[1] && xx < in[2];
              f(n * O + q, real ? n * I + (z * in[1] + yy) * in[2] + xx : index_t(-1));
            }
      }
  };
  std::vector<double> yr(y0.size(), is_max ? -INFINITY : 0.0), count(y0.size(), 0), ym(y0.size(), 0);
  for_each_tap([&](index_t o, index_t i) {
    if (i < 0 && !p.count_include_pad && !p.global_pool) return;
    count[o] += 1;
    if (i < 0) return;
    if (is_max) yr[o] = std::isnan(yr[o]) || std::isnan(xv[i]) ? NAN : std::max(yr[o], xv[i]);
    else yr[o] += xv[i], ym[o] += std::fabs(xv[i]);
  });
  for (size_t o = 0; o < yr.size(); ++o) {
    if (is_max) ym[o] = std::fabs(yr[o]);
    else yr[o] /= count[o], ym[o] /= count[o];
  }
  std::vector<double> dxr(dx0.size(), 0), dxm(dx0.size(), 0);
  for_each_tap([&](index_t o, index_t i) {
    if (i < 0) return;
    if (is_max) {
      // Every input equal to its window's maximum receives the gradient; a NaN window, its NaN pixels.
      if (xv[i] == yr[o] || (std::isnan(xv[i]) && std::isnan(yr[o]))) dxr[i] += dyv[o], dxm[i] += std::fabs(dyv[o]);
    } else {
      dxr[i] += dyv[o] / count[o], dxm[i] += std::fabs(dyv[o] / count[o]);
    }
  });

  ops::PoolingForward(p, x.t, c.req, y.t);
  const std::vector<double> yr_buffer = out_order.BufferOf(yr);
  Expect(y, y0, yr_buffer, out_order.BufferOf(ym), c.req, "pooling output");
  // The backward reads the forward output: give it the reference's (a kNullOp forward left y as it was).
  Buf<dim, DType> yfwd(oshape, 0, rng);
  for (index_t i = 0; i < yfwd.size(); ++i) yfwd.at(i) = DType(yr_buffer[i]);
  ops::PoolingBackward(p, dy.t, x.t, yfwd.t, c.req_grad, dx.t);
  Expect(dx, dx0, in_order.BufferOf(dxr), in_order.BufferOf(dxm), c.req_grad, "pooling input gradient");
}

void FuzzPool(FuzzedDataProvider& f) {
  PoolCase c;
  auto& p = c.p;
  c.nd = f.ConsumeIntegralInRange<int>(1, 3);
  const index_t max_in = c.nd == 3 ? 5 : 9;
  c.N = f.ConsumeIntegralInRange<index_t>(0, 2);
  c.C = f.ConsumeIntegralInRange<index_t>(0, 4);
  for (int i = 0; i < c.nd; ++i) {
    c.in[3 - c.nd + i] = f.ConsumeIntegralInRange<index_t>(0, max_in);
    p.kernel.push_back(f.ConsumeIntegralInRange<index_t>(1, 4));
  }
  if (f.ConsumeBool())
    for (int i = 0; i < c.nd; ++i) p.stride.push_back(f.ConsumeIntegralInRange<index_t>(1, 3));
  if (f.ConsumeBool())
    for (int i = 0; i < c.nd; ++i) p.pad.push_back(f.ConsumeIntegralInRange<index_t>(0, 3));  // >= kernel: Error
  p.pool_type = f.ConsumeBool() ? ops::PoolType::kMax : ops::PoolType::kAvg;
  p.pooling_convention = f.ConsumeBool() ? ops::PoolingConvention::kValid : ops::PoolingConvention::kFull;
  p.global_pool = f.ConsumeIntegralInRange<int>(0, 4) == 0;
  p.count_include_pad = f.ConsumeBool();
  c.pad_rows = f.ConsumeIntegralInRange<index_t>(0, 2);
  c.req = PickReq(f), c.req_grad = PickReq(f);
  c.quantized = f.ConsumeBool();
  c.with_nan = f.ConsumeIntegralInRange<int>(0, 7) == 0;
  const bool dbl = f.ConsumeBool();
  c.seed = f.ConsumeIntegral<uint64_t>();
  p.layout = f.ConsumeBool() ? ops::Layout::kNHWC : ops::Layout::kNCHW;  // last: older seeds stay NCHW
  te_fuzz::Context() = "pool " + std::string(dbl ? "double" : "float") + (p.pool_type == ops::PoolType::kMax ? " max" : " avg") +
                       " N " + std::to_string(c.N) + " C " + std::to_string(c.C) + " in " +
                       te_fuzz::VecStr(Vec(c.in + 3 - c.nd, c.in + 3)) + " kernel " + te_fuzz::VecStr(p.kernel) +
                       " stride " + te_fuzz::VecStr(p.stride) + " pad " + te_fuzz::VecStr(p.pad) +
                       (p.pooling_convention == ops::PoolingConvention::kFull ? " full" : " valid") +
                       (p.global_pool ? " global" : "") + (p.count_include_pad ? " include_pad" : " exclude_pad") +
                       (c.quantized ? " ties" : "") + (c.with_nan ? " NaN" : "") + " row pad " +
                       std::to_string(c.pad_rows) + " reqs " + OpReqName(c.req) + "," + OpReqName(c.req_grad) + " layout " +
                       ops::LayoutName(p.layout);
  te_fuzz::Trace();
  switch (c.nd + 3 * dbl) {
    case 1: return RunPoolNd<float, 1>(c);
    case 2: return RunPoolNd<float, 2>(c);
    case 3: return RunPoolNd<float, 3>(c);
    case 4: return RunPoolNd<double, 1>(c);
    case 5: return RunPoolNd<double, 2>(c);
    default: return RunPoolNd<double, 3>(c);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* bytes, size_t size) {
  FuzzedDataProvider f(bytes, size);
  if (f.ConsumeBool()) FuzzConv(f);
  else FuzzPool(f);
  return 0;
}
