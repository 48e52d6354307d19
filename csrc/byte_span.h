// Address ranges of strided tensors, for the out= overlap check shared by both bindings. ATen's
// assert_no_overlap gives up ("too hard") on non-dense views such as image[..., 0], and the stable ABI has no
// overlap helper at all; comparing spans is conservative (interleaved views of one buffer are refused too).
#pragma once

#include <cstddef>
#include <cstdint>

namespace img2gray {

struct ByteSpan {
  uintptr_t first;
  uintptr_t last;  // one past the last byte
};

// `sizes` and `strides` are any indexable ranges of int64_t (at::IntArrayRef, torch::stable's array refs).
template <typename Ints>
ByteSpan byte_span(const void* data, const Ints& sizes, const Ints& strides, size_t element_size) {
  int64_t last_offset = 0;
  for (size_t d = 0; d < sizes.size(); ++d) {
    last_offset += (sizes[d] - 1) * strides[d];
  }
  const auto first = reinterpret_cast<uintptr_t>(data);
  return {first, first + static_cast<uintptr_t>(last_offset + 1) * element_size};
}

inline bool overlap(ByteSpan a, ByteSpan b) {
  return a.first < b.last && b.first < a.last;
}

}  // namespace img2gray
