#include "../softmax_test.cc"
