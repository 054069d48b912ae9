// tensorexpr/ops/conv_algorithm.h — the contract between the convolution operator and the ways of computing it, in
// CUTLASS's lifecycle: can it implement this problem (and if not, why not), how much workspace does it
// need, run it. The operator (ops/convolution.h) checks the tensors, decodes each req once, picks an
// algorithm per pass (ops/conv_select.h), hands it workspace from the stream's resource, and adds the
// bias itself; an algorithm sees only pointers, the problem and the decoded stores.
#pragma once
#include <string>
#include <tensorexpr/tensorexpr.h>
#include <tensorexpr/ops/conv_problem.h>

namespace tensorexpr {
namespace ops {

// The activation a fusable forward epilogue applies last.
enum class ConvActivation { kIdentity, kRelu };

// A forward epilogue in the form an algorithm may fuse into its store of the output:
//   out (req) act(convolution + bias[k] + residual)
// with the bias laid along the channel dimension and the residual shaped like the output, dense; either
// may be null. <tensorexpr/ops/conv_epilogue.h> recognises this form in an epilogue expression.
template <typename DType>
struct ConvEpilogue {
  bool active = false;
  ConvActivation activation = ConvActivation::kIdentity;
  const DType* bias = nullptr;      // K values
  const DType* residual = nullptr;  // like the output

  // The bias alone (a convolution's or deconvolution's own, no_bias unset).
  static ConvEpilogue Bias(const DType* bias) {
    ConvEpilogue e;
    e.active = true;
    e.bias = bias;
    return e;
  }
};

// The tensors of one convolution, NC(D)(H)W, dense except that the input and its gradient may have
// padded rows of the last dimension (row strides data_stride / data_grad_stride). Pointers a run does
// not touch may be null.
template <typename DType>
struct ConvTensors {
  const DType* data = nullptr;  // (N, C, spatial...)
  index_t data_stride = 0;
  const DType* weight = nullptr;  // (K, C / G, kernel...)
  DType* out = nullptr;           // forward output (N, K, out spatial...)
  const DType* out_grad = nullptr;
  DType* data_grad = nullptr;
  index_t data_grad_stride = 0;
  DType* weight_grad = nullptr;
  ConvEpilogue<DType> epilogue;  // active only for an algorithm whose FusesEpilogue said yes
};

// What one Run is asked to store: the forward output, or the data and / or weight gradient.
struct ConvStores {
  ReqStore out, data_grad, weight_grad;

  // The store of `pass`'s output.
  ReqStore& Of(ConvPass pass) {
    return pass == ConvPass::kForward ? out : pass == ConvPass::kBackwardData ? data_grad : weight_grad;
  }
  const ReqStore& Of(ConvPass pass) const { return const_cast<ConvStores*>(this)->Of(pass); }
  bool Wants(ConvPass pass) const { return Of(pass).active; }
  // Only `pass`, with `store`.
  static ConvStores Only(ConvPass pass, ReqStore store) {
    ConvStores s;
    s.Of(pass) = store;
    return s;
  }
};

// Whether an algorithm can implement a problem; `why` says what stops it when it cannot.
struct ConvSupport {
  bool ok = true;
  std::string why;
  static ConvSupport Yes() { return ConvSupport(); }
  static ConvSupport No(std::string reason) { return ConvSupport{false, std::move(reason)}; }
};

template <typename Device, typename DType>
class ConvAlgorithm {
 public:
  virtual ~ConvAlgorithm() = default;
  // A short stable name: what ConvolutionParam::algorithm, the log and the tuning cache use.
  virtual const char* Name() const = 0;
  // Whether Run can compute `pass` of `problem` (never throws). Workspace beyond the problem's limit is
  // a refusal too: the selection checks WorkspaceBytes against the limit for every algorithm.
  virtual ConvSupport CanImplement(const ConvProblem& problem, ConvPass pass) const = 0;
  // Whether the cheap heuristic should take this algorithm when it can implement the pass (the
  // registry's order decides among those that say yes; the tuner ignores this and times them all).
  virtual bool Recommended(const ConvProblem&, ConvPass) const { return true; }
  // Bytes of workspace Run needs for the passes `stores` asks for.
  virtual size_t WorkspaceBytes(const ConvProblem& problem, const ConvStores& stores) const = 0;
  // Whether Run, given tensors.epilogue = `epilogue`, applies it in its store of the forward output (per
  // `store`). When not, the operator stores the plain convolution and applies the epilogue after.
  virtual bool FusesEpilogue(const ConvProblem&, const ConvEpilogue<DType>&, ReqStore) const { return false; }
  // false when results may differ from run to run (atomics, timing-dependent splits): such algorithms
  // are left out while the selection is deterministic (the default).
  virtual bool Deterministic() const { return true; }
  // Computes every pass `stores` asks for; workspace holds WorkspaceBytes(problem, stores) bytes, 256-byte
  // aligned. Work is queued on `stream`.
  virtual void Run(const ConvProblem& problem, const ConvTensors<DType>& tensors, const ConvStores& stores,
                   void* workspace, Stream<Device>* stream) const = 0;
};

}  // namespace ops
}  // namespace tensorexpr
