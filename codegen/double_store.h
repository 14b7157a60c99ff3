// A double computed in a kernel, stored as the reference interpreter stores a double into a
// tensor of another dtype: floats rounded once (bf16 by way of a float rounded to odd, which
// then rounds to bf16 as the double would), integers rounded half to even and saturated.
#pragma once

#include <string>

#include "codegen/element_emitter.h"
#include "ir/dtype.h"

namespace kiln::codegen {

// The element, in `dtype`'s compute type, that the double expression `sum` is stored as.
std::string stored_from_double(ElementEmitter& e, DType dtype, const std::string& sum);

}  // namespace kiln::codegen
