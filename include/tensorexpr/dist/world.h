// dist/world.h — which rank of which job a process is, and where the ranks of a job meet: the types.
// Reading them from the environment and the rendezvous itself are rendezvous.h's.
#pragma once
#include <cstddef>
#include <string>

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

}  // namespace dist
}  // namespace tensorexpr
