// ops/convolution.h — the convolution operator (MXNet's Convolution): parameters, shape and cost
// inference, the workspace it needs, and Forward / Backward for 1-D (NCW), 2-D (NCHW) and 3-D (NCDHW)
// inputs, on the CPU and (compiled by nvcc) the GPU, for float, double, half_t and bf16_t.
//
// Algorithm (im2col + gemm):
//   forward   col = im2col(x_n)                 (C*kk, P)  per image, P = output positions
//             y_n[g] = W[g] . col[g]            one gemm per group, beta from req; then y += broadcast<1>(b)
//   backward  dW[g] (+)= dY_n[g] . col_n[g]^T   the first image takes the req, the rest accumulate
//             col = W[g]^T . dY_n[g];  dX = col2im(col)   (a gather per input element, req honoured)
//             db = sumall_except_dim<1>(dY viewed as (N, K, P)), req honoured
// A 1x1 kernel with stride 1 and no padding uses the input as the column matrix: no im2col.
//
// The column buffer is image-major, (images, C*kk, positions): the gemm of image n then writes straight
// into y_n of the NCHW output with beta carrying the req, and a strided-batched gemm covers several
// images (or the groups) in one call, with no transpose pass. Its size is capped by param.workspace
// (MB): under the cap the batch is folded, several images per im2col and gemm call; when one image's
// column matrix exceeds the cap, the output positions of an image are split into chunks. Results are
// the same either way (tests/conv_test.cc checks it). On the CPU, a batch of at least as many images as
// threads runs image by image on each thread instead (ops/cpu/conv_per_image.h), in less workspace.
#pragma once
#include <algorithm>
#include <string>
#include <vector>
#include <tensorexpr/tensorexpr.h>
#include "conv_geometry.h"
#include "workspace.h"
#include "cpu/conv_gemm.h"
#include "cpu/conv_kernels.h"
#include "cpu/conv_per_image.h"
#if defined(__CUDACC__)
#include <tensorexpr/cuda/tensorexpr_cuda.cuh>
#include "cuda/conv_gemm.cuh"
#include "cuda/conv_kernels.cuh"
#include "cuda/workspace_gpu.cuh"
#endif

namespace tensorexpr {
namespace ops {

// How padding is chosen (Caffe2's legacy_pad): explicit numbers, SAME (output = ceil(input / stride),
// the odd pixel of padding at the end), or VALID (no padding).
enum class ConvPadding { kExplicit, kSame, kValid };

inline const char* ConvPaddingName(ConvPadding p) {
  switch (p) {
    case ConvPadding::kExplicit: return "explicit";
    case ConvPadding::kSame: return "SAME";
    case ConvPadding::kValid: return "VALID";
  }
  return "unknown";
}

struct ConvolutionParam {
  std::vector<index_t> kernel;   // spatial kernel extents: 1, 2 or 3 of them (W; H,W; D,H,W)
  std::vector<index_t> stride;   // per spatial dimension; empty means 1
  std::vector<index_t> dilate;   // per spatial dimension; empty means 1
  std::vector<index_t> pad;      // explicit padding before each spatial dimension; empty means 0
  std::vector<index_t> pad_end;  // explicit padding after, when it differs from pad; empty means = pad
  index_t num_filter = 0;        // K
  index_t num_group = 1;         // C and K are split into this many independent groups
  bool no_bias = false;
  double workspace = 1024.0;     // cap on the temp space, in MB (MXNet's default)
  ConvPadding padding = ConvPadding::kExplicit;
};

// The shapes of one convolution's tensors.
struct ConvShapes {
  std::vector<index_t> out;     // (N, K, out...) or (K, out...) for an unbatched input
  std::vector<index_t> weight;  // (K, C / num_group, kernel...)
  std::vector<index_t> bias;    // (K) or empty when no_bias
};

// Work and traffic, for schedulers and benchmarks. FLOPs count a multiply-add as 2.
struct ConvCost {
  double forward_flops = 0;          // gemm plus the bias add
  double backward_data_flops = 0;
  double backward_weight_flops = 0;
  double backward_bias_flops = 0;
  double forward_bytes = 0;          // reads of x, W, b and the write of y (no workspace traffic)
  double backward_bytes = 0;         // reads of dY, x, W and writes of dX, dW, db
};

// How a run is cut into chunks of the column buffer.
struct ConvWorkPlan {
  bool direct = false;     // pointwise: gemm on the input, no column buffer
  index_t images = 0;      // images per chunk
  index_t positions = 0;   // output positions per chunk (all of them unless one image exceeds the cap)
  index_t col_elems = 0;   // elements of the column buffer
};

namespace detail {

inline std::string VecStr(const std::vector<index_t>& v) {
  std::string s = "(";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::to_string(v[i]);
  return s + (v.size() == 1 ? ",)" : ")");
}

// A per-dimension parameter: empty means `fill` everywhere, otherwise one value per spatial dimension.
inline std::vector<index_t> PerDim(const std::vector<index_t>& v, size_t nd, index_t fill, const char* name) {
  if (v.empty()) return std::vector<index_t>(nd, fill);
  TE_CHECK(v.size() == nd, "Convolution: ", name, " ", VecStr(v), " has ", v.size(),
           " entries but the kernel has ", nd, " spatial dimensions");
  return v;
}

}  // namespace detail

// Resolves the parameters against the shape of the data (N, C, spatial...) or, unbatched, (C, spatial...).
// Throws Error naming the parameter and its value when they do not fit together.
inline ConvGeometry MakeConvGeometry(const ConvolutionParam& p, const std::vector<index_t>& data_shape) {
  const size_t nd = p.kernel.size();
  TE_CHECK(nd >= 1 && nd <= 3, "Convolution: kernel ", detail::VecStr(p.kernel),
           " must have 1, 2 or 3 spatial dimensions (NCW, NCHW, NCDHW)");
  TE_CHECK(data_shape.size() == nd + 2 || data_shape.size() == nd + 1, "Convolution: data shape ",
           detail::VecStr(data_shape), " does not fit a ", nd, "-D kernel ", detail::VecStr(p.kernel),
           ": expected ", nd + 2, " dimensions (N, C, spatial...) or ", nd + 1, " (C, spatial...)");
  const std::vector<index_t> stride = detail::PerDim(p.stride, nd, 1, "stride");
  const std::vector<index_t> dilate = detail::PerDim(p.dilate, nd, 1, "dilate");
  const std::vector<index_t> pad = detail::PerDim(p.pad, nd, 0, "pad");
  const std::vector<index_t> pad_end = detail::PerDim(p.pad_end, nd, 0, "pad_end");
  for (size_t i = 0; i < nd; ++i) {
    TE_CHECK(p.kernel[i] >= 1, "Convolution: kernel[", i, "] = ", p.kernel[i], " in kernel ",
             detail::VecStr(p.kernel), " must be >= 1");
    TE_CHECK(stride[i] >= 1, "Convolution: stride[", i, "] = ", stride[i], " in stride ", detail::VecStr(stride),
             " must be >= 1");
    TE_CHECK(dilate[i] >= 1, "Convolution: dilate[", i, "] = ", dilate[i], " in dilate ", detail::VecStr(dilate),
             " must be >= 1");
    TE_CHECK(pad[i] >= 0, "Convolution: pad[", i, "] = ", pad[i], " in pad ", detail::VecStr(pad),
             " must be >= 0");
    TE_CHECK(pad_end[i] >= 0, "Convolution: pad_end[", i, "] = ", pad_end[i], " in pad_end ",
             detail::VecStr(pad_end), " must be >= 0");
  }
  if (p.padding != ConvPadding::kExplicit) {
    TE_CHECK(p.pad.empty() && p.pad_end.empty(), "Convolution: padding mode ", ConvPaddingName(p.padding),
             " computes the padding itself; leave pad ", detail::VecStr(p.pad), " and pad_end ",
             detail::VecStr(p.pad_end), " empty");
  }
  TE_CHECK(p.num_group >= 1, "Convolution: num_group = ", p.num_group, " must be >= 1");
  TE_CHECK(p.num_filter >= 1, "Convolution: num_filter = ", p.num_filter, " must be >= 1");
  TE_CHECK(p.workspace >= 0, "Convolution: workspace = ", p.workspace, " MB must be >= 0");

  ConvGeometry g;
  const bool batched = data_shape.size() == nd + 2;
  const size_t first = batched ? 2 : 1;
  g.N = batched ? data_shape[0] : 1;
  g.C = data_shape[first - 1];
  g.K = p.num_filter;
  g.G = p.num_group;
  for (size_t i = 0; i < data_shape.size(); ++i)
    TE_CHECK(data_shape[i] >= 0, "Convolution: data shape ", detail::VecStr(data_shape), " has a negative extent");
  TE_CHECK(g.C >= 1, "Convolution: data shape ", detail::VecStr(data_shape), " has C = ", g.C,
           " input channels; need at least 1");
  TE_CHECK(g.C % g.G == 0, "Convolution: input channels C = ", g.C, " (data shape ", detail::VecStr(data_shape),
           ") are not divisible by num_group = ", g.G);
  TE_CHECK(g.K % g.G == 0, "Convolution: num_filter = ", g.K, " is not divisible by num_group = ", g.G);
  const size_t off = 3 - nd;  // 1-D and 2-D fill the leading spatial slots with 1
  for (size_t i = 0; i < nd; ++i) {
    const index_t in = data_shape[first + i], k = p.kernel[i], s = stride[i], d = dilate[i];
    const index_t span = (k - 1) * d + 1;  // the dilated kernel's extent
    index_t pb = pad[i], pe = p.pad_end.empty() ? pad[i] : pad_end[i];
    if (p.padding == ConvPadding::kValid) {
      pb = pe = 0;
    } else if (p.padding == ConvPadding::kSame) {
      const index_t out = (in + s - 1) / s;
      const index_t total = std::max<index_t>(0, (out - 1) * s + span - in);
      pb = total / 2;
      pe = total - pb;
    }
    TE_CHECK(span <= in + pb + pe, "Convolution: kernel[", i, "] = ", k, " with dilate ", d, " spans ", span,
             " but spatial dimension ", i, " of data shape ", detail::VecStr(data_shape), " is only ", in + pb + pe,
             " after padding (", pb, " + ", in, " + ", pe, ")");
    g.in[off + i] = in;
    g.kernel[off + i] = k;
    g.stride[off + i] = s;
    g.dilate[off + i] = d;
    g.pad[off + i] = pb;
    g.pad_end[off + i] = pe;
    g.out[off + i] = (in + pb + pe - span) / s + 1;
  }
  return g;
}

// Output, weight and bias shapes for data of `data_shape`.
inline ConvShapes InferConvShapes(const ConvolutionParam& p, const std::vector<index_t>& data_shape) {
  const ConvGeometry g = MakeConvGeometry(p, data_shape);
  const size_t nd = p.kernel.size(), off = 3 - nd;
  ConvShapes s;
  if (data_shape.size() == nd + 2) s.out.push_back(g.N);
  s.out.push_back(g.K);
  for (size_t i = 0; i < nd; ++i) s.out.push_back(g.out[off + i]);
  s.weight = {g.K, g.Cg()};
  for (size_t i = 0; i < nd; ++i) s.weight.push_back(p.kernel[i]);
  if (!p.no_bias) s.bias = {g.K};
  return s;
}

inline ConvCost InferConvCost(const ConvolutionParam& p, const std::vector<index_t>& data_shape, size_t dtype_bytes) {
  const ConvGeometry g = MakeConvGeometry(p, data_shape);
  const double outputs = double(g.N) * g.K * g.OutSize();
  const double macs = outputs * double(g.Cg()) * g.KernelSize();
  const double x = double(g.N) * g.C * g.InSize(), w = double(g.K) * g.Cg() * g.KernelSize();
  const double b = p.no_bias ? 0.0 : double(g.K);
  ConvCost c;
  c.forward_flops = 2 * macs + (p.no_bias ? 0.0 : outputs);
  c.backward_data_flops = 2 * macs;
  c.backward_weight_flops = 2 * macs;
  c.backward_bias_flops = p.no_bias ? 0.0 : outputs;
  c.forward_bytes = (x + w + b + outputs) * double(dtype_bytes);
  c.backward_bytes = (outputs + x + w + x + w + b) * double(dtype_bytes);
  return c;
}

// Chunking of the column buffer under the cap. `input_contiguous` says whether the pointwise shortcut
// may read the input (and write its gradient) as a matrix.
inline ConvWorkPlan PlanConvWork(const ConvGeometry& g, size_t dtype_bytes, double cap_mb, bool input_contiguous) {
  ConvWorkPlan plan;
  const index_t P = g.OutSize(), rows = g.ColRows();
  if (g.IsPointwise() && input_contiguous) {
    plan.direct = true;
    plan.images = g.N;
    plan.positions = P;
    return plan;
  }
  const index_t cap = static_cast<index_t>(cap_mb * 1048576.0 / double(dtype_bytes));
  const index_t per_image = rows * P;
  if (per_image == 0 || g.N == 0) {
    plan.images = std::max<index_t>(g.N, 1);
    plan.positions = P;
  } else if (per_image <= cap) {
    plan.images = std::min(g.N, cap / per_image);
    plan.positions = P;
  } else {
    plan.images = 1;
    plan.positions = std::max<index_t>(1, std::min(P, cap / rows));  // at least one column, over the cap if need be
  }
  plan.col_elems = plan.images * rows * plan.positions;
  return plan;
}

// Bytes of workspace Forward / Backward take for this data shape and dtype (reported before running).
inline size_t ConvolutionWorkspaceBytes(const ConvolutionParam& p, const std::vector<index_t>& data_shape,
                                        size_t dtype_bytes, bool input_contiguous = true) {
  const ConvGeometry g = MakeConvGeometry(p, data_shape);
  return static_cast<size_t>(PlanConvWork(g, dtype_bytes, p.workspace, input_contiguous).col_elems) * dtype_bytes;
}

namespace detail {

template <int dim>
inline std::vector<index_t> ShapeVec(const Shape<dim>& s) {
  return std::vector<index_t>(s.shape_, s.shape_ + dim);
}

template <typename Device, int dim, typename DType>
inline void CheckTensor(const Tensor<Device, dim, DType>& t, const std::vector<index_t>& want, const char* name,
                        bool need_contiguous) {
  TE_CHECK(ShapeVec(t.shape_) == want, "Convolution: ", name, " shape ", t.shape_, " does not match the expected ",
           VecStr(want));
  TE_CHECK(!need_contiguous || t.CheckContiguous() || t.shape_.Size() == 0, "Convolution: ", name, " of shape ",
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

inline float BetaFor(OpReqType req) { return req == kAddTo ? 1.0f : 0.0f; }

// The CPU's per-image plan (ops/cpu/conv_per_image.h) for this run; never used on the GPU.
template <typename Device, typename DType>
ConvPerImagePlan PlanPerImage(const ConvGeometry& g, const ConvWorkPlan& chunked, bool weight_grad) {
  if constexpr (std::is_same<Device, cpu>::value) {
    return PlanConvPerImage<DType>(g, GetNumThreads(), chunked.col_elems, chunked.direct, weight_grad);
  } else {
    return ConvPerImagePlan();
  }
}

// C_n[g] = alpha op(A_n[g]) op(B_n[g]) + beta C_n[g] over `images` images and all groups, with one
// strided-batched call per image (batch over groups) or per group (batch over images), whichever makes
// fewer calls. Offsets: X + n * x_img + g * x_grp. c_img == 0 sums the images' products into one C[g]
// (beta applies to the first): the weight gradient.
template <typename Device, typename DType>
void GroupedGemm(Stream<Device>* s, bool ta, bool tb, index_t M, index_t N, index_t K, float alpha, const DType* A,
                 index_t lda, index_t a_img, index_t a_grp, const DType* B, index_t ldb, index_t b_img,
                 index_t b_grp, float beta, DType* C, index_t ldc, index_t c_img, index_t c_grp, index_t images,
                 index_t groups) {
  if (groups <= images) {
    for (index_t gi = 0; gi < groups; ++gi)
      BatchedGemm(s, ta, tb, M, N, K, alpha, A + gi * a_grp, lda, a_img, B + gi * b_grp, ldb, b_img, beta,
                  C + gi * c_grp, ldc, c_img, images);
  } else {
    for (index_t n = 0; n < images; ++n)
      BatchedGemm(s, ta, tb, M, N, K, alpha, A + n * a_img, lda, a_grp, B + n * b_img, ldb, b_grp,
                  n > 0 && c_img == 0 ? 1.0f : beta, C + n * c_img, ldc, c_grp, groups);
  }
}

}  // namespace detail

// y = conv(x, W) + b, stored as req says. data (N, C, spatial...) or (C, spatial...), rows may be padded;
// weight (K, C/group, kernel...), bias (K) (ignored when no_bias), out as InferConvShapes says; weight and
// out contiguous. Runs on out's stream; the workspace comes from that stream's resource.
template <typename Device, int ddim, int wdim, typename DType>
void ConvolutionForward(const ConvolutionParam& p, const Tensor<Device, ddim, DType>& data,
                        const Tensor<Device, wdim, DType>& weight, const Tensor<Device, 1, DType>& bias, OpReqType req,
                        const Tensor<Device, ddim, DType>& out) {
  static_assert(detail::check_conv_dims<wdim, ddim>::value, "");
  TE_CHECK(size_t(wdim - 2) == p.kernel.size(), "Convolution: the weight has ", wdim - 2,
           " spatial dimensions but the kernel ", detail::VecStr(p.kernel), " has ", p.kernel.size());
  const std::vector<index_t> dshape = detail::ShapeVec(data.shape_);
  const ConvGeometry g = MakeConvGeometry(p, dshape);
  const ConvShapes shapes = InferConvShapes(p, dshape);
  detail::CheckTensor(weight, shapes.weight, "weight", true);
  detail::CheckTensor(out, shapes.out, "output", true);
  if (!p.no_bias) detail::CheckTensor(bias, shapes.bias, "bias", true);
  if (req == kNullOp) return;
  TE_CHECK(req == kWriteTo || req == kWriteInplace || req == kAddTo, "Convolution forward: unknown req ",
           static_cast<int>(req));
  Stream<Device>* s = out.stream_;
  const index_t P = g.OutSize(), Kg = g.Kg(), Cg = g.Cg(), kk = g.KernelSize(), rows = g.ColRows();
  const float beta = detail::BetaFor(req);
  const ConvWorkPlan plan = PlanConvWork(g, sizeof(DType), p.workspace, data.CheckContiguous());
  if (g.N * g.K * P == 0) return;
  const ConvPerImagePlan per_image = detail::PlanPerImage<Device, DType>(g, plan, false);
  if (plan.direct) {
    // y_n[g] (Kg, P) = W[g] (Kg, Cg) . x_n[g] (Cg, P)
    detail::GroupedGemm(s, false, false, Kg, P, Cg, 1.0f, weight.dptr_, Cg, 0, Kg * Cg, data.dptr_, P, g.C * P,
                        Cg * P, beta, out.dptr_, P, g.K * P, Kg * P, g.N, g.G);
  } else if (per_image.use) {
    if constexpr (std::is_same<Device, cpu>::value && kConvPerImageDType<DType>) {
      const Tensor<cpu, 1, DType> space = get_space_typed<cpu, 1, DType>(Shape1(per_image.WorkspaceElems()), s);
      ConvForwardPerImage(per_image, g, data.dptr_, data.stride_, weight.dptr_, beta, out.dptr_, space.dptr_);
    }
  } else {
    Tensor<Device, 1, DType> col = get_space_typed<Device, 1, DType>(Shape1(plan.col_elems), s);
    for (index_t n0 = 0; n0 < g.N; n0 += plan.images) {
      const index_t nb = std::min(plan.images, g.N - n0);
      for (index_t p0 = 0; p0 < P; p0 += plan.positions) {
        const index_t pc = std::min(plan.positions, P - p0);
        ConvIm2Col(s, g, data.dptr_, data.stride_, n0, nb, p0, pc, col.dptr_);
        // y_n[g][:, p0:p0+pc] (Kg, pc) = W[g] (Kg, Cg*kk) . col_n[g] (Cg*kk, pc)
        detail::GroupedGemm(s, false, false, Kg, pc, Cg * kk, 1.0f, weight.dptr_, Cg * kk, 0, Kg * Cg * kk,
                            col.dptr_, pc, rows * pc, Cg * kk * pc, beta, out.dptr_ + n0 * g.K * P + p0, P,
                            g.K * P, Kg * P, nb, g.G);
      }
    }
  }
  if (!p.no_bias) {
    // y (N, K, P) += b laid along dimension 1.
    Tensor<Device, 3, DType> y3(out.dptr_, Shape3(g.N, g.K, P), s);
    y3 += expr::broadcast<1>(bias, y3.shape_);
  }
}

// Gradients of y = conv(x, W) + b given dY (out_grad). Each of data_grad, weight_grad, bias_grad is
// stored as its req says; kNullOp skips its work. data and data_grad may have padded rows; out_grad,
// weight and the weight / bias gradients are contiguous.
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
  detail::CheckTensor(out_grad, shapes.out, "output gradient", true);
  detail::CheckTensor(weight, shapes.weight, "weight", true);
  if (req_data != kNullOp) detail::CheckTensor(data_grad, dshape, "data gradient", false);
  if (req_weight != kNullOp) detail::CheckTensor(weight_grad, shapes.weight, "weight gradient", true);
  if (req_bias != kNullOp && !p.no_bias) detail::CheckTensor(bias_grad, shapes.bias, "bias gradient", true);
  for (OpReqType r : {req_data, req_weight, req_bias})
    TE_CHECK(r == kNullOp || r == kWriteTo || r == kWriteInplace || r == kAddTo,
             "Convolution backward: unknown req ", static_cast<int>(r));
  Stream<Device>* s = out_grad.stream_;
  const index_t P = g.OutSize(), Kg = g.Kg(), Cg = g.Cg(), kk = g.KernelSize(), rows = g.ColRows();

  if (req_bias != kNullOp && !p.no_bias) {
    // db = the sum of dY (N, K, P) over images and positions.
    const Tensor<Device, 3, DType> dy3(out_grad.dptr_, Shape3(g.N, g.K, P), s);
    Assign(bias_grad, req_bias, expr::sumall_except_dim<1>(dy3));
  }
  const bool do_data = req_data != kNullOp, do_weight = req_weight != kNullOp;
  if (!do_data && !do_weight) return;

  // Nothing to sum over: the weight gradient is zero, and so is every input element's.
  if (g.N * P == 0) {
    if (do_weight && req_weight != kAddTo) ConvFillZero(s, weight_grad.dptr_, weight_grad.shape_.Size());
    if (do_data && req_data != kAddTo && data_grad.shape_.Size() > 0)
      ConvFillZero(s, data_grad.dptr_, data_grad.MSize());
    return;
  }
  const bool contiguous = data.CheckContiguous() && (!do_data || data_grad.CheckContiguous());
  const ConvWorkPlan plan = PlanConvWork(g, sizeof(DType), p.workspace, contiguous);
  const DType* dy = out_grad.dptr_;
  const ConvPerImagePlan per_image = detail::PlanPerImage<Device, DType>(g, plan, do_weight);
  if (per_image.use) {
    if constexpr (std::is_same<Device, cpu>::value && kConvPerImageDType<DType>) {
      const Tensor<cpu, 1, DType> space = get_space_typed<cpu, 1, DType>(Shape1(per_image.WorkspaceElems()), s);
      ConvBackwardPerImage(per_image, g, dy, data.dptr_, data.stride_, weight.dptr_,
                           do_data ? data_grad.dptr_ : nullptr, data_grad.stride_, req_data == kAddTo,
                           do_weight ? weight_grad.dptr_ : nullptr, req_weight, space.dptr_);
    }
    return;
  }
  if (plan.direct) {
    if (do_weight) {
      // dW[g] (Kg, Cg) (+)= sum over n of dY_n[g] (Kg, P) . x_n[g]^T (P, Cg)
      detail::GroupedGemm(s, false, true, Kg, Cg, P, 1.0f, dy, P, g.K * P, Kg * P, data.dptr_, P, g.C * P, Cg * P,
                          detail::BetaFor(req_weight), weight_grad.dptr_, Cg, 0, Kg * Cg, g.N, g.G);
    }
    if (do_data) {
      // dX_n[g] (Cg, P) = W[g]^T (Cg, Kg) . dY_n[g] (Kg, P)
      detail::GroupedGemm(s, true, false, Cg, P, Kg, 1.0f, weight.dptr_, Cg, 0, Kg * Cg, dy, P, g.K * P, Kg * P,
                          detail::BetaFor(req_data), data_grad.dptr_, P, g.C * P, Cg * P, g.N, g.G);
    }
    return;
  }
  Tensor<Device, 1, DType> col = get_space_typed<Device, 1, DType>(Shape1(plan.col_elems), s);
  for (index_t n0 = 0; n0 < g.N; n0 += plan.images) {
    const index_t nb = std::min(plan.images, g.N - n0);
    for (index_t p0 = 0; p0 < P; p0 += plan.positions) {
      const index_t pc = std::min(plan.positions, P - p0);
      const DType* dy_chunk = dy + n0 * g.K * P + p0;  // dY_n[g][:, p0:p0+pc] has row stride P
      if (do_weight) {
        ConvIm2Col(s, g, data.dptr_, data.stride_, n0, nb, p0, pc, col.dptr_);
        // dW[g] (Kg, Cg*kk) (+)= sum over the chunk's images of dY_n[g] (Kg, pc) . col_n[g]^T (pc, Cg*kk)
        const bool first = n0 == 0 && p0 == 0;
        detail::GroupedGemm(s, false, true, Kg, Cg * kk, pc, 1.0f, dy_chunk, P, g.K * P, Kg * P, col.dptr_, pc,
                            rows * pc, Cg * kk * pc, first ? detail::BetaFor(req_weight) : 1.0f, weight_grad.dptr_,
                            Cg * kk, 0, Kg * Cg * kk, nb, g.G);
      }
      if (do_data) {
        // col_n[g] (Cg*kk, pc) = W[g]^T (Cg*kk, Kg) . dY_n[g] (Kg, pc); then gather into dX
        detail::GroupedGemm(s, true, false, Cg * kk, pc, Kg, 1.0f, weight.dptr_, Cg * kk, 0, Kg * Cg * kk, dy_chunk,
                            P, g.K * P, Kg * P, 0.0f, col.dptr_, pc, rows * pc, Cg * kk * pc, nb, g.G);
        ConvCol2Im(s, g, col.dptr_, n0, nb, p0, pc, data_grad.dptr_, data_grad.stride_,
                   p0 > 0 || req_data == kAddTo);
      }
    }
  }
}

}  // namespace ops
}  // namespace tensorexpr
