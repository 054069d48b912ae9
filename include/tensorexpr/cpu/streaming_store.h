// cpu/streaming_store.h — stores that bypass the caches, for outputs much larger than the caches. A plain
// store first reads the destination's cache line from memory (read for ownership) and later writes it
// back: a map `y = f(x)` moves three bytes for every two it means to. A streaming store writes whole
// lines straight to memory. Values are computed into a small buffer in L1 and leave it in 16-byte
// streaming stores of whole lines; partial lines at either end of a range take plain stores (a line
// written half one way and half the other would be flushed twice).
// Measured on a 16-core Xeon (Sapphire-Rapids-class) GPU host, float at 16 threads against memcpy: a
// broadcast add 0.78 -> 1.48 at 103 MB and 0.83 -> 1.06 at 1 GB; NCHW -> NHWC transposes 0.47 -> 1.17
// at 103 MB.
// Used only past kMinBytes of output, where the next reader will not find the output in cache anyway.
#pragma once
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include "../tensor.h"
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace tensorexpr {
namespace streaming_store {

#if defined(__SSE2__)
constexpr bool kAvailable = true;
#else
constexpr bool kAvailable = false;
#endif
constexpr index_t kLineBytes = 64;
// Output bytes from which an assignment streams: a little beyond the L2 caches of a 16-core host.
constexpr index_t kMinBytes = index_t(32) << 20;
// Elements of the L1 staging buffer: 2 KB.
template <typename DType>
constexpr index_t kChunk = 2048 / index_t(sizeof(DType));

// True when an assignment of `bytes` of DType through saver Saver should stream.
template <typename Saver, typename DType>
inline bool Pays(index_t bytes) {
  return kAvailable && std::is_same<Saver, sv::saveto>::value && std::is_trivially_copyable<DType>::value &&
         kLineBytes % index_t(sizeof(DType)) == 0 && bytes >= kMinBytes;
}

// Copies whole lines from `from` to the line-aligned `to`, past the caches.
inline void CopyLines(void* to, const void* from, index_t bytes) {
#if defined(__SSE2__)
  auto* o = static_cast<__m128i*>(to);
  const auto* i = static_cast<const __m128i*>(from);
  for (index_t k = 0; k < bytes / 16; ++k) _mm_stream_si128(o + k, _mm_loadu_si128(i + k));
#else
  std::memcpy(to, from, static_cast<size_t>(bytes));
#endif
}

// Streaming stores are weakly ordered: a thread fences before it reports its share done.
inline void Fence() {
#if defined(__SSE2__)
  _mm_sfence();
#endif
}

// n elements from `out` as [0, head) before the first line boundary, [head, lines_end) whole lines,
// and [lines_end, n) after the last.
struct Lines {
  index_t head, lines_end;
  template <typename DType>
  static Lines Of(const DType* out, index_t n) {
    constexpr index_t per_line = kLineBytes / index_t(sizeof(DType));
    const auto misaligned = static_cast<index_t>(reinterpret_cast<uintptr_t>(out) % kLineBytes);
    const index_t head = std::min(n, misaligned == 0 ? 0 : (kLineBytes - misaligned) / index_t(sizeof(DType)));
    return Lines{head, head + (n - head) / per_line * per_line};
  }
};

// out[i] = value(i) for i in [0, n): whole lines staged in L1 and streamed, the ends stored plainly.
// The caller fences (Fence) once its thread has stored all it will.
template <typename DType, typename Value>
inline void Store(DType* out, index_t n, const Value& value) {
  constexpr index_t chunk = kChunk<DType>;
  alignas(64) DType buf[static_cast<size_t>(chunk)];
  const Lines l = Lines::Of(out, n);
  for (index_t i = 0; i < l.head; ++i) out[i] = value(i);
  for (index_t i = l.head; i < l.lines_end; i += chunk) {
    const index_t m = std::min(chunk, l.lines_end - i);
    for (index_t k = 0; k < m; ++k) buf[k] = value(i + k);
    CopyLines(out + i, buf, m * index_t(sizeof(DType)));
  }
  for (index_t i = l.lines_end; i < n; ++i) out[i] = value(i);
}

// out[i] = from[i] for i in [0, n), `from` in cache: whole lines streamed, the ends stored plainly.
template <typename DType>
inline void Copy(DType* out, const DType* from, index_t n) {
  const Lines l = Lines::Of(out, n);
  for (index_t i = 0; i < l.head; ++i) out[i] = from[i];
  CopyLines(out + l.head, from + l.head, (l.lines_end - l.head) * index_t(sizeof(DType)));
  for (index_t i = l.lines_end; i < n; ++i) out[i] = from[i];
}

}  // namespace streaming_store
}  // namespace tensorexpr
