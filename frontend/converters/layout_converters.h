// The layout converter files' registration functions, called by register_layout_converters
// (frontend/converters/layout.cc), and helpers they share.
#pragma once

#include <string>
#include <vector>

#include "frontend/node_importer.h"

namespace kiln::onnx_import {

// Reshape, Flatten, Squeeze, Unsqueeze, Transpose, Expand, Tile, DepthToSpace, SpaceToDepth.
void register_reshape_converters(ConverterTable& table);
// Slice, Split, Concat, Pad, CenterCropPad, Gather, GatherElements, GatherND, ScatterND,
// ScatterElements (and Scatter, its deprecated name), Trilu.
void register_slice_converters(ConverterTable& table);
// Constant, Shape, Size, ConstantOfShape, EyeLike, HannWindow, HammingWindow, BlackmanWindow,
// Range: constants at import.
void register_shape_converters(ConverterTable& table);
// Resize, Upsample.
void register_resize_converters(ConverterTable& table);
// OneHot.
void register_one_hot_converters(ConverterTable& table);
// AffineGrid, ReverseSequence.
void register_sampling_grid_converters(ConverterTable& table);
// GridSample.
void register_grid_sample_converters(ConverterTable& table);
// Compress, NonZero (their values known at compile time), MaxUnpool.
void register_select_constant_converters(ConverterTable& table);

// The integer values of a compile-time constant input (e.g. a shape or axes list).
std::vector<int64_t> constant_ints(const NodeImporter& node, size_t input, const std::string& what);
// The single integer of a compile-time constant input (a scalar or one-element tensor); fails
// naming the node when it holds another number of values.
int64_t constant_int(const NodeImporter& node, size_t input, const std::string& what);

// Maps each axis into [0, rank), failing with the node's name on out-of-range or repeated axes.
std::vector<int64_t> normalized_axes(const NodeImporter& node, std::vector<int64_t> axes,
                                     int64_t rank);

}  // namespace kiln::onnx_import
