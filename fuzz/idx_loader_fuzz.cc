// fuzz/idx_loader_fuzz.cc — the Fashion-MNIST trainer's IDX / gzip loader (examples/fashion_mnist/
// idx_dataset.h) on arbitrary bytes, gzip-compressed or not. Only a DataError may come out; whatever
// loads must be what the header says (extents in range, as many bytes as they promise, labels 0..9).
// A header that promises more than the file holds must not allocate it first: libFuzzer's malloc
// limit (-malloc_limit_mb, by default its rss limit of 2 GB) reports such an allocation as a crash.
#include <unistd.h>
#include <cstdlib>
#include <cstdio>
#include <string>
#include "../examples/fashion_mnist/idx_dataset.h"
#include "fuzz_util.h"

namespace {

// A private directory for the files the loader opens, removed at exit. A plain array: the exit handler
// runs after static std::strings are destroyed.
char g_dir[] = "/tmp/te_idx_fuzz_XXXXXX";

std::string Dir() {
  static const bool made = [] {
    if (mkdtemp(g_dir) == nullptr) te_fuzz::Bug("mkdtemp failed");
    std::atexit([] {
      for (const char* f : {"images-idx3-ubyte.gz", "labels-idx1-ubyte.gz"})
        std::remove((std::string(g_dir) + "/" + f).c_str());
      rmdir(g_dir);
    });
    return true;
  }();
  (void)made;
  return g_dir;
}

void Write(const std::string& name, const uint8_t* bytes, size_t n) {
  FILE* f = std::fopen((Dir() + "/" + name).c_str(), "wb");
  if (f == nullptr) te_fuzz::Bug("cannot write the fuzz file");
  if (n > 0 && std::fwrite(bytes, 1, n, f) != n) te_fuzz::Bug("cannot write the fuzz file");
  std::fclose(f);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* bytes, size_t size) {
  namespace fm = fashion_mnist;
  if (size < 1) return 0;
  const int mode = bytes[0] % 3;  // 0: one idx1 file, 1: one idx3 file, 2: images and labels together
  ++bytes, --size;
  try {
    if (mode < 2) {
      const int ndim = mode == 0 ? 1 : 3;
      const std::string name = ndim == 1 ? "labels-idx1-ubyte.gz" : "images-idx3-ubyte.gz";
      Write(name, bytes, size);
      const fm::detail::IdxContents c = fm::detail::ReadIdx(Dir(), "fuzz", name, ndim);
      TE_FUZZ_CHECK(c.extents.size() == size_t(ndim));
      int64_t total = 1;
      for (int64_t e : c.extents) {
        TE_FUZZ_CHECK(e >= 1 && e <= (int64_t(1) << 24));
        total *= e;
      }
      TE_FUZZ_CHECK(c.bytes.size() == size_t(total));
    } else {
      // The first two bytes say where the images file ends and the labels file begins.
      if (size < 2) return 0;
      const size_t split = std::min<size_t>((size_t(bytes[0]) << 8 | bytes[1]), size - 2);
      Write("images-idx3-ubyte.gz", bytes + 2, split);
      Write("labels-idx1-ubyte.gz", bytes + 2 + split, size - 2 - split);
      const fm::ImageSet s = fm::detail::ReadImageSet(Dir(), "fuzz", "images-idx3-ubyte.gz", "labels-idx1-ubyte.gz");
      TE_FUZZ_CHECK(s.rows == 28 && s.cols == 28 && s.count >= 1);
      TE_FUZZ_CHECK(s.pixels.size() == size_t(s.count * 28 * 28) && s.labels.size() == size_t(s.count));
      for (uint8_t l : s.labels) TE_FUZZ_CHECK(l <= 9);
    }
  } catch (const fm::DataError&) {
  }
  return 0;
}
