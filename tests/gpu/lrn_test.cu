#include "../lrn_test.cc"
