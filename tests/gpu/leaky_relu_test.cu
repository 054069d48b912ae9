#include "../leaky_relu_test.cc"
