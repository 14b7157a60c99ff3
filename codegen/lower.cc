// Lowering a fused graph to a Program (see the header). In order:
//   1. input buffers, then output buffers (claiming the kernel results they hold, or noting a
//      copy for those that need one);
//   2. for each kernel node: emit its kernel (collecting refusals), map its parameters to
//      buffers (creating weights and intermediates on first use), add a step (two for a
//      contraction split along K, sharing a workspace intermediate);
//   3. the copies of step 1;
//   4. name each distinct kernel after its code and write its source.
#include "codegen/lower.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include "codegen/contraction_emitter.h"
#include "codegen/contraction_view.h"
#include "codegen/emitter_table.h"
#include "codegen/kernel_body.h"
#include "codegen/kernel_spec.h"
#include "codegen/library_gemm.h"
#include "codegen/output_placement.h"
#include "codegen/sha256.h"
#include "ir/error.h"
#include "ir/fusion.h"
#include "ir/op_registry.h"

namespace kiln::codegen {
namespace {

// The value a chain of views (reshapes) shows.
const Value* viewed_value(const Value* value) {
  while (value->producer() && is_view_op(*value->producer())) {
    value = value->producer()->operand(0);
  }
  return value;
}

// Why no kernel is generated for `node`, or "" when its emitter may generate one: fusions and
// ops up to reductions always have one; an opaque op needs an emitter that anchors such ops
// (contractions, direct convs, cum_sum, resize) to take it.
std::string refusal(const Node& node, const KernelBody& body) {
  if (fusion_kind(node) || node.info().category <= OpCategory::kReduction) return "";
  return emitter_for(body).anchors_opaque_ops ? "" : node.describe();
}

struct KernelUse {
  KernelSpec spec;                                   // of the first step that launches it
  std::vector<std::vector<std::string>> provenance;  // of each step
};

class Lowering {
 public:
  Lowering(const Graph& graph, const CodegenOptions& options) : graph_(graph), options_(options) {}

  Program run(LoweringReport* report) {
    program_.name = graph_.name();
    program_.archs = options_.archs;
    if (options_.concat_views) views_ = concat_views(graph_);
    add_signature_buffers();
    reserve_weights();
    for (const Node* node : graph_.nodes()) {
      if (!is_view_op(*node) && !views_.concats.count(node)) lower_node(*node);
    }
    for (const auto& [source, destination] : copies_) {
      const KernelBody body = copy_kernel_body(source);
      add_step(body, *kernels_of(body), {{source, buffer_for(source)}}, {destination});
    }
    if (!unsupported_.empty()) {
      if (!options_.skip_unsupported) {
        std::string list;
        for (const std::string& entry : unsupported_) list += (list.empty() ? "" : "; ") + entry;
        throw UnsupportedError("the GPU backend does not generate these kernels yet: " + list);
      }
      if (report) report->skipped = unsupported_;
    }
    if (report) report->tactics = std::move(tactic_uses_);
    name_kernels();
    return std::move(program_);
  }

 private:
  // A buffer named after its value; an unnamed value (IR text's %0) gets "input_0",
  // "output_0" or "buffer_<index>".
  int add_buffer(ProgramBuffer::Kind kind, const std::string& name, const TensorType& type,
                 int64_t offset) {
    std::string buffer_name = name;
    if (buffer_name.empty()) {
      buffer_name = kind == ProgramBuffer::Kind::kInput ? "input_" + std::to_string(offset)
                    : kind == ProgramBuffer::Kind::kOutput
                        ? "output_" + std::to_string(offset)
                        : "buffer_" + std::to_string(program_.buffers.size());
    }
    program_.buffers.push_back({kind, buffer_name, type, offset});
    return static_cast<int>(program_.buffers.size()) - 1;
  }

  void add_signature_buffers() {
    for (size_t k = 0; k < graph_.inputs().size(); ++k) {
      const Value* input = graph_.inputs()[k];
      const int buffer = add_buffer(ProgramBuffer::Kind::kInput, input->name(), input->type(),
                                    static_cast<int64_t>(k));
      buffer_of_[input] = buffer;
      program_.inputs.push_back(buffer);
    }
    for (size_t k = 0; k < graph_.outputs().size(); ++k) {
      const Value* output = graph_.outputs()[k];
      const Value* held = viewed_value(output);
      const int buffer = add_buffer(ProgramBuffer::Kind::kOutput, output->name(), output->type(),
                                    static_cast<int64_t>(k));
      program_.outputs.push_back(buffer);
      const bool kernel_result = held->producer() != nullptr;
      if (kernel_result && !buffer_of_.count(held)) {
        buffer_of_[held] = buffer;
      } else {
        copies_.emplace_back(held, buffer);
      }
    }
  }

  // The buffer holding top-level `value` (through views), created on first use: a concat
  // operand's placed in it, the concat's.
  int buffer_for(const Value* value) {
    const Value* held = viewed_value(value);
    if (auto it = buffer_of_.find(held); it != buffer_of_.end()) return it->second;
    if (auto placed = views_.placements.find(held); placed != views_.placements.end()) {
      return buffer_of_[held] = buffer_for(placed->second.concat);
    }
    const int buffer = held->is_constant() ? weight_buffer(held)
                                           : add_buffer(ProgramBuffer::Kind::kIntermediate,
                                                        held->name(), held->type(), -1);
    buffer_of_[held] = buffer;
    return buffer;
  }

  // Room for every constant of the graph as a weight (more than needed: small constants are
  // compiled into kernels), so that the weights' bytes are not copied again as they grow.
  void reserve_weights() {
    size_t bytes = 0;
    for (const Value* constant : graph_.constants()) {
      if (constant->has_data()) bytes += constant->data().num_bytes() + kWeightAlignment;
    }
    program_.weights.mutable_bytes().reserve(bytes);
  }

  int weight_buffer(const Value* constant) {
    if (auto it = buffer_of_.find(constant); it != buffer_of_.end()) return it->second;
    if (!constant->has_data()) {
      throw InputError("constant " + constant->name() +
                       " has no data (elided in IR text); compiling needs every weight");
    }
    const Tensor& data = constant->data();
    const int64_t offset = (static_cast<int64_t>(program_.weights.size()) + kWeightAlignment - 1) /
                           kWeightAlignment * kWeightAlignment;
    std::vector<uint8_t>& weights = program_.weights.mutable_bytes();
    weights.resize(static_cast<size_t>(offset), 0);
    const auto* bytes = reinterpret_cast<const uint8_t*>(data.bytes());
    weights.insert(weights.end(), bytes, bytes + data.num_bytes());
    const int buffer =
        add_buffer(ProgramBuffer::Kind::kWeight, constant->name(), constant->type(), offset);
    buffer_of_[constant] = buffer;
    return buffer;
  }

  void lower_node(const Node& node) {
    KernelBody body = kernel_body_of(node);
    place_outputs(node, body);
    if (std::string why = refusal(node, body); !why.empty()) {
      unsupported_.push_back(why);
      return;
    }
    std::map<const Value*, int> inputs;
    for (size_t k = 0; k < body.inputs.size(); ++k) {
      // A fusion's body inputs take its operands in order; a single node reads its operands.
      const Value* source = node.body() ? node.operand(k) : body.inputs[k];
      inputs[body.inputs[k]] = buffer_for(source);
    }
    std::vector<int> outputs;
    for (const Value* result : node.results()) outputs.push_back(buffer_for(result));
    try {
      if (std::optional<std::vector<KernelSpec>> kernels = kernels_of(body, &node)) {
        add_step(body, std::move(*kernels), inputs, outputs);
      } else {
        const size_t first_step = program_.steps.size();
        lower_unfused(node);
        tactic_uses_.back().step_count = static_cast<int>(program_.steps.size() - first_step);
      }
    } catch (const UnsupportedError& error) {
      const std::string prefix = node.body() ? node.describe() + ": " : "";
      unsupported_.push_back(prefix + error.what());
    }
  }

  // The outputs of `node` that are concat operands written into the concat's buffer: placed in
  // its body, which then also covers the concat's ONNX nodes.
  void place_outputs(const Node& node, KernelBody& body) {
    for (size_t k = 0; k < node.results().size(); ++k) {
      const auto placed = views_.placements.find(node.result(k));
      if (placed == views_.placements.end()) continue;
      body.placements[body.outputs[k]] = placed->second;
      for (const std::string& onnx_node : placed->second.concat->producer()->provenance()) {
        if (std::find(body.provenance.begin(), body.provenance.end(), onnx_node) ==
            body.provenance.end()) {
          body.provenance.push_back(onnx_node);
        }
      }
    }
  }

  // The kernels of `body` (of `fusion`, where it is one), computed the way choose_tactic picks
  // where there are several ways, which the report then lists with the steps they are about to
  // take; nullopt where it picks kUnfusedTactic (the caller lowers the fusion op by op and sets
  // the report's step count). Without choose_tactic, or with `heuristic_only`, the heuristic's.
  std::optional<std::vector<KernelSpec>> kernels_of(const KernelBody& body,
                                                    const Node* fusion = nullptr,
                                                    bool heuristic_only = false) {
    std::vector<KernelSpec> kernels = emit_kernels(body, options_.target);
    if (heuristic_only) return kernels;
    std::vector<std::string> tactics = kernel_tactics(body, options_.target);
    if (!options_.library_tactics && !tactics.empty() && tactics.back() == kLibraryGemmTactic) {
      tactics.pop_back();  // always the last, so the others keep their indices
    }
    const size_t fused_tactics = tactics.size();
    if (fusion && unfused_applies(*fusion, body)) {
      if (tactics.empty()) tactics.push_back("fused");
      tactics.push_back(kUnfusedTactic);
    }
    if (tactics.size() < 2) return kernels;
    TacticSite site;
    if (options_.library_tactics &&
        std::find(tactics.begin(), tactics.end(), kLibraryGemmTactic) == tactics.end()) {
      if (std::string why = library_refusal(body); !why.empty()) {
        site.notes.push_back("cuBLASLt not offered: " + why);
      }
    }
    std::string codes;
    for (const std::string& tactic : tactics) codes += tactic + "\n";
    for (const KernelSpec& spec : kernels) codes += kernel_code(spec, "");
    site.key = sha256_hex(codes);
    site.label = body.provenance.empty() ? kernel_name(kernels.front()) : body.provenance.front();
    site.tactics = std::move(tactics);
    const int tactic = options_.choose_tactic ? options_.choose_tactic(site) : 0;
    if (tactic < 0 || static_cast<size_t>(tactic) >= site.tactics.size()) {
      throw InternalError("lowering: tactic " + std::to_string(tactic) + " of " + site.label +
                          ", which has " + std::to_string(site.tactics.size()));
    }
    const bool unfused = static_cast<size_t>(tactic) >= std::max<size_t>(fused_tactics, 1);
    if (!unfused && tactic != 0) kernels = emit_kernels(body, options_.target, tactic);
    tactic_uses_.push_back({std::move(site), tactic, static_cast<int>(program_.steps.size()),
                            static_cast<int>(kernels.size())});
    if (unfused) return std::nullopt;
    return kernels;
  }

  // Why a contraction body has no cuBLASLt tactic (library_gemm.h), or "" (not a contraction,
  // or cuBLASLt would take it but no tactic of one kernel can stand in for it).
  static std::string library_refusal(const KernelBody& body) {
    const Node* anchor = contraction_anchor(body);
    if (!anchor) return "";
    try {
      return library_gemm_of(body, *anchor, *contraction_view_of(*anchor)).refusal;
    } catch (const UnsupportedError&) {
      return "";  // a contraction no view describes: its emitter says so
    }
  }

  // Whether `fusion`'s body may also be lowered op by op (kUnfusedTactic): a contraction with
  // other ops fused around it, each of which lowering takes alone (elementwise, broadcast or
  // injective ops: loop kernels), its outputs computed in it, each of its own, none placed into a
  // concat.
  static bool unfused_applies(const Node& fusion, const KernelBody& body) {
    if (!fusion.body() || !is_contraction_body(body) || !body.placements.empty()) return false;
    int computing = 0;
    for (const Node* node : body.nodes) {
      if (is_view_op(*node)) continue;
      ++computing;
      const OpCategory category = node->info().category;
      const bool anchor = node == contraction_anchor(body);
      if (!anchor && category != OpCategory::kElementwise && category != OpCategory::kBroadcast &&
          category != OpCategory::kInjective) {
        return false;
      }
    }
    // Each output an op's result of its own: not a body input passed through, not one value
    // two outputs view (it can be written to one buffer only).
    std::set<const Value*> held;
    for (const Value* output : body.outputs) {
      const Value* value = viewed_value(output);
      if (!value->producer() || !held.insert(value).second) return false;
    }
    return computing >= 2;
  }

  // `fusion`'s body op by op (kUnfusedTactic): its inputs are the fusion's operands' buffers,
  // its outputs the fusion's results', the values between its ops intermediates of their own;
  // each op a kernel of the heuristic's tactic.
  void lower_unfused(const Node& fusion) {
    const Graph& body = *fusion.body();
    for (size_t k = 0; k < body.inputs().size(); ++k) {
      buffer_of_[body.inputs()[k]] = buffer_for(fusion.operand(k));
    }
    for (size_t k = 0; k < body.outputs().size(); ++k) {
      buffer_of_[viewed_value(body.outputs()[k])] = buffer_for(fusion.result(k));
    }
    for (const Node* node : body.nodes()) {
      if (is_view_op(*node)) continue;
      const KernelBody op = kernel_body_of(*node);
      std::map<const Value*, int> inputs;
      for (const Value* input : op.inputs) inputs[input] = buffer_for(input);
      std::vector<int> outputs;
      for (const Value* result : node->results()) outputs.push_back(buffer_for(result));
      add_step(op, *kernels_of(op, nullptr, /*heuristic_only=*/true), inputs, outputs);
    }
  }

  // Launches `kernels` (of `body`) with its inputs' and outputs' buffers.
  void add_step(const KernelBody& body, std::vector<KernelSpec> kernels,
                const std::map<const Value*, int>& inputs, const std::vector<int>& outputs) {
    int workspace = -1;  // created by the first kernel that takes it
    for (KernelSpec& spec : kernels) {
      ProgramStep step{
          .grid = spec.grid, .block = spec.block, .shared_bytes = spec.shared_bytes, .args = {}};
      size_t output = 0;
      for (const KernelParam& param : spec.params.all()) {
        switch (param.role) {
          case KernelParam::Role::kInput:
            step.args.push_back(inputs.at(param.value));
            break;
          case KernelParam::Role::kConstant:
            step.args.push_back(weight_buffer(param.value));
            break;
          case KernelParam::Role::kOutput:
            step.args.push_back(outputs.at(output++));
            break;
          case KernelParam::Role::kWorkspace:
            if (workspace < 0) {
              workspace = add_buffer(ProgramBuffer::Kind::kIntermediate, "",
                                     {DType::kF32, {param.workspace_floats}}, -1);
            }
            step.args.push_back(workspace);
            break;
        }
      }
      if (spec.library) step.library = library_call(spec);
      const std::string code = kernel_code(spec, "");
      auto [it, added] = kernel_of_code_.emplace(code, uses_.size());
      if (added) uses_.push_back({std::move(spec), {}});
      uses_[it->second].provenance.push_back(body.provenance);
      step.kernel = static_cast<int>(it->second);
      program_.steps.push_back(std::move(step));
    }
  }

  // A kernel's library call with its operands as positions among the kernel's parameters (the
  // step's arguments).
  static ProgramLibraryGemm library_call(const KernelSpec& spec) {
    const std::vector<KernelParam> params = spec.params.all();
    const auto position = [&](const Value* value, bool output) {
      if (!value) return -1;
      for (size_t i = 0; i < params.size(); ++i) {
        const bool is_output = params[i].role == KernelParam::Role::kOutput;
        if (params[i].value == value && is_output == output) return static_cast<int>(i);
      }
      throw InternalError("lowering: the library call's operand " + value->name() +
                          " is no parameter of its kernel");
    };
    ProgramLibraryGemm call = spec.library->call;
    call.a = position(spec.library->a, false);
    call.b = position(spec.library->b, false);
    call.d = position(spec.library->d, true);
    call.c = position(spec.library->c, false);
    call.bias = position(spec.library->bias, false);
    return call;
  }

  void name_kernels() {
    for (const KernelUse& use : uses_) {
      ProgramKernel kernel;
      kernel.name = kernel_name(use.spec);
      kernel.source = kernel_source(use.spec, kernel.name, use.provenance);
      for (const std::vector<std::string>& provenance : use.provenance) {
        for (const std::string& onnx_node : provenance) {
          if (std::find(kernel.provenance.begin(), kernel.provenance.end(), onnx_node) ==
              kernel.provenance.end()) {
            kernel.provenance.push_back(onnx_node);
          }
        }
      }
      program_.kernels.push_back(std::move(kernel));
    }
  }

  const Graph& graph_;
  const CodegenOptions& options_;
  Program program_;
  std::map<const Value*, int> buffer_of_;
  std::vector<std::pair<const Value*, int>> copies_;  // (value, output buffer it is copied to)
  std::map<std::string, size_t> kernel_of_code_;
  std::vector<KernelUse> uses_;
  std::vector<std::string> unsupported_;
  std::vector<TacticUse> tactic_uses_;
  ConcatViews views_;
};

}  // namespace

Program lower_graph(const Graph& fused_graph, const CodegenOptions& options,
                    LoweringReport* report) {
  return Lowering(fused_graph, options).run(report);
}

}  // namespace kiln::codegen
