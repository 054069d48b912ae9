// ops/conv_select.h — which algorithm computes each pass of a convolution problem.
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
#include <cmath>
#include <cstdio>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>
#include <tensorexpr/base.h>
#include "conv_algorithm.h"
#include "conv_im2col_gemm.h"
#include "conv_pointwise_gemm.h"
#include "cpu/conv_per_image.h"

namespace tensorexpr {
namespace ops {

namespace detail {
inline void BumpConvGeneration();
}  // namespace detail

// The algorithms of one device and dtype, most preferred first, the fallback last.
template <typename Device, typename DType>
class ConvRegistry {
 public:
  using Algorithm = ConvAlgorithm<Device, DType>;
  static ConvRegistry& Get() {
    static ConvRegistry* registry = new ConvRegistry();  // never destroyed: used until the process ends
    return *registry;
  }
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
  ConvRegistry() {
    algorithms_.emplace_back(new ConvPointwiseGemm<Device, DType>());
    if constexpr (std::is_same<Device, cpu>::value) algorithms_.emplace_back(new ConvCpuPerImage<DType>());
    algorithms_.emplace_back(new ConvIm2ColGemm<Device, DType>());
  }
  mutable std::mutex mutex_;
  std::vector<std::unique_ptr<Algorithm>> algorithms_;
};

template <typename Device, typename DType>
std::vector<std::string> ListConvAlgorithms() {
  std::vector<std::string> names;
  for (const auto* a : ConvRegistry<Device, DType>::Get().All()) names.push_back(a->Name());
  return names;
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

  static ConvSelectState& Get() {
    static ConvSelectState* state = [] {
      auto* s = new ConvSelectState();
      if (const char* t = std::getenv("TE_CONV_TUNE")) s->tune = std::string(t) == "1";
      if (const char* l = std::getenv("TE_LOG")) {
        const std::string topics = std::string(",") + l + ",";
        if (topics.find(",conv,") != std::string::npos || topics.find(",all,") != std::string::npos)
          s->log = [](const std::string& line) { std::fprintf(stderr, "%s\n", line.c_str()); };
      }
      if (const char* c = std::getenv("TE_CONV_CACHE")) s->cache_path = c;
      return s;
    }();
    return *state;
  }
};

inline void BumpConvGeneration() { ConvSelectState::Get().generation.fetch_add(1, std::memory_order_relaxed); }

constexpr const char* kConvCacheHeader = "tensorexpr conv cache 1";

// A warning reaches the log when there is one, stderr otherwise. Caller holds the state's mutex.
inline void ConvWarn(ConvSelectState& st, const std::string& text) {
  const std::string line = "tensorexpr conv: warning: " + text;
  if (st.log) st.log(line); else std::fprintf(stderr, "%s\n", line.c_str());
}

// Reads the tuned choices of `path` into the state; a missing file is no cache yet, anything that is not
// a well-formed cache is ignored whole with a warning. Returns the entries read. Caller holds the mutex.
inline size_t LoadConvCacheLocked(ConvSelectState& st, const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return 0;
  std::string line;
  if (!std::getline(in, line) || line != kConvCacheHeader) {
    ConvWarn(st, "ignored " + path + ": not a convolution cache (its first line is not \"" + kConvCacheHeader + "\")");
    return 0;
  }
  std::map<std::string, std::string> read;
  for (size_t number = 2; std::getline(in, line); ++number) {
    if (line.empty()) continue;
    const size_t tab = line.find('\t');
    if (tab == std::string::npos || tab == 0 || tab + 1 == line.size() ||
        line.find('\t', tab + 1) != std::string::npos || line.size() > 4096) {
      ConvWarn(st, "ignored " + path + ": line " + std::to_string(number) + " is not \"<problem>\\t<algorithm>\"");
      return 0;
    }
    read[line.substr(0, tab)] = line.substr(tab + 1);
  }
  for (const auto& kv : read) st.choices[kv.first] = ConvChoice{kv.second, true};
  BumpConvGeneration();
  return read.size();
}

// Writes every tuned choice to `path` (through a temporary file, so a reader never sees half of it).
inline void SaveConvCacheLocked(ConvSelectState& st, const std::string& path) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    TE_CHECK(out.good(), "SaveConvCache: cannot write ", tmp);
    out << kConvCacheHeader << "\n";
    for (const auto& kv : st.choices)
      if (kv.second.tuned) out << kv.first << "\t" << kv.second.algorithm << "\n";
    TE_CHECK(out.good(), "SaveConvCache: writing ", tmp, " failed");
  }
  TE_CHECK(std::rename(tmp.c_str(), path.c_str()) == 0, "SaveConvCache: cannot rename ", tmp, " to ", path);
}

inline std::string FormatBytes(size_t bytes) { return std::to_string(bytes) + " bytes"; }

}  // namespace detail

// Tuning mode: the first call of each new problem times the algorithms that can implement it.
inline void SetConvTuning(bool on) {
  auto& st = detail::ConvSelectState::Get();
  std::lock_guard<std::mutex> lock(st.mutex);
  detail::BumpConvGeneration();
  st.tune = on;
}
// Deterministic selection (the default): algorithms whose results may vary from run to run are left out.
inline void SetConvDeterministic(bool on) {
  auto& st = detail::ConvSelectState::Get();
  std::lock_guard<std::mutex> lock(st.mutex);
  detail::BumpConvGeneration();
  st.deterministic = on;
}
// Where the dispatch log goes: one call per line. An empty function turns the log off.
inline void SetConvLog(std::function<void(const std::string&)> sink) {
  auto& st = detail::ConvSelectState::Get();
  std::lock_guard<std::mutex> lock(st.mutex);
  detail::BumpConvGeneration();
  st.log = std::move(sink);
}
// Reads the tuned choices saved in `path` (see the header note); returns how many were read.
inline size_t LoadConvCache(const std::string& path) {
  auto& st = detail::ConvSelectState::Get();
  std::lock_guard<std::mutex> lock(st.mutex);
  return detail::LoadConvCacheLocked(st, path);
}
// Writes the tuned choices to `path`; throws Error when the file cannot be written.
inline void SaveConvCache(const std::string& path) {
  auto& st = detail::ConvSelectState::Get();
  std::lock_guard<std::mutex> lock(st.mutex);
  detail::SaveConvCacheLocked(st, path);
}
// Loads `path` now and rewrites it after every new tuned choice ("" : no file), as TE_CONV_CACHE does.
inline void SetConvCachePath(const std::string& path) {
  auto& st = detail::ConvSelectState::Get();
  std::lock_guard<std::mutex> lock(st.mutex);
  detail::BumpConvGeneration();
  st.cache_path = path;
  st.cache_loaded = !path.empty();
  if (!path.empty()) detail::LoadConvCacheLocked(st, path);
}
// Forgets every choice held in memory (the cache file stays as it is).
inline void ClearConvChoices() {
  auto& st = detail::ConvSelectState::Get();
  std::lock_guard<std::mutex> lock(st.mutex);
  detail::BumpConvGeneration();
  st.choices.clear();
  st.logged_forced.clear();
  st.cache_loaded = false;
}

namespace detail {

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
  // A network calls the same few problems over and over: each thread remembers its recent choices, so a
  // repeated call costs a comparison, not a key string and a lock.
  struct Recent {
    ConvProblem problem;
    ConvPass pass;
    std::string forced;
    const Algorithm* algorithm;
  };
  thread_local std::vector<Recent> recent;
  thread_local uint64_t recent_generation = 0;
  const uint64_t generation = st.generation.load(std::memory_order_relaxed);
  if (recent_generation != generation) recent.clear(), recent_generation = generation;
  for (const Recent& r : recent)
    if (r.pass == pass && r.problem == problem && r.forced == forced) return r.algorithm;
  const Algorithm* chosen = detail::SelectConvAlgorithmLocked<Device, DType>(registry, st, problem, pass, forced, time_ms);
  if (recent.size() >= 64) recent.erase(recent.begin());
  recent.push_back(Recent{problem, pass, forced, chosen});
  return chosen;
}

}  // namespace ops
}  // namespace tensorexpr
