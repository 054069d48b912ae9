#include "../conv_select_test.cc"
