// A process's place in a job: WorldFromEnvironment (tensorexpr/dist/rendezvous.h) and the launcher that sets it,
// RankProcesses (tensorexpr/dist/launch.h), which these cases run with dist_rank_probe (rank_probe.cpp) as the
// other ranks and this test process as rank 0. Every case puts back the environment it changed.
#include <catch2/catch.hpp>
#include <signal.h>
#include <sys/stat.h>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <thread>
#include <vector>
#include <tensorexpr/dist/launch.h>
#include "hex.h"

#ifndef TE_DIST_RANK_PROBE
#error "tests/dist/meson.build passes the path of dist_rank_probe as TE_DIST_RANK_PROBE"
#endif

namespace {

using namespace tensorexpr;
using namespace tensorexpr::dist;
using Catch::Matchers::Contains;

constexpr double kGenerous = 60.0;  // a busy 2-core machine never needs this long; success never waits for it

// Saves the job's variables (and a marker of the test's own) and puts them back as they were on the way out.
class EnvGuard {
 public:
  EnvGuard() {
    for (const char* name : kNames) {
      const char* value = std::getenv(name);
      saved_.emplace_back(name, value == nullptr ? std::nullopt : std::optional<std::string>(value));
    }
  }
  ~EnvGuard() {
    for (const auto& [name, value] : saved_) {
      if (value) {
        ::setenv(name, value->c_str(), 1);
      } else {
        ::unsetenv(name);
      }
    }
  }
  // Sets (or, for nullptr, unsets) the four TENSOREXPR_ variables.
  static void SetJob(const char* rank, const char* world_size, const char* local_rank, const char* rendezvous) {
    const char* values[] = {rank, world_size, local_rank, rendezvous};
    for (int i = 0; i < 4; ++i) {
      if (values[i] != nullptr) {
        ::setenv(kNames[i], values[i], 1);
      } else {
        ::unsetenv(kNames[i]);
      }
    }
  }

  static constexpr const char* kNames[] = {kRankEnv, kWorldSizeEnv, kLocalRankEnv, kRendezvousEnv, kNvlsEnableEnv,
                                           "TE_DIST_TEST_MARK"};

 private:
  std::vector<std::pair<const char*, std::optional<std::string>>> saved_;
};

// The job's variables in this process, as text to compare.
std::string JobEnvironment() {
  std::string text;
  for (const char* name : EnvGuard::kNames) {
    const char* value = std::getenv(name);
    text += std::string(name) + (value == nullptr ? " unset\n" : "=" + std::string(value) + "\n");
  }
  return text;
}

std::string DirectoryOf(const std::string& path) { return std::filesystem::path(path).parent_path().string(); }

TEST_CASE("WorldFromEnvironment without variables is a world of one", "[cpu][dist]") {
  EnvGuard env;
  EnvGuard::SetJob(nullptr, nullptr, nullptr, nullptr);
  WorldSpec spec = WorldFromEnvironment();
  CHECK(spec.rank == 0);
  CHECK(spec.world_size == 1);
  CHECK(spec.local_rank == 0);

  // One process on another GPU of the host.
  EnvGuard::SetJob(nullptr, nullptr, "3", nullptr);
  spec = WorldFromEnvironment();
  CHECK(spec.world_size == 1);
  CHECK(spec.local_rank == 3);

  EnvGuard::SetJob(nullptr, "1", nullptr, nullptr);
  CHECK(WorldFromEnvironment().world_size == 1);
}

TEST_CASE("WorldFromEnvironment reads the rank, world size, local rank and rendezvous", "[cpu][dist]") {
  EnvGuard env;
  EnvGuard::SetJob("2", "4", "1", "tcp:node-0:29500");
  WorldSpec spec = WorldFromEnvironment();
  CHECK(spec.rank == 2);
  CHECK(spec.world_size == 4);
  CHECK(spec.local_rank == 1);
  CHECK(spec.rendezvous.kind == Rendezvous::Kind::kTcp);
  CHECK(spec.rendezvous.ToString() == "tcp:node-0:29500");

  // Without a local rank, the rank picks the GPU (one host).
  EnvGuard::SetJob("3", "4", nullptr, "file:/shared/id");
  spec = WorldFromEnvironment();
  CHECK(spec.rank == 3);
  CHECK(spec.local_rank == 3);
  CHECK(spec.rendezvous.path == "/shared/id");
}

TEST_CASE("WorldFromEnvironment names the variable a partial job lacks", "[cpu][dist]") {
  EnvGuard env;
  EnvGuard::SetJob(nullptr, "4", nullptr, "file:/shared/id");
  CHECK_THROWS_WITH(WorldFromEnvironment(), Contains("TENSOREXPR_WORLD_SIZE=4") &&
                                                Contains("TENSOREXPR_RANK is not set"));
  EnvGuard::SetJob("1", "4", nullptr, nullptr);
  CHECK_THROWS_WITH(WorldFromEnvironment(), Contains("TENSOREXPR_RENDEZVOUS is not set"));
  EnvGuard::SetJob("1", nullptr, nullptr, nullptr);
  CHECK_THROWS_WITH(WorldFromEnvironment(), Contains("TENSOREXPR_RANK=1 is set but TENSOREXPR_WORLD_SIZE is not"));
  EnvGuard::SetJob(nullptr, nullptr, nullptr, "file:/shared/id");
  CHECK_THROWS_WITH(WorldFromEnvironment(), Contains("TENSOREXPR_RENDEZVOUS=file:/shared/id is set but "
                                                     "TENSOREXPR_WORLD_SIZE is not"));
}

TEST_CASE("WorldFromEnvironment names a variable whose value is not a rank, a size or a rendezvous", "[cpu][dist]") {
  EnvGuard env;
  struct Case {
    const char *rank, *world_size, *local_rank, *rendezvous;
    std::string says;
  };
  for (const Case& c : {
           Case{"abc", "4", nullptr, "file:/x", "TENSOREXPR_RANK=\"abc\" is not an integer"},
           Case{"", "4", nullptr, "file:/x", "TENSOREXPR_RANK=\"\" is not an integer"},
           Case{"1", "2x", nullptr, "file:/x", "TENSOREXPR_WORLD_SIZE=\"2x\" is not an integer"},
           Case{"1", "0", nullptr, "file:/x", "TENSOREXPR_WORLD_SIZE=0 is outside 1.."},
           Case{"1", "99999999999", nullptr, "file:/x", "TENSOREXPR_WORLD_SIZE=99999999999 is outside 1.."},
           Case{"4", "4", nullptr, "file:/x", "TENSOREXPR_RANK=4 is outside 0..3 (TENSOREXPR_WORLD_SIZE=4)"},
           Case{"-1", "4", nullptr, "file:/x", "TENSOREXPR_RANK=-1 is outside 0..3"},
           Case{"1", "4", "-1", "file:/x", "TENSOREXPR_LOCAL_RANK=-1 is outside 0.."},
           Case{"1", "4", "one", "file:/x", "TENSOREXPR_LOCAL_RANK=\"one\" is not an integer"},
           Case{"1", "4", nullptr, "ftp:x", "TENSOREXPR_RENDEZVOUS: rendezvous \"ftp:x\""},
           Case{"1", "4", nullptr, "tcp:host:0", "TENSOREXPR_RENDEZVOUS: rendezvous \"tcp:host:0\""},
       }) {
    CAPTURE(c.says);
    EnvGuard::SetJob(c.rank, c.world_size, c.local_rank, c.rendezvous);
    CHECK_THROWS_AS(WorldFromEnvironment(), Error);
    CHECK_THROWS_WITH(WorldFromEnvironment(), Contains(c.says));
  }
}

TEST_CASE("RankProcesses::Launch starts ranks that receive rank 0's id, and cleans up after them", "[cpu][dist]") {
  const std::string environment_before = JobEnvironment();
  {
    EnvGuard env;
    const std::vector<uint8_t> id = {0x00, 0x01, 0x7f, 0x80, 0xfe, 0xff, 0x42, 0x10};
    RankProcesses ranks = RankProcesses::Launch(3, TE_DIST_RANK_PROBE, {"share", Hex(id)});
    // This process is rank 0, and its environment says so.
    const WorldSpec me = WorldFromEnvironment();
    CHECK(me.rank == 0);
    CHECK(me.world_size == 3);
    CHECK(me.local_rank == 0);
    CHECK(me.rendezvous.ToString() == ranks.self().rendezvous.ToString());
    REQUIRE(me.rendezvous.kind == Rendezvous::Kind::kFile);
    const std::string directory = DirectoryOf(me.rendezvous.path);
    struct stat info {};
    REQUIRE(::stat(directory.c_str(), &info) == 0);
    CHECK((info.st_mode & 0777) == 0700);  // private

    // Each probe compares the bytes it receives with the ones on its command line, and exits 1 if they differ.
    SECTION("the id they expect") {
      CHECK(ShareFromRoot(me.rendezvous, me.rank, me.world_size, id, kGenerous) == id);
      CHECK(ranks.Wait() == std::vector<std::string>{});
    }
    SECTION("another id") {
      const std::vector<uint8_t> other = {0x10, 0x42};
      CHECK(ShareFromRoot(me.rendezvous, me.rank, me.world_size, other, kGenerous) == other);
      CHECK(ranks.Wait() == std::vector<std::string>{"rank 1 exited with status 1", "rank 2 exited with status 1"});
    }
    CHECK_FALSE(std::filesystem::exists(directory));
    CHECK(ranks.Wait() == ranks.Wait());  // again: nothing left to wait for, the same answer
  }
  // The variables the launcher set in this process are as they were.
  CHECK(JobEnvironment() == environment_before);
}

TEST_CASE("RankProcesses::Wait reports the ranks that exited with a status or were killed", "[cpu][dist]") {
  EnvGuard env;
  SECTION("exit status") {
    RankProcesses ranks = RankProcesses::Launch(3, TE_DIST_RANK_PROBE, {"exit-if-rank", "2", "3"});
    CHECK(ranks.Wait() == std::vector<std::string>{"rank 2 exited with status 3"});
  }
  SECTION("signal") {
    RankProcesses ranks = RankProcesses::Launch(3, TE_DIST_RANK_PROBE, {"signal-if-rank", "1", "9"});
    CHECK(ranks.Wait() == std::vector<std::string>{"rank 1 was killed by signal 9"});
  }
}

TEST_CASE("RankProcesses forces NCCL_NVLS_ENABLE=0 in every rank and passes the rest of the environment on",
          "[cpu][dist]") {
  EnvGuard env;
  ::setenv(kNvlsEnableEnv, "1", 1);
  ::setenv("TE_DIST_TEST_MARK", "inherited", 1);
  RankProcesses ranks = RankProcesses::Launch(3, TE_DIST_RANK_PROBE,
                                              {"expect-env", "NCCL_NVLS_ENABLE=0", "TE_DIST_TEST_MARK=inherited",
                                               "TENSOREXPR_WORLD_SIZE=3"});
  CHECK(std::string(std::getenv(kNvlsEnableEnv)) == "0");  // in rank 0 too
  CHECK(ranks.Wait() == std::vector<std::string>{});
}

TEST_CASE("RankProcesses::PollFailure lets a watchdog see a failed rank and Kill the rest while Wait waits",
          "[cpu][dist]") {
  EnvGuard env;
  // Rank 1 exits with status 5 at once; rank 2 sleeps until it is killed, so Wait() returns only once the
  // watchdog has seen rank 1's failure and called Kill().
  RankProcesses ranks = RankProcesses::Launch(3, TE_DIST_RANK_PROBE, {"exit-if-rank", "1", "5", "sleep"});
  std::optional<std::string> seen;
  std::atomic<bool> stop{false};
  std::thread watchdog([&] {
    while (!stop) {
      if ((seen = ranks.PollFailure())) {
        ranks.Kill();
        return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  });
  const std::vector<std::string> failures = ranks.Wait();
  stop = true;
  watchdog.join();
  CHECK(seen == std::optional<std::string>("rank 1 exited with status 5"));
  const std::string killed = "rank 2 was killed by signal " + std::to_string(SIGTERM);
  CHECK(failures == std::vector<std::string>{"rank 1 exited with status 5", killed});
  CHECK(ranks.PollFailure() == std::optional<std::string>("rank 1 exited with status 5"));
}

TEST_CASE("RankProcesses stops and reaps the ranks it was not asked to wait for", "[cpu][dist]") {
  EnvGuard env;
  const std::string pidfile = (std::filesystem::temp_directory_path() / "te-dist-probe-pid").string() + "." +
                              std::to_string(::getpid());
  std::vector<pid_t> pids;
  std::string directory;
  {
    RankProcesses ranks = RankProcesses::Launch(3, TE_DIST_RANK_PROBE, {"sleep", pidfile});
    directory = DirectoryOf(ranks.self().rendezvous.path);
    // Moving the ranks moves the duty to stop them.
    RankProcesses moved = std::move(ranks);
    for (int rank = 1; rank < 3; ++rank) {
      const std::string file = pidfile + "." + std::to_string(rank);
      const auto give_up = std::chrono::steady_clock::now() + std::chrono::duration<double>(kGenerous);
      while (!std::filesystem::exists(file) && std::chrono::steady_clock::now() < give_up) {
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
      pid_t pid = -1;
      std::ifstream(file) >> pid;
      std::filesystem::remove(file);
      REQUIRE(pid > 0);
      CHECK(::kill(pid, 0) == 0);  // running
      pids.push_back(pid);
    }
    CHECK(moved.PollFailure() == std::nullopt);
  }
  // Killed and reaped: the pids are gone, and so is the directory.
  for (pid_t pid : pids) CHECK(::kill(pid, 0) == -1);
  CHECK_FALSE(std::filesystem::exists(directory));
}

TEST_CASE("RankProcesses with a world of one starts nothing; a bad world or program is an Error", "[cpu][dist]") {
  EnvGuard env;
  ::setenv(kRendezvousEnv, "file:/left/from/an/enclosing/job", 1);
  {
    RankProcesses ranks = RankProcesses::Launch(1, TE_DIST_RANK_PROBE, {});
    CHECK(ranks.self().world_size == 1);
    const WorldSpec me = WorldFromEnvironment();
    CHECK(me.rank == 0);
    CHECK(me.world_size == 1);
    CHECK(std::getenv(kRendezvousEnv) == nullptr);
    CHECK(ranks.Wait() == std::vector<std::string>{});
  }
  CHECK_THROWS_WITH(RankProcesses::Launch(0, TE_DIST_RANK_PROBE, {}), Contains("a world of 0 ranks"));
  CHECK_THROWS_WITH(RankProcesses::Launch(2, "/nonexistent/program", {}),
                    Contains("cannot start rank 1 (/nonexistent/program)") && Contains("No such file or directory"));
}

TEST_CASE("RankProcesses::SelfProgram is the running executable", "[cpu][dist]") {
  const std::string self = RankProcesses::SelfProgram();
  CHECK(std::filesystem::path(self).is_absolute());
  CHECK(std::filesystem::is_regular_file(self));
  CHECK(std::filesystem::equivalent(self, "/proc/self/exe"));
}

}  // namespace
