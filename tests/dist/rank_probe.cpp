// rank_probe.cpp — the program the launcher tests (world_test.cc) start as ranks 1..N-1. It reads its place from
// the environment and does one thing, exiting 0 when that went as expected and 1 with a message otherwise:
//
//   dist_rank_probe share HEX                  receive rank 0's id through the rendezvous; it must be HEX
//   dist_rank_probe exit-if-rank R STATUS [sleep]  rank R exits with STATUS; the others exit 0 (or, with
//                                              "sleep", wait to be killed)
//   dist_rank_probe signal-if-rank R SIGNAL    rank R raises SIGNAL; the others exit 0
//   dist_rank_probe expect-env NAME=VALUE...   each variable must have that value
//   dist_rank_probe sleep PIDFILE              write this pid to PIDFILE.<rank>, then wait to be killed
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>
#include <vector>
#include <unistd.h>
#include <tensorexpr/dist/rendezvous.h>
#include "hex.h"

namespace {

using tensorexpr::dist::WorldSpec;

int Failed(const WorldSpec& me, const std::string& why) {
  std::fprintf(stderr, "dist_rank_probe (rank %d of %d): %s\n", me.rank, me.world_size, why.c_str());
  return 1;
}

// Long enough for any test to kill it first; the tests never wait for it to pass.
void SleepUntilKilled() { std::this_thread::sleep_for(std::chrono::minutes(5)); }

int Run(const std::vector<std::string>& args) {
  const WorldSpec me = tensorexpr::dist::WorldFromEnvironment();
  const std::string command = args.empty() ? "" : args[0];
  if (command == "share" && args.size() == 2) {
    if (me.local_rank != me.rank) return Failed(me, "local rank " + std::to_string(me.local_rank));
    const std::vector<uint8_t> id = tensorexpr::dist::ShareFromRoot(me.rendezvous, me.rank, me.world_size, {}, 60.0);
    if (Hex(id) != args[1]) return Failed(me, "received " + Hex(id) + ", expected " + args[1]);
    return 0;
  }
  if ((command == "exit-if-rank" && (args.size() == 3 || (args.size() == 4 && args[3] == "sleep"))) ||
      (command == "signal-if-rank" && args.size() == 3)) {
    if (me.rank != std::stoi(args[1])) {
      if (args.size() == 4) SleepUntilKilled();
      return 0;
    }
    if (command == "exit-if-rank") return std::stoi(args[2]);
    std::raise(std::stoi(args[2]));
    return Failed(me, "survived signal " + args[2]);
  }
  if (command == "expect-env" && args.size() >= 2) {
    for (size_t i = 1; i < args.size(); ++i) {
      const size_t equals = args[i].find('=');
      const std::string name = args[i].substr(0, equals), want = args[i].substr(equals + 1);
      const char* value = std::getenv(name.c_str());
      if (value == nullptr || value != want) {
        return Failed(me, name + " is " + (value == nullptr ? "not set" : "\"" + std::string(value) + "\"") +
                              ", expected \"" + want + "\"");
      }
    }
    return 0;
  }
  if (command == "sleep" && args.size() == 2) {
    // Written whole under another name, then renamed: the test never reads half a pid.
    const std::string pidfile = args[1] + "." + std::to_string(me.rank);
    std::ofstream(pidfile + ".tmp") << ::getpid() << "\n";
    if (std::rename((pidfile + ".tmp").c_str(), pidfile.c_str()) != 0) return Failed(me, "cannot write " + pidfile);
    SleepUntilKilled();
    return 0;
  }
  std::fprintf(stderr, "dist_rank_probe: unknown command line (see tests/dist/rank_probe.cpp)\n");
  return 2;
}

}  // namespace

int main(int argc, char* argv[]) {
  try {
    return Run(std::vector<std::string>(argv + 1, argv + argc));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "dist_rank_probe: %s\n", e.what());
    return 1;
  }
}
