// bench/families.h — the expression families whose bandwidth the benchmarks report, for either device: the
// GPU table (bandwidth.cu --families) and the CPU one (bandwidth_cpu.cpp). Each family runs at x of
// (N, 256, 3136) fp32 against a plain copy of x's bytes, alternating repetition by repetition; effective
// bytes = destination written + sources read once; a.T() takes a square matrix of about x's bytes. Every
// result is checked against float64 on sampled elements, so that a wrong result cannot pass as fast.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <map>
#include <string>
#include <vector>
#include <tensorexpr/tensorexpr.h>

namespace families {
using namespace tensorexpr;
using namespace tensorexpr::expr;

inline std::string Fmt(const char* fmt, double v) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), fmt, v);
  return buf;
}

struct FamilyResult {
  std::string key, name;  // key: the peer's name for it
  double scale;           // N / 32
  double bytes;           // effective bytes
  double ms, copy_ms;     // ours, and the copy of x
  double copy_bytes;      // bytes of x
  bool ok;
};

// Host copy of a tensor (waits for its stream).
template <typename Device, int dim>
TensorContainer<cpu, dim, float> Host(Stream<Device>* s, const Tensor<Device, dim, float>& t) {
  TensorContainer<cpu, dim, float> h(t.shape_);
  Copy(h.view(), t, s);
  WaitStream(s);
  return h;
}

// Checks `got` at `samples` positions against ref(flat index): |got - ref| <= tol * (1 + |ref|).
template <typename Ref>
inline bool CheckSamples(const char* what, const float* got, index_t n, Ref ref, double tol) {
  index_t bad = 0, samples = std::min<index_t>(n, 4096);
  for (index_t k = 0; k < samples; ++k) {
    const index_t i = (k * 2654435761ll) % n;
    const double want = ref(i);
    bad += !(std::fabs(got[i] - want) <= tol * (1.0 + std::fabs(want)));
  }
  if (bad) std::printf("  check FAILED for %s: %lld of %lld samples differ\n", what, (long long)bad, (long long)samples);
  return bad == 0;
}

// What differs between the devices: filling with uniform values in [-1, 1), timing (ours and the copy
// alternating: the two medians, in ms), and the plain copy of `bytes` that sets the reference bandwidth.
template <typename Device>
struct FamilyHooks {
  std::function<void(Tensor<Device, 1, float>)> fill;
  std::function<std::vector<double>(const std::vector<std::function<void()>>&)> alternate;
  std::function<void(float* dst, const float* src, size_t bytes)> copy;
};

template <typename Device>
std::vector<FamilyResult> BenchFamilies(Stream<Device>* s, const FamilyHooks<Device>& hooks, index_t n_batch) {
  const index_t N = n_batch, C = 256, HW = 3136, size = N * C * HW;
  const double S = 4.0 * size, scale = double(N) / 32;
  std::printf("\nexpression families, x of (%lld, %lld, %lld) fp32 = %.0f MB\n", (long long)N, (long long)C,
              (long long)HW, S / 1e6);
  TensorContainer<Device, 3, float> x, y, yt;
  TensorContainer<Device, 1, float> flat, bias, out1;
  TensorContainer<Device, 2, float> out2;
  TensorContainer<Device, 3, float> h1, h2, half_out;
  for (auto* t : {&x, &y, &yt, &h1, &h2, &half_out}) t->set_stream(s);
  for (auto* t : {&flat, &bias, &out1}) t->set_stream(s);
  out2.set_stream(s);
  x.Resize(Shape3(N, C, HW));
  y.Resize(Shape3(N, C, HW));
  yt.Resize(Shape3(N, HW, C));
  bias.Resize(Shape1(C));
  {
    hooks.fill(Tensor<Device, 1, float>(x.dptr_, Shape1(size), s));
    hooks.fill(bias.view());
  }
  h1.Resize(Shape3(N, C / 2, HW));
  h2.Resize(Shape3(N, C / 2, HW));
  h1 = slice<1>(x.view(), 0, C / 2);
  h2 = slice<1>(x.view(), C / 2, C);
  half_out.Resize(Shape3(N, C / 2, HW));
  const auto xh = Host(s, x.view());
  const auto bh = Host(s, bias.view());
  auto X = [&](index_t n, index_t c, index_t p) { return double(xh.dptr_[(n * C + c) * HW + p]); };
  const size_t xbytes = sizeof(float) * size_t(size);

  std::vector<FamilyResult> results;
  auto run = [&](const std::string& key, const std::string& name, double bytes, const std::function<void()>& f,
                 const std::function<bool()>& check) {
    const std::vector<double> ms = hooks.alternate({f, [&] { hooks.copy(y.dptr_, x.dptr_, xbytes); }});
    f();
    const bool ok = check();
    const double gbps = bytes / (ms[0] * 1e-3) / 1e9, copy_gbps = 2 * S / (ms[1] * 1e-3) / 1e9;
    std::printf("  %-34s %8.3f ms %7.0f GB/s   copy %7.0f GB/s   of copy %.3f%s\n", name.c_str(), ms[0], gbps, copy_gbps,
                gbps / copy_gbps, ok ? "" : "  (WRONG RESULT)");
    results.push_back({key, name, scale, bytes, ms[0], ms[1], S, ok});
  };

  run("broadcast", "x + broadcast<1>(bias)", 2 * S, [&] { y = x.view() + broadcast<1>(bias.view(), y.shape_); }, [&] {
    const auto h = Host(s, y.view());
    return CheckSamples("broadcast", h.dptr_, size, [&](index_t i) { return X(0, 0, i) + bh.dptr_[i / HW % C]; }, 1e-6);
  });
  // The same sum over 7-wide rows (x as (N, C, HW / 7, 7)), as a bias add over NCHW 7x7 activations reads:
  // the rows are narrower than a vector.
  {
    const Shape<4> s4 = Shape4(N, C, HW / 7, 7);
    const Tensor<Device, 4, float> x4(x.dptr_, s4, s);
    Tensor<Device, 4, float> y4(y.dptr_, s4, s);
    run("broadcast_rows7", "x + broadcast<1>(bias), 7-wide rows", 2 * S,
        [&] { y4 = x4 + broadcast<1>(bias.view(), s4); }, [&] {
          const auto h = Host(s, y.view());
          return CheckSamples("broadcast, 7-wide rows", h.dptr_, size,
                              [&](index_t i) { return X(0, 0, i) + bh.dptr_[i / HW % C]; }, 1e-6);
        });
  }
  out1.Resize(Shape1(C));
  run("sumall_except_dim", "sumall_except_dim<1>(x)", S, [&] { out1 = sumall_except_dim<1>(x.view()); }, [&] {
    const auto h = Host(s, out1.view());
    return CheckSamples("sumall_except_dim", h.dptr_, C, [&](index_t c) {
      double acc = 0;
      for (index_t n = 0; n < N; ++n)
        for (index_t p = 0; p < HW; ++p) acc += X(n, c, p);
      return acc;
    }, 1e-5 * double(N * HW));
  });
  out2.Resize(Shape2(N, C));
  run("reduce_sum", "reduce_with_axis<sum>(x, 2)", S, [&] { out2 = reduce_with_axis<red::sum>(x.view(), 2); }, [&] {
    const auto h = Host(s, out2.view());
    return CheckSamples("reduce sum", h.dptr_, N * C, [&](index_t r) {
      double acc = 0;
      for (index_t p = 0; p < HW; ++p) acc += X(0, r, p);
      return acc;
    }, 1e-5 * double(HW));
  });
  run("reduce_max", "reduce_with_axis<maximum>(x, 2)", S, [&] { out2 = reduce_with_axis<red::maximum>(x.view(), 2); }, [&] {
    const auto h = Host(s, out2.view());
    return CheckSamples("reduce max", h.dptr_, N * C, [&](index_t r) {
      double m = -INFINITY;
      for (index_t p = 0; p < HW; ++p) m = std::max(m, X(0, r, p));
      return m;
    }, 0.0);
  });
  auto check_nhwc = [&] {
    const auto h = Host(s, yt.view());
    return CheckSamples("NCHW -> NHWC", h.dptr_, size, [&](index_t i) {
      const index_t c = i % C, p = i / C % HW, n = i / (C * HW);
      return X(n, c, p);
    }, 0.0);
  };
  run("swapaxis", "swapaxis<2,1>(x)", 2 * S, [&] { yt = swapaxis<2, 1>(x.view()); }, check_nhwc);
  run("transpose", "transpose(x, (0,2,1))", 2 * S, [&] { yt = transpose(x.view(), Shape3(0, 2, 1)); }, check_nhwc);
  run("concat", "concat<1>(h1, h2)", 2 * S, [&] { y = concat<1>(h1.view(), h2.view()); }, [&] {
    const auto h = Host(s, y.view());
    return CheckSamples("concat", h.dptr_, size, [&](index_t i) { return X(0, 0, i); }, 0.0);
  });
  run("slice", "slice<1>(x, 0, C/2)", S, [&] { half_out = slice<1>(x.view(), 0, C / 2); }, [&] {
    const auto h = Host(s, half_out.view());
    return CheckSamples("slice", h.dptr_, size / 2, [&](index_t i) {
      const index_t p = i % HW, c = i / HW % (C / 2), n = i / (HW * C / 2);
      return X(n, c, p);
    }, 0.0);
  });
  out1.Resize(Shape1(1));
  {
    Tensor<Device, 1, float> xf(x.dptr_, Shape1(size), s);
    run("sumall", "sumall(flat)", S, [&] { out1 = sumall(xf); }, [&] {
      const auto h = Host(s, out1.view());
      double acc = 0;
      for (index_t i = 0; i < size; ++i) acc += xh.dptr_[i];
      // Rounding of a float sum grows with the sum of magnitudes (about size / 2 here), not with the result.
      return CheckSamples("sumall", h.dptr_, 1, [&](index_t) { return acc; }, 1e-5 * size / (1 + std::fabs(acc)));
    });
  }
  // a.T() of a square matrix of about x's bytes.
  {
    const index_t n = index_t(std::sqrt(double(size)) / 32) * 32;
    TensorContainer<Device, 2, float> a, b;
    a.set_stream(s), b.set_stream(s);
    a.Resize(Shape2(n, n));
    b.Resize(Shape2(n, n));
    hooks.fill(Tensor<Device, 1, float>(a.dptr_, Shape1(n * n), s));
    const auto ah = Host(s, a.view());
    run("matrix_T", "b = a.T() (" + std::to_string(n) + "^2)", 2.0 * 4 * n * n, [&] { b = a.view().T(); }, [&] {
      const auto h = Host(s, b.view());
      return CheckSamples("a.T()", h.dptr_, n * n, [&](index_t i) { return double(ah.dptr_[(i % n) * n + i / n]); }, 0.0);
    });
  }
  return results;
}

// Peer timings per size (N / 32) and family key: (eager ms, compiled ms), -1 where not measured.
using PeerTimes = std::map<double, std::map<std::string, std::pair<double, double>>>;

// The families table: ours against the copy (`copy_name` says which) and the peer, at each size.
inline void PrintFamilies(const std::vector<FamilyResult>& rs, const PeerTimes& peers, const char* copy_name) {
  std::printf("\n| %-30s | %7s | %9s | %7s | %12s | %10s | %14s |\n", "expression", "x", "ours GB/s", "of copy",
              "eager GB/s", "ours/eager", "compiled GB/s");
  std::printf("|%s|%s|%s|%s|%s|%s|%s|\n", std::string(32, '-').c_str(), std::string(9, '-').c_str(),
              std::string(11, '-').c_str(), std::string(9, '-').c_str(), std::string(14, '-').c_str(),
              std::string(12, '-').c_str(), std::string(16, '-').c_str());
  for (const FamilyResult& r : rs) {
    const double gbps = r.bytes / (r.ms * 1e-3) / 1e9, copy = 2 * r.copy_bytes / (r.copy_ms * 1e-3) / 1e9;
    double eager = -1, compiled = -1;
    auto pi = peers.find(r.scale);
    if (pi != peers.end()) {
      auto f = pi->second.find(r.key);
      if (f != pi->second.end()) eager = f->second.first, compiled = f->second.second;
    }
    auto gb = [&](double ms) { return ms > 0 ? Fmt("%.0f", r.bytes / (ms * 1e-3) / 1e9) : std::string("-"); };
    std::printf("| %-30s | %4.0f MB | %9.0f | %7.3f | %12s | %10s | %14s |%s\n", r.name.c_str(), r.copy_bytes / 1e6, gbps,
                gbps / copy, gb(eager).c_str(), eager > 0 ? Fmt("%.2f", eager / r.ms).c_str() : "-",
                gb(compiled).c_str(), r.ok ? "" : " WRONG RESULT");
  }
  std::printf("(of copy: our effective bandwidth / %s bandwidth of x in the same run; ours/eager: "
              "PyTorch eager time / our time, above 1: ours is faster)\n", copy_name);
}

}  // namespace families
