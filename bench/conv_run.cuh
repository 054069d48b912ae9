// bench/conv_run.cuh — what the GPU convolution benchmarks share (conv_bench.cu, conv_accuracy.cu): the
// stream's float math, the data shape of a layer in either layout, hashed inputs, and the selection log's
// record of the algorithm chosen for each pass.
#pragma once
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>
#include <tensorexpr/cuda/tensorexpr_cuda.cuh>
#include <tensorexpr/ops/conv_select.h>
#include <tensorexpr/ops/convolution.h>
#include "conv_layers.h"

namespace conv_run {
using namespace tensorexpr;

// The stream's float math: strict, TF32, or three TF32 products per product.
inline void SetFloatMath(Stream<gpu>* stream, ops::ConvMath math) {
  stream->set_tf32(math == ops::ConvMath::kTF32);
  stream->set_tf32x3(math == ops::ConvMath::kTF32x3);
}

// Data of n images, c channels and `extent` in every spatial dimension, in the layout's order.
template <int dim>
Shape<dim> DataShape(ops::Layout layout, index_t n, index_t c, index_t extent) {
  Shape<dim> s;
  s[0] = n;
  for (int i = 1; i < dim; ++i) s[i] = extent;
  s[layout == ops::Layout::kNHWC ? dim - 1 : 1] = c;
  return s;
}

template <int dim>
std::vector<index_t> Dims(const Shape<dim>& s) {
  return std::vector<index_t>(s.shape_, s.shape_ + dim);
}

// conv_layers.h's hashed values, rounded to DType.
template <typename DType>
__global__ void FillHashKernel(DType* p, index_t n, uint32_t seed) {
  for (index_t i = blockIdx.x * index_t(blockDim.x) + threadIdx.x; i < n; i += index_t(blockDim.x) * gridDim.x)
    p[i] = DType(conv_layers::HashValue(i, seed));
}
template <int dim, typename DType>
void FillHash(Tensor<gpu, dim, DType> t, uint32_t seed) {
  const index_t n = t.shape_.Size();
  FillHashKernel<<<1024, 256, 0, Stream<gpu>::GetStream(t.stream_)>>>(t.dptr_, n, seed);
  TE_CUDA_CHECK_LAUNCH("FillHashKernel");
}

// The algorithm the library chose for each pass of one convolution. Empty: no choice was logged while it
// ran, because it was made earlier (the same problem before, or a tuned choice from TE_CONV_CACHE).
struct ChosenAlgorithms {
  std::string forward, data_grad, weight_grad;
};

// Reads one entry of the selection log: "tensorexpr conv: <pass> <dtype> ..." first, "  -> <name> (why)"
// last. Returns false for anything else (a warning).
inline bool RecordChoice(const std::string& entry, ChosenAlgorithms* chosen) {
  const std::string prefix = "tensorexpr conv: ", arrow = "\n  -> ";
  const size_t at = entry.rfind(arrow);
  if (entry.compare(0, prefix.size(), prefix) != 0 || at == std::string::npos) return false;
  const size_t name_at = at + arrow.size();
  const std::string name = entry.substr(name_at, entry.find(' ', name_at) - name_at);
  const std::string pass = entry.substr(prefix.size(), entry.find(' ', prefix.size()) - prefix.size());
  if (pass == ops::ConvPassName(ops::ConvPass::kForward)) chosen->forward = name;
  else if (pass == ops::ConvPassName(ops::ConvPass::kBackwardData)) chosen->data_grad = name;
  else if (pass == ops::ConvPassName(ops::ConvPass::kBackwardWeight)) chosen->weight_grad = name;
  else return false;
  return true;
}

// Whether TE_LOG asks for the selection log on stderr, as the library reads it.
inline bool ConvLogRequested() {
  const char* l = std::getenv("TE_LOG");
  if (l == nullptr) return false;
  const std::string topics = std::string(",") + l + ",";
  return topics.find(",conv,") != std::string::npos || topics.find(",all,") != std::string::npos;
}

// While it lives, the selection log goes to `chosen`; warnings still reach stderr, and so does everything
// when TE_LOG asks for it. Afterwards the log is as the library set it up from TE_LOG.
class ChoiceRecorder {
 public:
  explicit ChoiceRecorder(ChosenAlgorithms* chosen) {
    const bool echo = ConvLogRequested();
    ops::SetConvLog([chosen, echo](const std::string& entry) {
      if (!RecordChoice(entry, chosen) || echo) std::fprintf(stderr, "%s\n", entry.c_str());
    });
  }
  ~ChoiceRecorder() {
    if (ConvLogRequested()) ops::SetConvLog([](const std::string& entry) { std::fprintf(stderr, "%s\n", entry.c_str()); });
    else ops::SetConvLog(nullptr);
  }
  ChoiceRecorder(const ChoiceRecorder&) = delete;
  ChoiceRecorder& operator=(const ChoiceRecorder&) = delete;
};

// "forward / data-grad / weight-grad" algorithm names; "(cached)" where a choice was made before this run
// of the problem and so not logged.
inline std::string AlgorithmsText(const ChosenAlgorithms& c) {
  auto name = [](const std::string& s) { return s.empty() ? std::string("(cached)") : s; };
  return name(c.forward) + " / " + name(c.data_grad) + " / " + name(c.weight_grad);
}

}  // namespace conv_run
