// The [gpu] run of tests/blob_test.cc: the same device-templated cases, compiled by nvcc.
#include "../blob_test.cc"
