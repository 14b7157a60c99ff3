// The note on library steps that run their kernels (see the header).
#include "tools/library_fallback_note.h"

#include <fmt/format.h>

namespace kiln::tools {

std::string library_fallback_note(const Session& session) {
  int count = 0;
  std::string why;
  for (size_t step = 0; step < session.library_notes().size(); ++step) {
    if (!session.library_call_stands_in(step)) continue;
    // Each step's reason is usually the same (the library is missing); the first stands for all.
    if (count++ == 0) why = session.library_notes()[step];
  }
  if (count == 0) return "";
  return fmt::format("kiln: note: {} step{} chosen to run on cuBLASLt run{} {} own kernel{}: {}\n",
                     count, count == 1 ? "" : "s", count == 1 ? "s" : "",
                     count == 1 ? "its" : "their", count == 1 ? "" : "s", why);
}

}  // namespace kiln::tools
