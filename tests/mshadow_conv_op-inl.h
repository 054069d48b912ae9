// mshadow_conv_op-inl.h — an MXNet-style convolution operator written only against mshadow's API, as
// MXNet's shared `-inl.h` operator files were: one implementation, templated on the device, included by a
// .cc compiled by g++ (tests/mshadow_compat_test.cc instantiates it for cpu) and by a .cu compiled by nvcc
// (tests/gpu/mshadow_compat_test.cu instantiates it for gpu). It includes <tensorexpr/mshadow.h>, which
// serves both compilers as mshadow/tensor.h did.
//
// im2col through unpack_patch2col (of the padded image), one dot per group, the result stored under the
// request (kNullOp / kWriteTo / kWriteInplace / kAddTo) as MXNet's ASSIGN_DISPATCH did, the bias added
// with broadcast<1>; backward: the weight gradient one dot per group, the data gradient through
// pack_col2patch and crop, the bias gradient through sumall_except_dim<1>.
//
// The file declares its own request enum and dispatch macro (inside its namespace), as MXNet did, so it
// must not clash with tensorexpr's OpReqType (which namespace mshadow does not re-export).
#pragma once
#include <tensorexpr/mshadow.h>

namespace mxnet_style {

enum ConvReq { kNullOp, kWriteTo, kWriteInplace, kAddTo };

#define MXNET_STYLE_ASSIGN_DISPATCH(out, req, exp) \
  {                                                \
    switch (req) {                                 \
      case ::mxnet_style::kNullOp:                 \
        break;                                     \
      case ::mxnet_style::kWriteTo:                \
      case ::mxnet_style::kWriteInplace:           \
        (out) = (exp);                             \
        break;                                     \
      case ::mxnet_style::kAddTo:                  \
        (out) += (exp);                            \
        break;                                     \
      default:                                     \
        LOG(FATAL) << "not reached";               \
    }                                              \
  }

struct ConvParam {
  mshadow::index_t kernel_y, kernel_x, stride_y = 1, stride_x = 1, dilate_y = 1, dilate_x = 1, pad_y = 0, pad_x = 0;
  mshadow::index_t num_filter, num_group = 1;
};

template <typename xpu, typename DType>
class ConvolutionOp {
 public:
  explicit ConvolutionOp(const ConvParam& p) : p_(p) {}

  // data (N, C, H, W), weight (K, C / G, ky, kx), bias (K), out (N, K, OH, OW).
  void Forward(const mshadow::Tensor<xpu, 4, DType>& data, const mshadow::Tensor<xpu, 4, DType>& weight,
               const mshadow::Tensor<xpu, 1, DType>& bias, ConvReq req, mshadow::Tensor<xpu, 4, DType> out) {
    using namespace mshadow;
    using namespace mshadow::expr;
    CHECK_EQ(out.size(1), p_.num_filter) << "output channels";
    CHECK_EQ(data.size(1) % p_.num_group, 0) << "channels must divide into the groups";
    const index_t G = p_.num_group, N = data.size(0), K = p_.num_filter;
    const index_t OH = out.size(2), OW = out.size(3);
    const index_t col_rows = UnpackPatches(data, OH, OW, out.stream_);
    const Tensor<xpu, 3, DType> wmat(weight.dptr_, Shape3(G, K / G, col_rows), out.stream_);
    for (index_t g = 0; g < G; ++g) {
      Tensor<xpu, 2, DType> dst = tmp_[g];
      dst = dot(wmat[g], col_.Slice(g * col_rows, (g + 1) * col_rows));
    }
    MXNET_STYLE_ASSIGN_DISPATCH(out, req, (swapaxis<1, 0>(reshape(tmp_, Shape4(K, N, OH, OW)))));
    if (req != kNullOp) out += broadcast<1>(bias, out.shape_);
  }

  // grad_out (N, K, OH, OW) -> grad_data (like data), grad_weight (like weight), grad_bias (K).
  void Backward(const mshadow::Tensor<xpu, 4, DType>& grad_out, const mshadow::Tensor<xpu, 4, DType>& data,
                const mshadow::Tensor<xpu, 4, DType>& weight, ConvReq req_data, mshadow::Tensor<xpu, 4, DType> grad_data,
                ConvReq req_weight, mshadow::Tensor<xpu, 4, DType> grad_weight, ConvReq req_bias,
                mshadow::Tensor<xpu, 1, DType> grad_bias) {
    using namespace mshadow;
    using namespace mshadow::expr;
    const index_t G = p_.num_group, N = data.size(0), K = p_.num_filter;
    const index_t col_rows = UnpackPatches(data, grad_out.size(2), grad_out.size(3), grad_out.stream_);
    tmp_ = reshape(swapaxis<1, 0>(grad_out), tmp_.shape_);
    const Tensor<xpu, 3, DType> wmat(weight.dptr_, Shape3(G, K / G, col_rows), grad_out.stream_);
    Tensor<xpu, 3, DType> gwmat(grad_weight.dptr_, wmat.shape_, grad_out.stream_);
    for (index_t g = 0; g < G; ++g) {
      Tensor<xpu, 2, DType> gw = gwmat[g];
      const Tensor<xpu, 2, DType> cols = col_.Slice(g * col_rows, (g + 1) * col_rows);
      if (req_weight == kAddTo) {
        gw += dot(tmp_[g], cols.T());
      } else if (req_weight != kNullOp) {
        gw = dot(tmp_[g], cols.T());
      }
    }
    for (index_t g = 0; g < G; ++g) {
      Tensor<xpu, 2, DType> cols = col_.Slice(g * col_rows, (g + 1) * col_rows);
      cols = dot(wmat[g].T(), tmp_[g]);
    }
    const Shape<4> padded = Shape4(N, data.size(1), data.size(2) + 2 * p_.pad_y, data.size(3) + 2 * p_.pad_x);
    MXNET_STYLE_ASSIGN_DISPATCH(grad_data, req_data,
                                crop(pack_col2patch(col_, padded, p_.kernel_y, p_.kernel_x, p_.stride_y, p_.stride_x,
                                                    p_.dilate_y, p_.dilate_x),
                                     Shape2(data.size(2), data.size(3))));
    MXNET_STYLE_ASSIGN_DISPATCH(grad_bias, req_bias, sumall_except_dim<1>(grad_out));
  }

 private:
  // Sizes the workspaces for an (OH, OW) output on `stream` and unpacks the padded image's patches into
  // col_ (G * col_rows, N * OH * OW); returns col_rows, the rows of one group.
  mshadow::index_t UnpackPatches(const mshadow::Tensor<xpu, 4, DType>& data, mshadow::index_t OH, mshadow::index_t OW,
                                 mshadow::Stream<xpu>* stream) {
    using namespace mshadow;
    using namespace mshadow::expr;
    const index_t G = p_.num_group, N = data.size(0), K = p_.num_filter;
    const index_t col_rows = data.size(1) / G * p_.kernel_y * p_.kernel_x;
    col_.set_stream(stream);
    tmp_.set_stream(stream);
    col_.Resize(Shape2(G * col_rows, N * OH * OW));
    tmp_.Resize(Shape3(G, K / G, N * OH * OW));
    col_ = unpack_patch2col(pad(data, p_.pad_y, p_.pad_x), p_.kernel_y, p_.kernel_x, p_.stride_y, p_.stride_x,
                            p_.dilate_y, p_.dilate_x);
    return col_rows;
  }

  ConvParam p_;
  mshadow::TensorContainer<xpu, 2, DType> col_;
  mshadow::TensorContainer<xpu, 3, DType> tmp_;
};

}  // namespace mxnet_style
