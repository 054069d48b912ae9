// tensorexpr/ops/param_text.h — how operator messages write a list of extents or parameters: "(2,3)", "(4,)", "()";
// and the per-dimension parameters of the operators with windows (convolution, deconvolution, pooling).
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

// A per-dimension parameter `name` of operator `op`: empty means `fill` everywhere, otherwise one value per
// spatial dimension (an Error when the count differs).
inline std::vector<index_t> PerDim(const char* op, const std::vector<index_t>& v, size_t nd, index_t fill,
                                   const char* name) {
  if (v.empty()) return std::vector<index_t>(nd, fill);
  TE_CHECK(v.size() == nd, op, ": ", name, " ", VecStr(v), " has ", v.size(), " entries but the kernel has ", nd,
           " spatial dimensions");
  return v;
}

}  // namespace detail
}  // namespace ops
}  // namespace tensorexpr
