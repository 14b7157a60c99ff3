// Error types shared by every layer. Bad user input (a malformed model, a wrong input shape)
// throws InputError, which the CLI reports with exit code 2; a broken invariant inside kiln
// throws InternalError (exit code 3). Messages name the thing at fault.
#pragma once

#include <stdexcept>
#include <string>

namespace kiln {

class InputError : public std::runtime_error {
 public:
  explicit InputError(const std::string& message) : std::runtime_error(message) {}
};

// Input that is valid but that kiln does not support (an op, a data type, an attribute value).
// `kiln test-onnx` reports such cases as UNSUPPORTED rather than FAIL.
class UnsupportedError : public InputError {
 public:
  explicit UnsupportedError(const std::string& message) : InputError(message) {}
};

class InternalError : public std::logic_error {
 public:
  explicit InternalError(const std::string& message) : std::logic_error(message) {}
};

}  // namespace kiln
