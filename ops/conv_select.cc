// ops/conv_select.cc — the convolution selection's state and settings, compiled once into tensorexpr_ops:
// every device and dtype, and every user who includes ops/conv_select.h for another dtype, share them.
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include "conv_select.h"

namespace tensorexpr {
namespace ops {
namespace detail {

ConvSelectState& ConvSelectState::Get() {
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

void BumpConvGeneration() { ConvSelectState::Get().generation.fetch_add(1, std::memory_order_relaxed); }

void ConvWarn(ConvSelectState& st, const std::string& text) {
  const std::string line = "tensorexpr conv: warning: " + text;
  if (st.log) st.log(line); else std::fprintf(stderr, "%s\n", line.c_str());
}

size_t LoadConvCacheLocked(ConvSelectState& st, const std::string& path) {
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

void SaveConvCacheLocked(ConvSelectState& st, const std::string& path) {
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

}  // namespace detail

void SetConvTuning(bool on) {
  auto& st = detail::ConvSelectState::Get();
  std::lock_guard<std::mutex> lock(st.mutex);
  detail::BumpConvGeneration();
  st.tune = on;
}
void SetConvDeterministic(bool on) {
  auto& st = detail::ConvSelectState::Get();
  std::lock_guard<std::mutex> lock(st.mutex);
  detail::BumpConvGeneration();
  st.deterministic = on;
}
void SetConvLog(std::function<void(const std::string&)> sink) {
  auto& st = detail::ConvSelectState::Get();
  std::lock_guard<std::mutex> lock(st.mutex);
  detail::BumpConvGeneration();
  st.log = std::move(sink);
}
size_t LoadConvCache(const std::string& path) {
  auto& st = detail::ConvSelectState::Get();
  std::lock_guard<std::mutex> lock(st.mutex);
  return detail::LoadConvCacheLocked(st, path);
}
void SaveConvCache(const std::string& path) {
  auto& st = detail::ConvSelectState::Get();
  std::lock_guard<std::mutex> lock(st.mutex);
  detail::SaveConvCacheLocked(st, path);
}
void SetConvCachePath(const std::string& path) {
  auto& st = detail::ConvSelectState::Get();
  std::lock_guard<std::mutex> lock(st.mutex);
  detail::BumpConvGeneration();
  st.cache_path = path;
  st.cache_loaded = !path.empty();
  if (!path.empty()) detail::LoadConvCacheLocked(st, path);
}
void ClearConvChoices() {
  auto& st = detail::ConvSelectState::Get();
  std::lock_guard<std::mutex> lock(st.mutex);
  detail::BumpConvGeneration();
  st.choices.clear();
  st.logged_forced.clear();
  st.cache_loaded = false;
}

}  // namespace ops
}  // namespace tensorexpr
