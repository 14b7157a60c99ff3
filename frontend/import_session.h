// The state one ONNX import shares with the NodeImporters of its converters: the graph being
// built, where external data lives, and import-time constant folding of emitted nodes.
#pragma once

#include <string>
#include <vector>

#include "ir/graph.h"

namespace onnx {
class NodeProto;
}

namespace kiln::onnx_import {

// The node's name, or "<op_type> #<index>" when the model left it empty.
std::string onnx_node_name(const onnx::NodeProto& node, size_t index);

// Whether `domain` is the default ONNX operator domain ("" or "ai.onnx").
bool is_default_domain(const std::string& domain);

class ImportSession {
 public:
  ImportSession(Graph& graph, std::string base_dir, bool fold_constants)
      : graph_(graph), base_dir_(std::move(base_dir)), fold_constants_(fold_constants) {}

  Graph& graph() { return graph_; }
  const std::string& base_dir() const { return base_dir_; }

  // Position of the ONNX node being converted in graph.node.
  size_t node_index() const { return node_index_; }
  void set_node_index(size_t index) { node_index_ = index; }

  // Adds a kiln node with `onnx_node` as provenance. When folding is on and every operand is a
  // constant with data, the node is evaluated with its reference kernel, removed, and its
  // results come back as new (unnamed) constants.
  std::vector<Value*> emit(const std::string& op, std::vector<Value*> operands, AttributeMap attrs,
                           const std::string& onnx_node);

 private:
  Graph& graph_;
  std::string base_dir_;
  bool fold_constants_;
  size_t node_index_ = 0;
};

}  // namespace kiln::onnx_import
