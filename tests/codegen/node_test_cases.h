// The ONNX backend node tests (tests/onnx/generate_node_tests.py) as the codegen tests use them:
// each case directory's model, imported, with its first data set's inputs and outputs.
#pragma once

#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "ir/tensor.h"

namespace kiln::testing {

// The subdirectories of `dir` that hold a model.onnx, sorted; throws InputError when none do.
std::vector<std::filesystem::path> find_node_test_cases(const std::filesystem::path& dir);

struct NodeTestCase {
  std::unique_ptr<Graph> graph;          // imported; inputs the importer needs as constants
                                         // (a Reshape's shape) are bound from the data set
  std::map<std::string, Tensor> inputs;  // test_data_set_0's inputs by name
  std::vector<Tensor> expected;          // test_data_set_0's outputs, in the graph's order
};

// Throws what importing throws (UnsupportedError for an op kiln does not have).
NodeTestCase load_node_test_case(const std::filesystem::path& dir);

}  // namespace kiln::testing
