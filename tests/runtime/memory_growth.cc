// Memory growth over a soak (see the header).
#include "tests/runtime/memory_growth.h"

#include <fmt/format.h>
#include <unistd.h>

#include <fstream>

#include "ir/error.h"
#include "tools/inspect_report.h"

namespace kiln::test {
namespace {

std::string growth_line(const char* what, int64_t growth, int64_t allowed,
                        const std::string& span) {
  if (growth <= allowed) return "";
  return fmt::format("{} memory grew by {} over {}; {} allowed\n", what, format_growth(growth),
                     span, tools::format_bytes(allowed));
}

}  // namespace

int64_t resident_host_bytes() {
  // statm: total program size, then resident pages, ...
  std::ifstream statm("/proc/self/statm");
  int64_t size_pages = 0;
  int64_t resident_pages = 0;
  if (!(statm >> size_pages >> resident_pages)) {
    throw InternalError("cannot read the resident set from /proc/self/statm");
  }
  return resident_pages * sysconf(_SC_PAGESIZE);
}

std::string format_growth(int64_t bytes) {
  const std::string magnitude = tools::format_bytes(bytes < 0 ? -bytes : bytes);
  return fmt::format("{}{} ({} B)", bytes < 0 ? "-" : "+", magnitude, bytes);
}

std::string growth_failure(const std::string& span, const MemoryBytes& start,
                           const MemoryBytes& end, const MemoryBytes& allowed) {
  return growth_line("host", end.host - start.host, allowed.host, span) +
         growth_line("GPU", end.gpu - start.gpu, allowed.gpu, span);
}

}  // namespace kiln::test
