// The unit tests' one temporary directory: created on first use under the system's temp directory
// (kiln_unit_tests_XXXXXX), unique to the test process, and removed with everything in it when the
// process's tests end, passed or failed; tests write their files nowhere else.
#pragma once

#include <filesystem>
#include <string>

namespace kiln::testing_support {

// The directory itself.
const std::filesystem::path& test_temp_dir();

// test_temp_dir() / name, emptied: a fresh file path or (created when `directory`) directory.
std::filesystem::path fresh_temp_path(const std::string& name, bool directory = false);

}  // namespace kiln::testing_support
