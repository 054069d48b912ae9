// bench/cutlass_kernels.cu — every CUTLASS convolution kernel compiled into this build (ops/cuda/cutlass/)
// on ResNet-50's 20 distinct layers (bench/resnet50_layers.txt, N = 32, channels last), one pass at a time,
// each kernel timed alone: which kernel is fastest where, for choosing among them in conv_cutlass.h. A
// weight-gradient kernel runs at each power-of-two split of its reduction from 1 to 128 (Hopper's: 1), then the sum
// of its float slices into the result (cuda::SumSlices), as the algorithm runs it; the table shows its
// fastest split (time/split). Channels a kernel's vectors do not divide (the stem's 3) are padded for it,
// as the algorithm stages them (the staging is not timed). Timing: CUDA events around each run, median of
// --reps after 3 warm-up runs.
//
// --dtype tf32 times the float kernels on TF32 tensor cores, --dtype fp32 those of strict fp32 (SIMT).
// --splits prints, below each layer's row of the weight gradient, every kernel's time at each split
// (ms@split), for choosing the split in conv_cutlass.h.
//
// Usage: cutlass_kernels [--dtype fp16|bf16|tf32|fp32] [--pass fprop|dgrad|wgrad] [--n 32] [--reps 20] [--layers FILE]
//                        [--splits (with --pass wgrad)]
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime_api.h>
#include <tensorexpr/cuda/sum_slices.cuh>
#include <tensorexpr/dtype.h>
#include "../ops/cuda/cutlass/conv_kernels.h"
#include "conv_layers.h"

namespace {
using namespace tensorexpr::ops::cutlass_conv;

void Check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    std::fprintf(stderr, "cutlass_kernels: %s: %s\n", what, cudaGetErrorString(e));
    std::exit(1);
  }
}

// Values in [-1, 1) from a hash of the index: data that neither overflows nor is all zeros.
template <typename T>
__global__ void FillKernel(T* p, size_t n, unsigned seed) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) {
    unsigned h = unsigned(i) * 2654435761u ^ seed;
    h ^= h >> 15;
    h *= 2246822519u;
    h ^= h >> 13;
    p[i] = T(float(h & 0xffff) / 32768.0f - 1.0f);
  }
}

size_t ElementBytes(Element e) { return e == Element::kF32 ? 4 : 2; }

void Fill(void* p, size_t n, Element e, unsigned seed) {
  if (e == Element::kF16) FillKernel<<<1024, 256>>>(static_cast<__half*>(p), n, seed);
  else if (e == Element::kBF16) FillKernel<<<1024, 256>>>(static_cast<__nv_bfloat16*>(p), n, seed);
  else FillKernel<<<1024, 256>>>(static_cast<float*>(p), n, seed);
  Check(cudaGetLastError(), "fill");
}

template <typename Run>
double MedianMs(int reps, const Run& run) {
  cudaEvent_t start, stop;
  Check(cudaEventCreate(&start), "event");
  Check(cudaEventCreate(&stop), "event");
  for (int i = 0; i < 3; ++i) run();
  std::vector<double> ms;
  for (int r = 0; r < reps; ++r) {
    Check(cudaEventRecord(start), "record");
    run();
    Check(cudaEventRecord(stop), "record");
    Check(cudaEventSynchronize(stop), "synchronize");
    float t = 0;
    Check(cudaEventElapsedTime(&t, start, stop), "elapsed");
    ms.push_back(t);
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  std::sort(ms.begin(), ms.end());
  return ms.size() % 2 ? ms[ms.size() / 2] : 0.5 * (ms[ms.size() / 2 - 1] + ms[ms.size() / 2]);
}

}  // namespace

int main(int argc, char** argv) {
  std::string dtype = "fp16", pass_name = "fprop", layers_path;
  int n = 32, reps = 20;
  bool splits = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--dtype" && i + 1 < argc) dtype = argv[++i];
    else if (a == "--pass" && i + 1 < argc) pass_name = argv[++i];
    else if (a == "--n" && i + 1 < argc) n = std::atoi(argv[++i]);
    else if (a == "--reps" && i + 1 < argc) reps = std::atoi(argv[++i]);
    else if (a == "--layers" && i + 1 < argc) layers_path = argv[++i];
    else if (a == "--splits") splits = true;
    else {
      std::fprintf(stderr, "usage: %s [--dtype fp16|bf16|tf32|fp32] [--pass fprop|dgrad|wgrad] [--n 32] [--reps 20] [--layers FILE] [--splits (wgrad)]\n",
                   argv[0]);
      return 2;
    }
  }
  if ((dtype != "fp16" && dtype != "bf16" && dtype != "tf32" && dtype != "fp32") || (pass_name != "fprop" && pass_name != "dgrad" && pass_name != "wgrad") ||
      n < 1 || reps < 1) {
    std::fprintf(stderr, "cutlass_kernels: --dtype fp16|bf16|tf32|fp32, --pass fprop|dgrad|wgrad, --n and --reps >= 1\n");
    return 2;
  }
  const Element element = dtype == "fp16" ? Element::kF16 : dtype == "bf16" ? Element::kBF16 : Element::kF32;
  const Math math = dtype == "fp32" ? Math::kSimt : Math::kTensorOp;
  const Pass pass = pass_name == "fprop" ? Pass::kFprop : pass_name == "dgrad" ? Pass::kDgrad : Pass::kWgrad;
  try {
    if (layers_path.empty()) layers_path = conv_layers::FindFile("TE_CONV_LAYERS", "resnet50_layers.txt");
    const std::vector<conv_layers::Layer> layers = conv_layers::ReadLayers(layers_path);
    int device = 0;
    cudaDeviceProp prop;
    Check(cudaGetDevice(&device), "device");
    Check(cudaGetDeviceProperties(&prop, device), "properties");
    const int sm = prop.major * 10 + prop.minor;
    std::printf("%s, %s %s, N = %d, channels last; median of %d runs in ms (-: the kernel cannot run the layer)\n",
                prop.name, dtype.c_str(), pass_name.c_str(), n, reps);
    std::vector<const ConvKernel*> kernels;
    for (const ConvKernel& k : CompiledConvKernels())
      if (k.pass == pass && k.element == element && k.math == math && k.epilogue == Epilogue::kLinear &&
          (k.sm == 0 || k.sm == sm))
        kernels.push_back(&k);
    std::printf("%-22s", "layer C:H:K:R:s:p");
    for (const ConvKernel* k : kernels) std::printf(" %12.12s", k->name + std::max<int>(0, int(std::strlen(k->name)) - 12));
    std::printf("  fastest\n");
    std::vector<double> totals(kernels.size(), 0.0);
    double best_total = 0;
    for (const conv_layers::Layer& L : layers) {
      Conv2dShape s;
      s.N = n, s.H = s.W = int(L.H), s.C = int(L.C), s.K = int(L.K), s.R = s.S = int(L.R);
      s.stride_h = s.stride_w = int(L.stride), s.pad_h = s.pad_w = int(L.pad);
      s.P = s.Q = int((L.H + 2 * L.pad - L.R) / L.stride + 1);
      // Room for C and K padded to 8, the widest vector any kernel takes (the stem's 3 channels).
      auto padded = [](int v, int to) { return (v + to - 1) / to * to; };
      const size_t act = size_t(s.N) * s.H * s.W * padded(s.C, 8), flt = size_t(padded(s.K, 8)) * s.R * s.S * padded(s.C, 8),
                   out = size_t(s.N) * s.P * s.Q * padded(s.K, 8);
      void *x, *w, *y;
      const size_t bytes = ElementBytes(element);
      Check(cudaMalloc(&x, bytes * act), "malloc");
      Check(cudaMalloc(&w, bytes * flt), "malloc");
      Check(cudaMalloc(&y, bytes * out), "malloc");
      Fill(x, act, element, 1), Fill(w, flt, element, 2), Fill(y, out, element, 3);
      ConvOperands o;
      if (pass == Pass::kFprop) o.a = x, o.b = w, o.c = y;
      else if (pass == Pass::kDgrad) o.a = y, o.b = w, o.c = x;
      else o.a = y, o.b = x;  // c: the slices, in the workspace
      char label[64];
      std::snprintf(label, sizeof(label), "%lld:%lld:%lld:%lld:%lld:%lld", (long long)L.C, (long long)L.H,
                    (long long)L.K, (long long)L.R, (long long)L.stride, (long long)L.pad);
      std::printf("%-22s", label);
      double best = 0;
      const char* best_name = "-";
      std::string curves;  // --splits: one line per kernel
      for (size_t i = 0; i < kernels.size(); ++i) {
        const ConvKernel& k = *kernels[i];
        double ms = -1;
        int best_split = 0;
        if (splits && pass == Pass::kWgrad) curves += std::string("    ") + k.name + ":";
        for (int split = 1; split <= (pass == Pass::kWgrad ? 128 : 1); split *= 2) {
          // C and K padded to the kernel's vectors, as conv_cutlass.h stages them.
          Conv2dShape t = s;
          t.C = padded(s.C, k.alignment), t.K = padded(s.K, k.alignment);
          t.split_k = split;
          if (!k.why_not(t).empty()) continue;
          const size_t filters = size_t(t.K) * t.R * t.S * t.C;
          const size_t slices = pass == Pass::kWgrad ? sizeof(float) * split * filters : 0;
          const size_t ws_bytes = std::max(k.workspace_bytes(t), slices);
          if (slices > (size_t(512) << 20)) break;
          void* ws = nullptr;
          if (ws_bytes) Check(cudaMalloc(&ws, ws_bytes), "malloc");
          const double split_ms = MedianMs(reps, [&] {
            if (pass != Pass::kWgrad) return k.run(t, o, ws, nullptr);
            ConvOperands ow = o;
            ow.c = ws;
            k.run(t, ow, ws, nullptr);
            const float* partials = static_cast<const float*>(ws);
            const tensorexpr::index_t size = tensorexpr::index_t(filters);
            if (element == Element::kF16)
              tensorexpr::cuda::SumSlices(partials, split, size, size, 0, 0.0f, static_cast<tensorexpr::half_t*>(w), nullptr);
            else if (element == Element::kBF16)
              tensorexpr::cuda::SumSlices(partials, split, size, size, 0, 0.0f, static_cast<tensorexpr::bf16_t*>(w), nullptr);
            else
              tensorexpr::cuda::SumSlices(partials, split, size, size, 0, 0.0f, static_cast<float*>(w), nullptr);
          });
          if (ws) cudaFree(ws);
          if (ms < 0 || split_ms < ms) ms = split_ms, best_split = split;
          if (splits && pass == Pass::kWgrad) {
            char point[32];
            std::snprintf(point, sizeof(point), " %.4f@%d", split_ms, split);
            curves += point;
          }
        }
        if (splits && pass == Pass::kWgrad) curves += ms < 0 ? " cannot run the layer\n" : "\n";
        if (ms < 0) {
          std::printf(" %12s", "-");
          totals[i] = -1e30;
          continue;
        }
        if (pass == Pass::kWgrad) {
          char cell[32];
          std::snprintf(cell, sizeof(cell), "%.4f/%d", ms, best_split);
          std::printf(" %12s", cell);
        } else {
          std::printf(" %12.4f", ms);
        }
        totals[i] += ms;
        if (best_name[0] == '-' || ms < best) best = ms, best_name = k.name;
      }
      best_total += best;
      std::printf("  %s\n%s", best_name, curves.c_str());
      cudaFree(x), cudaFree(w), cudaFree(y);
    }
    std::printf("%-22s", "sum");
    for (double t : totals) {
      if (t < 0) std::printf(" %12s", "-");
      else std::printf(" %12.4f", t);
    }
    std::printf("  %.4f (the fastest kernel per layer)\n", best_total);
    return 0;
  } catch (const tensorexpr::Error& e) {
    std::fprintf(stderr, "cutlass_kernels: %s\n", e.what());
    return 1;
  }
}
