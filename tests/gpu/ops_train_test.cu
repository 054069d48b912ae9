#include "../ops_train_test.cc"
