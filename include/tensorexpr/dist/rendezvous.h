// dist/rendezvous.h — how the ranks of one job find each other: rank 0 publishes a few opaque bytes (NCCL's
// unique id) and every other rank receives them, through a file every rank can see or a TCP port on rank 0's
// host. WorldFromEnvironment() says which rank of which job this process is. Host-only, POSIX (Linux).
//
//   const WorldSpec me = WorldFromEnvironment();
//   std::vector<uint8_t> id = ShareFromRoot(me.rendezvous, me.rank, me.world_size, my_id_if_rank_0, 60.0);
#pragma once
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>
#include "posix_io.h"
#include "rendezvous_file.h"
#include "rendezvous_tcp.h"
#include "world.h"

namespace tensorexpr {
namespace dist {

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
