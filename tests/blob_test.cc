// blob_test.cc — TShape and TBlob (blob.h): a blob made from a tensor gives the same tensor back (device,
// type, shape, row stride), the flattened views see the same elements, and every mismatch or index out of
// range is an Error naming it. Device-templated: the GPU run checks that a blob of a GPU tensor reads back
// on the GPU.
#include <sstream>
#include <vector>
#include "test_util.h"

using namespace tensorexpr;
using te_test::At;
using te_test::FillRandom;
using te_test::RequireError;
using te_test::ToDevice;
using te_test::ToHost;

namespace {
std::string Str(const TShape& s) {
  std::ostringstream os;
  os << s;
  return os.str();
}
}  // namespace

TEST_CASE("TShape: construction, sizes, flattening and comparison", "[blob][cpu]") {
  const std::vector<index_t> dims = {2, 3, 4, 5};
  TShape s;
  CHECK(s.ndim() == 0);
  CHECK(s.Size() == 1);
  CHECK(s.FlatTo2D() == Shape2(0, 0));
  s = dims;
  CHECK(s.ndim() == 4);
  for (index_t i = 0; i < 4; ++i) CHECK(s[i] == dims[static_cast<size_t>(i)]);
  CHECK(s.Size() == 120);
  CHECK(s.ProdShape(1, 3) == 12);
  CHECK(s.FlatTo2D() == Shape2(24, 5));
  CHECK(s.FlatTo3D(1) == Shape3(2, 3, 20));
  CHECK(s.FlatTo3D(1, 2) == Shape3(2, 12, 5));
  CHECK(s.get<4>() == Shape4(2, 3, 4, 5));
  CHECK(s == Shape4(2, 3, 4, 5));
  CHECK(s != Shape3(2, 3, 4));

  TShape ones(index_t(3));
  CHECK(ones == Shape3(1, 1, 1));
  TShape from_shape = Shape2(7, 9);
  CHECK(from_shape.ndim() == 2);
  from_shape = Shape1(6);
  CHECK(Str(from_shape) == "(6,)");
  CHECK(Str(s) == "(2,3,4,5)");
  CHECK(Str(TShape()) == "()");
  TShape copied(dims.begin() + 1, dims.end());
  CHECK(copied == Shape3(3, 4, 5));
  TShape moved = std::move(copied);
  CHECK(moved == Shape3(3, 4, 5));
  moved[0] = 8;
  CHECK(moved.Size() == 160);
}

TEST_CASE("TShape: bad indices, ranges and dimension counts are errors", "[blob][cpu]") {
  TShape s = Shape3(2, 3, 4);
  RequireError([&] { (void)s[3]; }, {"dimension 3", "3 dimensions"});
  RequireError([&] { (void)s[-1]; }, {"dimension -1"});
  RequireError([&] { (void)s.get<2>(); }, {"get<2>", "(2,3,4)", "3 dimensions"});
  RequireError([&] { (void)s.FlatTo3D(2, 1); }, {"FlatTo3D", "[2, 1]"});
  RequireError([&] { (void)s.FlatTo3D(3); }, {"FlatTo3D", "[3, 3]"});
  RequireError([&] { (void)s.ProdShape(1, 4); }, {"ProdShape", "[1, 4)"});
  RequireError([] { TShape t(index_t(-2)); }, {"negative number of dimensions", "-2"});
  TShape negative;
  negative = std::vector<index_t>{2, -3};
  RequireError([&] { (void)negative.Size(); }, {"negative extent -3"});
  TShape huge;
  huge = std::vector<index_t>{index_t(1) << 40, index_t(1) << 40};
  RequireError([&] { (void)huge.Size(); }, {"overflows"});
}

TE_DEVICE_TEST_CASE("TBlob: a tensor round-trips through a blob, flattened views see its elements", "[blob]") {
  TensorContainer<cpu, 3, float> h(Shape3(2, 3, 4));
  FillRandom(h.view());
  auto d = ToDevice<Device>(h.view(), stream);
  const TBlob blob = d.view();
  CHECK(blob.ndim() == 3);
  CHECK(blob.Size() == 24);
  CHECK(blob.size(1) == 3);
  CHECK(blob.dev_mask_ == Device::kDevMask);
  CHECK(blob.type_flag_ == kFloat32);
  CHECK(blob.CheckContiguous());

  const Tensor<Device, 3, float> back = blob.get<Device, 3, float>(stream);
  CHECK(back.dptr_ == d.dptr_);
  CHECK(back.shape_ == d.shape_);
  CHECK(back.stream_ == stream);
  const auto rows = ToHost(blob.FlatTo2D<Device, float>(stream));
  const auto middle = ToHost(blob.FlatTo3D<Device, float>(1, stream));
  const auto reshaped = ToHost(blob.get_with_shape<Device, 2, float>(Shape2(4, 6), stream));
  REQUIRE(rows.shape_ == Shape2(6, 4));
  REQUIRE(middle.shape_ == Shape3(2, 3, 4));
  REQUIRE(reshaped.shape_ == Shape2(4, 6));
  te_test::ForEachIndex(h.shape_, [&](const Shape<3>& i) {
    const double want = At(h.view(), i);
    const index_t flat = (i[0] * 3 + i[1]) * 4 + i[2];
    CHECK(At(rows.view(), Shape2(i[0] * 3 + i[1], i[2])) == want);
    CHECK(At(middle.view(), i) == want);
    CHECK(At(reshaped.view(), Shape2(flat / 6, flat % 6)) == want);
  });
}

TE_DEVICE_TEST_CASE("TBlob: another device, type or dimension count is an error, as is reshaping padded rows",
                    "[blob]") {
  TensorContainer<Device, 2, float> d(Shape2(3, 5));
  d.set_stream(stream);
  const TBlob blob = d.view();
  RequireError([&] { (void)blob.get<Device, 2, double>(); }, {"get", "float32", "float64"});
  RequireError([&] { (void)blob.get<Device, 3, float>(); }, {"get<3>", "(3,5)"});
  RequireError([&] { (void)blob.get_with_shape<Device, 2, float>(Shape2(4, 4)); },
               {"get_with_shape", "16 elements", "15"});
  if constexpr (std::is_same<Device, cpu>::value) {
    RequireError([&] { (void)blob.get<gpu, 2, float>(); }, {"get", "on cpu", "not gpu"});
  } else {
    RequireError([&] { (void)blob.get<cpu, 2, float>(); }, {"get", "on gpu", "not cpu"});
  }
  // A view of the first 3 columns keeps the rows 5 apart: it cannot be seen in another shape.
  Tensor<Device, 2, float> narrow(d.dptr_, Shape2(3, 3), 5, stream);
  const TBlob padded = narrow;
  CHECK_FALSE(padded.CheckContiguous());
  CHECK(padded.get<Device, 2, float>().stride_ == 5);
  RequireError([&] { (void)padded.get_with_shape<Device, 1, float>(Shape1(9)); }, {"padded rows", "stride 5"});
}

TEST_CASE("TBlob from memory: contiguous, the type taken from the pointer or the flag", "[blob][cpu]") {
  std::vector<int32_t> data(12);
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<int32_t>(i) * 3;
  const TBlob typed(data.data(), TShape(Shape2(3, 4)), cpu::kDevMask);
  CHECK(typed.type_flag_ == kInt32);
  CHECK(typed.stride_ == 4);
  CHECK(typed.get<cpu, 2, int32_t>()[2][1] == 27);
  const TBlob flagged(static_cast<void*>(data.data()), TShape(Shape1(12)), cpu::kDevMask, kInt32);
  CHECK(flagged.get<cpu, 1, int32_t>()[11] == 33);
  RequireError([&] { (void)flagged.get<cpu, 1, float>(); }, {"int32", "float32"});
}
