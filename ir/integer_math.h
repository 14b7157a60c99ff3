// Integer arithmetic the IR's shape functions and the code generators share.
#pragma once

#include <cstdint>

namespace kiln {

// a / b rounded up, for a ≥ 0 and b > 0: the tiles of size b that cover a.
constexpr int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

}  // namespace kiln
