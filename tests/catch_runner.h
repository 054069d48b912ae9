// The test binaries' entry into Catch2, whose implementation is compiled once (catch_impl.cc): each
// binary's main (main.cc, gpu/gpu_main.cc) calls these instead of compiling Catch2 again.
#pragma once

namespace te_test {

// Runs the registered test cases selected by the command line (Catch2's session); returns its exit code.
int RunCatch(int argc, char* argv[]);
// The number of registered test cases carrying `tag` (lower case, without brackets: "gpu").
int CountTaggedCases(const char* tag);

}  // namespace te_test
