// Graphviz DOT output. Graph inputs and outputs are ellipses, constants 'note' shapes, nodes
// boxes labelled with the op and its ONNX provenance; edges carry the value's type. A fusion is
// a cluster (a framed box labelled with its op) around its body's nodes; edges run from outside
// producers straight to the body nodes that read them. Body constants are not drawn.
//
//   in0 [shape=ellipse, label="%x\nf32[1,3]"];
//   n0 [shape=box, label="relu\n/act/Relu"];
//   in0 -> n0 [label="f32[1,3]"];
#include "ir/dot.h"

#include <unordered_map>

namespace kiln {
namespace {

// A DOT double-quoted string; `text` may hold "\n" line breaks, written as DOT's \n.
std::string dot_quote(const std::string& text) {
  std::string quoted = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') {
      quoted += '\\';
      quoted += c;
    } else if (c == '\n') {
      quoted += "\\n";
    } else if (static_cast<unsigned char>(c) >= 0x20) {
      quoted += c;
    }
  }
  return quoted + "\"";
}

std::string value_label(const Value& value) {
  const std::string name = value.name().empty() ? "" : "%" + value.name() + "\n";
  return name + type_to_string(value.type());
}

class DotWriter {
 public:
  explicit DotWriter(const Graph& graph) : graph_(graph) {}

  std::string write() {
    out_ += "digraph " + dot_quote(graph_.name()) + " {\n";
    out_ += "  node [fontname=\"monospace\"];\n";
    out_ += "  edge [fontname=\"monospace\", fontsize=10];\n";
    write_sources();
    write_nodes();
    write_outputs();
    out_ += "}\n";
    return std::move(out_);
  }

 private:
  void write_sources() {
    const auto& inputs = graph_.inputs();
    for (size_t i = 0; i < inputs.size(); ++i) {
      const std::string id = "in" + std::to_string(i);
      dot_ids_[inputs[i]] = id;
      out_ += "  " + id + " [shape=ellipse, label=" + dot_quote(value_label(*inputs[i])) + "];\n";
    }
    const auto& constants = graph_.constants();
    for (size_t i = 0; i < constants.size(); ++i) {
      const std::string id = "c" + std::to_string(i);
      dot_ids_[constants[i]] = id;
      out_ += "  " + id +
              " [shape=note, fontsize=10, label=" + dot_quote(value_label(*constants[i])) + "];\n";
    }
  }

  void write_nodes() {
    const std::vector<Node*> nodes = graph_.nodes();
    for (size_t i = 0; i < nodes.size(); ++i) {
      const std::string id = "n" + std::to_string(i);
      if (nodes[i]->body()) {
        write_fusion(*nodes[i], id);
      } else {
        write_node(*nodes[i], id, "  ");
      }
    }
  }

  void write_node(const Node& node, const std::string& id, const std::string& indent) {
    std::string label = node.op();
    for (const std::string& onnx_name : node.provenance()) label += "\n" + onnx_name;
    out_ += indent + id + " [shape=box, label=" + dot_quote(label) + "];\n";
    for (const Value* operand : node.operands()) write_edge(operand, id);
    for (const Value* result : node.results()) dot_ids_[result] = id;
  }

  void write_fusion(const Node& fusion, const std::string& id) {
    const Graph& body = *fusion.body();
    out_ += "  subgraph cluster_" + id + " {\n";
    out_ += "    label=" + dot_quote(fusion.op()) + "; style=rounded; color=blue;\n";
    for (size_t i = 0; i < body.inputs().size() && i < fusion.operands().size(); ++i) {
      alias(body.inputs()[i], fusion.operand(i));
    }
    const std::vector<Node*> inner = body.nodes();
    for (size_t j = 0; j < inner.size(); ++j) {
      write_node(*inner[j], id + "_" + std::to_string(j), "    ");
    }
    out_ += "  }\n";
    for (size_t r = 0; r < fusion.results().size() && r < body.outputs().size(); ++r) {
      alias(fusion.result(r), body.outputs()[r]);
    }
  }

  // `value` is drawn where `same` is.
  void alias(const Value* value, const Value* same) {
    auto found = dot_ids_.find(same);
    if (found != dot_ids_.end()) dot_ids_[value] = found->second;
  }

  void write_outputs() {
    const auto& outputs = graph_.outputs();
    for (size_t i = 0; i < outputs.size(); ++i) {
      const std::string id = "out" + std::to_string(i);
      out_ +=
          "  " + id + " [shape=ellipse, label=" + dot_quote("output " + std::to_string(i)) + "];\n";
      write_edge(outputs[i], id);
    }
  }

  // An edge from the definition of `value` to `to`, labelled with the value's type (prefixed
  // with the result index for nodes of several results). Values defined nowhere are skipped.
  void write_edge(const Value* value, const std::string& to) {
    if (!value) return;
    auto found = dot_ids_.find(value);
    if (found == dot_ids_.end()) return;
    std::string label = type_to_string(value->type());
    const Node* producer = value->producer();
    if (producer && producer->results().size() > 1) {
      label = "#" + std::to_string(value->result_index()) + " " + label;
    }
    out_ += "  " + found->second + " -> " + to + " [label=" + dot_quote(label) + "];\n";
  }

  const Graph& graph_;
  std::unordered_map<const Value*, std::string> dot_ids_;
  std::string out_;
};

}  // namespace

std::string graph_to_dot(const Graph& graph) { return DotWriter(graph).write(); }

}  // namespace kiln
