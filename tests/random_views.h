// random_views.h — random test inputs for the expression tests (broadcast_test.cc, layout_test.cc): shapes
// of every dimension count with odd, unit and 1000+ extents, and sources laid out contiguous, with padded
// rows, or as a Slice() of a padded tensor, on the host for the reference and on the device under test;
// outputs poisoned or, for +=, filled at random.
#pragma once
#include <random>
#include <vector>
#include "test_util.h"

namespace te_test {

inline index_t RandInt(index_t lo, index_t hi) {  // uniform in [lo, hi]
  return std::uniform_int_distribution<index_t>(lo, hi)(Rng());
}

// Random extents: mostly small odd sizes (1 included), capped so that a 5-D shape stays small.
template <int dim>
Shape<dim> RandShape(index_t max_elems = 3000) {
  static const index_t pool[] = {1, 2, 3, 4, 5, 7, 9, 17};
  Shape<dim> s;
  do {
    for (int i = 0; i < dim; ++i) s[i] = pool[RandInt(0, 7)];
  } while (s.Size() > max_elems);
  return s;
}
// Shapes to try for one dimension count: random ones, all ones, and one with a 1000+ extent at a random
// position (the rest small).
template <int dim>
std::vector<Shape<dim>> TestShapes() {
  std::vector<Shape<dim>> shapes;
  for (int k = 0; k < 3; ++k) shapes.push_back(RandShape<dim>());
  Shape<dim> ones;
  for (int i = 0; i < dim; ++i) ones[i] = 1;
  shapes.push_back(ones);
  Shape<dim> big = RandShape<dim>(6);
  big[RandInt(0, dim - 1)] = 1031;
  shapes.push_back(big);
  return shapes;
}

// How a source tensor lies in memory.
enum class Layout { kContiguous, kPadded, kRowsOfPadded };
inline const char* LayoutName(Layout l) {
  return l == Layout::kContiguous ? "contiguous" : l == Layout::kPadded ? "padded rows" : "Slice() of padded";
}
inline Layout RandLayout() { return static_cast<Layout>(RandInt(0, 2)); }

// A random input on the host (for the reference) and the same data on the device under test, laid out
// as asked: kRowsOfPadded is the Slice(1, 1 + n) of a padded tensor with two more rows of dimension 0.
template <typename Device, int dim, typename DType = float>
struct Input {
  Layout layout;
  TensorContainer<cpu, dim, DType> host_all;
  TensorContainer<Device, dim, DType> dev_all;
  Tensor<cpu, dim, DType> host;
  Tensor<Device, dim, DType> dev;
};
template <typename Device, int dim, typename DType = float>
Input<Device, dim, DType> MakeInput(const Shape<dim>& s, Layout layout, Stream<Device>* stream) {
  const bool pad = layout != Layout::kContiguous;
  Shape<dim> all = s;
  if (layout == Layout::kRowsOfPadded) all[0] += 2;
  Input<Device, dim, DType> in{layout, TensorContainer<cpu, dim, DType>(all, pad), TensorContainer<Device, dim, DType>(pad),
                               {}, {}};
  FillRandom(in.host_all.view());
  in.dev_all.set_stream(stream);
  in.dev_all.Resize(all);
  Copy(in.dev_all.view(), in.host_all.view(), stream);
  Sync(stream);
  in.host = in.host_all.view();
  in.dev = in.dev_all.view();
  if (layout == Layout::kRowsOfPadded) {
    in.host = in.host.Slice(1, 1 + s[0]);
    in.dev = in.dev.Slice(1, 1 + s[0]);
  }
  return in;
}

// A device output filled with poison (or, for +=, with random values kept in `init`).
template <typename Device, int dim, typename DType = float>
TensorContainer<Device, dim, DType> MakeOutput(const Shape<dim>& s, bool pad, Stream<Device>* stream,
                                               TensorContainer<cpu, dim, DType>* init = nullptr) {
  TensorContainer<cpu, dim, DType> h(s, pad);
  if (init) {
    FillRandom(h.view());
    *init = h;
  } else {
    Poison(h.view());
  }
  TensorContainer<Device, dim, DType> d(pad);
  d.set_stream(stream);
  d.Resize(s);
  Copy(d.view(), h.view(), stream);
  Sync(stream);
  return d;
}

}  // namespace te_test
