// bench/conv_cpu_bench.cpp — ops/convolution.h on the host CPU against PyTorch (oneDNN), measured in this one run.
// Five ResNet-50 layers (C H K R stride pad, H=W, R=S): (64,56,64,3,1,1) (256,56,64,1,1,0) (128,28,128,3,1,1)
// (256,14,256,3,1,1) (512,7,512,3,1,1), batch N = 8, NCHW, fp32, no bias: forward, and backward (data and
// weight gradients together), per layer and summed, at each thread count asked for.
// The peer (bench/conv_cpu_peer.py: F.conv2d and aten.convolution_backward with torch.set_num_threads) runs
// after ours at the same thread count, as a separate process, so the two never share the cores; its lines
// are parsed and each row prints ours / peer as a time ratio (below 1: we are faster).
// Timing: std::chrono::steady_clock around each call, after warm-up (which also sizes the workspace);
// the median is reported (or, with --stat min, the fastest run: the statistic that load on a shared host
// disturbs least, for comparing two builds). After timing, sampled outputs of the last forward and backward of every layer are
// checked against a float64 direct convolution, so that a wrong result cannot pass as a fast one.
//
// Usage: conv_cpu_bench [--threads 16[,2...]] [--n 8] [--reps 10] [--warmup 2] [--workspace-mb 1024]
//                       [--split] [--no-peer] [--layers 0,3] [--layer C:H:K:R:stride:pad[:D] ...] [--stat median|min]
//                       [--algorithm NAME]
//   --threads  a thread count, or a comma list run one after the other (default: tensorexpr's default)
//   --layers   time only these layers (indices into the list above); totals sum the layers timed
//   --layer    time this layer instead of the list (repeatable), e.g. the Fashion-MNIST trainer's conv2
//              with --n 64: --layer 32:14:64:5:1:2; a seventh field D > 0 makes it a D x H x H volume with
//              an R x R x R kernel (F.conv3d for the peer), e.g. the 3-D imaging case --n 1 --layer 1:256:8:7:1:0:256
//   --algorithm  force this convolution algorithm for ours (ConvolutionParam::algorithm), e.g. cpu_direct
//   --split    also time the data and the weight gradient apart (ours only; to see where backward goes)
// Run from the repository root or from bench/ (or set TE_CPU_PEER_SCRIPT to the peer script).
// Machine-readable lines: one per layer timed, and the last one per thread count:
//   conv_cpu_layer threads N layer I fwd_ms X bwd_ms Y
//   conv_cpu_total threads N fwd_ms X bwd_ms Y peer_fwd_ms A peer_bwd_ms B    (peer -1 when not measured)
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <limits>
#include <map>
#include <string>
#include <vector>
#include <sys/stat.h>
#include <sys/wait.h>
#include <cblas.h>  // OpenBLAS's: openblas_get_config, openblas_get_parallel
#include <tensorexpr/tensorexpr.h>
#include <tensorexpr/ops/convolution.h>
#include "conv_layers.h"

namespace {
using namespace tensorexpr;
using namespace conv_layers;

// A layer of this bench: conv_layers' square 2-D layer, or with depth D > 0 a D x H x H volume convolved
// with an R x R x R kernel (stride and padding the same along every axis).
struct CpuLayer : Layer {
  index_t D = 0;
  CpuLayer(const Layer& l, index_t depth = 0) : Layer(l), D(depth) {}
  index_t Depth() const { return D > 0 ? D : 1; }      // 1 for a 2-D layer
  index_t KernelDepth() const { return D > 0 ? R : 1; }
  std::vector<index_t> DataShape(index_t n) const {
    return D > 0 ? std::vector<index_t>{n, C, D, H, H} : std::vector<index_t>{n, C, H, H};
  }
  ops::ConvolutionParam Param(double workspace_mb) const {
    ops::ConvolutionParam p = LayerParam(*this, workspace_mb);
    if (D > 0) p.kernel = {R, R, R}, p.stride = {stride, stride, stride}, p.pad = {pad, pad, pad};
    return p;
  }
  // C:H:K:R:stride:pad[:D], as --layer and the peer's --layers take it.
  std::string Spec() const {
    char buf[128];
    std::snprintf(buf, sizeof(buf), "%lld:%lld:%lld:%lld:%lld:%lld", (long long)C, (long long)H, (long long)K,
                  (long long)R, (long long)stride, (long long)pad);
    return D > 0 ? std::string(buf) + ":" + std::to_string(D) : std::string(buf);
  }
};

// The subset of bench/resnet50_layers.txt that peers-h200.md measured on the CPU; --layer replaces it.
std::vector<CpuLayer> kLayers = {
    Layer{64, 56, 64, 3, 1, 1}, Layer{256, 56, 64, 1, 1, 0}, Layer{128, 28, 128, 3, 1, 1}, Layer{256, 14, 256, 3, 1, 1},
    Layer{512, 7, 512, 3, 1, 1}};

struct Timing {
  double fwd_ms = -1, bwd_ms = -1;
  double bwd_data_ms = -1, bwd_weight_ms = -1;  // only with --split
};

template <int dim>
void FillHash(Tensor<cpu, dim, float> t, uint32_t seed) {
  const index_t n = t.shape_.Size();
  ParallelFor(n, 16, [&](index_t begin, index_t end) {
    for (index_t i = begin; i < end; ++i) t.dptr_[i] = HashValue(i, seed);
  });
}
template <int dim>
void FillNaN(Tensor<cpu, dim, float> t) {
  std::fill(t.dptr_, t.dptr_ + t.shape_.Size(), std::numeric_limits<float>::quiet_NaN());
}

// Whether a layer's time is the median of its runs or the fastest one.
enum class Statistic { kMedian, kMin };
Statistic g_statistic = Statistic::kMedian;

// Milliseconds of `reps` runs of f, after `warmup` runs: their median, or their minimum (g_statistic).
double TimedMs(int warmup, int reps, const std::function<void()>& f) {
  for (int w = 0; w < warmup; ++w) f();
  std::vector<double> times;
  for (int r = 0; r < reps; ++r) {
    const auto start = std::chrono::steady_clock::now();
    f();
    const auto stop = std::chrono::steady_clock::now();
    times.push_back(std::chrono::duration<double, std::milli>(stop - start).count());
  }
  std::sort(times.begin(), times.end());
  if (g_statistic == Statistic::kMin) return times.front();
  const size_t m = times.size() / 2;
  return times.size() % 2 ? times[m] : 0.5 * (times[m - 1] + times[m]);
}

// ---- the float64 check of sampled outputs ---------------------------------------------------------------
// Each sampled value must be within 1e-4 of the sum of the magnitudes of its terms (fp32 accumulation over
// a few thousand terms stays far inside that; a missing channel, tap or image does not).
struct Checker {
  const CpuLayer& L;
  index_t N, OD, OH;  // OD: the output's depth (1 for a 2-D layer)
  const float *x, *w, *y, *dy, *dx, *dw;
  uint64_t state = 88172645463325252ull;
  int bad = 0;
  double worst = 0;  // largest |error| / (sum of |terms|)

  index_t Rand(index_t n) {  // xorshift64: a fixed sample, independent of the library
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    return static_cast<index_t>(state % static_cast<uint64_t>(n));
  }
  // Element offsets; d is the depth (0 in a 2-D layer), rd the kernel's depth tap.
  index_t X(index_t n, index_t c, index_t d, index_t h, index_t v) const {
    return (((n * L.C + c) * L.Depth() + d) * L.H + h) * L.H + v;
  }
  index_t Y(index_t n, index_t k, index_t d, index_t h, index_t v) const { return (((n * L.K + k) * OD + d) * OH + h) * OH + v; }
  index_t Wt(index_t k, index_t c, index_t rd, index_t r, index_t s) const {
    return (((k * L.C + c) * L.KernelDepth() + rd) * L.R + r) * L.R + s;
  }
  bool Inside(index_t d, index_t h, index_t v) const { return d >= 0 && d < L.Depth() && h >= 0 && h < L.H && v >= 0 && v < L.H; }

  void Compare(const char* what, index_t index, double got, double ref, double mag) {
    const double err = std::fabs(got - ref), scale = mag + 1e-30;
    if (std::isfinite(got)) worst = std::max(worst, err / scale);
    if (!(err <= 1e-4 * mag + 1e-6)) {  // NaN fails too: outputs start as NaN
      if (bad < 5)
        std::printf("  MISMATCH %s[%lld]: ours %.8g, float64 reference %.8g (sum of |terms| %.4g)\n", what,
                    static_cast<long long>(index), got, ref, mag);
      ++bad;
    }
  }
  // The output element and, at the same time, a check that the sample reaches the padded border.
  // In a 2-D layer the depth loops run once, at d = 0 with depth padding 0.
  index_t DepthPad() const { return L.D > 0 ? L.pad : 0; }
  void CheckForward(index_t n, index_t k, index_t od, index_t oh, index_t ow) {
    double ref = 0, mag = 0;
    for (index_t c = 0; c < L.C; ++c)
      for (index_t rd = 0; rd < L.KernelDepth(); ++rd)
        for (index_t r = 0; r < L.R; ++r)
          for (index_t s = 0; s < L.R; ++s) {
            const index_t id = od * L.stride - DepthPad() + rd, ih = oh * L.stride - L.pad + r,
                          iw = ow * L.stride - L.pad + s;
            if (!Inside(id, ih, iw)) continue;
            const double t = double(x[X(n, c, id, ih, iw)]) * w[Wt(k, c, rd, r, s)];
            ref += t, mag += std::fabs(t);
          }
    Compare("y", Y(n, k, od, oh, ow), y[Y(n, k, od, oh, ow)], ref, mag);
  }
  void CheckData(index_t n, index_t c, index_t id, index_t ih, index_t iw) {
    double ref = 0, mag = 0;
    for (index_t k = 0; k < L.K; ++k)
      for (index_t rd = 0; rd < L.KernelDepth(); ++rd)
        for (index_t r = 0; r < L.R; ++r)
          for (index_t s = 0; s < L.R; ++s) {
            const index_t dn = id + DepthPad() - rd, hn = ih + L.pad - r, wn = iw + L.pad - s;
            if (dn < 0 || hn < 0 || wn < 0 || dn % L.stride || hn % L.stride || wn % L.stride) continue;
            const index_t od = dn / L.stride, oh = hn / L.stride, ow = wn / L.stride;
            if (od >= OD || oh >= OH || ow >= OH) continue;
            const double t = double(dy[Y(n, k, od, oh, ow)]) * w[Wt(k, c, rd, r, s)];
            ref += t, mag += std::fabs(t);
          }
    Compare("dx", X(n, c, id, ih, iw), dx[X(n, c, id, ih, iw)], ref, mag);
  }
  void CheckWeight(index_t k, index_t c, index_t rd, index_t r, index_t s) {
    double ref = 0, mag = 0;
    for (index_t n = 0; n < N; ++n)
      for (index_t od = 0; od < OD; ++od)
        for (index_t oh = 0; oh < OH; ++oh)
          for (index_t ow = 0; ow < OH; ++ow) {
            const index_t id = od * L.stride - DepthPad() + rd, ih = oh * L.stride - L.pad + r,
                          iw = ow * L.stride - L.pad + s;
            if (!Inside(id, ih, iw)) continue;
            const double t = double(dy[Y(n, k, od, oh, ow)]) * x[X(n, c, id, ih, iw)];
            ref += t, mag += std::fabs(t);
          }
    Compare("dW", Wt(k, c, rd, r, s), dw[Wt(k, c, rd, r, s)], ref, mag);
  }
  // Random samples plus the corners (first / last image, channel and pixel), where padding and chunk edges bite.
  void Run(int samples) {
    for (int i = 0; i < samples; ++i) {
      const bool edge = i < 2;
      const index_t n = edge ? i * (N - 1) : Rand(N), k = edge ? i * (L.K - 1) : Rand(L.K),
                    c = edge ? i * (L.C - 1) : Rand(L.C);
      const index_t od = edge ? i * (OD - 1) : Rand(OD), oh = edge ? i * (OH - 1) : Rand(OH),
                    ow = edge ? i * (OH - 1) : Rand(OH);
      const index_t id = edge ? i * (L.Depth() - 1) : Rand(L.Depth()), ih = edge ? i * (L.H - 1) : Rand(L.H),
                    iw = edge ? i * (L.H - 1) : Rand(L.H);
      const index_t rd = edge ? i * (L.KernelDepth() - 1) : Rand(L.KernelDepth()), r = edge ? i * (L.R - 1) : Rand(L.R),
                    s = edge ? i * (L.R - 1) : Rand(L.R);
      CheckForward(n, k, od, oh, ow);
      CheckData(n, c, id, ih, iw);
      if (dw != nullptr) CheckWeight(k, c, rd, r, s);
    }
  }
};

// Times one layer, forward and backward (data + weight), fp32, no bias; then checks samples of what the
// last timed calls wrote. Returns false when the check fails.
// --algorithm: ours runs this convolution algorithm ("" : the library's choice).
std::string g_algorithm;

template <int dim>
Shape<dim> ShapeOf(const std::vector<index_t>& v) {
  Shape<dim> s;
  for (int i = 0; i < dim; ++i) s[i] = v[size_t(i)];
  return s;
}

// dim: 4 for a 2-D layer, 5 for a volume.
template <int dim>
bool TimeLayerDim(const CpuLayer& L, index_t n, double workspace_mb, int warmup, int reps, bool split, Timing* t) {
  ops::ConvolutionParam p = L.Param(workspace_mb);
  p.algorithm = g_algorithm;
  const ops::ConvShapes shapes = ops::InferConvShapes(p, L.DataShape(n));
  const Shape<dim> xshape = ShapeOf<dim>(L.DataShape(n)), yshape = ShapeOf<dim>(shapes.out),
                   wshape = ShapeOf<dim>(shapes.weight);
  TensorContainer<cpu, dim, float> x(xshape), dx(xshape), y(yshape), dy(yshape), w(wshape), dw(wshape);
  TensorContainer<cpu, 1, float> b;  // unused: no_bias
  FillHash(x.view(), 1u), FillHash(w.view(), 2u), FillHash(dy.view(), 3u);
  FillNaN(y.view()), FillNaN(dx.view()), FillNaN(dw.view());
  // A forced algorithm without a weight gradient (Winograd's): the backward is the data gradient alone.
  const ops::ConvProblem problem = ops::MakeConvProblem<cpu, float>(ops::MakeConvGeometry(p, L.DataShape(n)), nullptr,
                                                                    true, workspace_mb);
  const auto* forced = ops::ConvRegistry<cpu, float>::Get().Find(g_algorithm);
  const bool weight_grad = forced == nullptr || forced->CanImplement(problem, ops::ConvPass::kBackwardWeight).ok;
  if (!weight_grad) std::printf("  (%s has no weight gradient: bwd is the data gradient alone)\n", g_algorithm.c_str());
  if (split) {
    t->bwd_data_ms = TimedMs(warmup, reps, [&] {
      ops::ConvolutionBackward(p, dy.view(), x.view(), w.view(), kWriteTo, dx.view(), kNullOp, dw.view(), kNullOp,
                               b.view());
    });
    if (weight_grad)
      t->bwd_weight_ms = TimedMs(warmup, reps, [&] {
        ops::ConvolutionBackward(p, dy.view(), x.view(), w.view(), kNullOp, dx.view(), kWriteTo, dw.view(), kNullOp,
                                 b.view());
      });
    FillNaN(dx.view()), FillNaN(dw.view());
  }
  t->fwd_ms = TimedMs(warmup, reps, [&] { ops::ConvolutionForward(p, x.view(), w.view(), b.view(), kWriteTo, y.view()); });
  t->bwd_ms = TimedMs(warmup, reps, [&] {
    ops::ConvolutionBackward(p, dy.view(), x.view(), w.view(), kWriteTo, dx.view(), weight_grad ? kWriteTo : kNullOp,
                             dw.view(), kNullOp, b.view());
  });
  Checker check{L, n, dim == 5 ? yshape[2] : 1, yshape[dim - 1], x.dptr_, w.dptr_, y.dptr_, dy.dptr_, dx.dptr_,
                weight_grad ? dw.dptr_ : nullptr};
  check.Run(24);
  const int checked = weight_grad ? 72 : 48;
  if (check.bad) {
    std::printf("  check FAILED: %d of %d sampled outputs differ from the float64 reference\n", check.bad, checked);
    return false;
  }
  std::printf("  check ok: 24 samples each of y, dx%s match float64 (worst |err| / sum|terms| = %.1e)\n",
              weight_grad ? ", dW" : "", check.worst);
  return true;
}
bool TimeLayer(const CpuLayer& L, index_t n, double workspace_mb, int warmup, int reps, bool split, Timing* t) {
  return L.D > 0 ? TimeLayerDim<5>(L, n, workspace_mb, warmup, reps, split, t)
                 : TimeLayerDim<4>(L, n, workspace_mb, warmup, reps, split, t);
}

// Runs the peer script at one thread count on the layers timed; returns its timings (by position in that
// list) and total.
struct PeerResult {
  std::map<int, Timing> layers;
  Timing total;
  bool ok = false;
};
// The layers as the peer's --layers takes them: C:H:K:R:stride:pad[:D], comma-separated.
std::string LayerSpec(const std::vector<int>& layers) {
  std::string s;
  for (const int i : layers) s += (s.empty() ? "" : ",") + kLayers[i].Spec();
  return s;
}
PeerResult RunPeer(const std::string& script, const std::vector<int>& layers, int threads, index_t n, int warmup,
                   int reps) {
  PeerResult r;
  const std::string cmd = "python3 " + script + " --threads " + std::to_string(threads) +  " --layers " + LayerSpec(layers) +
                          " --n " + std::to_string(n) + " --warmup " + std::to_string(warmup) + " --reps " +
                          std::to_string(reps) + " 2>&1";
  std::printf("peer: %s\n", cmd.c_str());
  std::fflush(stdout);
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return r;
  char line[2048];
  while (std::fgets(line, sizeof(line), p)) {
    std::printf("  | %s", line);
    int idx;
    long long c, h, k, rr, s, pad;
    double f, b;
    if (std::sscanf(line, "peer_conv_cpu_layer %d %lld %lld %lld %lld %lld %lld fwd_ms %lf bwd_ms %lf", &idx, &c, &h,
                    &k, &rr, &s, &pad, &f, &b) == 9) {
      Timing t;
      t.fwd_ms = f, t.bwd_ms = b;
      r.layers[idx] = t;
    } else if (std::sscanf(line, "peer_conv_cpu_total fwd_ms %lf bwd_ms %lf", &f, &b) == 2) {
      r.total.fwd_ms = f, r.total.bwd_ms = b;
    }
  }
  const int status = pclose(p);
  if (status != 0) std::printf("  (peer exited with status %d)\n", WIFEXITED(status) ? WEXITSTATUS(status) : status);
  r.ok = r.layers.size() == layers.size() && r.total.fwd_ms > 0;  // a partial peer run is no comparison
  return r;
}

std::string Ratio(double ours, double peer) {
  if (ours <= 0 || peer <= 0) return "   -  ";
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%6.2f", ours / peer);
  return buf;
}
std::string Ms(double v) {
  if (v <= 0) return "     -   ";
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%9.3f", v);
  return buf;
}
std::string Gflops(double gflop, double ms) {
  if (ms <= 0) return "    -  ";
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%7.1f", gflop / ms * 1e3);
  return buf;
}

// One full round at one thread count: ours, then the peer, then the table. Returns false on a failed check.
bool RunAtThreads(int threads, const std::vector<int>& layers, index_t n, double workspace_mb, int warmup, int reps,
                  bool split, bool do_peer) {
  SetNumThreads(threads);
  std::printf("\n=== %d threads ===\n", threads);
  std::vector<Timing> ours;
  std::vector<double> fwd_gflop, bwd_gflop;
  bool ok = true;
  // An untimed pass over the first layer: the first calls at a new thread count pay for starting the
  // threads, OpenBLAS's per-thread buffers and first-touch page faults, which belong to no layer.
  {
    Timing untimed;
    TimeLayer(kLayers[layers.front()], n, workspace_mb, warmup, 1, split, &untimed);
  }
  for (const int i : layers) {
    const CpuLayer& L = kLayers[i];
    const ops::ConvCost cost = ops::InferConvCost(L.Param(workspace_mb), L.DataShape(n), 4);
    fwd_gflop.push_back(cost.forward_flops / 1e9);
    bwd_gflop.push_back((cost.backward_data_flops + cost.backward_weight_flops) / 1e9);
    Timing t;
    std::printf("ours layer %d  C %4lld H %3lld K %4lld R %lld s %lld p %lld%s\n", i, (long long)L.C, (long long)L.H,
                (long long)L.K, (long long)L.R, (long long)L.stride, (long long)L.pad,
                L.D > 0 ? (" D " + std::to_string(L.D)).c_str() : "");
    std::fflush(stdout);
    ok = TimeLayer(L, n, workspace_mb, warmup, reps, split, &t) && ok;
    std::printf("  fwd %9.3f ms (%s GFLOP/s)  bwd %9.3f ms (%s GFLOP/s)", t.fwd_ms, Gflops(fwd_gflop.back(), t.fwd_ms).c_str(),
                t.bwd_ms, Gflops(bwd_gflop.back(), t.bwd_ms).c_str());
    if (split && t.bwd_weight_ms >= 0)
      std::printf("  [bwd data alone %.3f ms, weight alone %.3f ms]", t.bwd_data_ms, t.bwd_weight_ms);
    else if (split)
      std::printf("  [bwd data alone %.3f ms, no weight gradient]", t.bwd_data_ms);
    std::printf("\nconv_cpu_layer threads %d layer %d fwd_ms %.6f bwd_ms %.6f\n", threads, i, t.fwd_ms, t.bwd_ms);
    std::fflush(stdout);
    ours.push_back(t);
  }
  ops::ReleaseWorkspace<cpu>(nullptr);

  PeerResult peer;
  if (do_peer) peer = RunPeer(FindFile("TE_CPU_PEER_SCRIPT", "conv_cpu_peer.py"), layers, threads, n, warmup, reps);
  if (!peer.ok) std::printf("peer not measured%s\n", do_peer ? " (see its output above)" : " (--no-peer)");

  std::printf("\n%d threads, N=%lld, fp32%-12s %9s %9s %6s %7s   %9s %9s %6s %7s\n", threads, (long long)n, "",
              "fwd ours", "peer", "ratio", "GFLOP/s", "bwd ours", "peer", "ratio", "GFLOP/s");
  Timing sum;
  sum.fwd_ms = sum.bwd_ms = 0;
  double fwd_total = 0, bwd_total = 0;
  for (size_t k = 0; k < layers.size(); ++k) {
    const int i = layers[k];
    const CpuLayer& L = kLayers[i];
    char name[64];
    std::snprintf(name, sizeof(name), "%d: %lld %lld %lld %lld %lld %lld%s", i, (long long)L.C, (long long)L.H,
                  (long long)L.K, (long long)L.R, (long long)L.stride, (long long)L.pad,
                  L.D > 0 ? (" D" + std::to_string(L.D)).c_str() : "");
    const Timing pt = peer.ok ? peer.layers[int(k)] : Timing();
    std::printf("%-36s %s %s %s %s   %s %s %s %s\n", name, Ms(ours[k].fwd_ms).c_str(), Ms(pt.fwd_ms).c_str(),
                Ratio(ours[k].fwd_ms, pt.fwd_ms).c_str(), Gflops(fwd_gflop[k], ours[k].fwd_ms).c_str(),
                Ms(ours[k].bwd_ms).c_str(), Ms(pt.bwd_ms).c_str(), Ratio(ours[k].bwd_ms, pt.bwd_ms).c_str(),
                Gflops(bwd_gflop[k], ours[k].bwd_ms).c_str());
    sum.fwd_ms += ours[k].fwd_ms;
    sum.bwd_ms += ours[k].bwd_ms;
    fwd_total += fwd_gflop[k];
    bwd_total += bwd_gflop[k];
  }
  const Timing pt = peer.ok ? peer.total : Timing();
  std::printf("%-36s %s %s %s %s   %s %s %s %s\n", "total (sum of layers)", Ms(sum.fwd_ms).c_str(),
              Ms(pt.fwd_ms).c_str(), Ratio(sum.fwd_ms, pt.fwd_ms).c_str(), Gflops(fwd_total, sum.fwd_ms).c_str(),
              Ms(sum.bwd_ms).c_str(), Ms(pt.bwd_ms).c_str(), Ratio(sum.bwd_ms, pt.bwd_ms).c_str(),
              Gflops(bwd_total, sum.bwd_ms).c_str());
  std::printf("  work: forward %.2f GFLOP, backward %.2f GFLOP; peer GFLOP/s: forward %s, backward %s\n", fwd_total,
              bwd_total, Gflops(fwd_total, pt.fwd_ms).c_str(), Gflops(bwd_total, pt.bwd_ms).c_str());
  std::printf("ratio = our time / peer time (below 1: ours is faster)%s\n",
              ok ? "" : "  -- RESULT CHECK FAILED: these timings are of wrong results");
  std::printf("conv_cpu_total threads %d fwd_ms %.6f bwd_ms %.6f peer_fwd_ms %.6f peer_bwd_ms %.6f\n", threads,
              sum.fwd_ms, sum.bwd_ms, peer.ok ? pt.fwd_ms : -1.0, peer.ok ? pt.bwd_ms : -1.0);
  std::fflush(stdout);
  return ok;
}

// A comma list of integers in [lo, hi], for the option `flag`.
// C:H:K:R:stride:pad[:D], the peer's form of a layer (CpuLayer::Spec).
CpuLayer ParseLayer(const std::string& spec) {
  long long v[7] = {0, 0, 0, 0, 0, 0, 0};
  int used6 = -1, used7 = -1;  // characters read by the 6- and the 7-field forms (-1: that form did not match)
  std::sscanf(spec.c_str(), "%lld:%lld:%lld:%lld:%lld:%lld%n:%lld%n", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &used6,
              &v[6], &used7);
  const int whole = int(spec.size());
  TE_CHECK((used7 == whole || (used6 == whole && used7 < 0)) && v[0] > 0 && v[1] > 0 && v[2] > 0 && v[3] > 0 && v[4] > 0 && v[5] >= 0 && v[6] >= 0,
           "--layer ", spec, ": expected C:H:K:R:stride:pad[:D], positive (pad >= 0, D >= 0)");
  return CpuLayer(Layer{v[0], v[1], v[2], v[3], v[4], v[5]}, v[6]);
}

std::vector<int> ParseList(const std::string& flag, const std::string& s, int lo, int hi) {
  std::vector<int> v;
  size_t pos = 0;
  while (pos <= s.size()) {
    const size_t comma = std::min(s.find(',', pos), s.size());
    const std::string item = s.substr(pos, comma - pos);
    char* end = nullptr;
    const long t = std::strtol(item.c_str(), &end, 10);
    TE_CHECK(!item.empty() && *end == '\0' && t >= lo && t <= hi, flag, " ", s, ": each item must be an integer in [",
             lo, ", ", hi, "], items separated by commas");
    v.push_back(int(t));
    pos = comma + 1;
  }
  return v;
}

}  // namespace

int main(int argc, char** argv) {
  index_t n = 8;
  int reps = 10, warmup = 2;
  double workspace_mb = 1024;
  bool split = false, do_peer = true;
  std::string threads_arg = std::to_string(GetNumThreads()), layers_arg, stat_arg = "median";
  std::vector<std::string> layer_specs;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--threads" && i + 1 < argc) threads_arg = argv[++i];
    else if (a == "--n" && i + 1 < argc) n = std::atoll(argv[++i]);
    else if (a == "--reps" && i + 1 < argc) reps = std::atoi(argv[++i]);
    else if (a == "--warmup" && i + 1 < argc) warmup = std::atoi(argv[++i]);
    else if (a == "--workspace-mb" && i + 1 < argc) workspace_mb = std::atof(argv[++i]);
    else if (a == "--split") split = true;
    else if (a == "--no-peer") do_peer = false;
    else if (a == "--layers" && i + 1 < argc) layers_arg = argv[++i];
    else if (a == "--layer" && i + 1 < argc) layer_specs.push_back(argv[++i]);
    else if (a == "--stat" && i + 1 < argc) stat_arg = argv[++i];
    else if (a == "--algorithm" && i + 1 < argc) g_algorithm = argv[++i];
    else {
      std::fprintf(stderr,
                   "usage: %s [--threads 16[,2...]] [--n 8] [--reps 10] [--warmup 2] [--workspace-mb 1024] [--split] "
                   "[--no-peer] [--layers 0,3] [--layer C:H:K:R:stride:pad[:D] ...] [--stat median|min] [--algorithm NAME]\n",
                   argv[0]);
      return 2;
    }
  }
  try {
    TE_CHECK(n >= 1 && reps >= 1 && warmup >= 1, "need --n, --reps and --warmup >= 1 (got ", n, ", ",
             reps, ", ", warmup, ")");
    const std::vector<int> thread_counts = ParseList("--threads", threads_arg, 1, 1 << 16);
    if (!layer_specs.empty()) {
      kLayers.clear();
      for (const std::string& spec : layer_specs) kLayers.push_back(ParseLayer(spec));
    }
    std::vector<int> layers;
    if (layers_arg.empty()) {
      for (size_t i = 0; i < kLayers.size(); ++i) layers.push_back(int(i));
    } else {
      layers = ParseList("--layers", layers_arg, 0, int(kLayers.size()) - 1);
    }
    TE_CHECK(stat_arg == "median" || stat_arg == "min", "--stat ", stat_arg, ": expected median or min");
    g_statistic = stat_arg == "min" ? Statistic::kMin : Statistic::kMedian;
    std::printf("conv_cpu_bench: host CPU, N=%lld, fp32 NCHW, no bias, workspace cap %.0f MB, %d warm-up + %d reps "
                "(%s), threads %s\n",
                static_cast<long long>(n), workspace_mb, warmup, reps, stat_arg.c_str(), threads_arg.c_str());
    // How the BLAS threads (its own pool or OpenMP's) and idle OpenMP threads (spinning or sleeping) behave
    // decides how well im2col's OpenMP loops and the BLAS calls share the cores: say which ones ran.
    const int blas_parallel = openblas_get_parallel();
    const char* wait_policy = std::getenv("OMP_WAIT_POLICY");
    std::printf("  OpenBLAS %s (threading: %s), OMP_WAIT_POLICY=%s\n", openblas_get_config(),
                blas_parallel == 0 ? "none" : blas_parallel == 1 ? "pthreads" : "OpenMP",
                wait_policy ? wait_policy : "(unset)");
    bool ok = true;
    for (int t : thread_counts) ok = RunAtThreads(t, layers, n, workspace_mb, warmup, reps, split, do_peer) && ok;
    if (!ok) {
      std::fprintf(stderr, "conv_cpu_bench: results did not match the float64 reference\n");
      return 1;
    }
  } catch (const Error& e) {
    std::fprintf(stderr, "conv_cpu_bench: %s\n", e.what());
    return 1;
  }
  return 0;
}
