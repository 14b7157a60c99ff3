// Tests of the .kiln format (runtime/program_io.h): round trips, the layout's alignment, and
// that every truncation, every flipped byte and each structural problem is an InputError with
// a message naming the file and what is wrong.
#include "runtime/program_io.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>

#include "ir/error.h"
#include "runtime/fnv1a.h"
#include "test_temp_dir.h"
#include "tests/runtime/bias_relu_program.h"

namespace kiln {
namespace {

std::vector<uint8_t> test_program_bytes() {
  return program_to_bytes(test::bias_relu_program(test::placeholder_kernels()));
}

// The message of the InputError that reading `bytes` throws, or "no error".
std::string read_error(const std::vector<uint8_t>& bytes) {
  try {
    program_from_bytes(bytes, "test.kiln");
  } catch (const InputError& error) {
    return error.what();
  }
  return "no error";
}

// Rewrites the trailing checksum so that a deliberate edit reaches the later checks.
void fix_checksum(std::vector<uint8_t>& bytes) {
  const size_t body = bytes.size() - 8;
  const uint64_t checksum = fnv1a_64(std::span(bytes).first(body));
  for (int i = 0; i < 8; ++i) bytes[body + i] = static_cast<uint8_t>(checksum >> (8 * i));
}

// The offset of the first occurrence of `text` in `bytes`.
size_t find_text(const std::vector<uint8_t>& bytes, std::string_view text) {
  const auto it = std::search(bytes.begin(), bytes.end(), text.begin(), text.end());
  EXPECT_NE(it, bytes.end()) << text;
  return static_cast<size_t>(it - bytes.begin());
}

void write_u32(std::vector<uint8_t>& bytes, size_t offset, uint32_t value) {
  for (int i = 0; i < 4; ++i) bytes[offset + i] = static_cast<uint8_t>(value >> (8 * i));
}

TEST(ProgramIoTest, RoundTripKeepsEveryField) {
  const Program program = test::bias_relu_program(test::placeholder_kernels());
  const std::vector<uint8_t> bytes = program_to_bytes(program);
  const Program back = program_from_bytes(bytes, "test.kiln");
  EXPECT_EQ(program_to_bytes(back), bytes);
  EXPECT_EQ(back.name, "bias_relu");
  EXPECT_EQ(back.archs, program.archs);
  ASSERT_EQ(back.kernels.size(), 4u);
  EXPECT_EQ(back.kernels[3].name, "add");
  EXPECT_EQ(back.kernels[3].provenance, std::vector<std::string>{"/onnx/Add_1"});
  EXPECT_EQ(back.kernels[3].binaries[1].arch, "sm_90");
  EXPECT_EQ(back.kernels[3].binaries[1].cubin, program.kernels[3].binaries[1].cubin);
  EXPECT_EQ(back.kernels[3].ptx, program.kernels[3].ptx);
  ASSERT_EQ(back.buffers.size(), 6u);
  EXPECT_EQ(back.buffers[3].name, "rectified");
  EXPECT_EQ(back.buffers[3].type, program.buffers[3].type);
  EXPECT_EQ(back.buffers[3].offset, 65536);
  EXPECT_EQ(back.inputs, program.inputs);
  EXPECT_EQ(back.outputs, program.outputs);
  ASSERT_EQ(back.steps.size(), 4u);
  EXPECT_EQ(back.steps[3].args, (std::vector<int>{4, 0, 5}));
  EXPECT_EQ(back.steps[3].grid, program.steps[3].grid);
  EXPECT_EQ(back.steps[3].block, program.steps[3].block);
  EXPECT_EQ(back.arena_bytes, 131072);
  EXPECT_EQ(back.weights, program.weights);
}

TEST(ProgramIoTest, FileRoundTrip) {
  const std::string path =
      testing_support::fresh_temp_path("program_io_test.kiln").string();
  const Program program = test::bias_relu_program(test::placeholder_kernels());
  write_program(program, path);
  EXPECT_EQ(program_to_bytes(read_program(path)), program_to_bytes(program));
  // The file is written in pieces, its checksum on another thread: the same bytes.
  std::ifstream file(path, std::ios::binary);
  const std::vector<uint8_t> written{std::istreambuf_iterator<char>(file), {}};
  EXPECT_EQ(written, program_to_bytes(program));
}

TEST(ProgramIoTest, WeightsStartAtAnAlignedFileOffset) {
  const Program program = test::bias_relu_program(test::placeholder_kernels());
  const std::vector<uint8_t> bytes = program_to_bytes(program);
  const size_t weights_offset = bytes.size() - 8 - program.weights.size();
  EXPECT_EQ(weights_offset % kWeightAlignment, 0u);
  EXPECT_TRUE(std::equal(program.weights.begin(), program.weights.end(),
                         bytes.begin() + static_cast<ptrdiff_t>(weights_offset)));
}

TEST(ProgramIoTest, EveryTruncationIsAnInputError) {
  const std::vector<uint8_t> bytes = test_program_bytes();
  for (size_t size = 0; size < bytes.size(); ++size) {
    const std::vector<uint8_t> cut(bytes.begin(), bytes.begin() + static_cast<ptrdiff_t>(size));
    EXPECT_THROW(program_from_bytes(cut, "test.kiln"), InputError) << "cut at " << size;
  }
}

TEST(ProgramIoTest, EveryFlippedByteIsAnInputError) {
  const std::vector<uint8_t> bytes = test_program_bytes();
  for (size_t offset = 0; offset < bytes.size(); ++offset) {
    std::vector<uint8_t> flipped = bytes;
    flipped[offset] ^= 0x5a;
    EXPECT_THROW(program_from_bytes(flipped, "test.kiln"), InputError) << "byte " << offset;
  }
}

TEST(ProgramIoTest, TruncatedWeightsSayHowManyBytesAreMissing) {
  const Program program = test::bias_relu_program(test::placeholder_kernels());
  std::vector<uint8_t> bytes = program_to_bytes(program);
  const size_t weights_offset = bytes.size() - 8 - program.weights.size();
  bytes.resize(weights_offset + 80);
  EXPECT_EQ(read_error(bytes), "test.kiln: truncated: expected 1024 bytes of weights at offset " +
                                   std::to_string(weights_offset) + ", file has 80 more");
}

TEST(ProgramIoTest, StructuralProblemsAreNamed) {
  const std::vector<uint8_t> good = test_program_bytes();
  struct Case {
    const char* what;
    std::function<void(std::vector<uint8_t>&)> edit;
    std::string message;
  };
  const std::vector<Case> cases = {
      {"magic", [](auto& b) { b[0] = 'X'; },
       "test.kiln: not a .kiln file (it does not start with \"KILN\")"},
      {"version", [](auto& b) { b[4] = 3; },
       "test.kiln: format version 3; this kiln reads versions 1 to 2 (compile the model again)"},
      {"checksum", [](auto& b) { b[b.size() - 9] ^= 1; }, "test.kiln: checksum mismatch"},
      {"trailing bytes", [](auto& b) { b.push_back(0); },
       "test.kiln: 1 unexpected bytes after the checksum"},
      {"kernel count",
       [](auto& b) {
         // magic, version, name "bias_relu", archs "sm_80" and "sm_90", then the kernel count.
         write_u32(b, 8 + 4 + 9 + 4 + 2 * (4 + 5), 0xffffffff);
         fix_checksum(b);
       },
       "test.kiln: truncated: 4294967295 kernels at offset 43 need at least"},
      {"source hash",
       [](auto& b) {
         b[find_text(b, "placeholder source")] = 'P';
         fix_checksum(b);
       },
       "test.kiln: kernel 0: source hash"},
      {"kind code",
       [](auto& b) {
         b[find_text(b, "rectified") - 5] = 7;  // kind, then the name's u32 length
         fix_checksum(b);
       },
       "test.kiln: buffer 3: kind code 7 is not valid"},
      {"dtype code",
       [](auto& b) {
         b[find_text(b, "rectified") + 9] = 9;
         fix_checksum(b);
       },
       "test.kiln: buffer 3: dtype code 9 is not valid"},
      {"padding",
       [](auto& b) {
         b[b.size() - 8 - 1024 - 1] = 1;  // the byte before the weights
         fix_checksum(b);
       },
       "test.kiln: the padding at offset"},
  };
  for (const Case& test_case : cases) {
    std::vector<uint8_t> bytes = good;
    test_case.edit(bytes);
    const std::string message = read_error(bytes);
    EXPECT_EQ(message.substr(0, test_case.message.size()), test_case.message)
        << test_case.what << ": " << message;
  }
}

TEST(ProgramIoTest, UnreadableFilesAreInputErrors) {
  EXPECT_THROW(read_program("/nonexistent/kiln/file.kiln"), InputError);
  EXPECT_THROW(read_program(testing_support::test_temp_dir().string()), InputError);
  EXPECT_THROW(write_program(Program{}, "/nonexistent/kiln/file.kiln"), InputError);
}

}  // namespace
}  // namespace kiln
