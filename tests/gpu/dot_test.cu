// The [gpu] run of tests/dot_test.cc: the same device-templated cases, compiled by nvcc.
#include "../dot_test.cc"
