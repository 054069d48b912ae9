// tensorexpr/ops/param_text.h — how operator messages write a list of extents or parameters: "(2,3)", "(4,)", "()".
#pragma once
#include <string>
#include <vector>
#include <tensorexpr/base.h>

namespace tensorexpr {
namespace ops {
namespace detail {

inline std::string VecStr(const std::vector<index_t>& v) {
  std::string s = "(";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::to_string(v[i]);
  return s + (v.size() == 1 ? ",)" : ")");
}

}  // namespace detail
}  // namespace ops
}  // namespace tensorexpr
