// Status and Result: errors as values (STYLE.md point 13).
//
// Library code never throws across its boundary; it returns a Status (or a Result<T> that holds
// either a T or a non-OK Status). A message says what went wrong, where, and what was expected,
// in words a user can act on. The code classifies the error so the CLI can map it to an exit code.
//
// Thread safety: values; no shared state. Determinism: messages must not contain addresses,
// clocks or other run-dependent data when they end up in a hashed artifact.
#ifndef DETRAIN_BASE_STATUS_H_
#define DETRAIN_BASE_STATUS_H_

#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace detrain {

enum class StatusCode {
  kOk = 0,
  kInvalidArgument,     // bad user input: flags, file contents, program text
  kNotFound,            // a named file, tensor or symbol does not exist
  kIoError,             // the operating system refused a read or write
  kFailedPrecondition,  // the request is well formed but cannot be done in this state
  kDataLoss,            // stored evidence is corrupt or truncated
  kVerificationFailed,  // evidence is well formed but does not match
  kUnimplemented,
  kInternal,   // a broken invariant inside detrain
  kCancelled,  // stopped because another party stopped: rank 0 of a multi-process run
  // This machine, or the way the user asked for the work, cannot do it — no GPU, an ISA this
  // CPU lacks, a device count the program's shards do not allow, —
  // though the input is fine. Never about the input: a verifier reports it as an error of its
  // own options (exit 2), never as a verdict on a bundle.
  kUnavailable,
  // The memory budget (base/budget.h, --max-memory) refuses what the input declares: a limit
  // of this machine's or this user's, not a fault of the input.
  kResourceExhausted,
};

std::string_view StatusCodeName(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;  // OK
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status Ok() { return Status(); }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }

  // "invalid argument: <message>", or "ok".
  std::string ToString() const;

  // Returns a copy whose message is "<prefix>: <message>"; OK stays OK.
  Status WithContext(std::string_view prefix) const;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

inline Status InvalidArgument(std::string m) {
  return {StatusCode::kInvalidArgument, std::move(m)};
}
inline Status NotFound(std::string m) { return {StatusCode::kNotFound, std::move(m)}; }
inline Status IoError(std::string m) { return {StatusCode::kIoError, std::move(m)}; }
inline Status Unavailable(std::string m) { return {StatusCode::kUnavailable, std::move(m)}; }
inline Status FailedPrecondition(std::string m) {
  return {StatusCode::kFailedPrecondition, std::move(m)};
}
inline Status DataLoss(std::string m) { return {StatusCode::kDataLoss, std::move(m)}; }
inline Status VerificationFailed(std::string m) {
  return {StatusCode::kVerificationFailed, std::move(m)};
}
inline Status Unimplemented(std::string m) { return {StatusCode::kUnimplemented, std::move(m)}; }
inline Status Internal(std::string m) { return {StatusCode::kInternal, std::move(m)}; }
inline Status Cancelled(std::string m) { return {StatusCode::kCancelled, std::move(m)}; }
inline Status ResourceExhausted(std::string m) {
  return {StatusCode::kResourceExhausted, std::move(m)};
}

// Either a value or a non-OK Status. Constructing a Result from an OK Status is an internal
// error and yields kInternal.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}        // NOLINT(google-explicit-constructor)
  Result(Status status) : v_(std::move(status)) {  // NOLINT(google-explicit-constructor)
    if (std::get<Status>(v_).ok()) v_ = Internal("Result constructed from an OK status");
  }

  bool ok() const { return std::holds_alternative<T>(v_); }
  const Status& status() const {
    static const Status kOkStatus;
    return ok() ? kOkStatus : std::get<Status>(v_);
  }
  T& value() & { return std::get<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace detrain

#define DETRAIN_CONCAT_INNER_(a, b) a##b
#define DETRAIN_CONCAT_(a, b) DETRAIN_CONCAT_INNER_(a, b)

// Evaluates `expr` (a Status); returns it from the enclosing function if it is not OK.
#define DETRAIN_RETURN_IF_ERROR(expr)                  \
  do {                                                 \
    ::detrain::Status detrain_status_ = (expr);        \
    if (!detrain_status_.ok()) return detrain_status_; \
  } while (0)

// `DETRAIN_ASSIGN_OR_RETURN(auto x, F());` declares x from F()'s value or returns its error.
#define DETRAIN_ASSIGN_OR_RETURN(lhs, expr) \
  DETRAIN_ASSIGN_OR_RETURN_IMPL_(DETRAIN_CONCAT_(detrain_result_, __LINE__), lhs, expr)
#define DETRAIN_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                                   \
  if (!tmp.ok()) return tmp.status();                  \
  lhs = std::move(tmp).value()

#endif  // DETRAIN_BASE_STATUS_H_
