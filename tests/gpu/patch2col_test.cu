// The [gpu] run of tests/patch2col_test.cc: the same device-templated cases, compiled by nvcc.
#include "../patch2col_test.cc"
