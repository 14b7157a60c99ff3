// The ONNX backend node tests (tests/onnx/generate_node_tests.py) as the codegen tests use them:
// each case directory's model, imported, with each data set's inputs and outputs.
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

// One data set of a case, with the model imported for it.
struct NodeTestCase {
  std::unique_ptr<Graph> graph;          // imported; inputs the importer needs as constants
                                         // (a Reshape's shape) are bound from the data set
  std::map<std::string, Tensor> inputs;  // the data set's inputs by name
  std::vector<Tensor> expected;          // its outputs, in the graph's order
};

// Every test_data_set_* of the case in `dir`, in order (at least one). Throws InputError for a
// case without data sets and what importing throws (UnsupportedError for an op kiln does not
// have).
std::vector<NodeTestCase> load_node_test_data_sets(const std::filesystem::path& dir);

// The first data set of the case in `dir` (enough to lower and compile its kernels).
NodeTestCase load_node_test_case(const std::filesystem::path& dir);

}  // namespace kiln::testing
