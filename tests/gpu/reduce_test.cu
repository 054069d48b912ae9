// The [gpu] run of tests/reduce_test.cc: the same device-templated cases, compiled by nvcc.
#include "../reduce_test.cc"
