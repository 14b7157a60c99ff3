// The check that runs before any conversion: every node of the model must have a converter for
// the model's opset (or be a Constant, which the importer handles). All unsupported nodes are
// reported together in one error.
#pragma once

#include <map>
#include <string>

namespace onnx {
class GraphProto;
}

namespace kiln::onnx_import {

// Opset version per operator domain, from ModelProto.opset_import ("" is the default domain).
using OpsetVersions = std::map<std::string, int64_t>;

// Throws InputError listing each unsupported op as "OpType (opset N) at node 'name'" (nodes of
// the same op and opset grouped on one line).
void require_supported_ops(const onnx::GraphProto& graph, const OpsetVersions& opsets);

}  // namespace kiln::onnx_import
