// bench/conv_bench.cu — ops/convolution.h on the GPU against PyTorch / cuDNN, measured in this one run:
//   1. the 20 distinct ResNet-50 layers (bench/resnet50_layers.txt: C H K R stride pad), N = 32: forward, and
//      backward (data + weight gradients together), per layer and summed, with the algorithm the library
//      chose for each pass (read from the selection log, ops/conv_select.h);
//   2. the 3-D case: a 1x1x256x256x256 input, 8 filters 7x7x7, no padding: forward and backward (skipped with
//      a note when the library refuses it in the chosen mode).
// Both sides use the same element type and math (--dtype) and layout (--layout):
//   fp32   float, TF32 off (the default)   ours: Stream::set_tf32(false); peer: allow_tf32 = False
//   tf32   float, TF32 tensor cores        ours: Stream::set_tf32(true);  peer: allow_tf32 = True
//   tf32x3 float as three TF32 products    ours: Stream::set_tf32x3(true); peer: allow_tf32 = False, the
//          per product (fp32's accuracy)   accuracy it stands in for (bench/conv_accuracy measures its error)
//   fp16   half_t / torch.float16          bf16   bf16_t / torch.bfloat16
//   nchw   data (N,C,H,W), weight (K,C,R,S), out (N,K,P,Q) (the default)
//   nhwc   data (N,H,W,C), weight (K,R,S,C), out (N,P,Q,K); the peer's tensors are torch.channels_last,
//          which is how cuDNN runs NHWC.
// --volume runs the imaging study's sweep instead: a 1x1xS^3 input (S = --size, 256) convolved with 1, 2, 4,
// 8, 16 and 32 filters of 7x7x7 (--filters), no padding, forward and backward, each forward's GFLOP/s and
// its share of the FP32 FMA peak that a pure-FMA kernel reaches in the same run, beside cuDNN's.
// --u8 reads the input as uint8_t intensities (ConvolutionForwardFixed, float output; forward only),
// against cuDNN in fp32.
// --epilogue times the forward with its bias and relu instead of forward and backward: ours fused into the
// convolution (<tensorexpr/ops/conv_epilogue.h>: relu(conv + broadcast(bias))) against cuDNN's convolution
// followed by PyTorch's bias add and relu, and, in the second pair of columns, each side's convolution
// alone (our fused / our plain is the epilogue's cost). No 3-D case then.
// The peer (bench/conv_peer.py: F.conv2d / conv3d and aten.convolution_backward, cudnn.benchmark=True) runs
// after ours, as a separate process, on the same GPU; its lines are parsed and each row prints ours / peer
// as a time ratio (below 1: we are faster). --svg writes those ratios as a bar chart, --csv the table.
// --split also times the data gradient alone and the weight gradient alone, on both sides, and prints them
// as a second table (where a backward loses, and to which pass).
// Timing: CUDA events around each repetition on one stream, after warm-up (which also sizes the workspace);
// the median is reported. Nothing checks the results: tests/ does that.
//
// Usage: conv_bench [--dtype fp32|tf32|tf32x3|fp16|bf16] [--layout nchw|nhwc] [--n 32] [--reps 20]
//                   [--workspace-mb 2048] [--layers path] [--no-3d] [--no-peer] [--epilogue] [--svg path]
//                   [--csv path] [--algorithm NAME] [--split]
//        conv_bench --volume [--filters 1,2,4,8,16,32] [--size 256] [--dtype ...] [--u8] [--reps 5] [--svg path]
// Run from the repository root or from bench/ (or set TE_PEER_SCRIPT / TE_CONV_LAYERS to the files).
// TE_LOG=conv still prints the whole selection log to stderr.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <string>
#include <vector>
#include <sys/stat.h>
#include <tensorexpr/cuda/tensorexpr_cuda.cuh>
#include <tensorexpr/ops/conv_epilogue.h>
#include <tensorexpr/ops/conv_fixed.h>
#include <tensorexpr/ops/conv_select.h>
#include <tensorexpr/ops/convolution.h>
#include "conv_layers.h"
#include "conv_run.cuh"

namespace {
using namespace tensorexpr;
using namespace conv_layers;
using namespace conv_run;

struct Timing {
  double fwd_ms = -1, bwd_ms = -1;
  double data_ms = -1, weight_ms = -1;  // --split: the data and the weight gradient timed apart
};

// The element type and math of a run (--dtype).
enum class Precision { kFp32, kTf32, kTf32x3, kFp16, kBf16 };

const char* PrecisionFlag(Precision p) {
  switch (p) {
    case Precision::kFp32: return "fp32";
    case Precision::kTf32: return "tf32";
    case Precision::kTf32x3: return "tf32x3";
    case Precision::kFp16: return "fp16";
    case Precision::kBf16: return "bf16";
  }
  return "?";
}

// For the header line; fp32's text is the one this benchmark has always printed.
const char* PrecisionText(Precision p) {
  switch (p) {
    case Precision::kFp32: return "fp32, TF32 off";
    case Precision::kTf32: return "fp32, TF32 on";
    case Precision::kTf32x3: return "fp32 via 3xTF32";
    case Precision::kFp16: return "fp16";
    case Precision::kBf16: return "bf16";
  }
  return "?";
}

bool ParsePrecision(const std::string& s, Precision* p) {
  for (Precision c : {Precision::kFp32, Precision::kTf32, Precision::kTf32x3, Precision::kFp16, Precision::kBf16})
    if (s == PrecisionFlag(c)) {
      *p = c;
      return true;
    }
  return false;
}

// The stream's float math for a precision (16-bit types ignore it).
ops::ConvMath FloatMath(Precision p) {
  return p == Precision::kTf32 ? ops::ConvMath::kTF32 : p == Precision::kTf32x3 ? ops::ConvMath::kTF32x3 : ops::ConvMath::kStrict;
}

bool ParseLayout(const std::string& s, ops::Layout* l) {
  if (s != "nchw" && s != "nhwc") return false;
  *l = s == "nhwc" ? ops::Layout::kNHWC : ops::Layout::kNCHW;
  return true;
}

std::string LowerCase(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

struct Options {
  index_t n = 32;
  int reps = 20;
  double workspace_mb = 2048;
  bool do3d = true, do_peer = true, epilogue = false, volume = false, split = false;
  std::vector<index_t> filters = {1, 2, 4, 8, 16, 32};  // --volume: the sweep's filter counts
  index_t size = 256;                                  // --volume: the input's extent
  bool u8 = false;                                     // --volume: uint8_t input
  Precision precision = Precision::kFp32;
  ops::Layout layout = ops::Layout::kNCHW;
  std::string layers_path, svg_path, csv_path;
  std::string algorithm;  // --algorithm: forced on every layer ("" : the library's choice)
};

void PrintUsage(FILE* to, const char* argv0) {
  std::fprintf(to,
               "usage: %s [--dtype fp32|tf32|tf32x3|fp16|bf16] [--layout nchw|nhwc] [--n 32] [--reps 20]\n"
               "          [--workspace-mb 2048] [--layers path] [--no-3d] [--no-peer] [--epilogue] [--svg path]\n"
               "          [--csv path] [--algorithm NAME] [--split]\n"
               "       %s --volume [--filters 1,2,4,8,16,32] [--size 256] [--dtype ...] [--u8] [--reps 5] [--svg path]\n"
               "  --dtype      fp32: float, TF32 off (default); tf32: float on TF32 tensor cores; tf32x3: float via\n"
               "               three TF32 products (against cuDNN in strict fp32); fp16, bf16\n"
               "  --layout     nchw (default) or nhwc (channels last; the peer uses torch.channels_last)\n"
               "  --epilogue   conv + bias + relu (ours fused) and the convolution alone, instead of forward and backward\n"
               "  --svg path   a bar chart of the per-layer ratios (ours / peer), forward and backward\n"
               "  --csv path   the per-layer table: times, ratios and the algorithms chosen\n"
               "  --split      also time the data gradient and the weight gradient apart (a second table)\n"
               "  --volume     the imaging sweep: 1 x size^3 input, each filter count of --filters 7x7x7 filters,\n"
               "               GFLOP/s and share of the measured FP32 FMA peak\n"
               "  --u8         (--volume) uint8_t input intensities, float output, forward only; the peer runs fp32\n"
               "  --algorithm  force this convolution algorithm on every layer (layers and passes it cannot run: -)\n",
               argv0, argv0);
}

// "1,2,4" as positive counts; false for anything else.
bool ParseCounts(const std::string& s, std::vector<index_t>* counts) {
  std::vector<index_t> v;
  size_t at = 0;
  while (at <= s.size()) {
    const size_t end = std::min(s.find(',', at), s.size());
    const std::string item = s.substr(at, end - at);
    char* stop = nullptr;
    const long long n = std::strtoll(item.c_str(), &stop, 10);
    if (item.empty() || *stop != '\0' || n <= 0 || n > (1 << 20)) return false;
    v.push_back(n);
    at = end + 1;
  }
  *counts = v;
  return !v.empty();
}

// Fills `o` from the command line; returns -1 to go on, otherwise the exit status (help, or a bad flag).
int ParseArgs(int argc, char** argv, Options* o) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const bool has_value = i + 1 < argc;
    if (a == "--n" && has_value) o->n = std::atoll(argv[++i]);
    else if (a == "--reps" && has_value) o->reps = std::atoi(argv[++i]);
    else if (a == "--workspace-mb" && has_value) o->workspace_mb = std::atof(argv[++i]);
    else if (a == "--layers" && has_value) o->layers_path = argv[++i];
    else if (a == "--dtype" && has_value && ParsePrecision(argv[i + 1], &o->precision)) ++i;
    else if (a == "--layout" && has_value && ParseLayout(argv[i + 1], &o->layout)) ++i;
    else if (a == "--svg" && has_value) o->svg_path = argv[++i];
    else if (a == "--csv" && has_value) o->csv_path = argv[++i];
    else if (a == "--no-3d") o->do3d = false;
    else if (a == "--no-peer") o->do_peer = false;
    else if (a == "--epilogue") o->epilogue = true, o->do3d = false;
    else if (a == "--split") o->split = true;
    else if (a == "--volume") o->volume = true;
    else if (a == "--u8") o->u8 = true;
    else if (a == "--algorithm" && has_value) o->algorithm = argv[++i];
    else if (a == "--filters" && has_value && ParseCounts(argv[i + 1], &o->filters)) ++i;
    else if (a == "--size" && has_value && std::atoll(argv[i + 1]) >= 7) o->size = std::atoll(argv[++i]);
    else if (a == "--help" || a == "-h") {
      PrintUsage(stdout, argv[0]);
      return 0;
    } else {
      const bool value_follows = has_value && argv[i + 1][0] != '-';
      std::fprintf(stderr, "conv_bench: cannot use %s%s%s\n", a.c_str(), value_follows ? " " : "",
                   value_follows ? argv[i + 1] : "");
      PrintUsage(stderr, argv[0]);
      return 2;
    }
  }
  return -1;
}

// Median milliseconds of `reps` runs of f on stream s, after `warmup` runs.
double MedianMs(cudaStream_t s, int warmup, int reps, const std::function<void()>& f) {
  cudaEvent_t start, stop;
  TE_CUDA_CHECK(cudaEventCreate(&start));
  TE_CUDA_CHECK(cudaEventCreate(&stop));
  for (int w = 0; w < warmup; ++w) f();
  TE_CUDA_CHECK(cudaStreamSynchronize(s));
  std::vector<float> times;
  for (int r = 0; r < reps; ++r) {
    TE_CUDA_CHECK(cudaEventRecord(start, s));
    f();
    TE_CUDA_CHECK(cudaEventRecord(stop, s));
    TE_CUDA_CHECK(cudaEventSynchronize(stop));
    float ms = 0;
    TE_CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
    times.push_back(ms);
  }
  TE_CUDA_CHECK(cudaEventDestroy(start));
  TE_CUDA_CHECK(cudaEventDestroy(stop));
  std::sort(times.begin(), times.end());
  const size_t m = times.size() / 2;
  return times.size() % 2 ? times[m] : 0.5 * (times[m - 1] + times[m]);
}

// Times one convolution, forward and backward (data + weight), no bias; with `epilogue`, forward with
// relu(conv + bias) as its epilogue (fwd_ms) and forward alone (bwd_ms).
template <typename DType, int dim>
Timing TimeConv(Stream<gpu>* stream, const ops::ConvolutionParam& p, const Shape<dim>& xshape, int warmup, int reps,
                bool epilogue = false, bool split = false) {
  const ops::ConvShapes shapes = ops::InferConvShapes(p, Dims(xshape));
  Shape<dim> yshape, wshape;
  for (int i = 0; i < dim; ++i) yshape[i] = shapes.out[i], wshape[i] = shapes.weight[i];
  TensorContainer<gpu, dim, DType> x, w, y, dy, dx, dw;
  TensorContainer<gpu, 1, DType> b;  // the epilogue's bias; unused otherwise (no_bias)
  for (auto* t : {&x, &w, &y, &dy, &dx, &dw}) t->set_stream(stream);
  b.set_stream(stream);
  x.Resize(xshape), dx.Resize(xshape), y.Resize(yshape), dy.Resize(yshape), w.Resize(wshape), dw.Resize(wshape);
  FillHash(x.view(), 1u), FillHash(w.view(), 2u), FillHash(dy.view(), 3u);
  const cudaStream_t s = stream->stream();
  Timing t;
  if constexpr (dim == 4) {
    if (epilogue) {
      b.Resize(Shape1(p.num_filter));
      FillHash(b.view(), 4u);
      const auto conv = ops::conv_output(y.view());
      const bool last = p.layout == ops::Layout::kNHWC;
      t.fwd_ms = MedianMs(s, warmup, reps, [&] {
        if (last) {
          ops::ConvolutionForward(p, x.view(), w.view(), kWriteTo, y.view(),
                                  expr::F<op::relu>(conv + expr::broadcast<3>(b.view(), y.shape_)));
        } else {
          ops::ConvolutionForward(p, x.view(), w.view(), kWriteTo, y.view(),
                                  expr::F<op::relu>(conv + expr::broadcast<1>(b.view(), y.shape_)));
        }
      });
      t.bwd_ms = MedianMs(s, warmup, reps, [&] { ops::ConvolutionForward(p, x.view(), w.view(), b.view(), kWriteTo, y.view()); });
      stream->Wait();
      return t;
    }
  }
  t.fwd_ms = MedianMs(s, warmup, reps, [&] { ops::ConvolutionForward(p, x.view(), w.view(), b.view(), kWriteTo, y.view()); });
  try {
    t.bwd_ms = MedianMs(s, warmup, reps, [&] {
      ops::ConvolutionBackward(p, dy.view(), x.view(), w.view(), kWriteTo, dx.view(), kWriteTo, dw.view(), kNullOp, b.view());
    });
    if (split) {
      t.data_ms = MedianMs(s, warmup, reps, [&] {
        ops::ConvolutionBackward(p, dy.view(), x.view(), w.view(), kWriteTo, dx.view(), kNullOp, dw.view(), kNullOp, b.view());
      });
      t.weight_ms = MedianMs(s, warmup, reps, [&] {
        ops::ConvolutionBackward(p, dy.view(), x.view(), w.view(), kNullOp, dx.view(), kWriteTo, dw.view(), kNullOp, b.view());
      });
    }
  } catch (const Error& e) {
    if (p.algorithm.empty()) throw;
    std::printf("  (backward not timed: %s)\n", e.what());  // a forced algorithm without every backward pass
  }
  stream->Wait();
  return t;
}

// Everything measured on our side.
struct OursResult {
  std::vector<Timing> layers;
  std::vector<ChosenAlgorithms> chosen;
  double gflop_total = 0;
  Timing conv3d;
  ChosenAlgorithms chosen3d;
  std::string skipped3d;  // why the 3-D case did not run, when it did not
};

ops::ConvolutionParam Conv3dParam(const Options& o) {
  ops::ConvolutionParam p;
  p.kernel = {7, 7, 7};
  p.num_filter = 8;
  p.no_bias = true;
  p.workspace = o.workspace_mb;
  p.layout = o.layout;
  return p;
}

// Our side of the whole run, in DType, printing a line per layer as it goes.
template <typename DType>
OursResult MeasureOurs(const Options& o, const std::vector<Layer>& layers) {
  OursResult r;
  Stream<gpu>* stream = NewStream<gpu>(true);
  SetFloatMath(stream, FloatMath(o.precision));
  for (size_t i = 0; i < layers.size(); ++i) {
    const Layer& L = layers[i];
    ops::ConvolutionParam p = LayerParam(L, o.workspace_mb, o.layout);
    p.algorithm = o.algorithm;
    const Shape<4> xshape = DataShape<4>(o.layout, o.n, L.C, L.H);
    ChosenAlgorithms chosen;
    Timing t;
    try {
      ChoiceRecorder recorder(&chosen);
      t = TimeConv<DType>(stream, p, xshape, 3, o.reps, o.epilogue, o.split);
    } catch (const Error& e) {
      if (o.algorithm.empty()) throw;
      std::printf("ours layer %2zu: %s\n", i, e.what());  // the forced algorithm cannot run this layer
      r.layers.push_back(Timing());
      r.chosen.push_back(chosen);
      continue;
    }
    const double gflop = ops::InferConvCost(p, Dims(xshape), sizeof(DType)).forward_flops / 1e9;
    r.gflop_total += gflop;
    std::printf("ours layer %2zu  C %4lld H %3lld K %4lld R %lld s %lld p %lld:  fwd %8.3f ms (%5.1f TFLOP/s)  bwd %8.3f ms\n",
                i, (long long)L.C, (long long)L.H, (long long)L.K, (long long)L.R, (long long)L.stride,
                (long long)L.pad, t.fwd_ms, gflop / t.fwd_ms, t.bwd_ms);
    if (o.split) std::printf("  [data alone %.3f ms, weight alone %.3f ms]\n", t.data_ms, t.weight_ms);
    std::fflush(stdout);
    r.layers.push_back(t);
    r.chosen.push_back(chosen);
  }
  if (o.do3d) {
    const ops::ConvolutionParam p = Conv3dParam(o);
    const Shape<5> xshape = DataShape<5>(o.layout, 1, 1, 256);
    // Only fp32 NCHW is known to run here; in another mode the library may refuse it, which is a note, not
    // the end of the run.
    try {
      ChoiceRecorder recorder(&r.chosen3d);
      r.conv3d = TimeConv<DType>(stream, p, xshape, 1, std::max(3, o.reps / 4));
      const double gflop = ops::InferConvCost(p, Dims(xshape), sizeof(DType)).forward_flops / 1e9;
      std::printf("ours 3-D 1x1x256^3, 8 filters 7^3:  fwd %8.3f ms (%5.1f TFLOP/s)  bwd %8.3f ms\n", r.conv3d.fwd_ms,
                  gflop / r.conv3d.fwd_ms, r.conv3d.bwd_ms);
    } catch (const Error& e) {
      r.conv3d = Timing();
      r.skipped3d = e.what();
      std::printf("ours 3-D 1x1x256^3, 8 filters 7^3: skipped in %s %s: %s\n", PrecisionFlag(o.precision),
                  ops::LayoutName(o.layout), e.what());
    }
  }
  ops::ReleaseWorkspace<gpu>(stream);
  stream->Wait();
  DeleteStream(stream);
  return r;
}

OursResult MeasureOursIn(const Options& o, const std::vector<Layer>& layers) {
  switch (o.precision) {
    case Precision::kFp16: return MeasureOurs<half_t>(o, layers);
    case Precision::kBf16: return MeasureOurs<bf16_t>(o, layers);
    default: return MeasureOurs<float>(o, layers);  // fp32, tf32, tf32x3: the stream's math differs
  }
}

// ---- --volume: the imaging study's sweep -------------------------------------------------------------

// 16 independent multiply-add chains per thread, `iters` rounds: the FP32 FMA peak (no memory traffic).
// m and c come from the host, so the compiler cannot fold the chains; the store keeps them alive.
__global__ void FmaPeakKernel(float* sink, int iters, float m, float c) {
  float a[16];
#pragma unroll
  for (int i = 0; i < 16; ++i) a[i] = threadIdx.x * 1e-3f + i;
  for (int it = 0; it < iters; ++it)
#pragma unroll
    for (int i = 0; i < 16; ++i) a[i] = fmaf(a[i], m, c);
  float s = 0;
#pragma unroll
  for (int i = 0; i < 16; ++i) s += a[i];
  if (s == 1234.5f) sink[blockIdx.x] = s;
}

// The measured FP32 FMA peak in GFLOP/s (2 flops per multiply-add), median of 5 runs.
double MeasureFmaPeakGflops() {
  cudaDeviceProp prop;
  TE_CUDA_CHECK(cudaGetDeviceProperties(&prop, cuda::CurrentDevice()));
  const int threads = 256, blocks = prop.multiProcessorCount * 8, iters = 1 << 14;
  TensorContainer<gpu, 1, float> sink(Shape1(blocks));
  const double ms = MedianMs(nullptr, 2, 5, [&] {
    FmaPeakKernel<<<blocks, threads>>>(sink.dptr_, iters, 0.999f, 1e-4f);
    TE_CUDA_CHECK_LAUNCH("FmaPeakKernel");
  });
  return 2.0 * 16 * iters * double(threads) * blocks / ms / 1e6;
}

ops::ConvolutionParam VolumeParam(const Options& o, index_t filters) {
  ops::ConvolutionParam p = Conv3dParam(o);
  p.num_filter = filters;
  return p;
}

// The forward of p on uint8_t intensities (Q8.0) into float: fwd_ms only.
Timing TimeConvU8(Stream<gpu>* stream, const ops::ConvolutionParam& p, const Shape<5>& xshape, int warmup, int reps) {
  const ops::ConvShapes shapes = ops::InferConvShapes(p, Dims(xshape));
  Shape<5> yshape, wshape;
  for (int i = 0; i < 5; ++i) yshape[i] = shapes.out[i], wshape[i] = shapes.weight[i];
  TensorContainer<gpu, 5, uint8_t> x;
  TensorContainer<gpu, 5, float> w, y;
  TensorContainer<gpu, 1, float> b;
  for (auto* t : {&w, &y}) t->set_stream(stream);
  x.set_stream(stream), b.set_stream(stream);
  x.Resize(xshape), w.Resize(wshape), y.Resize(yshape);
  FillHash(w.view(), 2u);
  Assign(x.view().FlatTo2D(), kWriteTo, expr::scalar<uint8_t>(uint8_t(93)));
  Timing t;
  t.fwd_ms = MedianMs(stream->stream(), warmup, reps, [&] {
    ops::ConvolutionForwardFixed(p, x.view(), ops::FixedPoint{0}, w.view(), b.view(), kWriteTo, y.view());
  });
  stream->Wait();
  return t;
}

// Our side of the sweep, one filter count at a time; forward GFLOP per count into gflop.
template <typename DType>
std::vector<Timing> MeasureVolume(const Options& o, std::vector<ChosenAlgorithms>* chosen, std::vector<double>* gflop) {
  std::vector<Timing> r;
  Stream<gpu>* stream = NewStream<gpu>(true);
  SetFloatMath(stream, FloatMath(o.precision));
  const Shape<5> xshape = DataShape<5>(o.layout, 1, 1, o.size);
  for (index_t k : o.filters) {
    const ops::ConvolutionParam p = VolumeParam(o, k);
    ChosenAlgorithms c;
    Timing t;
    {
      ChoiceRecorder recorder(&c);
      t = o.u8 ? TimeConvU8(stream, p, xshape, 1, o.reps) : TimeConv<DType>(stream, p, xshape, 1, o.reps);
    }
    const double g = ops::InferConvCost(p, Dims(xshape), sizeof(DType)).forward_flops / 1e9;
    std::printf("ours %2lld filters: fwd %9.3f ms (%7.1f GFLOP/s)  bwd %9.3f ms\n", (long long)k, t.fwd_ms,
                g / t.fwd_ms * 1e3, t.bwd_ms);
    std::fflush(stdout);
    r.push_back(t), chosen->push_back(c), gflop->push_back(g);
    ops::ReleaseWorkspace<gpu>(stream);
  }
  stream->Wait();
  DeleteStream(stream);
  return r;
}

// Runs the peer script; returns its per-layer timings (by index), total and 3-D lines, or with --volume
// the sweep's timings by filter count.
struct PeerResult {
  std::map<int, Timing> layers, volume;
  Timing total, conv3d;
  bool ok = false;
};
PeerResult RunPeer(const std::string& script, const Options& o) {
  PeerResult r;
  std::string filters;
  for (index_t k : o.filters) filters += (filters.empty() ? "" : ",") + std::to_string(k);
  const std::string what = o.volume ? " --volume-filters " + filters + " --volume-size " + std::to_string(o.size)
                                    : " --layers " + o.layers_path + " --n " + std::to_string(o.n);
  // 3xTF32 stands in for strict fp32, so that is what the peer runs.
  const char* peer_dtype = o.precision == Precision::kTf32x3 ? "fp32" : PrecisionFlag(o.precision);
  const std::string cmd = "python3 " + script + what + " --reps " + std::to_string(o.reps) + " --dtype " + peer_dtype +
                          " --layout " + LowerCase(ops::LayoutName(o.layout)) +
                          (o.do3d ? "" : " --no-3d") + (o.epilogue ? " --epilogue" : "") + (o.split ? " --split" : "") +
                          " 2>&1";
  std::printf("peer: %s\n", cmd.c_str());
  std::fflush(stdout);
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return r;
  char line[2048];
  while (std::fgets(line, sizeof(line), p)) {
    std::printf("  | %s", line);
    int idx;
    long long c, h, k, rr, s, pad;
    double f, b, d = -1, w = -1;
    if (std::sscanf(line, "peer_conv_layer %d %lld %lld %lld %lld %lld %lld fwd_ms %lf bwd_ms %lf data_ms %lf weight_ms %lf",
                    &idx, &c, &h, &k, &rr, &s, &pad, &f, &b, &d, &w) >= 9) {
      r.layers[idx] = {f, b, d, w};
      r.ok = true;
    } else if (std::sscanf(line, "peer_conv_total fwd_ms %lf bwd_ms %lf", &f, &b) == 2) {
      r.total = {f, b};
    } else if (std::sscanf(line, "peer_conv3d fwd_ms %lf bwd_ms %lf", &f, &b) == 2) {
      r.conv3d = {f, b};
    } else if (std::sscanf(line, "peer_conv3d_volume %d fwd_ms %lf bwd_ms %lf", &idx, &f, &b) == 3) {
      r.volume[idx] = {f, b};
      r.ok = true;
    }
  }
  const int status = pclose(p);
  if (status != 0) std::printf("  (peer exited with status %d)\n", status);
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

// One row of the table: times and ratios, then the algorithms when there are any.
void PrintRow(const std::string& name, const Timing& ours, const Timing& peer, const std::string& algorithms) {
  std::printf("%-44s %s %s %s   %s %s %s%s%s\n", name.c_str(), Ms(ours.fwd_ms).c_str(), Ms(peer.fwd_ms).c_str(),
              Ratio(ours.fwd_ms, peer.fwd_ms).c_str(), Ms(ours.bwd_ms).c_str(), Ms(peer.bwd_ms).c_str(),
              Ratio(ours.bwd_ms, peer.bwd_ms).c_str(), algorithms.empty() ? "" : "   ", algorithms.c_str());
}

// The table's name of layer i: "i: C H K R stride pad".
std::string LayerName(size_t i, const Layer& L) {
  char name[64];
  std::snprintf(name, sizeof(name), "%2zu: %lld %lld %lld %lld %lld %lld", i, (long long)L.C, (long long)L.H,
                (long long)L.K, (long long)L.R, (long long)L.stride, (long long)L.pad);
  return name;
}

// --split: the backward's two passes apart, per layer and summed, ours against the peer's.
void PrintSplitTable(const std::vector<Layer>& layers, const OursResult& ours, const PeerResult& peer) {
  std::printf("\n%-44s %9s %9s %6s   %9s %9s %6s\n", "layer (C H K R stride pad)", "data ours", "peer", "ratio",
              "wgt ours", "peer", "ratio");
  double sums[4] = {0, 0, 0, 0};
  for (size_t i = 0; i < layers.size(); ++i) {
    const Timing& t = ours.layers[i];
    const Timing pt = peer.layers.count(int(i)) ? peer.layers.at(int(i)) : Timing();
    std::printf("%-44s %s %s %s   %s %s %s   %s / %s\n", LayerName(i, layers[i]).c_str(), Ms(t.data_ms).c_str(),
                Ms(pt.data_ms).c_str(), Ratio(t.data_ms, pt.data_ms).c_str(), Ms(t.weight_ms).c_str(),
                Ms(pt.weight_ms).c_str(), Ratio(t.weight_ms, pt.weight_ms).c_str(),
                ours.chosen[i].data_grad.empty() ? "(cached)" : ours.chosen[i].data_grad.c_str(),
                ours.chosen[i].weight_grad.empty() ? "(cached)" : ours.chosen[i].weight_grad.c_str());
    const double v[4] = {t.data_ms, pt.data_ms, t.weight_ms, pt.weight_ms};
    for (int k = 0; k < 4; ++k) sums[k] += std::max(0.0, v[k]);
  }
  std::printf("%-44s %s %s %s   %s %s %s\n", "total (sum of layers)", Ms(sums[0]).c_str(), Ms(sums[1]).c_str(),
              Ratio(sums[0], sums[1]).c_str(), Ms(sums[2]).c_str(), Ms(sums[3]).c_str(), Ratio(sums[2], sums[3]).c_str());
  std::printf("conv_bench_split data_ms %.6f weight_ms %.6f peer_data_ms %.6f peer_weight_ms %.6f\n", sums[0], sums[2],
              sums[1], sums[3]);
}

// One group of bars in the chart: its label and the two times, ours and the peer's.
struct ChartGroup {
  std::string label;
  Timing ours, peer;
};

double RatioOf(double ours, double peer) { return ours > 0 && peer > 0 ? ours / peer : 0; }

std::string XmlEscape(const std::string& s) {
  std::string r;
  for (char c : s) {
    if (c == '&') r += "&amp;";
    else if (c == '<') r += "&lt;";
    else if (c == '>') r += "&gt;";
    else if (c == '"') r += "&quot;";
    else r += c;
  }
  return r;
}

// A self-contained SVG bar chart of ours / peer per group, forward and backward side by side. The axis is
// log2, so the bars grow from the 1.0 line up (ours slower) or down (ours faster) and 2x either way is the
// same height. Returns false when the file cannot be written.
bool WriteRatioSvg(const std::string& path, const std::string& title, const std::vector<ChartGroup>& groups,
                   bool epilogue) {
  // The axis spans whole powers of two, at least 0.5 to 2, with room past the longest bars for their values.
  double lo = 1, hi = 1;
  for (const ChartGroup& g : groups)
    for (double r : {RatioOf(g.ours.fwd_ms, g.peer.fwd_ms), RatioOf(g.ours.bwd_ms, g.peer.bwd_ms)})
      if (r > 0) lo = std::min(lo, r), hi = std::max(hi, r);
  const int ylo = std::min(-1, static_cast<int>(std::floor(std::log2(lo / 1.4)))),
            yhi = std::max(1, static_cast<int>(std::ceil(std::log2(hi * 1.4))));
  const double left = 60, top = 76, plot_h = 340, group_w = 40, bar_w = 14, bottom = 130;
  const double plot_w = group_w * groups.size(), width = std::max(720.0, left + plot_w + 30), height = top + plot_h + bottom;
  auto y_of = [&](double ratio) { return top + plot_h * (yhi - std::log2(ratio)) / (yhi - ylo); };
  const char* colors[2] = {"#4878d0", "#ee854a"};
  const char* legend[2] = {epilogue ? "conv + bias + relu (ours fused)" : "forward",
                           epilogue ? "convolution alone" : "backward (data + weight)"};

  FILE* f = std::fopen(path.c_str(), "w");
  if (f == nullptr) return false;
  std::fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" font-family=\"sans-serif\">\n",
               width, height);
  std::fprintf(f, "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n");
  std::fprintf(f, "<text x=\"%.0f\" y=\"22\" font-size=\"15\" font-weight=\"bold\">%s</text>\n", left, XmlEscape(title).c_str());
  std::fprintf(f, "<text x=\"%.0f\" y=\"40\" font-size=\"11\">our time / cuDNN's time, log scale: below 1, ours is faster</text>\n", left);
  for (int k = 0; k < 2; ++k) {
    const double x = left + 160.0 * k;
    std::fprintf(f, "<rect x=\"%.0f\" y=\"50\" width=\"11\" height=\"11\" fill=\"%s\"/>\n", x, colors[k]);
    std::fprintf(f, "<text x=\"%.0f\" y=\"60\" font-size=\"11\">%s</text>\n", x + 15, legend[k]);
  }
  // Grid and labels at each power of two; the line at 1.0 drawn darker.
  for (int e = ylo; e <= yhi; ++e) {
    const double y = top + plot_h * (yhi - e) / (yhi - ylo);
    std::fprintf(f, "<line x1=\"%.0f\" x2=\"%.0f\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" stroke-width=\"%s\"/>\n", left,
                 left + plot_w, y, y, e == 0 ? "black" : "#ddd", e == 0 ? "1.5" : "1");
    std::fprintf(f, "<text x=\"%.0f\" y=\"%.1f\" font-size=\"11\" text-anchor=\"end\">%g</text>\n", left - 6, y + 4,
                 std::ldexp(1.0, e));
  }
  for (size_t i = 0; i < groups.size(); ++i) {
    const ChartGroup& g = groups[i];
    const double x0 = left + group_w * i + (group_w - 2 * bar_w) / 2;
    const double ratios[2] = {RatioOf(g.ours.fwd_ms, g.peer.fwd_ms), RatioOf(g.ours.bwd_ms, g.peer.bwd_ms)};
    for (int k = 0; k < 2; ++k) {
      if (ratios[k] <= 0) continue;
      const double y = y_of(ratios[k]), y1 = y_of(1.0);
      const double x = x0 + k * bar_w;
      std::fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.0f\" height=\"%.1f\" fill=\"%s\"><title>%s %s %.2f</title></rect>\n",
                   x, std::min(y, y1), bar_w - 1, std::max(1.0, std::fabs(y - y1)), colors[k], XmlEscape(g.label).c_str(),
                   legend[k], ratios[k]);
      // The value past the bar's end, written upwards.
      const bool up = ratios[k] >= 1;
      std::fprintf(f, "<text transform=\"translate(%.1f %.1f) rotate(-90)\" font-size=\"9\" text-anchor=\"%s\">%.2f</text>\n",
                   x + bar_w / 2 + 3, up ? y - 3 : y + 3, up ? "start" : "end", ratios[k]);
    }
    std::fprintf(f, "<text transform=\"translate(%.1f %.0f) rotate(-45)\" font-size=\"10\" text-anchor=\"end\">%s</text>\n",
                 left + group_w * (i + 0.5), top + plot_h + 14, XmlEscape(g.label).c_str());
  }
  std::fprintf(f, "</svg>\n");
  return std::fclose(f) == 0;
}

// The table as CSV: one row per group, empty cells where nothing was measured.
bool WriteCsv(const std::string& path, const std::vector<ChartGroup>& groups, const std::vector<ChosenAlgorithms>& chosen) {
  FILE* f = std::fopen(path.c_str(), "w");
  if (f == nullptr) return false;
  auto ms = [](double v) { return v > 0 ? std::to_string(v) : std::string(); };
  auto ratio = [](double ours, double peer) { return ours > 0 && peer > 0 ? std::to_string(ours / peer) : std::string(); };
  std::fprintf(f, "case,fwd_ms,peer_fwd_ms,fwd_ratio,bwd_ms,peer_bwd_ms,bwd_ratio,fwd_algorithm,data_grad_algorithm,weight_grad_algorithm\n");
  for (size_t i = 0; i < groups.size(); ++i) {
    const ChartGroup& g = groups[i];
    const ChosenAlgorithms c = i < chosen.size() ? chosen[i] : ChosenAlgorithms();
    const std::string label = g.label.substr(g.label.find_first_not_of(' '));
    std::fprintf(f, "\"%s\",%s,%s,%s,%s,%s,%s,%s,%s,%s\n", label.c_str(), ms(g.ours.fwd_ms).c_str(), ms(g.peer.fwd_ms).c_str(),
                 ratio(g.ours.fwd_ms, g.peer.fwd_ms).c_str(), ms(g.ours.bwd_ms).c_str(), ms(g.peer.bwd_ms).c_str(),
                 ratio(g.ours.bwd_ms, g.peer.bwd_ms).c_str(), c.forward.c_str(), c.data_grad.c_str(), c.weight_grad.c_str());
  }
  return std::fclose(f) == 0;
}

// --volume: the sweep, ours and the peer's, as a table (and a chart with --svg).
int RunVolume(const Options& o) {
  cudaDeviceProp prop;
  TE_CUDA_CHECK(cudaGetDeviceProperties(&prop, cuda::CurrentDevice()));
  if (o.u8 && o.precision != Precision::kFp32) {
    std::fprintf(stderr, "conv_bench: --u8 runs float filters and output (--dtype fp32)\n");
    return 2;
  }
  std::printf("conv_bench --volume: %s, %s, input 1x1x%lld^3%s, filters 7x7x7, no padding, %d reps (median)\n",
              prop.name, PrecisionText(o.precision), (long long)o.size, o.u8 ? " uint8" : "", o.reps);
  const double peak = MeasureFmaPeakGflops();
  std::printf("FP32 FMA peak, measured (a pure multiply-add kernel): %.0f GFLOP/s on %d SMs\n", peak,
              prop.multiProcessorCount);
  std::vector<ChosenAlgorithms> chosen;
  std::vector<double> gflop;
  std::vector<Timing> ours;
  switch (o.precision) {
    case Precision::kFp16: ours = MeasureVolume<half_t>(o, &chosen, &gflop); break;
    case Precision::kBf16: ours = MeasureVolume<bf16_t>(o, &chosen, &gflop); break;
    default: ours = MeasureVolume<float>(o, &chosen, &gflop);
  }
  PeerResult peer;
  if (o.do_peer) peer = RunPeer(FindFile("TE_PEER_SCRIPT", "conv_peer.py"), o);
  if (o.do_peer && !peer.ok) std::printf("peer not measured (see its output above)\n");

  std::printf("\n%-8s %10s %8s %6s %10s %8s %6s %6s   %10s %10s %6s   %s\n", "filters", "fwd ours", "GFLOP/s", "peak",
              "cuDNN", "GFLOP/s", "peak", "ratio", "bwd ours", "cuDNN", "ratio", "algorithm: forward / data-grad / weight-grad");
  std::vector<ChartGroup> groups;
  for (size_t i = 0; i < o.filters.size(); ++i) {
    const int k = int(o.filters[i]);
    const Timing pt = peer.volume.count(k) ? peer.volume[k] : Timing();
    auto rate = [&](double ms) { return ms > 0 ? gflop[i] / ms * 1e3 : 0.0; };
    std::printf("%-8d %s %8.0f %5.1f%% %s %8.0f %5.1f%% %s   %s %s %s   %s\n", k, Ms(ours[i].fwd_ms).c_str(),
                rate(ours[i].fwd_ms), 100 * rate(ours[i].fwd_ms) / peak, Ms(pt.fwd_ms).c_str(), rate(pt.fwd_ms),
                100 * rate(pt.fwd_ms) / peak, Ratio(ours[i].fwd_ms, pt.fwd_ms).c_str(), Ms(ours[i].bwd_ms).c_str(),
                Ms(pt.bwd_ms).c_str(), Ratio(ours[i].bwd_ms, pt.bwd_ms).c_str(),
                o.u8 ? chosen[i].forward.c_str() : AlgorithmsText(chosen[i]).c_str());
    std::printf("conv_volume filters %d fwd_ms %.6f bwd_ms %.6f peer_fwd_ms %.6f peer_bwd_ms %.6f fwd_peak_share %.4f\n",
                k, ours[i].fwd_ms, ours[i].bwd_ms, pt.fwd_ms, pt.bwd_ms, rate(ours[i].fwd_ms) / peak);
    groups.push_back({std::to_string(k) + (k == 1 ? " filter" : " filters"), ours[i], pt});
  }
  std::printf("ratio = our time / cuDNN's time (below 1: ours is faster); peak = share of the measured FP32 FMA peak\n");
  if (!o.svg_path.empty()) {
    const std::string title = std::string("conv_bench --volume: ours / cuDNN, ") + PrecisionFlag(o.precision) + ", 1x1x" +
                              std::to_string(o.size) + "^3, 7x7x7 filters, " + prop.name;
    std::printf(WriteRatioSvg(o.svg_path, title, groups, false) ? "wrote %s\n" : "could not write %s\n", o.svg_path.c_str());
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  o.layers_path = FindFile("TE_CONV_LAYERS", "resnet50_layers.txt");
  const int parsed = ParseArgs(argc, argv, &o);
  if (parsed >= 0) return parsed;
  try {
    if (o.volume) return RunVolume(o);
    const std::vector<Layer> layers = ReadLayers(o.layers_path);
    cudaDeviceProp prop;
    TE_CUDA_CHECK(cudaGetDeviceProperties(&prop, cuda::CurrentDevice()));
    // The default run's header reads as it always has; another layout is named after the precision.
    const std::string mode = std::string(PrecisionText(o.precision)) + (o.layout == ops::Layout::kNHWC ? ", NHWC" : "");
    std::printf("conv_bench: %s, N=%lld, %s, workspace cap %.0f MB, %d reps (median), layers from %s\n", prop.name,
                static_cast<long long>(o.n), mode.c_str(), o.workspace_mb, o.reps, o.layers_path.c_str());

    const OursResult ours = MeasureOursIn(o, layers);

    PeerResult peer;
    if (o.do_peer) peer = RunPeer(FindFile("TE_PEER_SCRIPT", "conv_peer.py"), o);
    if (o.do_peer && !peer.ok) std::printf("peer not measured (see its output above)\n");

    std::printf("\n%-44s %9s %9s %6s   %9s %9s %6s   %s\n", "layer (C H K R stride pad)",
                o.epilogue ? "fused" : "fwd ours", "peer", "ratio", o.epilogue ? "conv ours" : "bwd ours", "peer", "ratio",
                o.epilogue ? "algorithm: forward" : "algorithm: forward / data-grad / weight-grad");
    std::vector<ChartGroup> groups;
    // With --algorithm some layers or passes may not run: the totals are then over those that did, on
    // both sides.
    Timing sum, peer_sum;
    sum.fwd_ms = sum.bwd_ms = peer_sum.fwd_ms = peer_sum.bwd_ms = 0;
    bool partial = false;
    for (size_t i = 0; i < layers.size(); ++i) {
      const Timing pt = peer.layers.count(int(i)) ? peer.layers[int(i)] : Timing();
      PrintRow(LayerName(i, layers[i]), ours.layers[i], pt,
               o.epilogue ? ours.chosen[i].forward : AlgorithmsText(ours.chosen[i]));
      groups.push_back({LayerName(i, layers[i]), ours.layers[i], pt});
      if (ours.layers[i].fwd_ms > 0) sum.fwd_ms += ours.layers[i].fwd_ms, peer_sum.fwd_ms += std::max(0.0, pt.fwd_ms);
      if (ours.layers[i].bwd_ms > 0) sum.bwd_ms += ours.layers[i].bwd_ms, peer_sum.bwd_ms += std::max(0.0, pt.bwd_ms);
      partial = partial || ours.layers[i].fwd_ms <= 0 || ours.layers[i].bwd_ms <= 0;
    }
    const Timing peer_total = !peer.ok ? Timing() : partial ? peer_sum : peer.total;
    PrintRow(partial ? "total (the layers ours ran)" : "total (sum of layers)", sum, peer_total, "");
    groups.push_back({"total", sum, peer_total});
    std::printf("  forward total %.1f GFLOP: ours %.1f TFLOP/s\n", ours.gflop_total, ours.gflop_total / sum.fwd_ms);
    std::vector<ChosenAlgorithms> chosen = ours.chosen;
    chosen.push_back(ChosenAlgorithms());  // the total's row
    if (o.do3d) {
      const std::string name = "3-D 1x1x256^3, 8 x 7^3";
      PrintRow(name, ours.conv3d, peer.conv3d, ours.skipped3d.empty() ? AlgorithmsText(ours.chosen3d) : "(skipped)");
      groups.push_back({name, ours.conv3d, peer.conv3d});
      chosen.push_back(ours.chosen3d);
    }
    std::printf("ratio = our time / peer time (below 1: ours is faster)\n");
    if (o.split && !o.epilogue) PrintSplitTable(layers, ours, peer);
    if (o.epilogue) {
      double worst = 0;
      for (const Timing& t : ours.layers) worst = std::max(worst, RatioOf(t.fwd_ms, t.bwd_ms));
      std::printf("epilogue cost: ours fused / ours convolution alone = %.3f over the layers (worst layer %.3f)\n",
                  RatioOf(sum.fwd_ms, sum.bwd_ms), worst);
    }

    const std::string title = std::string("conv_bench: ours / cuDNN, ") + PrecisionFlag(o.precision) + " " +
                              ops::LayoutName(o.layout) + (o.epilogue ? " epilogue" : "") + ", N=" +
                              std::to_string(o.n) + ", " + prop.name;
    if (!o.svg_path.empty()) {
      if (!o.do_peer || !peer.ok) std::printf("chart %s: no peer times, so no ratios to draw (empty chart)\n", o.svg_path.c_str());
      std::printf(WriteRatioSvg(o.svg_path, title, groups, o.epilogue) ? "wrote %s\n" : "could not write %s\n", o.svg_path.c_str());
    }
    if (!o.csv_path.empty())
      std::printf(WriteCsv(o.csv_path, groups, chosen) ? "wrote %s\n" : "could not write %s\n", o.csv_path.c_str());
    std::printf("conv_bench_total fwd_ms %.6f bwd_ms %.6f peer_fwd_ms %.6f peer_bwd_ms %.6f\n", sum.fwd_ms, sum.bwd_ms,
                peer_total.fwd_ms, peer_total.bwd_ms);
  } catch (const Error& e) {
    std::fprintf(stderr, "conv_bench: %s\n", e.what());
    return 1;
  }
  return 0;
}
