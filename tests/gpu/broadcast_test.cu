// The [gpu] run of tests/broadcast_test.cc: the same device-templated cases, compiled by nvcc.
#include "../broadcast_test.cc"
