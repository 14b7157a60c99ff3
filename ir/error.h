// Error types shared by every layer. Bad user input (a malformed model, a wrong input shape)
// throws InputError, which the CLI reports with exit code 2; a broken invariant inside kiln
// throws InternalError (exit code 3). Messages name the thing at fault.
#pragma once

#include <exception>
#include <stdexcept>
#include <string>

namespace kiln {

class InputError : public std::runtime_error {
 public:
  explicit InputError(const std::string& message) : std::runtime_error(message) {}
  // Throws a copy of this error, of the same type, with `prefix` before its message: for adding
  // context (a file, a node) on the way up without losing what kind of error it is.
  [[noreturn]] void rethrow_prefixed(const std::string& prefix) const {
    std::rethrow_exception(with_prefix(prefix));
  }

 protected:
  // Each subclass returns a copy of itself with the longer message.
  virtual std::exception_ptr with_prefix(const std::string& prefix) const {
    return std::make_exception_ptr(InputError(prefix + what()));
  }
};

// Input that is valid but that kiln does not support (an op, a data type, an attribute value).
// `kiln test-onnx` reports such cases as UNSUPPORTED rather than FAIL.
class UnsupportedError : public InputError {
 public:
  explicit UnsupportedError(const std::string& message) : InputError(message) {}

 protected:
  std::exception_ptr with_prefix(const std::string& prefix) const override {
    return std::make_exception_ptr(UnsupportedError(prefix + what()));
  }
};

class InternalError : public std::logic_error {
 public:
  explicit InternalError(const std::string& message) : std::logic_error(message) {}
};

}  // namespace kiln
