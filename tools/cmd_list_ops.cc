// kiln list-ops: prints the op table (kiln ops with their fusion category and attributes), or with
// --onnx the ONNX op types kiln imports.
#include <CLI/CLI.hpp>
#include <iostream>
#include <memory>

#include "frontend/node_importer.h"
#include "ir/op_registry.h"
#include "tools/commands.h"

namespace kiln::tools {
namespace {

int list_kiln_ops() {
  const std::vector<const OpInfo*> ops = OpRegistry::global().all();
  for (const OpInfo* op : ops) {
    std::cout << op->name << "  [" << op_category_name(op->category) << "]";
    for (const AttrSpec& attr : op->attrs) {
      std::cout << " " << attr.name << ":" << attr_kind_name(attr.kind)
                << (attr.default_value ? "" : "!");
    }
    std::cout << "\n";
  }
  std::cout << ops.size() << " kiln ops (attribute:kind, ! = required)\n";
  return 0;
}

int list_onnx_ops() {
  const std::vector<std::string> op_types = onnx_import::ConverterTable::global().op_types();
  for (const std::string& op_type : op_types) std::cout << op_type << "\n";
  std::cout << op_types.size() << " ONNX op types\n";
  return 0;
}

}  // namespace

void add_list_ops_command(CLI::App& parent, int& exit_code) {
  auto onnx = std::make_shared<bool>(false);
  CLI::App* command =
      parent.add_subcommand("list-ops", "List kiln's ops, or the ONNX ops it imports");
  command->add_flag("--onnx", *onnx, "List the ONNX op types kiln imports instead");
  command->callback([onnx, &exit_code] { exit_code = *onnx ? list_onnx_ops() : list_kiln_ops(); });
}

}  // namespace kiln::tools
