// The [gpu] run of tests/mshadow_api_test.cc: the same device-templated cases, compiled by nvcc.
#include "../mshadow_api_test.cc"
