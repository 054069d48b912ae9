// mshadow.h — mshadow client code on tensorexpr: `#include <tensorexpr/mshadow.h>` where it had
// `#include "mshadow/tensor.h"`, the rest unchanged. Compiled by g++ it is the CPU library; by nvcc (a .cu
// file) it brings the CUDA backend too, as mshadow/tensor.h did.
//
// What it provides:
// - namespace mshadow, a real namespace (clients reopen it: `namespace mshadow { ... }`), holding mshadow's
//   API by using-declarations of tensorexpr's names; mshadow::expr, mshadow::op, mshadow::red, mshadow::sv,
//   mshadow::half::half_t, mshadow::bfloat::bf16_t, default_real_t, default_type_flag;
// - the macros (mshadow/macros.h) and dmlc's logging macros, which throw Error (mshadow/logging.h), and
//   mshadow::utils::Check / Assert / Error(fmt, ...), which throw it too (mshadow/utils.h);
// - mshadow's meaning where tensorexpr's differs: reduce_except_dim<dimkeep, Reducer>,
//   reduce_with_axis<Reducer, mask>, reduce_keepdim<Reducer, mask> (mshadow/reduce.h) and a synchronous
//   default Copy (mshadow/copy.h);
// - mshadow's low-level MapExp / MapReduceKeepLowest / MapReduceKeepHighDim (mshadow/map_exp.h).
//
// Why using-declarations, one name at a time, and not `using namespace tensorexpr`: the names whose mshadow
// meaning differs are declared here under the same spelling; with a using-directive an unqualified call
// would see both and be ambiguous. The cost: a name added to tensorexpr's mshadow-facing API is added to
// the lists below too.
//
// Limits:
// - mshadow::Foo is tensorexpr::Foo, the same entity, but an explicit specialisation must be written in the
//   template's own namespace: `namespace tensorexpr { template <> struct DataType<MyType> ...; }`, not
//   `namespace mshadow { ... }`. New types, functors, reducers and expression nodes can be declared inside
//   namespace mshadow, mshadow::expr, op, red or sv freely.
// - Expression nodes follow tensorexpr's contract (tensorexpr/expr/base.h: shape(), a nested Plan), not
//   mshadow's (specialisations of expr::Plan, ShapeCheck, ExpInfo over MakeTensorExp).
// - OpReqType, kNullOp..kAddTo and Assign are MXNet's names, not mshadow's, so namespace mshadow does not
//   re-export them: MXNet-style code declares its own (tensorexpr::Assign is still there, and is written so
//   that a `#define Assign(out, req, exp)` made before this include does not break it).
// - Do not combine `using namespace mshadow;` with `using namespace tensorexpr;`: the names that differ
//   (Copy, expr::reduce_with_axis) would then be ambiguous.
#pragma once
#include "tensorexpr.h"
#include "mshadow/logging.h"
#include "mshadow/utils.h"
#include "mshadow/macros.h"
#include "mshadow/copy.h"
#include "mshadow/reduce.h"
#include "mshadow/map_exp.h"
#include "mshadow/stream.h"

namespace mshadow {

// ---- devices, shapes, tensors, streams, memory ------------------------------------------------------
using ::tensorexpr::index_t;
using ::tensorexpr::cpu;
using ::tensorexpr::gpu;
using ::tensorexpr::Shape;
using ::tensorexpr::Shape1;
using ::tensorexpr::Shape2;
using ::tensorexpr::Shape3;
using ::tensorexpr::Shape4;
using ::tensorexpr::Shape5;
using ::tensorexpr::Tensor;
using ::tensorexpr::TensorContainer;
using ::tensorexpr::TShape;
using ::tensorexpr::TBlob;
using ::tensorexpr::Stream;
using ::tensorexpr::DeleteStream;
using ::tensorexpr::InitTensorEngine;
using ::tensorexpr::ShutdownTensorEngine;
// mshadow's guide calls them untemplated (its first API): the GPU's too when compiled by nvcc.
inline void InitTensorEngine(int dev_id = 0) {
#if defined(__CUDACC__)
  ::tensorexpr::InitTensorEngine<::tensorexpr::gpu>(dev_id);
#else
  (void)dev_id;
#endif
}
inline void ShutdownTensorEngine() {
#if defined(__CUDACC__)
  ::tensorexpr::ShutdownTensorEngine<::tensorexpr::gpu>();
#endif
}
using ::tensorexpr::AllocSpace;
using ::tensorexpr::FreeSpace;
using ::tensorexpr::NewTensor;
using ::tensorexpr::Random;
using ::tensorexpr::PCGRandom32;
using ::tensorexpr::PCGRandom64;
using ::tensorexpr::UniformRealDistribution;
using ::tensorexpr::GaussianDistribution;
using ::tensorexpr::Error;
using ::tensorexpr::SetDevice;
using ::tensorexpr::AllocHost;
using ::tensorexpr::FreeHost;
// Copy: mshadow/copy.h (waits when no stream is passed).
// MapExp, MapReduceKeepLowest, MapReduceKeepHighDim: mshadow/map_exp.h.

// ---- functions on tensors ----------------------------------------------------------------------------
using ::tensorexpr::Softmax;
using ::tensorexpr::SoftmaxGrad;
using ::tensorexpr::VectorDot;
using ::tensorexpr::BatchGEMM;
using ::tensorexpr::AddTakeGrad;

// ---- element types -----------------------------------------------------------------------------------
using ::tensorexpr::DataType;
using ::tensorexpr::TypeFlag;
using ::tensorexpr::kFloat32;
using ::tensorexpr::kFloat64;
using ::tensorexpr::kFloat16;
using ::tensorexpr::kUint8;
using ::tensorexpr::kInt32;
using ::tensorexpr::kInt8;
using ::tensorexpr::kInt64;
using ::tensorexpr::kBfloat16;
using default_real_t = float;
constexpr int default_type_flag = DataType<default_real_t>::kFlag;
namespace half {
using ::tensorexpr::half_t;
}  // namespace half
namespace bfloat {
using ::tensorexpr::bf16_t;
}  // namespace bfloat

// ---- functors, reducers, savers: nothing here differs, so each namespace takes all of tensorexpr's ----
namespace op {
using namespace ::tensorexpr::op;
}  // namespace op
namespace red {
using namespace ::tensorexpr::red;
}  // namespace red
namespace sv {
using namespace ::tensorexpr::sv;
}  // namespace sv

// ---- expressions -------------------------------------------------------------------------------------
// reduce_except_dim and reduce_with_axis: mshadow/reduce.h.
namespace expr {
namespace type = ::tensorexpr::expr::type;
// What a user-defined node needs (expr/base.h).
using ::tensorexpr::expr::Exp;
using ::tensorexpr::expr::ExpBase;
using ::tensorexpr::expr::AnyDevice;
using ::tensorexpr::expr::is_exp;
using ::tensorexpr::expr::check_operand;
// Elementwise.
using ::tensorexpr::expr::ScalarExp;
using ::tensorexpr::expr::scalar;
using ::tensorexpr::expr::UnaryMapExp;
using ::tensorexpr::expr::BinaryMapExp;
using ::tensorexpr::expr::F;
using ::tensorexpr::expr::TypecastExp;
using ::tensorexpr::expr::tcast;
// Products.
using ::tensorexpr::expr::TransposeExp;
using ::tensorexpr::expr::DotExp;
using ::tensorexpr::expr::BatchDotExp;
using ::tensorexpr::expr::dot;
using ::tensorexpr::expr::batch_dot;
// Broadcasting and layout.
using ::tensorexpr::expr::Broadcast1DExp;
using ::tensorexpr::expr::BroadcastAxisExp;
using ::tensorexpr::expr::broadcast;
using ::tensorexpr::expr::broadcast_keepdim;
using ::tensorexpr::expr::broadcast_with_axis;
using ::tensorexpr::expr::repmat;
using ::tensorexpr::expr::ReshapeExp;
using ::tensorexpr::expr::reshape;
using ::tensorexpr::expr::swapaxis;
using ::tensorexpr::expr::TransposeAxesExp;
using ::tensorexpr::expr::transpose;
using ::tensorexpr::expr::SliceExp;
using ::tensorexpr::expr::slice;
using ::tensorexpr::expr::ConcatExp;
using ::tensorexpr::expr::concat;
using ::tensorexpr::expr::PaddingExp;
using ::tensorexpr::expr::pad;
using ::tensorexpr::expr::CroppingExp;
using ::tensorexpr::expr::crop;
using ::tensorexpr::expr::MirroringExp;
using ::tensorexpr::expr::mirror;
// Images.
using ::tensorexpr::expr::UnpackPatchToColExp;
using ::tensorexpr::expr::unpack_patch2col;
using ::tensorexpr::expr::PackColToPatchExp;
using ::tensorexpr::expr::pack_col2patch;
using ::tensorexpr::expr::PoolingExp;
using ::tensorexpr::expr::pool;
using ::tensorexpr::expr::avg_pool;
using ::tensorexpr::expr::UnPoolingExp;
using ::tensorexpr::expr::unpool;
using ::tensorexpr::expr::BroadcastScalarExp;
using ::tensorexpr::expr::broadcast_scalar;
using ::tensorexpr::expr::UpSamplingNearestExp;
using ::tensorexpr::expr::upsampling_nearest;
using ::tensorexpr::expr::ChannelPoolingExp;
using ::tensorexpr::expr::chpool;
// Indexing.
using ::tensorexpr::expr::OneHotEncodeExp;
using ::tensorexpr::expr::one_hot_encode;
using ::tensorexpr::expr::MatChooseRowElementExp;
using ::tensorexpr::expr::mat_choose_row_element;
using ::tensorexpr::expr::MatFillRowElementExp;
using ::tensorexpr::expr::mat_fill_row_element;
using ::tensorexpr::expr::TakeExp;
using ::tensorexpr::expr::take;
using ::tensorexpr::expr::TakeGradExp;
using ::tensorexpr::expr::take_grad;
using ::tensorexpr::expr::MaskExp;
using ::tensorexpr::expr::mask;
using ::tensorexpr::expr::RangeExp;
using ::tensorexpr::expr::range;
using ::tensorexpr::expr::ImplicitDotExp;
using ::tensorexpr::expr::implicit_dot;
// Reductions.
using ::tensorexpr::expr::ReduceExp;
using ::tensorexpr::expr::sumall_except_dim;
using ::tensorexpr::expr::sum_rows;
using ::tensorexpr::expr::reduce_all;
using ::tensorexpr::expr::sumall;
using ::tensorexpr::expr::maxall;
using ::tensorexpr::expr::minall;
}  // namespace expr

}  // namespace mshadow
