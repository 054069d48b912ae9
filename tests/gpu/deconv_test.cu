#include "../deconv_test.cc"
