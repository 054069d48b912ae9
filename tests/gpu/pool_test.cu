// The [gpu] run of tests/pool_test.cc: the same device-templated cases, compiled by nvcc.
#include "../pool_test.cc"
