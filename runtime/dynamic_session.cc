// The dynamic session (see the header): variant choice, padding and cutting on the host, one
// Session per variant used.
#include "runtime/dynamic_session.h"

#include <fmt/format.h>

#include <algorithm>

#include "ir/error.h"
#include "runtime/cuda_api.h"

namespace kiln {

DynamicSession::DynamicSession(std::unique_ptr<DynamicProgram> program,
                               const SessionOptions& options)
    : program_(std::move(program)), options_(options), mutex_(std::make_unique<std::mutex>()) {
  const std::vector<ProgramVariant>& variants = program_->variants;
  for (size_t v = 0; v < variants.size(); ++v) {
    size_t first = 0;
    while (variants[first].program.weights != variants[v].program.weights) ++first;
    weight_set_.push_back(first);
    arena_bytes_ = std::max(arena_bytes_, variants[v].program.arena_bytes);
  }
}

DynamicSession DynamicSession::load(const std::string& path, const SessionOptions& options) {
  return load(read_dynamic_program(path), options);
}

DynamicSession DynamicSession::load(DynamicProgram program, const SessionOptions& options) {
  validate_dynamic_program(program);
  require_cuda_device();
  // Every variant on one device: the one current now unless named (the shared arena and
  // weights live there).
  SessionOptions resolved = options;
  if (resolved.device == -1) cuda_check(cudaGetDevice(&resolved.device), "cudaGetDevice");
  return DynamicSession(std::make_unique<DynamicProgram>(std::move(program)), resolved);
}

Session& DynamicSession::variant_session(size_t index) {
  const std::lock_guard lock(*mutex_);
  return loaded_variant(index);
}

Session& DynamicSession::loaded_variant(size_t index) {
  if (index >= program_->variants.size()) {
    throw InputError(
        fmt::format("variant {}: the program has {}", index, program_->variants.size()));
  }
  auto found = sessions_.find(index);
  if (found == sessions_.end()) {
    const Session* weights_from = nullptr;
    for (const auto& [loaded, session] : sessions_) {
      if (weight_set_[loaded] == weight_set_[index]) weights_from = &session;
    }
    found = sessions_
                .emplace(index, Session::load_variant(program_->variants[index].program, options_,
                                                      weights_from, arena_, arena_bytes_))
                .first;
  }
  return found->second;
}

std::vector<Tensor> DynamicSession::run(const std::vector<Tensor>& inputs) {
  std::vector<Shape> shapes;
  for (const Tensor& input : inputs) shapes.push_back(input.shape());
  const std::vector<int64_t> sizes = class_sizes(*program_, shapes);
  const size_t index = choose_variant(*program_, shapes);
  const ProgramVariant& variant = program_->variants[index];
  std::vector<Tensor> padded;
  for (size_t i = 0; i < inputs.size(); ++i) {
    padded.push_back(inputs[i].shape() == variant.input_shapes[i]
                         ? inputs[i]
                         : pad_to(inputs[i], variant.input_shapes[i]));
  }
  const std::lock_guard lock(*mutex_);
  std::vector<Tensor> outputs = loaded_variant(index).run(padded);
  for (size_t o = 0; o < outputs.size(); ++o) {
    const Shape real = real_output_shape(variant, o, sizes);
    if (real != outputs[o].shape()) outputs[o] = cut_to(outputs[o], real);
  }
  return outputs;
}

}  // namespace kiln
