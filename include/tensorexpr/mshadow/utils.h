// mshadow/utils.h — mshadow's printf-style checks, mshadow::utils::Check / Assert / Error(fmt, ...), which
// mshadow-ps and older client code call. mshadow printed the message and exited; these throw
// tensorexpr::Error with it, as the CHECK macros do (mshadow/logging.h).
#pragma once
#include <cstdarg>
#include <cstdio>
#include <string>
#include "../base.h"

namespace mshadow {
namespace utils {

namespace detail {
#if defined(__GNUC__)
__attribute__((format(printf, 1, 0)))
#endif
inline std::string FormatV(const char* fmt, va_list args) {
  va_list measure;
  va_copy(measure, args);
  const int length = std::vsnprintf(nullptr, 0, fmt, measure);
  va_end(measure);
  if (length < 0) return std::string("(unprintable message: ") + fmt + ")";
  std::string text(static_cast<size_t>(length) + 1, '\0');
  std::vsnprintf(&text[0], text.size(), fmt, args);
  text.resize(static_cast<size_t>(length));
  return text;
}
}  // namespace detail

// Formats the calling function's variable arguments with fmt and throws Error(prefix + message). A macro,
// because va_start and va_end must stand in the variadic function itself.
#define TE_MSHADOW_THROW_FORMATTED_(prefix, fmt)                      \
  do {                                                                \
    va_list args_;                                                    \
    va_start(args_, fmt);                                             \
    const std::string message_ = detail::FormatV(fmt, args_);         \
    va_end(args_);                                                    \
    throw ::tensorexpr::Error(std::string(prefix) + message_);        \
  } while (false)

// Throws Error with the formatted message.
[[noreturn]]
#if defined(__GNUC__)
__attribute__((format(printf, 1, 2)))
#endif
inline void Error(const char* fmt, ...) {
  TE_MSHADOW_THROW_FORMATTED_("", fmt);
}

// Throws Error with the formatted message when exp is false (a user's input was wrong).
#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
inline void Check(bool exp, const char* fmt, ...) {
  if (!exp) TE_MSHADOW_THROW_FORMATTED_("", fmt);
}

// The same for an internal invariant; the message says it was an assertion.
#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
inline void Assert(bool exp, const char* fmt, ...) {
  if (!exp) TE_MSHADOW_THROW_FORMATTED_("AssertError: ", fmt);
}

#undef TE_MSHADOW_THROW_FORMATTED_

}  // namespace utils
}  // namespace mshadow
