// The kernel cache (see the header). An entry is "KILNCACHE1\n", the payload's length (8 bytes,
// little-endian), its SHA-256 (32 bytes), then the payload.
#include "codegen/kernel_cache.h"

#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <thread>

#include "codegen/sha256.h"

namespace kiln::codegen {
namespace {

constexpr char kMagic[] = "KILNCACHE1\n";
constexpr size_t kMagicSize = sizeof(kMagic) - 1;
constexpr size_t kHeaderSize = kMagicSize + 8 + 32;

std::string environment(const char* name) {
  const char* value = std::getenv(name);
  return value ? value : "";
}

}  // namespace

std::string kernel_cache_directory(const std::string& configured) {
  if (!configured.empty()) return configured;
  if (std::string dir = environment("KILN_CACHE_DIR"); !dir.empty()) return dir;
  if (std::string dir = environment("XDG_CACHE_HOME"); !dir.empty()) return dir + "/kiln";
  if (std::string home = environment("HOME"); !home.empty()) return home + "/.cache/kiln";
  return "";
}

std::string KernelCache::key(const std::string& source, const std::string& arch,
                             const std::vector<std::string>& options,
                             const std::string& compiler_version, const std::string& product) {
  std::string material = "kiln kernel\n" + compiler_version + "\n" + arch + "\n" + product + "\n";
  for (const std::string& option : options) material += option + "\n";
  material += source;
  return sha256_hex(material) + "." + product;
}

std::optional<std::vector<uint8_t>> KernelCache::load(const std::string& key) const {
  if (directory_.empty()) return std::nullopt;
  std::ifstream file(path_of(key), std::ios::binary);
  if (!file) return std::nullopt;
  const std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(file)),
                                   std::istreambuf_iterator<char>());
  if (bytes.size() < kHeaderSize || std::memcmp(bytes.data(), kMagic, kMagicSize) != 0) {
    return std::nullopt;
  }
  uint64_t size = 0;
  for (int i = 7; i >= 0; --i) size = (size << 8) | bytes[kMagicSize + i];
  if (size != bytes.size() - kHeaderSize) return std::nullopt;
  std::vector<uint8_t> payload(bytes.begin() + kHeaderSize, bytes.end());
  const auto digest = sha256(payload);
  if (std::memcmp(digest.data(), bytes.data() + kMagicSize + 8, digest.size()) != 0) {
    return std::nullopt;
  }
  return payload;
}

bool KernelCache::store(const std::string& key, std::span<const uint8_t> bytes,
                        std::string* why) const {
  const auto fail = [&](const std::string& reason) {
    if (why) *why = reason;
    return false;
  };
  if (directory_.empty()) return fail("no cache directory");
  std::error_code error;
  std::filesystem::create_directories(directory_, error);
  if (error) return fail("cannot create " + directory_ + ": " + error.message());
  std::string entry(kMagic, kMagicSize);
  for (int i = 0; i < 8; ++i)
    entry += static_cast<char>((uint64_t{bytes.size()} >> (8 * i)) & 0xff);
  const auto digest = sha256(bytes);
  entry.append(reinterpret_cast<const char*>(digest.data()), digest.size());
  entry.append(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  // A name no other writer uses: this process, this thread, a counter.
  static std::atomic<uint64_t> counter{0};
  const std::string temporary =
      path_of(key) + ".tmp." + std::to_string(getpid()) + "." +
      std::to_string(std::hash<std::thread::id>{}(std::this_thread::get_id())) + "." +
      std::to_string(counter++);
  {
    std::ofstream file(temporary, std::ios::binary | std::ios::trunc);
    if (!(file << entry) || !file.flush()) {
      const std::string reason = std::strerror(errno);
      std::filesystem::remove(temporary, error);
      return fail("cannot write " + temporary + ": " + reason);
    }
  }
  std::filesystem::rename(temporary, path_of(key), error);
  if (!error) return true;
  const std::string reason = "cannot rename " + temporary + ": " + error.message();
  std::error_code ignored;
  std::filesystem::remove(temporary, ignored);
  return fail(reason);
}

}  // namespace kiln::codegen
