// Address ranges and self-overlap of strided tensors, for the out= checks shared by both bindings. ATen's
// assert_no_overlap gives up ("too hard") on non-dense views such as image[..., 0], and the stable ABI has no
// overlap helper at all; comparing spans is conservative (interleaved views of one buffer are refused too).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

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

// True unless every element provably has its own memory: the dimensions of size > 1, ordered by stride, must
// each step over everything the smaller ones span. ATen's has_internal_overlap answers "too hard" for views
// such as as_strided((4, 4), (1, 1)), and torch's own out= ops then write through them; we refuse instead.
// Conservative: a few exotic interleavings that do not overlap (sizes (3, 2), strides (2, 3)) are refused too.
template <typename Ints>
bool may_self_overlap(const Ints& sizes, const Ints& strides) {
  std::vector<std::pair<int64_t, int64_t>> dims;  // (stride, size)
  for (size_t d = 0; d < sizes.size(); ++d) {
    if (sizes[d] == 0) {
      return false;  // no elements
    }
    if (sizes[d] > 1) {
      dims.emplace_back(strides[d], sizes[d]);
    }
  }
  std::sort(dims.begin(), dims.end());
  int64_t span = 1;  // elements covered by the dimensions so far, from the first one to one past the last
  for (const auto& [stride, size] : dims) {
    if (stride < span) {
      return true;
    }
    span += (size - 1) * stride;
  }
  return false;
}

}  // namespace img2gray
