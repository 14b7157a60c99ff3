// The neural-network converter files' registration functions, called by register_nn_converters
// (frontend/converters/nn.cc), the window helpers Conv, ConvTranspose and the pools share, and
// the float-type attributes of the normalizations and Attention.
#pragma once

#include <string>
#include <vector>

#include "frontend/node_importer.h"

namespace kiln::onnx_import {

// Conv, ConvTranspose.
void register_conv_converters(ConverterTable& table);
// Gemm, MatMul, Einsum.
void register_matmul_converters(ConverterTable& table);
// BatchNormalization, InstanceNormalization, LayerNormalization, GroupNormalization,
// RMSNormalization, MeanVarianceNormalization, LRN, Softmax, LogSoftmax, Hardmax.
void register_norm_converters(ConverterTable& table);
// ReduceSum, ReduceMean, ReduceMax, ReduceMin, ReduceProd, ReduceL1, ReduceL2, ReduceSumSquare,
// ReduceLogSum, ReduceLogSumExp, ArgMax, ArgMin.
void register_reduce_converters(ConverterTable& table);
// GlobalAveragePool, GlobalMaxPool, AveragePool, MaxPool.
void register_pool_converters(ConverterTable& table);
// TopK, CumSum.
void register_topk_cumsum_converters(ConverterTable& table);
// RotaryEmbedding.
void register_rotary_converters(ConverterTable& table);
// Attention.
void register_attention_converters(ConverterTable& table);
// RNN, GRU, LSTM (unrolled over the sequence).
void register_recurrent_converters(ConverterTable& table);
// NegativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss.
void register_loss_converters(ConverterTable& table);
// MatMulInteger, ConvInteger, QLinearMatMul, QLinearConv.
void register_quantized_converters(ConverterTable& table);

// An f32 `value` of whole numbers saturated to `dtype`'s range and cast to it: int8 or uint8 (the
// quantized types kiln has; others are refused naming the node). QuantizeLinear's and the QLinear
// ops' last step (elementwise_quantize.cc).
Value* saturate_quantized(NodeImporter& node, Value* value, DType dtype);

// The float dtype named by attribute `name`, an ONNX TensorProto element type code (`fallback`
// when absent), as stash_type and softmax_precision hold; fails naming the node for other types.
DType float_dtype_attr(const NodeImporter& node, const std::string& name, int64_t fallback);

// The window attributes of a Conv or pooling node for input X [N,C,D...] and the given kernel,
// with defaults filled in and auto_pad resolved into explicit pads.
struct WindowAttrs {
  std::vector<int64_t> strides, dilations, pads;
};
WindowAttrs window_attrs(const NodeImporter& node, const Shape& input_shape,
                         const std::vector<int64_t>& kernel);

// The integer list attribute `name`, or `count` copies of `fill` when absent; fails naming the
// node when its length is not `count`.
std::vector<int64_t> ints_attr_of_length(const NodeImporter& node, const std::string& name,
                                         size_t count, int64_t fill);

}  // namespace kiln::onnx_import
