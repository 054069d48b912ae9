// examples/fashion_mnist/idx_dataset.h — reads the (Fashion-)MNIST IDX files, gzip-compressed or not.
//
// IDX layout (big-endian): a 4-byte magic number 0x000008DD (0x08: unsigned bytes; DD: the number of
// dimensions), one 4-byte extent per dimension, then the bytes. Images are idx3 (count, rows, cols),
// labels idx1 (count). Files are read through zlib's gzopen / gzread, which also read uncompressed files
// as they are. Everything that can be wrong with a file is checked (magic, extents, truncation, the gzip
// CRC32 / size trailer, trailing bytes, labels out of range, image / label counts) and reported as a
// DataError naming the file, the directories searched and the package that provides the data; nothing
// here crashes on a bad file.
#pragma once
#include <zlib.h>
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace fashion_mnist {

// A data set that could not be found or read. what() is a complete message for the user.
struct DataError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Images as unsigned bytes, row-major (count, rows, cols), and their labels 0..9.
struct ImageSet {
  int64_t count = 0, rows = 0, cols = 0;
  std::vector<uint8_t> pixels;
  std::vector<uint8_t> labels;
  int64_t PixelsPerImage() const { return rows * cols; }
};

struct Dataset {
  ImageSet train, test;
  std::string directory;  // where the files were found
};

constexpr const char* kDefaultDataDir = "/usr/share/datasets/fashion-mnist";
constexpr const char* kDataHint =
    "Fashion-MNIST comes with the Debian package dataset-fashion-mnist (apt-get install dataset-fashion-mnist, "
    "installed in /usr/share/datasets/fashion-mnist); or download train-images-idx3-ubyte.gz, "
    "train-labels-idx1-ubyte.gz, t10k-images-idx3-ubyte.gz and t10k-labels-idx1-ubyte.gz "
    "(Fashion-MNIST or the original MNIST) into a directory and pass --data DIR or set FASHION_MNIST_DIR.";

// The directory to read: --data if given, else $FASHION_MNIST_DIR, else the Debian package's directory.
// `how` says which of the three it was, for messages.
inline std::string ChooseDataDir(const std::string& flag_value, std::string* how) {
  if (!flag_value.empty()) {
    *how = "from --data";
    return flag_value;
  }
  if (const char* env = std::getenv("FASHION_MNIST_DIR"); env != nullptr && env[0] != '\0') {
    *how = "from $FASHION_MNIST_DIR";
    return env;
  }
  *how = "the default; neither --data nor $FASHION_MNIST_DIR was given";
  return kDefaultDataDir;
}

namespace detail {

struct GzCloser {
  void operator()(gzFile_s* f) const { gzclose(f); }
};
using GzFile = std::unique_ptr<gzFile_s, GzCloser>;

// Opens dir/name, or dir/name without its ".gz" when only the unpacked file is there. Returns the path
// opened in *path; null when neither exists.
inline GzFile OpenIdx(const std::string& dir, const std::string& name, std::string* path) {
  const std::string base = dir.empty() || dir.back() == '/' ? dir : dir + "/";
  const std::string unpacked = name.substr(0, name.size() - 3);  // name ends in ".gz"
  for (const std::string& candidate : {base + name, base + unpacked}) {
    if (gzFile_s* f = gzopen(candidate.c_str(), "rb")) {
      *path = candidate;
      return GzFile(f);
    }
  }
  *path = base + name;
  return GzFile();
}

// Reads exactly n bytes; false on a short read or a zlib error (a corrupt or truncated .gz).
inline bool ReadExactly(gzFile_s* f, void* dst, int64_t n) {
  auto* out = static_cast<uint8_t*>(dst);
  while (n > 0) {
    const unsigned chunk = static_cast<unsigned>(n < (int64_t(1) << 30) ? n : (int64_t(1) << 30));
    const int got = gzread(f, out, chunk);
    if (got <= 0) return false;
    out += got;
    n -= got;
  }
  return true;
}

// What zlib says is wrong with the stream read so far; empty when nothing is. gzread returns a short count
// (or 0) both at a clean end and at one cut off early, even inside the 8-byte CRC32 / size trailer after
// the last data byte, so only gzerror tells a truncated .gz from a complete one.
inline std::string GzProblem(gzFile_s* f, const std::string& path) {
  int code = Z_OK;
  std::string zlib_says = gzerror(f, &code);
  if (code == Z_OK) return "";
  // zlib prefixes its message with the path, which our messages already give.
  if (zlib_says.compare(0, path.size() + 2, path + ": ") == 0) zlib_says.erase(0, path.size() + 2);
  if (code == Z_BUF_ERROR) return "truncated: the gzip stream ends early (zlib: " + zlib_says + ")";
  if (code == Z_ERRNO) return "read error (zlib: " + zlib_says + ")";
  return "corrupt gzip data (zlib: " + zlib_says + ")";
}

inline uint32_t BigEndian32(const uint8_t b[4]) {
  return (uint32_t(b[0]) << 24) | (uint32_t(b[1]) << 16) | (uint32_t(b[2]) << 8) | uint32_t(b[3]);
}

// One IDX file of unsigned bytes with `ndim` dimensions: its extents and its bytes.
struct IdxContents {
  std::vector<int64_t> extents;
  std::vector<uint8_t> bytes;
};

inline IdxContents ReadIdx(const std::string& dir, const std::string& where, const std::string& name, int ndim) {
  std::string path;
  GzFile f = OpenIdx(dir, name, &path);
  auto fail = [&](const std::string& what) -> DataError {
    return DataError("cannot read the data set: " + path + ": " + what + ".\nLooked in " + dir + " (" +
                     where + ").\n" + kDataHint);
  };
  if (!f) throw fail("no such file (nor its unpacked form without .gz)");
  // Reads n bytes or throws: zlib's own error when it has one, else `if_short` (a short but valid file).
  auto read = [&](void* dst, int64_t n, const std::string& if_short) {
    if (ReadExactly(f.get(), dst, n)) return;
    const std::string problem = GzProblem(f.get(), path);
    throw fail(problem.empty() ? if_short : problem);
  };
  uint8_t header[4];
  read(header, 4, "empty, truncated or not a valid gzip file");
  const uint32_t magic = BigEndian32(header);
  const uint32_t want = 0x0800u | uint32_t(ndim);
  if (magic != want) {
    char buf[128];
    std::snprintf(buf, sizeof buf, "bad IDX magic number 0x%08X, expected 0x%08X (unsigned bytes, %d dimension%s)",
                  magic, want, ndim, ndim == 1 ? "" : "s");
    throw fail(buf);
  }
  IdxContents c;
  int64_t total = 1;
  for (int d = 0; d < ndim; ++d) {
    read(header, 4, "truncated IDX header");
    const int64_t extent = BigEndian32(header);
    // Real files hold at most 60000 images of 28x28; anything far beyond is a corrupt header.
    if (extent <= 0 || extent > (int64_t(1) << 24))
      throw fail("implausible extent " + std::to_string(extent) + " in dimension " + std::to_string(d));
    c.extents.push_back(extent);
    total *= extent;
    if (total > (int64_t(1) << 32)) throw fail("implausible total size in the IDX header");
  }
  // The header is not trusted with the allocation: the data is read in chunks into a buffer that grows as
  // they arrive, so a header that promises 4 GB of a 100-byte file fails at the file's end, not in a 4 GB
  // allocation. (With gzip the file's size bounds nothing, so growing is the check that works for both.)
  const int64_t chunk = int64_t(1) << 16;
  for (int64_t have = 0; have < total;) {
    const int64_t n = std::min(chunk, total - have);
    c.bytes.resize(static_cast<size_t>(have + n));
    const int got = gzread(f.get(), c.bytes.data() + have, static_cast<unsigned>(n));
    if (got <= 0) {
      const std::string problem = GzProblem(f.get(), path);
      throw fail(!problem.empty() ? problem
                                  : "truncated: the header promises " + std::to_string(total) +
                                        " bytes of data but only " + std::to_string(have) + " follow it");
    }
    have += got;
  }
  // One more read reaches the end of the stream, where zlib checks the trailer: a missing or cut-off
  // trailer, or a wrong CRC32 / size, shows only in gzerror after this read.
  uint8_t extra;
  const int extra_read = gzread(f.get(), &extra, 1);
  if (const std::string problem = GzProblem(f.get(), path); !problem.empty()) throw fail(problem);
  if (extra_read != 0) throw fail("trailing bytes after the " + std::to_string(total) + " bytes of data");
  return c;
}

inline ImageSet ReadImageSet(const std::string& dir, const std::string& where, const std::string& images_name,
                             const std::string& labels_name) {
  IdxContents images = ReadIdx(dir, where, images_name, 3);
  IdxContents labels = ReadIdx(dir, where, labels_name, 1);
  const std::string base = dir.empty() || dir.back() == '/' ? dir : dir + "/";
  if (images.extents[0] != labels.extents[0])
    throw DataError("cannot read the data set: " + base + images_name + " holds " +
                    std::to_string(images.extents[0]) + " images but " + base + labels_name + " holds " +
                    std::to_string(labels.extents[0]) + " labels.\n" + kDataHint);
  if (images.extents[1] != 28 || images.extents[2] != 28)
    throw DataError("cannot read the data set: " + base + images_name + " holds " +
                    std::to_string(images.extents[1]) + "x" + std::to_string(images.extents[2]) +
                    " images; the network expects 28x28 (Fashion-MNIST or MNIST).\n" + kDataHint);
  for (size_t i = 0; i < labels.bytes.size(); ++i)
    if (labels.bytes[i] > 9)
      throw DataError("cannot read the data set: " + base + labels_name + ": label " + std::to_string(i) +
                      " is " + std::to_string(labels.bytes[i]) + ", outside 0..9.\n" + kDataHint);
  ImageSet s;
  s.count = images.extents[0];
  s.rows = images.extents[1];
  s.cols = images.extents[2];
  s.pixels = std::move(images.bytes);
  s.labels = std::move(labels.bytes);
  return s;
}

}  // namespace detail

// Reads the four files from `dir`; `where` says how dir was chosen (for the error message).
inline Dataset LoadDataset(const std::string& dir, const std::string& where) {
  Dataset d;
  d.directory = dir;
  d.train = detail::ReadImageSet(dir, where, "train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz");
  d.test = detail::ReadImageSet(dir, where, "t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz");
  return d;
}

}  // namespace fashion_mnist
