// The [gpu] run of tests/shape_test.cc: the same device-templated cases, compiled by nvcc.
#include "../shape_test.cc"
