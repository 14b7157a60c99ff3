// The unit tests' temporary directory (see the header): mkdtemp on first use, removed by a gtest
// environment's TearDown, which runs after the last test whatever the results.
#include "test_temp_dir.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <stdexcept>

namespace kiln::testing_support {
namespace {

std::filesystem::path& directory() {
  static std::filesystem::path path;
  return path;
}

class RemoveTempDir : public ::testing::Environment {
 public:
  void TearDown() override {
    if (!directory().empty()) std::filesystem::remove_all(directory());
  }
};

const auto* const kRemoveTempDir = ::testing::AddGlobalTestEnvironment(new RemoveTempDir);

}  // namespace

const std::filesystem::path& test_temp_dir() {
  if (directory().empty()) {
    std::string pattern =
        (std::filesystem::temp_directory_path() / "kiln_unit_tests_XXXXXX").string();
    if (!mkdtemp(pattern.data())) throw std::runtime_error("mkdtemp failed: " + pattern);
    directory() = pattern;
  }
  return directory();
}

std::filesystem::path fresh_temp_path(const std::string& name, bool make_directory) {
  const std::filesystem::path path = test_temp_dir() / name;
  std::filesystem::remove_all(path);
  if (make_directory) std::filesystem::create_directories(path);
  return path;
}

}  // namespace kiln::testing_support
