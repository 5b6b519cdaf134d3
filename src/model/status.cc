#include "gpuscaler/status.h"

namespace gpuscaler {

std::string_view ToString(ErrorCategory category) {
  switch (category) {
    case ErrorCategory::kTransient: return "transient";
    case ErrorCategory::kCapacity: return "capacity";
    case ErrorCategory::kThrottled: return "throttled";
    case ErrorCategory::kConfig: return "config";
    case ErrorCategory::kAuth: return "auth";
    case ErrorCategory::kNotFound: return "not-found";
    case ErrorCategory::kInvalidInput: return "invalid-input";
    case ErrorCategory::kInternal: return "internal";
  }
  return "unknown";
}

std::string Error::ToString() const {
  return std::string(gpuscaler::ToString(category_)) + ": " + message_;
}

}  // namespace gpuscaler
