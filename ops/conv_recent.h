// ops/conv_recent.h — what a thread computed for the convolution problems it saw last. A network calls the
// same few problems over and over, and what is worked out per problem (the algorithm chosen, a kernel
// and its launch shape) does not change between the calls; kept per thread, a repeat costs comparisons,
// never a lock. The oldest entry makes room for a new one.
#pragma once
#include <cstddef>
#include <utility>
#include <vector>
#include <tensorexpr/ops/conv_problem.h>

namespace tensorexpr {
namespace ops {

// Values per (problem, pass, key): the key is whatever else the value depends on.
template <typename Key, typename Value, size_t kCapacity = 256>
class RecentConvProblems {
 public:
  // The value remembered for (problem, pass, key), or null; valid until the next Remember.
  const Value* Find(const ConvProblem& problem, ConvPass pass, const Key& key) const {
    for (const Entry& e : entries_)
      if (e.pass == pass && e.key == key && e.problem == problem) return &e.value;
    return nullptr;
  }
  const Value& Remember(const ConvProblem& problem, ConvPass pass, Key key, Value value) {
    if (entries_.size() >= kCapacity) entries_.erase(entries_.begin());
    entries_.push_back(Entry{problem, pass, std::move(key), std::move(value)});
    return entries_.back().value;
  }
  void Clear() { entries_.clear(); }

 private:
  struct Entry {
    ConvProblem problem;
    ConvPass pass;
    Key key;
    Value value;
  };
  std::vector<Entry> entries_;
};

}  // namespace ops
}  // namespace tensorexpr
