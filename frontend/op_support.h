// The check that runs before any conversion: every node of the model must have a converter for
// the model's opset. All unsupported nodes are reported together in one error.
#pragma once

#include <map>
#include <string>

namespace onnx {
class GraphProto;
class ModelProto;
class NodeProto;
}  // namespace onnx

namespace kiln::onnx_import {

// Opset version per operator domain, from ModelProto.opset_import ("" is the default domain).
using OpsetVersions = std::map<std::string, int64_t>;

// The model's opset_import as OpsetVersions ("ai.onnx" is filed under "").
OpsetVersions opset_versions(const onnx::ModelProto& model);

// Whether kiln has a converter for `node` at the opset its domain is imported at.
bool is_supported(const onnx::NodeProto& node, const OpsetVersions& opsets);

// Throws InputError listing each unsupported op as "OpType (opset N) at node 'name'" (nodes of
// the same op and opset grouped on one line).
void require_supported_ops(const onnx::GraphProto& graph, const OpsetVersions& opsets);

}  // namespace kiln::onnx_import
