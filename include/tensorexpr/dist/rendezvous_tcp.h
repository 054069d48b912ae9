// dist/rendezvous_tcp.h — the TCP rendezvous (tcp:HOST:PORT): rank 0 listens, the others connect. Used
// through ShareFromRoot (rendezvous.h).
#pragma once
#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include "posix_io.h"
#include "world.h"

namespace tensorexpr {
namespace dist {
namespace detail {

// every other rank connects to rank 0 and says hello {magic, rank, world size}; once all
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
}  // namespace dist
}  // namespace tensorexpr
