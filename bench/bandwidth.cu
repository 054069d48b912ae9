// bench/bandwidth.cu — how close tensorexpr's GPU code comes to the hardware and to its peers, all
// measured in this one run on this one GPU:
//   1. c = a*b + 2*sqrt(abs(a)) over 2^28 fp32 (one fused kernel; 12 bytes move per element) against a
//      device-to-device cudaMemcpy of one such tensor (1 GiB; bandwidth = 2 * bytes / time: read + write);
//   2. the same expression in PyTorch eager (bench/peer_map.py, run from here), same size, same timing;
//   3. c = dot(a, b), 8192^3, fp32 / fp16 / bf16, against the raw cuBLAS call (cublasSgemm / cublasGemmEx);
//   4. with --families instead: broadcast, reductions, transposes, concat and slice at 100 MB and 1 GB
//      against a copy of the same bytes and PyTorch (bench/peer_families.py: eager; --peer-compile adds
//      torch.compile), each result checked against float64 on samples.
// Timing: CUDA events around each repetition on one stream, after warm-up; the median is reported. Ours
// and the peer alternate repetition by repetition so that clock drift hits both alike. For the families,
// every repetition (ours, the copy, PyTorch's) is preceded by a read of twice the L2's bytes: the timed
// call starts with no dirty lines left by the one before (a copy leaves up to an L2 of them, whose
// write-back would be charged to whatever runs next) and with the GPU busy, so the host's launch latency
// is hidden as in any program that keeps the GPU fed.
// Run from the repository root or from bench/ (the peer script is found in either, or via
// TE_PEER_SCRIPT=path); a short table comes last.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <string>
#include <vector>
#include <sys/stat.h>
#include <curand.h>
#include <tensorexpr/cuda/tensorexpr_cuda.cuh>
#include "families.h"

namespace {
using namespace tensorexpr;
using namespace tensorexpr::expr;

#define BENCH_CURAND_CHECK(call)                                                         \
  do {                                                                                   \
    const curandStatus_t st_ = (call);                                                   \
    if (st_ != CURAND_STATUS_SUCCESS) Fail(#call, " failed with curand status ", int(st_)); \
  } while (0)

// Median milliseconds of `reps` runs of each function, alternating, after `warmup` runs of each; `before`
// (untimed) runs ahead of each timed run when given.
std::vector<double> AlternatingMedians(cudaStream_t s, int warmup, int reps, const std::vector<std::function<void()>>& fs,
                                       const std::function<void()>& before = {}) {
  cudaEvent_t start, stop;
  TE_CUDA_CHECK(cudaEventCreate(&start));
  TE_CUDA_CHECK(cudaEventCreate(&stop));
  for (int w = 0; w < warmup; ++w)
    for (const auto& f : fs) f();
  TE_CUDA_CHECK(cudaStreamSynchronize(s));
  std::vector<std::vector<float>> times(fs.size());
  for (int r = 0; r < reps; ++r) {
    for (size_t i = 0; i < fs.size(); ++i) {
      if (before) before();
      TE_CUDA_CHECK(cudaEventRecord(start, s));
      fs[i]();
      TE_CUDA_CHECK(cudaEventRecord(stop, s));
      TE_CUDA_CHECK(cudaEventSynchronize(stop));
      float ms = 0;
      TE_CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
      times[i].push_back(ms);
    }
  }
  TE_CUDA_CHECK(cudaEventDestroy(start));
  TE_CUDA_CHECK(cudaEventDestroy(stop));
  std::vector<double> medians;
  for (auto& t : times) {
    std::sort(t.begin(), t.end());
    medians.push_back(t.size() % 2 ? t[t.size() / 2] : 0.5 * (t[t.size() / 2 - 1] + t[t.size() / 2]));
  }
  return medians;
}

// Uniform values in [-1, 1) into a float tensor, on t's stream.
void FillUniform(curandGenerator_t gen, Tensor<gpu, 1, float> t) {
  BENCH_CURAND_CHECK(curandGenerateUniform(gen, t.dptr_, static_cast<size_t>(t.shape_[0])));
  t = t * 2.0f - 1.0f;
}

struct Row {
  std::string what, ours, peer, ratio;
};
std::vector<Row> g_table;

using families::Fmt;

// ---- 1 + 2: the fused map against a copy and against PyTorch ---------------------------------------

bool FileExists(const std::string& p) {
  struct stat st;
  return stat(p.c_str(), &st) == 0;
}

std::string PeerScript() {
  if (const char* env = std::getenv("TE_PEER_SCRIPT")) return env;
  for (std::string p : {"peer_map.py", "bench/peer_map.py"})
    if (FileExists(p)) return p;
#ifdef TE_BENCH_SOURCE_DIR
  if (FileExists(std::string(TE_BENCH_SOURCE_DIR) + "/peer_map.py")) return std::string(TE_BENCH_SOURCE_DIR) + "/peer_map.py";
#endif
  return "bench/peer_map.py";
}

// Runs the PyTorch peer and returns its median ms (negative when it could not run).
double RunPeerMap(index_t n, int reps) {
  const std::string cmd = "python3 " + PeerScript() + " --n " + std::to_string(n) + " --reps " + std::to_string(reps) + " 2>&1";
  std::printf("  peer: %s\n", cmd.c_str());
  std::fflush(stdout);
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return -1;
  char line[1024];
  double ms = -1;
  while (std::fgets(line, sizeof(line), p)) {
    std::printf("    | %s", line);
    if (std::strncmp(line, "peer_map_ms ", 12) == 0) ms = std::atof(line + 12);
  }
  const int status = pclose(p);
  if (status != 0) std::printf("    (peer exited with status %d)\n", status);
  return ms;
}

struct MapTimes {
  double map_ms, copy_ms;
};

// Times the map and the copy (alternating); the tensors are gone when this returns.
MapTimes MeasureMap(Stream<gpu>* s, curandGenerator_t gen, index_t n, int warmup, int reps) {
  TensorContainer<gpu, 1, float> a, b, c;
  for (auto* t : {&a, &b, &c}) {
    t->set_stream(s);
    t->Resize(Shape1(n));
  }
  FillUniform(gen, a.view());
  FillUniform(gen, b.view());
  const auto expression = a * b + 2.0f * F<op::sqrt>(F<op::abs>(a));
  const cuda::MapRoute route = cuda::ChooseMapRoute(c.view(), expression);
  std::printf("  route: %s, %d lanes, %s index\n", cuda::MapPathName(route.path), route.lanes,
              route.index32 ? "32-bit" : "64-bit");
  const size_t copy_bytes = sizeof(float) * static_cast<size_t>(n);
  const std::vector<double> ms = AlternatingMedians(
      s->stream(), warmup, reps,
      {[&] { c = expression; },
       [&] { TE_CUDA_CHECK(cudaMemcpyAsync(c.dptr_, a.dptr_, copy_bytes, cudaMemcpyDeviceToDevice, s->stream())); }});

  // The timed loop ends with the copy: compute once more and check the last elements against float64.
  c = expression;
  const index_t sample = std::min<index_t>(n, 1 << 16), off = n - sample;
  TensorContainer<cpu, 1, float> ha(Shape1(sample)), hb(Shape1(sample)), hc(Shape1(sample));
  Copy(ha.view(), a.Slice(off, n), s);
  Copy(hb.view(), b.Slice(off, n), s);
  Copy(hc.view(), c.Slice(off, n), s);
  s->Wait();
  index_t bad = 0;
  for (index_t i = 0; i < sample; ++i) {
    const double av = ha.dptr_[i], want = av * hb.dptr_[i] + 2.0 * std::sqrt(std::fabs(av));
    bad += !(std::fabs(hc.dptr_[i] - want) <= 1e-5 * std::max(1.0, std::fabs(want)));
  }
  std::printf("  check: %lld of the last %lld elements differ from float64\n", (long long)bad, (long long)sample);
  return {ms[0], ms[1]};
}

void BenchMap(Stream<gpu>* s, curandGenerator_t gen) {
  const index_t n = index_t(1) << 28;
  const int warmup = 5, reps = 50;
  const double map_bytes = 12.0 * n, copy_bytes = 4.0 * n;
  std::printf("\n[1] c = a*b + 2*sqrt(abs(a)), %lld fp32 elements (%.0f MiB per tensor)\n", (long long)n,
              copy_bytes / (1 << 20));
  const MapTimes t = MeasureMap(s, gen, n, warmup, reps);
  const double map_gbps = map_bytes / (t.map_ms * 1e-3) / 1e9, copy_gbps = 2 * copy_bytes / (t.copy_ms * 1e-3) / 1e9;
  std::printf("  ours:  %.4f ms  -> %.1f GB/s effective (12 B/element)\n", t.map_ms, map_gbps);
  std::printf("  copy:  %.4f ms  -> %.1f GB/s (cudaMemcpyAsync D2D of one tensor, 2 x bytes / time)\n", t.copy_ms,
              copy_gbps);
  std::printf("  ours / copy bandwidth: %.3f\n", map_gbps / copy_gbps);
  g_table.push_back({"map 2^28 fp32 vs D2D copy", Fmt("%.0f GB/s", map_gbps), Fmt("copy %.0f GB/s", copy_gbps),
                     Fmt("%.3f", map_gbps / copy_gbps)});

  // Our tensors are freed; give the pooled memory back before PyTorch allocates its own.
  s->Wait();
  ReleaseCachedResources<gpu>();
  std::printf("\n[2] the same expression in PyTorch eager (CUDA events, median of %d)\n", reps);
  const double peer_ms = RunPeerMap(n, reps);
  if (peer_ms > 0) {
    const double peer_gbps = map_bytes / (peer_ms * 1e-3) / 1e9;
    std::printf("  peer:  %.4f ms  -> %.1f GB/s;  our speedup over the peer: %.2fx\n", peer_ms, peer_gbps,
                peer_ms / t.map_ms);
    g_table.push_back({"map 2^28 fp32 vs PyTorch eager", Fmt("%.0f GB/s", map_gbps), Fmt("torch %.0f GB/s", peer_gbps),
                       Fmt("%.2fx", peer_ms / t.map_ms)});
  } else {
    std::printf("  peer not measured (see its output above)\n");
    g_table.push_back({"map 2^28 fp32 vs PyTorch eager", Fmt("%.0f GB/s", map_gbps), "not measured", "-"});
  }
}

// ---- 4: expression families (families.h) against a copy of the same bytes, and against PyTorch --------
// At two sizes: x of (N, 256, 3136) fp32, N = 32 (103 MB) and N = 320 (1.03 GB); the copy is
// cudaMemcpyAsync of x (2 x its bytes per time).

std::string FamiliesPeerScript() {
  if (const char* env = std::getenv("TE_FAMILIES_PEER_SCRIPT")) return env;
  for (std::string p : {"peer_families.py", "bench/peer_families.py"})
    if (FileExists(p)) return p;
#ifdef TE_BENCH_SOURCE_DIR
  return std::string(TE_BENCH_SOURCE_DIR) + "/peer_families.py";
#endif
  return "bench/peer_families.py";
}

// Runs the PyTorch families peer at x's batch N; returns name -> (eager ms, compiled ms or -1).
std::map<std::string, std::pair<double, double>> RunFamiliesPeer(index_t n_batch, int reps, bool compile) {
  std::map<std::string, std::pair<double, double>> r;
  const std::string cmd = "python3 " + FamiliesPeerScript() + " --n " + std::to_string(n_batch) + " --reps " +
                          std::to_string(reps) + (compile ? " --compile" : "") + " 2>&1";
  std::printf("  peer: %s\n", cmd.c_str());
  std::fflush(stdout);
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return r;
  char line[1024];
  while (std::fgets(line, sizeof(line), p)) {
    std::printf("    | %s", line);
    char name[256];
    double eager, compiled;
    if (std::sscanf(line, "peer_family %255s eager_ms %lf compile_ms %lf", name, &eager, &compiled) == 3)
      r[name] = {eager, compiled};
  }
  pclose(p);
  return r;
}

// ---- 3: dot against raw cuBLAS ----------------------------------------------------------------------

template <typename DType> cudaDataType_t CudaType();
template <> cudaDataType_t CudaType<half_t>() { return CUDA_R_16F; }
template <> cudaDataType_t CudaType<bf16_t>() { return CUDA_R_16BF; }

// Row-major C = A * B (all n x n) as column-major C^T = B^T * A^T: the operands swap, nothing is copied.
template <typename DType>
void RawGemm(cublasHandle_t h, int n, const DType* a, const DType* b, DType* c) {
  const float alpha = 1.0f, beta = 0.0f;
  if constexpr (std::is_same<DType, float>::value) {
    TE_CUBLAS_CHECK(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &alpha, b, n, a, n, &beta, c, n));
  } else {
    TE_CUBLAS_CHECK(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &alpha, b, CudaType<DType>(), n, a,
                                 CudaType<DType>(), n, &beta, c, CudaType<DType>(), n, CUBLAS_COMPUTE_32F,
                                 CUBLAS_GEMM_DEFAULT));
  }
}

template <typename DType>
void BenchDot(Stream<gpu>* s, curandGenerator_t gen, cublasHandle_t raw, const char* name) {
  const index_t n = 8192;
  const int warmup = 3, reps = 20;
  TensorContainer<gpu, 2, DType> a, b, c, c_raw;
  for (auto* t : {&a, &b, &c, &c_raw}) {
    t->set_stream(s);
    t->Resize(Shape2(n, n));
  }
  {
    TensorContainer<gpu, 1, float> tmp;
    tmp.set_stream(s);
    tmp.Resize(Shape1(n * n));
    FillUniform(gen, tmp.view());
    a.FlatTo1D() = tcast<DType>(tmp.view());
    FillUniform(gen, tmp.view());
    b.FlatTo1D() = tcast<DType>(tmp.view());
  }
  const std::vector<double> ms = AlternatingMedians(
      s->stream(), warmup, reps,
      {[&] { c = dot(a.view(), b.view()); }, [&] { RawGemm<DType>(raw, int(n), a.dptr_, b.dptr_, c_raw.dptr_); }});
  // Both results should agree (same library underneath): largest difference relative to the largest value.
  TensorContainer<gpu, 2, float> diff;
  diff.set_stream(s);
  diff.Resize(Shape2(n, n));
  diff = F<op::abs>(tcast<float>(c.view()) - tcast<float>(c_raw.view()));
  TensorContainer<cpu, 2, float> hd(Shape2(n, n)), hr(Shape2(n, n));
  TensorContainer<gpu, 2, float> raw_f;
  raw_f.set_stream(s);
  raw_f.Resize(Shape2(n, n));
  raw_f = F<op::abs>(tcast<float>(c_raw.view()));
  Copy(hd.view(), diff.view(), s);
  Copy(hr.view(), raw_f.view(), s);
  s->Wait();
  double max_diff = 0, max_val = 0;
  for (index_t i = 0; i < n * n; ++i) {
    max_diff = std::max<double>(max_diff, hd.dptr_[i]);
    max_val = std::max<double>(max_val, hr.dptr_[i]);
  }
  const double flops = 2.0 * n * n * n;
  const double ours = flops / (ms[0] * 1e-3) / 1e12, peer = flops / (ms[1] * 1e-3) / 1e12;
  std::printf("  %-5s ours %.3f ms (%.1f TFLOP/s), raw cuBLAS %.3f ms (%.1f TFLOP/s), ratio %.3f; max |diff| %.3g of max %.3g\n",
              name, ms[0], ours, ms[1], peer, ms[1] / ms[0], max_diff, max_val);
  g_table.push_back({std::string("gemm 8192^3 ") + name, Fmt("%.1f TFLOP/s", ours),
                     std::string(std::is_same<DType, float>::value ? "Sgemm " : "GemmEx ") + Fmt("%.1f TFLOP/s", peer),
                     Fmt("%.3f", ms[1] / ms[0])});
}

}  // namespace

int main(int argc, char** argv) {
  bool families = false, peer = true, peer_compile = false;
  std::vector<index_t> batches = {32, 320};
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--families") families = true;
    else if (a == "--no-peer") peer = false;
    else if (a == "--peer-compile") peer_compile = true;
    else if (a == "--n" && i + 1 < argc) {
      batches.clear();
      for (const char* p = argv[++i]; *p != '\0';) {
        char* end = nullptr;
        batches.push_back(std::strtoll(p, &end, 10));
        if (end == p || batches.back() < 1) {
          std::fprintf(stderr, "--n %s: batch sizes >= 1, separated by commas\n", argv[i]);
          return 2;
        }
        p = *end == ',' ? end + 1 : end;
      }
    } else {
      std::fprintf(stderr, "usage: %s [--families [--n 32,320] [--no-peer] [--peer-compile]]\n"
                   "  (default: the fused map, the PyTorch map and dot against cuBLAS; --families: the expression\n"
                   "  families table for x of (N, 256, 3136) fp32, N = 32 (103 MB) and 320 (1.03 GB) unless --n says\n"
                   "  otherwise, with PyTorch eager and, with --peer-compile, torch.compile)\n",
                   argv[0]);
      return 2;
    }
  }
  try {
    InitTensorEngine<gpu>(0);
    cudaDeviceProp prop;
    TE_CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
    std::printf("tensorexpr bandwidth / gemm benchmark on %s (%d SMs, %.1f GiB)\n", prop.name, prop.multiProcessorCount,
                prop.totalGlobalMem / double(1 << 30));
    Stream<gpu>* s = NewStream<gpu>(true);
    curandGenerator_t gen;
    BENCH_CURAND_CHECK(curandCreateGenerator(&gen, CURAND_RNG_PSEUDO_PHILOX4_32_10));
    BENCH_CURAND_CHECK(curandSetPseudoRandomGeneratorSeed(gen, 20240611ull));
    BENCH_CURAND_CHECK(curandSetStream(gen, s->stream()));

    if (families) {
      // Read twice the L2's bytes before each timed run (see the top of this file).
      TensorContainer<gpu, 1, float> flush, flush_sum;
      flush.set_stream(s), flush_sum.set_stream(s);
      flush.Resize(Shape1(std::max<index_t>(2 * index_t(prop.l2CacheSize), 1 << 24) / 4), 0.f);
      flush_sum.Resize(Shape1(1));
      const auto flush_l2 = [&] { flush_sum = sumall(flush.view()); };
      const families::FamilyHooks<gpu> hooks{
          [&](Tensor<gpu, 1, float> t) { FillUniform(gen, t); },
          [&](const std::vector<std::function<void()>>& fs) {
            return AlternatingMedians(s->stream(), 3, 20, fs, flush_l2);
          },
          [&](float* dst, const float* src, size_t bytes) {
            TE_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, s->stream()));
          }};
      std::vector<families::FamilyResult> all;
      families::PeerTimes peers;
      bool ok = true;
      for (const index_t n : batches) {
        for (const families::FamilyResult& r : families::BenchFamilies(s, hooks, n)) all.push_back(r), ok = ok && r.ok;
        s->Wait();
        ReleaseCachedResources<gpu>();  // PyTorch allocates its own
        if (peer) peers[double(n) / 32] = RunFamiliesPeer(n, 20, peer_compile);
      }
      families::PrintFamilies(all, peers, "cudaMemcpyAsync D2D");
      BENCH_CURAND_CHECK(curandDestroyGenerator(gen));
      DeleteStream(s);
      ShutdownTensorEngine<gpu>();
      return ok ? 0 : 1;
    }
    BenchMap(s, gen);

    std::printf("\n[3] c = dot(a, b), 8192 x 8192 x 8192, against the raw cuBLAS call (strict fp32; fp16/bf16 with fp32 compute)\n");
    cublasHandle_t raw;
    TE_CUBLAS_CHECK(cublasCreate(&raw));
    TE_CUBLAS_CHECK(cublasSetStream(raw, s->stream()));
    BenchDot<float>(s, gen, raw, "fp32");
    BenchDot<half_t>(s, gen, raw, "fp16");
    BenchDot<bf16_t>(s, gen, raw, "bf16");
    TE_CUBLAS_CHECK(cublasDestroy(raw));
    BENCH_CURAND_CHECK(curandDestroyGenerator(gen));
    DeleteStream(s);

    std::printf("\n| %-32s | %-16s | %-22s | %-9s |\n", "what", "ours", "peer (same run)", "ours/peer");
    std::printf("|%s|%s|%s|%s|\n", std::string(34, '-').c_str(), std::string(18, '-').c_str(), std::string(24, '-').c_str(),
                std::string(11, '-').c_str());
    for (const Row& r : g_table)
      std::printf("| %-32s | %-16s | %-22s | %-9s |\n", r.what.c_str(), r.ours.c_str(), r.peer.c_str(), r.ratio.c_str());
    std::printf("(map: ratio of bandwidths, or speedup over the peer; gemm: peer time / our time)\n");
    ShutdownTensorEngine<gpu>();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bandwidth benchmark failed: %s\n", e.what());
    return 1;
  }
  return 0;
}
