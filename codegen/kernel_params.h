// A kernel's parameters: one `T*` per buffer it reads or writes, each tied to the IR value it
// holds. Inputs come first (in the order they were declared), then constants the kernel reads
// from weight buffers (in order of first use), then outputs. Lowering (codegen/lower.h) maps
// each parameter's value to a Program buffer.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace kiln::codegen {

struct KernelParam {
  enum class Role { kInput, kConstant, kOutput };
  Role role;
  const Value* value;
  std::string name;  // "in0", "const0", "out0"
};

class KernelParams {
 public:
  // Declares an input; returns its name. Declaring a value again returns the first name.
  const std::string& add_input(const Value* value);
  // The parameter that reads `value`: a declared input, or a constant (added on first use).
  // Throws InternalError for a value that is neither.
  const std::string& read(const Value* value);
  bool is_input(const Value* value) const { return input_index_.count(value) != 0; }
  // Declares an output parameter writing `value`; each call adds one.
  const std::string& add_output(const Value* value);

  // In parameter order: inputs, constants, outputs.
  std::vector<KernelParam> all() const;
  // "const float* __restrict__ in0, unsigned short* __restrict__ out0".
  std::string signature() const;

 private:
  std::vector<KernelParam> inputs_, constants_, outputs_;
  std::map<const Value*, size_t> input_index_, constant_index_;
};

}  // namespace kiln::codegen
