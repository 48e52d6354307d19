// The classic binding: ATen tensors and TORCH_LIBRARY. Full c10/ATen API, so the binary is tied to the torch
// minor it was built against (the wheel says so: `+torchX.Y`, `torch==X.Y.*`). Checks, allocation and
// dispatch live here; the kernels (../img2gray_cpu.cpp, ../img2gray_cuda.cu) only see raw pointers.
#include "../byte_span.h"
#include "../kernels.h"
#include "../ops_names.h"
#include "../python_module.h"

#include <ATen/ATen.h>
#include <ATen/MemoryOverlap.h>
#include <ATen/Parallel.h>
#include <torch/library.h>

#ifdef IMG2GRAY_WITH_CUDA
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#endif

namespace img2gray {
namespace {

Dtype kernel_dtype(at::ScalarType type) {
  switch (type) {
    case at::kByte:
      return Dtype::kUint8;
    case at::kFloat:
      return Dtype::kFloat32;
    case at::kHalf:
      return Dtype::kFloat16;
    case at::kBFloat16:
      return Dtype::kBFloat16;
    default:
      TORCH_CHECK_TYPE(false, "img2gray: expected dtype uint8, float16, bfloat16 or float32, got ", type);
  }
}

void check_image(const at::Tensor& image) {
  TORCH_CHECK_VALUE(image.dim() >= 3 && image.size(-1) == 3,
                    "img2gray: expected an RGB image of shape (..., H, W, 3), got shape ", image.sizes());
  kernel_dtype(image.scalar_type());
}

std::vector<int64_t> gray_shape(const at::Tensor& image) {
  auto sizes = image.sizes().vec();
  sizes.pop_back();
  return sizes;
}

void check_out(const at::Tensor& image, const at::Tensor& out) {
  TORCH_CHECK_TYPE(out.scalar_type() == image.scalar_type(), "img2gray: expected out of dtype ",
                   image.scalar_type(), " (the image's), got ", out.scalar_type());
  TORCH_CHECK_VALUE(out.device() == image.device(), "img2gray: expected out on ", image.device(),
                    " (the image's device), got ", out.device());
  TORCH_CHECK_VALUE(out.sizes() == at::IntArrayRef(gray_shape(image)), "img2gray: expected out of shape ",
                    at::IntArrayRef(gray_shape(image)), ", got ", out.sizes());
  at::assert_no_internal_overlap(out);
  TORCH_CHECK(out.numel() == 0 || image.numel() == 0 ||
                  !overlap(byte_span(out.data_ptr(), out.sizes(), out.strides(), out.element_size()),
                           byte_span(image.data_ptr(), image.sizes(), image.strides(), image.element_size())),
              "img2gray: out overlaps the image's memory");
}

// Kernel runners: `image` contiguous (..., 3), `out` contiguous with image.numel() / 3 elements.
using Runner = void (*)(const at::Tensor& image, at::Tensor& out);

void run_cpu(const at::Tensor& image, at::Tensor& out) {
  const Dtype dtype = kernel_dtype(image.scalar_type());
  const void* rgb = image.const_data_ptr();
  void* gray = out.mutable_data_ptr();
  at::parallel_for(0, out.numel(), kCpuGrainPixels,
                   [&](int64_t begin, int64_t end) { convert_cpu(dtype, rgb, gray, begin, end); });
}

#ifdef IMG2GRAY_WITH_CUDA
template <CudaKernel kKernel>
void run_cuda(const at::Tensor& image, at::Tensor& out) {
  const c10::cuda::CUDAGuard guard(image.device());
  const int device = image.device().index();
  C10_CUDA_CHECK(launch_cuda(kKernel, kernel_dtype(image.scalar_type()), image.const_data_ptr(),
                             out.mutable_data_ptr(), out.numel(), device, c10::cuda::getCurrentCUDAStream(device)));
}
#endif

template <Runner kRun>
at::Tensor functional(const at::Tensor& image) {
  check_image(image);
  at::Tensor out = at::empty(gray_shape(image), image.options().memory_format(at::MemoryFormat::Contiguous));
  kRun(image.contiguous(), out);
  return out;
}

template <Runner kRun>
at::Tensor& out_variant(const at::Tensor& image, at::Tensor& out) {
  check_image(image);
  check_out(image, out);
  const at::Tensor rgb = image.contiguous();  // non-contiguous input: one copy, then the fast path
  if (out.is_contiguous()) {
    kRun(rgb, out);
  } else {
    at::Tensor dense = at::empty(out.sizes(), out.options());
    kRun(rgb, dense);
    out.copy_(dense);
  }
  return out;
}

}  // namespace

IMG2GRAY_EXPAND(TORCH_LIBRARY, IMG2GRAY_OPS_NAMESPACE, m) {
  m.def("img2gray(Tensor image) -> Tensor");
  m.def("img2gray.out(Tensor image, *, Tensor(a!) out) -> Tensor(a!)");
  // The one-pixel-per-thread CUDA kernel, kept as a reference for tests and benchmarks (CUDA builds only).
  m.def("_img2gray_simple(Tensor image) -> Tensor");
}

IMG2GRAY_EXPAND(TORCH_LIBRARY_IMPL, IMG2GRAY_OPS_NAMESPACE, CPU, m) {
  m.impl("img2gray", &functional<run_cpu>);
  m.impl("img2gray.out", &out_variant<run_cpu>);
}

#ifdef IMG2GRAY_WITH_CUDA
IMG2GRAY_EXPAND(TORCH_LIBRARY_IMPL, IMG2GRAY_OPS_NAMESPACE, CUDA, m) {
  m.impl("img2gray", &functional<run_cuda<CudaKernel::kFast>>);
  m.impl("img2gray.out", &out_variant<run_cuda<CudaKernel::kFast>>);
  m.impl("_img2gray_simple", &functional<run_cuda<CudaKernel::kSimple>>);
}
#endif

}  // namespace img2gray

IMG2GRAY_DEFINE_PYTHON_MODULE()
