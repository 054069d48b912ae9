// conv_select_test.cc — how the convolution chooses its algorithm (ops/conv_select.h): the registry and
// its refusals with their reasons, forcing by name, the workspace limit, the deterministic flag, the
// dispatch log, the tuner, and the tuning cache's round trip through a file (including files that are
// not caches). Results are compared with im2col_gemm's, which tests/conv_test.cc checks against a float64
// reference.
#include <cstdio>
#include <fstream>
#include <memory>
#include <string>
#include <unistd.h>
#include "test_util.h"
#include <tensorexpr/ops/convolution.h>
#include "../ops/conv_im2col_gemm.h"  // the built-in algorithm a test algorithm wraps

namespace {
using namespace te_test;
using tensorexpr::ops::ConvolutionParam;
using tensorexpr::ops::ConvPass;
using tensorexpr::ops::ConvProblem;
using tensorexpr::ops::ConvStores;
using tensorexpr::ops::ConvSupport;

// A test algorithm: im2col_gemm's work under another name, with the workspace need, determinism and
// recommendation the test sets, counting its runs.
template <typename Device, typename DType>
class TestAlgorithm : public ops::ConvAlgorithm<Device, DType> {
 public:
  TestAlgorithm(std::string name, size_t workspace, bool deterministic, int* runs)
      : name_(std::move(name)), workspace_(workspace), deterministic_(deterministic), runs_(runs) {}
  const char* Name() const override { return name_.c_str(); }
  ConvSupport CanImplement(const ConvProblem& pr, ConvPass) const override {
    if (pr.geom.G != 1) return ConvSupport::No("this test algorithm does no groups");
    return ConvSupport::Yes();
  }
  size_t WorkspaceBytes(const ConvProblem& pr, const ConvStores& st) const override {
    return std::max(workspace_, inner_.WorkspaceBytes(pr, st));
  }
  bool Deterministic() const override { return deterministic_; }
  void Run(const ConvProblem& pr, const ops::ConvTensors<DType>& t, const ConvStores& st, void* ws,
           Stream<Device>* s) const override {
    ++*runs_;
    inner_.Run(pr, t, st, ws, s);
  }

 private:
  std::string name_;
  size_t workspace_;
  bool deterministic_;
  int* runs_;
  ops::ConvIm2ColGemm<Device, DType> inner_;
};

// Registers a TestAlgorithm first in the order for the scope of a test, and puts the selection's
// settings back afterwards.
template <typename Device>
struct ScopedSelection {
  std::vector<std::string> log;
  std::vector<std::string> added;
  ScopedSelection() {
    ops::ReleaseConvCaches<Device>();
    ops::SetConvLog([this](const std::string& line) { log.push_back(line); });
  }
  ~ScopedSelection() {
    for (const std::string& n : added) ops::ConvRegistry<Device, float>::Get().Remove(n);
    ops::SetConvLog(nullptr);
    ops::SetConvTuning(false);
    ops::SetConvDeterministic(true);
    ops::SetConvCachePath("");
    ops::ReleaseConvCaches<Device>();
  }
  void Add(const std::string& name, size_t workspace, bool deterministic, int* runs) {
    ops::ConvRegistry<Device, float>::Get().Add(
        std::make_unique<TestAlgorithm<Device, float>>(name, workspace, deterministic, runs));
    added.push_back(name);
  }
  std::string All() const {
    std::string s;
    for (const std::string& l : log) s += l + "\n";
    return s;
  }
};

ConvolutionParam Param3x3() {
  ConvolutionParam p;
  p.kernel = {3, 3};
  p.pad = {1, 1};
  p.num_filter = 5;
  return p;
}

template <int dim>
Shape<dim> ShapeOf(const std::vector<index_t>& v) {
  Shape<dim> s;
  for (int i = 0; i < dim; ++i) s[i] = v[i];
  return s;
}
// The values of a device tensor, flattened.
template <typename Device, int dim>
std::vector<double> Values(const TensorContainer<Device, dim, float>& d) {
  const TensorContainer<cpu, dim, float> h = ToHost(d.view());
  std::vector<double> v;
  ForEachIndex(h.shape_, [&](const Shape<dim>& i) { v.push_back(At(h.view(), i)); });
  return v;
}

// Forward and backward of p on fixed random data; returns y, dx and dw flattened.
template <typename Device>
std::vector<double> RunConv(Stream<Device>* stream, const ConvolutionParam& p, index_t N = 3) {
  const std::vector<index_t> dshape = {N, 4, 7, 6};
  const auto shapes = ops::InferConvShapes(p, dshape);
  TensorContainer<cpu, 4, float> xh(ShapeOf<4>(dshape)), wh(ShapeOf<4>(shapes.weight)), dyh(ShapeOf<4>(shapes.out));
  TensorContainer<cpu, 1, float> bh(Shape1(p.num_filter));
  std::mt19937 rng(7);  // the same data on every call: runs under different choices are compared
  std::uniform_real_distribution<float> u(-1, 1);
  for (float* p0 : {xh.dptr_, wh.dptr_, dyh.dptr_})
    for (index_t i = 0, n = p0 == xh.dptr_ ? xh.shape_.Size() : p0 == wh.dptr_ ? wh.shape_.Size() : dyh.shape_.Size();
         i < n; ++i)
      p0[i] = u(rng);
  for (index_t i = 0; i < bh.shape_.Size(); ++i) bh.dptr_[i] = u(rng);
  auto x = ToDevice(xh.view(), stream), w = ToDevice(wh.view(), stream), dy = ToDevice(dyh.view(), stream),
       y = ToDevice(dyh.view(), stream), dx = ToDevice(xh.view(), stream), dw = ToDevice(wh.view(), stream);
  auto b = ToDevice(bh.view(), stream), db = ToDevice(bh.view(), stream);
  ops::ConvolutionForward(p, x.view(), w.view(), b.view(), kWriteTo, y.view());
  ops::ConvolutionBackward(p, dy.view(), x.view(), w.view(), kWriteTo, dx.view(), kWriteTo, dw.view(), kWriteTo,
                           db.view());
  std::vector<double> out = Values(y);
  for (double v : Values(dx)) out.push_back(v);
  for (double v : Values(dw)) out.push_back(v);
  return out;
}

// Equal within what tests/conv_test.cc allows a float convolution of at most 126 terms (ConvTol): a
// choice may be any algorithm the timing favours, winograd_4x4 among them, whose rounding differs from
// im2col_gemm's by up to ~2e-5 on these sums (a margin of 1e-5 failed whenever it won the timing).
void CheckSame(const std::vector<double>& a, const std::vector<double>& b) {
  REQUIRE(a.size() == b.size());
  for (size_t i = 0; i < a.size(); ++i) CHECK(a[i] == Approx(b[i]).epsilon(1e-5).margin(6e-5));
}

size_t Count(const std::string& text, const std::string& part) {
  size_t n = 0;
  for (size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++n;
  return n;
}

std::string TempPath(const char* name) { return std::string("/tmp/tensorexpr_") + name + "_" + std::to_string(::getpid()); }

template <typename F>
std::string ErrorOf(F f) {
  try {
    f();
  } catch (const tensorexpr::Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TE_DEVICE_TEST_CASE("conv algorithms: the registry names them, im2col_gemm last", "[conv][select]") {
  const auto names = ops::ListConvAlgorithms<Device, float>();
  REQUIRE(!names.empty());
  CHECK(names.back() == "im2col_gemm");
  CHECK(std::find(names.begin(), names.end(), "pointwise_gemm") != names.end());
  CHECK(ops::ConvRegistry<Device, float>::Get().Remove("im2col_gemm") == false);  // the fallback stays
}

TE_DEVICE_TEST_CASE("conv algorithms: refusals say why, forcing one that cannot run is an Error",
                    "[conv][select]") {
  ScopedSelection<Device> sel;
  const ConvolutionParam p = Param3x3();
  const ConvProblem pr =
      ops::MakeConvProblem<Device, float>(ops::MakeConvGeometry(p, {3, 4, 7, 6}), stream, true, p.workspace);
  const auto* pointwise = ops::ConvRegistry<Device, float>::Get().Find("pointwise_gemm");
  REQUIRE(pointwise != nullptr);
  const ConvSupport no = pointwise->CanImplement(pr, ConvPass::kForward);
  CHECK_FALSE(no.ok);
  CHECK(no.why.find("not 1x1") != std::string::npos);
  ConvProblem strided = pr;
  strided.geom = ops::MakeConvGeometry([] { ConvolutionParam q; q.kernel = {1, 1}; q.num_filter = 2; return q; }(),
                                       {1, 2, 3, 3});
  strided.data_contiguous = false;
  CHECK(pointwise->CanImplement(strided, ConvPass::kBackwardData).why.find("padded rows") != std::string::npos);

  ConvolutionParam forced = p;
  forced.algorithm = "pointwise_gemm";
  std::string msg = ErrorOf([&] { RunConv<Device>(stream, forced); });
  CHECK(msg.find("pointwise_gemm cannot implement") != std::string::npos);
  CHECK(msg.find("not 1x1") != std::string::npos);
  forced.algorithm = "no_such_algorithm";
  msg = ErrorOf([&] { RunConv<Device>(stream, forced); });
  CHECK(msg.find("\"no_such_algorithm\" is not registered") != std::string::npos);
  CHECK(msg.find("im2col_gemm") != std::string::npos);  // the names there are
}

#if !defined(__CUDACC__)
TEST_CASE("conv algorithms: cpu_per_image refuses half and bf16", "[cpu][conv][select]") {
  const ConvProblem pr = ops::MakeConvProblem<cpu, half_t>(ops::MakeConvGeometry(Param3x3(), {3, 4, 7, 6}), nullptr,
                                                           true, 1024.0);
  const auto* a = ops::ConvRegistry<cpu, half_t>::Get().Find("cpu_per_image");
  REQUIRE(a != nullptr);
  CHECK(a->CanImplement(pr, ConvPass::kForward).why.find("float or double") != std::string::npos);
  ConvolutionParam nhwc = Param3x3();
  nhwc.layout = ops::Layout::kNHWC;
  const ConvProblem last = ops::MakeConvProblem<cpu, float>(ops::MakeConvGeometry(nhwc, {3, 7, 6, 4}), nullptr, true,
                                                            1024.0);
  const auto* f = ops::ConvRegistry<cpu, float>::Get().Find("cpu_per_image");
  CHECK(f->CanImplement(last, ConvPass::kForward).why.find("channels-first (NCHW) data only") != std::string::npos);
}
#endif

TE_DEVICE_TEST_CASE("conv algorithms: the log lists each algorithm, its refusal and the choice", "[conv][select]") {
  ScopedSelection<Device> sel;
  const std::vector<double> first = RunConv<Device>(stream, Param3x3());
  const std::string log = sel.All();
  INFO(log);
  CHECK(Count(log, "tensorexpr conv: forward float32") == 1);
  CHECK(Count(log, "tensorexpr conv: data-grad float32") == 1);
  CHECK(Count(log, "tensorexpr conv: weight-grad float32") == 1);
  CHECK(Count(log, "pointwise_gemm: refused: the kernel is not 1x1") == 3);
  CHECK(Count(log, "im2col_gemm: can implement, workspace") == 3);
  CHECK(Count(log, "(heuristic)") == 3);
  // A problem seen before is not logged again.
  sel.log.clear();
  CheckSame(RunConv<Device>(stream, Param3x3()), first);
  CHECK(sel.log.empty());
}

TE_DEVICE_TEST_CASE("conv algorithms: the workspace limit and the deterministic flag exclude algorithms",
                    "[conv][select]") {
  ScopedSelection<Device> sel;
  int greedy_runs = 0, flaky_runs = 0;
  ConvolutionParam p = Param3x3();
  const std::vector<double> want = RunConv<Device>(stream, p);
  ops::ReleaseConvCaches<Device>();
  sel.Add("test_greedy", size_t(4) << 20, true, &greedy_runs);  // 4 MiB of workspace
  p.workspace = 1.0;                                          // 1 MB allowed
  CheckSame(RunConv<Device>(stream, p), want);
  CHECK(greedy_runs == 0);
  CHECK(Count(sel.All(), "test_greedy: refused: needs 4194304 bytes of workspace, over the limit of 1048576 bytes") ==
        3);
  p.workspace = 8.0;  // another problem (the limit is part of it): now it fits and comes first
  CheckSame(RunConv<Device>(stream, p), want);
  CHECK(greedy_runs == 2);  // forward, and the two gradients in one run

  sel.Add("test_flaky", 0, false, &flaky_runs);
  p.workspace = 16.0;
  CheckSame(RunConv<Device>(stream, p), want);
  CHECK(flaky_runs == 0);
  CHECK(Count(sel.All(), "test_flaky: refused: its results may vary from run to run") == 3);
  ops::SetConvDeterministic(false);
  p.workspace = 32.0;
  CheckSame(RunConv<Device>(stream, p), want);
  CHECK(flaky_runs == 2);
}

TE_DEVICE_TEST_CASE("conv algorithms: the tuner times every candidate and its cache survives a file",
                    "[conv][select][tune]") {
  const std::string path = TempPath("conv_cache");
  std::remove(path.c_str());
  std::vector<double> want;
  {
    ScopedSelection<Device> sel;
    int runs = 0;
    sel.Add("test_candidate", 0, true, &runs);
    want = RunConv<Device>(stream, Param3x3());
    ops::ReleaseConvCaches<Device>();
    sel.log.clear();
    ops::SetConvTuning(true);
    ops::SetConvCachePath(path);  // no file yet: nothing loaded, written after each tuned choice
    runs = 0;
    CheckSame(RunConv<Device>(stream, Param3x3()), want);
    const std::string log = sel.All();
    INFO(log);
    CHECK(Count(log, "(tuning)") == 3);
    CHECK(Count(log, " ms") >= 6);  // test_candidate and im2col_gemm at least, for each pass
    CHECK(Count(log, "(fastest)") == 3);
    CHECK(runs >= 3 * 4);  // a warm-up and three timed trials per pass
  }
  std::ifstream in(path);
  std::string header, line;
  std::getline(in, header);
  CHECK(header == "tensorexpr conv cache 1");
  size_t lines = 0;
  while (std::getline(in, line)) lines += line.find('\t') != std::string::npos;
  CHECK(lines == 3);

  // A second "process": the registry has test_candidate again, the file says what to run.
  {
    ScopedSelection<Device> sel;
    int runs = 0;
    sel.Add("test_candidate", 0, true, &runs);
    ops::SetConvTuning(true);
    CHECK(ops::LoadConvCache(path) == 3);
    CheckSame(RunConv<Device>(stream, Param3x3()), want);
    CHECK(sel.log.empty());  // nothing tuned, nothing logged: every choice came from the file
  }
  // Rewritten by hand to name test_candidate everywhere: the loaded choice decides what runs.
  {
    std::ifstream src(path);
    std::string all, l;
    std::getline(src, l);
    all = l + "\n";
    while (std::getline(src, l)) all += l.substr(0, l.find('\t')) + "\ttest_candidate\n";
    std::ofstream(path, std::ios::trunc) << all;
    ScopedSelection<Device> sel;
    int runs = 0;
    sel.Add("test_candidate", 0, true, &runs);
    CHECK(ops::LoadConvCache(path) == 3);
    CheckSame(RunConv<Device>(stream, Param3x3()), want);
    CHECK(runs == 2);
  }
  // Without test_candidate registered the cached name is unknown: a warning, and a fresh choice.
  {
    ScopedSelection<Device> sel;
    CHECK(ops::LoadConvCache(path) == 3);
    CheckSame(RunConv<Device>(stream, Param3x3()), want);
    CHECK(Count(sel.All(), "warning: the cached choice test_candidate") == 3);
  }
  std::remove(path.c_str());
}

TE_DEVICE_TEST_CASE("conv algorithms: a foreign or damaged cache file is ignored with a warning",
                    "[conv][select][tune]") {
  const std::string path = TempPath("conv_cache_bad");
  const std::vector<std::string> bad = {
      std::string("\x7f" "ELF\x02\x01\x01\0\0\0garbage\xff\xfe", 20),     // not text at all
      "some other program's settings\nkey=value\n",                       // a foreign file
      "tensorexpr conv cache 1\nforward float32 no tab here\n",           // damaged: no tab
      "tensorexpr conv cache 1\nforward\tim2col_gemm\textra\n",          // damaged: two tabs
      "tensorexpr conv cache 1\n" + std::string(5000, 'x') + "\tim2col_gemm\n",  // an absurd line
      "",                                                                 // empty
  };
  for (const std::string& content : bad) {
    ScopedSelection<Device> sel;
    std::ofstream(path, std::ios::binary | std::ios::trunc) << content;
    CHECK(ops::LoadConvCache(path) == 0);
    ops::SetConvCachePath(path);
    const std::string log = sel.All();
    INFO(log);
    CHECK(Count(log, "warning: ignored " + path) == 2);  // once by LoadConvCache, once by SetConvCachePath
    CHECK(RunConv<Device>(stream, Param3x3()).size() > 0);  // convolution goes on, choosing by heuristic
  }
  std::remove(path.c_str());
  // A file that cannot be written to is an Error from SaveConvCache, a warning when tuning saves.
  CHECK(ErrorOf([] { ops::SaveConvCache("/nonexistent_dir/cache"); }).find("cannot write") != std::string::npos);
}
