// Graph inputs: the kiln type of an ONNX graph input, with symbolic dimensions bound by the
// user (--input-shape NAME=1x3x224x224), and checks for values bound as constants.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "ir/tensor.h"

namespace onnx {
class ValueInfoProto;
}

namespace kiln::onnx_import {

// The input's type. Dimensions that are symbolic (dim_param) or unknown must be given by
// `bound_shape`, which must agree with the model on the rank and every known dimension; without
// it they are 1 when `on_defaulted` is set (called with a one-line note naming the input, its
// dims and how to choose them), else an InputError.
TensorType input_type(const onnx::ValueInfoProto& input, const Shape* bound_shape,
                      const std::function<void(const std::string&)>& on_defaulted = {});

// Each dim's dim_param, "" where the dim has a value or no name.
std::vector<std::string> dim_params(const onnx::ValueInfoProto& input);

// Checks a value bound to a graph input against the model's declared type (dtype, rank and
// every known dimension).
void check_bound_input(const onnx::ValueInfoProto& input, const Tensor& value);

}  // namespace kiln::onnx_import
