// SPDX-License-Identifier: BSD-3-Clause
// result: the value-or-error type used on request paths (Boost 1.74 has no system::result).
#pragma once

#include <string>
#include <utility>
#include <variant>

#include "common/assert.h"

namespace cellgate::common {

// What went wrong, in terms an HTTP or CLI boundary can render: an error kind,
// a short reason (HTTP reason phrase style) and a human message.
enum class Errc {
  kBadRequest,       // malformed input (400)
  kUnauthorized,     // missing or bad credentials (401)
  kForbidden,        // policy or quota refused it (403)
  kNotFound,         // no such thing, or not yours (404)
  kConflict,         // state conflict (409)
  kTooLarge,         // a configured size bound was hit (413)
  kInsufficientStorage,  // a storage quota is full (507)
  kTooManyRequests,  // the caller's own bound on requests in flight or waiting was hit (429)
  kUnavailable,      // temporarily cannot serve (503)
  kTimeout,          // a deadline expired (504)
  kInternal,         // our fault or the system's (500)
};

struct Error {
  Errc code = Errc::kInternal;
  std::string message;
  int sys_errno = 0;  // errno when a system call failed, else 0
};

inline Error make_error(Errc code, std::string message, int sys_errno = 0) {
  return Error{code, std::move(message), sys_errno};
}

// Result<T>: either a T or an Error. Deliberately tiny: has_value, value, error.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}                     // NOLINT(implicit)
  Result(Error error) : v_(std::move(error)) {}                 // NOLINT(implicit)
  bool has_value() const { return v_.index() == 0; }
  explicit operator bool() const { return has_value(); }
  T& value() & { CELLGATE_ASSERT(has_value()); return std::get<0>(v_); }
  const T& value() const& { CELLGATE_ASSERT(has_value()); return std::get<0>(v_); }
  T&& value() && { CELLGATE_ASSERT(has_value()); return std::get<0>(std::move(v_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const Error& error() const { CELLGATE_ASSERT(!has_value()); return std::get<1>(v_); }

 private:
  std::variant<T, Error> v_;
};

struct Ok {};
using Status = Result<Ok>;
inline Status ok() { return Ok{}; }

}  // namespace cellgate::common
