// tensorexpr/ops/conv_select.h — which algorithm computes each pass of a convolution problem.
//
//   registry   ConvRegistry<Device, DType>: the algorithms in order of preference, im2col_gemm last (it
//              can always implement: the fallback). ListConvAlgorithms<Device, DType>() names them.
//   heuristic  by default the first algorithm that can implement the pass, fits the workspace limit and
//              is Recommended for the problem.
//   tuner      SetConvTuning(true) or TE_CONV_TUNE=1: the first call of a new problem times every
//              algorithm that can implement it (into scratch outputs) and keeps the fastest, as
//              Caffe2's cuDNN "find" and ARM Compute Library's CLTuner do.
//   cache      choices are remembered per ConvProblem::Key (which names the device). Tuned ones persist
//              in a text file: TE_CONV_CACHE=path (loaded on first use, rewritten after each new tuned
//              choice) or Load/SaveConvCache. A file that is not such a cache, or is damaged, is ignored
//              with a warning.
//   log        TE_LOG=conv or SetConvLog(sink): per new problem, every algorithm considered, why each
//              refused, the times when tuning, and the choice.
//   limits     an algorithm that needs more workspace than the problem allows is left out (the fallback
//              shrinks its chunks instead); while selection is deterministic (SetConvDeterministic, on by
//              default) so is every algorithm that may give different results from run to run.
// ConvolutionParam::algorithm forces one algorithm by name; it is an Error if it cannot implement a pass.
#pragma once
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>
#include <tensorexpr/base.h>
#include <tensorexpr/ops/conv_algorithm.h>

namespace tensorexpr {
namespace ops {

namespace detail {
// Invalidates every thread's memo of recent choices (a setting, the registry or the cache changed).
void BumpConvGeneration();
}  // namespace detail

// The algorithms of one device and dtype, most preferred first, the fallback last.
template <typename Device, typename DType>
class ConvRegistry {
 public:
  using Algorithm = ConvAlgorithm<Device, DType>;
  // The process's registry (built on first use with the built-in algorithms; never destroyed).
  static ConvRegistry& Get();
  // Puts `algorithm` first in the order of preference; its name must be new.
  void Add(std::unique_ptr<Algorithm> algorithm) {
    std::lock_guard<std::mutex> lock(mutex_);
    TE_CHECK(algorithm != nullptr, "ConvRegistry::Add: null algorithm");
    for (const auto& a : algorithms_)
      TE_CHECK(std::string(a->Name()) != algorithm->Name(), "ConvRegistry::Add: an algorithm named ",
               algorithm->Name(), " is registered already");
    algorithms_.insert(algorithms_.begin(), std::move(algorithm));
    detail::BumpConvGeneration();
  }
  // Removes the algorithm called `name` (not the fallback); false when there is none.
  bool Remove(const std::string& name) {
    std::lock_guard<std::mutex> lock(mutex_);
    for (size_t i = 0; i + 1 < algorithms_.size(); ++i) {
      if (name == algorithms_[i]->Name()) {
        algorithms_.erase(algorithms_.begin() + static_cast<std::ptrdiff_t>(i));
        detail::BumpConvGeneration();
        return true;
      }
    }
    return false;
  }
  std::vector<const Algorithm*> All() const {
    std::lock_guard<std::mutex> lock(mutex_);
    std::vector<const Algorithm*> v;
    for (const auto& a : algorithms_) v.push_back(a.get());
    return v;
  }
  const Algorithm* Find(const std::string& name) const {
    for (const Algorithm* a : All())
      if (name == a->Name()) return a;
    return nullptr;
  }
  const Algorithm* Fallback() const { return All().back(); }

 private:
  ConvRegistry();
  mutable std::mutex mutex_;
  std::vector<std::unique_ptr<Algorithm>> algorithms_;
};

template <typename Device, typename DType>
std::vector<std::string> ListConvAlgorithms() {
  std::vector<std::string> names;
  for (const auto* a : ConvRegistry<Device, DType>::Get().All()) names.push_back(a->Name());
  return names;
}

// Tuning mode: the first call of each new problem times the algorithms that can implement it.
void SetConvTuning(bool on);
// Deterministic selection (the default): algorithms whose results may vary from run to run are left out.
void SetConvDeterministic(bool on);
// Where the dispatch log goes: one call per line. An empty function turns the log off.
void SetConvLog(std::function<void(const std::string&)> sink);
// Reads the tuned choices saved in `path` (see the header note); returns how many were read.
size_t LoadConvCache(const std::string& path);
// Writes the tuned choices to `path`; throws Error when the file cannot be written.
void SaveConvCache(const std::string& path);
// Loads `path` now and rewrites it after every new tuned choice ("" : no file), as TE_CONV_CACHE does.
void SetConvCachePath(const std::string& path);
// Forgets every choice held in memory (the cache file stays as it is).
void ClearConvChoices();

}  // namespace ops
}  // namespace tensorexpr
