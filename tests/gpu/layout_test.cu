// The [gpu] run of tests/layout_test.cc: the same device-templated cases, compiled by nvcc.
#include "../layout_test.cc"
