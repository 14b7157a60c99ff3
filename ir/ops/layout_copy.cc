// Element copies driven by per-axis offset tables (see layout_copy.h).
#include "ir/ops/layout_copy.h"

#include <cstring>

#include "ir/error.h"

namespace kiln {
namespace {

// Walks the output row-major; `Element` is an unsigned integer type of the element's size, so
// every dtype copies as raw bits.
template <class Element>
class OffsetCopier {
 public:
  OffsetCopier(const Tensor& src, const AxisOffsets& offsets, Tensor& dst, const Tensor* fill)
      : src_(src.data<Element>()), offsets_(offsets), dst_(dst.data<Element>()) {
    if (fill) std::memcpy(&fill_, fill->bytes(), sizeof(Element));
  }

  void run() {
    if (offsets_.empty()) {
      *dst_ = *src_;  // a scalar
      return;
    }
    copy_axis(0, 0, false);
  }

 private:
  void copy_axis(size_t axis, int64_t base, bool filled) {
    const std::vector<int64_t>& axis_offsets = offsets_[axis];
    if (axis + 1 == offsets_.size()) {
      for (int64_t offset : axis_offsets) {
        *dst_++ = (filled || offset == kFillOffset) ? fill_ : src_[base + offset];
      }
      return;
    }
    for (int64_t offset : axis_offsets) {
      const bool fill_here = filled || offset == kFillOffset;
      copy_axis(axis + 1, fill_here ? 0 : base + offset, fill_here);
    }
  }

  const Element* src_;
  const AxisOffsets& offsets_;
  Element* dst_;
  Element fill_{};
};

template <class Element>
void copy_with(const Tensor& src, const AxisOffsets& offsets, Tensor& dst, const Tensor* fill) {
  OffsetCopier<Element>(src, offsets, dst, fill).run();
}

}  // namespace

std::vector<int64_t> strided_offsets(int64_t count, int64_t start, int64_t stride) {
  std::vector<int64_t> offsets(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) offsets[i] = start + i * stride;
  return offsets;
}

void copy_by_axis_offsets(const Tensor& src, const AxisOffsets& offsets, Tensor& dst,
                          const Tensor* fill) {
  int64_t count = 1;
  for (const std::vector<int64_t>& axis_offsets : offsets) {
    count *= static_cast<int64_t>(axis_offsets.size());
  }
  if (count != dst.num_elements()) {
    throw InternalError("copy_by_axis_offsets: offset tables do not cover the output");
  }
  if (count == 0) return;
  if (fill && fill->dtype() != dst.dtype()) {
    throw InternalError("copy_by_axis_offsets: fill value dtype differs from the output's");
  }
  switch (dtype_size(dst.dtype())) {
    case 1:
      return copy_with<uint8_t>(src, offsets, dst, fill);
    case 2:
      return copy_with<uint16_t>(src, offsets, dst, fill);
    case 4:
      return copy_with<uint32_t>(src, offsets, dst, fill);
    case 8:
      return copy_with<uint64_t>(src, offsets, dst, fill);
    default:
      throw InternalError("copy_by_axis_offsets: unsupported element size");
  }
}

void permute_copy(const Tensor& src, const Shape& view_shape, const std::vector<int64_t>& perm,
                  Tensor& dst) {
  const std::vector<int64_t> strides = row_major_strides(view_shape);
  AxisOffsets offsets;
  for (int64_t axis : perm) offsets.push_back(strided_offsets(view_shape[axis], 0, strides[axis]));
  copy_by_axis_offsets(src, offsets, dst);
}

void copy_elements(const Tensor& src, Tensor& dst) {
  if (src.num_bytes() != dst.num_bytes()) {
    throw InternalError("copy_elements: source and destination sizes differ");
  }
  if (src.num_bytes() != 0) std::memcpy(dst.bytes(), src.bytes(), src.num_bytes());
}

}  // namespace kiln
