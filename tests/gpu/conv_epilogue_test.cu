#include "../conv_epilogue_test.cc"
