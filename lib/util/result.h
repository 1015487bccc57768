// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// How a fallible step says it failed. One rule for the whole tree
// (CONTRIBUTING.md, "Errors"):
//   - Code that links LLVM (linkd-lld, lib/rewrite, lib/archive, the audit's
//     readers) uses llvm::Expected<T> and llvm::Error, as LLVM and LLD do.
//   - Elsewhere, a step that returns a value returns Result<T>: the value,
//     or the message saying why there is none.
//   - A step with nothing to return returns std::string: empty when it
//     succeeded, else the message
//     (`if (std::string e = step(); !e.empty()) return e;`).
// A message names what it is about (the file, the archive member, the
// symbol) and why, in words the user can act on; a caller adds where it
// happened and never repeats what the message says. Failures of caches and
// remotes are values (a miss, counted and logged), never exceptions.
// `std::string *error` out-parameters and std::optional-plus-message pairs
// are the older forms; code that is touched moves to the rule.
#pragma once

#include <optional>
#include <string>
#include <utility>

namespace linkd {

// The failure of a step: `return Failure{"a.o: not an object"};` converts
// to any Result<T>.
struct Failure {
  std::string message;
};

// A value, or why there is none.
template <class T> class [[nodiscard]] Result {
public:
  Result(T value) : value_(std::move(value)) {} // NOLINT: implicit by design
  Result(Failure f) : error_(std::move(f.message)) {} // NOLINT: ditto

  bool ok() const { return value_.has_value(); }
  explicit operator bool() const { return ok(); }
  T &operator*() { return *value_; }
  const T &operator*() const { return *value_; }
  T *operator->() { return &*value_; }
  const T *operator->() const { return &*value_; }
  // The value, or `fallback` after a failure.
  T value_or(const T &fallback) const & { return value_ ? *value_ : fallback; }
  // Why the step failed ("" when it did not).
  const std::string &error() const { return error_; }

private:
  std::optional<T> value_;
  std::string error_;
};

} // namespace linkd
