// CPU kernel: a plain indexed loop per dtype that gcc/clang vectorise at -O3 (interleaved stride-3 loads, no
// branches, no calls). Threading is the caller's (torch's parallel_for), so this file needs no torch library.
#include "kernels.h"
#include "luma.h"

namespace img2gray {
namespace {

template <typename T>
__attribute__((always_inline)) inline void convert_range_impl(const T* __restrict__ rgb, T* __restrict__ gray,
                                                              int64_t count) {
  for (int64_t i = 0; i < count; ++i) {
    gray[i] = luma(rgb[3 * i], rgb[3 * i + 1], rgb[3 * i + 2]);
  }
}

// x86-64's baseline (SSE2) has no byte shuffle and no 32-bit multiply, so the stride-3 loop only vectorises
// 8 bytes at a time there; an AVX2 clone, picked at load time by the CPU, vectorises it 32 bytes wide.
#if defined(__x86_64__) && defined(__GNUC__)
#define IMG2GRAY_CPU_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define IMG2GRAY_CPU_CLONES
#endif

#define IMG2GRAY_DEFINE_CONVERT_RANGE(T)                                         \
  IMG2GRAY_CPU_CLONES void convert_range(const T* rgb, T* gray, int64_t count) { \
    convert_range_impl(rgb, gray, count);                                        \
  }
IMG2GRAY_DEFINE_CONVERT_RANGE(uint8_t)
IMG2GRAY_DEFINE_CONVERT_RANGE(float)
IMG2GRAY_DEFINE_CONVERT_RANGE(c10::Half)
IMG2GRAY_DEFINE_CONVERT_RANGE(c10::BFloat16)
#undef IMG2GRAY_DEFINE_CONVERT_RANGE

template <typename T>
void convert_typed(const void* rgb, void* gray, int64_t begin, int64_t end) {
  convert_range(static_cast<const T*>(rgb) + 3 * begin, static_cast<T*>(gray) + begin, end - begin);
}

}  // namespace

void convert_cpu(Dtype dtype, const void* rgb, void* gray, int64_t begin, int64_t end) {
  switch (dtype) {
    case Dtype::kUint8:
      return convert_typed<uint8_t>(rgb, gray, begin, end);
    case Dtype::kFloat32:
      return convert_typed<float>(rgb, gray, begin, end);
    case Dtype::kFloat16:
      return convert_typed<c10::Half>(rgb, gray, begin, end);
    case Dtype::kBFloat16:
      return convert_typed<c10::BFloat16>(rgb, gray, begin, end);
  }
}

}  // namespace img2gray
