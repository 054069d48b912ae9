// examples/basic_stream.cu — GPU streams: two streams fill two matrices independently (they may run at
// the same time), a third multiplies them once both are ready, and the host waits only for the result.
//
// Every tensor carries the stream its work is queued on (t.stream_); assignments and Copy run there,
// asynchronously. Work on one stream runs in order; between streams, order comes from events (or, more
// bluntly, from stream->Wait() on the host).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>
#include <tensorexpr/cuda/tensorexpr_cuda.cuh>

using namespace tensorexpr;
using namespace tensorexpr::expr;

int Run() {
  InitTensorEngine<gpu>(0);
  Stream<gpu>* fill_a = NewStream<gpu>(false);  // no cuBLAS handle needed here
  Stream<gpu>* fill_b = NewStream<gpu>(false);
  Stream<gpu>* multiply = NewStream<gpu>(true);  // dot uses this stream's cuBLAS handle
  const index_t m = 300, k = 517, n = 129;
  double max_err = 0;
  {
    // Host data with a known pattern.
    TensorContainer<cpu, 2, float> ha(Shape2(m, k)), hb(Shape2(k, n));
    for (index_t i = 0; i < m * k; ++i) ha.dptr_[i] = static_cast<float>((i * 37) % 101) / 101.0f - 0.5f;
    for (index_t i = 0; i < k * n; ++i) hb.dptr_[i] = static_cast<float>((i * 53) % 97) / 97.0f - 0.5f;

    // a lives on fill_a: allocated, uploaded and transformed there, in order.
    TensorContainer<gpu, 2, float> a;
    a.set_stream(fill_a);
    a.Resize(Shape2(m, k));
    Copy(a.view(), ha.view(), fill_a);
    a = 2.0f * a + 0.25f;  // one fused kernel on fill_a

    // b lives on fill_b: nothing orders it against a's work.
    TensorContainer<gpu, 2, float> b;
    b.set_stream(fill_b);
    b.Resize(Shape2(k, n));
    Copy(b.view(), hb.view(), fill_b);
    b = F<op::tanh>(b);

    // The product waits (on the GPU, not the host) for both fills through events.
    cudaEvent_t a_ready, b_ready;
    TE_CUDA_CHECK(cudaEventCreateWithFlags(&a_ready, cudaEventDisableTiming));
    TE_CUDA_CHECK(cudaEventCreateWithFlags(&b_ready, cudaEventDisableTiming));
    TE_CUDA_CHECK(cudaEventRecord(a_ready, fill_a->stream()));
    TE_CUDA_CHECK(cudaEventRecord(b_ready, fill_b->stream()));
    TE_CUDA_CHECK(cudaStreamWaitEvent(multiply->stream(), a_ready, 0));
    TE_CUDA_CHECK(cudaStreamWaitEvent(multiply->stream(), b_ready, 0));

    TensorContainer<gpu, 2, float> c;
    c.set_stream(multiply);
    c.Resize(Shape2(m, n));
    c = dot(a.view(), b.view());  // cuBLAS on `multiply`

    TensorContainer<cpu, 2, float> hc(Shape2(m, n));
    Copy(hc.view(), c.view(), multiply);
    multiply->Wait();  // the only host wait: after it hc holds the product, and a and b are no longer read
    fill_a->Wait();
    fill_b->Wait();
    TE_CUDA_CHECK(cudaEventDestroy(a_ready));
    TE_CUDA_CHECK(cudaEventDestroy(b_ready));

    // Check against the same computation on the host in double.
    for (index_t i = 0; i < m; ++i)
      for (index_t j = 0; j < n; ++j) {
        double want = 0;
        for (index_t p = 0; p < k; ++p)
          want += (2.0 * ha.dptr_[i * k + p] + 0.25) * std::tanh(static_cast<double>(hb.dptr_[p * n + j]));
        max_err = std::max(max_err, std::fabs(hc.dptr_[i * n + j] - want) / std::max(1.0, std::fabs(want)));
      }
    std::printf("c = dot(a, b): %lld x %lld, c[0][0] = %.6f, max relative error vs host float64 %.2e\n",
                static_cast<long long>(m), static_cast<long long>(n), hc.dptr_[0], max_err);
  }  // the containers free their memory on their own streams here, before the streams go
  DeleteStream(fill_a);
  DeleteStream(fill_b);
  DeleteStream(multiply);
  ShutdownTensorEngine<gpu>();
  return max_err < 1e-4 ? 0 : 1;
}

int main() {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("skipped: no CUDA GPU present\n");
    return 77;  // meson's "skipped"
  }
  try {
    return Run();
  } catch (const Error& e) {  // every tensorexpr failure, CUDA and cuBLAS ones included, is an Error
    std::fprintf(stderr, "basic_stream: %s\n", e.what());
    return 1;
  }
}
