// mshadow/logging.h — the dmlc-style logging macros mshadow client code uses: CHECK(cond) << msg,
// CHECK_EQ / NE / LT / LE / GT / GE(a, b) << msg, LOG(FATAL) << msg, LOG(INFO | WARNING | ERROR) << msg.
// A failed check and LOG(FATAL) throw tensorexpr::Error with the streamed message (never abort); the
// others print one line to stderr. Each macro is defined only where nothing defined it first (glog,
// dmlc-core or a test framework), so including this next to those keeps theirs.
#pragma once
#include <exception>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>
#include "../base.h"

namespace mshadow {
namespace logging {

// Collects the streamed message; the destructor, at the end of the statement, throws it as an Error.
class FatalMessage {
 public:
  FatalMessage(const char* file, int line, const std::string& what) : exceptions_(std::uncaught_exceptions()) {
    os_ << file << ":" << line << ": " << what;
  }
  FatalMessage(const FatalMessage&) = delete;
  FatalMessage& operator=(const FatalMessage&) = delete;
  std::ostringstream& stream() { return os_; }
  // Not while another exception unwinds through the statement (streaming a value threw): that one wins.
  ~FatalMessage() noexcept(false) {
    if (std::uncaught_exceptions() == exceptions_) throw ::tensorexpr::Error(os_.str());
  }

 private:
  std::ostringstream os_;
  int exceptions_;
};

// LOG(INFO / WARNING / ERROR): one line on stderr, written when the statement ends.
class InfoMessage {
 public:
  InfoMessage(const char* file, int line, const char* severity) { os_ << severity << " " << file << ":" << line << ": "; }
  InfoMessage(const InfoMessage&) = delete;
  InfoMessage& operator=(const InfoMessage&) = delete;
  std::ostringstream& stream() { return os_; }
  ~InfoMessage() {
    os_ << "\n";
    std::cerr << os_.str();
  }

 private:
  std::ostringstream os_;
};

// CHECK_xx(a, b): a and b are evaluated once; on failure the message names the expression and both values.
#define TE_MSHADOW_CHECK_OP_FN_(NAME, OP)                                                                   \
  template <typename A, typename B>                                                                         \
  inline std::optional<std::string> NAME(const A& a, const B& b, const char* text) {                        \
    if (a OP b) return std::nullopt;                                                                        \
    return ::tensorexpr::Message("Check failed: ", text, " (", a, " vs. ", b, ") ");                        \
  }
TE_MSHADOW_CHECK_OP_FN_(CheckEQ, ==)
TE_MSHADOW_CHECK_OP_FN_(CheckNE, !=)
TE_MSHADOW_CHECK_OP_FN_(CheckLT, <)
TE_MSHADOW_CHECK_OP_FN_(CheckLE, <=)
TE_MSHADOW_CHECK_OP_FN_(CheckGT, >)
TE_MSHADOW_CHECK_OP_FN_(CheckGE, >=)
#undef TE_MSHADOW_CHECK_OP_FN_

}  // namespace logging
}  // namespace mshadow

// `while` rather than `if`: no dangling else when a check is the body of an unbraced if. The body throws,
// so it runs at most once.
#define TE_MSHADOW_CHECK_OP_(NAME, OP, a, b)                                                                \
  while (const std::optional<std::string> te_mshadow_failure_ =                                             \
             ::mshadow::logging::NAME((a), (b), #a " " #OP " " #b))                                         \
  ::mshadow::logging::FatalMessage(__FILE__, __LINE__, *te_mshadow_failure_).stream()

#ifndef CHECK
#define CHECK(cond) \
  while (!(cond)) ::mshadow::logging::FatalMessage(__FILE__, __LINE__, "Check failed: " #cond " ").stream()
#endif
#ifndef CHECK_EQ
#define CHECK_EQ(a, b) TE_MSHADOW_CHECK_OP_(CheckEQ, ==, a, b)
#endif
#ifndef CHECK_NE
#define CHECK_NE(a, b) TE_MSHADOW_CHECK_OP_(CheckNE, !=, a, b)
#endif
#ifndef CHECK_LT
#define CHECK_LT(a, b) TE_MSHADOW_CHECK_OP_(CheckLT, <, a, b)
#endif
#ifndef CHECK_LE
#define CHECK_LE(a, b) TE_MSHADOW_CHECK_OP_(CheckLE, <=, a, b)
#endif
#ifndef CHECK_GT
#define CHECK_GT(a, b) TE_MSHADOW_CHECK_OP_(CheckGT, >, a, b)
#endif
#ifndef CHECK_GE
#define CHECK_GE(a, b) TE_MSHADOW_CHECK_OP_(CheckGE, >=, a, b)
#endif

// LOG(severity): FATAL throws; INFO, WARNING and ERROR print.
#define TE_MSHADOW_LOG_FATAL ::mshadow::logging::FatalMessage(__FILE__, __LINE__, "")
#define TE_MSHADOW_LOG_INFO ::mshadow::logging::InfoMessage(__FILE__, __LINE__, "[INFO]")
#define TE_MSHADOW_LOG_WARNING ::mshadow::logging::InfoMessage(__FILE__, __LINE__, "[WARNING]")
#define TE_MSHADOW_LOG_ERROR ::mshadow::logging::InfoMessage(__FILE__, __LINE__, "[ERROR]")
#ifndef LOG
#define LOG(severity) TE_MSHADOW_LOG_##severity.stream()
#endif
