// bench/conv_bench.cu — ops/convolution.h on the GPU against PyTorch / cuDNN, measured in this one run:
//   1. the 20 distinct ResNet-50 layers (bench/resnet50_layers.txt: C H K R stride pad), N = 32, NCHW, fp32
//      with TF32 off: forward, and backward (data + weight gradients together), per layer and summed;
//   2. the 3-D case: a 1x1x256x256x256 input, 8 filters 7x7x7, no padding: forward and backward.
// The peer (bench/conv_peer.py: F.conv2d / conv3d and aten.convolution_backward, cudnn.benchmark=True,
// allow_tf32=False) runs after ours, as a separate process, on the same GPU; its lines are parsed and
// each row prints ours / peer as a time ratio (below 1: we are faster).
// Timing: CUDA events around each repetition on one stream, after warm-up (which also sizes the workspace);
// the median is reported.
//
// Usage: conv_bench [--n 32] [--reps 20] [--workspace-mb 2048] [--layers path] [--no-3d] [--no-peer]
// Run from the repository root or from bench/ (or set TE_PEER_SCRIPT / TE_CONV_LAYERS to the files).
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <string>
#include <vector>
#include <sys/stat.h>
#include <tensorexpr/cuda/tensorexpr_cuda.cuh>
#include <tensorexpr/ops/convolution.h>

namespace {
using namespace tensorexpr;

struct Layer {
  index_t C, H, K, R, stride, pad;
};

struct Timing {
  double fwd_ms = -1, bwd_ms = -1;
};

bool FileExists(const std::string& p) {
  struct stat st;
  return stat(p.c_str(), &st) == 0;
}

// The first of the candidate locations that exists (an environment variable overrides them all).
std::string FindFile(const char* env, const std::string& name) {
  if (const char* e = std::getenv(env)) return e;
#ifdef TE_BENCH_SOURCE_DIR
  if (FileExists(std::string(TE_BENCH_SOURCE_DIR) + "/" + name)) return std::string(TE_BENCH_SOURCE_DIR) + "/" + name;
#endif
  for (const std::string& dir : {std::string("bench/"), std::string("./"), std::string("../bench/")})
    if (FileExists(dir + name)) return dir + name;
  return "bench/" + name;
}

std::vector<Layer> ReadLayers(const std::string& path) {
  FILE* f = std::fopen(path.c_str(), "r");
  TE_CHECK(f != nullptr, "conv_bench: cannot open the layer list ", path);
  std::vector<Layer> layers;
  char line[512];
  while (std::fgets(line, sizeof(line), f)) {
    if (char* hash = std::strchr(line, '#')) *hash = '\0';
    long long c, h, k, r, s, p;
    if (std::sscanf(line, "%lld %lld %lld %lld %lld %lld", &c, &h, &k, &r, &s, &p) == 6)
      layers.push_back({c, h, k, r, s, p});
  }
  std::fclose(f);
  return layers;
}

// Values in [-1, 1) from a hash of the index (no curand needed; deterministic).
__global__ void FillHashKernel(float* p, index_t n, uint32_t seed) {
  for (index_t i = blockIdx.x * index_t(blockDim.x) + threadIdx.x; i < n; i += index_t(blockDim.x) * gridDim.x) {
    uint32_t h = static_cast<uint32_t>(i) * 2654435761u ^ seed ^ static_cast<uint32_t>(i >> 32) * 40503u;
    h ^= h >> 15;
    h *= 2246822519u;
    h ^= h >> 13;
    h *= 3266489917u;
    h ^= h >> 16;
    p[i] = static_cast<float>(h) * (2.0f / 4294967296.0f) - 1.0f;
  }
}
template <int dim>
void FillHash(Tensor<gpu, dim, float> t, uint32_t seed) {
  const index_t n = t.shape_.Size();
  FillHashKernel<<<1024, 256, 0, Stream<gpu>::GetStream(t.stream_)>>>(t.dptr_, n, seed);
  TE_CUDA_CHECK_LAUNCH("FillHashKernel");
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

// Times one convolution, forward and backward (data + weight), fp32, no bias.
template <int dim>
Timing TimeConv(Stream<gpu>* stream, const ops::ConvolutionParam& p, const Shape<dim>& xshape, int warmup, int reps) {
  const std::vector<index_t> dv(xshape.shape_, xshape.shape_ + dim);
  const ops::ConvShapes shapes = ops::InferConvShapes(p, dv);
  Shape<dim> yshape, wshape;
  for (int i = 0; i < dim; ++i) yshape[i] = shapes.out[i], wshape[i] = shapes.weight[i];
  TensorContainer<gpu, dim, float> x, w, y, dy, dx, dw;
  TensorContainer<gpu, 1, float> b;  // unused: no_bias
  for (auto* t : {&x, &w, &y, &dy, &dx, &dw}) t->set_stream(stream);
  x.Resize(xshape), dx.Resize(xshape), y.Resize(yshape), dy.Resize(yshape), w.Resize(wshape), dw.Resize(wshape);
  FillHash(x.view(), 1u), FillHash(w.view(), 2u), FillHash(dy.view(), 3u);
  const cudaStream_t s = stream->stream();
  Timing t;
  t.fwd_ms = MedianMs(s, warmup, reps, [&] { ops::ConvolutionForward(p, x.view(), w.view(), b.view(), kWriteTo, y.view()); });
  t.bwd_ms = MedianMs(s, warmup, reps, [&] {
    ops::ConvolutionBackward(p, dy.view(), x.view(), w.view(), kWriteTo, dx.view(), kWriteTo, dw.view(), kNullOp, b.view());
  });
  stream->Wait();
  return t;
}

// Runs the peer script; returns its per-layer timings (by index), total and 3-D lines.
struct PeerResult {
  std::map<int, Timing> layers;
  Timing total, conv3d;
  bool ok = false;
};
PeerResult RunPeer(const std::string& script, const std::string& layers, index_t n, int reps, bool do3d) {
  PeerResult r;
  const std::string cmd = "python3 " + script + " --layers " + layers + " --n " + std::to_string(n) + " --reps " +
                          std::to_string(reps) + (do3d ? "" : " --no-3d") + " 2>&1";
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
    if (std::sscanf(line, "peer_conv_layer %d %lld %lld %lld %lld %lld %lld fwd_ms %lf bwd_ms %lf", &idx, &c, &h, &k, &rr,
                    &s, &pad, &f, &b) == 9) {
      r.layers[idx] = {f, b};
      r.ok = true;
    } else if (std::sscanf(line, "peer_conv_total fwd_ms %lf bwd_ms %lf", &f, &b) == 2) {
      r.total = {f, b};
    } else if (std::sscanf(line, "peer_conv3d fwd_ms %lf bwd_ms %lf", &f, &b) == 2) {
      r.conv3d = {f, b};
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

}  // namespace

int main(int argc, char** argv) {
  index_t n = 32;
  int reps = 20;
  double workspace_mb = 2048;
  bool do3d = true, do_peer = true;
  std::string layers_path = FindFile("TE_CONV_LAYERS", "resnet50_layers.txt");
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--n" && i + 1 < argc) n = std::atoll(argv[++i]);
    else if (a == "--reps" && i + 1 < argc) reps = std::atoi(argv[++i]);
    else if (a == "--workspace-mb" && i + 1 < argc) workspace_mb = std::atof(argv[++i]);
    else if (a == "--layers" && i + 1 < argc) layers_path = argv[++i];
    else if (a == "--no-3d") do3d = false;
    else if (a == "--no-peer") do_peer = false;
    else {
      std::fprintf(stderr, "usage: %s [--n 32] [--reps 20] [--workspace-mb 2048] [--layers path] [--no-3d] [--no-peer]\n", argv[0]);
      return 2;
    }
  }
  try {
    const std::vector<Layer> layers = ReadLayers(layers_path);
    cudaDeviceProp prop;
    TE_CUDA_CHECK(cudaGetDeviceProperties(&prop, cuda::CurrentDevice()));
    std::printf("conv_bench: %s, N=%lld, fp32, TF32 off, workspace cap %.0f MB, %d reps (median), layers from %s\n",
                prop.name, static_cast<long long>(n), workspace_mb, reps, layers_path.c_str());
    Stream<gpu>* stream = NewStream<gpu>(true);
    stream->set_tf32(false);

    std::vector<Timing> ours;
    double gflop_total = 0;
    for (size_t i = 0; i < layers.size(); ++i) {
      const Layer& L = layers[i];
      ops::ConvolutionParam p;
      p.kernel = {L.R, L.R};
      p.stride = {L.stride, L.stride};
      p.pad = {L.pad, L.pad};
      p.num_filter = L.K;
      p.no_bias = true;
      p.workspace = workspace_mb;
      const Timing t = TimeConv(stream, p, Shape4(n, L.C, L.H, L.H), 3, reps);
      const double gflop = ops::InferConvCost(p, {n, L.C, L.H, L.H}, 4).forward_flops / 1e9;
      gflop_total += gflop;
      std::printf("ours layer %2zu  C %4lld H %3lld K %4lld R %lld s %lld p %lld:  fwd %8.3f ms (%5.1f TFLOP/s)  bwd %8.3f ms\n",
                  i, (long long)L.C, (long long)L.H, (long long)L.K, (long long)L.R, (long long)L.stride,
                  (long long)L.pad, t.fwd_ms, gflop / t.fwd_ms, t.bwd_ms);
      std::fflush(stdout);
      ours.push_back(t);
    }
    Timing ours3d;
    if (do3d) {
      ops::ConvolutionParam p;
      p.kernel = {7, 7, 7};
      p.num_filter = 8;
      p.no_bias = true;
      p.workspace = workspace_mb;
      ours3d = TimeConv(stream, p, Shape5(1, 1, 256, 256, 256), 1, std::max(3, reps / 4));
      const double gflop = ops::InferConvCost(p, {1, 1, 256, 256, 256}, 4).forward_flops / 1e9;
      std::printf("ours 3-D 1x1x256^3, 8 filters 7^3:  fwd %8.3f ms (%5.1f TFLOP/s)  bwd %8.3f ms\n", ours3d.fwd_ms,
                  gflop / ours3d.fwd_ms, ours3d.bwd_ms);
    }
    ops::ReleaseWorkspace<gpu>(stream);
    stream->Wait();
    DeleteStream(stream);

    PeerResult peer;
    if (do_peer) peer = RunPeer(FindFile("TE_PEER_SCRIPT", "conv_peer.py"), layers_path, n, reps, do3d);
    if (do_peer && !peer.ok) std::printf("peer not measured (see its output above)\n");

    std::printf("\n%-44s %9s %9s %6s   %9s %9s %6s\n", "layer (C H K R stride pad)", "fwd ours", "peer", "ratio",
                "bwd ours", "peer", "ratio");
    Timing sum;
    sum.fwd_ms = sum.bwd_ms = 0;
    for (size_t i = 0; i < layers.size(); ++i) {
      const Layer& L = layers[i];
      char name[64];
      std::snprintf(name, sizeof(name), "%2zu: %lld %lld %lld %lld %lld %lld", i, (long long)L.C, (long long)L.H,
                    (long long)L.K, (long long)L.R, (long long)L.stride, (long long)L.pad);
      const Timing pt = peer.layers.count(int(i)) ? peer.layers[int(i)] : Timing();
      std::printf("%-44s %s %s %s   %s %s %s\n", name, Ms(ours[i].fwd_ms).c_str(), Ms(pt.fwd_ms).c_str(),
                  Ratio(ours[i].fwd_ms, pt.fwd_ms).c_str(), Ms(ours[i].bwd_ms).c_str(), Ms(pt.bwd_ms).c_str(),
                  Ratio(ours[i].bwd_ms, pt.bwd_ms).c_str());
      sum.fwd_ms += ours[i].fwd_ms;
      sum.bwd_ms += ours[i].bwd_ms;
    }
    std::printf("%-44s %s %s %s   %s %s %s\n", "total (sum of layers)", Ms(sum.fwd_ms).c_str(),
                Ms(peer.total.fwd_ms).c_str(), Ratio(sum.fwd_ms, peer.total.fwd_ms).c_str(), Ms(sum.bwd_ms).c_str(),
                Ms(peer.total.bwd_ms).c_str(), Ratio(sum.bwd_ms, peer.total.bwd_ms).c_str());
    std::printf("  forward total %.1f GFLOP: ours %.1f TFLOP/s\n", gflop_total, gflop_total / sum.fwd_ms);
    if (do3d)
      std::printf("%-44s %s %s %s   %s %s %s\n", "3-D 1x1x256^3, 8 x 7^3", Ms(ours3d.fwd_ms).c_str(),
                  Ms(peer.conv3d.fwd_ms).c_str(), Ratio(ours3d.fwd_ms, peer.conv3d.fwd_ms).c_str(),
                  Ms(ours3d.bwd_ms).c_str(), Ms(peer.conv3d.bwd_ms).c_str(),
                  Ratio(ours3d.bwd_ms, peer.conv3d.bwd_ms).c_str());
    std::printf("ratio = our time / peer time (below 1: ours is faster)\n");
    std::printf("conv_bench_total fwd_ms %.6f bwd_ms %.6f peer_fwd_ms %.6f peer_bwd_ms %.6f\n", sum.fwd_ms, sum.bwd_ms,
                peer.total.fwd_ms, peer.total.bwd_ms);
  } catch (const Error& e) {
    std::fprintf(stderr, "conv_bench: %s\n", e.what());
    return 1;
  }
  return 0;
}
