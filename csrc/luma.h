// The per-pixel formula, written once for the CPU and CUDA kernels.
#pragma once

// The header-only half types: the same c10::Half/BFloat16 as ATen's, usable under the stable ABI too.
#include <torch/headeronly/util/BFloat16.h>
#include <torch/headeronly/util/Half.h>

#include <cstdint>

#if defined(__CUDACC__)
#define IMG2GRAY_HOST_DEVICE __host__ __device__ __forceinline__
#else
#define IMG2GRAY_HOST_DEVICE inline
#endif

namespace img2gray {

// ITU-R 601-2 luma in Pillow's fixed point (libImaging/Convert.c, L24): the weights 0.299/0.587/0.114 scaled
// by 2^16 and rounded so that they sum to exactly 65536, plus 0.5 before the shift. Bit-exact with
// Image.convert("L") for all 2^24 triples (tests/test_ops.py checks every one).
IMG2GRAY_HOST_DEVICE uint8_t luma(uint8_t r, uint8_t g, uint8_t b) {
  return static_cast<uint8_t>((r * 19595u + g * 38470u + b * 7471u + 0x8000u) >> 16);
}

// Float: accumulate in fp32 in a fixed order with no fused multiply-add, so CPU and GPU agree bit for bit.
// (The CPU file is compiled with -ffp-contract=off; device code uses the explicitly rounded intrinsics.)
IMG2GRAY_HOST_DEVICE float luma(float r, float g, float b) {
#if defined(__CUDA_ARCH__)
  return __fadd_rn(__fadd_rn(__fmul_rn(0.299f, r), __fmul_rn(0.587f, g)), __fmul_rn(0.114f, b));
#else
  return 0.299f * r + 0.587f * g + 0.114f * b;
#endif
}

// Half and bfloat16: computed in fp32 and rounded once (round to nearest even).
IMG2GRAY_HOST_DEVICE c10::Half luma(c10::Half r, c10::Half g, c10::Half b) {
  return c10::Half(luma(static_cast<float>(r), static_cast<float>(g), static_cast<float>(b)));
}
IMG2GRAY_HOST_DEVICE c10::BFloat16 luma(c10::BFloat16 r, c10::BFloat16 g, c10::BFloat16 b) {
  return c10::BFloat16(luma(static_cast<float>(r), static_cast<float>(g), static_cast<float>(b)));
}

}  // namespace img2gray
