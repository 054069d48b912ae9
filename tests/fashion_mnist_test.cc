// fashion_mnist_test.cc — the Fashion-MNIST trainer's pieces (examples/fashion_mnist/), all [cpu][trainer]:
//   options.h       ParseOptions: defaults, every flag as "--flag v" and "--flag=v", and every error
//                   (unknown flag, missing value, non-numbers, out of range, values for --bn / --augment /
//                   --help, bad --device / --schedule), each an OptionsError naming the flag.
//   idx_dataset.h   LoadDataset on tiny IDX files written here (gzip and uncompressed) in a temporary
//                   directory: pixels and labels come back exactly; a missing directory or file and every
//                   kind of corrupt file is a DataError naming the file and the package
//                   dataset-fashion-mnist. ChooseDataDir's precedence (--data, $FASHION_MNIST_DIR, default).
//   trainer.h       LearningRate (warm-up, constant, cosine), ComputePixelStats, NormaliseInto (with and
//                   without left-right flips) and RandomFlips against hand-computed values, Evaluate, and a
//                   two-epoch Train<cpu> on a tiny data set (with / without batch norm and --augment).
//   options.h       ResolveOutputPath (absolute paths, every unwritable case an OptionsError before training),
//                   SettingsOf.
//   progress_bar.h  FormatProgressLine fits any terminal width; Due() at the end of an epoch.
//   training_log.h  WriteTrainingLog as CSV and JSON with the run's settings (read back), errors on
//                   unwritable paths.
//   svg_plot.h      WriteTrainingCurveSvg: an <svg> document with the per-minibatch loss (as measured and
//                   smoothed) and the accuracy per epoch, the legend outside the plot; the title escaped.
//   network.h       ConvNet<cpu>: parameter counts, probabilities and loss (kWriteTo / kAddTo / inference),
//                   and overfitting one batch of 8 images in 60 SGD steps (two seeds), with and without batch norm
//                   and dropout. The whole file runs in about 12 s on 2 cores.
#include <catch2/catch.hpp>
#include <fcntl.h>
#include <sys/resource.h>
#include <stdlib.h>
#include <unistd.h>
#include <zlib.h>
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <random>
#include <sstream>
#include <string>
#include <vector>
#include "../examples/fashion_mnist/data_parallel.h"
#include "../examples/fashion_mnist/options.h"
#include "../examples/fashion_mnist/idx_dataset.h"
#include "../examples/fashion_mnist/network.h"
#include "../examples/fashion_mnist/svg_plot.h"
#include "../examples/fashion_mnist/trainer.h"
#include "../examples/fashion_mnist/training_log.h"

using namespace tensorexpr;
using namespace fashion_mnist;
using Catch::Matchers::Contains;

namespace {

// ---- helpers ----------------------------------------------------------------------------------------

// ParseOptions on {"fashion_mnist", args...}.
Options Parse(std::initializer_list<std::string> args) {
  std::vector<std::string> storage = {"fashion_mnist"};
  storage.insert(storage.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& s : storage) argv.push_back(s.data());
  argv.push_back(nullptr);
  return ParseOptions(static_cast<int>(storage.size()), argv.data());
}

// The message of the E that f() throws; fails the test, saying `accepted`, when f() does not throw.
template <typename E, typename F>
std::string ErrorMessage(F&& f, const char* accepted) {
  try {
    f();
  } catch (const E& e) {
    return e.what();
  }
  FAIL(accepted);
  return "";
}

// The OptionsError message of ParseOptions on args.
std::string ParseError(std::initializer_list<std::string> args) {
  return ErrorMessage<OptionsError>([&] { Parse(args); }, "ParseOptions accepted arguments it should reject");
}

// A fresh directory under /tmp, removed with everything in it at the end of the scope.
struct TempDir {
  std::string path;
  TempDir() {
    char templ[] = "/tmp/fashion_mnist_test_XXXXXX";
    const char* p = mkdtemp(templ);
    REQUIRE(p != nullptr);
    path = p;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  std::string operator/(const std::string& name) const { return path + "/" + name; }
};

void PutBigEndian32(std::vector<uint8_t>* out, uint32_t v) {
  for (int shift = 24; shift >= 0; shift -= 8) out->push_back(static_cast<uint8_t>(v >> shift));
}

// The bytes of an IDX file: magic, extents, data.
std::vector<uint8_t> IdxBytes(uint32_t magic, const std::vector<uint32_t>& extents, const std::vector<uint8_t>& data) {
  std::vector<uint8_t> b;
  PutBigEndian32(&b, magic);
  for (uint32_t e : extents) PutBigEndian32(&b, e);
  b.insert(b.end(), data.begin(), data.end());
  return b;
}

void WriteGzip(const std::string& path, const std::vector<uint8_t>& bytes) {
  gzFile f = gzopen(path.c_str(), "wb");
  REQUIRE(f != nullptr);
  if (!bytes.empty()) REQUIRE(gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size())) == int(bytes.size()));
  REQUIRE(gzclose(f) == Z_OK);
}

void WriteRaw(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::ofstream f(path, std::ios::binary);
  f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  REQUIRE(f.good());
}

std::vector<uint8_t> ReadBytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

std::string ReadText(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// A recognisable pixel value: image i, pixel p, of the set with the given salt.
uint8_t Pixel(int salt, int64_t i, int64_t p) { return static_cast<uint8_t>((salt * 53 + i * 31 + p * 7) % 256); }

std::vector<uint8_t> Pixels(int salt, int64_t count, int64_t per_image = 28 * 28) {
  std::vector<uint8_t> v(static_cast<size_t>(count * per_image));
  for (int64_t i = 0; i < count; ++i)
    for (int64_t p = 0; p < per_image; ++p) v[i * per_image + p] = Pixel(salt, i, p);
  return v;
}

const std::vector<uint8_t> kTrainLabels = {0, 9, 4};
const std::vector<uint8_t> kTestLabels = {3, 7};

// A valid tiny data set in `dir`: 3 training and 2 test images of 28x28; gzip-compressed unless raw
// (then the files are named without ".gz").
void WriteDataset(const TempDir& dir, bool gzip) {
  auto put = [&](const std::string& name, const std::vector<uint8_t>& bytes) {
    if (gzip) WriteGzip(dir / (name + ".gz"), bytes);
    else WriteRaw(dir / name, bytes);
  };
  put("train-images-idx3-ubyte", IdxBytes(0x803, {3, 28, 28}, Pixels(1, 3)));
  put("train-labels-idx1-ubyte", IdxBytes(0x801, {3}, kTrainLabels));
  put("t10k-images-idx3-ubyte", IdxBytes(0x803, {2, 28, 28}, Pixels(2, 2)));
  put("t10k-labels-idx1-ubyte", IdxBytes(0x801, {2}, kTestLabels));
}

// The DataError message of LoadDataset(dir).
std::string LoadError(const std::string& dir, const std::string& how = "from --data") {
  return ErrorMessage<DataError>([&] { LoadDataset(dir, how); }, "LoadDataset accepted a data set it should reject");
}

// Sets or unsets an environment variable for a scope, restoring the old value afterwards.
struct ScopedEnv {
  std::string name;
  bool had = false;
  std::string old;
  explicit ScopedEnv(const char* n) : name(n) {
    if (const char* v = std::getenv(n)) had = true, old = v;
  }
  void Set(const char* v) { REQUIRE(setenv(name.c_str(), v, 1) == 0); }
  void Unset() { REQUIRE(unsetenv(name.c_str()) == 0); }
  ~ScopedEnv() {
    if (had) setenv(name.c_str(), old.c_str(), 1);
    else unsetenv(name.c_str());
  }
};

// Sends stdout to /dev/null for a scope (Train prints its progress).
struct QuietStdout {
  int saved = -1;
  QuietStdout() {
    std::fflush(stdout);
    saved = dup(fileno(stdout));
    const int null_fd = open("/dev/null", O_WRONLY);
    if (saved >= 0 && null_fd >= 0) dup2(null_fd, fileno(stdout));
    if (null_fd >= 0) close(null_fd);
  }
  ~QuietStdout() {
    std::fflush(stdout);
    if (saved >= 0) {
      dup2(saved, fileno(stdout));
      close(saved);
    }
  }
};

}  // namespace

// ---- options.h --------------------------------------------------------------------------------------

TEST_CASE("ParseOptions: defaults", "[cpu][trainer]") {
  const Options o = Parse({});
  CHECK(o.device == DeviceChoice::kAuto);
  CHECK(o.epochs == 0);
  CHECK(o.limit == 0);
  CHECK(o.batch == 64);
  CHECK(o.lr == 0.05);
  CHECK(o.momentum == 0.9);
  CHECK(o.weight_decay == Approx(5e-4).epsilon(1e-12));
  CHECK(o.warmup == 100);
  CHECK(o.cosine);
  CHECK(o.dropout == 0.5);
  CHECK(o.threads == 0);
  CHECK(o.gpus == 1);
  CHECK_FALSE(o.batch_norm);
  CHECK_FALSE(o.augment);
  CHECK(o.seed == 42u);
  CHECK(o.data_dir.empty());
  CHECK(o.log_file.empty());
  CHECK(o.plot_file == "fashion_mnist.svg");
  CHECK_FALSE(o.plot_given);  // so it goes beside the program, not into the working directory
  CHECK_FALSE(o.help);
  for (const char* flag : {"--data", "--device", "--dtype", "--epochs", "--limit", "--batch", "--lr", "--momentum", "--wd",
                           "--warmup", "--schedule", "--dropout", "--bn", "--augment", "--threads", "--gpus",
                           "--profile", "--conv-algorithm", "--seed", "--log", "--plot", "--help"}) {
    INFO(flag);
    CHECK(std::string(Usage()).find(std::string("  ") + flag + " ") != std::string::npos);
  }
}

TEST_CASE("ParseOptions: every flag, as '--flag v' and as '--flag=v'", "[cpu][trainer]") {
  const bool eq = GENERATE(false, true);
  // {"--flag", "v"} or {"--flag=v"}.
  auto args = [&](std::initializer_list<std::pair<std::string, std::string>> kv) {
    std::vector<std::string> v = {"fashion_mnist"};
    for (const auto& [flag, value] : kv) {
      if (eq) {
        v.push_back(flag + "=" + value);
      } else {
        v.push_back(flag);
        v.push_back(value);
      }
    }
    return v;
  };
  const std::vector<std::string> a =
      args({{"--data", "/some/dir"}, {"--device", "cpu"}, {"--epochs", "3"}, {"--limit", "1000"},
            {"--batch", "32"}, {"--lr", "0.125"}, {"--momentum", "0.5"}, {"--wd", "0.0001"}, {"--warmup", "7"},
            {"--schedule", "constant"}, {"--dropout", "0.25"}, {"--threads", "2"}, {"--seed", "123456789012"},
            {"--log", "run.json"}, {"--plot", "run.svg"}, {"--conv-algorithm", "im2col_gemm"}});
  std::vector<std::string> storage = a;
  storage.push_back("--bn");
  storage.push_back("--augment");
  std::vector<char*> argv;
  for (std::string& s : storage) argv.push_back(s.data());
  INFO("form: " << (eq ? "--flag=v" : "--flag v"));
  const Options o = ParseOptions(static_cast<int>(argv.size()), argv.data());
  CHECK(o.data_dir == "/some/dir");
  CHECK(o.device == DeviceChoice::kCpu);
  CHECK(o.epochs == 3);
  CHECK(o.limit == 1000);
  CHECK(o.batch == 32);
  CHECK(o.lr == 0.125);
  CHECK(o.momentum == 0.5);
  CHECK(o.weight_decay == Approx(0.0001).epsilon(1e-12));
  CHECK(o.warmup == 7);
  CHECK_FALSE(o.cosine);
  CHECK(o.dropout == 0.25);
  CHECK(o.threads == 2);
  CHECK(o.seed == 123456789012ull);
  CHECK(o.log_file == "run.json");
  CHECK(o.plot_file == "run.svg");
  CHECK(o.conv_algorithm == "im2col_gemm");
  CHECK(o.batch_norm);
  CHECK(o.augment);
  CHECK_FALSE(o.help);
}

TEST_CASE("ParseOptions: --device, --schedule, --bn, --augment, --help, --limit, empty values", "[cpu][trainer]") {
  CHECK(Parse({"--device", "auto"}).device == DeviceChoice::kAuto);
  CHECK(Parse({"--device", "cpu"}).device == DeviceChoice::kCpu);
  CHECK(Parse({"--device=gpu"}).device == DeviceChoice::kGpu);
  CHECK(Parse({}).dtype == Precision::kFloat32);
  CHECK(Parse({"--dtype", "fp16"}).dtype == Precision::kFloat16);
  CHECK(Parse({"--dtype=bf16"}).dtype == Precision::kBFloat16);
  CHECK(Parse({"--dtype", "bf16", "--dtype", "fp32"}).dtype == Precision::kFloat32);
  CHECK_THAT(ParseError({"--dtype", "fp64"}), Contains("--dtype wants fp32, fp16 or bf16, got 'fp64'"));
  CHECK(std::string(PrecisionName(Precision::kFloat16)) == "fp16");
  CHECK(Parse({"--schedule", "cosine"}).cosine);
  CHECK_FALSE(Parse({"--schedule=constant"}).cosine);
  CHECK(Parse({"--schedule=constant", "--schedule", "cosine"}).cosine);  // the last one wins
  CHECK(Parse({"--bn"}).batch_norm);
  CHECK_FALSE(Parse({"--bn"}).augment);
  CHECK(Parse({"--augment"}).augment);
  CHECK_FALSE(Parse({"--augment"}).batch_norm);
  CHECK(Parse({"--profile"}).profile);
  CHECK_FALSE(Parse({"--bn"}).profile);
  CHECK(Parse({"--help"}).help);
  CHECK(Parse({"-h"}).help);
  // --limit 0 means "all".
  CHECK(Parse({"--limit", "0"}).limit == 0);
  CHECK(Parse({"--limit", "1099511627776"}).limit == 1099511627776L);  // 2^40, the largest
  CHECK(Parse({"--limit=60000"}).limit == 60000);
  // --plot '' turns the plot off; --plot= does the same.
  CHECK(Parse({"--plot", ""}).plot_file.empty());
  CHECK(Parse({"--plot="}).plot_file.empty());
  CHECK(Parse({"--plot", ""}).plot_given);
  // Boundaries that are allowed.
  CHECK(Parse({"--warmup", "0"}).warmup == 0);
  CHECK(Parse({"--dropout", "0"}).dropout == 0.0);
  CHECK(Parse({"--dropout", "0.95"}).dropout == 0.95);
  CHECK(Parse({"--epochs", "100000"}).epochs == 100000);
  CHECK(Parse({"--seed", "0"}).seed == 0u);
  CHECK(Parse({"--lr", "1e-3"}).lr == 0.001);
}

TEST_CASE("ParseOptions: errors are OptionsErrors naming the flag", "[cpu][trainer]") {
  // Unknown flags, with and without a value; a stray positional argument.
  CHECK_THAT(ParseError({"--epoch", "3"}), Contains("unknown option '--epoch'"));
  CHECK_THAT(ParseError({"--frobnicate=1"}), Contains("--frobnicate=1"));
  CHECK_THAT(ParseError({"data"}), Contains("unknown option 'data'"));
  CHECK_THAT(ParseError({"-x"}), Contains("'-x'"));
  // A flag at the end without its value.
  for (const char* flag : {"--epochs", "--limit", "--batch", "--lr", "--momentum", "--wd", "--warmup", "--dropout",
                           "--threads", "--gpus", "--seed", "--device", "--schedule", "--data", "--log", "--plot",
                           "--conv-algorithm"}) {
    INFO(flag);
    CHECK_THAT(ParseError({flag}), Contains(std::string(flag) + " needs a value"));
  }
  // Non-integers, trailing junk, empty values.
  CHECK_THAT(ParseError({"--epochs", "three"}), Contains("--epochs wants an integer") && Contains("'three'"));
  CHECK_THAT(ParseError({"--gpus", "0"}), Contains("--gpus wants an integer in [1, 64]") && Contains("'0'"));
  CHECK_THAT(ParseError({"--gpus=65"}), Contains("--gpus") && Contains("'65'"));
  CHECK_THAT(ParseError({"--epochs=2.5"}), Contains("--epochs") && Contains("'2.5'"));
  CHECK_THAT(ParseError({"--batch", "64x"}), Contains("--batch") && Contains("'64x'"));
  CHECK_THAT(ParseError({"--epochs="}), Contains("--epochs") && Contains("''"));
  CHECK_THAT(ParseError({"--lr", "fast"}), Contains("--lr wants a number") && Contains("'fast'"));
  CHECK_THAT(ParseError({"--lr", "nan"}), Contains("--lr"));
  CHECK_THAT(ParseError({"--lr", "1e999"}), Contains("--lr"));
  // Out of range.
  CHECK_THAT(ParseError({"--epochs", "0"}), Contains("--epochs") && Contains("[1, 100000]"));
  CHECK_THAT(ParseError({"--epochs", "100001"}), Contains("--epochs"));
  CHECK_THAT(ParseError({"--epochs", "-1"}), Contains("--epochs") && Contains("'-1'"));
  CHECK_THAT(ParseError({"--epochs", "99999999999999999999999"}), Contains("--epochs"));
  CHECK_THAT(ParseError({"--batch", "0"}), Contains("--batch"));
  CHECK_THAT(ParseError({"--batch", "65537"}), Contains("--batch"));
  CHECK_THAT(ParseError({"--limit", "-5"}), Contains("--limit"));
  CHECK_THAT(ParseError({"--threads", "0"}), Contains("--threads"));
  CHECK_THAT(ParseError({"--warmup", "-1"}), Contains("--warmup"));
  CHECK_THAT(ParseError({"--seed", "-1"}), Contains("--seed"));
  CHECK_THAT(ParseError({"--lr", "-0.1"}), Contains("--lr wants a number"));
  CHECK_THAT(ParseError({"--lr", "101"}), Contains("--lr"));
  CHECK_THAT(ParseError({"--momentum", "1"}), Contains("--momentum"));
  CHECK_THAT(ParseError({"--wd", "2"}), Contains("--wd"));
  CHECK_THAT(ParseError({"--dropout", "0.96"}), Contains("--dropout"));
  CHECK_THAT(ParseError({"--dropout=1"}), Contains("--dropout"));
  // Flags that take no value.
  CHECK_THAT(ParseError({"--bn=1"}), Contains("--bn takes no value"));
  CHECK_THAT(ParseError({"--augment=yes"}), Contains("--augment takes no value"));
  CHECK_THAT(ParseError({"--limit", "1099511627777"}), Contains("--limit"));
  CHECK_THAT(ParseError({"--help=yes"}), Contains("--help takes no value"));
  // Bad enumerations.
  CHECK_THAT(ParseError({"--device", "tpu"}), Contains("--device") && Contains("'tpu'"));
  CHECK_THAT(ParseError({"--device="}), Contains("--device"));
  CHECK_THAT(ParseError({"--device", "CPU"}), Contains("--device"));
  CHECK_THAT(ParseError({"--schedule", "linear"}), Contains("--schedule") && Contains("'linear'"));
  CHECK_THAT(ParseError({"--schedule="}), Contains("--schedule"));
  // An empty --data would silently mean the default directory.
  CHECK_THAT(ParseError({"--data", ""}), Contains("--data wants a directory, got ''"));
  CHECK_THAT(ParseError({"--data="}), Contains("--data wants a directory"));
  CHECK_THAT(ParseError({"--conv-algorithm", ""}), Contains("--conv-algorithm wants an algorithm's name, got ''"));
  // An error after valid flags still throws.
  CHECK_THAT(ParseError({"--epochs", "2", "--bn", "--lr"}), Contains("--lr needs a value"));
  // It is an OptionsError, hence a runtime_error.
  CHECK_THROWS_AS(Parse({"--nope"}), OptionsError);
  CHECK_THROWS_AS(Parse({"--nope"}), std::runtime_error);
}

// ---- idx_dataset.h ----------------------------------------------------------------------------------

TEST_CASE("LoadDataset reads a tiny IDX data set, gzip-compressed or not", "[cpu][trainer]") {
  const bool gzip = GENERATE(true, false);
  INFO((gzip ? "gzip" : "uncompressed"));
  TempDir dir;
  WriteDataset(dir, gzip);
  const Dataset d = LoadDataset(dir.path, "from --data");
  CHECK(d.directory == dir.path);
  CHECK(d.train.count == 3);
  CHECK(d.train.rows == 28);
  CHECK(d.train.cols == 28);
  CHECK(d.train.PixelsPerImage() == 784);
  CHECK(d.train.pixels == Pixels(1, 3));
  CHECK(d.train.labels == kTrainLabels);
  CHECK(d.test.count == 2);
  CHECK(d.test.rows == 28);
  CHECK(d.test.cols == 28);
  CHECK(d.test.pixels == Pixels(2, 2));
  CHECK(d.test.labels == kTestLabels);
  // A trailing slash on the directory makes no difference.
  const Dataset d2 = LoadDataset(dir.path + "/", "from --data");
  CHECK(d2.train.pixels == d.train.pixels);
  CHECK(d2.test.labels == d.test.labels);
}

TEST_CASE("LoadDataset: an uncompressed file under the .gz name is read as it is", "[cpu][trainer]") {
  TempDir dir;
  WriteDataset(dir, true);
  WriteRaw(dir / "t10k-labels-idx1-ubyte.gz", IdxBytes(0x801, {2}, {5, 6}));
  const Dataset d = LoadDataset(dir.path, "from --data");
  CHECK(d.test.labels == std::vector<uint8_t>{5, 6});
}

TEST_CASE("LoadDataset: a missing directory or file is a DataError naming it and the package", "[cpu][trainer]") {
  TempDir dir;
  SECTION("missing directory") {
    const std::string missing = dir / "no-such-dir";
    const std::string msg = LoadError(missing, "from $FASHION_MNIST_DIR");
    CHECK_THAT(msg, Contains(missing + "/train-images-idx3-ubyte.gz"));
    CHECK_THAT(msg, Contains("Looked in " + missing + " (from $FASHION_MNIST_DIR)"));
    CHECK_THAT(msg, Contains("no such file"));
    CHECK_THAT(msg, Contains("dataset-fashion-mnist"));
    CHECK_THAT(msg, Contains("/usr/share/datasets/fashion-mnist"));
  }
  SECTION("one file missing") {
    WriteDataset(dir, true);
    REQUIRE(std::remove((dir / "t10k-labels-idx1-ubyte.gz").c_str()) == 0);
    const std::string msg = LoadError(dir.path);
    CHECK_THAT(msg, Contains(dir / "t10k-labels-idx1-ubyte.gz"));
    CHECK_THAT(msg, Contains("dataset-fashion-mnist"));
  }
}

TEST_CASE("LoadDataset: corrupt files are DataErrors naming the file", "[cpu][trainer]") {
  TempDir dir;
  WriteDataset(dir, true);
  const std::string images = dir / "train-images-idx3-ubyte.gz", labels = dir / "train-labels-idx1-ubyte.gz";
  std::string msg;
  SECTION("wrong magic number") {
    WriteGzip(images, IdxBytes(0x801, {3, 28, 28}, Pixels(1, 3)));
    msg = LoadError(dir.path);
    CHECK_THAT(msg, Contains(images));
    CHECK_THAT(msg, Contains("bad IDX magic number 0x00000801, expected 0x00000803"));
  }
  SECTION("wrong element type in the magic number") {
    WriteGzip(labels, IdxBytes(0x0D01, {3}, kTrainLabels));  // 0x0D: float
    msg = LoadError(dir.path);
    CHECK_THAT(msg, Contains(labels));
    CHECK_THAT(msg, Contains("magic"));
  }
  SECTION("truncated body") {
    std::vector<uint8_t> px = Pixels(1, 3);
    px.resize(px.size() - 100);
    WriteGzip(images, IdxBytes(0x803, {3, 28, 28}, px));
    msg = LoadError(dir.path);
    CHECK_THAT(msg, Contains(images));
    CHECK_THAT(msg, Contains("truncated"));
    CHECK_THAT(msg, Contains(std::to_string(3 * 784)));
    CHECK_THAT(msg, Contains("but only " + std::to_string(3 * 784 - 100) + " follow it"));
  }
  SECTION("a header that promises 4 GB of a tiny file is an error before anything that size is allocated") {
    const std::vector<uint8_t> bytes = IdxBytes(0x803, {1u << 24, 16, 16}, Pixels(1, 1, 16));
    for (bool gzip : {true, false}) {
      INFO((gzip ? "gzip" : "raw"));
      if (gzip) WriteGzip(images, bytes);
      else WriteRaw(images, bytes);
      rusage before{}, after{};
      getrusage(RUSAGE_SELF, &before);
      msg = LoadError(dir.path);
      getrusage(RUSAGE_SELF, &after);
      CHECK_THAT(msg, Contains(images));
      CHECK_THAT(msg, Contains("the header promises 4294967296 bytes of data but only 16 follow it"));
      CHECK(after.ru_maxrss - before.ru_maxrss < 256 * 1024);  // KiB: far below the 4 GB promised
    }
  }
  SECTION("truncated header") {
    std::vector<uint8_t> b = IdxBytes(0x803, {3, 28, 28}, {});
    b.resize(9);
    WriteGzip(images, b);
    msg = LoadError(dir.path);
    CHECK_THAT(msg, Contains(images));
    CHECK_THAT(msg, Contains("truncated IDX header"));
  }
  SECTION("empty file") {
    WriteRaw(labels, {});
    msg = LoadError(dir.path);
    CHECK_THAT(msg, Contains(labels));
    CHECK_THAT(msg, Contains("empty"));
  }
  SECTION("truncated gzip stream") {
    // Incompressible pixels so that the .gz is long; keep only its first half.
    std::mt19937 rng(7);
    std::vector<uint8_t> px(3 * 784);
    for (uint8_t& p : px) p = static_cast<uint8_t>(rng());
    WriteGzip(images, IdxBytes(0x803, {3, 28, 28}, px));
    std::vector<uint8_t> gz = ReadBytes(images);
    REQUIRE(gz.size() > 1000);
    gz.resize(gz.size() / 2);
    WriteRaw(images, gz);
    msg = LoadError(dir.path);
    CHECK_THAT(msg, Contains(images));
  }
  SECTION("trailing bytes") {
    std::vector<uint8_t> lb = kTrainLabels;
    lb.push_back(1);
    WriteGzip(labels, IdxBytes(0x801, {3}, lb));
    msg = LoadError(dir.path);
    CHECK_THAT(msg, Contains(labels));
    CHECK_THAT(msg, Contains("trailing bytes"));
  }
  SECTION("zero or implausible extents") {
    WriteGzip(images, IdxBytes(0x803, {0, 28, 28}, {}));
    msg = LoadError(dir.path);
    CHECK_THAT(msg, Contains(images));
    CHECK_THAT(msg, Contains("implausible extent 0 in dimension 0"));
    WriteGzip(images, IdxBytes(0x803, {3, 0x7fffffffu, 28}, {}));
    msg = LoadError(dir.path);
    CHECK_THAT(msg, Contains(images));
    CHECK_THAT(msg, Contains("implausible"));
  }
  SECTION("label outside 0..9") {
    WriteGzip(labels, IdxBytes(0x801, {3}, {0, 10, 4}));
    msg = LoadError(dir.path);
    CHECK_THAT(msg, Contains(labels));
    CHECK_THAT(msg, Contains("label 1 is 10, outside 0..9"));
  }
  SECTION("image / label count mismatch") {
    WriteGzip(labels, IdxBytes(0x801, {2}, {0, 9}));
    msg = LoadError(dir.path);
    CHECK_THAT(msg, Contains(images + " holds 3 images but " + labels + " holds 2 labels"));
  }
  SECTION("images that are not 28x28") {
    WriteGzip(images, IdxBytes(0x803, {3, 4, 4}, Pixels(1, 3, 16)));
    msg = LoadError(dir.path);
    CHECK_THAT(msg, Contains(images));
    CHECK_THAT(msg, Contains("4x4"));
  }
  SECTION("a corrupt test-set file") {
    WriteGzip(dir / "t10k-images-idx3-ubyte.gz", IdxBytes(0x803, {2, 28, 28}, Pixels(2, 1)));
    msg = LoadError(dir.path);
    CHECK_THAT(msg, Contains(dir / "t10k-images-idx3-ubyte.gz"));
    CHECK_THAT(msg, Contains("truncated"));
  }
  CHECK_THAT(msg, Contains("dataset-fashion-mnist"));
}

TEST_CASE("LoadDataset: a .gz cut off anywhere, even inside its CRC / size trailer, is a DataError",
          "[cpu][trainer]") {
  TempDir dir;
  WriteDataset(dir, true);
  CHECK_NOTHROW(LoadDataset(dir.path, "from --data"));
  const std::string labels = dir / "train-labels-idx1-ubyte.gz";
  const std::vector<uint8_t> gz = ReadBytes(labels);
  REQUIRE(gz.size() > 10 + 8);  // 10-byte gzip header, deflate data, 8-byte trailer (CRC32, size)
  // Cut inside the trailer (or just before it): every data byte still inflates, so only zlib's error
  // state tells this file from a complete one.
  for (size_t cut = 1; cut <= 8; ++cut) {
    INFO("last " << cut << " bytes cut off");
    WriteRaw(labels, std::vector<uint8_t>(gz.begin(), gz.end() - cut));
    const std::string msg = LoadError(dir.path);
    CHECK_THAT(msg, Contains(labels));
    CHECK_THAT(msg, Contains("truncated"));
    CHECK_THAT(msg, Contains("dataset-fashion-mnist"));
  }
  // A wrong CRC32 or size in an otherwise complete file is corruption, not truncation.
  for (size_t from_end : {8, 1}) {
    INFO("byte " << from_end << " from the end flipped");
    std::vector<uint8_t> bad = gz;
    bad[bad.size() - from_end] ^= 0xFF;
    WriteRaw(labels, bad);
    const std::string msg = LoadError(dir.path);
    CHECK_THAT(msg, Contains(labels));
    CHECK_THAT(msg, Contains("corrupt"));
  }
  WriteRaw(labels, gz);
  CHECK_NOTHROW(LoadDataset(dir.path, "from --data"));

  // Cut in the middle of the compressed pixels (incompressible, so the middle of the file is data).
  const std::string images = dir / "train-images-idx3-ubyte.gz";
  std::mt19937 rng(3);
  std::vector<uint8_t> px(3 * 784);
  for (uint8_t& p : px) p = static_cast<uint8_t>(rng());
  WriteGzip(images, IdxBytes(0x803, {3, 28, 28}, px));
  CHECK(LoadDataset(dir.path, "from --data").train.pixels == px);
  std::vector<uint8_t> images_gz = ReadBytes(images);
  REQUIRE(images_gz.size() > 2000);
  images_gz.resize(images_gz.size() / 2);
  WriteRaw(images, images_gz);
  const std::string msg = LoadError(dir.path);
  CHECK_THAT(msg, Contains(images));
  CHECK_THAT(msg, Contains("truncated"));
  CHECK_THROWS_AS(LoadDataset(dir.path, "from --data"), DataError);
}

TEST_CASE("ChooseDataDir: --data, then $FASHION_MNIST_DIR, then the package's directory", "[cpu][trainer]") {
  ScopedEnv env("FASHION_MNIST_DIR");
  std::string how_flag, how_env, how_default, how;

  env.Set("/from/env");
  CHECK(ChooseDataDir("/from/flag", &how_flag) == "/from/flag");
  CHECK(ChooseDataDir("", &how_env) == "/from/env");

  env.Unset();
  CHECK(ChooseDataDir("/from/flag", &how) == "/from/flag");
  CHECK(how == how_flag);
  CHECK(ChooseDataDir("", &how_default) == "/usr/share/datasets/fashion-mnist");
  CHECK(std::string(kDefaultDataDir) == "/usr/share/datasets/fashion-mnist");

  env.Set("");  // set but empty: as if unset
  CHECK(ChooseDataDir("", &how) == kDefaultDataDir);
  CHECK(how == how_default);

  CHECK_FALSE(how_flag.empty());
  CHECK_FALSE(how_env.empty());
  CHECK_FALSE(how_default.empty());
  CHECK(how_flag != how_env);
  CHECK(how_flag != how_default);
  CHECK(how_env != how_default);
  CHECK_THAT(how_flag, Contains("--data"));
  CHECK_THAT(how_env, Contains("FASHION_MNIST_DIR"));
  CHECK_THAT(how_default, Contains("default"));
}

// ---- trainer.h: schedule and data preparation -------------------------------------------------------

TEST_CASE("LearningRate: linear warm-up, then constant or cosine", "[cpu][trainer]") {
  Options o;
  o.lr = 0.1;
  o.warmup = 10;
  const int64_t steps = 110;

  SECTION("warm-up") {
    for (bool cosine : {true, false}) {
      o.cosine = cosine;
      CHECK(LearningRate(o, 0, steps) == Approx(0.01));
      CHECK(LearningRate(o, 4, steps) == Approx(0.05));
      CHECK(LearningRate(o, 9, steps) == Approx(0.1));
      for (int64_t s = 1; s < o.warmup; ++s) CHECK(LearningRate(o, s, steps) > LearningRate(o, s - 1, steps));
    }
  }
  SECTION("constant") {
    o.cosine = false;
    for (int64_t s = o.warmup; s < steps; ++s) CHECK(LearningRate(o, s, steps) == 0.1);
    CHECK(LearningRate(o, 5000, steps) == 0.1);
  }
  SECTION("cosine") {
    o.cosine = true;
    CHECK(LearningRate(o, 10, steps) == Approx(0.1));
    CHECK(LearningRate(o, 10 + 100 / 2, steps) == Approx(0.05));
    CHECK(LearningRate(o, 10 + 100 / 4, steps) == Approx(0.1 * (1 + std::sqrt(0.5)) / 2));
    const double last = LearningRate(o, steps - 1, steps);
    CHECK(last > 0);
    CHECK(last < 0.1 * 1e-3);
    CHECK(LearningRate(o, steps, steps) == Approx(0.0).margin(1e-15));
    for (int64_t s = o.warmup + 1; s < steps; ++s) {
      INFO("step " << s);
      CHECK(LearningRate(o, s, steps) <= LearningRate(o, s - 1, steps));
    }
  }
  SECTION("no warm-up") {
    o.warmup = 0;
    CHECK(LearningRate(o, 0, 100) == Approx(0.1));
    CHECK(LearningRate(o, 50, 100) == Approx(0.05));
    o.cosine = false;
    CHECK(LearningRate(o, 0, 100) == 0.1);
  }
  SECTION("a run shorter than the warm-up never leaves it") {
    CHECK(LearningRate(o, 4, 5) == Approx(0.05));
    o.warmup = 3;
    CHECK(LearningRate(o, 3, 3) == 0.1);  // steps <= warmup: lr, no cosine
  }
}

TEST_CASE("ComputePixelStats: exact mean and standard deviation", "[cpu][trainer]") {
  ImageSet s;
  s.count = 3;
  s.rows = 2;
  s.cols = 2;
  s.pixels = {0, 255, 0, 255,  // image 0: values 0 and 1
              51, 51, 51, 51,  // image 1: 0.2 everywhere
              7, 7, 7, 7};     // image 2: ignored unless counted
  s.labels = {1, 2, 3};
  const PixelStats one = ComputePixelStats(s, 1);
  CHECK(one.mean == Approx(0.5).epsilon(1e-12));
  CHECK(one.std == Approx(0.5).epsilon(1e-12));
  // Two images: values 0, 1, 0, 1, 0.2 x4: mean 2.8 / 8, E[x^2] = 2.16 / 8.
  const PixelStats two = ComputePixelStats(s, 2);
  CHECK(two.mean == Approx(0.35).epsilon(1e-12));
  CHECK(two.std == Approx(std::sqrt(0.27 - 0.35 * 0.35)).epsilon(1e-12));
  // Constant images: std is clamped away from 0 (normalising stays finite).
  ImageSet c = s;
  c.pixels.assign(12, 128);
  const PixelStats flat = ComputePixelStats(c, 3);
  CHECK(flat.mean == Approx(128 / 255.0).epsilon(1e-12));
  CHECK(flat.std > 0);
  CHECK(flat.std <= 1e-5);
  // No images: the identity normalisation.
  const PixelStats none = ComputePixelStats(s, 0);
  CHECK(none.mean == 0);
  CHECK(none.std == 1);
}

// Three 28x28 images of Pixels(salt, 3) with the given labels.
ImageSet ThreeImages(int salt, std::vector<uint8_t> labels) {
  ImageSet s;
  s.count = 3;
  s.rows = s.cols = 28;
  s.pixels = Pixels(salt, 3);
  s.labels = std::move(labels);
  return s;
}

TEST_CASE("NormaliseInto: (pixel / 255 - mean) / std in the given order, with the labels", "[cpu][trainer]") {
  const ImageSet s = ThreeImages(3, {4, 8, 2});
  const PixelStats st{0.25, 0.5};
  const std::vector<int64_t> order = {2, 0};
  TensorContainer<cpu, 4, float> dst(Shape4(2, 1, 28, 28));
  TensorContainer<cpu, 1, int32_t> labels(Shape1(2));
  NormaliseInto(s, order, st, dst.view(), labels.view());
  CHECK(labels.dptr_[0] == 2);
  CHECK(labels.dptr_[1] == 4);
  int64_t bad = 0;
  for (int64_t i = 0; i < 2; ++i)
    for (int64_t p = 0; p < 784; ++p) {
      const double want = (Pixel(3, order[i], p) / 255.0 - 0.25) / 0.5;
      bad += std::fabs(dst.dptr_[i * 784 + p] - want) > 1e-5;
    }
  CHECK(bad == 0);
}

TEST_CASE("NormaliseInto with flips mirrors exactly the flagged images left to right", "[cpu][trainer]") {
  const ImageSet s = ThreeImages(4, {1, 5, 9});
  const PixelStats st{0.5, 0.25};
  const std::vector<int64_t> order = {1, 2, 0};
  const std::vector<bool> flip = {true, false, true};  // by position in `order`
  TensorContainer<cpu, 4, float> dst(Shape4(3, 1, 28, 28));
  TensorContainer<cpu, 1, int32_t> labels(Shape1(3));
  NormaliseInto(s, order, st, dst.view(), labels.view(), flip);
  CHECK(labels.dptr_[0] == 5);
  CHECK(labels.dptr_[1] == 9);
  CHECK(labels.dptr_[2] == 1);
  int64_t bad = 0;
  for (int64_t i = 0; i < 3; ++i)
    for (int64_t y = 0; y < 28; ++y)
      for (int64_t x = 0; x < 28; ++x) {
        const int64_t src_x = flip[i] ? 27 - x : x;
        const double want = (Pixel(4, order[i], y * 28 + src_x) / 255.0 - 0.5) / 0.25;
        bad += std::fabs(dst.dptr_[i * 784 + y * 28 + x] - want) > 1e-5;
      }
  CHECK(bad == 0);
}

TEST_CASE("RandomFlips: none without --augment, else about half, reproducible from the seed", "[cpu][trainer]") {
  std::mt19937_64 rng(5);
  CHECK(RandomFlips(false, 100, &rng).empty());
  CHECK(rng() == std::mt19937_64(5)());  // no draws when off
  std::mt19937_64 a(9), b(9);
  const std::vector<bool> fa = RandomFlips(true, 1000, &a), fb = RandomFlips(true, 1000, &b);
  REQUIRE(fa.size() == 1000);
  CHECK(fa == fb);
  const auto n = std::count(fa.begin(), fa.end(), true);
  CHECK(n > 400);
  CHECK(n < 600);
  CHECK(RandomFlips(true, 1000, &a) != fa);  // afresh each epoch
}

// ---- options.h: output paths and settings; progress_bar.h ---------------------------------------------

TEST_CASE("ResolveOutputPath: absolute paths, and unwritable ones refused before training", "[cpu][trainer]") {
  TempDir dir;
  CHECK(ResolveOutputPath("", "--log").empty());  // no output
  CHECK(ResolveOutputPath(dir / "run.csv", "--log") == dir / "run.csv");
  CHECK_FALSE(std::filesystem::exists(dir / "run.csv"));  // checked, not created
  // Relative paths are made absolute against the working directory.
  const std::filesystem::path cwd = std::filesystem::current_path();
  std::filesystem::current_path(dir.path);
  const std::string relative = ResolveOutputPath("curve.svg", "--plot");
  std::filesystem::current_path(cwd);
  CHECK(relative == std::filesystem::path(dir.path) / "curve.svg");
  // Each way to fail is an OptionsError naming the flag and the path.
  const std::string missing = ErrorMessage<OptionsError>([&] { ResolveOutputPath(dir / "no/such/x.csv", "--log"); }, "accepted");
  CHECK_THAT(missing, Contains("--log") && Contains("no/such/x.csv") && Contains("does not exist"));
  const std::string directory = ErrorMessage<OptionsError>([&] { ResolveOutputPath(dir.path, "--plot"); }, "accepted");
  CHECK_THAT(directory, Contains("--plot") && Contains("is a directory"));
  if (geteuid() != 0) {  // root writes anywhere
    const std::string locked = dir / "locked";
    std::filesystem::create_directory(locked);
    std::filesystem::permissions(locked, std::filesystem::perms::owner_read | std::filesystem::perms::owner_exec);
    const std::string denied = ErrorMessage<OptionsError>([&] { ResolveOutputPath(locked + "/x.svg", "--plot"); }, "accepted");
    CHECK_THAT(denied, Contains("--plot") && Contains("not writable"));
    std::filesystem::permissions(locked, std::filesystem::perms::owner_all);
  }
}

TEST_CASE("ProgramDir and SettingsOf: default outputs beside the program, every setting in the log",
          "[cpu][trainer]") {
  // This test's executable lives in the build directory; the trainer's does too.
  CHECK(std::filesystem::is_directory(ProgramDir()));
  CHECK(std::filesystem::exists(ProgramDir() / "trainer_tests"));
  const Options o = Parse({"--epochs", "3", "--lr", "0.01", "--schedule", "constant", "--bn", "--threads", "4"});
  const auto settings = SettingsOf(o);
  auto value = [&](const std::string& name) {
    for (const auto& [n, v] : settings)
      if (n == name) return v;
    FAIL("no setting " << name);
    return std::string();
  };
  CHECK(value("epochs") == "3");
  CHECK(value("lr") == "0.01");
  CHECK(value("schedule") == "constant");
  CHECK(value("batch_norm") == "true");
  CHECK(value("augment") == "false");
  CHECK(value("threads") == "4");
  CHECK(value("seed") == "42");
  CHECK(value("batch") == "64");
  CHECK(value("dtype") == "fp32");
  CHECK(SettingsOf(Parse({"--dtype", "bf16"}))[0] == std::make_pair(std::string("dtype"), std::string("bf16")));
  CHECK(value("gpus") == "1");
  CHECK(SettingsOf(Parse({"--gpus", "2"}))[13] == std::make_pair(std::string("gpus"), std::string("2")));
  CHECK(value("conv_algorithm") == "default");
  CHECK(SettingsOf(Parse({"--conv-algorithm", "im2col_gemm"}))[14] ==
        std::make_pair(std::string("conv_algorithm"), std::string("im2col_gemm")));
  CHECK(settings.size() == 16);
}

TEST_CASE("FormatProgressLine fits any terminal width and never wraps", "[cpu][trainer]") {
  CHECK(FormatProgressLine("epoch 1/2", 3000, 60000, 941.4, 0.61234, 120) ==
        "epoch 1/2 [#" + std::string(29, '.') + "] 3000/60000  941 img/s  loss 0.6123");
  for (int columns : {200, 100, 80, 72, 60, 50, 40, 20, 5, 1}) {
    INFO("columns " << columns);
    const std::string line = FormatProgressLine("epoch 10/10", 59999, 60000, 12345.6, 0.25, columns);
    CHECK(line.size() <= static_cast<size_t>(std::max(columns - 1, 1)));  // the last column stays free
    if (columns >= 50) CHECK_THAT(line, Contains("59999/60000  12346 img/s  loss 0.2500"));
    if (columns >= 100) CHECK_THAT(line, Contains("[#############################.]"));
    if (columns >= 72) CHECK_THAT(line, Contains("[#"));
  }
  // Narrow: the bar shrinks before the numbers are cut.
  CHECK(FormatProgressLine("e 1/1", 1, 2, 1, 1, 60) == "e 1/1 [############.............] 1/2  1 img/s  loss 1.0000");
  CHECK(FormatProgressLine("e 1/1", 1, 2, 1, 1, 45) == "e 1/1 [#####.....] 1/2  1 img/s  loss 1.0000");
  CHECK(FormatProgressLine("e 1/1", 1, 2, 1, 1, 44) == "e 1/1 1/2  1 img/s  loss 1.0000");  // no room for a bar
  CHECK_THAT(FormatProgressLine("e 1/1", 2, 2, 1, 1, 80), Contains("[" + std::string(30, '#') + "]"));
}

TEST_CASE("ProgressBar: due at the end of the epoch whatever the clock says", "[cpu][trainer]") {
  QuietStdout quiet;
  ProgressBar bar("epoch 1/1", 100);
  CHECK(bar.Due(100));
  bar.Draw(100, 0.5);
  CHECK(bar.Due(100));  // the end is always due (Draw prints it once)
}

// ---- training_log.h / svg_plot.h --------------------------------------------------------------------

namespace {
std::vector<EpochRecord> SampleRecords() {
  std::vector<EpochRecord> r(3);
  for (int i = 0; i < 3; ++i) {
    r[i].epoch = i + 1;
    r[i].seconds = 10.5 + i;
    r[i].images_per_second = 1000.25 * (i + 1);
    r[i].train_loss = 0.9 / (i + 1);
    r[i].test_accuracy = 0.8 + 0.05 * i;
  }
  return r;
}

size_t Count(const std::string& s, const std::string& what) {
  size_t n = 0;
  for (size_t pos = s.find(what); pos != std::string::npos; pos = s.find(what, pos + what.size())) ++n;
  return n;
}
}  // namespace

TEST_CASE("WriteTrainingLog: CSV, the settings as comments, then one row per epoch", "[cpu][trainer]") {
  TempDir dir;
  const std::string path = dir / "log.csv";
  const RunSettings settings = {{"device", "the CPU (2 threads)"}, {"lr", "0.05"}, {"note", "two\nlines"}};
  WriteTrainingLog(path, settings, SampleRecords());
  CHECK(ReadText(path) ==
        "# device: the CPU (2 threads)\n"
        "# lr: 0.05\n"
        "# note: two lines\n"
        "epoch,seconds,images_per_second,train_loss,test_accuracy\n"
        "1,10.500,1000.2,0.900000,0.8000\n"
        "2,11.500,2000.5,0.450000,0.8500\n"
        "3,12.500,3000.8,0.300000,0.9000\n");
  // Rewritten, not appended, after every epoch; any name not ending in .json is CSV.
  std::vector<EpochRecord> one = SampleRecords();
  one.resize(1);
  WriteTrainingLog(path, {}, one);
  CHECK(ReadText(path) == "epoch,seconds,images_per_second,train_loss,test_accuracy\n1,10.500,1000.2,0.900000,0.8000\n");
  WriteTrainingLog(dir / "log.txt", settings, {});  // before the first epoch
  CHECK(ReadText(dir / "log.txt") ==
        "# device: the CPU (2 threads)\n# lr: 0.05\n# note: two lines\n"
        "epoch,seconds,images_per_second,train_loss,test_accuracy\n");
}

TEST_CASE("WriteTrainingLog: JSON, the settings, then one object per epoch", "[cpu][trainer]") {
  TempDir dir;
  const std::string path = dir / "log.json";
  const RunSettings settings = {{"device", "the \"GPU\""}, {"data", "C:\\x\ty"}};
  WriteTrainingLog(path, settings, SampleRecords());
  const std::string text = ReadText(path);
  CHECK(text ==
        "{\n"
        "  \"settings\": {\n"
        "    \"device\": \"the \\\"GPU\\\"\",\n"
        "    \"data\": \"C:\\\\x\\u0009y\"\n"
        "  },\n"
        "  \"epochs\": [\n"
        "    {\"epoch\": 1, \"seconds\": 10.500, \"images_per_second\": 1000.2, \"train_loss\": 0.900000, "
        "\"test_accuracy\": 0.8000},\n"
        "    {\"epoch\": 2, \"seconds\": 11.500, \"images_per_second\": 2000.5, \"train_loss\": 0.450000, "
        "\"test_accuracy\": 0.8500},\n"
        "    {\"epoch\": 3, \"seconds\": 12.500, \"images_per_second\": 3000.8, \"train_loss\": 0.300000, "
        "\"test_accuracy\": 0.9000}\n"
        "  ]\n"
        "}\n");
  CHECK(Count(text, "},") == 3);  // the settings and two epochs: no trailing comma after the last object
  WriteTrainingLog(path, {}, {});
  CHECK(ReadText(path) == "{\n  \"settings\": {},\n  \"epochs\": []\n}\n");
  // A well-formed document whatever the content, as Python's json module reads it.
  if (std::system("python3 -c '' 2>/dev/null") == 0) {
    WriteTrainingLog(path, settings, SampleRecords());
    const std::string check = "python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); "
                              "assert d[\"settings\"][\"data\"] == \"C:\\\\x\\ty\" and len(d[\"epochs\"]) == 3' " + path;
    CHECK(std::system(check.c_str()) == 0);
  }
}

TEST_CASE("WriteTrainingLog / WriteTrainingCurveSvg: unwritable paths throw, naming the file", "[cpu][trainer]") {
  const std::vector<EpochRecord> r = SampleRecords();
  CHECK_THROWS_WITH(WriteTrainingLog("/nonexistent-dir/x.csv", {}, r), Contains("/nonexistent-dir/x.csv"));
  CHECK_THROWS_WITH(WriteTrainingLog("/nonexistent-dir/x.json", {}, r), Contains("/nonexistent-dir/x.json"));
  CHECK_THROWS_AS(WriteTrainingLog("/nonexistent-dir/x.csv", {}, r), std::runtime_error);
  CHECK_THROWS_WITH(WriteTrainingCurveSvg("/nonexistent-dir/x.svg", r, "t"), Contains("/nonexistent-dir/x.svg"));
  TempDir dir;
  CHECK_THROWS_WITH(WriteTrainingLog(dir.path, {}, r), Contains(dir.path));  // a directory, not a file
  // A full device: the write fails when the buffer is flushed at fclose.
  if (std::FILE* probe = std::fopen("/dev/full", "w")) {
    std::fclose(probe);
    CHECK_THROWS_WITH(WriteTrainingLog("/dev/full", {}, r), Contains("/dev/full"));
    CHECK_THROWS_WITH(WriteTrainingCurveSvg("/dev/full", r, "t"), Contains("/dev/full"));
  }
}

namespace {
// The numbers of the points="..." attribute of each polyline, in order: x, y, x, y, ...
std::vector<std::vector<double>> PolylinePoints(const std::string& svg) {
  std::vector<std::vector<double>> lines;
  for (size_t pos = svg.find("points=\""); pos != std::string::npos; pos = svg.find("points=\"", pos + 1)) {
    const size_t end = svg.find('"', pos + 8);
    std::string text = svg.substr(pos + 8, end - pos - 8);
    std::replace(text.begin(), text.end(), ',', ' ');
    std::istringstream in(text);
    lines.emplace_back();
    for (double v; in >> v;) lines.back().push_back(v);
  }
  return lines;
}

// The y attribute of the first <text> whose content starts with `label`.
double TextY(const std::string& svg, const std::string& label) {
  const size_t at = svg.find(">" + label);
  REQUIRE(at != std::string::npos);
  const size_t y = svg.rfind(" y=\"", at);
  return std::stod(svg.substr(y + 4));
}
}  // namespace

TEST_CASE("WriteTrainingCurveSvg: per-minibatch loss, accuracy per epoch, legend outside the plot",
          "[cpu][trainer]") {
  TempDir dir;
  const std::string path = dir / "curve.svg";
  std::vector<EpochRecord> r = SampleRecords();
  for (EpochRecord& e : r)
    for (int i = 0; i < 100; ++i) e.batch_losses.push_back(e.train_loss * (1.5 - i / 100.0));
  WriteTrainingCurveSvg(path, r, "Fashion-MNIST convnet on the CPU");
  const std::string svg = ReadText(path);
  CHECK(svg.rfind("<svg", 0) == 0);
  CHECK_THAT(svg, Contains("xmlns=\"http://www.w3.org/2000/svg\""));
  CHECK(svg.substr(svg.size() - 7) == "</svg>\n");
  CHECK_THAT(svg, Contains(">Fashion-MNIST convnet on the CPU</text>"));
  // The loss as measured and smoothed (a point per minibatch), the accuracy (a point and marker per epoch).
  const auto lines = PolylinePoints(svg);
  REQUIRE(lines.size() == 3);
  CHECK(lines[0].size() == 2 * 300);
  CHECK(lines[1].size() == 2 * 300);
  CHECK(lines[2].size() == 2 * 3);
  CHECK(Count(svg, "<circle") == 3);
  // x grows along each curve; the loss is drawn at fractions of epochs, from just after 0 to epoch 3.
  for (const auto& line : lines)
    for (size_t i = 2; i < line.size(); i += 2) CHECK(line[i] > line[i - 2]);
  CHECK(lines[0][lines[0].size() - 2] == Approx(lines[2][4]).margin(0.05));  // the last minibatch sits at the last epoch
  // The smoothed curve starts at the first measured value (debiased) and stays within the measured range.
  CHECK(lines[1][1] == Approx(lines[0][1]).margin(0.05));
  CHECK_THAT(svg, Contains("training loss, smoothed (last epoch 0.3000)"));
  CHECK_THAT(svg, Contains("test accuracy (last 0.9000)"));
  // The legend is above the plot's frame: it covers no data.
  const size_t frame = svg.find("<rect x=");
  const double plot_top = std::stod(svg.substr(svg.find(" y=\"", frame) + 4));
  CHECK(TextY(svg, "training loss, smoothed") < plot_top);
  CHECK(TextY(svg, "test accuracy (last") < plot_top);
  for (const auto& line : lines)
    for (size_t i = 1; i < line.size(); i += 2) CHECK(line[i] >= plot_top);
  CHECK(Count(svg, "<") == Count(svg, ">"));

  // Long runs are thinned to at most 600 points per curve, keeping the last minibatch.
  std::vector<EpochRecord> many = SampleRecords();
  for (EpochRecord& e : many) e.batch_losses.assign(2000, e.train_loss);
  WriteTrainingCurveSvg(path, many, "long");
  const auto thinned = PolylinePoints(ReadText(path));
  CHECK(thinned[0].size() == 2 * 600);
  CHECK(thinned[0][thinned[0].size() - 2] == Approx(lines[0][lines[0].size() - 2]).margin(0.05));

  // Records without minibatch losses (a log's epochs) plot each epoch's mean at its middle.
  WriteTrainingCurveSvg(path, SampleRecords(), "per epoch");
  CHECK(PolylinePoints(ReadText(path))[0].size() == 2 * 3);

  // No records (an interrupted run), and a single one: still a complete document.
  WriteTrainingCurveSvg(path, {}, "empty");
  const std::string empty = ReadText(path);
  CHECK(empty.rfind("<svg", 0) == 0);
  CHECK(Count(empty, "<polyline") == 3);
  CHECK(Count(empty, "<circle") == 0);
  CHECK(empty.find("nan") == std::string::npos);
  WriteTrainingCurveSvg(path, {r[0]}, "one");
  const std::string one = ReadText(path);
  CHECK(Count(one, "<circle") == 1);
  CHECK(one.find("nan") == std::string::npos);
  CHECK(one.find("inf") == std::string::npos);
}

TEST_CASE("Smoothed / Thinned: a debiased moving average, and evenly picked points", "[cpu][trainer]") {
  using fashion_mnist::detail::PlotPoint;
  std::vector<PlotPoint> flat, step;
  for (int i = 0; i < 500; ++i) {
    flat.push_back({i / 100.0, 2.0});
    step.push_back({i / 100.0, i < 250 ? 1.0 : 3.0});
  }
  for (const PlotPoint& p : fashion_mnist::detail::Smoothed(flat)) CHECK(p.y == Approx(2.0));  // no rise from 0
  const auto s = fashion_mnist::detail::Smoothed(step);
  CHECK(s[249].y == Approx(1.0));
  CHECK(s[251].y > 1.0);
  CHECK(s[251].y < 3.0);
  CHECK(s[499].y == Approx(3.0).margin(1e-6));  // a window of 10 points: long forgotten
  for (size_t i = 1; i < s.size(); ++i) CHECK(s[i].y >= s[i - 1].y);
  const auto t = fashion_mnist::detail::Thinned(step, 50);
  REQUIRE(t.size() == 50);
  CHECK(t.front().x == step.front().x);
  CHECK(t.back().x == step.back().x);
  CHECK(fashion_mnist::detail::Thinned(step, 600).size() == 500);  // fewer than the limit: all of them
  CHECK(fashion_mnist::detail::Smoothed({}).empty());
}

TEST_CASE("WriteTrainingCurveSvg: the title is escaped as XML text", "[cpu][trainer]") {
  TempDir dir;
  const std::string path = dir / "curve.svg";
  WriteTrainingCurveSvg(path, SampleRecords(), "<b>&\"x'");
  const std::string svg = ReadText(path);
  CHECK_THAT(svg, Contains(">&lt;b&gt;&amp;&quot;x&apos;</text>"));
  CHECK(svg.find("<b>") == std::string::npos);
  CHECK(Count(svg, "<") == Count(svg, ">"));
  CHECK(Count(svg, "&") == 5);  // only the five entities of the title
}

// ---- network.h, and trainer.h's Evaluate / Train ----------------------------------------------------

namespace {

// A batch of n images of N(0, 1) values (what normalised pixels look like) and labels i % 10.
struct Batch {
  TensorContainer<cpu, 4, float> x;
  TensorContainer<cpu, 1, int32_t> labels;
  explicit Batch(index_t n, uint64_t seed) : x(Shape4(n, 1, 28, 28)), labels(Shape1(n)) {
    std::mt19937_64 rng(seed);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    for (index_t i = 0; i < x.shape_.Size(); ++i) x.dptr_[i] = normal(rng);
    for (index_t i = 0; i < n; ++i) labels.dptr_[i] = static_cast<int32_t>(i % 10);
  }
};

// Mean -log prob[i, label[i]] over the rows of Probabilities().
double CrossEntropy(const ConvNet<cpu>& net, const Tensor<cpu, 1, int32_t>& labels) {
  const Tensor<cpu, 2, float> p = net.Probabilities();
  double sum = 0;
  for (index_t i = 0; i < p.size(0); ++i) sum -= std::log(static_cast<double>(p.dptr_[i * p.stride_ + labels.dptr_[i]]));
  return sum / p.size(0);
}

struct CpuStream {
  Stream<cpu>* s;
  CpuStream() {
    InitTensorEngine<cpu>(0);
    s = NewStream<cpu>(true);
  }
  ~CpuStream() { DeleteStream(s); }
};

}  // namespace

TEST_CASE("ConvNet<cpu>: parameters, probabilities, and the loss as loss_req says", "[cpu][trainer]") {
  CpuStream stream;
  NetConfig cfg;
  cfg.dropout = 0;
  {
    ConvNet<cpu> net(cfg, stream.s);
    // conv1 32x1x5x5 + 32, conv2 64x32x5x5 + 64, fc1 1024x3136 + 1024, fc2 10x1024 + 10.
    CHECK(net.NumParameters() == 832 + 51264 + 3212288 + 10250);
  }
  cfg.batch_norm = true;
  {
    ConvNet<cpu> net(cfg, stream.s);  // conv biases replaced by gamma and beta
    CHECK(net.NumParameters() == 800 + 51200 + 3212288 + 10250 + 2 * 32 + 2 * 64);
  }
  cfg.batch_norm = GENERATE(false, true);
  INFO("batch_norm " << cfg.batch_norm);
  ConvNet<cpu> net(cfg, stream.s);
  Batch b(8, 1);
  net.LossTensor() = 0.0f;
  net.Forward(b.x.view(), b.labels.view(), true, kWriteTo);
  const Tensor<cpu, 2, float> p = net.Probabilities();
  REQUIRE(p.size(0) == 8);
  REQUIRE(p.size(1) == 10);
  for (index_t i = 0; i < 8; ++i) {
    double row = 0;
    for (index_t k = 0; k < 10; ++k) {
      const float v = p.dptr_[i * p.stride_ + k];
      CHECK(v >= 0.0f);
      CHECK(v <= 1.0f);
      row += v;
    }
    CHECK(row == Approx(1.0).epsilon(1e-5));
  }
  const double ce = CrossEntropy(net, b.labels.view());
  const float loss = net.LossTensor().dptr_[0];
  CHECK(std::isfinite(loss));
  CHECK(loss == Approx(ce).epsilon(1e-4));
  CHECK(loss > 0.5);  // an untrained net is far from these labels
  // kWriteTo overwrites; kAddTo accumulates (dropout off, so the same batch gives the same loss).
  net.Forward(b.x.view(), b.labels.view(), true, kWriteTo);
  CHECK(net.LossTensor().dptr_[0] == Approx(loss).epsilon(1e-5));
  net.Forward(b.x.view(), b.labels.view(), true, kAddTo);
  CHECK(net.LossTensor().dptr_[0] == Approx(2 * loss).epsilon(1e-5));
  net.Forward(b.x.view(), b.labels.view(), true, kAddTo);
  CHECK(net.LossTensor().dptr_[0] == Approx(3 * loss).epsilon(1e-5));
  // Inference leaves the loss alone.
  net.Forward(b.x.view(), b.labels.view(), false, kWriteTo);
  CHECK(net.LossTensor().dptr_[0] == Approx(3 * loss).epsilon(1e-5));
  // A smaller batch after a larger one (the last, partial batch of an epoch).
  Batch small(3, 2);
  net.Forward(small.x.view(), small.labels.view(), true, kWriteTo);
  CHECK(net.Probabilities().size(0) == 3);
  CHECK(net.LossTensor().dptr_[0] == Approx(CrossEntropy(net, small.labels.view())).epsilon(1e-4));
}

TEST_CASE("ConvNet<cpu>: 60 SGD steps overfit one batch of 8 images", "[cpu][trainer]") {
  CpuStream stream;
  NetConfig cfg;
  cfg.batch_norm = GENERATE(false, true);
  cfg.dropout = GENERATE(0.0, 0.5);
  cfg.seed = GENERATE(42, 7);  // the schedule below passed for 20 seeds in every configuration
  INFO("batch_norm " << cfg.batch_norm << ", dropout " << cfg.dropout << " seed " << cfg.seed);
  ConvNet<cpu> net(cfg, stream.s);
  Batch b(8, 3);
  const int kSteps = 60;
  std::vector<float> losses;
  for (int step = 0; step < kSteps; ++step) {
    net.Forward(b.x.view(), b.labels.view(), true, kWriteTo);
    losses.push_back(net.LossTensor().dptr_[0]);
    net.Backward(b.labels.view());
    // The trainer's kind of schedule: a linear warm-up, then a half cosine down to 0, so the last steps settle.
    const double warm = std::min(1.0, (step + 1) / 10.0), cosine = 0.5 * (1 + std::cos(3.141592653589793 * step / kSteps));
    net.Update(0.01 * warm * cosine, 0.9, 1e-4);
  }
  // Batch norm's running statistics trail the weights, which move fast at this learning rate: training-mode
  // forwards without an update let them settle on the final weights' statistics (0.9^30: 4% left).
  if (cfg.batch_norm) {
    for (int step = 0; step < 30; ++step) net.Forward(b.x.view(), b.labels.view(), true, kNullOp);
  }
  // The loss of the trained net in inference mode (no dropout; batch norm's running statistics).
  net.Forward(b.x.view(), b.labels.view(), false, kNullOp);
  const double final_loss = CrossEntropy(net, b.labels.view());
  std::ostringstream trace;
  for (float l : losses) trace << l << " ";
  INFO("training losses: " << trace.str() << "; inference loss after: " << final_loss);
  for (float l : losses) CHECK(std::isfinite(l));
  CHECK(losses.front() > 1.0);  // ln 10 = 2.3 for a uniform guess; an untrained net is worse
  // Without dropout the training loss itself falls by orders of magnitude (4.3 -> 4e-5 without batch
  // norm, 8.1 -> 1e-2 with it). With dropout each step drops different fc1 units, so the per-step training
  // loss stays noisy (0 .. 6 on a memorised batch); there the inference loss below is the measure.
  if (cfg.dropout == 0) {
    CHECK(losses.back() < 0.1 * losses.front());
    CHECK(*std::max_element(losses.end() - 5, losses.end()) < 0.1 * losses.front());
  }
  CHECK(final_loss < 0.05 * losses.front());

  // Evaluate (trainer.h) classifies the memorised batch correctly.
  DeviceData<cpu> data(8, stream.s);
  std::copy(b.x.dptr_, b.x.dptr_ + 8 * 784, data.host_images.dptr_);
  std::copy(b.labels.dptr_, b.labels.dptr_ + 8, data.host_labels.dptr_);
  ImageSet raw;
  raw.count = 8;
  raw.rows = raw.cols = 28;
  raw.labels.assign(b.labels.dptr_, b.labels.dptr_ + 8);
  CHECK(Evaluate(&net, data, raw, stream.s) == 1.0);
  // Labels shifted by one: every guess is now wrong.
  for (uint8_t& l : raw.labels) l = static_cast<uint8_t>((l + 1) % 10);
  CHECK(Evaluate(&net, data, raw, stream.s) == 0.0);
}

// The text LayerProfile::Print writes.
template <typename Fill>
std::string ProfileText(Fill fill) {
  LayerProfile profile;
  fill(&profile);
  std::FILE* f = std::tmpfile();
  REQUIRE(f != nullptr);
  profile.Print(f);
  std::rewind(f);
  std::string text;
  for (int c; (c = std::fgetc(f)) != EOF;) text += static_cast<char>(c);
  std::fclose(f);
  return text;
}

TEST_CASE("LayerProfile: sums each layer and phase, slowest first, per batch", "[cpu][trainer]") {
  // Exact durations through Add: the table's arithmetic and order are checked, not the machine's clock.
  const std::string text = ProfileText([&](LayerProfile* p) {
    for (int batch = 0; batch < 2; ++batch) {
      p->Add("conv1", "fwd", 0.001);
      p->Add("conv1", "bwd", 0.030);
      p->Add("conv1", "fwd", 0.001);  // the same entry again: summed
      p->Add("sgd", "update", 0.008);
      p->EndBatch();
    }
  });
  INFO(text);
  CHECK(text.find("profile over 2 batches") != std::string::npos);
  const size_t bwd = text.find("conv1 bwd"), upd = text.find("sgd update"), fwd = text.find("conv1 fwd");
  REQUIRE(bwd != std::string::npos);
  REQUIRE(upd != std::string::npos);
  REQUIRE(fwd != std::string::npos);
  CHECK(bwd < upd);  // 60 ms, then 16 ms, then 4 ms
  CHECK(upd < fwd);
  CHECK(text.find("conv1 fwd", fwd + 1) == std::string::npos);  // one row per entry
  // "<name>  <total s>  <ms / batch>  <share>%"
  const auto row = [&](size_t at, const char* name) {
    std::istringstream in(text.substr(at + std::strlen(name)));
    std::array<double, 3> v{};
    in >> v[0] >> v[1] >> v[2];
    return v;
  };
  const auto b = row(bwd, "conv1 bwd"), u = row(upd, "sgd update"), f = row(fwd, "conv1 fwd");
  CHECK(b[0] == Approx(0.060));
  CHECK(b[1] == Approx(30.0));
  CHECK(b[2] == Approx(75.0));  // 60 of 80 ms
  CHECK(u[1] == Approx(8.0));
  CHECK(u[2] == Approx(20.0));
  CHECK(f[1] == Approx(2.0));
  CHECK(f[2] == Approx(5.0));
  const size_t all = text.find("all timed");
  REQUIRE(all != std::string::npos);
  const auto a = row(all, "all timed");
  CHECK(a[0] == Approx(0.080));
  CHECK(a[1] == Approx(40.0));
}

TEST_CASE("LayerProfile: Time adds one entry per layer and phase around the call", "[cpu][trainer]") {
  CpuStream stream;
  int calls = 0;
  const std::string text = ProfileText([&](LayerProfile* p) {
    p->Time(stream.s, "fc1", "fwd", [&] { ++calls; });
    p->Time(stream.s, "fc1", "fwd", [&] { ++calls; });
    p->EndBatch();
  });
  INFO(text);
  CHECK(calls == 2);
  const size_t at = text.find("fc1 fwd");
  REQUIRE(at != std::string::npos);
  CHECK(text.find("fc1 fwd", at + 1) == std::string::npos);
  std::istringstream in(text.substr(at + std::strlen("fc1 fwd")));
  double total_s = -1;
  in >> total_s;
  CHECK(total_s >= 0.0);  // a duration; its size depends on the machine and is not checked
}

TEST_CASE("ConvNet<cpu> with a profile times every layer of forward, backward and the update",
          "[cpu][trainer]") {
  CpuStream stream;
  NetConfig cfg;
  cfg.batch_norm = true;
  ConvNet<cpu> net(cfg, stream.s);
  Batch b(4, 5);
  const std::string text = ProfileText([&](LayerProfile* p) {
    net.set_profile(p);
    net.Forward(b.x.view(), b.labels.view(), true, kWriteTo);
    net.Backward(b.labels.view());
    net.Update(0.01, 0.9, 0.0);
    net.set_profile(nullptr);
    net.Forward(b.x.view(), b.labels.view(), false, kNullOp);  // not timed
  });
  INFO(text);
  CHECK(text.find("profile over 1 batches") != std::string::npos);
  for (const char* layer : {"conv1", "bn1", "relu1", "pool1", "conv2", "bn2", "relu2", "pool2", "fc1", "relu3",
                            "dropout", "fc2", "softmax"}) {
    CHECK(text.find(std::string(layer) + " fwd") != std::string::npos);
    CHECK(text.find(std::string(layer) + " bwd") != std::string::npos);
  }
  CHECK(text.find("sgd update") != std::string::npos);
}

// 20 training and 10 test images of random pixels, labels cycling through the classes.
Dataset TinyDataset() {
  Dataset d;
  std::mt19937 rng(11);
  for (ImageSet* s : {&d.train, &d.test}) {
    s->count = s == &d.train ? 20 : 10;
    s->rows = s->cols = 28;
    s->pixels.resize(s->count * 784);
    for (uint8_t& p : s->pixels) p = static_cast<uint8_t>(rng() % 256);
    for (int64_t i = 0; i < s->count; ++i) s->labels.push_back(static_cast<uint8_t>(i % 10));
  }
  return d;
}

TEST_CASE("Train<cpu>: two epochs on a tiny data set report one record each", "[cpu][trainer]") {
  CpuStream stream;
  const Dataset d = TinyDataset();
  Options o;
  o.epochs = 2;
  o.batch = 8;  // 3 batches per epoch, the last one partial
  o.lr = 0.01;
  o.warmup = 2;
  o.dropout = 0;
  o.batch_norm = GENERATE(false, true);
  o.augment = GENERATE(false, true);
  INFO("batch_norm " << o.batch_norm << ", augment " << o.augment);
  std::vector<EpochRecord> records;
  {
    QuietStdout quiet;
    NoSync one_process;
    Train<cpu>(o, d, 20, stream.s, &one_process, [&](const EpochRecord& r) { records.push_back(r); });
  }
  REQUIRE(records.size() == 2);
  for (size_t i = 0; i < records.size(); ++i) {
    const EpochRecord& r = records[i];
    CHECK(r.epoch == int(i) + 1);
    CHECK(r.seconds > 0);
    CHECK(r.images_per_second == Approx(20 / r.seconds));
    CHECK(std::isfinite(r.train_loss));
    CHECK(r.train_loss > 0);
    CHECK(r.test_accuracy >= 0);
    CHECK(r.test_accuracy <= 1);
    CHECK(r.test_accuracy * 10 == Approx(std::round(r.test_accuracy * 10)));  // correct / 10
    // One loss per minibatch, their mean the epoch's loss.
    REQUIRE(r.batch_losses.size() == 3);
    double sum = 0;
    for (double l : r.batch_losses) {
      CHECK(std::isfinite(l));
      CHECK(l > 0);
      sum += l;
    }
    CHECK(sum / 3 == Approx(r.train_loss).epsilon(1e-6));
  }
}

// --conv-algorithm reaches both convolutions, every pass (the selection log says each was forced), and an
// algorithm the library does not have stops training with the library's error naming it.
TEST_CASE("Train<cpu>: --conv-algorithm forces the convolutions' algorithm", "[cpu][trainer]") {
  CpuStream stream;
  const Dataset d = TinyDataset();
  Options o;
  o.epochs = 1;
  o.batch = 10;
  o.dropout = 0;
  o.conv_algorithm = "im2col_gemm";
  std::vector<std::string> log;
  ops::ReleaseConvCaches<cpu>();
  ops::SetConvLog([&](const std::string& line) { log.push_back(line); });
  {
    QuietStdout quiet;
    NoSync one_process;
    Train<cpu>(o, d, 20, stream.s, &one_process, [](const EpochRecord&) {});
  }
  // conv1 (1 channel; its data gradient is never asked for) and conv2: five passes.
  size_t forced = 0;
  for (const std::string& line : log) {
    INFO(line);
    CHECK(line.find("-> im2col_gemm (forced by ConvolutionParam::algorithm)") != std::string::npos);
    forced += line.find("forced") != std::string::npos;
  }
  CHECK(forced == 5);
  o.conv_algorithm = "no_such_algorithm";
  {
    QuietStdout quiet;
    NoSync one_process;
    CHECK_THROWS_WITH(Train<cpu>(o, d, 20, stream.s, &one_process, [](const EpochRecord&) {}),
                      Contains("algorithm \"no_such_algorithm\" is not registered"));
  }
  ops::SetConvLog(nullptr);
  ops::ReleaseConvCaches<cpu>();
}

TEST_CASE("Shard: the ranks split every global batch into disjoint, near-equal shares", "[cpu][trainer]") {
  for (const int ranks : {1, 2, 3, 4, 8}) {
    for (const index_t images : {index_t{0}, index_t{1}, index_t{7}, index_t{64}, index_t{1000}, index_t{60000}}) {
      for (const index_t batch : {index_t{1}, index_t{5}, index_t{64}}) {
        INFO(ranks << " ranks, " << images << " images, batch " << batch);
        Shard shard;
        shard.ranks = ranks;
        shard.images = images;
        shard.batch = batch;
        const index_t steps = shard.Steps();
        std::vector<int> seen(static_cast<size_t>(images), 0);
        for (index_t step = 0; step < steps; ++step) {
          index_t smallest = images, largest = 0;
          for (int r = 0; r < ranks; ++r) {
            shard.rank = r;
            const auto [b, e] = shard.Range(step);
            REQUIRE(b < e);  // every rank trains on at least one image at every step
            REQUIRE(e - b <= batch);
            smallest = std::min(smallest, e - b);
            largest = std::max(largest, e - b);
            for (index_t i = b; i < e; ++i) ++seen[static_cast<size_t>(i)];
          }
          CHECK(largest - smallest <= 1);
        }
        // Each image at most once; all of them but a last global batch too small to share.
        index_t trained = 0;
        for (int n : seen) {
          CHECK(n <= 1);
          trained += n;
        }
        CHECK(trained == shard.ImagesPerEpoch());
        CHECK(images - trained < ranks);
        if (ranks == 1) CHECK(trained == images);
      }
    }
  }
}

TEST_CASE("ConvNet<cpu>: the gradient hook sees every parameter once, last layer first, and two half batches "
          "average to the whole batch's gradient", "[cpu][trainer]") {
  CpuStream stream;
  NetConfig cfg;
  cfg.dropout = 0;  // the same function on every share of the batch
  using Grads = std::vector<std::vector<float>>;
  const auto gradients = [&](const Tensor<cpu, 4, float>& x, const Tensor<cpu, 1, int32_t>& labels) {
    ConvNet<cpu> net(cfg, stream.s);
    Grads seen;
    net.set_gradient_hook([&](const Tensor<cpu, 1, float>& g) { seen.emplace_back(g.dptr_, g.dptr_ + g.size(0)); });
    net.Forward(x, labels, true, kWriteTo);
    net.Backward(labels);
    return seen;
  };
  Batch b(8, 3);
  const Grads whole = gradients(b.x.view(), b.labels.view());
  std::vector<size_t> sizes;
  size_t total = 0;
  for (const auto& g : whole) {
    sizes.push_back(g.size());
    total += g.size();
  }
  // fc2 (weight, bias), fc1, conv2, conv1: the order the backward pass finishes them.
  CHECK(sizes == std::vector<size_t>{10240, 10, 3211264, 1024, 51200, 64, 800, 32});
  CHECK(total == static_cast<size_t>(ConvNet<cpu>(cfg, stream.s).NumParameters()));
  const Grads first = gradients(b.x.Slice(0, 4), b.labels.Slice(0, 4));
  const Grads second = gradients(b.x.Slice(4, 8), b.labels.Slice(4, 8));
  for (size_t k = 0; k < whole.size(); ++k) {
    INFO("parameter " << k);
    double worst = 0, scale = 0;
    for (size_t i = 0; i < whole[k].size(); ++i) {
      const double mean = 0.5 * (static_cast<double>(first[k][i]) + second[k][i]);
      worst = std::max(worst, std::abs(mean - whole[k][i]));
      scale = std::max(scale, std::abs(static_cast<double>(whole[k][i])));
    }
    CHECK(worst <= 1e-4 * scale + 1e-7);
  }
}
