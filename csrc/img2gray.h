// Declarations shared by the kernels (img2gray_cpu.cpp, img2gray_cuda.cu) and the binding (torch_binding.cpp).
#pragma once

#include <ATen/core/Tensor.h>

#include <vector>

namespace img2gray {

// Input checks shared by every device (user errors → TORCH_CHECK, surfaced in Python as RuntimeError/ValueError).
void check_image(const at::Tensor& image);
void check_out(const at::Tensor& image, const at::Tensor& out);
std::vector<int64_t> gray_shape(const at::Tensor& image);

// Kernels: `image` is contiguous (..., 3) and `out` a contiguous tensor of image.numel() / 3 elements with the
// same dtype and device. They never allocate and never launch on empty input.
void img2gray_cpu_kernel(const at::Tensor& image, at::Tensor& out);
#ifdef IMG2GRAY_WITH_CUDA
void img2gray_cuda_kernel(const at::Tensor& image, at::Tensor& out);
// The original one-pixel-per-thread design, kept as a reference for tests and benchmarks.
void img2gray_cuda_simple_kernel(const at::Tensor& image, at::Tensor& out);
#endif

}  // namespace img2gray
