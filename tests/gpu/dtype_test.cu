// The [gpu] run of tests/dtype_test.cc: the same device-templated cases, compiled by nvcc.
#include "../dtype_test.cc"
