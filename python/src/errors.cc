// The translator from kiln's C++ exceptions to the Python classes of kiln/errors.py.
#include "errors.h"

#include "ir/error.h"

namespace kiln::python {

namespace py = pybind11;

namespace {

void raise(const char* class_name, const char* message) {
  py::object error_class = py::module_::import("kiln.errors").attr(class_name);
  PyErr_SetString(error_class.ptr(), message);
}

}  // namespace

void register_error_translator(py::module_& module) {
  py::register_exception_translator([](std::exception_ptr error) {
    if (!error) return;
    try {
      std::rethrow_exception(error);
    } catch (const UnsupportedError& e) {  // before InputError, its base
      raise("UnsupportedError", e.what());
    } catch (const InputError& e) {
      raise("InputError", e.what());
    } catch (const InternalError& e) {
      raise("InternalError", e.what());
    }
  });
}

}  // namespace kiln::python
