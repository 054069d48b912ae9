// The [gpu] run of tests/image_test.cc: the same device-templated cases, compiled by nvcc.
#include "../image_test.cc"
