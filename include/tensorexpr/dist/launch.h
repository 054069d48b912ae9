// dist/launch.h — one process per GPU on this host: RankProcesses::Launch starts ranks 1..N-1 as child
// processes (usually of this same program: SelfProgram()) and makes this process rank 0; each learns its place
// from the environment that WorldFromEnvironment() reads, and they meet through a fresh rendezvous file.
//
//   RankProcesses ranks = RankProcesses::Launch(4, RankProcesses::SelfProgram(), {"--worker"});
//   ... train as rank 0 (WorldFromEnvironment() now says so) ...
//   for (const std::string& failure : ranks.Wait()) std::fprintf(stderr, "%s\n", failure.c_str());
#pragma once
#include <dirent.h>
#include <signal.h>
#include <spawn.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>
#include "../base.h"
#include "rendezvous.h"

extern char** environ;  // POSIX's process environment, which no header has to declare

namespace tensorexpr {
namespace dist {

// NVLink SHARP (NVLS) multicast is forced off (0) for every rank the launcher starts, whatever the environment
// says: the multicast objects NCCL sets up with it can take a shared host's GPUs out of service.
inline constexpr const char* kNvlsEnableEnv = "NCCL_NVLS_ENABLE";

// The ranks of a job on this host: this process (rank 0) and the children it started.
class RankProcesses {
 public:
  // Starts ranks 1..world_size-1 running `program` (a path) with `args` as argv[1..], each with this process's
  // environment plus its TENSOREXPR_RANK / WORLD_SIZE / LOCAL_RANK / RENDEZVOUS (a fresh file in a fresh private
  // directory under $TMPDIR or /tmp) and NCCL_NVLS_ENABLE=0. This process becomes rank 0 and sets the same
  // variables in its own environment: call it before starting threads that read the environment. The children are
  // started with posix_spawn, never a fork without exec: this process may already have initialised CUDA. A world
  // of one starts nothing. A child whose parent dies without Kill() meets the rendezvous timeout, or the
  // communicator's.
  static RankProcesses Launch(int world_size, const std::string& program, const std::vector<std::string>& args);
  // The path of the running program (/proc/self/exe resolved), to start more copies of it.
  static std::string SelfProgram();

  // Rank 0's place in the job: this process's.
  WorldSpec self() const { return state().self; }
  // Waits for every child; returns the failures ("rank 2 exited with status 3", "rank 1 was killed by signal 9")
  // in rank order, empty when all exited 0. Then removes the rendezvous file and its directory.
  std::vector<std::string> Wait();
  // Without blocking: the failure of the first child (in rank order) that has already ended badly, if any. Safe to
  // call from a watchdog thread while another thread is in Wait() or Kill().
  std::optional<std::string> PollFailure();
  // Sends SIGTERM to the children still running (rank 0 calls it when it fails).
  void Kill();

  // No children: a process that started no ranks (Wait returns at once, self() is a world of one).
  RankProcesses() : state_(std::make_unique<State>()) {}
  RankProcesses(RankProcesses&&) noexcept = default;
  RankProcesses& operator=(RankProcesses&&) noexcept = default;
  RankProcesses(const RankProcesses&) = delete;
  RankProcesses& operator=(const RankProcesses&) = delete;
  // Children not waited for are stopped (SIGTERM, SIGKILL after a grace period) and reaped; the directory goes.
  ~RankProcesses() = default;

 private:
  struct Child {
    int rank = 0;
    pid_t pid = -1;
    bool reaped = false;
    std::string failure;  // set when reaped and it did not exit 0
  };
  // Everything behind one pointer, so that the object moves while the mutex stays put.
  struct State {
    std::mutex mutex;  // guards the children's reaping: only under it is a child's status collected
    std::vector<Child> children;
    WorldSpec self;
    std::string directory;  // the private directory of the rendezvous file; empty for a world of one
    State() = default;
    State(const State&) = delete;
    State& operator=(const State&) = delete;
    ~State();
    // Collects the child's status if it has ended (options: 0 blocks, WNOHANG does not); true once reaped.
    bool ReapLocked(Child& child, int options);
    void SignalLocked(int signal_number);
    void RemoveDirectory() noexcept;
  };
  explicit RankProcesses(std::unique_ptr<State> state) : state_(std::move(state)) {}
  State& state() const {
    TE_CHECK(state_ != nullptr, "RankProcesses: used after it was moved from");
    return *state_;
  }
  std::unique_ptr<State> state_;
};

inline RankProcesses RankProcesses::Launch(int world_size, const std::string& program,
                                           const std::vector<std::string>& args) {
  TE_CHECK(world_size >= 1, "RankProcesses::Launch: a world of ", world_size, " ranks (it needs at least one)");
  auto state = std::make_unique<State>();
  state->self.world_size = world_size;
  if (world_size > 1) {
    const char* tmpdir = std::getenv("TMPDIR");
    std::string directory = std::string(tmpdir != nullptr && *tmpdir != '\0' ? tmpdir : "/tmp") +
                            "/tensorexpr-ranks-XXXXXX";
    if (::mkdtemp(directory.data()) == nullptr) {
      Fail("RankProcesses::Launch: cannot create a directory like ", directory, ": ", detail::ErrnoText(errno));
    }
    state->directory = directory;
    state->self.rendezvous.kind = Rendezvous::Kind::kFile;
    state->self.rendezvous.path = directory + "/rendezvous";
  }
  // The variables every rank shares; each child adds its own rank.
  std::vector<std::pair<const char*, std::string>> shared = {{kWorldSizeEnv, std::to_string(world_size)},
                                                             {kNvlsEnableEnv, "0"}};
  if (world_size > 1) shared.emplace_back(kRendezvousEnv, state->self.rendezvous.ToString());
  auto ours = [](const std::string& entry) {
    for (const char* name : {kRankEnv, kLocalRankEnv, kWorldSizeEnv, kRendezvousEnv, kNvlsEnableEnv}) {
      const size_t length = std::char_traits<char>::length(name);
      if (entry.compare(0, length, name) == 0 && entry.size() > length && entry[length] == '=') return true;
    }
    return false;
  };
  std::vector<std::string> inherited;
  for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
    if (!ours(*entry)) inherited.emplace_back(*entry);
  }
  std::vector<std::string> argv_storage = {program};
  argv_storage.insert(argv_storage.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& arg : argv_storage) argv.push_back(arg.data());
  argv.push_back(nullptr);

  // Children start with no blocked signals and default handling of the ones that stop them, whatever this
  // process (or the thread calling) has set: Kill()'s SIGTERM must reach them.
  posix_spawnattr_t attributes;
  posix_spawnattr_init(&attributes);
  const std::unique_ptr<posix_spawnattr_t, int (*)(posix_spawnattr_t*)> attributes_owner(&attributes,
                                                                                         posix_spawnattr_destroy);
  sigset_t no_signals, default_signals;
  sigemptyset(&no_signals);
  sigemptyset(&default_signals);
  for (int signal_number : {SIGTERM, SIGINT, SIGHUP, SIGPIPE}) sigaddset(&default_signals, signal_number);
  posix_spawnattr_setsigmask(&attributes, &no_signals);
  posix_spawnattr_setsigdefault(&attributes, &default_signals);
  posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);

  for (int rank = 1; rank < world_size; ++rank) {
    std::vector<std::string> environment = inherited;
    for (const auto& [name, value] : shared) environment.push_back(std::string(name) + "=" + value);
    environment.push_back(std::string(kRankEnv) + "=" + std::to_string(rank));
    environment.push_back(std::string(kLocalRankEnv) + "=" + std::to_string(rank));
    std::vector<char*> envp;
    for (std::string& entry : environment) envp.push_back(entry.data());
    envp.push_back(nullptr);
    pid_t pid = -1;
    const int rc = ::posix_spawn(&pid, program.c_str(), nullptr, &attributes, argv.data(), envp.data());
    // On failure `state` goes out of scope: its destructor stops the ranks already started.
    if (rc != 0) Fail("RankProcesses::Launch: cannot start rank ", rank, " (", program, "): ", detail::ErrnoText(rc));
    Child child;
    child.rank = rank;
    child.pid = pid;
    state->children.push_back(std::move(child));
  }

  // This process is rank 0.
  std::vector<std::pair<const char*, std::string>> own = shared;
  own.emplace_back(kRankEnv, "0");
  own.emplace_back(kLocalRankEnv, "0");
  for (const auto& [name, value] : own) {
    if (::setenv(name, value.c_str(), 1) != 0) {
      Fail("RankProcesses::Launch: cannot set ", name, ": ", detail::ErrnoText(errno));
    }
  }
  // A world of one has no rendezvous: leave none behind from an enclosing job.
  if (world_size == 1) ::unsetenv(kRendezvousEnv);
  return RankProcesses(std::move(state));
}

inline std::string RankProcesses::SelfProgram() {
  std::string path(256, '\0');
  for (;;) {
    const ssize_t n = ::readlink("/proc/self/exe", path.data(), path.size());
    if (n < 0) Fail("RankProcesses::SelfProgram: cannot read /proc/self/exe: ", detail::ErrnoText(errno));
    if (static_cast<size_t>(n) < path.size()) {
      path.resize(static_cast<size_t>(n));
      return path;
    }
    path.resize(path.size() * 2);  // it may have been cut short: try a larger buffer
  }
}

inline std::vector<std::string> RankProcesses::Wait() {
  State& s = state();
  // The list of children is fixed after Launch, so iterating it needs no lock; their status does.
  for (Child& child : s.children) {
    {
      std::lock_guard<std::mutex> lock(s.mutex);
      if (child.reaped) continue;
    }
    // Wait for the child to end without collecting its status (WNOWAIT), and without the lock, so that a
    // watchdog's PollFailure() or Kill() goes on meanwhile; the status is then collected under the lock.
    siginfo_t info{};
    while (::waitid(P_PID, static_cast<id_t>(child.pid), &info, WEXITED | WNOWAIT) != 0 && errno == EINTR) {
    }
    std::lock_guard<std::mutex> lock(s.mutex);
    s.ReapLocked(child, 0);
  }
  std::vector<std::string> failures;
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    for (const Child& child : s.children) {
      if (!child.failure.empty()) failures.push_back(child.failure);
    }
  }
  s.RemoveDirectory();
  return failures;
}

inline std::optional<std::string> RankProcesses::PollFailure() {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  for (Child& child : s.children) s.ReapLocked(child, WNOHANG);
  for (const Child& child : s.children) {
    if (!child.failure.empty()) return child.failure;
  }
  return std::nullopt;
}

inline void RankProcesses::Kill() {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  s.SignalLocked(SIGTERM);
}

inline bool RankProcesses::State::ReapLocked(Child& child, int options) {
  if (child.reaped) return true;
  int status = 0;
  pid_t got = -1;
  do {
    got = ::waitpid(child.pid, &status, options);
  } while (got < 0 && errno == EINTR);
  if (got == 0) return false;  // WNOHANG: still running
  child.reaped = true;
  if (got < 0) {
    // ECHILD: someone else collected it (SIGCHLD set to SIG_IGN does): its outcome is unknown.
    child.failure = Message("rank ", child.rank, " could not be waited for: ", detail::ErrnoText(errno));
  } else if (WIFEXITED(status) && WEXITSTATUS(status) != 0) {
    child.failure = Message("rank ", child.rank, " exited with status ", WEXITSTATUS(status));
  } else if (WIFSIGNALED(status)) {
    child.failure = Message("rank ", child.rank, " was killed by signal ", WTERMSIG(status));
  }
  return true;
}

inline void RankProcesses::State::SignalLocked(int signal_number) {
  // Only children not yet reaped: a reaped child's pid may already belong to another process.
  for (const Child& child : children) {
    if (!child.reaped) ::kill(child.pid, signal_number);
  }
}

inline void RankProcesses::State::RemoveDirectory() noexcept {
  if (directory.empty()) return;
  // The rendezvous file, and a temporary one that a rank 0 which failed while writing may have left.
  if (DIR* listing = ::opendir(directory.c_str())) {
    while (const dirent* entry = ::readdir(listing)) {
      const std::string name = entry->d_name;
      if (name != "." && name != "..") ::unlink((directory + "/" + name).c_str());
    }
    ::closedir(listing);
  }
  ::rmdir(directory.c_str());
  directory.clear();
}

inline RankProcesses::State::~State() {
  std::lock_guard<std::mutex> lock(mutex);
  SignalLocked(SIGTERM);
  // A grace period for the children to end on SIGTERM; those that ignore it are killed.
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  for (;;) {
    bool all_reaped = true;
    for (Child& child : children) all_reaped = ReapLocked(child, WNOHANG) && all_reaped;
    if (all_reaped || std::chrono::steady_clock::now() >= give_up) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  SignalLocked(SIGKILL);
  for (Child& child : children) ReapLocked(child, 0);
  RemoveDirectory();
}

}  // namespace dist
}  // namespace tensorexpr
