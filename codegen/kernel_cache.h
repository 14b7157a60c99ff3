// The disk cache of compiled kernels: one file per (source, arch, compile options, NVRTC
// version, product) under a directory, named by the SHA-256 of those. An entry holds a header
// with its length and SHA-256, so a truncated or corrupted file reads as a miss (and the next
// store rewrites it). Stores write a temporary file and rename it over the entry, so readers
// never see half an entry, even with several kiln processes compiling at once.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace kiln::codegen {

// The directory: `configured` when not empty, else $KILN_CACHE_DIR, else
// $XDG_CACHE_HOME/kiln, else $HOME/.cache/kiln; "" when none of them is set.
std::string kernel_cache_directory(const std::string& configured);

class KernelCache {
 public:
  // An empty directory disables the cache: every load misses, stores do nothing.
  explicit KernelCache(std::string directory) : directory_(std::move(directory)) {}

  // The key of one compiled product ("cubin" or "ptx").
  static std::string key(const std::string& source, const std::string& arch,
                         const std::vector<std::string>& options,
                         const std::string& compiler_version, const std::string& product);

  std::optional<std::vector<uint8_t>> load(const std::string& key) const;
  // Best effort: a directory that cannot be created or written (not a directory, read-only,
  // full) leaves the entry out and returns false, with the reason in `why` when given.
  bool store(const std::string& key, std::span<const uint8_t> bytes,
             std::string* why = nullptr) const;

  const std::string& directory() const { return directory_; }
  std::string path_of(const std::string& key) const { return directory_ + "/" + key; }

 private:
  std::string directory_;
};

}  // namespace kiln::codegen
