// A kernel's parameters: one `T*` per buffer it reads or writes, each tied to the IR value it
// holds. Inputs come first (in the order they were declared), then constants the kernel reads
// from weight buffers (in order of first use), then outputs, then at most one f32 workspace (a
// scratch buffer no IR value holds, which the kernels of one kernel node share: split-K's
// partial sums). Lowering (codegen/lower.h) maps each parameter to a Program buffer.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "codegen/output_placement.h"
#include "ir/graph.h"

namespace kiln::codegen {

struct KernelParam {
  enum class Role { kInput, kConstant, kOutput, kWorkspace };
  Role role;
  const Value* value;            // nullptr for the workspace
  std::string name;              // "in0", "const0", "out0", "workspace"
  int64_t workspace_floats = 0;  // the workspace's size
  // An output written into its slice of a concat's buffer (the pointer is that buffer's): the
  // kernel writes it through `placed_name`, a kiln_placed view mapping the output's flat index
  // to the buffer's.
  std::optional<OutputPlacement> placement = std::nullopt;
  std::string placed_name = "";
};

class KernelParams {
 public:
  // Declares an input; returns its name. Declaring a value again returns the first name.
  const std::string& add_input(const Value* value);
  // The parameter that reads `value`: a declared input, or a constant (added on first use).
  // Throws InternalError for a value that is neither.
  const std::string& read(const Value* value);
  bool is_input(const Value* value) const { return input_index_.count(value) != 0; }
  // Whether the kernel reads `value` from a buffer as it lies: a declared input, or a constant of
  // more than one element (a weight; a one-element constant is compiled in as a literal).
  bool reads_buffer(const Value* value) const {
    return is_input(value) || (value->is_constant() && value->type().num_elements() > 1);
  }
  // Declares an output parameter writing `value`; each call adds one. Returns the name its
  // elements are written through: the parameter, or for a placed output its kiln_placed view.
  const std::string& add_output(const Value* value,
                                const std::optional<OutputPlacement>& placement = std::nullopt);

  // Declares the f32 workspace of `floats` elements; returns its name.
  const std::string& add_workspace(int64_t floats);

  // In parameter order: inputs, constants, outputs, workspace.
  std::vector<KernelParam> all() const;
  // "const float* __restrict__ in0, unsigned short* __restrict__ out0".
  std::string signature() const;
  // The statements declaring the placed outputs' views, one a line ("" without any).
  std::string placed_declarations() const;

 private:
  std::vector<KernelParam> inputs_, constants_, outputs_, workspace_;
  std::map<const Value*, size_t> input_index_, constant_index_;
};

}  // namespace kiln::codegen
