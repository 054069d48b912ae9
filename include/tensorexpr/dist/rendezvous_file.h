// dist/rendezvous_file.h — the file rendezvous (file:PATH): rank 0 publishes, the others poll. Used through
// ShareFromRoot (rendezvous.h).
#pragma once
#include <fcntl.h>
#include <sys/stat.h>
#include "posix_io.h"
#include "world.h"

namespace tensorexpr {
namespace dist {
namespace detail {

// rank 0 writes "tensorexpr-rendezvous 1\n<size>\n<blob>" and renames it into place.

inline constexpr const char* kFileMagic = "tensorexpr-rendezvous 1\n";
inline constexpr size_t kMaxSizeDigits = 20;

// What the bytes of a rendezvous file hold: the blob once complete; nullopt while they are the start of a
// well-formed file (a shared filesystem may show a renamed file before all of its data); Error when malformed.
inline std::optional<std::vector<uint8_t>> ParseRendezvousFile(const Context& cx, const std::string& path,
                                                               const std::string& bytes) {
  const std::string magic = kFileMagic;
  if (bytes.compare(0, std::min(bytes.size(), magic.size()), magic, 0, std::min(bytes.size(), magic.size())) != 0) {
    cx.Fail(path, " is not a rendezvous file: it does not start with the line \"tensorexpr-rendezvous 1\"");
  }
  if (bytes.size() <= magic.size()) return std::nullopt;
  const size_t newline = bytes.find('\n', magic.size());
  const std::string size_text = bytes.substr(magic.size(), newline == std::string::npos ? std::string::npos
                                                                                        : newline - magic.size());
  auto is_digit = [](char c) { return c >= '0' && c <= '9'; };
  const bool digits_so_far =
      size_text.size() <= kMaxSizeDigits && std::all_of(size_text.begin(), size_text.end(), is_digit);
  if (digits_so_far && newline == std::string::npos) return std::nullopt;  // the size line is still arriving
  const std::optional<long long> size = digits_so_far ? ParseInteger(size_text) : std::nullopt;
  if (!size || *size < 1 || static_cast<unsigned long long>(*size) > kMaxRendezvousBytes) {
    cx.Fail(path, " is not a rendezvous file: its second line should be the size of the id (1..",
            kMaxRendezvousBytes, " bytes), not \"", size_text.substr(0, 40), "\"");
  }
  const size_t want = static_cast<size_t>(*size);
  const size_t have = bytes.size() - newline - 1;
  if (have < want) return std::nullopt;
  if (have > want) cx.Fail(path, " is not a rendezvous file: it holds ", have, " bytes after its header, not ", want);
  return std::vector<uint8_t>(bytes.begin() + static_cast<std::ptrdiff_t>(newline + 1), bytes.end());
}

// The contents of `path`, nullopt while it does not exist. Reads no more than a rendezvous file can hold (plus a
// byte, to see that it holds more): a wrong path may name something endless.
inline std::optional<std::string> ReadSmallFile(const Context& cx, const std::string& path) {
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) {
    const int err = errno;
    if (err == ENOENT) return std::nullopt;
    cx.Fail("cannot open ", path, ": ", ErrnoText(err));
  }
  const size_t limit = std::strlen(kFileMagic) + kMaxSizeDigits + 1 + kMaxRendezvousBytes + 1;
  std::string bytes;
  char chunk[4096];
  while (bytes.size() < limit) {
    const ssize_t n = ::read(fd.get(), chunk, std::min(sizeof chunk, limit - bytes.size()));
    if (n == 0) break;
    if (n < 0) {
      const int err = errno;
      if (err == EINTR) continue;
      cx.Fail("cannot read ", path, ": ", ErrnoText(err));
    }
    bytes.append(chunk, static_cast<size_t>(n));
  }
  return bytes;
}

// Rank 0: writes the file under a temporary name, flushes it to the disk, and renames it into place, so that a
// reader sees no file or all of it.
inline void PublishFile(const Context& cx, const std::string& path, const std::vector<uint8_t>& blob) {
  struct stat existing {};
  if (::lstat(path.c_str(), &existing) == 0) {
    cx.Fail(path, " already exists: left over from an earlier run? remove it or give a fresh path (the other ranks "
            "would read its stale id and try to join a job that is gone)");
  }
  if (errno != ENOENT) cx.Fail("cannot check whether ", path, " exists: ", ErrnoText(errno));

  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  // Removes the temporary file unless it was renamed into place.
  struct TmpFile {
    const std::string& name;
    bool renamed = false;
    ~TmpFile() {
      if (!renamed) ::unlink(name.c_str());
    }
  };
  Fd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
  if (!fd.valid()) cx.Fail("cannot create ", tmp, ": ", ErrnoText(errno));
  TmpFile guard{tmp};

  std::string contents = kFileMagic + std::to_string(blob.size()) + "\n";
  contents.append(blob.begin(), blob.end());
  for (size_t done = 0; done < contents.size();) {
    const ssize_t n = ::write(fd.get(), contents.data() + done, contents.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) cx.Fail("cannot write ", tmp, ": ", ErrnoText(errno));
    done += static_cast<size_t>(n);
  }
  if (::fsync(fd.get()) != 0) cx.Fail("cannot flush ", tmp, " to disk: ", ErrnoText(errno));
  // close() is where a network filesystem reports a failed write (EINTR: Linux has closed it all the same).
  if (::close(fd.Release()) != 0 && errno != EINTR) cx.Fail("cannot write ", tmp, ": ", ErrnoText(errno));
  if (::rename(tmp.c_str(), path.c_str()) != 0) cx.Fail("cannot rename ", tmp, " to ", path, ": ", ErrnoText(errno));
  guard.renamed = true;
}

// The other ranks: poll until the file is there and complete.
inline std::vector<uint8_t> AwaitFile(const Context& cx, const std::string& path, const Deadline& deadline) {
  for (;;) {
    const std::optional<std::string> bytes = ReadSmallFile(cx, path);
    if (bytes) {
      if (std::optional<std::vector<uint8_t>> blob = ParseRendezvousFile(cx, path, *bytes)) return *blob;
    }
    if (deadline.Passed()) {
      if (bytes) {
        cx.Fail("waited ", cx.timeout_seconds, " s for ", path, " to be complete, but it still holds only ",
                bytes->size(), " bytes: did rank 0 fail while writing it?");
      }
      cx.Fail("waited ", cx.timeout_seconds, " s for rank 0 to write ", path,
              ": is rank 0 running, and does every rank see that path (ranks on several hosts need a shared "
              "filesystem)?");
    }
    deadline.SleepAtMost(std::chrono::milliseconds(5));
  }
}


}  // namespace detail
}  // namespace dist
}  // namespace tensorexpr
