// examples/fashion_mnist/network.h — the convnet, written once for both devices:
//
//   x (N,1,28,28) -> conv 5x5x32 SAME [-> batch norm] -> relu -> max pool 2   (N,32,14,14)
//                 -> conv 5x5x64 SAME [-> batch norm] -> relu -> max pool 2   (N,64,7,7)
//                 -> fc 1024 -> relu [-> dropout] -> fc 10 -> softmax cross-entropy
//
// Each layer is one call into the ops layer (ops/*.h); this file only owns the tensors between them and
// the order of the calls. Forward keeps every intermediate that Backward needs; Backward writes every
// parameter's gradient (kWriteTo, nothing accumulates across batches); Update applies momentum SGD.
// The parameters live side by side in three arenas (values, gradients, momenta), the weight-decayed ones
// first, so the update is two one-pass calls over contiguous memory instead of one per parameter.
//
// Mixed precision (DType half_t or bf16_t, on the GPU): activations, weights as the layers see them and
// gradients are DType, the convolutions and gemms run on tensor cores with fp32 accumulation; the master
// weights, momenta and the update stay fp32 (a DType copy of the weights is refreshed after each update),
// and the classifier's softmax and loss run in fp32. The loss gradient is multiplied by a loss scale
// (LossScaler) so that small gradients survive fp16; a step whose gradients are not finite is skipped.
// The batch size may change from call to call (the last, partial batch): containers are resized, which
// reallocates only when they must grow.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>
#include <tensorexpr/tensorexpr.h>
#include <tensorexpr/random.h>
#include <tensorexpr/random_philox.h>
#include <tensorexpr/ops/activation.h>
#include <tensorexpr/ops/batch_norm.h>
#include <tensorexpr/ops/conv_epilogue.h>
#include <tensorexpr/ops/convolution.h>
#include <tensorexpr/ops/dropout.h>
#include <tensorexpr/ops/fully_connected.h>
#include <tensorexpr/ops/init.h>
#include <tensorexpr/ops/pooling.h>
#include <tensorexpr/ops/sgd.h>
#include <tensorexpr/ops/softmax_output.h>
#include "layer_profile.h"
#if defined(__CUDACC__)
#include <tensorexpr/cuda/random.cuh>
#include <tensorexpr/cuda/random_philox.cuh>
#endif

namespace fashion_mnist {

using namespace tensorexpr;

struct NetConfig {
  bool batch_norm = false;
  double dropout = 0.5;
  uint64_t seed = 42;
  uint64_t dropout_sequence = 0;  // Philox sequence of the dropout masks: one per rank, so ranks drop differently
  std::string conv_algorithm;     // forced on both convolutions; empty: the library's choice
};

// One learnable tensor: its place in the arenas (ParameterArenas); views give it its shape.
struct Parameter {
  std::string name;
  index_t size = 0, offset = 0;
  bool decayed = false;  // weight decay applies (the weights, not biases or batch norm's gamma / beta)
};

// Values, gradients and momenta of all parameters, each one flat fp32 tensor.
template <typename Device>
struct ParameterArenas {
  TensorContainer<Device, 1, float> value, grad, momentum;
  index_t decayed = 0;  // the decayed parameters fill [0, decayed)

  // Parameter p in an arena (of these or of their DType copies) as a tensor of shape s.
  template <int dim, typename T>
  static Tensor<Device, dim, T> View(const TensorContainer<Device, 1, T>& arena, const Parameter& p,
                                     const Shape<dim>& s) {
    return Tensor<Device, dim, T>(arena.dptr_ + p.offset, s, arena.stream_);
  }
  static Tensor<Device, 1, float> Span(const TensorContainer<Device, 1, float>& arena, index_t begin, index_t end) {
    return Tensor<Device, 1, float>(arena.dptr_ + begin, Shape1(end - begin), arena.stream_);
  }
};

// Dynamic loss scaling (Micikevicius et al., "Mixed precision training", ICLR 2018), PyTorch's GradScaler
// defaults: fp16 starts at 2^16, halves the scale on a step whose gradients overflow (the step is skipped)
// and doubles it after 2000 good steps in a row. bf16 has fp32's exponent range: scale 1, fixed, but a
// non-finite step is still skipped.
struct LossScaler {
  double scale = 1;
  bool dynamic = false;
  int good_steps = 0;
  long long skipped = 0;
  static constexpr int kGrowthInterval = 2000;

  static LossScaler For(bool fp16) {
    LossScaler s;
    s.dynamic = fp16;
    s.scale = fp16 ? 65536.0 : 1.0;
    return s;
  }
  // Records a step whose gradients were (not) finite; returns whether to apply it.
  bool Step(bool finite) {
    if (!finite) {
      ++skipped;
      good_steps = 0;
      if (dynamic) scale = std::max(scale * 0.5, 1.0);
      return false;
    }
    if (dynamic && ++good_steps == kGrowthInterval) {
      scale = std::min(scale * 2.0, 16777216.0);
      good_steps = 0;
    }
    return true;
  }
};

template <typename Device, typename DType = float>
class ConvNet {
  static constexpr bool kMixed = !std::is_same<DType, float>::value;  // fp32 master weights beside DType ones

 public:
  static constexpr index_t kImage = 28, kClasses = 10, kHidden = 1024;
  static constexpr index_t kC1 = 32, kC2 = 64;

  ConvNet(const NetConfig& cfg, Stream<Device>* stream)
      : cfg_(cfg), stream_(stream), dropout_rnd_(cfg.seed, cfg.dropout_sequence, stream),
        scaler_(LossScaler::For(std::is_same<DType, half_t>::value)) {
    conv1_.kernel = {5, 5};
    conv1_.num_filter = kC1;
    conv1_.padding = ops::ConvPadding::kSame;
    conv1_.no_bias = cfg.batch_norm;  // batch norm's beta takes the bias's place
    conv1_.algorithm = cfg.conv_algorithm;
    conv2_ = conv1_;
    conv2_.num_filter = kC2;
    pool_.kernel = {2, 2};
    pool_.stride = {2, 2};
    pool_.pool_type = ops::PoolType::kMax;
    bn_.eps = 1e-5;        // PyTorch's default, as in the peer
    bn_.momentum = 0.9;
    bn_.fix_gamma = false;
    fc1_.num_hidden = kHidden;
    fc2_.num_hidden = kClasses;
    drop_.p = cfg.dropout;

    w_conv1_ = AddParam("conv1.weight", Shape4(kC1, 1, 5, 5).Size());
    w_conv2_ = AddParam("conv2.weight", Shape4(kC2, kC1, 5, 5).Size());
    if (cfg.batch_norm) {
      gamma1_ = AddParam("bn1.gamma", kC1), beta1_ = AddParam("bn1.beta", kC1);
      gamma2_ = AddParam("bn2.gamma", kC2), beta2_ = AddParam("bn2.beta", kC2);
    } else {
      b_conv1_ = AddParam("conv1.bias", kC1), b_conv2_ = AddParam("conv2.bias", kC2);
    }
    w_fc1_ = AddParam("fc1.weight", kHidden * kC2 * 7 * 7);
    b_fc1_ = AddParam("fc1.bias", kHidden);
    w_fc2_ = AddParam("fc2.weight", kClasses * kHidden);
    b_fc2_ = AddParam("fc2.bias", kClasses);
    AllocateParameters();
    Initialise();
    for (int i = 0; i < 2; ++i) {
      Stat(&moving_mean_[i], i), Stat(&moving_var_[i], i), Stat(&save_mean_[i], i), Stat(&save_inv_std_[i], i);
      moving_mean_[i] = DType(0.0f);
      moving_var_[i] = DType(1.0f);
    }
    loss_.set_stream(stream);
    loss_.Resize(Shape1(1));
  }

  // Runs the network on x (N,1,28,28). In training, also the loss of the batch against `labels` (N),
  // stored as loss_req says into LossTensor() (kAddTo sums the batches' mean losses on the device).
  void Forward(const Tensor<Device, 4, float>& x, const Tensor<Device, 1, int32_t>& labels, bool train,
               OpReqType loss_req) {
    const index_t N = x.size(0);
    if constexpr (kMixed) {
      Fit(&x_lowp_, x.shape_);
      Timed("input", "cast", [&] { x_lowp_ = expr::tcast<DType>(x); });
      x_ = x_lowp_;
    } else {
      x_ = x;
    }
    Fit(&conv1_out_, Shape4(N, kC1, kImage, kImage));
    Fit(&act1_, conv1_out_.shape_);
    Fit(&pool1_, Shape4(N, kC1, kImage / 2, kImage / 2));
    Fit(&conv2_out_, Shape4(N, kC2, kImage / 2, kImage / 2));
    Fit(&act2_, conv2_out_.shape_);
    Fit(&pool2_, Shape4(N, kC2, kImage / 4, kImage / 4));
    Fit(&fc1_out_, Shape2(N, kHidden));
    Fit(&drop_mask_, fc1_out_.shape_);
    Fit(&drop_out_, fc1_out_.shape_);
    Fit(&fc2_out_, Shape2(N, kClasses));
    Fit(&prob_, fc2_out_.shape_);

    ConvBlock(0, train, x_, &conv1_out_, &act1_, &pool1_);
    ConvBlock(1, train, pool1_, &conv2_out_, &act2_, &pool2_);
    Timed("fc1", "fwd", [&] {
      ops::FullyConnectedForward(fc1_, pool2_.view(), Value(w_fc1_, Shape2(kHidden, kC2 * 7 * 7)),
                                 Value(b_fc1_, Shape1(kHidden)), kWriteTo, fc1_out_.view());
    });
    Timed("relu3", "fwd", [&] { ops::ActivationForward(relu_, fc1_out_.view(), kWriteInplace, fc1_out_.view()); });
    Tensor<Device, 2, DType> hidden = fc1_out_;
    if (drop_.p > 0) {
      Timed("dropout", "fwd", [&] {
        ops::DropoutForward(drop_, train, &dropout_rnd_, fc1_out_.view(), kWriteTo, drop_out_.view(),
                            drop_mask_.view());
      });
      hidden = drop_out_;
    }
    Timed("fc2", "fwd", [&] {
      ops::FullyConnectedForward(fc2_, hidden, Value(w_fc2_, Shape2(kClasses, kHidden)),
                                 Value(b_fc2_, Shape1(kClasses)), kWriteTo, fc2_out_.view());
    });
    Timed("softmax", "fwd", [&] {
      // The classifier's softmax and loss in fp32 (in mixed precision from an fp32 copy of the logits).
      Tensor<Device, 2, float> logits;
      if constexpr (kMixed) {
        Fit(&logits_, fc2_out_.shape_);
        logits_ = expr::tcast<float>(fc2_out_.view());
        logits = logits_;
      } else {
        logits = fc2_out_;
      }
      ops::SoftmaxOutputForward(softmax_, logits, labels, kWriteTo, prob_.view(), train ? loss_req : kNullOp,
                                loss_.view());
    });
  }

  // Gradients of the mean loss of the last training Forward with respect to every parameter.
  void Backward(const Tensor<Device, 1, int32_t>& labels) {
    const index_t N = x_.size(0);
    Fit(&d_fc2_out_, fc2_out_.shape_);
    Fit(&d_hidden_, fc1_out_.shape_);
    Fit(&d_pool2_, pool2_.shape_);
    Fit(&d_act2_, act2_.shape_);
    Fit(&d_conv2_out_, conv2_out_.shape_);
    Fit(&d_pool1_, pool1_.shape_);
    Fit(&d_act1_, act1_.shape_);
    Fit(&d_conv1_out_, conv1_out_.shape_);
    (void)N;

    Timed("softmax", "bwd", [&] {
      softmax_.grad_scale = scaler_.scale;  // the loss scale; the update divides it out
      if constexpr (kMixed) {
        Fit(&d_logits_, prob_.shape_);
        ops::SoftmaxOutputBackward(softmax_, prob_.view(), labels, kWriteTo, d_logits_.view());
        d_fc2_out_ = expr::tcast<DType>(d_logits_.view());
      } else {
        ops::SoftmaxOutputBackward(softmax_, prob_.view(), labels, kWriteTo, d_fc2_out_.view());
      }
    });
    const Tensor<Device, 2, DType> hidden = drop_.p > 0 ? drop_out_.view() : fc1_out_.view();
    Timed("fc2", "bwd", [&] {
      ops::FullyConnectedBackward(fc2_, d_fc2_out_.view(), hidden, Value(w_fc2_, Shape2(kClasses, kHidden)),
                                  kWriteTo, d_hidden_.view(), kWriteTo, Grad(w_fc2_, Shape2(kClasses, kHidden)),
                                  kWriteTo, Grad(b_fc2_, Shape1(kClasses)));
    });
    GradientsWritten({w_fc2_, b_fc2_});
    if (drop_.p > 0) {
      Timed("dropout", "bwd", [&] {
        ops::DropoutBackward(drop_, d_hidden_.view(), drop_mask_.view(), kWriteInplace, d_hidden_.view());
      });
    }
    Timed("relu3", "bwd",
          [&] { ops::ActivationBackward(relu_, d_hidden_.view(), fc1_out_.view(), kWriteInplace, d_hidden_.view()); });
    Timed("fc1", "bwd", [&] {
      ops::FullyConnectedBackward(fc1_, d_hidden_.view(), pool2_.view(), Value(w_fc1_, Shape2(kHidden, kC2 * 7 * 7)),
                                  kWriteTo, d_pool2_.view(), kWriteTo, Grad(w_fc1_, Shape2(kHidden, kC2 * 7 * 7)),
                                  kWriteTo, Grad(b_fc1_, Shape1(kHidden)));
    });
    GradientsWritten({w_fc1_, b_fc1_});
    ConvBlockBackward(1, pool1_.view(), conv2_out_, act2_, pool2_, d_pool2_, &d_act2_, &d_conv2_out_, &d_pool1_);
    ConvBlockBackward(0, x_, conv1_out_, act1_, pool1_, d_pool1_, &d_act1_, &d_conv1_out_, nullptr);
  }

  // Called with each parameter's gradient (flat) as soon as Backward has written it, last layer first: a
  // data-parallel trainer starts averaging it over the ranks while the earlier layers' backward runs.
  void set_gradient_hook(std::function<void(const Tensor<Device, 1, DType>&)> hook) { gradient_hook_ = std::move(hook); }

  // The fp32 master weights, all parameters in one tensor; after changing them, call WeightsChanged.
  Tensor<Device, 1, float> MasterWeights() const { return arenas_.value.view(); }
  void WeightsChanged() {
    if constexpr (kMixed) value_lowp_ = expr::tcast<DType>(arenas_.value.view());
  }

  // One momentum-SGD step on every parameter (weight decay on the weights only, not biases / BN).
  void Update(double lr, double momentum, double weight_decay) {
    Timed("sgd", "update", [&] { UpdateParameters(lr, momentum, weight_decay); });
    if (profile_ != nullptr) profile_->EndBatch();
  }

  // Times every layer call into `profile` from now on (nullptr: stop timing). The profile outlives it.
  void set_profile(LayerProfile* profile) { profile_ = profile; }

  // The loss scale and the steps skipped for non-finite gradients (mixed precision; 1 and 0 in fp32).
  const LossScaler& Scaler() const { return scaler_; }

  // Class probabilities (N, 10) of the last Forward.
  Tensor<Device, 2, float> Probabilities() const { return prob_.view(); }
  // The loss accumulator of Forward (shape (1)).
  Tensor<Device, 1, float> LossTensor() const { return loss_.view(); }
  index_t NumParameters() const {
    index_t n = 0;
    for (const Parameter& p : params_) n += p.size;
    return n;
  }

 private:
  using Param = size_t;  // an index into params_ (the vector may grow while the net is built)

  // Two one-pass updates: the decayed parameters, then the rest. In mixed precision the DType gradients are
  // widened into the fp32 arena first and checked (a step with a non-finite one is skipped), the loss scale
  // is divided out by the update, and the DType copy of the weights is refreshed after it.
  void UpdateParameters(double lr, double momentum, double weight_decay) {
    double rescale = 1.0;
    if constexpr (kMixed) {
      arenas_.grad = expr::tcast<float>(grad_lowp_.view());
      grad_sum_ = expr::sumall(arenas_.grad.view());  // inf or NaN if any gradient is
      TensorContainer<cpu, 1, float> sum(Shape1(1));
      Copy(sum.view(), grad_sum_.view(), stream_);
      stream_->Wait();
      const double used = scaler_.scale;  // the scale of this step's backward (Step may change it)
      if (!scaler_.Step(std::isfinite(sum.dptr_[0]))) return;
      rescale = 1.0 / used;
    }
    const index_t total = arenas_.value.size(0), split[3] = {0, arenas_.decayed, total};
    for (int part = 0; part < 2; ++part) {
      if (split[part] == split[part + 1]) continue;
      ops::SGDMomParam sp;
      sp.lr = lr;
      sp.momentum = momentum;
      sp.wd = part == 0 ? weight_decay : 0.0;
      sp.rescale_grad = rescale;
      const auto span = [&](const TensorContainer<Device, 1, float>& a) {
        return ParameterArenas<Device>::Span(a, split[part], split[part + 1]);
      };
      ops::SGDMomUpdate(sp, span(arenas_.value), span(arenas_.grad), span(arenas_.momentum), kWriteInplace,
                        span(arenas_.value));
    }
    if constexpr (kMixed) value_lowp_ = expr::tcast<DType>(arenas_.value.view());
  }

  void GradientsWritten(std::initializer_list<Param> written) {
    if (!gradient_hook_) return;
    for (const Param i : written) gradient_hook_(Grad(i, Shape1(params_[i].size)));
  }

  // f(), timed as `layer` `phase` when profiling.
  template <typename F>
  void Timed(const char* layer, const char* phase, F&& f) {
    if (profile_ != nullptr) {
      profile_->Time(stream_, layer, phase, f);
    } else {
      f();
    }
  }

  Param AddParam(const std::string& name, index_t size) {
    Parameter p;
    p.name = name;
    p.size = size;
    p.decayed = name.size() > 7 && name.compare(name.size() - 7, 7, ".weight") == 0;
    params_.push_back(p);
    return params_.size() - 1;
  }
  // Places the parameters in the arenas, decayed ones first, and allocates them (zeros).
  void AllocateParameters() {
    index_t offset = 0;
    for (const bool decayed : {true, false}) {
      for (Parameter& p : params_) {
        if (p.decayed != decayed) continue;
        p.offset = offset;
        offset += p.size;
      }
      if (decayed) arenas_.decayed = offset;
    }
    for (TensorContainer<Device, 1, float>* t : {&arenas_.value, &arenas_.grad, &arenas_.momentum}) {
      t->set_stream(stream_);
      t->Resize(Shape1(offset), 0.0f);
    }
    if constexpr (kMixed) {
      Fit(&value_lowp_, Shape1(offset));
      Fit(&grad_lowp_, Shape1(offset));
      Fit(&grad_sum_, Shape1(1));
    }
  }
  // Parameter i as the layers see it (DType) and its gradient (DType; widened into the fp32 arena by the
  // update in mixed precision).
  template <int dim>
  Tensor<Device, dim, DType> Value(Param i, const Shape<dim>& s) const {
    if constexpr (kMixed) return ParameterArenas<Device>::View(value_lowp_, params_[i], s);
    else return ParameterArenas<Device>::View(arenas_.value, params_[i], s);
  }
  template <int dim>
  Tensor<Device, dim, DType> Grad(Param i, const Shape<dim>& s) const {
    if constexpr (kMixed) return ParameterArenas<Device>::View(grad_lowp_, params_[i], s);
    else return ParameterArenas<Device>::View(arenas_.grad, params_[i], s);
  }
  template <int dim, typename T>
  void Fit(TensorContainer<Device, dim, T>* t, const Shape<dim>& s) {
    t->set_stream(stream_);
    t->Resize(s);
  }
  void Stat(TensorContainer<Device, 1, DType>* t, int layer) { Fit(t, Shape1(layer == 0 ? kC1 : kC2)); }

  // He (Kaiming) normal for the weights feeding a relu, Xavier uniform for the last layer, zero biases,
  // batch-norm gamma 1 and beta 0 — the peer (bench/fashion_mnist_peer.py) does the same. Drawn on the host
  // whatever the device, then copied: a CPU and a GPU run of one seed start from the same weights.
  void Initialise() {
    TensorContainer<cpu, 1, float> host(Shape1(arenas_.value.size(0)), 0.0f);
    Random<cpu, float> rnd(cfg_.seed);
    const auto at = [&](Param i, const auto& shape) { return ParameterArenas<cpu>::View(host, params_[i], shape); };
    const ops::HeParam he;  // normal, fan in, for relu
    ops::HeInit(he, &rnd, at(w_conv1_, ConvWeightShape(0)));
    ops::HeInit(he, &rnd, at(w_conv2_, ConvWeightShape(1)));
    ops::HeInit(he, &rnd, at(w_fc1_, Shape2(kHidden, kC2 * 7 * 7)));
    ops::XavierParam xavier;  // uniform, bound sqrt(6 / (fan_in + fan_out)): PyTorch's xavier_uniform_
    xavier.magnitude = 3.0;
    ops::XavierInit(xavier, &rnd, at(w_fc2_, Shape2(kClasses, kHidden)));
    if (cfg_.batch_norm) {
      at(gamma1_, Shape1(kC1)) = 1.0f;
      at(gamma2_, Shape1(kC2)) = 1.0f;
    }
    Copy(arenas_.value.view(), host.view(), stream_);
    stream_->Wait();  // before `host` goes
    if constexpr (kMixed) value_lowp_ = expr::tcast<DType>(arenas_.value.view());
  }

  // The profile's names of the two conv blocks' layers.
  struct Names {
    const char *conv, *bn, *relu, *pool;
  };
  static constexpr Names kNames[2] = {{"conv1", "bn1", "relu1", "pool1"}, {"conv2", "bn2", "relu2", "pool2"}};

  Shape<4> ConvWeightShape(int layer) const { return layer == 0 ? Shape4(kC1, 1, 5, 5) : Shape4(kC2, kC1, 5, 5); }
  index_t Channels(int layer) const { return layer == 0 ? kC1 : kC2; }

  // conv [-> bn] -> relu -> pool. conv_out keeps the convolution's output (batch norm's input; without
  // batch norm the relu is the convolution's epilogue and conv_out is not used); act the relu's output
  // (the pool's input, and what relu's backward reads).
  void ConvBlock(int layer, bool train, const Tensor<Device, 4, DType>& in, TensorContainer<Device, 4, DType>* conv_out,
                 TensorContainer<Device, 4, DType>* act, TensorContainer<Device, 4, DType>* pooled) {
    const ops::ConvolutionParam& cp = layer == 0 ? conv1_ : conv2_;
    const index_t C = Channels(layer);
    const Tensor<Device, 1, DType> bias = cfg_.batch_norm ? Tensor<Device, 1, DType>() : Value(layer == 0 ? b_conv1_ : b_conv2_, Shape1(C));
    const Names& n = kNames[layer];
    const Tensor<Device, 4, DType> weight = Value(layer == 0 ? w_conv1_ : w_conv2_, ConvWeightShape(layer));
    if (!cfg_.batch_norm) {
      // conv + bias + relu as one operator: the bias and the relu ride in the convolution's store where its
      // algorithm can take them, else in one elementwise pass (tensorexpr/ops/conv_epilogue.h).
      ops::ConvolutionParam no_bias = cp;
      no_bias.no_bias = true;
      const auto y = ops::conv_output(act->view());
      Timed(n.conv, "fwd", [&] {
        ops::ConvolutionForward(no_bias, in, weight, kWriteTo, act->view(),
                                expr::F<op::relu>(y + expr::broadcast<1>(bias, act->shape_)));
      });
    } else {
      Timed(n.conv, "fwd", [&] { ops::ConvolutionForward(cp, in, weight, bias, kWriteTo, conv_out->view()); });
      Timed(n.bn, "fwd", [&] {
        ops::BatchNormForward(bn_, train, conv_out->view(), Value(layer == 0 ? gamma1_ : gamma2_, Shape1(C)),
                              Value(layer == 0 ? beta1_ : beta2_, Shape1(C)), moving_mean_[layer].view(),
                              moving_var_[layer].view(), kWriteTo, act->view(), save_mean_[layer].view(),
                              save_inv_std_[layer].view());
      });
      Timed(n.relu, "fwd", [&] { ops::ActivationForward(relu_, act->view(), kWriteInplace, act->view()); });
    }
    Timed(n.pool, "fwd", [&] { ops::PoolingForward(pool_, act->view(), kWriteTo, pooled->view()); });
  }

  void ConvBlockBackward(int layer, const Tensor<Device, 4, DType>& in, const TensorContainer<Device, 4, DType>& conv_out,
                         const TensorContainer<Device, 4, DType>& act, const TensorContainer<Device, 4, DType>& pooled,
                         const TensorContainer<Device, 4, DType>& d_pooled, TensorContainer<Device, 4, DType>* d_act,
                         TensorContainer<Device, 4, DType>* d_conv_out, TensorContainer<Device, 4, DType>* d_in) {
    const ops::ConvolutionParam& cp = layer == 0 ? conv1_ : conv2_;
    const index_t C = Channels(layer);
    const Names& n = kNames[layer];
    Timed(n.pool, "bwd", [&] {
      ops::PoolingBackward(pool_, d_pooled.view(), act.view(), pooled.view(), kWriteTo, d_act->view());
    });
    Timed(n.relu, "bwd",
          [&] { ops::ActivationBackward(relu_, d_act->view(), act.view(), kWriteInplace, d_act->view()); });
    Tensor<Device, 4, DType> d_conv = d_act->view();
    if (cfg_.batch_norm) {
      Timed(n.bn, "bwd", [&] {
        ops::BatchNormBackward(bn_, d_act->view(), conv_out.view(), Value(layer == 0 ? gamma1_ : gamma2_, Shape1(C)),
                               save_mean_[layer].view(), save_inv_std_[layer].view(), moving_mean_[layer].view(),
                               moving_var_[layer].view(), kWriteTo, d_conv_out->view(), kWriteTo,
                               Grad(layer == 0 ? gamma1_ : gamma2_, Shape1(C)), kWriteTo,
                               Grad(layer == 0 ? beta1_ : beta2_, Shape1(C)));
      });
      d_conv = d_conv_out->view();
    }
    const Tensor<Device, 1, DType> bias_grad =
        cfg_.batch_norm ? Tensor<Device, 1, DType>() : Grad(layer == 0 ? b_conv1_ : b_conv2_, Shape1(C));
    Timed(n.conv, "bwd", [&] {
      ops::ConvolutionBackward(cp, d_conv, in, Value(layer == 0 ? w_conv1_ : w_conv2_, ConvWeightShape(layer)),
                               d_in != nullptr ? kWriteTo : kNullOp, d_in != nullptr ? d_in->view() : in, kWriteTo,
                               Grad(layer == 0 ? w_conv1_ : w_conv2_, ConvWeightShape(layer)),
                               cfg_.batch_norm ? kNullOp : kWriteTo, bias_grad);
    });
    if (cfg_.batch_norm) {
      GradientsWritten({layer == 0 ? w_conv1_ : w_conv2_, layer == 0 ? gamma1_ : gamma2_, layer == 0 ? beta1_ : beta2_});
    } else {
      GradientsWritten({layer == 0 ? w_conv1_ : w_conv2_, layer == 0 ? b_conv1_ : b_conv2_});
    }
  }

  NetConfig cfg_;
  Stream<Device>* stream_;
  LayerProfile* profile_ = nullptr;
  std::function<void(const Tensor<Device, 1, DType>&)> gradient_hook_;
  PhiloxRandom<Device> dropout_rnd_;  // counter-based: the same masks on both devices for one seed
  LossScaler scaler_;
  ops::ConvolutionParam conv1_, conv2_;
  ops::PoolingParam pool_;
  ops::BatchNormParam bn_;
  ops::ActivationParam relu_;
  ops::FullyConnectedParam fc1_, fc2_;
  ops::DropoutParam drop_;
  ops::SoftmaxOutputParam softmax_;

  std::vector<Parameter> params_;
  ParameterArenas<Device> arenas_;
  Param w_conv1_ = 0, b_conv1_ = 0, w_conv2_ = 0, b_conv2_ = 0, gamma1_ = 0, beta1_ = 0, gamma2_ = 0, beta2_ = 0;
  Param w_fc1_ = 0, b_fc1_ = 0, w_fc2_ = 0, b_fc2_ = 0;
  TensorContainer<Device, 1, DType> moving_mean_[2], moving_var_[2], save_mean_[2], save_inv_std_[2];
  TensorContainer<Device, 1, float> loss_;
  // Mixed precision only: the DType copies of the weights and their gradients, and the gradients' sum.
  TensorContainer<Device, 1, DType> value_lowp_, grad_lowp_;
  TensorContainer<Device, 1, float> grad_sum_;

  // Activations (forward) and their gradients (backward).
  Tensor<Device, 4, DType> x_;
  TensorContainer<Device, 4, DType> x_lowp_;  // mixed precision: the input batch in DType
  TensorContainer<Device, 4, DType> conv1_out_, act1_, pool1_, conv2_out_, act2_, pool2_;
  TensorContainer<Device, 2, DType> fc1_out_, drop_mask_, drop_out_, fc2_out_;
  TensorContainer<Device, 2, float> logits_, prob_, d_logits_;  // fp32 head (logits_, d_logits_: mixed only)
  TensorContainer<Device, 2, DType> d_fc2_out_, d_hidden_;
  TensorContainer<Device, 4, DType> d_pool2_, d_act2_, d_conv2_out_, d_pool1_, d_act1_, d_conv1_out_;
};

}  // namespace fashion_mnist
