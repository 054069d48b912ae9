#include "../onnx_oracle_test.cc"
