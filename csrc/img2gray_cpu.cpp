// CPU kernel: multithreaded with at::parallel_for; the inner loop is a plain indexed loop over one dtype that
// gcc/clang vectorise at -O3 (interleaved stride-3 loads, no branches, no calls).
#include "img2gray.h"
#include "luma.h"

#include <ATen/Dispatch_v2.h>
#include <ATen/Parallel.h>

namespace img2gray {
namespace {

// Pixels per task: large enough that thread start-up is noise, small enough to split a 1080p frame.
constexpr int64_t kGrainPixels = 1 << 16;

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

#define IMG2GRAY_DEFINE_CONVERT_RANGE(T)                                                   \
  IMG2GRAY_CPU_CLONES void convert_range(const T* rgb, T* gray, int64_t count) {           \
    convert_range_impl(rgb, gray, count);                                                  \
  }
IMG2GRAY_DEFINE_CONVERT_RANGE(uint8_t)
IMG2GRAY_DEFINE_CONVERT_RANGE(float)
IMG2GRAY_DEFINE_CONVERT_RANGE(c10::Half)
IMG2GRAY_DEFINE_CONVERT_RANGE(c10::BFloat16)
#undef IMG2GRAY_DEFINE_CONVERT_RANGE

}  // namespace

void img2gray_cpu_kernel(const at::Tensor& image, at::Tensor& out) {
  TORCH_INTERNAL_ASSERT(image.device().is_cpu() && image.is_contiguous() && out.is_contiguous());
  const int64_t pixels = out.numel();
  if (pixels == 0) {
    return;
  }
  AT_DISPATCH_V2(image.scalar_type(), "img2gray_cpu", AT_WRAP([&] {
    const scalar_t* rgb = image.const_data_ptr<scalar_t>();
    scalar_t* gray = out.mutable_data_ptr<scalar_t>();
    at::parallel_for(0, pixels, kGrainPixels, [&](int64_t begin, int64_t end) {
      convert_range(rgb + 3 * begin, gray + begin, end - begin);
    });
  }), at::kByte, at::kFloat, at::kHalf, at::kBFloat16);
}

}  // namespace img2gray
