// Collecting every unsupported node of a model into one error.
#include "frontend/op_support.h"

#include <algorithm>
#include <vector>

#include "frontend/import_session.h"
#include "frontend/node_importer.h"
#include "ir/error.h"
#include "onnx/onnx.pb.h"

namespace kiln::onnx_import {
namespace {

// Node names listed per op before the rest are only counted.
constexpr size_t kMaxNamesPerOp = 8;

// "Gelu (opset 17)" or "com.microsoft.FusedConv (opset 1)".
std::string describe_op(const onnx::NodeProto& node, const OpsetVersions& opsets) {
  const bool default_domain = is_default_domain(node.domain());
  const std::string domain = default_domain ? "" : node.domain();
  auto opset = opsets.find(domain);
  std::string text = default_domain ? node.op_type() : domain + "." + node.op_type();
  if (opset != opsets.end()) return text + " (opset " + std::to_string(opset->second) + ")";
  return text + " (domain not in opset_import)";
}

struct UnsupportedOp {
  std::string op;  // describe_op()
  std::vector<std::string> nodes;
};

std::string format_line(const UnsupportedOp& op) {
  std::string line = "  " + op.op + " at node" + (op.nodes.size() > 1 ? "s " : " ");
  for (size_t i = 0; i < op.nodes.size() && i < kMaxNamesPerOp; ++i) {
    line += (i ? ", '" : "'") + op.nodes[i] + "'";
  }
  if (op.nodes.size() > kMaxNamesPerOp) {
    line += " and " + std::to_string(op.nodes.size() - kMaxNamesPerOp) + " more";
  }
  return line;
}

}  // namespace

OpsetVersions opset_versions(const onnx::ModelProto& model) {
  OpsetVersions opsets;
  for (const onnx::OperatorSetIdProto& entry : model.opset_import()) {
    opsets[is_default_domain(entry.domain()) ? "" : entry.domain()] = entry.version();
  }
  return opsets;
}

bool is_supported(const onnx::NodeProto& node, const OpsetVersions& opsets) {
  auto opset = opsets.find("");
  if (!is_default_domain(node.domain()) || opset == opsets.end()) return false;
  return ConverterTable::global().find(node.op_type(), static_cast<int>(opset->second)) != nullptr;
}

void require_supported_ops(const onnx::GraphProto& graph, const OpsetVersions& opsets) {
  std::vector<UnsupportedOp> unsupported;  // in order of first appearance
  size_t count = 0;
  for (int i = 0; i < graph.node_size(); ++i) {
    const onnx::NodeProto& node = graph.node(i);
    if (is_supported(node, opsets)) continue;
    ++count;
    const std::string op = describe_op(node, opsets);
    auto same = std::find_if(unsupported.begin(), unsupported.end(),
                             [&](const UnsupportedOp& entry) { return entry.op == op; });
    if (same == unsupported.end()) same = unsupported.insert(unsupported.end(), {op, {}});
    same->nodes.push_back(onnx_node_name(node, static_cast<size_t>(i)));
  }
  if (unsupported.empty()) return;
  std::string message = std::to_string(count) + " node" + (count > 1 ? "s use" : " uses") +
                        " ONNX ops kiln does not support:";
  for (const UnsupportedOp& op : unsupported) message += "\n" + format_line(op);
  throw UnsupportedError(message);
}

}  // namespace kiln::onnx_import
