// The attention kernels' shared pieces (see the header).
#include "codegen/attention_body.h"

#include <fmt/format.h>

#include <algorithm>
#include <vector>

#include "codegen/contraction_view.h"
#include "ir/error.h"
#include "ir/fusion.h"

namespace kiln::codegen {

AttentionShape attention_shape(const KernelBody& body) {
  AttentionShape a;
  std::vector<const Node*> matmuls;
  for (const Node* node : body.nodes) {
    if (node->op() == "matmul") matmuls.push_back(node);
    if (node->op() == "softmax") a.softmax = node;
  }
  if (matmuls.size() != 2 || !a.softmax) {
    throw UnsupportedError("an attention body of other than two matmuls and a softmax");
  }
  a.scores = matmuls[0];
  a.output = matmuls[1];
  for (const Node* matmul : matmuls) {
    if (matmul->operand(0)->type().rank() < 2 || matmul->operand(1)->type().rank() < 2) {
      throw UnsupportedError(matmul->describe() + ": matmul of a rank-1 operand on the GPU");
    }
  }
  const Shape& s = a.scores->result()->type().shape;
  const Shape& o = a.output->result()->type().shape;
  const int64_t rank = static_cast<int64_t>(s.size());
  const int64_t axis = a.softmax->int_attr("axis");
  if (axis != -1 && axis != rank - 1) {
    throw UnsupportedError(a.softmax->describe() +
                           ": attention with a softmax not over the last axis");
  }
  if (!attention_rows_agree(s, a.softmax->result()->type().shape,
                            a.output->operand(0)->type().shape, o)) {
    throw UnsupportedError(
        a.softmax->describe() +
        ": attention whose scores, probabilities and output rows differ in shape");
  }
  a.batch.assign(s.begin(), s.end() - 2);
  for (int64_t dim : a.batch) a.batch_count *= dim;
  a.queries = s[s.size() - 2];
  a.rows = a.batch_count * a.queries;
  a.keys = s.back();
  a.depth = a.scores->operand(0)->type().shape.back();
  a.columns = o.back();
  const int64_t out_count = a.output->result()->type().num_elements();
  for (const Value* output : body.outputs) {
    if (output->type().num_elements() != out_count) {
      throw UnsupportedError(fmt::format("{}: an attention output of {} elements, not {}",
                                         output->name(), output->type().num_elements(), out_count));
    }
  }
  return a;
}

bool is_tf32(const Node& matmul) { return matmul.has_attr("tf32") && matmul.int_attr("tf32") != 0; }

std::string matmul_operand(ElementEmitter& e, const Node& matmul, size_t i, const Shape& batch,
                           const std::string& b, const std::string& r, const std::string& c,
                           int64_t r_size, int64_t c_size) {
  const Value* value = matmul.operand(i);
  const std::string element =
      e.element(value, matmul_operand_index(e, value, batch, b, r, c, r_size, c_size));
  return is_tf32(matmul) ? "kiln_round_to_tf32(" + element + ")" : element;
}

void store_outputs(ElementEmitter& e, const KernelBody& body,
                   const std::vector<std::string>& outputs, const std::string& at) {
  for (size_t k = 0; k < body.outputs.size(); ++k) {
    e.code().line(fmt::format("{}[{}] = {};", outputs[k], at, e.stored(body.outputs[k], at)));
  }
}

std::string rounded(const Node& anchor, const std::string& element) {
  const DType dtype = anchor.result()->type().dtype;
  if (dtype == DType::kF16) return "kiln_round_to_f16(" + element + ")";
  if (dtype == DType::kBF16) return "kiln_round_to_bf16(" + element + ")";
  return element;
}

}  // namespace kiln::codegen
