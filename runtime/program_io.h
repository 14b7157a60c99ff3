// The .kiln file: a Program (runtime/program.h) as bytes. Little-endian; str = u32 length and
// bytes, blob = u64 length and bytes; counts are u32.
//
//   "KILN"  u32 format version (kKilnFormatVersion)
//   str program name
//   archs     count, str each ("sm_90")
//   kernels   count; each: str name, str source, u64 source hash (FNV-1a 64 of the source),
//             provenance count + str each, binaries count + (str arch, blob CUBIN) each, blob PTX
//   buffers   count; each: u8 kind (0 input, 1 output, 2 weight, 3 intermediate), str name,
//             u8 dtype (0 f32, 1 f16, 2 bf16, 3 f64, 4 i64, 5 i32, 6 i8, 7 u8, 8 bool),
//             u32 rank, i64 per dim, i64 offset
//   inputs    count, u32 buffer index each; outputs likewise
//   steps     count; each: u32 kernel, u32 grid[3], u32 block[3], u32 shared-memory bytes,
//             args count + u32 buffer index each, u8 library call (0 none, 1 a
//             ProgramLibraryGemm: i64 positions a, b, d, c, bias; u8 flags (1 transpose_a,
//             2 transpose_b, 4 relu); i64 m, n, k, lda, ldb, ldd, batch, batch strides a, b,
//             d, workspace bytes and offset; f32 alpha, beta as u32 bits). Version 1 files
//             (before library calls) have no library byte and are still read.
//   i64 arena bytes
//   u64 weights size, zeros up to a file offset that is a multiple of kWeightAlignment, weights
//   u64 checksum: FNV-1a 64 of every byte before it
//
// Reading checks every byte before the Program is used: the structure (magic, version, each
// length against the bytes left), the checksum, then validate_program (program_validation.h).
// Each problem is an InputError that starts with the file's name.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "runtime/program.h"

namespace kiln {

inline constexpr uint32_t kKilnFormatVersion = 2;

std::vector<uint8_t> program_to_bytes(const Program& program);
// `source` names the bytes in errors (a file's path).
Program program_from_bytes(std::span<const uint8_t> bytes, const std::string& source);
// The structure and checksum only, without validate_program: for a dynamic program's variants,
// whose weights are stored apart (dynamic_program.h) and which are validated once they have them.
Program unvalidated_program_from_bytes(std::span<const uint8_t> bytes, const std::string& source);

void write_program(const Program& program, const std::string& path);
Program read_program(const std::string& path);
// The bytes of a .kiln file (fixed-shape or dynamic); InputError naming the path.
std::vector<uint8_t> read_kiln_file(const std::string& path);

}  // namespace kiln
