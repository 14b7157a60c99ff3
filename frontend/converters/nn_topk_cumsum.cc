// ONNX TopK, CumSum and CumProd -> kiln top_k / cum_sum / cum_prod, with their K and axis inputs
// read as compile-time constants into attributes.
#include "frontend/converters/layout_converters.h"
#include "frontend/converters/nn_converters.h"

namespace kiln::onnx_import {
namespace {

constexpr char kCumSum[] = "cum_sum";
constexpr char kCumProd[] = "cum_prod";

std::vector<Value*> convert_top_k(NodeImporter& node) {
  const int64_t rank = node.input(0)->type().rank();
  const int64_t axis = normalized_axes(node, {node.attr_int("axis", -1)}, rank)[0];
  return node.emit("top_k", {node.input(0)},
                   {{"k", constant_int(node, 1, "K")},
                    {"axis", axis},
                    {"largest", node.attr_int("largest", 1)},
                    {"sorted", node.attr_int("sorted", 1)}});
}

template <const char* kOp>
std::vector<Value*> convert_cumulative(NodeImporter& node) {
  const int64_t rank = node.input(0)->type().rank();
  const int64_t axis = normalized_axes(node, {constant_int(node, 1, "axis")}, rank)[0];
  return {node.emit1(kOp, {node.input(0)},
                     {{"axis", axis},
                      {"exclusive", node.attr_int("exclusive", 0)},
                      {"reverse", node.attr_int("reverse", 0)}})};
}

}  // namespace

void register_topk_cumsum_converters(ConverterTable& table) {
  table.add("TopK", 13, convert_top_k);
  table.add("CumSum", 13, convert_cumulative<kCumSum>);
  table.add("CumProd", 26, convert_cumulative<kCumProd>);
}

}  // namespace kiln::onnx_import
