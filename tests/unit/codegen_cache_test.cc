// Tests of the kernel cache (codegen/kernel_cache.h) and of compile_program through it: keys,
// hits and misses, corrupted and truncated entries, and where the cache lives.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>

#include "codegen/compile_program.h"
#include "codegen/kernel_cache.h"
#include "codegen/sha256.h"
#include "test_temp_dir.h"

namespace kiln::codegen {
namespace {

namespace fs = std::filesystem;

// A fresh directory for one test.
std::string fresh_directory(const std::string& name) {
  return testing_support::fresh_temp_path("cache_" + name).string();
}

std::vector<uint8_t> bytes_of(const std::string& text) { return {text.begin(), text.end()}; }

TEST(CodegenSha256, MatchesTheStandardVectors) {
  EXPECT_EQ(sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
}

TEST(CodegenKernelCache, KeysDependOnEverythingThatChangesTheBinary) {
  const std::string key = KernelCache::key("src", "sm_80", {"-a"}, "13.0", "cubin");
  EXPECT_NE(key, KernelCache::key("src2", "sm_80", {"-a"}, "13.0", "cubin"));
  EXPECT_NE(key, KernelCache::key("src", "sm_90", {"-a"}, "13.0", "cubin"));
  EXPECT_NE(key, KernelCache::key("src", "sm_80", {"-b"}, "13.0", "cubin"));
  EXPECT_NE(key, KernelCache::key("src", "sm_80", {"-a"}, "13.1", "cubin"));
  EXPECT_NE(key, KernelCache::key("src", "sm_80", {"-a"}, "13.0", "ptx"));
  EXPECT_EQ(key, KernelCache::key("src", "sm_80", {"-a"}, "13.0", "cubin"));
}

TEST(CodegenKernelCache, StoresAndLoads) {
  const KernelCache cache(fresh_directory("round_trip"));
  EXPECT_FALSE(cache.load("k.cubin").has_value());
  ASSERT_TRUE(cache.store("k.cubin", bytes_of("payload")));
  EXPECT_EQ(cache.load("k.cubin"), bytes_of("payload"));
  // Nothing but the entry is left behind (no temporary files).
  EXPECT_EQ(std::distance(fs::directory_iterator(cache.directory()), fs::directory_iterator()), 1);
}

TEST(CodegenKernelCache, CorruptedAndTruncatedEntriesAreMisses) {
  const KernelCache cache(fresh_directory("corrupt"));
  ASSERT_TRUE(cache.store("k.cubin", bytes_of("a payload of some length")));
  const std::string path = cache.path_of("k.cubin");
  {
    std::fstream file(path, std::ios::in | std::ios::out | std::ios::binary);
    file.seekp(-3, std::ios::end);
    file.put('X');
  }
  EXPECT_FALSE(cache.load("k.cubin").has_value());
  fs::resize_file(path, 20);
  EXPECT_FALSE(cache.load("k.cubin").has_value());
  ASSERT_TRUE(cache.store("k.cubin", bytes_of("rewritten")));
  EXPECT_EQ(cache.load("k.cubin"), bytes_of("rewritten"));
}

TEST(CodegenKernelCache, AnUnusableDirectorySaysWhy) {
  // A directory path under a regular file cannot be created (as a read-only or full one cannot
  // be written): the store fails with the reason, and loads miss.
  const fs::path file = testing_support::fresh_temp_path("cache_is_a_file");
  std::ofstream(file) << "not a directory";
  const KernelCache cache((file / "cache").string());
  std::string why;
  EXPECT_FALSE(cache.store("k.cubin", bytes_of("x"), &why));
  EXPECT_NE(why.find("cannot create " + (file / "cache").string()), std::string::npos) << why;
  EXPECT_FALSE(cache.load("k.cubin").has_value());
}

TEST(CodegenKernelCache, DisabledWithoutADirectory) {
  const KernelCache cache("");
  EXPECT_FALSE(cache.store("k.cubin", bytes_of("x")));
  EXPECT_FALSE(cache.load("k.cubin").has_value());
}

// Sets an environment variable for the scope, restoring it after.
class ScopedEnvironment {
 public:
  ScopedEnvironment(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    set(value);
  }
  ~ScopedEnvironment() { set(old_ ? old_->c_str() : nullptr); }
  void set(const char* value) {
    if (value) {
      setenv(name_, value, 1);
    } else {
      unsetenv(name_);
    }
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

TEST(CodegenKernelCache, DirectoryFromOptionThenEnvironment) {
  ScopedEnvironment kiln("KILN_CACHE_DIR", "/kiln/env");
  ScopedEnvironment xdg("XDG_CACHE_HOME", "/xdg");
  ScopedEnvironment home("HOME", "/home/someone");
  EXPECT_EQ(kernel_cache_directory("/option"), "/option");
  EXPECT_EQ(kernel_cache_directory(""), "/kiln/env");
  kiln.set(nullptr);
  EXPECT_EQ(kernel_cache_directory(""), "/xdg/kiln");
  xdg.set(nullptr);
  EXPECT_EQ(kernel_cache_directory(""), "/home/someone/.cache/kiln");
}

TEST(CodegenKernelCache, CompileProgramHitsMissesAndRepairs) {
  Program program;
  program.kernels.push_back({.name = "twice",
                             .source = "extern \"C\" __global__ void twice(float* x) { x[0] *= "
                                       "2.0f; }\n"});
  CodegenOptions options;
  options.archs = {"sm_80", "sm_90"};
  options.cache_dir = fresh_directory("compile");
  const CompileStats first = compile_program(program, options);
  EXPECT_EQ(first.compilations, 2);
  EXPECT_EQ(first.cache_hits, 0);
  const std::vector<uint8_t> cubin = program.kernels[0].binaries[0].cubin;

  const CompileStats second = compile_program(program, options);
  EXPECT_EQ(second.compilations, 0);
  EXPECT_EQ(second.cache_hits, 2);
  EXPECT_EQ(program.kernels[0].binaries[0].cubin, cubin);

  // Damage every entry: both archs compile again, and their entries are rewritten.
  for (const fs::directory_entry& entry : fs::directory_iterator(options.cache_dir)) {
    std::ofstream(entry.path(), std::ios::binary | std::ios::trunc) << "garbage";
  }
  const CompileStats third = compile_program(program, options);
  EXPECT_EQ(third.compilations, 2);
  EXPECT_EQ(program.kernels[0].binaries[0].cubin, cubin);
  const CompileStats fourth = compile_program(program, options);
  EXPECT_EQ(fourth.cache_hits, 2);
}

}  // namespace
}  // namespace kiln::codegen
