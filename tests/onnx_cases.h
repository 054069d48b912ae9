// onnx_cases.h — reads the ONNX oracle's reference cases (tools/onnx_cases.py writes them at build time:
// random configurations of one-node ONNX models run through onnxruntime or ONNX's reference evaluator).
// The file's path is compiled in (TE_ONNX_CASES_FILE); TE_ONNX_CASES=<path> overrides it.
//
//   const OnnxCases& all = LoadOnnxCases();
//   if (!all.available) { WARN(OnnxSkipMessage(all)); return; }     // no Python packages: skip, saying why
//   for (const OnnxCase* c : all.Of("Softmax")) { c->Int("axis", -1); c->In("X"); c->Out("Y"); ... }
#pragma once
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>
#include <tensorexpr/tensorexpr.h>

namespace te_test {

struct OnnxTensor {
  std::string name;
  std::vector<tensorexpr::index_t> shape;
  std::vector<double> values;  // row-major
  int rank() const { return static_cast<int>(shape.size()); }
  template <int dim>
  tensorexpr::Shape<dim> ShapeAs() const {
    tensorexpr::Shape<dim> s;
    REQUIRE(rank() == dim);
    for (int i = 0; i < dim; ++i) s[i] = shape[static_cast<size_t>(i)];
    return s;
  }
};

struct OnnxCase {
  std::string op, runner;
  int index = 0;  // among the cases of its op, for messages
  std::map<std::string, std::vector<double>> attrs;
  std::map<std::string, std::string> sattrs;
  std::vector<OnnxTensor> inputs, outputs;

  bool Has(const std::string& name) const { return attrs.count(name) != 0 || sattrs.count(name) != 0; }
  long long Int(const std::string& name, long long fallback) const {
    auto it = attrs.find(name);
    return it == attrs.end() ? fallback : static_cast<long long>(it->second.at(0));
  }
  double Float(const std::string& name, double fallback) const {
    auto it = attrs.find(name);
    return it == attrs.end() ? fallback : it->second.at(0);
  }
  std::string String(const std::string& name, const std::string& fallback) const {
    auto it = sattrs.find(name);
    return it == sattrs.end() ? fallback : it->second;
  }
  const OnnxTensor* FindIn(const std::string& name) const {
    for (const OnnxTensor& t : inputs)
      if (t.name == name) return &t;
    return nullptr;
  }
  const OnnxTensor& In(const std::string& name) const {
    const OnnxTensor* t = FindIn(name);
    if (t == nullptr) FAIL("ONNX case " << op << " #" << index << " has no input " << name);
    return *t;
  }
  const OnnxTensor& Out(size_t i = 0) const {
    if (i >= outputs.size()) FAIL("ONNX case " << op << " #" << index << " has no output " << i);
    return outputs[i];
  }
  // "Softmax #3 (onnxruntime) axis=-1", for INFO.
  std::string Describe() const {
    std::ostringstream os;
    os << op << " #" << index << " (" << runner << ")";
    for (const auto& a : attrs) {
      os << " " << a.first << "=";
      for (size_t i = 0; i < a.second.size(); ++i) os << (i ? "," : "") << a.second[i];
    }
    for (const auto& a : sattrs) os << " " << a.first << "=" << a.second;
    for (const OnnxTensor& t : inputs) {
      os << " " << t.name << "(";
      for (size_t i = 0; i < t.shape.size(); ++i) os << (i ? "," : "") << t.shape[i];
      os << ")";
    }
    return os.str();
  }
};

struct OnnxCases {
  bool available = false;
  std::string why;  // when not available
  std::vector<OnnxCase> cases;
  std::vector<const OnnxCase*> Of(const std::string& op) const {
    std::vector<const OnnxCase*> r;
    for (const OnnxCase& c : cases)
      if (c.op == op) r.push_back(&c);
    return r;
  }
};

namespace onnx_detail {
inline OnnxTensor ReadTensor(std::istringstream& head, std::istream& in) {
  OnnxTensor t;
  int rank = 0;
  head >> t.name >> rank;
  size_t n = 1;
  for (int i = 0; i < rank; ++i) {
    tensorexpr::index_t d = 0;
    head >> d;
    t.shape.push_back(d);
    n *= static_cast<size_t>(d);
  }
  std::string line;
  std::getline(in, line);
  std::istringstream values(line);
  std::string v;
  while (values >> v) t.values.push_back(std::strtod(v.c_str(), nullptr));  // also reads nan / inf
  if (t.values.size() != n) throw tensorexpr::Error("ONNX cases: tensor " + t.name + " has the wrong count");
  return t;
}

inline OnnxCases Parse(const std::string& path) {
  OnnxCases r;
  std::ifstream in(path);
  if (!in) {
    r.why = "cannot open " + path + " (built by tools/onnx_cases.py)";
    return r;
  }
  std::string line;
  std::getline(in, line);
  if (line != "tensorexpr-onnx-cases 1") {
    r.why = path + " is not a cases file of this version";
    return r;
  }
  std::getline(in, line);
  if (line != "status ok") {
    r.why = line.substr(line.find(' ') + 1);
    return r;
  }
  std::map<std::string, int> counts;
  OnnxCase c;
  while (std::getline(in, line)) {
    std::istringstream head(line);
    std::string kind;
    head >> kind;
    if (kind == "case") {
      c = OnnxCase();
      head >> c.op >> c.runner;
      c.index = counts[c.op]++;
    } else if (kind == "attr") {
      std::string name;
      size_t n = 0;
      head >> name >> n;
      std::vector<double>& v = c.attrs[name];
      for (size_t i = 0; i < n; ++i) {
        double x = 0;
        head >> x;
        v.push_back(x);
      }
    } else if (kind == "sattr") {
      std::string name;
      head >> name;
      head >> c.sattrs[name];
    } else if (kind == "in") {
      c.inputs.push_back(ReadTensor(head, in));
    } else if (kind == "out") {
      c.outputs.push_back(ReadTensor(head, in));
    } else if (kind == "end") {
      r.cases.push_back(c);
    }
  }
  r.available = true;
  return r;
}
}  // namespace onnx_detail

inline const OnnxCases& LoadOnnxCases() {
  static const OnnxCases cases = [] {
    const char* env = std::getenv("TE_ONNX_CASES");
#if defined(TE_ONNX_CASES_FILE)
    return onnx_detail::Parse(env ? env : TE_ONNX_CASES_FILE);
#else
    return onnx_detail::Parse(env ? env : "onnx_cases.txt");
#endif
  }();
  return cases;
}

// What a case prints when the oracle is missing; tools/test.sh counts these lines as skipped tests.
inline std::string OnnxSkipMessage(const OnnxCases& c) { return "skipped (ONNX oracle unavailable): " + c.why; }

}  // namespace te_test

namespace te_test {
// Calls fn(std::integral_constant<int, rank>{}) for a rank of 1 to 5 known only at run time.
template <typename Fn>
void WithRank(int rank, Fn&& fn) {
  switch (rank) {
    case 1: fn(std::integral_constant<int, 1>{}); return;
    case 2: fn(std::integral_constant<int, 2>{}); return;
    case 3: fn(std::integral_constant<int, 3>{}); return;
    case 4: fn(std::integral_constant<int, 4>{}); return;
    case 5: fn(std::integral_constant<int, 5>{}); return;
  }
  FAIL("rank " << rank << " is not one the operators take (1 to 5)");
}
// Calls fn(std::integral_constant<int, axis>{}) for an axis of a rank-dim tensor (negative counts from the
// end, as in ONNX) known only at run time.
template <int dim, typename Fn>
void WithAxis(int axis, Fn&& fn) {
  if (axis < 0) axis += dim;
  REQUIRE((0 <= axis && axis < dim));
  WithRank(axis + 1, [&](auto a1) {
    constexpr int a = decltype(a1)::value - 1;
    if constexpr (a < dim) fn(std::integral_constant<int, a>{});
  });
}
}  // namespace te_test
