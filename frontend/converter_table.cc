// The table of ONNX op converters, by op type and the opset each converter starts at.
#include <algorithm>

#include "frontend/node_importer.h"
#include "ir/error.h"

namespace kiln::onnx_import {

const ConverterTable& ConverterTable::global() {
  static const ConverterTable table = [] {
    ConverterTable built;
    register_elementwise_converters(built);
    register_nn_converters(built);
    register_layout_converters(built);
    return built;
  }();
  return table;
}

void ConverterTable::add(const std::string& op_type, int since_opset, ConvertFn convert) {
  for (const Entry& entry : entries_) {
    if (entry.op_type == op_type && entry.since_opset == since_opset) {
      throw InternalError("ONNX converter for " + op_type + " since opset " +
                          std::to_string(since_opset) + " registered twice");
    }
  }
  entries_.push_back({op_type, since_opset, convert});
}

ConvertFn ConverterTable::find(const std::string& op_type, int opset) const {
  const Entry* best = nullptr;
  for (const Entry& entry : entries_) {
    if (entry.op_type == op_type && entry.since_opset <= opset &&
        (!best || entry.since_opset > best->since_opset)) {
      best = &entry;
    }
  }
  return best ? best->convert : nullptr;
}

std::vector<std::string> ConverterTable::op_types() const {
  std::vector<std::string> names;
  for (const Entry& entry : entries_) names.push_back(entry.op_type);
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  return names;
}

}  // namespace kiln::onnx_import
