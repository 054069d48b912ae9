// fault.h — KernelFault: how a check that fails inside a GPU kernel becomes a tensorexpr::Error.
// A kernel cannot throw, and checking its inputs on the host first would cost a copy and a wait on every
// call. So the kernel records the first failure in its stream's fault record (host memory the device
// writes directly), and the stream's next Wait() turns it into an Error and clears it: the error arrives
// where a GPU result could first be read, as CUDA's own asynchronous errors do. On the CPU, where inputs
// are readable before the work starts, operators check them beforehand instead and no record exists.
#pragma once
#include <cstdint>
#include <sstream>
#include <string>
#include "base.h"

namespace tensorexpr {

// What failed, and in which operator: Describe() words the message. (The record holds no strings: a
// string literal named in device code has a device address, which the host cannot read.)
enum class FaultKind : int32_t {
  kNone = 0,
  kSoftmaxLabel = 1,  // SoftmaxOutput: a class label that is not a whole number in [0, limit)
};

struct KernelFault {
  int32_t kind = 0;         // a FaultKind; 0 until the first failure
  int32_t integral = 0;     // whether value was an integer (printed as one)
  int64_t index = 0;        // where: the element's position
  int64_t limit = 0;        // the bound it broke
  double value = 0;         // what it held

  // Keeps the first failure only: later ones (other threads, other elements) leave it as it is.
  TE_XINLINE void Record(FaultKind k, index_t at, double v, bool is_integer, index_t bound) {
#if defined(__CUDA_ARCH__)
    if (atomicCAS(reinterpret_cast<int*>(&kind), 0, static_cast<int>(k)) != 0) return;
#else
    if (kind != 0) return;
    kind = static_cast<int32_t>(k);
#endif
    index = at, value = v, integral = is_integer, limit = bound;
  }
};

// The message of a recorded fault; empty when none is recorded.
inline std::string Describe(const KernelFault& f, const char* where) {
  std::ostringstream os;
  switch (static_cast<FaultKind>(f.kind)) {
    case FaultKind::kNone:
      return std::string();
    case FaultKind::kSoftmaxLabel:
      os << "SoftmaxOutput: label[" << f.index << "] = ";
      if (f.integral) os << static_cast<long long>(f.value);
      else os << f.value;
      os << " is not a class index in [0, " << f.limit << ")";
      break;
    default:
      os << "unknown kernel fault " << f.kind;
  }
  os << " (checked on the " << where << ", reported at the stream's Wait())";
  return os.str();
}

}  // namespace tensorexpr
