// Loading the model a command works on: an ONNX file (imported) or kiln IR text (.kir, parsed),
// and the --input-shape option shared by the commands.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "frontend/onnx_importer.h"
#include "ir/graph.h"

namespace kiln::tools {

// Parses "NAME=1x3x224x224" specs; throws InputError naming the bad spec.
std::map<std::string, Shape> parse_input_shapes(const std::vector<std::string>& specs);

// .onnx -> import with `options`; .kir -> parse; anything else -> InputError.
std::unique_ptr<Graph> load_model(const std::string& path,
                                  const onnx_import::ImportOptions& options = {});

}  // namespace kiln::tools
