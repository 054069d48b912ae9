// onnx_oracle_test.cc — the operators against an implementation nobody here wrote: each case of
// tools/onnx_cases.py (random configurations of one-node ONNX models, run through onnxruntime or ONNX's
// reference evaluator; onnx_cases.h reads them) is run through our operator in float and double on the
// device under test and compared within float's tolerance. half and bf16 are not compared here: rounding
// the oracle's float32 inputs to them moves the results by more than the oracle tells (the float64
// reference tests of each operator cover them). When the Python packages are missing the cases skip,
// saying why (tools/test.sh counts them as skipped).
#include "ops_test_util.h"
#include "onnx_cases.h"
#include <tensorexpr/ops/activation.h>
#include <tensorexpr/ops/batch_norm.h>
#include <tensorexpr/ops/convolution.h>
#include <tensorexpr/ops/deconvolution.h>
#include <tensorexpr/ops/embedding.h>
#include <tensorexpr/ops/fully_connected.h>
#include <tensorexpr/ops/leaky_relu.h>
#include <tensorexpr/ops/lrn.h>
#include <tensorexpr/ops/pooling.h>
#include <tensorexpr/ops/softmax.h>

namespace {
using namespace te_test;

// Calls check(c, float()) and check(c, double()) for every case c of `op` that `keep` accepts; false
// (after a WARN that says why) when the oracle is unavailable.
template <typename Check, typename Keep>
bool ForOracleCases(const std::string& op, Check check, Keep keep) {
  const OnnxCases& all = LoadOnnxCases();
  if (!all.available) {
    WARN(OnnxSkipMessage(all));
    return false;
  }
  const std::vector<const OnnxCase*> cases = all.Of(op);
  INFO("the cases file has no " << op << " case: tools/onnx_cases.py writes some for every operator tested here");
  REQUIRE(!cases.empty());
  for (const OnnxCase* c : cases) {
    if (!keep(*c)) continue;
    check(*c, float());
    check(*c, double());
  }
  return true;
}
template <typename Check>
bool ForOracleCases(const std::string& op, Check check) {
  return ForOracleCases(op, check, [](const OnnxCase&) { return true; });
}

// A host tensor of rank `dim` holding an ONNX case's tensor, rounded to DType.
template <int dim, typename DType>
TensorContainer<cpu, dim, DType> HostOf(const OnnxTensor& t) {
  return FromVec<dim, DType>(t.ShapeAs<dim>(), t.values);
}

// The oracle computes in float32: ours, in float or double from the same inputs, agrees to about this.
constexpr double kOracleTol = 1e-5;
// Operators that only move values (Pad, Slice, Concat) are exact, to the 9 digits the file keeps.
constexpr double kMovedTol = 1e-8;

template <typename Device, typename DType>
void SoftmaxAgainstOracle(Stream<Device>* stream, const OnnxCase& c) {
  INFO(c.Describe() << " dtype " << DataType<DType>::name());
  const OnnxTensor& x = c.In("X");
  WithRank(x.rank(), [&](auto rank) {
    constexpr int dim = decltype(rank)::value;
    ops::SoftmaxParam p;
    p.axis = static_cast<int>(c.Int("axis", -1));
    auto xd = Dev<Device>(HostOf<dim, DType>(x).view(), stream);
    TensorContainer<Device, dim, DType> yd(xd.shape_);
    yd.set_stream(stream);
    if (c.op == "Softmax") ops::SoftmaxForward(p, xd.view(), kWriteTo, yd.view());
    else ops::LogSoftmaxForward(p, xd.view(), kWriteTo, yd.view());
    // Log-softmax of inputs near 80 differs by a few float ulps of 80.
    const double tol = c.op == "LogSoftmax" ? 2 * kOracleTol : kOracleTol;
    CheckVec(ToHost(yd.view()).view(), c.Out().values, tol, c.op);
  });
}

TE_DEVICE_TEST_CASE("ONNX oracle: Softmax and LogSoftmax", "[onnx][softmax]") {
  for (const char* op : {"Softmax", "LogSoftmax"})
    if (!ForOracleCases(op, [&](const OnnxCase& c, auto t) { SoftmaxAgainstOracle<Device, decltype(t)>(stream, c); }))
      return;
}

// Pad: pads = (begin of each axis..., end of each axis...), mode, constant_value (default 0).
template <typename Device, typename DType>
void PadAgainstOracle(Stream<Device>* stream, const OnnxCase& c) {
  INFO(c.Describe() << " dtype " << DataType<DType>::name());
  const OnnxTensor& x = c.In("data");
  const std::string mode_name = c.String("mode", "constant");
  const PadMode mode = mode_name == "edge" ? PadMode::kEdge
                     : mode_name == "reflect" ? PadMode::kReflect
                     : mode_name == "wrap" ? PadMode::kWrap : PadMode::kConstant;
  const OnnxTensor* value = c.FindIn("constant_value");
  WithRank(x.rank(), [&](auto rank) {
    constexpr int dim = decltype(rank)::value;
    const std::vector<double>& pads = c.In("pads").values;
    REQUIRE(pads.size() == 2 * dim);
    Shape<dim> begin, end;
    for (int d = 0; d < dim; ++d) {
      begin[d] = static_cast<index_t>(pads[size_t(d)]);
      end[d] = static_cast<index_t>(pads[size_t(d + dim)]);
    }
    auto xd = Dev<Device>(HostOf<dim, DType>(x).view(), stream);
    TensorContainer<Device, dim, DType> yd(c.Out().ShapeAs<dim>());
    yd.set_stream(stream);
    yd = expr::pad(xd.view(), begin, end, mode, DType(value ? value->values[0] : 0.0));
    CheckVec(ToHost(yd.view()).view(), c.Out().values, kMovedTol, "Pad");
  });
}

TE_DEVICE_TEST_CASE("ONNX oracle: Pad in every mode", "[onnx][pad]") {
  ForOracleCases("Pad", [&](const OnnxCase& c, auto t) { PadAgainstOracle<Device, decltype(t)>(stream, c); });
}

// FullyConnected: Gemm (A (N, D), B (K, D) with transB = 1, bias C (K)), or flatten = false: MatMul of A
// (..., D) and B (D, K), our weight being B^T.
template <typename Device, typename DType>
void FullyConnectedAgainstOracle(Stream<Device>* stream, const OnnxCase& c) {
  INFO(c.Describe() << " dtype " << DataType<DType>::name());
  const OnnxTensor &a = c.In("A"), &b = c.In("B");
  const bool gemm = c.op == "Gemm";
  ops::FullyConnectedParam p;
  p.flatten = gemm;
  p.no_bias = !gemm;
  p.num_hidden = gemm ? b.shape[0] : b.shape[1];
  const index_t K = p.num_hidden, D = a.shape.back();
  Vec w(b.values);  // (K, D)
  if (!gemm)
    for (index_t k = 0; k < K; ++k)
      for (index_t d = 0; d < D; ++d) w[size_t(k * D + d)] = b.values[size_t(d * K + k)];
  auto wd = Dev<Device>(FromVec<2, DType>(Shape2(K, D), w).view(), stream);
  auto bd = Dev<Device>(FromVec<1, DType>(Shape1(gemm ? K : 0), gemm ? c.In("C").values : Vec{}).view(), stream);
  WithRank(a.rank(), [&](auto rank) {
    constexpr int dim = decltype(rank)::value;
    if constexpr (dim >= 2) {
      auto xd = Dev<Device>(HostOf<dim, DType>(a).view(), stream);
      TensorContainer<Device, 2, DType> yd(ops::InferFullyConnectedShapes(p, xd.shape_).out);
      yd.set_stream(stream);
      ops::FullyConnectedForward(p, xd.view(), wd.view(), bd.view(), kWriteTo, yd.view());
      CheckVec(ToHost(yd.view()).view(), c.Out().values, kOracleTol, c.op);
    }
  });
}

TE_DEVICE_TEST_CASE("ONNX oracle: FullyConnected as Gemm, and with flatten = false as N-D MatMul", "[onnx][fully_connected]") {
  auto check = [&](const OnnxCase& c, auto t) { FullyConnectedAgainstOracle<Device, decltype(t)>(stream, c); };
  if (!ForOracleCases("Gemm", check)) return;
  // The N-D x 2-D MatMul cases.
  ForOracleCases("MatMul", check, [](const OnnxCase& c) { return c.In("A").rank() > 2 && c.In("B").rank() == 2; });
}

// MatMul of 2-D matrices (dot) and of 3-D batches, a batch of 1 broadcasting (batch_dot); the N-D x 2-D
// cases are FullyConnected's (above).
template <typename Device, typename DType>
void MatMulAgainstOracle(Stream<Device>* stream, const OnnxCase& c) {
  INFO(c.Describe() << " dtype " << DataType<DType>::name());
  const OnnxTensor &a = c.In("A"), &b = c.In("B");
  REQUIRE(a.rank() == b.rank());
  WithRank(a.rank(), [&](auto rank) {
    constexpr int dim = decltype(rank)::value;
    if constexpr (dim >= 2) {
      auto ad = Dev<Device>(HostOf<dim, DType>(a).view(), stream), bd = Dev<Device>(HostOf<dim, DType>(b).view(), stream);
      TensorContainer<Device, dim, DType> yd(c.Out().ShapeAs<dim>());
      yd.set_stream(stream);
      if constexpr (dim == 2) yd = expr::dot(ad.view(), bd.view());
      else yd = expr::batch_dot(ad.view(), bd.view());
      CheckVec(ToHost(yd.view()).view(), c.Out().values, kOracleTol, "MatMul");
    } else {
      FAIL("MatMul cases are 2-D to 5-D");
    }
  });
}

TE_DEVICE_TEST_CASE("ONNX oracle: MatMul as dot and broadcasting batch_dot", "[onnx][dot]") {
  ForOracleCases("MatMul", [&](const OnnxCase& c, auto t) { MatMulAgainstOracle<Device, decltype(t)>(stream, c); },
                 [](const OnnxCase& c) { return c.In("A").rank() == c.In("B").rank(); });
}

// Slice along one axis with a step: ONNX's starts and ends (negative ones count from the end, and both are
// clamped to the extent) become ours, which must lie inside it.
template <typename Device, typename DType>
void SliceAgainstOracle(Stream<Device>* stream, const OnnxCase& c) {
  INFO(c.Describe() << " dtype " << DataType<DType>::name());
  const OnnxTensor& x = c.In("data");
  WithRank(x.rank(), [&](auto rank) {
    constexpr int dim = decltype(rank)::value;
    WithAxis<dim>(static_cast<int>(c.In("axes").values[0]), [&](auto axis) {
      constexpr int sdim = decltype(axis)::value;
      const index_t n = x.shape[sdim], step = static_cast<index_t>(c.In("steps").values[0]);
      index_t begin = static_cast<index_t>(c.In("starts").values[0]), end = static_cast<index_t>(c.In("ends").values[0]);
      if (begin < 0) begin += n;
      if (end < 0) end += n;
      if (step > 0) {
        begin = std::min(std::max<index_t>(begin, 0), n);
        end = std::max(std::min(std::max<index_t>(end, 0), n), begin);  // an empty slice: end = begin
      } else {
        begin = std::min(std::max<index_t>(begin, 0), n - 1);
        end = std::min(std::min(std::max<index_t>(end, -1), n - 1), begin);
      }
      INFO("ours: slice<" << sdim << ">(data, " << begin << ", " << end << ", " << step << ")");
      auto xd = Dev<Device>(HostOf<dim, DType>(x).view(), stream);
      TensorContainer<Device, dim, DType> yd(c.Out().ShapeAs<dim>());
      yd.set_stream(stream);
      yd = expr::slice<sdim>(xd.view(), begin, end, step);
      CheckVec(ToHost(yd.view()).view(), c.Out().values, kMovedTol, "Slice");
    });
  });
}

// Concat of 2 to 4 operands along any axis.
template <typename Device, typename DType>
void ConcatAgainstOracle(Stream<Device>* stream, const OnnxCase& c) {
  INFO(c.Describe() << " dtype " << DataType<DType>::name());
  WithRank(c.inputs[0].rank(), [&](auto rank) {
    constexpr int dim = decltype(rank)::value;
    std::vector<TensorContainer<Device, dim, DType>> in;
    for (const OnnxTensor& t : c.inputs) in.push_back(Dev<Device>(HostOf<dim, DType>(t).view(), stream));
    TensorContainer<Device, dim, DType> yd(c.Out().ShapeAs<dim>());
    yd.set_stream(stream);
    WithAxis<dim>(static_cast<int>(c.Int("axis", 0)), [&](auto axis) {
      constexpr int cdim = decltype(axis)::value;
      switch (in.size()) {
        case 2: yd = expr::concat<cdim>(in[0].view(), in[1].view()); break;
        case 3: yd = expr::concat<cdim>(in[0].view(), in[1].view(), in[2].view()); break;
        case 4: yd = expr::concat<cdim>(in[0].view(), in[1].view(), in[2].view(), in[3].view()); break;
        default: FAIL("Concat cases have 2 to 4 operands");
      }
    });
    CheckVec(ToHost(yd.view()).view(), c.Out().values, kMovedTol, "Concat");
  });
}

TE_DEVICE_TEST_CASE("ONNX oracle: Slice with steps and Concat of N operands", "[onnx][layout]") {
  if (!ForOracleCases("Slice", [&](const OnnxCase& c, auto t) { SliceAgainstOracle<Device, decltype(t)>(stream, c); }))
    return;
  ForOracleCases("Concat", [&](const OnnxCase& c, auto t) { ConcatAgainstOracle<Device, decltype(t)>(stream, c); });
}

// ReduceMean with keepdims = 1; no axes (or an empty list) reduces every axis.
template <typename Device, typename DType>
void ReduceMeanAgainstOracle(Stream<Device>* stream, const OnnxCase& c) {
  INFO(c.Describe() << " dtype " << DataType<DType>::name());
  const OnnxTensor& x = c.In("data");
  std::vector<int> axes;
  if (const OnnxTensor* a = c.FindIn("axes"))
    for (double v : a->values) axes.push_back(static_cast<int>(v));
  WithRank(x.rank(), [&](auto rank) {
    constexpr int dim = decltype(rank)::value;
    auto xd = Dev<Device>(HostOf<dim, DType>(x).view(), stream);
    TensorContainer<Device, dim, DType> yd(c.Out().ShapeAs<dim>());
    yd.set_stream(stream);
    yd = expr::mean(xd.view(), axes);
    CheckVec(ToHost(yd.view()).view(), c.Out().values, kOracleTol, "ReduceMean");
  });
}

TE_DEVICE_TEST_CASE("ONNX oracle: ReduceMean over several axes", "[onnx][reduce_axes]") {
  ForOracleCases("ReduceMean", [&](const OnnxCase& c, auto t) { ReduceMeanAgainstOracle<Device, decltype(t)>(stream, c); });
}

// LeakyRelu (ONNX's default alpha 0.01), Elu (default 1.0) and PRelu (slope (1) or (C, 1, ...): our gamma).
template <typename Device, typename DType>
void LeakyAgainstOracle(Stream<Device>* stream, const OnnxCase& c) {
  INFO(c.Describe() << " dtype " << DataType<DType>::name());
  const OnnxTensor& x = c.In("X");
  ops::LeakyReLUParam p;
  p.act_type = c.op == "Elu" ? ops::LeakyReLUType::kELU
             : c.op == "PRelu" ? ops::LeakyReLUType::kPReLU : ops::LeakyReLUType::kLeaky;
  p.slope = c.Float("alpha", c.op == "Elu" ? 1.0 : 0.01);
  std::vector<double> slope = c.op == "PRelu" ? c.In("slope").values : std::vector<double>{};
  auto gd = Dev<Device>(FromVec<1, DType>(Shape1(index_t(slope.size())), slope).view(), stream);
  WithRank(x.rank(), [&](auto rank) {
    constexpr int dim = decltype(rank)::value;
    auto xd = Dev<Device>(HostOf<dim, DType>(x).view(), stream);
    TensorContainer<Device, dim, DType> yd(xd.shape_);
    yd.set_stream(stream);
    ops::LeakyReLUForward(p, xd.view(), gd.view(), kWriteTo, yd.view());
    CheckVec(ToHost(yd.view()).view(), c.Out().values, kOracleTol, c.op);
  });
}

TE_DEVICE_TEST_CASE("ONNX oracle: LeakyRelu, Elu and PRelu", "[onnx][leaky_relu]") {
  for (const char* op : {"LeakyRelu", "Elu", "PRelu"})
    if (!ForOracleCases(op, [&](const OnnxCase& c, auto t) { LeakyAgainstOracle<Device, decltype(t)>(stream, c); }))
      return;
}

// An attribute's list of integers (empty when the case does not give it).
std::vector<index_t> Ints(const OnnxCase& c, const char* name) {
  std::vector<index_t> v;
  if (c.attrs.count(name))
    for (double a : c.attrs.at(name)) v.push_back(static_cast<index_t>(a));
  return v;
}

// The window attributes Conv, ConvTranspose and the pools share, into the operator's parameters:
// kernel_shape, strides, dilations, auto_pad (SAME_LOWER, SAME_UPPER, VALID) or pads (begin of each axis...,
// end of each axis...).
template <typename Param>
void ReadWindowShape(const OnnxCase& c, Param* p) {
  const std::string auto_pad = c.String("auto_pad", "NOTSET");
  p->kernel = Ints(c, "kernel_shape");
  p->stride = Ints(c, "strides");
  p->dilate = Ints(c, "dilations");
  p->padding = auto_pad == "SAME_LOWER" ? ops::ConvPadding::kSameLower
             : auto_pad == "SAME_UPPER" ? ops::ConvPadding::kSameUpper
             : auto_pad == "VALID" ? ops::ConvPadding::kValid : ops::ConvPadding::kExplicit;
  const std::vector<index_t> pads = Ints(c, "pads");
  const std::ptrdiff_t nd = static_cast<std::ptrdiff_t>(p->kernel.size());
  if (!pads.empty()) {
    p->pad.assign(pads.begin(), pads.begin() + nd);
    p->pad_end.assign(pads.begin() + nd, pads.end());
  }
}
// ... and Conv's and ConvTranspose's group; no bias without an input B.
template <typename Param>
void ReadWindowAttrs(const OnnxCase& c, Param* p) {
  ReadWindowShape(c, p);
  p->num_group = static_cast<index_t>(c.Int("group", 1));
  p->no_bias = c.FindIn("B") == nullptr;
}

// Y of case c against op(p, X, W, B, kWriteTo, Y) (the bias empty without an input B); X of rank 3 to 5.
template <typename Device, typename DType, typename Param, typename Op>
void WindowedAgainstOracle(Stream<Device>* stream, const OnnxCase& c, const Param& p, Op op) {
  const OnnxTensor &x = c.In("X"), &w = c.In("W");
  const OnnxTensor* b = c.FindIn("B");
  auto bd = Dev<Device>(FromVec<1, DType>(Shape1(b ? b->shape[0] : 0), b ? b->values : Vec{}).view(), stream);
  WithRank(x.rank(), [&](auto rank) {
    constexpr int dim = decltype(rank)::value;
    if constexpr (dim >= 3) {
      auto xd = Dev<Device>(HostOf<dim, DType>(x).view(), stream), wd = Dev<Device>(HostOf<dim, DType>(w).view(), stream);
      TensorContainer<Device, dim, DType> yd(c.Out().ShapeAs<dim>());
      yd.set_stream(stream);
      op(p, xd.view(), wd.view(), bd.view(), kWriteTo, yd.view());
      CheckVec(ToHost(yd.view()).view(), c.Out().values, kOracleTol, c.op);
    } else {
      FAIL(c.op << " cases are 1-D to 3-D");
    }
  });
}

// A border that is data (pad_mode, pad_value) against ONNX's Pad feeding Conv, MaxPool or AveragePool: the
// Pad node's spatial pads are the operator's pad and pad_end, its mode and constant_value the border.
template <typename Param>
void ReadBorder(const OnnxCase& c, Param* p) {
  const Vec& pads = c.In("pads").values;
  const size_t rank = pads.size() / 2, nd = rank - 2;
  REQUIRE(pads[0] == 0);  // the cases pad N and C by nothing
  p->pad.clear();
  p->pad_end.clear();
  for (size_t i = 0; i < nd; ++i) {
    p->pad.push_back(static_cast<index_t>(pads[2 + i]));
    p->pad_end.push_back(static_cast<index_t>(pads[rank + 2 + i]));
  }
  const std::string mode = c.String("pad_mode", "constant");
  p->pad_mode = mode == "reflect" ? PadMode::kReflect
              : mode == "edge"    ? PadMode::kEdge
              : mode == "wrap"    ? PadMode::kWrap : PadMode::kConstant;
  if (p->pad_mode == PadMode::kConstant) {
    const OnnxTensor* v = c.FindIn("constant_value");
    p->pad_value = v ? v->values.at(0) : 0.0;
  }
}

// Conv: X (N, C, spatial...), W (K, C / group, kernel...), B (K) optional; Pad+Conv reads a border.
template <typename Device, typename DType>
void ConvAgainstOracle(Stream<Device>* stream, const OnnxCase& c) {
  INFO(c.Describe() << " dtype " << DataType<DType>::name());
  ops::ConvolutionParam p;
  ReadWindowAttrs(c, &p);
  if (c.op == "Pad+Conv") ReadBorder(c, &p);
  p.num_filter = c.In("W").shape[0];
  REQUIRE(ops::InferConvShapes(p, c.In("X").shape).out == c.Out().shape);
  WindowedAgainstOracle<Device, DType>(stream, c, p, [](const auto&... a) { ops::ConvolutionForward(a...); });
}

TE_DEVICE_TEST_CASE("ONNX oracle: Conv with auto_pad SAME_LOWER, SAME_UPPER, VALID and explicit pads", "[onnx][conv]") {
  ForOracleCases("Conv", [&](const OnnxCase& c, auto t) { ConvAgainstOracle<Device, decltype(t)>(stream, c); });
}

// LRN: size, alpha (1e-4), beta (0.75), bias (ONNX's default 1; our knorm's is 2).
template <typename Device, typename DType>
void LRNAgainstOracle(Stream<Device>* stream, const OnnxCase& c) {
  INFO(c.Describe() << " dtype " << DataType<DType>::name());
  ops::LRNParam p;
  p.nsize = static_cast<index_t>(c.Int("size", 0));
  p.alpha = c.Float("alpha", 1e-4);
  p.beta = c.Float("beta", 0.75);
  p.knorm = c.Float("bias", 1.0);
  auto xd = Dev<Device>(HostOf<4, DType>(c.In("X")).view(), stream);
  TensorContainer<Device, 4, DType> yd(xd.shape_);
  yd.set_stream(stream);
  ops::LRNForward(p, xd.view(), kWriteTo, yd.view());
  CheckVec(ToHost(yd.view()).view(), c.Out().values, kOracleTol, "LRN");
}

TE_DEVICE_TEST_CASE("ONNX oracle: LRN, odd and even sizes", "[onnx][lrn]") {
  ForOracleCases("LRN", [&](const OnnxCase& c, auto t) { LRNAgainstOracle<Device, decltype(t)>(stream, c); });
}

// Gather on axis 0 of a 2-D table: Embedding with the table as its weight; indices as int64 (the file keeps
// their values, not their type).
template <typename Device, typename DType>
void GatherAgainstOracle(Stream<Device>* stream, const OnnxCase& c) {
  INFO(c.Describe() << " dtype " << DataType<DType>::name());
  const OnnxTensor &table = c.In("data"), &idx = c.In("indices");
  ops::EmbeddingParam p;
  p.input_dim = table.shape[0];
  p.output_dim = table.shape[1];
  p.mode = ops::EmbeddingMode::kRaise;
  auto wd = Dev<Device>(HostOf<2, DType>(table).view(), stream);
  WithRank(idx.rank(), [&](auto rank) {
    constexpr int dim = decltype(rank)::value;
    if constexpr (dim <= 4) {
      auto id = Dev<Device>(HostOf<dim, int64_t>(idx).view(), stream);
      TensorContainer<Device, dim + 1, DType> yd(c.Out().ShapeAs<dim + 1>());
      yd.set_stream(stream);
      ops::EmbeddingForward(p, id.view(), wd.view(), kWriteTo, yd.view());
      CheckVec(ToHost(yd.view()).view(), c.Out().values, kMovedTol, "Gather");
    } else {
      FAIL("Gather cases have indices of rank 1 to 4");
    }
  });
}

TE_DEVICE_TEST_CASE("ONNX oracle: Gather on axis 0 as Embedding", "[onnx][embedding]") {
  ForOracleCases("Gather", [&](const OnnxCase& c, auto t) { GatherAgainstOracle<Device, decltype(t)>(stream, c); });
}

// ConvTranspose: X (N, C, spatial...), W (C, M / group, kernel...), B (M) optional; output_padding (our adj);
// output_shape (our target_shape: the odd pixel of padding before, after with auto_pad SAME_UPPER).
template <typename Device, typename DType>
void ConvTransposeAgainstOracle(Stream<Device>* stream, const OnnxCase& c) {
  INFO(c.Describe() << " dtype " << DataType<DType>::name());
  ops::DeconvolutionParam p;
  ReadWindowAttrs(c, &p);
  p.num_filter = c.In("W").shape[1] * p.num_group;
  p.adj = Ints(c, "output_padding");
  p.target_shape = Ints(c, "output_shape");
  REQUIRE(ops::InferDeconvShapes(p, c.In("X").shape).out == c.Out().shape);
  WindowedAgainstOracle<Device, DType>(stream, c, p, [](const auto&... a) { ops::DeconvolutionForward(a...); });
}

TE_DEVICE_TEST_CASE("ONNX oracle: ConvTranspose as Deconvolution", "[onnx][deconv]") {
  ForOracleCases("ConvTranspose",
                 [&](const OnnxCase& c, auto t) { ConvTransposeAgainstOracle<Device, decltype(t)>(stream, c); });
}

// MaxPool (and its Indices) and AveragePool: ceil_mode (our pooling_convention full), count_include_pad (ONNX's
// default 0).
template <typename Device, typename DType>
void PoolAgainstOracle(Stream<Device>* stream, const OnnxCase& c) {
  INFO(c.Describe() << " dtype " << DataType<DType>::name());
  const bool border = c.op.rfind("Pad+", 0) == 0;  // Pad feeding the pooling: a border that is data
  const bool max = c.op == "MaxPool" || c.op == "Pad+MaxPool";
  ops::PoolingParam p;
  ReadWindowShape(c, &p);
  if (border) ReadBorder(c, &p);
  p.pool_type = max ? ops::PoolType::kMax : ops::PoolType::kAvg;
  p.pooling_convention = c.Int("ceil_mode", 0) ? ops::PoolingConvention::kFull : ops::PoolingConvention::kValid;
  p.count_include_pad = c.Int("count_include_pad", 0) != 0;
  const OnnxTensor& x = c.In("X");
  WithRank(x.rank(), [&](auto rank) {
    constexpr int dim = decltype(rank)::value;
    if constexpr (dim >= 3) {
      REQUIRE(ops::InferPoolingShape(p, x.ShapeAs<dim>()) == c.Out().ShapeAs<dim>());
      auto xd = Dev<Device>(HostOf<dim, DType>(x).view(), stream);
      TensorContainer<Device, dim, DType> yd(c.Out().ShapeAs<dim>());
      yd.set_stream(stream);
      if (max && !border) {  // with Indices: where each maximum is, in the flat data
        TensorContainer<Device, dim, int64_t> at(c.Out(1).ShapeAs<dim>());
        at.set_stream(stream);
        ops::PoolingForwardWithIndices(p, xd.view(), kWriteTo, yd.view(), at.view());
        CheckVec(ToHost(at.view()).view(), c.Out(1).values, 0, "MaxPool Indices");
      } else {
        ops::PoolingForward(p, xd.view(), kWriteTo, yd.view());
      }
      CheckVec(ToHost(yd.view()).view(), c.Out().values, kOracleTol, c.op);
    } else {
      FAIL(c.op << " cases are 1-D to 3-D");
    }
  });
}

TE_DEVICE_TEST_CASE("ONNX oracle: MaxPool with Indices, AveragePool (dilations, pads, auto_pad, ceil_mode)",
                    "[onnx][pooling]") {
  for (const char* op : {"MaxPool", "AveragePool"})
    if (!ForOracleCases(op, [&](const OnnxCase& c, auto t) { PoolAgainstOracle<Device, decltype(t)>(stream, c); }))
      return;
}

TE_DEVICE_TEST_CASE("ONNX oracle: border modes as Pad feeding Conv, MaxPool and AveragePool", "[onnx][border]") {
  if (!ForOracleCases("Pad+Conv", [&](const OnnxCase& c, auto t) { ConvAgainstOracle<Device, decltype(t)>(stream, c); }))
    return;
  for (const char* op : {"Pad+MaxPool", "Pad+AveragePool"})
    ForOracleCases(op, [&](const OnnxCase& c, auto t) { PoolAgainstOracle<Device, decltype(t)>(stream, c); });
}

// Activation: Relu, Sigmoid, Tanh and Softplus are relu, sigmoid, tanh and softrelu.
template <typename Device, typename DType>
void ActivationAgainstOracle(Stream<Device>* stream, const OnnxCase& c, ops::ActType act) {
  INFO(c.Describe() << " dtype " << DataType<DType>::name());
  ops::ActivationParam p;
  p.act_type = act;
  WithRank(c.In("X").rank(), [&](auto rank) {
    constexpr int dim = decltype(rank)::value;
    auto xd = Dev<Device>(HostOf<dim, DType>(c.In("X")).view(), stream);
    TensorContainer<Device, dim, DType> yd(xd.shape_);
    yd.set_stream(stream);
    ops::ActivationForward(p, xd.view(), kWriteTo, yd.view());
    CheckVec(ToHost(yd.view()).view(), c.Out().values, kOracleTol, c.op);
  });
}

TE_DEVICE_TEST_CASE("ONNX oracle: Relu, Sigmoid, Tanh and Softplus as Activation", "[onnx][activation]") {
  const std::pair<const char*, ops::ActType> acts[] = {{"Relu", ops::ActType::kReLU},
                                                       {"Sigmoid", ops::ActType::kSigmoid},
                                                       {"Tanh", ops::ActType::kTanh},
                                                       {"Softplus", ops::ActType::kSoftReLU}};
  for (const auto& a : acts)
    if (!ForOracleCases(a.first, [&](const OnnxCase& c, auto t) {
          ActivationAgainstOracle<Device, decltype(t)>(stream, c, a.second);
        }))
      return;
}

// BatchNormalization: inference (the running statistics: our is_train false) and training_mode 1 (the batch's
// statistics, the running ones moved by momentum: is_train true, updated in place); fix_gamma off.
template <typename Device, typename DType>
void BatchNormAgainstOracle(Stream<Device>* stream, const OnnxCase& c) {
  INFO(c.Describe() << " dtype " << DataType<DType>::name());
  ops::BatchNormParam p;
  p.eps = c.Float("epsilon", 1e-5);
  p.momentum = c.Float("momentum", 0.9);
  p.fix_gamma = false;
  const bool training = c.Int("training_mode", 0) != 0;
  const OnnxTensor& x = c.In("X");
  auto vec = [&](const char* name) { return Dev<Device>(HostOf<1, DType>(c.In(name)).view(), stream); };
  auto gamma = vec("scale"), beta = vec("B"), mean = vec("input_mean"), var = vec("input_var");
  TensorContainer<Device, 1, DType> save_mean(gamma.shape_), save_inv_std(gamma.shape_);
  save_mean.set_stream(stream), save_inv_std.set_stream(stream);
  WithRank(x.rank(), [&](auto rank) {
    constexpr int dim = decltype(rank)::value;
    if constexpr (dim >= 2) {
      auto xd = Dev<Device>(HostOf<dim, DType>(x).view(), stream);
      TensorContainer<Device, dim, DType> yd(xd.shape_);
      yd.set_stream(stream);
      ops::BatchNormForward(p, training, xd.view(), gamma.view(), beta.view(), mean.view(), var.view(), kWriteTo,
                            yd.view(), save_mean.view(), save_inv_std.view());
      CheckVec(ToHost(yd.view()).view(), c.Out().values, kOracleTol, "BatchNormalization Y");
      if (training) {
        CheckVec(ToHost(mean.view()).view(), c.Out(1).values, kOracleTol, "BatchNormalization running_mean");
        CheckVec(ToHost(var.view()).view(), c.Out(2).values, kOracleTol, "BatchNormalization running_var");
      }
    } else {
      FAIL("BatchNormalization cases are 2-D to 5-D");
    }
  });
}

TE_DEVICE_TEST_CASE("ONNX oracle: BatchNormalization, inference and training_mode", "[onnx][batch_norm]") {
  ForOracleCases("BatchNormalization",
                 [&](const OnnxCase& c, auto t) { BatchNormAgainstOracle<Device, decltype(t)>(stream, c); });
}

}  // namespace
