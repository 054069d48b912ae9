#include "../random_test.cc"
