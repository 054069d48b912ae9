#include "../philox_test.cc"
