#include "../optimizer_test.cc"
