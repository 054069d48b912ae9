#include "../embedding_test.cc"
