// 16-byte vector accesses shared by the emitters that stream contiguous runs of elements (loop
// kernels, reduction rows): a struct of W neighbouring elements aligned to its size, so one
// load or store moves them all (ld.global.nc.v4 in the PTX), and the widening of one lane to
// its compute type.
#pragma once

#include <string>

#include "ir/dtype.h"

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

// f16 vectors stored from floats two lanes at a time, with one packed conversion each
// (kiln_pack_f16x2): "vec_f16x8_packed", width / 2 unsigned words of two halves.
std::string packed_f16_vector_type(int width);
std::string packed_f16_vector_definition(int width);

// A vector lane's element (storage type) in its compute type.
std::string widened(DType dtype, const std::string& stored);

}  // namespace kiln::codegen
