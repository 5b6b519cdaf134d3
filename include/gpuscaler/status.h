// Status and Result<T>: how every function that can fail across a module
// boundary reports it. Nothing crosses a module boundary by throwing.
//
// An Error has a category (what the caller should do about it) and a message
// (what a person reads). Callers branch on the category, never on the text.
// Result<T> is shaped like std::expected<T, Error> (has_value, value, error,
// operator bool, operator*, operator->) so it can be swapped for it once the
// toolchain has C++23.
#pragma once

#include <cassert>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace gpuscaler {

enum class ErrorCategory {
  kTransient,  // retry with backoff
  kCapacity,   // the cloud has no capacity for this offering: try another
  kThrottled,  // the peer asked us to slow down: back off longer
  kConfig,     // bad configuration or policy: reject it, keep the last good
  kAuth,       // credentials or permissions: stop and alert
  kNotFound,   // the thing asked for does not exist
  kInvalidInput,  // malformed input data (trace row, snapshot, request)
  kInternal,   // a bug
};

std::string_view ToString(ErrorCategory category);

class Error {
 public:
  Error(ErrorCategory category, std::string message)
      : category_(category), message_(std::move(message)) {}

  static Error Transient(std::string m) { return {ErrorCategory::kTransient, std::move(m)}; }
  static Error Capacity(std::string m) { return {ErrorCategory::kCapacity, std::move(m)}; }
  static Error Throttled(std::string m) { return {ErrorCategory::kThrottled, std::move(m)}; }
  static Error Config(std::string m) { return {ErrorCategory::kConfig, std::move(m)}; }
  static Error Auth(std::string m) { return {ErrorCategory::kAuth, std::move(m)}; }
  static Error NotFound(std::string m) { return {ErrorCategory::kNotFound, std::move(m)}; }
  static Error InvalidInput(std::string m) { return {ErrorCategory::kInvalidInput, std::move(m)}; }
  static Error Internal(std::string m) { return {ErrorCategory::kInternal, std::move(m)}; }

  ErrorCategory category() const { return category_; }
  const std::string& message() const { return message_; }
  // "config: policy.yaml:3:5: pools[0].max_nodes: must be >= min_nodes"
  std::string ToString() const;

  // Same category, message prefixed with context ("loading catalog: ...").
  Error WithContext(std::string_view context) const {
    return Error(category_, std::string(context) + ": " + message_);
  }

 private:
  ErrorCategory category_;
  std::string message_;
};

// Success, or an Error.
class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(Error error) : error_(std::move(error)) {}  // NOLINT: implicit by design
  static Status Ok() { return {}; }

  bool ok() const { return !error_.has_value(); }
  explicit operator bool() const { return ok(); }
  const Error& error() const {
    assert(error_.has_value());
    return *error_;
  }

 private:
  std::optional<Error> error_;
};

// A value of type T, or an Error.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::in_place_index<0>, std::move(value)) {}  // NOLINT
  Result(Error error) : v_(std::in_place_index<1>, std::move(error)) {}  // NOLINT

  bool has_value() const { return v_.index() == 0; }
  bool ok() const { return has_value(); }
  explicit operator bool() const { return has_value(); }

  T& value() & {
    assert(has_value());
    return std::get<0>(v_);
  }
  const T& value() const& {
    assert(has_value());
    return std::get<0>(v_);
  }
  T&& value() && {
    assert(has_value());
    return std::get<0>(std::move(v_));
  }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

  const Error& error() const {
    assert(!has_value());
    return std::get<1>(v_);
  }
  Status status() const { return has_value() ? Status() : Status(error()); }

 private:
  std::variant<T, Error> v_;
};

}  // namespace gpuscaler
