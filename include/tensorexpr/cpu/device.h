// cpu/device.h — what device-neutral code may ask of the CPU through its stream (the twin of the GPU's
// functions in cuda/stream.cuh): its name, how many threads a run may use, whether float products may
// be rounded to TF32 (never here), waiting for queued work (nothing is queued on the CPU), and a side
// stream (none).
#pragma once
#include <fstream>
#include <string>
#include "../fault.h"
#include "../stream.h"
#include "threads.h"

namespace tensorexpr {

// The processor's model name as /proc/cpuinfo gives it ("cpu" where there is none).
inline const std::string& DeviceName(Stream<cpu>*) {
  static const std::string name = [] {
    std::ifstream in("/proc/cpuinfo");
    for (std::string line; std::getline(in, line);) {
      const size_t colon = line.find(':');
      if (line.rfind("model name", 0) == 0 && colon != std::string::npos && colon + 2 <= line.size())
        return line.substr(colon + 2);
    }
    return std::string("cpu");
  }();
  return name;
}
inline int ThreadBudget(Stream<cpu>* s) {
  return s != nullptr && s->num_threads() > 0 ? s->num_threads() : GetNumThreads();
}

// While alive, this thread's CPU loops keep to the stream's thread budget. Device-generic code (an
// operator) opens one for whatever stream it runs on: for a GPU stream it does nothing.
class StreamThreadScope {
 public:
  explicit StreamThreadScope(Stream<cpu>* s) : limit_(s != nullptr ? s->num_threads() : 0) {}
  template <typename Device>
  explicit StreamThreadScope(Stream<Device>*) : limit_(0) {}

 private:
  ScopedThreadLimit limit_;
};
inline bool UsesTF32(Stream<cpu>*) { return false; }
inline bool UsesTF32x3(Stream<cpu>*) { return false; }
inline void WaitStream(Stream<cpu>*) {}
// Work that could overlap the stream's runs on the stream itself: its threads are already the budget's.
inline Stream<cpu>* ForkSideStream(Stream<cpu>*) { return nullptr; }
inline void JoinSideStream(Stream<cpu>*) {}
// The CPU checks operator inputs before the work starts: its kernels have no fault record (fault.h).
inline KernelFault* FaultRecord(Stream<cpu>*) { return nullptr; }

}  // namespace tensorexpr
