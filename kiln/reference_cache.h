// The CPU reference's outputs that `kiln bench` checks against, kept in the kernel cache's
// directory (codegen/kernel_cache.h: integrity-checked entries, written by rename) under a key of
// this kiln executable (its path, size and modification time, so a rebuilt reference interpreter
// never reads an older one's answer), the model file's bytes, the loaded graph's constants (the
// weights wherever they came from: an ONNX model's external data files, which the model file
// only names, too) and the inputs (dtype, shape, bytes). At large batches the reference run takes
// minutes (BERT-base at batch 128), and a benchmark script runs `kiln bench` on one model several
// times (a run that fills the caches, then one per variant).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "ir/tensor.h"

namespace kiln {

// run_reference(graph, inputs), or the cached outputs of an earlier run for the same key, in
// `cache_directory` as codegen::kernel_cache_directory resolves it ("": $KILN_CACHE_DIR, then
// $XDG_CACHE_HOME/kiln, then ~/.cache/kiln; none of them: no cache). A cache that cannot be read
// or written is not an error: the reference runs. `from_cache`, when given, says which it was.
std::vector<Tensor> cached_reference_outputs(const std::string& model_path, const Graph& graph,
                                             const std::vector<Tensor>& inputs,
                                             const std::string& cache_directory,
                                             bool* from_cache = nullptr);

// The entry's bytes and back; decode gives nullopt for bytes that are not an encoding.
std::vector<uint8_t> encode_tensors(const std::vector<Tensor>& tensors);
std::optional<std::vector<Tensor>> decode_tensors(std::span<const uint8_t> bytes);

// The key: SHA-256 over the executable's identity, the model's bytes, the constants of `graph`
// (and of its fusions' bodies) and the inputs.
std::string reference_key(const std::string& executable_identity, std::string_view model_bytes,
                          const Graph& graph, const std::vector<Tensor>& inputs);

}  // namespace kiln
