// tensor_container.h — TensorContainer (a Tensor that owns its memory) and NewTensor.
#pragma once
#include <type_traits>
#include <utility>
#include "checked.h"
#include "tensor.h"
#include "assign.h"

namespace tensorexpr {

// Allocates a tensor of `shape` filled with `initv`; release it with FreeSpace(&t).
template <typename Device, typename DType, int dim>
inline Tensor<Device, dim, DType> NewTensor(const Shape<dim>& shape, DType initv, bool pad = false,
                                            Stream<Device>* stream = nullptr) {
  Tensor<Device, dim, DType> t(shape);
  t.stream_ = stream;
  AllocSpace(&t, pad);
  t = initv;
  return t;
}

// A Tensor that owns its memory: freed on destruction, reallocated by Resize only when it must grow.
// Copies are deep; assigning an expression resizes to the expression's shape first.
template <typename Device, int dim, typename DType = float>
class TensorContainer : public Tensor<Device, dim, DType> {
  static_assert(kCompiledForCuda || !std::is_same<Device, gpu>::value, TE_GPU_NEEDS_NVCC_MESSAGE);

 public:
  using Base = Tensor<Device, dim, DType>;

  explicit TensorContainer(bool pad = false) : pad_(pad) {}
  explicit TensorContainer(const Shape<dim>& shape) { Resize(shape); }
  // Only a real bool selects padding: `TensorContainer<cpu, 2, float> t(shape, 0)` (or 0.0) is an initial
  // value, as in mshadow, not an ambiguous call.
  template <typename Bool, typename std::enable_if<std::is_same<Bool, bool>::value, int>::type = 0>
  explicit TensorContainer(const Shape<dim>& shape, Bool pad) : pad_(pad) { Resize(shape); }
  TensorContainer(const Shape<dim>& shape, DType initv, bool pad = false) : pad_(pad) { Resize(shape, initv); }
  TensorContainer(const TensorContainer& other) : Base(), pad_(other.pad_) {
    set_stream(other.stream_);
    Resize(other.shape_);
    Copy(this->view(), other.view(), this->stream_);
  }
  TensorContainer(TensorContainer&& other) noexcept { Steal(other); }
  ~TensorContainer() { Release(); }

  TensorContainer& operator=(const TensorContainer& other) {
    if (this != &other) {
      Resize(other.shape_);
      Copy(this->view(), other.view(), this->stream_);
    }
    return *this;
  }
  TensorContainer& operator=(TensorContainer&& other) noexcept {
    if (this != &other) {
      Release();
      Steal(other);
    }
    return *this;
  }
  // Evaluates e into this container, resized to e's shape (a scalar, of dimension 0, fills the current
  // shape; a wrong dimension is left to the static_assert in the evaluation).
  template <typename E, typename D2, int etype>
  TensorContainer& operator=(const expr::Exp<E, D2, etype>& e) {
    if constexpr (E::kDim == dim) Resize(e.self().shape());
    Base::operator=(e);
    return *this;
  }
  TensorContainer& operator=(DType s) {
    Base::operator=(s);
    return *this;
  }

  // The stream this container's work and memory are ordered on. The container keeps a share of it
  // (FreeQueue), so it may be destroyed after the stream (DeleteStream) or the engine (ShutdownTensorEngine).
  void set_stream(Stream<Device>* stream) {
    this->stream_ = stream;
    queue_ = FreeQueue<Device>::Of(stream);
    queue_for_ = stream;
  }

  void Resize(const Shape<dim>& shape) {
    Tensor<Device, dim, DType> probe(shape);
    probe.stream_ = this->stream_;
    // Checked: a wrapped count could look small enough to reuse the current memory.
    CheckedSize(shape, "TensorContainer::Resize");
    const index_t want =
        CheckedMul(PaddedStride<DType>(shape[dim - 1], pad_), shape.ProdShape(0, dim - 1), "TensorContainer::Resize");
    if (want > capacity_) {
      Release();
      KeepStream();
      AllocSpace(&probe, pad_);
      data_ = probe.dptr_;
      capacity_ = probe.MSize();
    } else {
      probe.stride_ = PaddedStride<DType>(shape[dim - 1], pad_);
    }
    this->dptr_ = data_;
    this->shape_ = shape;
    this->stride_ = probe.stride_;
  }
  void Resize(const Shape<dim>& shape, DType initv) {
    Resize(shape);
    Base::operator=(initv);
  }
  // The non-owning view of this container.
  Base view() const { return Base(this->dptr_, this->shape_, this->stride_, this->stream_); }

 private:
  void Release() {
    if (data_ != nullptr) {
      KeepStream();
      Tensor<Device, dim, DType> t(this->shape_);
      t.dptr_ = data_;
      queue_.Free(&t);
    }
    data_ = nullptr;
    capacity_ = 0;
    this->dptr_ = nullptr;
  }
  // A stream set through the Tensor base (stream_ or Tensor::set_stream) is taken up here, while it is
  // the one in use.
  void KeepStream() {
    if (queue_for_ != this->stream_) set_stream(this->stream_);
  }
  void Steal(TensorContainer& other) {
    pad_ = other.pad_;
    data_ = other.data_;
    capacity_ = other.capacity_;
    queue_ = std::move(other.queue_);
    queue_for_ = other.queue_for_;
    static_cast<Base&>(*this) = static_cast<const Base&>(other);
    // The moved-from container is empty, not a shape without memory that would be dereferenced.
    other.data_ = nullptr;
    other.capacity_ = 0;
    other.dptr_ = nullptr;
    other.shape_ = Shape<dim>();
    other.stride_ = 0;
  }

  bool pad_ = false;
  DType* data_ = nullptr;
  index_t capacity_ = 0;
  FreeQueue<Device> queue_;              // the stream data_ is freed on
  Stream<Device>* queue_for_ = nullptr;  // the stream queue_ was taken from (compared, never dereferenced)
};

}  // namespace tensorexpr
