// The CUDA expression table: for each elementwise and broadcast op of the op table (ir/), one
// result element as a CUDA C++ expression of its operands' elements (codegen/cuda_expr.h says how
// patterns read). Loop, reduction and contraction kernels compute such ops through it. The IR
// knows nothing of it: adding an elementwise op means an op-table entry (ir/ops/), an entry here,
// and tests; tests/unit/op_expressions_test.cc fails when an op with a GPU path has none.
#pragma once

#include <map>
#include <string>

#include "codegen/cuda_expr.h"

namespace kiln::codegen {

// Every op's expression, by op name.
const std::map<std::string, CudaExprFn>& op_expression_table();

// The expression of `op`, or null when codegen has none.
CudaExprFn find_op_expression(const std::string& op);

}  // namespace kiln::codegen
