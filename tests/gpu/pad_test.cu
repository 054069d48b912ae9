#include "../pad_test.cc"
