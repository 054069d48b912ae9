#include "../conv_fixed_test.cc"
