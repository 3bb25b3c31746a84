#pragma once
// Expected failures as values. `Result<T>` mirrors the surface of C++23
// `std::expected<T, Status>` (has_value, value, error, operator*, operator->) so it can
// be swapped for the real thing later. The error is the one Status of cache/status.h.

#include <cstdlib>
#include <optional>
#include <string>
#include <utility>
#include <variant>

#include "cache/status.h"

namespace cache {

// Marker for the error branch, like std::unexpected.
struct Unexpected {
  Status status;
};

inline Unexpected fail(Reason reason, std::string message) { return Unexpected{Status{reason, std::move(message)}}; }

template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : state_(std::in_place_index<0>, std::move(value)) {}  // NOLINT: implicit like std::expected
  Result(Unexpected error) : state_(std::in_place_index<1>, std::move(error.status)) {}  // NOLINT

  bool has_value() const noexcept { return state_.index() == 0; }
  explicit operator bool() const noexcept { return has_value(); }

  // Reading the wrong branch is a programming error: abort loudly instead of UB.
  T& value() & { return *checkValue(); }
  const T& value() const& { return *checkValue(); }
  T&& value() && { return std::move(*checkValue()); }
  const Status& error() const {
    if (has_value()) std::abort();
    return std::get<1>(state_);
  }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return checkValue(); }
  const T* operator->() const { return checkValue(); }

 private:
  T* checkValue() {
    if (!has_value()) std::abort();
    return &std::get<0>(state_);
  }
  const T* checkValue() const {
    if (!has_value()) std::abort();
    return &std::get<0>(state_);
  }
  std::variant<T, Status> state_;
};

// Result<void>: success carries nothing.
template <>
class [[nodiscard]] Result<void> {
 public:
  Result() = default;
  Result(Unexpected error) : error_(std::move(error.status)) {}  // NOLINT

  bool has_value() const noexcept { return !error_.has_value(); }
  explicit operator bool() const noexcept { return has_value(); }
  const Status& error() const {
    if (has_value()) std::abort();
    return *error_;
  }

 private:
  std::optional<Status> error_;
};

}  // namespace cache
