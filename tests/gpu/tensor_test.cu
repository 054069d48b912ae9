// The [gpu] run of tests/tensor_test.cc: the same device-templated cases, compiled by nvcc.
#include "../tensor_test.cc"
