// 16-byte vector accesses shared by the emitters that stream contiguous runs of elements (loop
// kernels, reduction rows): a struct of W neighbouring elements aligned to its size, so one
// load or store moves them all (ld.global.nc.v4 in the PTX), and the widening of one lane to
// its compute type.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "codegen/code_writer.h"
#include "ir/dtype.h"
#include "ir/graph.h"

namespace kiln::codegen {

constexpr size_t kVectorBytes = 16;
constexpr int kMaxVectorWidth = 8;

// Elements a vector holds when the widest element it streams has `widest_bytes`: 16 bytes'
// worth, at most kMaxVectorWidth.
int vector_width_for(size_t widest_bytes);

// "vec_f16x8": the struct of `width` elements of `dtype`.
std::string vector_type(DType dtype, int width);

// Its definition: "struct __align__(16) vec_f16x8 {\n  unsigned short v[8];\n};\n".
std::string vector_definition(DType dtype, int width);

// The definitions of the vectors of `width` elements of each of `dtypes` (in DType order).
std::string vector_definitions(const std::set<DType>& dtypes, int width);

// A kernel writing its outputs a vector at a time: r0, r1, ... (one vector of `width` elements
// of each value in `values`, the body's outputs) declared, and stored as vector `vector` of the
// output parameters `outputs`.
void declare_result_vectors(CodeWriter& code, const std::vector<const Value*>& values, int width);
void store_result_vectors(CodeWriter& code, const std::vector<const Value*>& values,
                          const std::vector<std::string>& outputs, int width,
                          const std::string& vector);

// f16 vectors stored from floats two lanes at a time, with one packed conversion each
// (kiln_pack_f16x2): "vec_f16x8_packed", width / 2 unsigned words of two halves.
std::string packed_f16_vector_type(int width);
std::string packed_f16_vector_definition(int width);

// A vector lane's element (storage type) in its compute type.
std::string widened(DType dtype, const std::string& stored);

}  // namespace kiln::codegen
