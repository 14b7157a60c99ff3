// The note kiln run and kiln bench print when steps whose tactic is cuBLASLt run their own
// kernels instead (cuBLASLt not installed, or without an algorithm for the call on this GPU):
// the results are the same, the speed measured at compile time may not be.
#pragma once

#include <string>

#include "runtime/session.h"

namespace kiln::tools {

// "kiln: note: 3 steps chosen to run on cuBLASLt run their own kernels: cuBLASLt not found
// (...)\n", or "" when every such step runs on cuBLASLt (or there is none).
std::string library_fallback_note(const Session& session);

}  // namespace kiln::tools
