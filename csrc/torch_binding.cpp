// The op contract: schema, shared input checks, and the CPU/CUDA registrations. The kernels themselves live in
// img2gray_cpu.cpp and img2gray_cuda.cu and never see an unchecked tensor.
#include "img2gray.h"

#include <ATen/ATen.h>
#include <ATen/MemoryOverlap.h>
#include <torch/library.h>

#include <Python.h>

namespace img2gray {

void check_image(const at::Tensor& image) {
  TORCH_CHECK_VALUE(image.dim() >= 3 && image.size(-1) == 3,
                    "img2gray: expected an RGB image of shape (..., H, W, 3), got shape ", image.sizes());
  const auto dtype = image.scalar_type();
  TORCH_CHECK_TYPE(dtype == at::kByte || dtype == at::kFloat || dtype == at::kHalf || dtype == at::kBFloat16,
                   "img2gray: expected dtype uint8, float16, bfloat16 or float32, got ", dtype);
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
  at::assert_no_overlap(out, image);
}

namespace {

using Kernel = void (*)(const at::Tensor&, at::Tensor&);

at::Tensor& img2gray_out_with(Kernel kernel, const at::Tensor& image, at::Tensor& out) {
  check_image(image);
  check_out(image, out);
  const at::Tensor rgb = image.contiguous();  // non-contiguous input: one copy, then the fast path
  if (out.is_contiguous()) {
    kernel(rgb, out);
  } else {
    at::Tensor dense = at::empty(out.sizes(), out.options());
    kernel(rgb, dense);
    out.copy_(dense);
  }
  return out;
}

at::Tensor img2gray_with(Kernel kernel, const at::Tensor& image) {
  check_image(image);
  at::Tensor out = at::empty(gray_shape(image), image.options().memory_format(at::MemoryFormat::Contiguous));
  kernel(image.contiguous(), out);
  return out;
}

template <Kernel kKernel>
at::Tensor functional(const at::Tensor& image) {
  return img2gray_with(kKernel, image);
}

template <Kernel kKernel>
at::Tensor& out_variant(const at::Tensor& image, at::Tensor& out) {
  return img2gray_out_with(kKernel, image, out);
}

}  // namespace

TORCH_LIBRARY(img2gray, m) {
  m.def("img2gray(Tensor image) -> Tensor");
  m.def("img2gray.out(Tensor image, *, Tensor(a!) out) -> Tensor(a!)");
  // The one-pixel-per-thread CUDA kernel, kept as a reference for tests and benchmarks (CUDA builds only).
  m.def("_img2gray_simple(Tensor image) -> Tensor");
}

TORCH_LIBRARY_IMPL(img2gray, CPU, m) {
  m.impl("img2gray", &functional<img2gray_cpu_kernel>);
  m.impl("img2gray.out", &out_variant<img2gray_cpu_kernel>);
}

#ifdef IMG2GRAY_WITH_CUDA
TORCH_LIBRARY_IMPL(img2gray, CUDA, m) {
  m.impl("img2gray", &functional<img2gray_cuda_kernel>);
  m.impl("img2gray.out", &out_variant<img2gray_cuda_kernel>);
  m.impl("_img2gray_simple", &functional<img2gray_cuda_simple_kernel>);
}
#endif

}  // namespace img2gray

// `import img2gray._C` loads this library, which runs the TORCH_LIBRARY static initialisers above. The module
// itself is empty (limited API, abi3): there is no Python C-API use beyond this stub.
extern "C" PyObject* PyInit__C(void) {
  static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_C", nullptr, -1, nullptr,
                                      nullptr,               nullptr, nullptr, nullptr};
  return PyModule_Create(&module);
}
