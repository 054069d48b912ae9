// bench/conv_accuracy.cu — how close each float math mode of the GPU convolution comes to float64, on the
// ResNet-50 layers (bench/resnet50_layers.txt): strict fp32 (the default), TF32 (Stream::set_tf32) and fp32
// as three TF32 products per product (Stream::set_tf32x3), in the forward, the data gradient and the weight
// gradient, each against the same convolution computed in double on the GPU.
// Inputs are hashed values in [-1, 1), exact in float, so the reference sees the same numbers as the modes.
// Two measures per pass and mode:
//   max  max |ours - reference| / max |reference|: the tests' measure, relative to the output's scale;
//   rms  sqrt(sum (ours - reference)^2 / sum reference^2).
// A mode's error is its algorithm's, so each mode's chosen algorithms are printed too (read from the
// selection log). --algorithm forces one algorithm in every mode, so that the modes differ in their math
// alone (a pass the algorithm cannot run prints its reason). The last lines give each mode's worst max over
// all layers and passes. Nothing is timed: conv_bench --dtype fp32|tf32|tf32x3 times the same modes.
//
// Usage: conv_accuracy [--n 8] [--layout nchw|nhwc] [--layers path] [--workspace-mb 2048] [--algorithm NAME]
// Run from the repository root or from bench/ (or set TE_CONV_LAYERS to the list).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>
#include <tensorexpr/cuda/tensorexpr_cuda.cuh>
#include <tensorexpr/ops/convolution.h>
#include "conv_layers.h"
#include "conv_run.cuh"

namespace {
using namespace tensorexpr;
using namespace conv_layers;
using namespace conv_run;

// A float math mode of the stream.
struct Mode {
  const char* name;
  ops::ConvMath math;
};
const Mode kModes[] = {{"fp32", ops::ConvMath::kStrict}, {"tf32", ops::ConvMath::kTF32}, {"tf32x3", ops::ConvMath::kTF32x3}};
constexpr int kNumModes = sizeof(kModes) / sizeof(kModes[0]);

// The three passes, in the order they are printed.
const char* const kPassNames[] = {"forward", "data grad", "weight grad"};
constexpr int kNumPasses = 3;

struct Deviation {
  double max = -1, rms = -1;  // -1: not run
};

// got against ref, both copied to the host.
template <int dim>
Deviation Compare(Stream<gpu>* stream, const Tensor<gpu, dim, float>& got, const Tensor<gpu, dim, double>& ref) {
  TensorContainer<cpu, dim, float> g(got.shape_);
  TensorContainer<cpu, dim, double> r(ref.shape_);
  Copy(g.view(), got, stream);
  Copy(r.view(), ref, stream);
  stream->Wait();
  const index_t n = got.shape_.Size();
  double max_diff = 0, max_ref = 0, sum_diff2 = 0, sum_ref2 = 0;
  for (index_t i = 0; i < n; ++i) {
    const double d = double(g.dptr_[i]) - r.dptr_[i];
    max_diff = std::max(max_diff, std::fabs(d));
    max_ref = std::max(max_ref, std::fabs(r.dptr_[i]));
    sum_diff2 += d * d;
    sum_ref2 += r.dptr_[i] * r.dptr_[i];
  }
  Deviation e;
  e.max = max_ref > 0 ? max_diff / max_ref : max_diff;
  e.rms = sum_ref2 > 0 ? std::sqrt(sum_diff2 / sum_ref2) : std::sqrt(sum_diff2);
  return e;
}

// One convolution's three passes in DType: out, data grad and weight grad, from x, w and dy.
template <typename DType>
struct Passes {
  TensorContainer<gpu, 4, DType> y, dx, dw;
  Passes(Stream<gpu>* stream, const Shape<4>& xshape, const Shape<4>& yshape, const Shape<4>& wshape) {
    for (auto* t : {&y, &dx, &dw}) t->set_stream(stream);
    y.Resize(yshape), dx.Resize(xshape), dw.Resize(wshape);
  }
  // Pass 0 (forward), 1 (data gradient) or 2 (weight gradient).
  void Run(int pass, const ops::ConvolutionParam& p, const Tensor<gpu, 4, DType>& x, const Tensor<gpu, 4, DType>& w,
           const Tensor<gpu, 4, DType>& dy) {
    Tensor<gpu, 1, DType> no_bias;  // p.no_bias: never read
    if (pass == 0) ops::ConvolutionForward(p, x, w, no_bias, kWriteTo, y.view());
    else ops::ConvolutionBackward(p, dy, x, w, pass == 1 ? kWriteTo : kNullOp, dx.view(), pass == 2 ? kWriteTo : kNullOp,
                                  dw.view(), kNullOp, no_bias);
  }
  void RunAll(const ops::ConvolutionParam& p, const Tensor<gpu, 4, DType>& x, const Tensor<gpu, 4, DType>& w,
              const Tensor<gpu, 4, DType>& dy) {
    for (int pass = 0; pass < kNumPasses; ++pass) Run(pass, p, x, w, dy);
  }
};

struct Options {
  index_t n = 8;
  double workspace_mb = 2048;
  ops::Layout layout = ops::Layout::kNCHW;
  std::string layers_path = FindFile("TE_CONV_LAYERS", "resnet50_layers.txt");
  std::string algorithm;  // forced in every mode ("": the library's choice)
};

int ParseArgs(int argc, char** argv, Options* o) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const bool has_value = i + 1 < argc;
    if (a == "--n" && has_value && std::atoll(argv[i + 1]) > 0) o->n = std::atoll(argv[++i]);
    else if (a == "--workspace-mb" && has_value) o->workspace_mb = std::atof(argv[++i]);
    else if (a == "--layers" && has_value) o->layers_path = argv[++i];
    else if (a == "--algorithm" && has_value) o->algorithm = argv[++i];
    else if (a == "--layout" && has_value && (std::string(argv[i + 1]) == "nchw" || std::string(argv[i + 1]) == "nhwc"))
      o->layout = std::string(argv[++i]) == "nhwc" ? ops::Layout::kNHWC : ops::Layout::kNCHW;
    else {
      const bool help = a == "--help" || a == "-h";
      if (!help) std::fprintf(stderr, "conv_accuracy: cannot use %s\n", a.c_str());
      std::fprintf(help ? stdout : stderr,
                   "usage: %s [--n 8] [--layout nchw|nhwc] [--layers path] [--workspace-mb 2048] [--algorithm NAME]\n",
                   argv[0]);
      return help ? 0 : 2;
    }
  }
  return -1;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  if (const int status = ParseArgs(argc, argv, &o); status >= 0) return status;
  try {
    const std::vector<Layer> layers = ReadLayers(o.layers_path);
    cudaDeviceProp prop;
    TE_CUDA_CHECK(cudaGetDeviceProperties(&prop, cuda::CurrentDevice()));
    std::printf("conv_accuracy: %s, N=%lld, %s, float modes against float64, %s, layers from %s\n", prop.name,
                static_cast<long long>(o.n), ops::LayoutName(o.layout),
                o.algorithm.empty() ? "the library's algorithms" : ("algorithm " + o.algorithm).c_str(),
                o.layers_path.c_str());
    std::printf("%-32s %-11s", "layer (C H K R stride pad)", "pass");
    for (const Mode& m : kModes) std::printf("  %9s %9s", (m.name + std::string(" max")).c_str(), "rms");
    std::printf("\n");

    Stream<gpu>* stream = NewStream<gpu>(true);
    double worst[kNumModes];  // over the passes run; -1 where the forced algorithm ran none in a mode
    std::fill(worst, worst + kNumModes, -1.0);
    for (size_t i = 0; i < layers.size(); ++i) {
      const Layer& L = layers[i];
      ops::ConvolutionParam p = LayerParam(L, o.workspace_mb, o.layout);
      const Shape<4> xshape = DataShape<4>(o.layout, o.n, L.C, L.H);
      const ops::ConvShapes shapes = ops::InferConvShapes(p, Dims(xshape));
      Shape<4> yshape, wshape;
      for (int d = 0; d < 4; ++d) yshape[d] = shapes.out[d], wshape[d] = shapes.weight[d];

      TensorContainer<gpu, 4, float> x, w, dy;
      TensorContainer<gpu, 4, double> xd, wd, dyd;
      for (auto* t : {&x, &w, &dy}) t->set_stream(stream);
      for (auto* t : {&xd, &wd, &dyd}) t->set_stream(stream);
      x.Resize(xshape), w.Resize(wshape), dy.Resize(yshape);
      FillHash(x.view(), 1u), FillHash(w.view(), 2u), FillHash(dy.view(), 3u);
      xd.Resize(xshape), wd.Resize(wshape), dyd.Resize(yshape);
      xd = expr::tcast<double>(x.view()), wd = expr::tcast<double>(w.view()), dyd = expr::tcast<double>(dy.view());

      Passes<double> ref(stream, xshape, yshape, wshape);
      ref.RunAll(p, xd.view(), wd.view(), dyd.view());
      p.algorithm = o.algorithm;  // (the reference runs the library's choice in double)

      Deviation dev[kNumModes][kNumPasses];
      std::string refused[kNumModes][kNumPasses];  // why a forced algorithm did not run a pass
      ChosenAlgorithms chosen[kNumModes];
      for (int m = 0; m < kNumModes; ++m) {
        SetFloatMath(stream, kModes[m].math);
        Passes<float> got(stream, xshape, yshape, wshape);
        ChoiceRecorder recorder(&chosen[m]);
        // One pass at a time, so that a forced algorithm that cannot run one still measures the others.
        for (int pass = 0; pass < kNumPasses; ++pass) {
          try {
            got.Run(pass, p, x.view(), w.view(), dy.view());
          } catch (const Error& e) {
            if (o.algorithm.empty()) throw;
            refused[m][pass] = e.what();
            continue;
          }
          dev[m][pass] = pass == 0   ? Compare(stream, got.y.view(), ref.y.view())
                         : pass == 1 ? Compare(stream, got.dx.view(), ref.dx.view())
                                     : Compare(stream, got.dw.view(), ref.dw.view());
          worst[m] = std::max(worst[m], dev[m][pass].max);
        }
      }

      char name[64];
      std::snprintf(name, sizeof(name), "%2zu: %lld %lld %lld %lld %lld %lld", i, (long long)L.C, (long long)L.H,
                    (long long)L.K, (long long)L.R, (long long)L.stride, (long long)L.pad);
      for (int pass = 0; pass < kNumPasses; ++pass) {
        std::printf("%-32s %-11s", pass == 0 ? name : "", kPassNames[pass]);
        for (int m = 0; m < kNumModes; ++m) {
          if (dev[m][pass].max < 0) std::printf("  %9s %9s", "-", "-");
          else std::printf("  %9.2e %9.2e", dev[m][pass].max, dev[m][pass].rms);
        }
        std::printf("\n");
      }
      for (int m = 0; m < kNumModes; ++m)
        for (int pass = 0; pass < kNumPasses; ++pass)
          if (!refused[m][pass].empty())
            std::printf("%-44s %-7s %s not run: %s\n", "", kModes[m].name, kPassNames[pass], refused[m][pass].c_str());
      for (int m = 0; m < kNumModes; ++m)
        std::printf("%-44s %-7s %s\n", "", kModes[m].name, AlgorithmsText(chosen[m]).c_str());
      std::fflush(stdout);
      ops::ReleaseWorkspace<gpu>(stream);
    }
    for (int m = 0; m < kNumModes; ++m)
      if (worst[m] < 0) std::printf("conv_accuracy %s worst_max - (no pass ran)\n", kModes[m].name);
      else std::printf("conv_accuracy %s worst_max %.3e\n", kModes[m].name, worst[m]);
    stream->Wait();
    DeleteStream(stream);
  } catch (const Error& e) {
    std::fprintf(stderr, "conv_accuracy: %s\n", e.what());
    return 1;
  }
  return 0;
}
