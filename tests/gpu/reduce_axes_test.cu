#include "../reduce_axes_test.cc"
