// The [gpu] run of tests/map_test.cc: the same device-templated cases, compiled by nvcc.
#include "../map_test.cc"
