// bench/find_file.h — where the benchmarks find the files they read (peer scripts, the layer list), whether
// they run from the source tree, from bench/ or from the build directory.
#pragma once
#include <sys/stat.h>
#include <cstdlib>
#include <string>

namespace bench_files {

inline bool FileExists(const std::string& p) {
  struct stat st;
  return stat(p.c_str(), &st) == 0;
}

// The first of the candidate locations that exists (an environment variable overrides them all).
inline std::string FindFile(const char* env, const std::string& name) {
  if (const char* e = std::getenv(env)) return e;
#ifdef TE_BENCH_SOURCE_DIR
  if (FileExists(std::string(TE_BENCH_SOURCE_DIR) + "/" + name)) return std::string(TE_BENCH_SOURCE_DIR) + "/" + name;
#endif
  for (const std::string& dir : {std::string("bench/"), std::string("./"), std::string("../bench/")})
    if (FileExists(dir + name)) return dir + name;
  return "bench/" + name;
}

}  // namespace bench_files
