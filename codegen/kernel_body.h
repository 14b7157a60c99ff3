// What one kernel computes, whether it comes from a fusion node or a single op: the values it
// reads from its input parameters, the values it writes, and the ops in between.
#pragma once

#include <initializer_list>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "codegen/output_placement.h"
#include "ir/graph.h"

namespace kiln::codegen {

struct KernelBody {
  std::string kind;                  // "loop", "multi", "reduction", or a single node's op
  std::vector<const Value*> inputs;  // read from input parameters, in parameter order
  // The inputs that a fusion node's constant operands feed: their parameters point into the
  // weights (aligned to kWeightAlignment), never at a graph input.
  std::set<const Value*> weight_inputs;
  std::vector<const Value*> outputs;    // written to output parameters, in parameter order
  // Outputs written into their slice of a concat's buffer (output_placement.h); the others fill
  // buffers of their own.
  std::map<const Value*, OutputPlacement> placements;
  std::vector<const Node*> nodes;       // the ops, in topological order
  std::vector<std::string> provenance;  // the ONNX nodes it covers
};

// A fusion node's body (inputs: the body's inputs), or a single node (inputs: its operands
// that are not constants; constants are read from weight buffers or inlined).
KernelBody kernel_body_of(const Node& node);

// A kernel copying `value` (one input) to one output: for a graph output that needs a buffer
// of its own (runtime/program.h).
KernelBody copy_kernel_body(const Value* value);

// The body's first node whose op is one of `ops` (an emitter's anchor), or nullptr.
const Node* first_node_of(const KernelBody& body, std::initializer_list<std::string_view> ops);

// The body's ops, by name, each once, in order (for kernel names).
std::vector<std::string> distinct_ops(const KernelBody& body);

// The C type of the kernel's indices: "int" when every tensor it touches, plus `slack` (how far
// a grid-stride loop may step past the end), stays below 2^31 elements; else "long long".
std::string index_type_for(const KernelBody& body, int64_t slack);

}  // namespace kiln::codegen
