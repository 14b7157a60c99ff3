// Graph dumps (see the header).
#include "kiln/ir_dump.h"

#include <map>
#include <nlohmann/json.hpp>

#include "ir/dot.h"
#include "ir/error.h"
#include "ir/fusion.h"
#include "ir/printer.h"

namespace kiln {
namespace {

nlohmann::json type_json(const Value* value) {
  return {{"name", value->name()},
          {"dtype", std::string(dtype_name(value->type().dtype))},
          {"shape", value->type().shape}};
}

std::map<std::string, int> op_counts(const Graph& graph) {
  std::map<std::string, int> counts;
  for (const Node* node : graph.nodes()) ++counts[node->op()];
  return counts;
}

size_t constant_bytes(const Graph& graph) {
  size_t bytes = 0;
  for (const Value* constant : graph.constants()) bytes += constant->type().num_bytes();
  return bytes;
}

// The kernels the graph launches (ir/fusion.h).
nlohmann::json kernels_json(const Graph& graph) {
  const KernelCounts counts = count_kernels(graph);
  return {{"total", counts.kernels},
          {"fusions", counts.fusions_by_kind},
          {"unfused", counts.unfused_by_op},
          {"views", counts.views}};
}

std::string graph_json(const Graph& graph) {
  nlohmann::json json;
  json["graph"] = graph.name();
  json["inputs"] = nlohmann::json::array();
  for (const Value* input : graph.inputs()) json["inputs"].push_back(type_json(input));
  json["outputs"] = nlohmann::json::array();
  for (const Value* output : graph.outputs()) json["outputs"].push_back(type_json(output));
  json["nodes"] = graph.num_nodes();
  json["constants"] = graph.constants().size();
  json["constant_bytes"] = constant_bytes(graph);
  json["ops"] = op_counts(graph);
  json["kernels"] = kernels_json(graph);
  return json.dump(2) + "\n";
}

std::string graph_summary(const Graph& graph) {
  std::string text = "graph @" + graph.name() + ": " + std::to_string(graph.num_nodes()) +
                     " nodes, " + std::to_string(graph.constants().size()) + " constants (" +
                     std::to_string(constant_bytes(graph)) + " bytes)\n";
  for (const Value* input : graph.inputs()) {
    text += "  input  " + input->name() + ": " + type_to_string(input->type()) + "\n";
  }
  for (const Value* output : graph.outputs()) {
    text += "  output " + output->name() + ": " + type_to_string(output->type()) + "\n";
  }
  text += "  ops:";
  for (const auto& [op, count] : op_counts(graph)) text += " " + op + "=" + std::to_string(count);
  const KernelCounts kernels = count_kernels(graph);
  text += "\n  kernels: " + std::to_string(kernels.kernels) + " (" +
          std::to_string(kernels.fusions) + " fusions, " +
          std::to_string(kernels.kernels - kernels.fusions) + " unfused ops; " +
          std::to_string(kernels.views) + " reshapes cost none)";
  return text + "\n";
}

}  // namespace

DumpFormat parse_dump_format(const std::string& name) {
  if (name == "text") return DumpFormat::kText;
  if (name == "dot") return DumpFormat::kDot;
  if (name == "json") return DumpFormat::kJson;
  if (name == "summary") return DumpFormat::kSummary;
  throw InputError("unknown dump format '" + name + "' (formats: text, dot, json, summary)");
}

std::string dump_graph(const Graph& graph, DumpFormat format) {
  switch (format) {
    case DumpFormat::kText:
      return print_graph(graph);
    case DumpFormat::kDot:
      return graph_to_dot(graph);
    case DumpFormat::kJson:
      return graph_json(graph);
    case DumpFormat::kSummary:
      return graph_summary(graph);
  }
  throw InternalError("unknown DumpFormat value");
}

}  // namespace kiln
