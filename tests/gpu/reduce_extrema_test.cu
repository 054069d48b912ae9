#include "../reduce_extrema_test.cc"
