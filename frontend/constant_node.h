// ONNX Constant nodes, which the importer turns into graph constants itself.
#pragma once

#include <string>

#include "ir/tensor.h"

namespace onnx {
class NodeProto;
}

namespace kiln::onnx_import {

// The value of a Constant node: from exactly one of value, value_float(s), value_int(s).
// sparse_value and string values throw InputError naming the node.
Tensor constant_node_value(const onnx::NodeProto& node, const std::string& node_name,
                           const std::string& base_dir);

}  // namespace kiln::onnx_import
