// ops/convolution.h — the template implementation of <tensorexpr/ops/convolution.h> (see there): the
// operator boundary (tensor checks, each req decoded once, the ConvProblem, bias and its gradient) and the
// passes' dispatch to the algorithms ops/conv_select.h picks. Compiled into tensorexpr_ops /
// tensorexpr_ops_cuda for the standard dtypes (ops/convolution.cc); include it to use another dtype.
#pragma once
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>
#include <tensorexpr/tensorexpr.h>
#include <tensorexpr/ops/convolution.h>
#include <tensorexpr/ops/conv_epilogue_map.h>
#include "border.h"
#include "conv_select.h"

namespace tensorexpr {
namespace ops {

namespace detail {

template <int dim>
inline std::vector<index_t> ShapeVec(const Shape<dim>& s) {
  return std::vector<index_t>(s.shape_, s.shape_ + dim);
}

// Operator `op`'s tensor `name` against the shape the parameters give, and contiguous when it must be.
template <typename Device, int dim, typename DType>
inline void CheckTensor(const char* op, const Tensor<Device, dim, DType>& t, const std::vector<index_t>& want,
                        const char* name, bool need_contiguous) {
  TE_CHECK(ShapeVec(t.shape_) == want, op, ": ", name, " shape ", t.shape_, " does not match the expected ",
           VecStr(want));
  TE_CHECK(!need_contiguous || t.CheckContiguous() || t.shape_.Size() == 0, op, ": ", name, " of shape ",
           t.shape_, " must be contiguous (row stride ", t.stride_, ")");
}

template <int wdim, int ddim>
struct check_conv_dims {
  static_assert(wdim >= 3 && wdim <= 5,
                "the convolution weight is (K, C/group, kernel...) with 1, 2 or 3 spatial dimensions");
  static_assert(ddim == wdim || ddim == wdim - 1,
                "the convolution data is (N, C, spatial...) or unbatched (C, spatial...) with as many spatial "
                "dimensions as the weight");
  static constexpr bool value = true;
};

// A tensor with a leading dimension of 1: unbatched convolution data as a batch of one (exact for any
// row stride).
template <typename Device, int dim, typename DType>
inline Tensor<Device, dim + 1, DType> WithBatch(const Tensor<Device, dim, DType>& t) {
  Shape<dim + 1> s;
  s[0] = 1;
  for (int i = 0; i < dim; ++i) s[i + 1] = t.shape_[i];
  return Tensor<Device, dim + 1, DType>(t.dptr_, s, t.stride_, t.stream_);
}

// Calls f(view) with a batched tensor (N, C, spatial...), or (N, spatial..., C) channels last, viewed with
// its channels as dimension 1: (N, C, rows, W) or (rows, C), each row's stride kept (padded rows work).
// Where the bias's gradient is summed (the bias itself is added by epilogue_map).
template <typename Device, int dim, typename DType, typename F>
inline void WithChannelsAt1(const Tensor<Device, dim, DType>& t, bool channels_last, F f) {
  const Shape<dim>& s = t.shape_;
  if (channels_last) {
    f(Tensor<Device, 2, DType>(t.dptr_, Shape2(s.ProdShape(0, dim - 1), s[dim - 1]), t.stride_, t.stream_));
  } else {
    f(Tensor<Device, 4, DType>(t.dptr_, Shape4(s[0], s[1], s.ProdShape(2, dim - 1), s[dim - 1]), t.stride_,
                               t.stream_));
  }
}

// The extent of a tensor's memory in elements, padded rows included (scratch outputs for the tuner).
template <typename Device, int dim, typename DType>
index_t SpanOf(const Tensor<Device, dim, DType>& t) {
  return t.shape_.Size() == 0 ? 0 : t.shape_.ProdShape(0, dim - 1) * t.stride_;
}

// Runs the tuner's trial of `a` on `pass`: into scratch outputs, so the caller's are untouched, once to
// warm up, then the median of three timed runs.
// The memory extents (padded rows included) of the outputs a trial writes instead of the caller's.
struct ConvSpans {
  index_t out = 0, data_grad = 0;
};

template <typename Device, typename DType>
double TimeConvTrial(const ConvAlgorithm<Device, DType>& a, const ConvProblem& problem, ConvPass pass,
                     ConvTensors<DType> t, ConvSpans spans, Stream<Device>* s) {
  const ConvStores only = ConvStores::Only(pass, ReqStore{true, false});
  const index_t span = pass == ConvPass::kForward        ? spans.out
                       : pass == ConvPass::kBackwardData ? spans.data_grad
                                                         : problem.geom.K * problem.geom.Cg() * problem.geom.KernelSize();
  TensorContainer<Device, 1, DType> scratch;
  scratch.set_stream(s);
  scratch.Resize(Shape1(std::max<index_t>(span, 1)));
  (pass == ConvPass::kForward ? t.out : pass == ConvPass::kBackwardData ? t.data_grad : t.weight_grad) = scratch.dptr_;
  const size_t bytes = a.WorkspaceBytes(problem, only);
  void* workspace = bytes > 0 ? GetWorkspaceBytes<Device>(bytes, s) : nullptr;
  a.Run(problem, t, only, workspace, s);
  double ms[3];
  for (double& m : ms) {
    WaitStream(s);
    const auto start = std::chrono::steady_clock::now();
    a.Run(problem, t, only, workspace, s);
    WaitStream(s);
    m = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  }
  std::sort(ms, ms + 3);
  return ms[1];
}

// Whether a backward's weight gradient may run at the same time as its other pass (the data gradient, or
// the deconvolution's forward): neither writes what the other reads or writes. The weight gradient reads
// `data` and `out_grad`, the other pass `out_grad` and `weight`. (In turn, the weight gradient runs first,
// so a data gradient written over the data it reads is still right.)
template <typename WeightGrad, typename OtherOut, typename Data, typename OutGrad, typename Weight>
bool PassesApart(const WeightGrad& weight_grad, const OtherOut& other_out, const Data& data, const OutGrad& out_grad,
                 const Weight& weight) {
  using expr::MemoryOverlaps;
  return !MemoryOverlaps(weight_grad, other_out) && !MemoryOverlaps(weight_grad, out_grad) &&
         !MemoryOverlaps(weight_grad, weight) && !MemoryOverlaps(other_out, data) && !MemoryOverlaps(other_out, out_grad);
}

// Bytes of workspace the heuristic's algorithms take on geometry g under `limit`, all passes of a call
// together: what ConvolutionWorkspaceBytes reports (ops/conv_workspace.cc).
size_t ConvHeuristicWorkspaceBytes(const ConvGeometry& g, size_t limit, size_t dtype_bytes, bool input_contiguous);

// Picks an algorithm for each pass `stores` asks for and runs them. A weight gradient and one other pass
// whose outputs and inputs are apart (passes_apart: PassesApart) run at the same time, the weight
// gradient on the stream's side stream with the side's workspace, the other pass with the stream's, when
// one of them takes no workspace and the other no more than the passes take in turn, or when both take
// some, on two algorithms, and together no more than ConvolutionWorkspaceBytes reports (winograd_2x2's
// data gradient beside im2col_gemm's weight gradient, where the tuner or a cache chose so, or where the
// weight gradient's transforms do not fit the cap; one algorithm that takes workspace for both, as
// winograd_2x2 does for strict float's 3x3 layers on the GPU, runs them in turn). The other pass is queued first: a network's earlier
// layers wait for the data gradient, and the GPU hands out the blocks of the kernel queued first first.
// In turn, passes that went to the same algorithm run in one call (it may share staged copies between
// them).
template <typename Device, typename DType>
void RunConvPasses(const std::string& forced, const ConvProblem& problem, const ConvTensors<DType>& t,
                   const ConvStores& stores, ConvSpans spans, bool passes_apart, Stream<Device>* s) {
  using Algorithm = ConvAlgorithm<Device, DType>;
  struct Run {
    const Algorithm* algorithm;
    ConvStores stores;
    size_t bytes = 0;  // its workspace
    void Go(const ConvProblem& pr, const ConvTensors<DType>& t, Stream<Device>* on) const {
      algorithm->Run(pr, t, stores, bytes > 0 ? GetWorkspaceBytes<Device>(bytes, on) : nullptr, on);
    }
  };
  std::vector<Run> in_turn;
  std::vector<Run> passes;  // one per pass, weight gradient first
  for (ConvPass pass : {ConvPass::kBackwardWeight, ConvPass::kForward, ConvPass::kBackwardData}) {
    if (!stores.Wants(pass)) continue;
    const Algorithm* a = SelectConvAlgorithm<Device, DType>(
        problem, pass, forced, [&](const Algorithm& trial) { return TimeConvTrial(trial, problem, pass, t, spans, s); });
    passes.push_back({a, ConvStores::Only(pass, stores.Of(pass))});
    auto same = std::find_if(in_turn.begin(), in_turn.end(), [&](const Run& r) { return r.algorithm == a; });
    if (same == in_turn.end()) same = in_turn.insert(in_turn.end(), {a, ConvStores()});
    same->stores.Of(pass) = stores.Of(pass);
  }
  size_t in_turn_bytes = 0;
  for (Run& r : in_turn) {
    r.bytes = r.algorithm->WorkspaceBytes(problem, r.stores);
    in_turn_bytes = std::max(in_turn_bytes, r.bytes);
  }
  if (passes_apart && passes.size() == 2 && stores.weight_grad.active) {
    // On two algorithms each run in turn holds one pass, made in the same order: its workspace is that
    // pass's.
    for (size_t i = 0; i < passes.size(); ++i)
      passes[i].bytes = in_turn.size() == passes.size() ? in_turn[i].bytes
                                                        : passes[i].algorithm->WorkspaceBytes(problem, passes[i].stores);
    const size_t other = passes[1].bytes, weight = passes[0].bytes;
    // Workspace is kept once taken, so the side stream's is memory besides the stream's for good. At once,
    // then, only where the two streams will hold no more than the bound, or than they would in turn: each
    // as large as it already is or grows to (a forward's transforms, held, may outgrow the data
    // gradient's; a stem's columns, held, sit beside a weight gradient's on the side).
    Stream<Device>* const own = StreamOrDefault(s);
    auto after = [](Stream<Device>* on, size_t bytes) {
      return on != nullptr ? on->workspace().HeldAfter(bytes) : InWorkspaceGranules(bytes);
    };
    const size_t side_now = own->side() != nullptr ? own->side()->workspace().Held() : 0;
    const size_t at_once = after(own, other) + after(own->side(), weight);
    const size_t bound = ConvHeuristicWorkspaceBytes(problem.geom, problem.workspace_limit, sizeof(DType),
                                                     problem.data_contiguous);
    const bool fits = (other == 0 || weight == 0 || passes[0].algorithm != passes[1].algorithm) &&
                      at_once <= std::max(InWorkspaceGranules(bound), after(own, in_turn_bytes) + side_now);
    if (Stream<Device>* side = fits ? ForkSideStream(s) : nullptr) {
      try {
        passes[1].Go(problem, t, s);
        passes[0].Go(problem, t, side);
      } catch (...) {
        JoinSideStream(s);  // what the side queued stays ordered before the stream's next work
        throw;
      }
      JoinSideStream(s);
      return;
    }
  }
  for (const Run& r : in_turn) r.Go(problem, t, s);
}

// A border that is data (ConvBorderIsData): the padding of the batched data's spatial dimensions.
template <int ddim>
BorderPads<ddim> ConvBorderPads(const ConvGeometry& g, size_t nd) {
  return MakeBorderPads<ddim>(g.channels_last ? 1 : 2, int(nd), g.pad, g.pad_end);
}

}  // namespace detail

namespace detail {

// The forward: checks, the problem, the algorithm and its run. With an active epilogue the algorithm
// stores it when FusesEpilogue says it can; when it cannot, an epilogue that is only the bias is added
// in a pass of its own, and any other is not run at all unless fused (only_fused: returns false).
template <typename Device, int ddim, int wdim, typename DType>
bool RunConvForward(const ConvolutionParam& p, const Tensor<Device, ddim, DType>& data,
                    const Tensor<Device, wdim, DType>& weight, const ConvEpilogue<DType>& epilogue, OpReqType req,
                    const Tensor<Device, ddim, DType>& out, bool only_fused) {
  static_assert(check_conv_dims<wdim, ddim>::value, "");
  TE_CHECK(size_t(wdim - 2) == p.kernel.size(), "Convolution: the weight has ", wdim - 2,
           " spatial dimensions but the kernel ", VecStr(p.kernel), " has ", p.kernel.size());
  const std::vector<index_t> dshape = ShapeVec(data.shape_);
  const ConvGeometry g = MakeConvGeometry(p, dshape);
  const ConvShapes shapes = InferConvShapes(p, dshape);
  CheckTensor("Convolution", weight, shapes.weight, "weight", true);
  CheckTensor("Convolution", out, shapes.out, "output", true);
  // Unbatched data runs as its exact batched view (1, C, spatial...): one instance of the passes.
  if constexpr (ddim == wdim - 1) {
    return RunConvForward(p, WithBatch(data), weight, epilogue, req, WithBatch(out), only_fused);
  } else {
    const ReqStore store = DecodeReq(req, "Convolution forward");
    if (!store.active) return true;
    Stream<Device>* s = out.stream_;
    const StreamThreadScope threads(s);  // the algorithms' loops keep to the stream's thread budget
    const index_t P = g.OutSize();
    if (g.N * g.K * P == 0) return true;
    if (ConvBorderIsData(p)) {
      const BorderPads<ddim> pads = ConvBorderPads<ddim>(g, p.kernel.size());
      if (pads.any) {
        const auto padded = PadBorder("Convolution", data, pads, p.pad_mode, p.pad_value.value_or(0.0), s);
        return RunConvForward(WithoutPadding(p), padded.view(), weight, epilogue, req, out, only_fused);
      }
    }
    ConvTensors<DType> t;
    t.data = data.dptr_;
    t.data_stride = data.stride_;
    t.weight = weight.dptr_;
    t.out = out.dptr_;
    const ConvProblem problem = MakeConvProblem<Device, DType>(
        g, s, data.CheckContiguous(), p.workspace, VectorAligned(data.dptr_, weight.dptr_, out.dptr_));
    const ConvAlgorithm<Device, DType>* a = SelectConvAlgorithm<Device, DType>(
        problem, ConvPass::kForward, p.algorithm, [&](const ConvAlgorithm<Device, DType>& trial) {
          return TimeConvTrial(trial, problem, ConvPass::kForward, t, ConvSpans{SpanOf(out), 0}, s);
        });
    const bool fused = epilogue.active && a->FusesEpilogue(problem, epilogue, store);
    if (only_fused && !fused) return false;
    if (fused) t.epilogue = epilogue;
    const ConvStores stores = ConvStores::Only(ConvPass::kForward, store);
    const size_t bytes = a->WorkspaceBytes(problem, stores);
    a->Run(problem, t, stores, bytes > 0 ? GetWorkspaceBytes<Device>(bytes, s) : nullptr, s);
    // The bias alone (linear: added after a store that adds too), in place.
    if (epilogue.active && !fused) ApplyEpilogueInPlace(out, epilogue, g.channels_last);
    return true;
  }
}

}  // namespace detail

template <typename Device, int ddim, int wdim, typename DType>
void ConvolutionForward(const ConvolutionParam& p, const Tensor<Device, ddim, DType>& data,
                        const Tensor<Device, wdim, DType>& weight, const Tensor<Device, 1, DType>& bias, OpReqType req,
                        const Tensor<Device, ddim, DType>& out) {
  ConvEpilogue<DType> epilogue;
  if (!p.no_bias) {
    detail::CheckTensor("Convolution", bias, InferConvShapes(p, detail::ShapeVec(data.shape_)).bias, "bias", true);
    epilogue = ConvEpilogue<DType>::Bias(bias.dptr_);
  }
  detail::RunConvForward(p, data, weight, epilogue, req, out, false);
}

template <typename Device, int ddim, int wdim, typename DType>
bool ConvolutionForwardFused(const ConvolutionParam& p, const Tensor<Device, ddim, DType>& data,
                             const Tensor<Device, wdim, DType>& weight, const ConvEpilogue<DType>& epilogue,
                             OpReqType req, const Tensor<Device, ddim, DType>& out) {
  TE_CHECK(p.no_bias, "ConvolutionForwardFused: the bias belongs in the epilogue; no_bias must be set");
  TE_CHECK(epilogue.active, "ConvolutionForwardFused: the epilogue is not active");
  return detail::RunConvForward(p, data, weight, epilogue, req, out, true);
}

template <typename Device, int ddim, int wdim, typename DType>
void ConvolutionBackward(const ConvolutionParam& p, const Tensor<Device, ddim, DType>& out_grad,
                         const Tensor<Device, ddim, DType>& data, const Tensor<Device, wdim, DType>& weight,
                         OpReqType req_data, const Tensor<Device, ddim, DType>& data_grad, OpReqType req_weight,
                         const Tensor<Device, wdim, DType>& weight_grad, OpReqType req_bias,
                         const Tensor<Device, 1, DType>& bias_grad) {
  static_assert(detail::check_conv_dims<wdim, ddim>::value, "");
  TE_CHECK(size_t(wdim - 2) == p.kernel.size(), "Convolution: the weight has ", wdim - 2,
           " spatial dimensions but the kernel ", detail::VecStr(p.kernel), " has ", p.kernel.size());
  const std::vector<index_t> dshape = detail::ShapeVec(data.shape_);
  const ConvGeometry g = MakeConvGeometry(p, dshape);
  const ConvShapes shapes = InferConvShapes(p, dshape);
  ConvStores stores;
  stores.data_grad = DecodeReq(req_data, "Convolution backward (data gradient)");
  stores.weight_grad = DecodeReq(req_weight, "Convolution backward (weight gradient)");
  const ReqStore bias_store = p.no_bias ? ReqStore() : DecodeReq(req_bias, "Convolution backward (bias gradient)");
  detail::CheckTensor("Convolution", out_grad, shapes.out, "output gradient", true);
  detail::CheckTensor("Convolution", weight, shapes.weight, "weight", true);
  if (stores.data_grad.active) detail::CheckTensor("Convolution", data_grad, dshape, "data gradient", false);
  if (stores.weight_grad.active) detail::CheckTensor("Convolution", weight_grad, shapes.weight, "weight gradient", true);
  if (bias_store.active) detail::CheckTensor("Convolution", bias_grad, shapes.bias, "bias gradient", true);
  if constexpr (ddim == wdim - 1) {
    ConvolutionBackward(p, detail::WithBatch(out_grad), detail::WithBatch(data), weight, req_data,
                        detail::WithBatch(data_grad), req_weight, weight_grad, req_bias, bias_grad);
  } else {
    Stream<Device>* s = out_grad.stream_;
    if (ConvBorderIsData(p)) {
      const detail::BorderPads<ddim> pads = detail::ConvBorderPads<ddim>(g, p.kernel.size());
      if (pads.any) {  // the gradients of the padded copy; its data gradient summed back onto the data
        const auto padded = detail::PadBorder("Convolution", data, pads, p.pad_mode, p.pad_value.value_or(0.0), s);
        TensorContainer<Device, ddim, DType> padded_grad;
        padded_grad.set_stream(s);
        if (stores.data_grad.active) padded_grad.Resize(padded.shape_);
        ConvolutionBackward(detail::WithoutPadding(p), out_grad, padded.view(), weight,
                            stores.data_grad.active ? kWriteTo : kNullOp, padded_grad.view(), req_weight, weight_grad,
                            req_bias, bias_grad);
        if (stores.data_grad.active)
          detail::UnpadInto(data_grad, req_data, padded_grad.view(), pads, p.pad_mode, s);
        return;
      }
    }
    const StreamThreadScope threads(s);
    const index_t P = g.OutSize();

    if (bias_store.active) {  // db = the sum of dY over images and positions
      detail::WithChannelsAt1(out_grad, g.channels_last,
                      [&](auto dy) { Assign(bias_grad, req_bias, expr::sumall_except_dim<1>(dy)); });
    }
    if (!stores.data_grad.active && !stores.weight_grad.active) return;
    // Nothing to sum over: the weight gradient is zero, and so is every input element's.
    if (g.N * P == 0) {
      if (stores.weight_grad.active && !stores.weight_grad.add) {
        Assign(weight_grad, kWriteTo, expr::scalar<DType>(DType(0)));
      }
      if (stores.data_grad.active && !stores.data_grad.add) Assign(data_grad, kWriteTo, expr::scalar<DType>(DType(0)));
      return;
    }
    ConvTensors<DType> t;
    t.data = data.dptr_;
    t.data_stride = data.stride_;
    t.weight = weight.dptr_;
    t.out_grad = out_grad.dptr_;
    t.data_grad = stores.data_grad.active ? data_grad.dptr_ : nullptr;
    t.data_grad_stride = data_grad.stride_;
    t.weight_grad = stores.weight_grad.active ? weight_grad.dptr_ : nullptr;
    const bool contiguous = data.CheckContiguous() && (!stores.data_grad.active || data_grad.CheckContiguous());
    const ConvProblem problem = MakeConvProblem<Device, DType>(
        g, s, contiguous, p.workspace, detail::VectorAligned(t.data, t.weight, t.out_grad, t.data_grad, t.weight_grad));
    const bool apart = detail::PassesApart(weight_grad, data_grad, data, out_grad, weight);
    detail::RunConvPasses(p.algorithm, problem, t, stores, detail::ConvSpans{0, detail::SpanOf(data_grad)}, apart, s);
  }
}

// Explicit instantiations of Forward and Backward for one device and dtype, 1-, 2- and 3-D, batched or
// not (ops/convolution.cc).
#define TE_CONVOLUTION_INSTANCE_(Device, ddim, wdim, DType)                                                          \
  template void ConvolutionForward<Device, ddim, wdim, DType>( \
      const ConvolutionParam&, const Tensor<Device, ddim, DType>&, const Tensor<Device, wdim, DType>&, \
      const Tensor<Device, 1, DType>&, OpReqType, const Tensor<Device, ddim, DType>&); \
  template bool ConvolutionForwardFused<Device, ddim, wdim, DType>( \
      const ConvolutionParam&, const Tensor<Device, ddim, DType>&, const Tensor<Device, wdim, DType>&, \
      const ConvEpilogue<DType>&, OpReqType, const Tensor<Device, ddim, DType>&); \
  template void ConvolutionBackward<Device, ddim, wdim, DType>( \
      const ConvolutionParam&, const Tensor<Device, ddim, DType>&, const Tensor<Device, ddim, DType>&, \
      const Tensor<Device, wdim, DType>&, OpReqType, const Tensor<Device, ddim, DType>&, OpReqType, \
      const Tensor<Device, wdim, DType>&, OpReqType, const Tensor<Device, 1, DType>&);
#define TE_INSTANTIATE_CONVOLUTION(Device, DType)                                                                    \
  TE_CONVOLUTION_INSTANCE_(Device, 3, 3, DType)                                                                      \
  TE_CONVOLUTION_INSTANCE_(Device, 2, 3, DType)                                                                      \
  TE_CONVOLUTION_INSTANCE_(Device, 4, 4, DType)                                                                      \
  TE_CONVOLUTION_INSTANCE_(Device, 3, 4, DType)                                                                      \
  TE_CONVOLUTION_INSTANCE_(Device, 5, 5, DType)                                                                      \
  TE_CONVOLUTION_INSTANCE_(Device, 4, 5, DType)                                                                      \
  template class ConvRegistry<Device, DType>;

}  // namespace ops
}  // namespace tensorexpr
