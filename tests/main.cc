// The CPU suites' main: Catch2's default session.
#include "catch_runner.h"

int main(int argc, char* argv[]) { return te_test::RunCatch(argc, argv); }
