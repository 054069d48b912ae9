// tests/dist/hex.h — bytes as lower-case hex, how the launcher tests pass an expected id to the probe ranks.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

inline std::string Hex(const std::vector<uint8_t>& bytes) {
  static const char digits[] = "0123456789abcdef";
  std::string text;
  for (uint8_t b : bytes) {
    text += digits[b >> 4];
    text += digits[b & 15];
  }
  return text;
}
