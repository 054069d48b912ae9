// The rendezvous (tensorexpr/dist/rendezvous.h): specs, rank 0's bytes reaching every rank through a file and
// through TCP (one thread per rank), and the errors a misconfigured job meets. Nothing here depends on timing: a
// case that must time out uses a short timeout and checks only the error; the others wait generously.
#include <catch2/catch.hpp>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <random>
#include <string>
#include <thread>
#include <vector>
#include <tensorexpr/dist/rendezvous.h>

namespace {

using namespace tensorexpr;
using namespace tensorexpr::dist;
using Catch::Matchers::Contains;

constexpr double kGenerous = 60.0;  // a busy 2-core machine never needs this long; success never waits for it
constexpr double kShort = 0.3;      // for the cases that must time out

std::vector<uint8_t> RandomBytes(size_t n, uint32_t seed) {
  std::mt19937 engine(seed);
  std::vector<uint8_t> bytes(n);
  for (uint8_t& b : bytes) b = static_cast<uint8_t>(engine());
  return bytes;
}

// A fresh directory for one case's rendezvous files, removed with everything in it.
class TempDir {
 public:
  TempDir() {
    const char* tmpdir = std::getenv("TMPDIR");
    std::string pattern = std::string(tmpdir != nullptr && *tmpdir != '\0' ? tmpdir : "/tmp") + "/te-dist-XXXXXX";
    REQUIRE(::mkdtemp(pattern.data()) != nullptr);
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  std::string operator/(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

Rendezvous FileAt(const std::string& path) { return Rendezvous::Parse("file:" + path); }

// A TCP port that nothing listens on now: the one the kernel picks for port 0. Ranks of parallel tests each get
// their own.
int FreePort() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  REQUIRE(fd >= 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_ANY);
  address.sin_port = 0;
  socklen_t size = sizeof address;
  const bool bound = ::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0 &&
                     ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &size) == 0;
  ::close(fd);
  REQUIRE(bound);
  return ntohs(address.sin_port);
}

Rendezvous FreeTcp(const std::string& host = "127.0.0.1") {
  return Rendezvous::Parse("tcp:" + host + ":" + std::to_string(FreePort()));
}

void WriteFile(const std::string& path, const std::string& contents) {
  std::ofstream(path, std::ios::binary) << contents;
}

// What one rank's call gave: the bytes, or the error's message.
struct Outcome {
  std::vector<uint8_t> bytes;
  std::string error;
};

// Runs rank_body(r) for every rank r of a world on a thread of its own, rank 0's last and after `root_delay`
// (so that the others start first and must wait for it), and gathers each rank's outcome. Catch2's assertions
// are not thread-safe: the threads only record, and the test asserts afterwards.
std::vector<Outcome> RunRanks(int world_size, const std::function<std::vector<uint8_t>(int)>& rank_body,
                              std::chrono::milliseconds root_delay = std::chrono::milliseconds(0)) {
  std::vector<Outcome> outcomes(static_cast<size_t>(world_size));
  auto run = [&](int rank) {
    Outcome& outcome = outcomes[static_cast<size_t>(rank)];
    try {
      if (rank == 0) std::this_thread::sleep_for(root_delay);
      outcome.bytes = rank_body(rank);
    } catch (const Error& e) {
      outcome.error = e.what();
    } catch (const std::exception& e) {
      outcome.error = std::string("not a tensorexpr::Error: ") + e.what();
    }
  };
  std::vector<std::thread> threads;
  for (int rank = world_size - 1; rank >= 0; --rank) threads.emplace_back(run, rank);
  for (std::thread& t : threads) t.join();
  return outcomes;
}

// Every rank shares `id` from rank 0 through `where`; each must come back with `id` and no error.
void CheckEveryRankGets(const Rendezvous& where, int world_size, const std::vector<uint8_t>& id,
                        std::chrono::milliseconds root_delay = std::chrono::milliseconds(0)) {
  auto rank_body = [&](int rank) {
    return ShareFromRoot(where, rank, world_size, rank == 0 ? id : std::vector<uint8_t>{}, kGenerous);
  };
  const std::vector<Outcome> outcomes = RunRanks(world_size, rank_body, root_delay);
  for (int rank = 0; rank < world_size; ++rank) {
    CAPTURE(rank, world_size);
    CHECK(outcomes[static_cast<size_t>(rank)].error == "");
    CHECK(outcomes[static_cast<size_t>(rank)].bytes == id);
  }
}

TEST_CASE("Rendezvous::Parse reads file: and tcp: specs, and ToString gives them back", "[cpu][dist]") {
  const Rendezvous file = Rendezvous::Parse("file:/shared/job 7/nccl-id");
  CHECK(file.kind == Rendezvous::Kind::kFile);
  CHECK(file.path == "/shared/job 7/nccl-id");
  CHECK(file.ToString() == "file:/shared/job 7/nccl-id");

  const Rendezvous tcp = Rendezvous::Parse("tcp:node-0.cluster:29500");
  CHECK(tcp.kind == Rendezvous::Kind::kTcp);
  CHECK(tcp.host == "node-0.cluster");
  CHECK(tcp.port == 29500);
  CHECK(tcp.ToString() == "tcp:node-0.cluster:29500");

  for (const std::string spec : {"file:relative/id", "tcp:10.0.0.1:1", "tcp:h:65535"}) {
    CHECK(Rendezvous::Parse(spec).ToString() == spec);
  }
}

TEST_CASE("Rendezvous::Parse names a bad spec and the two accepted forms", "[cpu][dist]") {
  for (const std::string spec :
       {"", "file:", "tcp:host", "tcp:host:0", "tcp:host:99999", "tcp:host:abc", "tcp::80", "tcp:host:", "ftp:x",
        "tcp:host:-1", "tcp:host:+80", "tcp:host:80x", "tcp:host:123456789012345678901234567890", "FILE:/x"}) {
    CAPTURE(spec);
    CHECK_THROWS_AS(Rendezvous::Parse(spec), Error);
    CHECK_THROWS_WITH(Rendezvous::Parse(spec),
                      Contains("\"" + spec + "\"") && Contains("file:/PATH") && Contains("tcp:HOST:PORT"));
  }
  CHECK_THROWS_WITH(Rendezvous::Parse("tcp:host:99999"), Contains("outside 1..65535"));
  CHECK_THROWS_WITH(Rendezvous::Parse("tcp:host:abc"), Contains("not a number"));
}

TEST_CASE("ShareFromRoot gives every rank rank 0's bytes through a file", "[cpu][dist]") {
  const int world_size = GENERATE(1, 2, 4);
  TempDir dir;
  const Rendezvous where = FileAt(dir / "id");
  CheckEveryRankGets(where, world_size, RandomBytes(128, 11u * static_cast<uint32_t>(world_size)));
  // Rank 0 leaves the file for the launcher to remove; a world of one writes nothing.
  CHECK(std::filesystem::exists(where.path) == (world_size > 1));
  RemoveRendezvousFile(where);
  CHECK_FALSE(std::filesystem::exists(where.path));
  CHECK_NOTHROW(RemoveRendezvousFile(where));  // already gone: fine
  CHECK_NOTHROW(RemoveRendezvousFile(Rendezvous::Parse("tcp:h:1")));  // nothing to remove
}

TEST_CASE("ShareFromRoot gives every rank rank 0's bytes over TCP", "[cpu][dist]") {
  const int world_size = GENERATE(1, 2, 4);
  const std::string host = GENERATE(as<std::string>(), "127.0.0.1", "localhost");
  CAPTURE(host);
  CheckEveryRankGets(FreeTcp(host), world_size, RandomBytes(128, 13u * static_cast<uint32_t>(world_size)));
}

TEST_CASE("ShareFromRoot makes the other ranks wait for a rank 0 that starts after them", "[cpu][dist]") {
  const auto later = std::chrono::milliseconds(200);
  SECTION("file") {
    TempDir dir;
    CheckEveryRankGets(FileAt(dir / "id"), 3, RandomBytes(128, 17), later);
  }
  SECTION("tcp") { CheckEveryRankGets(FreeTcp(), 3, RandomBytes(128, 19), later); }
}

TEST_CASE("ShareFromRoot at rank 0 refuses a rendezvous file left from an earlier run", "[cpu][dist]") {
  TempDir dir;
  const Rendezvous where = FileAt(dir / "id");
  WriteFile(where.path, "stale");
  CHECK_THROWS_WITH(ShareFromRoot(where, 0, 2, RandomBytes(128, 23), kGenerous),
                    Contains("rank 0 of 2: rendezvous file:" + where.path + ": ") && Contains("already exists") &&
                        Contains("left over from an earlier run"));
  std::ifstream in(where.path);
  CHECK(std::string(std::istreambuf_iterator<char>(in), {}) == "stale");  // left for the user to look at
}

TEST_CASE("ShareFromRoot rejects a malformed rendezvous file", "[cpu][dist]") {
  TempDir dir;
  const Rendezvous where = FileAt(dir / "id");
  const std::string contents = GENERATE(as<std::string>(), "garbage that is long enough\n",
                                        "tensorexpr-rendezvous 2\n4\nabcd", "tensorexpr-rendezvous 1\nxyz\nabc",
                                        "tensorexpr-rendezvous 1\n0\n", "tensorexpr-rendezvous 1\n3\nabcdef",
                                        "tensorexpr-rendezvous 1\n99999999999999999999999\n");
  CAPTURE(contents);
  WriteFile(where.path, contents);
  CHECK_THROWS_WITH(ShareFromRoot(where, 1, 2, {}, kGenerous),
                    Contains("rank 1 of 2: rendezvous file:" + where.path + ": ") &&
                        Contains("is not a rendezvous file"));
}

TEST_CASE("ShareFromRoot reads a file rank 0 wrote, of any size up to the limit", "[cpu][dist]") {
  TempDir dir;
  const Rendezvous where = FileAt(dir / "id");
  const std::vector<uint8_t> id = RandomBytes(GENERATE(size_t(1), size_t(5000), kMaxRendezvousBytes), 29);
  CHECK(ShareFromRoot(where, 0, 2, id, kGenerous) == id);
  CHECK(ShareFromRoot(where, 1, 2, {}, kGenerous) == id);
}

TEST_CASE("ShareFromRoot times out, saying what it waited for, when rank 0 never comes", "[cpu][dist]") {
  SECTION("file") {
    TempDir dir;
    const Rendezvous where = FileAt(dir / "id");
    CHECK_THROWS_WITH(ShareFromRoot(where, 1, 2, {}, kShort),
                      Contains("rank 1 of 2: rendezvous file:" + where.path + ": ") && Contains("waited 0.3 s") &&
                          Contains("is rank 0 running") && Contains("does every rank see that path"));
  }
  SECTION("file that stays incomplete") {
    TempDir dir;
    const Rendezvous where = FileAt(dir / "id");
    WriteFile(where.path, "tensorexpr-rendezvous 1\n128\nonly the start");
    CHECK_THROWS_WITH(ShareFromRoot(where, 1, 2, {}, kShort),
                      Contains("waited 0.3 s") && Contains("to be complete") && Contains("did rank 0 fail"));
  }
  SECTION("tcp") {
    const Rendezvous where = FreeTcp();
    CHECK_THROWS_WITH(ShareFromRoot(where, 2, 3, {}, kShort),
                      Contains("rank 2 of 3: rendezvous " + where.ToString() + ": ") && Contains("waited 0.3 s") &&
                          Contains("is rank 0 running") && Contains("Connection refused"));
  }
  SECTION("tcp, rank 0 waiting for ranks that never come") {
    const Rendezvous where = FreeTcp();
    CHECK_THROWS_WITH(ShareFromRoot(where, 0, 3, RandomBytes(128, 31), kShort),
                      Contains("rank 0 of 3: ") && Contains("waited 0.3 s") && Contains("heard from 0 of 2") &&
                          Contains("is every rank running"));
  }
}

TEST_CASE("ShareFromRoot over TCP fails every rank when they disagree on the world or share a rank", "[cpu][dist]") {
  const Rendezvous where = FreeTcp();
  const std::vector<uint8_t> id = RandomBytes(128, 37);
  SECTION("world size") {
    const std::vector<Outcome> outcomes =
        RunRanks(2, [&](int rank) { return ShareFromRoot(where, rank, rank == 0 ? 2 : 3, id, kGenerous); });
    CHECK_THAT(outcomes[0].error, Contains("rank 0 of 2: ") && Contains("rank 1 at 127.0.0.1:") &&
                                      Contains("a world of 3 ranks, rank 0 with 2") &&
                                      Contains("every rank needs the same world size"));
    CHECK_THAT(outcomes[1].error, Contains("rank 1 of 3: ") && Contains("a world of 2 ranks, this rank with 3") &&
                                      Contains("every rank needs the same world size"));
  }
  SECTION("a rank twice") {
    // Ranks 1 and 2 both say they are rank 1; rank 0 fails, and so do both of them.
    const std::vector<Outcome> outcomes =
        RunRanks(3, [&](int rank) { return ShareFromRoot(where, rank == 0 ? 0 : 1, 3, id, kGenerous); });
    CHECK_THAT(outcomes[0].error, Contains("two processes say they are rank 1"));
    for (size_t peer : {1, 2}) {
      CAPTURE(peer);
      CHECK_THAT(outcomes[peer].error,
                 Contains("rank 1 of 3: ") && (Contains("already heard from another process that says it is rank 1") ||
                                               Contains("closed the connection without sending the id")));
    }
  }
}

TEST_CASE("ShareFromRoot rejects a bad rank, world size, timeout or id", "[cpu][dist]") {
  TempDir dir;
  const Rendezvous where = FileAt(dir / "id");
  const std::vector<uint8_t> id = RandomBytes(128, 41);
  CHECK_THROWS_WITH(ShareFromRoot(where, 0, 0, id, kGenerous), Contains("rank 0 of 0: rendezvous file:") &&
                                                                     Contains("at least one rank"));
  CHECK_THROWS_WITH(ShareFromRoot(where, -1, 2, id, kGenerous),
                    Contains("rank -1 of 2") && Contains("[0, world_size)"));
  CHECK_THROWS_WITH(ShareFromRoot(where, 2, 2, id, kGenerous), Contains("rank 2 of 2") && Contains("[0, world_size)"));
  CHECK_THROWS_WITH(ShareFromRoot(where, 0, 2, id, 0.0), Contains("must be positive"));
  CHECK_THROWS_WITH(ShareFromRoot(where, 0, 2, {}, kGenerous), Contains("rank 0 of 2") && Contains("empty id"));
  CHECK_THROWS_WITH(ShareFromRoot(where, 0, 1, {}, kGenerous), Contains("empty id"));
  CHECK_THROWS_WITH(ShareFromRoot(where, 0, 2, std::vector<uint8_t>(kMaxRendezvousBytes + 1), kGenerous),
                    Contains("more than a rendezvous carries"));
  CHECK_FALSE(std::filesystem::exists(where.path));  // nothing was published
}

}  // namespace
