// examples/fashion_mnist/options.h — the trainer's command line.
//
// Flags take their value as the next argument or after '=' (--epochs 3, --epochs=3). Anything unknown or
// malformed is an OptionsError with a message naming the flag; --help prints Usage(). The output files are
// resolved and checked before anything runs (ResolveOutputPath), and the run's settings go into the log
// (SettingsOf).
#pragma once
#include <unistd.h>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

namespace fashion_mnist {

struct OptionsError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

enum class DeviceChoice { kAuto, kCpu, kGpu };

// The training precision: fp32, or mixed precision with fp16 / bf16 activations (GPU only).
enum class Precision { kFloat32, kFloat16, kBFloat16 };
inline const char* PrecisionName(Precision p) {
  return p == Precision::kFloat16 ? "fp16" : p == Precision::kBFloat16 ? "bf16" : "fp32";
}

struct Options {
  DeviceChoice device = DeviceChoice::kAuto;
  Precision dtype = Precision::kFloat32;
  int epochs = 0;             // 0: the device's default (DefaultEpochs)
  long limit = 0;             // use only the first `limit` training images; 0: all
  int batch = 64;
  double lr = 0.05;
  double momentum = 0.9;
  double weight_decay = 5e-4;  // on the weights only (not biases, not batch norm)
  int warmup = 100;           // minibatches over which the learning rate ramps linearly up to lr
  bool cosine = true;         // after the warm-up, decay the learning rate to 0 along a half cosine
  double dropout = 0.5;       // probability of dropping an fc1 activation; 0 turns dropout off
  int threads = 0;            // 0: the OpenMP default
  int gpus = 1;               // > 1: data parallel over this many GPUs, one process each (NCCL)
  bool batch_norm = false;
  bool augment = false;       // mirror a random half of the training images left to right each epoch
  bool profile = false;       // print the time per layer and phase after training
  std::string conv_algorithm;  // forced on both convolutions (ConvolutionParam::algorithm); empty: the library's choice
  unsigned long long seed = 42;
  std::string data_dir;       // empty: $FASHION_MNIST_DIR, then the Debian package's directory
  std::string log_file;       // empty: no log; .json -> JSON, anything else -> CSV
  std::string plot_file = "fashion_mnist.svg";  // beside the program unless --plot names it; empty: none
  bool plot_given = false;    // --plot was on the command line (else plot_file goes beside the program)
  bool help = false;
};

inline const char* Usage() {
  return "usage: fashion_mnist [options]\n"
         "Trains a small convnet (conv5x5x32-pool-conv5x5x64-pool-fc1024-fc10) on Fashion-MNIST.\n"
         "  --data DIR       directory of the IDX .gz files (default: $FASHION_MNIST_DIR, then\n"
         "                   /usr/share/datasets/fashion-mnist from the package dataset-fashion-mnist)\n"
         "  --device D       auto | cpu | gpu (auto: the GPU when one is present and this is the CUDA build)\n"
         "  --dtype T        fp32 (default) | fp16 | bf16: mixed precision on the GPU (fp16 / bf16 layers on\n"
         "                   tensor cores, fp32 master weights, update and loss; fp16 with loss scaling)\n"
         "  --epochs N       passes over the training set (default: 10 on the GPU, 2 on the CPU)\n"
         "  --limit N        train on the first N training images only (default 0: all)\n"
         "  --batch N        minibatch size (default 64)\n"
         "  --lr X           learning rate (default 0.05), SGD with momentum 0.9\n"
         "  --momentum X     SGD momentum (default 0.9)\n"
         "  --wd X           weight decay on the weights (default 5e-4)\n"
         "  --warmup N       ramp the learning rate up linearly over the first N minibatches (default 100;\n"
         "                   without it lr 0.05 with momentum 0.9 diverges in the first batches)\n"
         "  --schedule S     cosine (default): after the warm-up the learning rate falls to 0 along a half\n"
         "                   cosine over the run; constant: it stays at --lr\n"
         "  --dropout P      dropout probability after fc1 (default 0.5; 0 turns it off)\n"
         "  --bn             batch normalisation after each convolution\n"
         "  --augment        mirror a random half of the training images left to right, afresh each epoch\n"
         "  --threads N      CPU threads (default: all cores)\n"
         "  --gpus N         data parallel on N GPUs of this machine: one process per GPU (this one is rank 0),\n"
         "                   gradients averaged over NCCL; --batch is per GPU, so the global batch is N times\n"
         "                   it (default 1; needs the CUDA build with NCCL)\n"
         "  --profile        after training, print the time each layer's forward and backward took\n"
         "  --conv-algorithm NAME\n"
         "                   force this convolution algorithm on both convolutions (e.g. im2col_gemm; default:\n"
         "                   the library's choice per layer and pass)\n"
         "  --seed N         random seed for initialisation, shuffling and dropout (default 42)\n"
         "  --log FILE       per-epoch log with the run's settings, JSON when FILE ends in .json, CSV\n"
         "                   otherwise\n"
         "  --plot FILE      training curve as SVG (default: fashion_mnist.svg beside this program, in the\n"
         "                   build directory; --plot '' for none)\n"
         "  --help           this text\n";
}

namespace detail {

inline long long ParseInteger(const std::string& flag, const std::string& v, long long lo, long long hi) {
  errno = 0;
  char* end = nullptr;
  const long long x = std::strtoll(v.c_str(), &end, 10);
  if (v.empty() || *end != '\0' || errno != 0 || x < lo || x > hi)
    throw OptionsError(flag + " wants an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) +
                       "], got '" + v + "'");
  return x;
}

inline double ParseReal(const std::string& flag, const std::string& v, double lo, double hi) {
  errno = 0;
  char* end = nullptr;
  const double x = std::strtod(v.c_str(), &end);
  if (v.empty() || *end != '\0' || errno != 0 || !(x >= lo && x <= hi))
    throw OptionsError(flag + " wants a number in [" + std::to_string(lo) + ", " + std::to_string(hi) + "], got '" +
                       v + "'");
  return x;
}

}  // namespace detail

inline Options ParseOptions(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string flag = argv[i], value;
    bool has_value = false;
    if (const size_t eq = flag.find('='); flag.rfind("--", 0) == 0 && eq != std::string::npos) {
      value = flag.substr(eq + 1);
      flag = flag.substr(0, eq);
      has_value = true;
    }
    auto next = [&]() -> std::string {
      if (has_value) return value;
      if (i + 1 >= argc) throw OptionsError(flag + " needs a value");
      return argv[++i];
    };
    auto no_value = [&]() {
      if (has_value) throw OptionsError(flag + " takes no value");
    };
    using detail::ParseInteger;
    using detail::ParseReal;
    if (flag == "--help" || flag == "-h") {
      no_value();
      o.help = true;
    } else if (flag == "--bn") {
      no_value();
      o.batch_norm = true;
    } else if (flag == "--augment") {
      no_value();
      o.augment = true;
    } else if (flag == "--profile") {
      no_value();
      o.profile = true;
    } else if (flag == "--device") {
      const std::string d = next();
      if (d == "auto") o.device = DeviceChoice::kAuto;
      else if (d == "cpu") o.device = DeviceChoice::kCpu;
      else if (d == "gpu") o.device = DeviceChoice::kGpu;
      else throw OptionsError("--device wants auto, cpu or gpu, got '" + d + "'");
    } else if (flag == "--dtype") {
      const std::string d = next();
      if (d == "fp32") o.dtype = Precision::kFloat32;
      else if (d == "fp16") o.dtype = Precision::kFloat16;
      else if (d == "bf16") o.dtype = Precision::kBFloat16;
      else throw OptionsError("--dtype wants fp32, fp16 or bf16, got '" + d + "'");
    } else if (flag == "--epochs") {
      o.epochs = static_cast<int>(ParseInteger(flag, next(), 1, 100000));
    } else if (flag == "--limit") {
      o.limit = static_cast<long>(ParseInteger(flag, next(), 0, 1LL << 40));
    } else if (flag == "--batch") {
      o.batch = static_cast<int>(ParseInteger(flag, next(), 1, 1 << 16));
    } else if (flag == "--lr") {
      o.lr = ParseReal(flag, next(), 0.0, 100.0);
    } else if (flag == "--momentum") {
      o.momentum = ParseReal(flag, next(), 0.0, 0.999999);
    } else if (flag == "--wd") {
      o.weight_decay = ParseReal(flag, next(), 0.0, 1.0);
    } else if (flag == "--warmup") {
      o.warmup = static_cast<int>(ParseInteger(flag, next(), 0, 1 << 30));
    } else if (flag == "--schedule") {
      const std::string v = next();
      if (v == "cosine") o.cosine = true;
      else if (v == "constant") o.cosine = false;
      else throw OptionsError("--schedule wants cosine or constant, got '" + v + "'");
    } else if (flag == "--dropout") {
      o.dropout = ParseReal(flag, next(), 0.0, 0.95);
    } else if (flag == "--threads") {
      o.threads = static_cast<int>(ParseInteger(flag, next(), 1, 4096));
    } else if (flag == "--gpus") {
      o.gpus = static_cast<int>(ParseInteger(flag, next(), 1, 64));
    } else if (flag == "--seed") {
      o.seed = static_cast<unsigned long long>(ParseInteger(flag, next(), 0, 1LL << 62));
    } else if (flag == "--conv-algorithm") {
      o.conv_algorithm = next();
      // Empty would mean "not given": the library's choice.
      if (o.conv_algorithm.empty()) throw OptionsError("--conv-algorithm wants an algorithm's name, got ''");
    } else if (flag == "--data") {
      o.data_dir = next();
      // Empty would mean "not given" and fall back to $FASHION_MNIST_DIR or the default directory.
      if (o.data_dir.empty()) throw OptionsError("--data wants a directory, got ''");
    } else if (flag == "--log") {
      o.log_file = next();
    } else if (flag == "--plot") {
      o.plot_file = next();
      o.plot_given = true;
    } else {
      throw OptionsError("unknown option '" + std::string(argv[i]) + "' (try --help)");
    }
  }
  return o;
}

// The directory holding this program (the build directory), where outputs go by default: never the source
// tree, whatever the working directory. The working directory when /proc does not say.
inline std::filesystem::path ProgramDir() {
  std::error_code ec;
  const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec || exe.parent_path().empty() ? std::filesystem::current_path() : exe.parent_path();
}

// `path` made absolute (against the working directory), after checking that the file can be written: its
// directory exists and is writable, and the path is not a directory or an unwritable file. Checked before
// training, so that a bad --log or --plot costs nothing. Empty (no output) stays empty.
inline std::string ResolveOutputPath(const std::string& path, const std::string& flag) {
  if (path.empty()) return path;
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path file = fs::absolute(path, ec);
  if (ec) throw OptionsError(flag + " " + path + ": " + ec.message());
  const fs::path dir = file.parent_path();
  if (!fs::is_directory(dir, ec)) throw OptionsError(flag + " " + path + ": the directory " + dir.string() + " does not exist");
  if (fs::is_directory(file, ec)) throw OptionsError(flag + " " + path + " is a directory; give a file name");
  const bool exists = fs::exists(file, ec);
  if (access((exists ? file : dir).c_str(), W_OK) != 0)
    throw OptionsError(flag + " " + path + ": " + (exists ? "the file" : "the directory " + dir.string()) +
                       " is not writable");
  return file.string();
}

// The settings of a run, as name / value pairs in the order of Usage(), for the log's header.
inline std::vector<std::pair<std::string, std::string>> SettingsOf(const Options& o) {
  auto real = [](double x) {
    char b[32];
    std::snprintf(b, sizeof b, "%g", x);
    return std::string(b);
  };
  auto flag = [](bool b) { return std::string(b ? "true" : "false"); };
  return {{"dtype", PrecisionName(o.dtype)},
          {"epochs", std::to_string(o.epochs)},
          {"limit", std::to_string(o.limit)},
          {"batch", std::to_string(o.batch)},
          {"lr", real(o.lr)},
          {"momentum", real(o.momentum)},
          {"weight_decay", real(o.weight_decay)},
          {"warmup", std::to_string(o.warmup)},
          {"schedule", o.cosine ? "cosine" : "constant"},
          {"dropout", real(o.dropout)},
          {"batch_norm", flag(o.batch_norm)},
          {"augment", flag(o.augment)},
          {"threads", o.threads > 0 ? std::to_string(o.threads) : "default"},
          {"gpus", std::to_string(o.gpus)},
          {"conv_algorithm", o.conv_algorithm.empty() ? "default" : o.conv_algorithm},
          {"seed", std::to_string(o.seed)}};
}

}  // namespace fashion_mnist
