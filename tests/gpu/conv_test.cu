#include "../conv_test.cc"
