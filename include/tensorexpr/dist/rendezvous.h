// dist/rendezvous.h — how the ranks of one job find each other: rank 0 publishes a few opaque bytes (NCCL's
// unique id) and every other rank receives them, through a file every rank can see or a TCP port on rank 0's
// host. WorldFromEnvironment() says which rank of which job this process is. Host-only, POSIX (Linux).
//
//   const WorldSpec me = WorldFromEnvironment();
//   std::vector<uint8_t> id = ShareFromRoot(me.rendezvous, me.rank, me.world_size, my_id_if_rank_0, 60.0);
#pragma once
#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>
#include <algorithm>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>
#include "../base.h"

namespace tensorexpr {
namespace dist {

// The environment that places a process in a job: RankProcesses::Launch (launch.h) sets it, and so can a
// cluster's own launcher.
inline constexpr const char* kRankEnv = "TENSOREXPR_RANK";
inline constexpr const char* kWorldSizeEnv = "TENSOREXPR_WORLD_SIZE";
inline constexpr const char* kLocalRankEnv = "TENSOREXPR_LOCAL_RANK";
inline constexpr const char* kRendezvousEnv = "TENSOREXPR_RENDEZVOUS";

// The most bytes a rendezvous carries (NCCL's id is 128): a larger size read from a file or a socket is
// corruption, not a reason to allocate.
inline constexpr size_t kMaxRendezvousBytes = size_t(1) << 20;

// Where the ranks of a job meet.
struct Rendezvous {
  enum class Kind { kFile, kTcp };
  Kind kind = Kind::kFile;
  std::string path;  // kFile: a file path every rank can see (a shared filesystem when ranks span hosts)
  std::string host;  // kTcp: rank 0's host name or IPv4 address
  int port = 0;      // kTcp: 1..65535

  // "file:/some/path" or "tcp:HOST:PORT"; anything else is an Error naming the spec and the accepted forms.
  static Rendezvous Parse(const std::string& spec);
  // Back to the spec form.
  std::string ToString() const;
};

// Which rank of which job this process is.
struct WorldSpec {
  int rank = 0, world_size = 1;
  int local_rank = 0;      // which GPU of this host: TENSOREXPR_LOCAL_RANK, by default the rank
  Rendezvous rendezvous;   // meaningful when world_size > 1
};

namespace detail {

// The integer `text` spells (decimal, an optional '-'), or nullopt. A value beyond long long saturates, so
// that range checks call it out of range rather than not a number.
inline std::optional<long long> ParseInteger(const std::string& text) {
  long long value = 0;
  const char* first = text.data();
  const char* last = first + text.size();
  const auto [end, ec] = std::from_chars(first, last, value);
  if (first == last || end != last) return std::nullopt;
  if (ec == std::errc::result_out_of_range) return text[0] == '-' ? LLONG_MIN : LLONG_MAX;
  if (ec != std::errc()) return std::nullopt;
  return value;
}

// strerror, safe to call from several threads (ranks run as threads in tests). strerror_r is the GNU
// variant (returns the text) or the XSI one (fills the buffer): the overloads take either.
inline std::string StrerrorText(const char* text, const char*, int) { return text; }
inline std::string StrerrorText(int rc, const char* buffer, int err) {
  return rc == 0 ? std::string(buffer) : Message("error ", err);
}
inline std::string ErrnoText(int err) {
  char buffer[256] = {};
  return StrerrorText(strerror_r(err, buffer, sizeof buffer), buffer, err);
}

// Closes its descriptor on every path out.
class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  Fd(Fd&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  Fd& operator=(Fd&& other) noexcept {
    if (this != &other) {
      Reset();
      fd_ = std::exchange(other.fd_, -1);
    }
    return *this;
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() { Reset(); }
  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  void Reset() noexcept {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }
  // Gives the descriptor up to the caller, who closes it.
  int Release() noexcept { return std::exchange(fd_, -1); }

 private:
  int fd_ = -1;
};

// The moment every wait of one rendezvous counts down to.
class Deadline {
 public:
  using Clock = std::chrono::steady_clock;
  // Beyond a year the clock arithmetic could overflow, and no job waits that long.
  explicit Deadline(double seconds)
      : end_(Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                std::chrono::duration<double>(std::min(seconds, 365.0 * 24 * 3600)))) {}
  bool Passed() const { return Clock::now() >= end_; }
  // Milliseconds left, rounded up so that a wait never wakes just short of the deadline and spins.
  int MillisecondsLeft() const {
    const double left = std::chrono::duration<double, std::milli>(end_ - Clock::now()).count();
    return left <= 0 ? 0 : static_cast<int>(std::min(std::ceil(left), double(INT_MAX)));
  }
  // Sleeps `step`, or less when the deadline is nearer: the pause between two polls.
  void SleepAtMost(std::chrono::milliseconds step) const {
    std::this_thread::sleep_for(std::min<Clock::duration>(step, std::max(end_ - Clock::now(), Clock::duration(0))));
  }

 private:
  Clock::time_point end_;
};

// Who is failing at what: every message of one ShareFromRoot call starts "rank R of W: rendezvous SPEC: ".
struct Context {
  std::string prefix;
  double timeout_seconds;
  template <typename... Args>
  [[noreturn]] void Fail(const Args&... args) const {
    ::tensorexpr::Fail(prefix, args...);
  }
};

// ---- The file rendezvous: rank 0 writes "tensorexpr-rendezvous 1\n<size>\n<blob>" and renames it into place.

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

// ---- The TCP rendezvous: every other rank connects to rank 0 and says hello {magic, rank, world size}; once all
// have, rank 0 answers each with {magic, status, its world size, id size} and the id. 32-bit big-endian words.

inline constexpr uint32_t kTcpMagic = 0x54455231;  // "TER1": the last byte is the protocol's version
enum TcpStatus : uint32_t { kAccepted = 0, kWorldMismatch = 1, kDuplicateRank = 2 };

enum class Io { kDone, kClosed, kTimedOut, kFailed };  // kFailed: the errno is in *err

// Waits until `fd` is ready for `events` or the deadline passes; a signal (EINTR) restarts the wait.
inline Io WaitFor(int fd, short events, const Deadline& deadline, int* err) {
  for (;;) {
    pollfd entry{fd, events, 0};
    const int n = ::poll(&entry, 1, deadline.MillisecondsLeft());
    if (n > 0) return Io::kDone;  // ready, or an error or hangup that the next call on fd reports
    if (n == 0 && deadline.Passed()) return Io::kTimedOut;
    if (n < 0 && errno != EINTR) {
      *err = errno;
      return Io::kFailed;
    }
  }
}

// Sends all of `data` on a non-blocking socket; MSG_NOSIGNAL: a peer that went away is an error, not SIGPIPE.
inline Io SendAll(int fd, const void* data, size_t size, const Deadline& deadline, int* err) {
  const char* p = static_cast<const char*>(data);
  while (size > 0) {
    const ssize_t n = ::send(fd, p, size, MSG_NOSIGNAL);
    if (n >= 0) {
      p += n;
      size -= static_cast<size_t>(n);
      continue;
    }
    if (errno == EINTR) continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK) {
      *err = errno;
      return Io::kFailed;
    }
    if (const Io waited = WaitFor(fd, POLLOUT, deadline, err); waited != Io::kDone) return waited;
  }
  return Io::kDone;
}

// Receives exactly `size` bytes from a non-blocking socket; kClosed when the peer closes first.
inline Io RecvAll(int fd, void* data, size_t size, const Deadline& deadline, int* err) {
  char* p = static_cast<char*>(data);
  while (size > 0) {
    const ssize_t n = ::recv(fd, p, size, 0);
    if (n > 0) {
      p += n;
      size -= static_cast<size_t>(n);
      continue;
    }
    if (n == 0) return Io::kClosed;
    if (errno == EINTR) continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK) {
      *err = errno;
      return Io::kFailed;
    }
    if (const Io waited = WaitFor(fd, POLLIN, deadline, err); waited != Io::kDone) return waited;
  }
  return Io::kDone;
}

inline std::string IoText(Io io, int err, double timeout_seconds) {
  switch (io) {
    case Io::kClosed: return "the connection was closed";
    case Io::kTimedOut: return Message("no progress within the ", timeout_seconds, " s timeout");
    default: return ErrnoText(err);
  }
}

template <size_t n>
inline Io SendWords(int fd, const uint32_t (&words)[n], const Deadline& deadline, int* err) {
  uint32_t wire[n];
  for (size_t i = 0; i < n; ++i) wire[i] = htonl(words[i]);
  return SendAll(fd, wire, sizeof wire, deadline, err);
}
template <size_t n>
inline Io RecvWords(int fd, uint32_t (&words)[n], const Deadline& deadline, int* err) {
  const Io io = RecvAll(fd, words, sizeof words, deadline, err);
  for (size_t i = 0; i < n; ++i) words[i] = ntohl(words[i]);
  return io;
}

// Rank 0: listens on the port, hears a hello from each other rank, then answers all of them with the blob.
// Nobody gets the id before every rank has been checked, so a misconfigured job fails at the rendezvous
// rather than in NCCL's initialisation.
inline void ServeTcp(const Context& cx, int port, int world_size, const std::vector<uint8_t>& blob,
                     const Deadline& deadline) {
  Fd listener(::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!listener.valid()) cx.Fail("cannot create a socket: ", ErrnoText(errno));
  // A port that the previous run's connections still hold (TIME_WAIT) can be listened on again at once.
  const int on = 1;
  if (::setsockopt(listener.get(), SOL_SOCKET, SO_REUSEADDR, &on, sizeof on) != 0) {
    cx.Fail("cannot set SO_REUSEADDR: ", ErrnoText(errno));
  }
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_ANY);
  address.sin_port = htons(static_cast<uint16_t>(port));
  if (::bind(listener.get(), reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0) {
    const int err = errno;
    cx.Fail("cannot listen on port ", port, ": ", ErrnoText(err),
            err == EADDRINUSE ? " (another program or another job uses it: give a free port)" : "");
  }
  if (::listen(listener.get(), SOMAXCONN) != 0) cx.Fail("cannot listen on port ", port, ": ", ErrnoText(errno));

  struct Peer {
    Fd fd;
    int rank;
    std::string address;
  };
  std::vector<Peer> peers;
  const size_t others = static_cast<size_t>(world_size - 1);
  int err = 0;
  while (peers.size() < others) {
    const Io waited = WaitFor(listener.get(), POLLIN, deadline, &err);
    if (waited == Io::kFailed) cx.Fail("cannot wait for connections on port ", port, ": ", ErrnoText(err));
    if (waited == Io::kTimedOut) {
      std::string heard;
      for (const Peer& peer : peers) heard += (heard.empty() ? " (rank " : ", rank ") + std::to_string(peer.rank);
      cx.Fail("waited ", cx.timeout_seconds, " s for the other ranks to connect to port ", port, ": heard from ",
              peers.size(), " of ", others, heard, heard.empty() ? "" : ")",
              "; is every rank running, with the same rendezvous, and can they reach this host's port ", port, "?");
    }
    sockaddr_in from{};
    socklen_t from_size = sizeof from;
    Fd connection(::accept4(listener.get(), reinterpret_cast<sockaddr*>(&from), &from_size,
                            SOCK_NONBLOCK | SOCK_CLOEXEC));
    if (!connection.valid()) {
      err = errno;
      // Nothing to accept after all (the peer gave up), a signal, or a connection reset before it was taken.
      if (err == EAGAIN || err == EWOULDBLOCK || err == EINTR || err == ECONNABORTED || err == EPROTO) continue;
      cx.Fail("cannot accept a connection on port ", port, ": ", ErrnoText(err));
    }
    char ip[INET_ADDRSTRLEN] = "?";
    ::inet_ntop(AF_INET, &from.sin_addr, ip, sizeof ip);
    const std::string from_text = Message(ip, ":", ntohs(from.sin_port));

    uint32_t hello[3];
    const Io io = RecvWords(connection.get(), hello, deadline, &err);
    if (io == Io::kClosed) continue;  // a peer that gave up, or a probe of the port: not a rank
    if (io != Io::kDone) cx.Fail("cannot hear which rank ", from_text, " is: ", IoText(io, err, cx.timeout_seconds));
    if (hello[0] != kTcpMagic) {
      cx.Fail("a connection from ", from_text, " does not speak the tensorexpr rendezvous protocol (does another "
              "program use port ", port, "?)");
    }
    const int64_t peer_rank = int32_t(hello[1]), peer_world = int32_t(hello[2]);
    // Refusals are answered as a courtesy (the peer then names the problem too); their failure changes nothing.
    auto refuse = [&](uint32_t status) {
      int ignored = 0;
      SendWords(connection.get(), {kTcpMagic, status, static_cast<uint32_t>(world_size), 0u}, deadline, &ignored);
    };
    if (peer_world != world_size) {
      refuse(kWorldMismatch);
      cx.Fail("rank ", peer_rank, " at ", from_text, " was started with a world of ", peer_world,
              " ranks, rank 0 with ", world_size, ": every rank needs the same world size");
    }
    if (peer_rank < 1 || peer_rank >= world_size) {
      cx.Fail(from_text, " says it is rank ", peer_rank, ", outside 1..", world_size - 1);
    }
    for (const Peer& peer : peers) {
      if (peer.rank == peer_rank) {
        refuse(kDuplicateRank);
        cx.Fail("two processes say they are rank ", peer_rank, " (from ", peer.address, " and ", from_text,
                "): every rank needs its own TENSOREXPR_RANK");
      }
    }
    peers.push_back(Peer{std::move(connection), static_cast<int>(peer_rank), from_text});
  }
  // Everyone is here: answer each with the id.
  for (const Peer& peer : peers) {
    Io io = SendWords(peer.fd.get(), {kTcpMagic, kAccepted, static_cast<uint32_t>(world_size),
                                      static_cast<uint32_t>(blob.size())}, deadline, &err);
    if (io == Io::kDone) io = SendAll(peer.fd.get(), blob.data(), blob.size(), deadline, &err);
    if (io != Io::kDone) {
      cx.Fail("cannot send the id to rank ", peer.rank, " at ", peer.address, ": ",
              IoText(io, err, cx.timeout_seconds));
    }
  }
}

// One attempt to connect to `target` before the deadline: the connected socket, or an invalid Fd with the reason
// in *err.
inline Fd TryConnect(const addrinfo& target, const Deadline& deadline, int* err) {
  Fd fd(::socket(target.ai_family, target.ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, target.ai_protocol));
  if (!fd.valid()) {
    *err = errno;
    return Fd();
  }
  if (::connect(fd.get(), target.ai_addr, target.ai_addrlen) != 0) {
    // A non-blocking connect goes on in the background (also after EINTR): wait for it, then read its outcome.
    if (errno != EINPROGRESS && errno != EINTR) {
      *err = errno;
      return Fd();
    }
    if (const Io io = WaitFor(fd.get(), POLLOUT, deadline, err); io != Io::kDone) {
      if (io == Io::kTimedOut) *err = ETIMEDOUT;
      return Fd();
    }
    int outcome = 0;
    socklen_t outcome_size = sizeof outcome;
    if (::getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &outcome, &outcome_size) != 0) outcome = errno;
    if (outcome != 0) {
      *err = outcome;
      return Fd();
    }
  }
  // Connecting to a port of this host that nobody listens on can, when the kernel happens to pick that same
  // port for our end, connect the socket to itself (TCP simultaneous open): that is no rank 0.
  sockaddr_storage mine{}, theirs{};
  socklen_t mine_size = sizeof mine, theirs_size = sizeof theirs;
  if (::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&mine), &mine_size) == 0 &&
      ::getpeername(fd.get(), reinterpret_cast<sockaddr*>(&theirs), &theirs_size) == 0 && mine_size == theirs_size &&
      std::memcmp(&mine, &theirs, mine_size) == 0) {
    *err = ECONNREFUSED;
    return Fd();
  }
  return fd;
}

// Errors worth another try: rank 0 may not be listening yet, or its host not yet reachable.
inline bool ConnectMayRecover(int err) {
  return err == ECONNREFUSED || err == ETIMEDOUT || err == ECONNRESET || err == ECONNABORTED ||
         err == EHOSTUNREACH || err == ENETUNREACH || err == EAGAIN || err == EINTR;
}

// The other ranks: connect to rank 0 (retrying until it listens), say hello, and read the id.
inline std::vector<uint8_t> JoinTcp(const Context& cx, const Rendezvous& where, int rank, int world_size,
                                    const Deadline& deadline) {
  const std::string target = where.host + ":" + std::to_string(where.port);
  const std::string service = std::to_string(where.port);
  std::string last_error;
  std::unique_ptr<addrinfo, void (*)(addrinfo*)> addresses(nullptr, ::freeaddrinfo);
  Fd connection;
  for (;;) {
    if (addresses == nullptr) {
      addrinfo hints{};
      hints.ai_family = AF_INET;
      hints.ai_socktype = SOCK_STREAM;
      addrinfo* found = nullptr;
      const int resolved = ::getaddrinfo(where.host.c_str(), service.c_str(), &hints, &found);
      addresses.reset(found);
      if (resolved == EAI_AGAIN) {
        last_error = ::gai_strerror(resolved);  // the name service is not answering yet: ask again
      } else if (resolved != 0) {
        cx.Fail("cannot resolve the host ", where.host, ": ", ::gai_strerror(resolved),
                resolved == EAI_SYSTEM ? " (" + ErrnoText(errno) + ")" : "");
      }
    }
    for (const addrinfo* a = addresses.get(); a != nullptr; a = a->ai_next) {
      int err = 0;
      connection = TryConnect(*a, deadline, &err);
      if (connection.valid()) break;
      if (!ConnectMayRecover(err)) cx.Fail("cannot connect to rank 0 at ", target, ": ", ErrnoText(err));
      last_error = ErrnoText(err);
    }
    if (connection.valid()) break;
    if (deadline.Passed()) {
      cx.Fail("waited ", cx.timeout_seconds, " s to connect to rank 0 at ", target, " (last attempt: ", last_error,
              "): is rank 0 running, and can this host reach ", target, " (is the port open)?");
    }
    deadline.SleepAtMost(std::chrono::milliseconds(10));
  }

  int err = 0;
  Io io = SendWords(connection.get(), {kTcpMagic, static_cast<uint32_t>(rank), static_cast<uint32_t>(world_size)},
                    deadline, &err);
  if (io != Io::kDone) cx.Fail("cannot tell rank 0 at ", target, " who this is: ", IoText(io, err, cx.timeout_seconds));
  uint32_t answer[4];
  io = RecvWords(connection.get(), answer, deadline, &err);
  if (io == Io::kTimedOut) {
    cx.Fail("waited ", cx.timeout_seconds, " s for rank 0 at ", target, " to send the id (it answers once every "
            "rank has connected): is every rank running, with the same rendezvous?");
  }
  if (io == Io::kClosed) {
    cx.Fail("rank 0 at ", target, " closed the connection without sending the id: it has failed (see its error)");
  }
  if (io != Io::kDone) cx.Fail("cannot hear from rank 0 at ", target, ": ", IoText(io, err, cx.timeout_seconds));
  if (answer[0] != kTcpMagic) {
    cx.Fail(target, " does not answer like a tensorexpr rank 0 (does another program use that port?)");
  }
  if (answer[1] == kWorldMismatch) {
    cx.Fail("rank 0 at ", target, " was started with a world of ", answer[2], " ranks, this rank with ", world_size,
            ": every rank needs the same world size");
  }
  if (answer[1] == kDuplicateRank) {
    cx.Fail("rank 0 at ", target, " already heard from another process that says it is rank ", rank,
            ": every rank needs its own TENSOREXPR_RANK");
  }
  if (answer[1] != kAccepted || answer[3] == 0 || answer[3] > kMaxRendezvousBytes) {
    cx.Fail("rank 0 at ", target, " answered with status ", answer[1], " and an id of ", answer[3], " bytes");
  }
  std::vector<uint8_t> blob(answer[3]);
  io = RecvAll(connection.get(), blob.data(), blob.size(), deadline, &err);
  if (io != Io::kDone) {
    cx.Fail("cannot read the id from rank 0 at ", target, ": ", IoText(io, err, cx.timeout_seconds));
  }
  return blob;
}

}  // namespace detail

inline Rendezvous Rendezvous::Parse(const std::string& spec) {
  auto bad = [&spec](const char* why) {
    return Error(Message("rendezvous \"", spec, "\": ", why, "; the accepted forms are file:/PATH (a file every "
                         "rank can see) and tcp:HOST:PORT (rank 0's host name or IPv4 address, a port 1..65535)"));
  };
  Rendezvous r;
  if (spec.rfind("file:", 0) == 0) {
    r.kind = Kind::kFile;
    r.path = spec.substr(5);
    if (r.path.empty()) throw bad("no path after file:");
    return r;
  }
  if (spec.rfind("tcp:", 0) == 0) {
    r.kind = Kind::kTcp;
    const std::string rest = spec.substr(4);
    const size_t colon = rest.rfind(':');
    if (colon == std::string::npos) throw bad("no port after the host");
    r.host = rest.substr(0, colon);
    if (r.host.empty()) throw bad("no host");
    if (r.host.find(':') != std::string::npos) throw bad("the host has a ':' (IPv6 addresses are not supported)");
    const std::optional<long long> port = detail::ParseInteger(rest.substr(colon + 1));
    if (!port) throw bad("the port is not a number");
    if (*port < 1 || *port > 65535) throw bad("the port is outside 1..65535");
    r.port = static_cast<int>(*port);
    return r;
  }
  throw bad("it starts with neither file: nor tcp:");
}

inline std::string Rendezvous::ToString() const {
  return kind == Kind::kFile ? "file:" + path : "tcp:" + host + ":" + std::to_string(port);
}

// Rank 0 publishes `blob`; every rank returns rank 0's blob (the others' `blob` is ignored). A world of one
// returns `blob` without any I/O. Errors start "rank R of W: rendezvous SPEC: " and say what was waited for.
inline std::vector<uint8_t> ShareFromRoot(const Rendezvous& where, int rank, int world_size,
                                          const std::vector<uint8_t>& blob, double timeout_seconds) {
  const detail::Context cx{Message("rank ", rank, " of ", world_size, ": rendezvous ", where.ToString(), ": "),
                           timeout_seconds};
  if (world_size < 1 || rank < 0 || rank >= world_size) {
    cx.Fail("a world needs at least one rank, and the rank must be in [0, world_size)");
  }
  if (!(timeout_seconds > 0)) cx.Fail("the timeout (", timeout_seconds, " s) must be positive");
  if (rank == 0 && blob.empty()) cx.Fail("rank 0 has nothing to share (an empty id)");
  if (rank == 0 && blob.size() > kMaxRendezvousBytes) {
    cx.Fail("an id of ", blob.size(), " bytes is more than a rendezvous carries (", kMaxRendezvousBytes, ")");
  }
  if (world_size == 1) return blob;
  const detail::Deadline deadline(timeout_seconds);
  if (where.kind == Rendezvous::Kind::kFile) {
    if (where.path.empty()) cx.Fail("no file path");
    if (rank != 0) return detail::AwaitFile(cx, where.path, deadline);
    detail::PublishFile(cx, where.path, blob);
    return blob;
  }
  if (where.host.empty() || where.port < 1 || where.port > 65535) cx.Fail("needs a host and a port 1..65535");
  if (rank != 0) return detail::JoinTcp(cx, where, rank, world_size, deadline);
  detail::ServeTcp(cx, where.port, world_size, blob, deadline);
  return blob;
}

// Removes a file rendezvous once the job is over (rank 0 leaves it: the others may not have read it yet); a
// missing file is fine, and a TCP rendezvous has nothing to remove.
inline void RemoveRendezvousFile(const Rendezvous& where) {
  if (where.kind != Rendezvous::Kind::kFile || where.path.empty()) return;
  if (::unlink(where.path.c_str()) != 0 && errno != ENOENT) {
    Fail("rendezvous ", where.ToString(), ": cannot remove ", where.path, ": ", detail::ErrnoText(errno));
  }
}

namespace detail {
// The value of environment variable `name` as an integer in [low, high]; anything else is an Error naming it.
inline int EnvInteger(const char* name, const char* text, long long low, long long high, const std::string& range) {
  const std::optional<long long> value = ParseInteger(text);
  TE_CHECK(value.has_value(), name, "=\"", text, "\" is not an integer");
  TE_CHECK(*value >= low && *value <= high, name, "=", text, " is outside ", range);
  return static_cast<int>(*value);
}
}  // namespace detail

// Which rank of which job this process is, from TENSOREXPR_RANK, TENSOREXPR_WORLD_SIZE, TENSOREXPR_LOCAL_RANK
// and TENSOREXPR_RENDEZVOUS. None set: a world of one. A world of several ranks needs all of RANK, WORLD_SIZE and
// RENDEZVOUS; a missing one, or a value that is not a number in range, is an Error naming the variable.
inline WorldSpec WorldFromEnvironment() {
  const char* rank = std::getenv(kRankEnv);
  const char* world = std::getenv(kWorldSizeEnv);
  const char* local = std::getenv(kLocalRankEnv);
  const char* rendezvous = std::getenv(kRendezvousEnv);
  WorldSpec spec;
  if (world == nullptr) {
    for (const char* name : {kRankEnv, kRendezvousEnv}) {
      const char* value = std::getenv(name);
      TE_CHECK(value == nullptr, name, "=", value, " is set but ", kWorldSizeEnv, " is not: set ", kRankEnv, ", ",
               kWorldSizeEnv, " and ", kRendezvousEnv, ", or none of them");
    }
  } else {
    spec.world_size = detail::EnvInteger(kWorldSizeEnv, world, 1, INT_MAX, "1..2147483647");
  }
  if (spec.world_size > 1) {
    for (const char* name : {kRankEnv, kRendezvousEnv}) {
      TE_CHECK(std::getenv(name) != nullptr, kWorldSizeEnv, "=", world, " but ", name, " is not set: a world of ",
               "several ranks needs ", kRankEnv, " and ", kRendezvousEnv, " too");
    }
  }
  if (rank != nullptr) {
    spec.rank = detail::EnvInteger(kRankEnv, rank, 0, spec.world_size - 1,
                                   Message("0..", spec.world_size - 1, " (", kWorldSizeEnv, "=", spec.world_size, ")"));
  }
  spec.local_rank =
      local == nullptr ? spec.rank : detail::EnvInteger(kLocalRankEnv, local, 0, INT_MAX, "0..2147483647");
  if (rendezvous != nullptr) {
    try {
      spec.rendezvous = Rendezvous::Parse(rendezvous);
    } catch (const Error& e) {
      Fail(kRendezvousEnv, ": ", e.what());
    }
  }
  return spec;
}

}  // namespace dist
}  // namespace tensorexpr
