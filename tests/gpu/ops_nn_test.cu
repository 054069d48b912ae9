#include "../ops_nn_test.cc"
