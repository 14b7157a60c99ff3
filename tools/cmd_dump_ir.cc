// kiln dump-ir: prints a model's IR as text, DOT, JSON, or a short summary.
#include <CLI/CLI.hpp>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>

#include "ir/dot.h"
#include "ir/error.h"
#include "ir/fusion.h"
#include "ir/printer.h"
#include "tools/commands.h"
#include "tools/model_loading.h"
#include "tools/pass_options.h"

namespace kiln::tools {
namespace {

struct DumpIrOptions {
  std::string model;
  std::string format = "text";
  std::string output;
  std::vector<std::string> input_shapes;
  StageOptions stage;
};

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

// {"total", "fusions": {kind: count}, "unfused": {op: count}, "views"}: the kernels the graph
// launches (ir/fusion.h).
nlohmann::json kernels_json(const Graph& graph) {
  const KernelCounts counts = count_kernels(graph);
  return {{"total", counts.kernels},
          {"fusions", counts.fusions_by_kind},
          {"unfused", counts.unfused_by_op},
          {"views", counts.views}};
}

// {"graph", "inputs", "outputs", "nodes", "constants", "constant_bytes", "ops": {op: count},
//  "kernels": kernels_json}
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

int run_dump_ir(const DumpIrOptions& options) {
  onnx_import::ImportOptions import_options;
  import_options.input_shapes = parse_input_shapes(options.input_shapes);
  const std::unique_ptr<Graph> graph = load_model(options.model, import_options);
  apply_stage(*graph, options.stage);

  std::string text;
  if (options.format == "text") text = print_graph(*graph);
  if (options.format == "dot") text = graph_to_dot(*graph);
  if (options.format == "json") text = graph_json(*graph);
  if (options.format == "summary") text = graph_summary(*graph);

  if (options.output.empty()) {
    std::cout << text;
  } else {
    std::ofstream file(options.output);
    if (!(file << text)) throw InputError(options.output + ": cannot write");
  }
  return 0;
}

}  // namespace

void add_dump_ir_command(CLI::App& parent, int& exit_code) {
  auto options = std::make_shared<DumpIrOptions>();
  CLI::App* command =
      parent.add_subcommand("dump-ir", "Print a model's IR (text, dot, json, summary)");
  command->add_option("model", options->model, "MODEL.onnx or FILE.kir")->required();
  command->add_option("--format", options->format, "text (default), dot, json or summary")
      ->check(CLI::IsMember({"text", "dot", "json", "summary"}));
  command->add_option("-o,--output", options->output, "Write to FILE instead of stdout");
  command->add_option("--input-shape", options->input_shapes,
                      "Bind symbolic input dims: NAME=1x3x224x224 (repeatable)");
  add_stage_options(*command, options->stage);
  command->callback([options, &exit_code] { exit_code = run_dump_ir(*options); });
}

}  // namespace kiln::tools
