// fuzz/conv_run_fuzz.cc — small CPU convolution, deconvolution and pooling runs (forward and backward, float
// and double, every req, NCHW and NHWC, padded-row views, forced algorithms, workspace caps that force
// chunking) with fuzzed parameters, against a naive float64 reference written here from the definitions.
// Each run is tiny (data up to 2x4x9x9, or 2x4x5x5x5 in 3-D). A case the reference says is invalid must be
// an Error; a valid one must not be (except a forced algorithm that cannot implement it) and must match the
// reference.
#include <algorithm>
#include <cmath>
#include <random>
#include <string>
// The implementations, instantiated here under the harness's sanitizers (tools/fuzz.sh links the
// selection state and workspace estimate, ops/conv_select.cc and ops/conv_workspace.cc).
#include "../ops/convolution.h"
#include "../ops/deconvolution.h"
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

// Each `plane` consecutive magnitudes raised to their largest: Winograd's transforms mix each output tile's
// pixels, so an output's rounding scales with its tile's terms, not its own (an output whose window lies in
// padding came out 1e-17 beside data of order 1); its weight gradient's inverse transform mixes a filter's
// taps the same way (a tap that sees only padding came out nonzero by rounding).
void WidenToPlanes(std::vector<double>& mag, index_t plane) {
  if (plane <= 0) return;
  for (size_t start = 0; start < mag.size(); start += size_t(plane)) {
    const auto first = mag.begin() + std::ptrdiff_t(start), end = first + std::ptrdiff_t(plane);
    std::fill(first, end, *std::max_element(first, end));
  }
}

// ---- convolution -----------------------------------------------------------------------------------------
// What a convolution case and a deconvolution case both draw (DrawShape, DrawRun): the shapes, which operand
// has padded rows, the reqs, the dtype and the values' seed.
struct ConvLikeCase {
  int nd = 2;
  bool batched = true;
  index_t N = 1, C = 1, in[3] = {1, 1, 1};
  // Padding of the rows of the operand that may have it (the convolution's data, the deconvolution's
  // output) and of its gradient.
  index_t row_pad = 0, grad_row_pad = 0;
  OpReqType req_out = kWriteTo, req_dx = kWriteTo, req_dw = kWriteTo, req_db = kWriteTo;
  bool dbl = false;
  uint64_t seed = 0;
};
struct ConvCase : ConvLikeCase {
  ops::ConvolutionParam p;
};

// N, groups, C, K, then each axis's input extent and kernel (max_in, max_in_3d: the largest extents).
template <typename Case>
void DrawShape(FuzzedDataProvider& f, Case& c, index_t max_in, index_t max_in_3d) {
  c.nd = f.ConsumeIntegralInRange<int>(1, 3);
  const index_t max_k = c.nd == 3 ? 3 : 4;
  c.batched = f.ConsumeBool();
  c.N = c.batched ? f.ConsumeIntegralInRange<index_t>(0, 2) : 1;
  c.p.num_group = index_t(1) << f.ConsumeIntegralInRange<int>(0, 2);
  c.C = c.p.num_group * f.ConsumeIntegralInRange<index_t>(1, 4 / c.p.num_group);
  c.p.num_filter = c.p.num_group * f.ConsumeIntegralInRange<index_t>(1, 4 / c.p.num_group);
  for (int i = 0; i < c.nd; ++i) {
    c.in[3 - c.nd + i] = f.ConsumeIntegralInRange<index_t>(0, c.nd == 3 ? max_in_3d : max_in);
    c.p.kernel.push_back(f.ConsumeIntegralInRange<index_t>(1, max_k));
  }
}
Vec DrawPerDim(FuzzedDataProvider& f, int nd, index_t lo, index_t hi) {
  Vec v;
  if (f.ConsumeBool())
    for (int i = 0; i < nd; ++i) v.push_back(f.ConsumeIntegralInRange<index_t>(lo, hi));
  return v;
}

// How the run goes: bias, workspace cap (small ones chunk the batch), algorithm, padded rows, reqs, dtype,
// seed, layout (drawn last: older seeds stay NCHW). `large` is the parameter's default cap.
template <typename Case>
void DrawRun(FuzzedDataProvider& f, Case& c, double large) {
  c.p.no_bias = f.ConsumeBool();
  const double caps[] = {large, 0.0, 1e-6, 2e-5, 1e-4};
  c.p.workspace = caps[f.ConsumeIntegralInRange<int>(0, 4)];
  static const std::vector<std::string> algorithms = ops::ListConvAlgorithms<cpu, float>();
  const size_t a = f.ConsumeIntegralInRange<size_t>(0, algorithms.size());
  c.p.algorithm = a == algorithms.size() ? "" : algorithms[a];
  c.row_pad = f.ConsumeIntegralInRange<index_t>(0, 2);
  c.grad_row_pad = f.ConsumeIntegralInRange<index_t>(0, 2);
  c.req_out = PickReq(f), c.req_dx = PickReq(f), c.req_dw = PickReq(f), c.req_db = PickReq(f);
  c.dbl = f.ConsumeBool();
  c.seed = f.ConsumeIntegral<uint64_t>();
  c.p.layout = f.ConsumeBool() ? ops::Layout::kNHWC : ops::Layout::kNCHW;
}

// The case in words (TE_FUZZ_TRACE and failure reports); `geometry` the operator's own parameters.
template <typename Case>
std::string Describe(const char* op, const Case& c, const std::string& geometry) {
  const auto& p = c.p;
  return std::string(op) + (c.dbl ? " double" : " float") + " N " + std::to_string(c.N) +
         (c.batched ? "" : " (unbatched)") + " C " + std::to_string(c.C) + " in " +
         te_fuzz::VecStr(Vec(c.in + 3 - c.nd, c.in + 3)) + " kernel " + te_fuzz::VecStr(p.kernel) + " stride " +
         te_fuzz::VecStr(p.stride) + " dilate " + te_fuzz::VecStr(p.dilate) + geometry + " pad " +
         te_fuzz::VecStr(p.pad) + " pad_end " + te_fuzz::VecStr(p.pad_end) + " padding " +
         ops::ConvPaddingName(p.padding) + " K " + std::to_string(p.num_filter) + " G " +
         std::to_string(p.num_group) + (p.no_bias ? " no_bias" : "") + " workspace " + std::to_string(p.workspace) +
         " algorithm '" + p.algorithm + "' row pads " + std::to_string(c.row_pad) + "," +
         std::to_string(c.grad_row_pad) + " reqs " + OpReqName(c.req_out) + "," + OpReqName(c.req_dx) + "," +
         OpReqName(c.req_dw) + "," + OpReqName(c.req_db) + " layout " + ops::LayoutName(p.layout);
}

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

// The float64 reference of the convolution of geometry r on channels-first x (N, C, S), w (K, Cg, kk) and
// dy (N, K, P): every (output, input, weight) triple that meets, each sum with the sum of its |terms| (its
// tolerance's scale). No bias.
struct ConvReference {
  std::vector<double> y, ym, dx, dxm, dw, dwm;
};
ConvReference ConvTriples(const RefGeom& r, index_t N, index_t C, index_t K, index_t G, const std::vector<double>& x,
                          const std::vector<double>& w, const std::vector<double>& dy) {
  const index_t Cg = C / G, Kg = K / G;
  const index_t P = r.out[0] * r.out[1] * r.out[2], S = r.in[0] * r.in[1] * r.in[2];
  const index_t kk = r.k[0] * r.k[1] * r.k[2];
  ConvReference f;
  f.y.assign(size_t(N * K * P), 0), f.ym = f.y, f.dx.assign(size_t(N * C * S), 0), f.dxm = f.dx;
  f.dw.assign(size_t(K * Cg * kk), 0), f.dwm = f.dw;
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
            f.y[yi] += x[xi] * w[wi], f.ym[yi] += std::fabs(x[xi] * w[wi]);
            f.dx[xi] += w[wi] * dy[yi], f.dxm[xi] += std::fabs(w[wi] * dy[yi]);
            f.dw[wi] += x[xi] * dy[yi], f.dwm[wi] += std::fabs(x[xi] * dy[yi]);
          }
      }
  return f;
}

// The bias b (K) added to y (N, K, P) channels first unless no_bias, and its gradient from dy: db and |terms|.
void AddBias(std::vector<double>& y, std::vector<double>& ym, const std::vector<double>& b,
             const std::vector<double>& dy, index_t P, bool no_bias, std::vector<double>* db,
             std::vector<double>* dbm) {
  const index_t K = index_t(b.size());
  db->assign(b.size(), 0), dbm->assign(b.size(), 0);
  for (size_t i = 0; i < y.size(); ++i) {
    const index_t o = index_t(i) / P % K;
    if (!no_bias) y[i] += b[o], ym[i] += std::fabs(b[o]);
    (*db)[o] += dy[i], (*dbm)[o] += std::fabs(dy[i]);
  }
}

// Where Winograd may run (forced, or left to the heuristic on a 3 x 3 stride-1 2-D problem), a pass's
// outputs are held to their plane's largest sum of |terms|, and a weight gradient's taps to their filter's
// (WidenToPlanes).
bool WinogradMayRun(const std::string& algorithm, int nd, const RefGeom& r) {
  if (!algorithm.empty()) return algorithm.rfind("winograd", 0) == 0;
  return nd == 2 && r.k[1] == 3 && r.k[2] == 3 && r.s[1] == 1 && r.s[2] == 1 && r.d[1] == 1 && r.d[2] == 1;
}

// One operator's tensors, drawn from the case's seed in this order: data and its gradient (ddim), output and
// its gradient, weight and its gradient, bias and its gradient; rows padded as asked.
template <typename DType, int ddim, int wdim>
struct Operands {
  Buf<ddim, DType> x, dx, y, dy;
  Buf<wdim, DType> w, dw;
  Buf<1, DType> b, db;
  Operands(const Vec& data, index_t x_pad, index_t dx_pad, const Vec& out, index_t y_pad, index_t dy_pad,
           const Vec& weight, index_t K, std::mt19937_64& rng)
      : x(data, x_pad, rng), dx(data, dx_pad, rng), y(out, y_pad, rng), dy(out, dy_pad, rng), w(weight, 0, rng),
        dw(weight, 0, rng), b(Vec{K}, 0, rng), db(Vec{K}, 0, rng) {}
};

// The reference results in the buffers' order, each with the sums of |terms| that scale its tolerance.
struct Expected {
  std::vector<double> y, ym, dx, dxm, dw, dwm, db, dbm;
};

// Runs an operator's forward, then its backward, on t and holds each result to the reference as its req
// says (the bias gradient unless no_bias). An Error from a forced algorithm ends the case (it may not
// implement the pass); from the library's own choice it is a bug.
template <typename DType, int ddim, int wdim, typename Forward, typename Backward>
void RunAndCheck(Operands<DType, ddim, wdim>& t, const Expected& e, OpReqType req_out, OpReqType req_dx,
                 OpReqType req_dw, OpReqType req_db, bool forced, bool no_bias, const std::string& op,
                 Forward forward, Backward backward) {
  const std::vector<double> y0 = t.y.values(), dx0 = t.dx.values(), dw0 = t.dw.values(), db0 = t.db.values();
  auto ran = [forced](auto&& pass) {
    try {
      pass();
      return true;
    } catch (const Error& err) {
      if (!forced) te_fuzz::Bug(err.what());
      return false;
    }
  };
  if (!ran(forward)) return;
  Expect(t.y, y0, e.y, e.ym, req_out, (op + " output").c_str());
  if (!ran(backward)) return;
  Expect(t.dx, dx0, e.dx, e.dxm, req_dx, (op + " data gradient").c_str());
  Expect(t.dw, dw0, e.dw, e.dwm, req_dw, (op + " weight gradient").c_str());
  if (!no_bias) Expect(t.db, db0, e.db, e.dbm, req_db, (op + " bias gradient").c_str());
}

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
  const index_t N = c.N, C = c.C, K = p.num_filter, G = p.num_group, Cg = C / G;
  const index_t P = r.out[0] * r.out[1] * r.out[2], S = r.in[0] * r.in[1] * r.in[2];
  const index_t kk = r.k[0] * r.k[1] * r.k[2];
  Vec oshape;
  if (batched) oshape.push_back(N);
  if (!last) oshape.push_back(K);
  for (int i = 0; i < nd; ++i) oshape.push_back(r.out[3 - nd + i]);
  if (last) oshape.push_back(K);
  TE_FUZZ_CHECK(shapes.out == oshape);

  std::mt19937_64 rng(c.seed);
  Operands<DType, ddim, wdim> t(dshape, c.row_pad, c.grad_row_pad, oshape, 0, 0, shapes.weight, K, rng);
  const ChannelOrder data_order{last, C, S}, out_order{last, K, P}, weight_order{last, Cg, kk};
  const std::vector<double> dyv = out_order.FirstOf(t.dy.values());
  ConvReference ref =
      ConvTriples(r, N, C, K, G, data_order.FirstOf(t.x.values()), weight_order.FirstOf(t.w.values()), dyv);
  Expected e;
  AddBias(ref.y, ref.ym, t.b.values(), dyv, P, p.no_bias, &e.db, &e.dbm);
  if (WinogradMayRun(p.algorithm, nd, r)) WidenToPlanes(ref.ym, P), WidenToPlanes(ref.dxm, S), WidenToPlanes(ref.dwm, kk);
  e.y = out_order.BufferOf(ref.y), e.ym = out_order.BufferOf(ref.ym);
  e.dx = data_order.BufferOf(ref.dx), e.dxm = data_order.BufferOf(ref.dxm);
  e.dw = weight_order.BufferOf(ref.dw), e.dwm = weight_order.BufferOf(ref.dwm);
  RunAndCheck(t, e, c.req_out, c.req_dx, c.req_dw, c.req_db, !p.algorithm.empty(), p.no_bias, "convolution",
              [&] { ops::ConvolutionForward(p, t.x.t, t.w.t, t.b.t, c.req_out, t.y.t); },
              [&] {
                ops::ConvolutionBackward(p, t.dy.t, t.x.t, t.w.t, c.req_dx, t.dx.t, c.req_dw, t.dw.t, c.req_db, t.db.t);
              });
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
  DrawShape(f, c, 9, 5);
  p.stride = DrawPerDim(f, c.nd, 1, 3);
  p.dilate = DrawPerDim(f, c.nd, 1, 3);
  p.padding = static_cast<ops::ConvPadding>(f.ConsumeIntegralInRange<int>(0, 3));
  if (p.padding == ops::ConvPadding::kExplicit) {
    p.pad = DrawPerDim(f, c.nd, 0, 3);
    p.pad_end = p.pad.empty() ? Vec() : DrawPerDim(f, c.nd, 0, 3);
  }
  DrawRun(f, c, 1024.0);
  te_fuzz::Context() = Describe("conv", c, "");
  te_fuzz::Trace();
  if (c.dbl) RunConvTyped<double>(c);
  else RunConvTyped<float>(c);
}

// ---- deconvolution ---------------------------------------------------------------------------------------
struct DeconvCase : ConvLikeCase {
  ops::DeconvolutionParam p;
};

// The reference geometry from the parameters alone (deconv_param.h's rules written again): `in` the data's
// extents, `out` the output's, pb the padding cropped before; false when the parameters do not fit.
bool MakeDeconvRefGeom(const DeconvCase& c, RefGeom* r) {
  const auto& p = c.p;
  const int off = 3 - c.nd;
  for (int i = 0; i < c.nd; ++i) {
    auto at = [i](const Vec& v, index_t dflt) { return v.empty() ? dflt : v[i]; };
    const index_t k = p.kernel[i], s = at(p.stride, 1), d = at(p.dilate, 1), adj = at(p.adj, 0);
    const index_t in = c.in[off + i], span = (k - 1) * d + 1;
    if (in < 1 || adj >= s) return false;
    const index_t full = s * (in - 1) + span + adj;
    const bool same = p.padding == ops::ConvPadding::kSameUpper || p.padding == ops::ConvPadding::kSameLower;
    index_t pb = 0, pe = 0;
    if (!p.target_shape.empty() || same) {
      if (p.padding == ops::ConvPadding::kValid) return false;  // VALID and a target contradict
      const index_t total = full - (p.target_shape.empty() ? in * s : p.target_shape[i]);
      if (total < 0) return false;
      pe = p.padding == ops::ConvPadding::kSameUpper ? total - total / 2 : total / 2;
      pb = total - pe;
    } else if (p.padding == ops::ConvPadding::kExplicit) {
      pb = at(p.pad, 0), pe = p.pad_end.empty() ? pb : p.pad_end[i];
    }
    if (pb + pe >= full) return false;
    r->k[off + i] = k, r->s[off + i] = s, r->d[off + i] = d, r->pb[off + i] = pb, r->in[off + i] = in;
    r->out[off + i] = full - pb - pe;
  }
  return true;
}

// The same geometry with input and output swapped: the convolution a deconvolution transposes.
RefGeom Transposed(RefGeom r) {
  for (int i = 0; i < 3; ++i) std::swap(r.in[i], r.out[i]);
  return r;
}

template <typename DType, int nd, bool batched>
void RunDeconvNd(const DeconvCase& c) {
  constexpr int ddim = batched ? nd + 2 : nd + 1, wdim = nd + 2;
  const auto& p = c.p;
  RefGeom r;
  const bool valid = MakeDeconvRefGeom(c, &r);
  const bool last = p.layout == ops::Layout::kNHWC;
  const index_t N = c.N, C = c.C, K = p.num_filter, G = p.num_group, Kg = K / G;
  Vec dshape, oshape;
  if (batched) dshape.push_back(N), oshape.push_back(N);
  if (!last) dshape.push_back(C), oshape.push_back(K);
  for (int i = 0; i < nd; ++i) dshape.push_back(c.in[3 - nd + i]), oshape.push_back(r.out[3 - nd + i]);
  if (last) dshape.push_back(C), oshape.push_back(K);
  ops::DeconvShapes shapes;
  try {
    shapes = ops::InferDeconvShapes(p, dshape);
  } catch (const Error& e) {
    if (valid) te_fuzz::Bug("a valid deconvolution was rejected");
    return;
  }
  TE_FUZZ_CHECK(valid);
  TE_FUZZ_CHECK(shapes.out == oshape);
  const index_t S = r.in[0] * r.in[1] * r.in[2], P = r.out[0] * r.out[1] * r.out[2];
  const index_t kk = r.k[0] * r.k[1] * r.k[2];

  std::mt19937_64 rng(c.seed);
  Operands<DType, ddim, wdim> t(dshape, 0, 0, oshape, c.row_pad, c.grad_row_pad, shapes.weight, K, rng);
  // Weights are (C, Kg, kk) channels first, (C, kk, Kg) last.
  const ChannelOrder data_order{last, C, S}, out_order{last, K, P}, weight_order{last, Kg, kk};
  const std::vector<double> dyv = out_order.FirstOf(t.dy.values());
  // The convolution whose data gradient this deconvolution is maps the output (K channels) onto the data (C
  // filters) through the same weight: its data gradient from the data is the output, its forward on the
  // output gradient the data gradient, and its weight gradient the weight's.
  const RefGeom conv = Transposed(r);
  ConvReference ref =
      ConvTriples(conv, N, K, C, G, dyv, weight_order.FirstOf(t.w.values()), data_order.FirstOf(t.x.values()));
  Expected e;
  AddBias(ref.dx, ref.dxm, t.b.values(), dyv, P, p.no_bias, &e.db, &e.dbm);
  // Winograd's tiles may run both passes (a forced one, or the heuristic's on the convolution's geometry).
  if (WinogradMayRun(p.algorithm, nd, conv))
    WidenToPlanes(ref.dxm, P), WidenToPlanes(ref.ym, S), WidenToPlanes(ref.dwm, kk);
  e.y = out_order.BufferOf(ref.dx), e.ym = out_order.BufferOf(ref.dxm);
  e.dx = data_order.BufferOf(ref.y), e.dxm = data_order.BufferOf(ref.ym);
  e.dw = weight_order.BufferOf(ref.dw), e.dwm = weight_order.BufferOf(ref.dwm);
  RunAndCheck(t, e, c.req_out, c.req_dx, c.req_dw, c.req_db, !p.algorithm.empty(), p.no_bias, "deconvolution",
              [&] { ops::DeconvolutionForward(p, t.x.t, t.w.t, t.b.t, c.req_out, t.y.t); },
              [&] {
                ops::DeconvolutionBackward(p, t.dy.t, t.x.t, t.w.t, c.req_dx, t.dx.t, c.req_dw, t.dw.t, c.req_db,
                                           t.db.t);
              });
}

void FuzzDeconv(FuzzedDataProvider& f) {
  DeconvCase c;
  auto& p = c.p;
  DrawShape(f, c, 7, 4);  // 0: an Error
  p.stride = DrawPerDim(f, c.nd, 1, 3);
  p.dilate = DrawPerDim(f, c.nd, 1, 2);
  p.adj = DrawPerDim(f, c.nd, 0, 2);  // at or above the stride: an Error
  p.padding = static_cast<ops::ConvPadding>(f.ConsumeIntegralInRange<int>(0, 3));
  if (f.ConsumeIntegralInRange<int>(0, 3) == 0) {
    p.target_shape = DrawPerDim(f, c.nd, 1, 12);
  } else if (p.padding == ops::ConvPadding::kExplicit) {
    p.pad = DrawPerDim(f, c.nd, 0, 3);
    p.pad_end = p.pad.empty() ? Vec() : DrawPerDim(f, c.nd, 0, 3);
  }
  DrawRun(f, c, 512.0);
  te_fuzz::Context() =
      Describe("deconv", c, " adj " + te_fuzz::VecStr(p.adj) + " target_shape " + te_fuzz::VecStr(p.target_shape));
  te_fuzz::Trace();
  switch (c.nd * 4 + c.batched * 2 + c.dbl) {
    case 4: return RunDeconvNd<float, 1, false>(c);
    case 5: return RunDeconvNd<double, 1, false>(c);
    case 6: return RunDeconvNd<float, 1, true>(c);
    case 7: return RunDeconvNd<double, 1, true>(c);
    case 8: return RunDeconvNd<float, 2, false>(c);
    case 9: return RunDeconvNd<double, 2, false>(c);
    case 10: return RunDeconvNd<float, 2, true>(c);
    case 11: return RunDeconvNd<double, 2, true>(c);
    case 12: return RunDeconvNd<float, 3, false>(c);
    case 13: return RunDeconvNd<double, 3, false>(c);
    case 14: return RunDeconvNd<float, 3, true>(c);
    default: return RunDeconvNd<double, 3, true>(c);
  }
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
  if (f.ConsumeBool()) FuzzConv(f);  // kept first: the seeds found for convolution still reach it
  else if (f.ConsumeBool()) FuzzDeconv(f);
  else FuzzPool(f);
  return 0;
}
