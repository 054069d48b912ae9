// ops/conv_select.h — how <tensorexpr/ops/conv_select.h> chooses (see there for the whole story): the
// registry's built-in algorithms, the selection state, and SelectConvAlgorithm, the choice per pass with a
// per-thread memo. The state's functions are compiled once, in ops/conv_select.cc.
#pragma once
#include <atomic>
#include <cstdint>
#include <functional>
#include <iterator>
#include <limits>
#include <map>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>
#include <tensorexpr/ops/conv_select.h>
#include "conv_im2col_gemm.h"
#include "conv_pointwise_gemm.h"
#include "conv_recent.h"
#include "conv_shifted_gemm.h"
#include "conv_winograd.h"
#include "cpu/conv_per_image.h"
#if !defined(__CUDACC__)  // CPU code only (GCC vectors and target pragmas); nvcc instantiates the GPU registry
#include "cpu/conv_direct.h"
#endif
#if defined(__CUDACC__)
#include "cuda/conv_direct.h"
#include "cuda/conv_stem_mma.h"
#include "cuda/conv_strided_dgrad.h"
#endif
#if defined(__CUDACC__) && defined(TE_HAVE_CUTLASS)
#include "conv_cutlass.h"
#endif

namespace tensorexpr {
namespace ops {

template <typename Device, typename DType>
ConvRegistry<Device, DType>& ConvRegistry<Device, DType>::Get() {
  static ConvRegistry* registry = new ConvRegistry();  // never destroyed: used until the process ends
  return *registry;
}

template <typename Device, typename DType>
ConvRegistry<Device, DType>::ConvRegistry() {
  algorithms_.emplace_back(new ConvPointwiseGemm<Device, DType>());
  if constexpr (std::is_same<Device, cpu>::value) {
#if !defined(__CUDACC__)
    algorithms_.emplace_back(new ConvCpuDirect<DType>());
#endif
    algorithms_.emplace_back(new ConvCpuPerImage<DType>());
  }
#if defined(__CUDACC__)
  if constexpr (std::is_same<Device, gpu>::value && gpu_direct::kDType<DType>) {
    algorithms_.emplace_back(new ConvGpuDirect<DType>());
    for (int i = gpu_direct::kHeuristicTiles; i < int(std::size(gpu_direct::kRegisterTiles)); ++i)
      algorithms_.emplace_back(new ConvGpuDirect<DType>(gpu_direct::kRegisterTiles[i]));
  }
  if constexpr (std::is_same<Device, gpu>::value && strided_dgrad::kDType<DType>)
    algorithms_.emplace_back(new ConvGpuStridedDataGrad<DType>());
  if constexpr (std::is_same<Device, gpu>::value && stem_mma::kDType<DType>)
    algorithms_.emplace_back(new ConvGpuStemMma<DType>());
#endif
  if constexpr (winograd::kDType<DType>) {
    algorithms_.emplace_back(new ConvWinograd<Device, DType, 2>());
    algorithms_.emplace_back(new ConvWinograd<Device, DType, 4>());
  }
  algorithms_.emplace_back(new ConvShiftedGemm<Device, DType>());
#if defined(__CUDACC__) && defined(TE_HAVE_CUTLASS)
  if constexpr (std::is_same<Device, gpu>::value && !std::is_same<DType, double>::value)
    algorithms_.emplace_back(new ConvCutlassImplicitGemm<DType>());
#endif
  algorithms_.emplace_back(new ConvIm2ColGemm<Device, DType>());
}

namespace detail {

// The selection's state, shared by every device and dtype (the keys tell them apart).
struct ConvChoice {
  std::string algorithm;
  bool tuned = false;  // tuned choices are the ones saved to the cache file
};

struct ConvSelectState {
  std::mutex mutex;
  // Bumped by every change that can alter a choice (settings, the registry, the cache): the per-thread
  // memo of SelectConvAlgorithm holds only while it is unchanged.
  std::atomic<uint64_t> generation{1};
  std::map<std::string, ConvChoice> choices;
  std::map<std::string, std::string> logged_forced;  // forced choices already logged
  bool tune = false;
  bool deterministic = true;
  std::function<void(const std::string&)> log;
  std::string cache_path;  // "" : no file
  bool cache_loaded = false;

  static ConvSelectState& Get();  // the process's one state (ops/conv_select.cc)
};

constexpr const char* kConvCacheHeader = "tensorexpr conv cache 1";

// A warning reaches the log when there is one, stderr otherwise. Caller holds the state's mutex.
void ConvWarn(ConvSelectState& st, const std::string& text);
// Reads the tuned choices of `path` into the state; a missing file is no cache yet, anything that is not
// a well-formed cache is ignored whole with a warning. Returns the entries read. Caller holds the mutex.
size_t LoadConvCacheLocked(ConvSelectState& st, const std::string& path);
// Writes every tuned choice to `path` (through a temporary file, so a reader never sees half of it).
void SaveConvCacheLocked(ConvSelectState& st, const std::string& path);

inline std::string FormatBytes(size_t bytes) { return std::to_string(bytes) + " bytes"; }


// SelectConvAlgorithm without the per-thread memo: the choice cache, and for a new problem the search.
template <typename Device, typename DType>
const ConvAlgorithm<Device, DType>* SelectConvAlgorithmLocked(
    const ConvRegistry<Device, DType>& registry, ConvSelectState& st, const ConvProblem& problem, ConvPass pass,
    const std::string& forced, const std::function<double(const ConvAlgorithm<Device, DType>&)>& time_ms) {
  using Algorithm = ConvAlgorithm<Device, DType>;
  std::lock_guard<std::mutex> lock(st.mutex);
  const std::string key = problem.Key(pass);
  const ConvStores only = ConvStores::Only(pass, ReqStore{true, false});

  if (!forced.empty()) {
    const Algorithm* a = registry.Find(forced);
    if (a == nullptr) {
      std::string names;
      for (const Algorithm* b : registry.All()) names += std::string(names.empty() ? "" : ", ") + b->Name();
      Fail("Convolution: algorithm \"", forced, "\" is not registered for ", problem.dtype, " on this device (",
           names, ")");
    }
    const ConvSupport s = a->CanImplement(problem, pass);
    TE_CHECK(s.ok, "Convolution: algorithm ", forced, " cannot implement the ", ConvPassName(pass), " pass of ", key,
             ": ", s.why);
    if (st.log && st.logged_forced.emplace(key, forced).second)
      st.log("tensorexpr conv: " + key + "\n  -> " + forced + " (forced by ConvolutionParam::algorithm)");
    return a;
  }

  if (!st.cache_loaded && !st.cache_path.empty()) {
    st.cache_loaded = true;
    detail::LoadConvCacheLocked(st, st.cache_path);
  }
  auto found = st.choices.find(key);
  if (found != st.choices.end() && st.tune && !found->second.tuned) {
    st.choices.erase(found);  // a heuristic choice, made before tuning was turned on: time them now
    found = st.choices.end();
  }
  if (found != st.choices.end()) {
    const Algorithm* a = registry.Find(found->second.algorithm);
    if (a != nullptr && a->CanImplement(problem, pass).ok) return a;
    detail::ConvWarn(st, "the cached choice " + found->second.algorithm + " for " + key +
                             " is not an algorithm that can implement it here; choosing again");
    st.choices.erase(found);
  }

  // A new problem: consider every algorithm, in order.
  std::ostringstream log;
  log << "tensorexpr conv: " << key << (st.tune ? " (tuning)" : "");
  const Algorithm* heuristic = nullptr;
  const Algorithm* fastest = nullptr;
  double fastest_ms = std::numeric_limits<double>::infinity();
  const std::vector<const Algorithm*> all = registry.All();
  for (const Algorithm* a : all) {
    log << "\n  " << a->Name() << ": ";
    const ConvSupport s = a->CanImplement(problem, pass);
    if (!s.ok) {
      log << "refused: " << s.why;
      continue;
    }
    if (st.deterministic && !a->Deterministic()) {
      log << "refused: its results may vary from run to run (selection is deterministic)";
      continue;
    }
    const size_t bytes = a->WorkspaceBytes(problem, only);
    if (bytes > problem.workspace_limit && a != all.back()) {
      log << "refused: needs " << detail::FormatBytes(bytes) << " of workspace, over the limit of "
          << detail::FormatBytes(problem.workspace_limit);
      continue;
    }
    const bool recommended = a->Recommended(problem, pass);
    log << "can implement, workspace " << detail::FormatBytes(bytes) << (recommended ? "" : ", not recommended");
    if (recommended && heuristic == nullptr) heuristic = a;
    if (st.tune) {
      double ms = std::numeric_limits<double>::infinity();
      try {
        ms = time_ms(*a);
      } catch (const std::exception& e) {
        log << ", failed when timed: " << e.what();
        continue;
      }
      log << ", " << ms << " ms";
      if (ms < fastest_ms) fastest_ms = ms, fastest = a;
    }
  }
  const Algorithm* chosen = st.tune && fastest != nullptr ? fastest : heuristic;
  if (chosen == nullptr) chosen = all.back();  // nothing recommended itself: the fallback
  const bool tuned = st.tune && fastest != nullptr;
  log << "\n  -> " << chosen->Name() << (tuned ? " (fastest)" : " (heuristic)");
  if (st.log) st.log(log.str());
  st.choices[key] = detail::ConvChoice{chosen->Name(), tuned};
  if (tuned && !st.cache_path.empty()) {
    try {
      detail::SaveConvCacheLocked(st, st.cache_path);
    } catch (const Error& e) {
      detail::ConvWarn(st, e.what());
    }
  }
  return chosen;
}
}  // namespace detail

// The algorithm for `pass` of `problem`. `forced` names one (ConvolutionParam::algorithm) or is empty.
// time_ms(algorithm) runs the pass once into scratch outputs and returns its time; the tuner calls it.
template <typename Device, typename DType>
const ConvAlgorithm<Device, DType>* SelectConvAlgorithm(
    const ConvProblem& problem, ConvPass pass, const std::string& forced,
    const std::function<double(const ConvAlgorithm<Device, DType>&)>& time_ms) {
  using Algorithm = ConvAlgorithm<Device, DType>;
  const ConvRegistry<Device, DType>& registry = ConvRegistry<Device, DType>::Get();
  auto& st = detail::ConvSelectState::Get();
  // Each thread remembers its recent choices (conv_recent.h): a repeated call costs comparisons, not a
  // key string and a lock. A change of generation forgets them.
  thread_local RecentConvProblems<std::string, const Algorithm*> recent;
  thread_local uint64_t recent_generation = 0;
  const uint64_t generation = st.generation.load(std::memory_order_relaxed);
  if (recent_generation != generation) recent.Clear(), recent_generation = generation;
  if (const Algorithm* const* known = recent.Find(problem, pass, forced)) return *known;
  const Algorithm* chosen = detail::SelectConvAlgorithmLocked<Device, DType>(registry, st, problem, pass, forced, time_ms);
  recent.Remember(problem, pass, forced, chosen);
  return chosen;
}

}  // namespace ops
}  // namespace tensorexpr
