// kiln's C++ errors as Python exceptions: InputError, UnsupportedError and InternalError
// (ir/error.h) become kiln.InputError (a ValueError), kiln.UnsupportedError (an InputError) and
// kiln.InternalError (a RuntimeError), defined in kiln/errors.py, with the same messages.
#pragma once

#include <pybind11/pybind11.h>

namespace kiln::python {

void register_error_translator(pybind11::module_& module);

}  // namespace kiln::python
