// The classic binding: ATen tensors and TORCH_LIBRARY. Full c10/ATen API, so the binary is tied to the torch
// minor it was built against (the wheel says so: `+torchX.Y`, `torch==X.Y.*`). Checks, allocation and
// dispatch live here; the kernels (../img2gray_cpu.cpp, ../img2gray_cuda.cu) only see raw pointers.
#include "../byte_span.h"
#include "../kernels.h"
#include "../op_schema.h"
#include "../ops_names.h"
#include "../python_module.h"

#include <ATen/ATen.h>
#include <ATen/EmptyTensor.h>
#include <ATen/Parallel.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <c10/core/GradMode.h>
#include <torch/library.h>

#ifdef IMG2GRAY_WITH_CUDA
#include <ATen/cuda/EmptyTensor.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#endif

#include <atomic>
#include <optional>

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

// The checks run once per call, here (the Python wrapper adds none on the success path).
void check_image(const at::Tensor& image) {
  TORCH_CHECK_TYPE(image.defined(), "img2gray: expected image to be a Tensor, got None");
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
  TORCH_CHECK_TYPE(out.defined(), "img2gray: expected out to be a Tensor, got None");
  TORCH_CHECK_TYPE(out.scalar_type() == image.scalar_type(), "img2gray: expected out of dtype ",
                   image.scalar_type(), " (the image's), got ", out.scalar_type());
  TORCH_CHECK_VALUE(out.device() == image.device(), "img2gray: expected out on ", image.device(),
                    " (the image's device), got ", out.device());
  TORCH_CHECK_VALUE(out.dim() + 1 == image.dim() && out.sizes() == image.sizes().slice(0, out.dim()),
                    "img2gray: expected out of shape ", at::IntArrayRef(gray_shape(image)), ", got ", out.sizes());
  if (out.numel() == 0) {
    return;
  }
  TORCH_CHECK(out.is_contiguous() || !may_self_overlap(out.sizes(), out.strides()),
              "img2gray: more than one element of out may refer to a single memory location (internal overlap); "
              "expected an out whose elements do not share memory, got strides ", out.strides());
  TORCH_CHECK(image.numel() == 0 ||
                  !overlap(byte_span(out.data_ptr(), out.sizes(), out.strides(), out.element_size()),
                           byte_span(image.data_ptr(), image.sizes(), image.strides(), image.element_size())),
              "img2gray: out overlaps the image's memory");
}

// Allocation straight from the backend's allocator (CUDA: the caching allocator), as at::empty ends up doing,
// without a second trip through the dispatcher.
at::Tensor new_gray(const at::Tensor& image) {
  const auto shape = gray_shape(image);
#ifdef IMG2GRAY_WITH_CUDA
  if (image.is_cuda()) {
    return at::detail::empty_cuda(shape, image.scalar_type(), image.device(), at::MemoryFormat::Contiguous);
  }
#endif
  return at::detail::empty_cpu(shape, image.scalar_type(), /*pin_memory=*/false, at::MemoryFormat::Contiguous);
}

// Kernel runners: `image` contiguous (..., 3), `out` contiguous with image.numel() / 3 elements.
using Runner = void (*)(const at::Tensor& image, at::Tensor& out);

void run_cpu(const at::Tensor& image, at::Tensor& out) {
  const Dtype dtype = kernel_dtype(image.scalar_type());
  const void* rgb = image.const_data_ptr();
  void* gray = out.mutable_data_ptr();
  const CpuPlan plan = plan_cpu(dtype, out.numel(), at::get_num_threads());
  std::atomic<int64_t> next_tile{0};
  at::parallel_for(0, plan.workers, 1,
      [&](int64_t, int64_t) { convert_cpu_tiles(dtype, rgb, gray, plan, next_tile); });
}

#ifdef IMG2GRAY_WITH_CUDA
void run_cuda(const at::Tensor& image, at::Tensor& out) {
  const int device = image.device().index();
  // Most calls are already on the image's device. The CUDA runtime's device, as in the stable binding: the context
  // the launch uses, which c10::cuda::current_device() need not name (c10::cuda::MaybeSetDevice).
  int current = -1;
  C10_CUDA_CHECK(cudaGetDevice(&current));
  std::optional<c10::cuda::CUDAGuard> guard;
  if (current != device) {
    guard.emplace(image.device());
  }
  C10_CUDA_CHECK(launch_cuda(kernel_dtype(image.scalar_type()), image.const_data_ptr(),
                             out.mutable_data_ptr(), out.numel(), device, c10::cuda::getCurrentCUDAStream(device)));
}
#endif

template <Runner kRun>
at::Tensor functional(const at::Tensor& image) {
  check_image(image);
  at::Tensor out = new_gray(image);
  if (out.numel() > 0) {
    kRun(image.contiguous(), out);  // non-contiguous input: one copy, then the fast path
  }
  return out;
}

template <Runner kRun>
at::Tensor& out_variant(const at::Tensor& image, at::Tensor& out) {
  check_image(image);
  check_out(image, out);
  if (out.numel() == 0) {
    return out;
  }
  const at::Tensor rgb = image.contiguous();
  if (out.is_contiguous()) {
    kRun(rgb, out);
  } else {
    at::Tensor dense = at::empty(out.sizes(), out.options());
    kRun(rgb, dense);
    out.copy_(dense);
  }
  return out;
}

// img2gray.out and _img2gray_into, for the kernels below that redispatch or call them.
const c10::TypedOperatorHandle<at::Tensor&(const at::Tensor&, at::Tensor&)>& out_overload() {
  static const auto op = c10::Dispatcher::singleton()
                             .findSchemaOrThrow(IMG2GRAY_STRINGIFY(IMG2GRAY_OPS_NAMESPACE) "::img2gray", "out")
                             .typed<at::Tensor&(const at::Tensor&, at::Tensor&)>();
  return op;
}

const c10::TypedOperatorHandle<void(const at::Tensor&, at::Tensor&)>& into_op() {
  static const auto op = c10::Dispatcher::singleton()
                             .findSchemaOrThrow(IMG2GRAY_STRINGIFY(IMG2GRAY_OPS_NAMESPACE) "::_img2gray_into", "")
                             .typed<void(const at::Tensor&, at::Tensor&)>();
  return op;
}

// The Autograd kernels of the out= overloads: torch's own rule for out= ops (the functional overload's backward is
// registered from Python with torch.library.register_autograd, python/img2gray/ops.py), then the kernel below.
void refuse_out_with_autograd(const at::Tensor& image, const at::Tensor& out) {
  TORCH_CHECK(!(c10::GradMode::is_enabled() && (image.requires_grad() || out.requires_grad())),
              "img2gray(): functions with out=... arguments don't support automatic differentiation, but one of "
              "the arguments requires grad.");
}

at::Tensor& out_autograd(c10::DispatchKeySet keys, const at::Tensor& image, at::Tensor& out) {
  refuse_out_with_autograd(image, out);
  const at::AutoDispatchBelowAutograd below_autograd;
  return out_overload().redispatch(keys & c10::after_autograd_keyset, image, out);
}

// Bump out's version counter, which torch does for an op's mutated arguments at the ADInplaceOrView key, so that
// autograd refuses a backward through an `out` saved before the call (for an op defined in C++ the key falls through to
// nothing); skip inference tensors, as torch.autograd.graph.increment_version does.
void bump_version(const at::Tensor& out) {
  if (out.defined() && !out.is_inference()) {
    out.unsafeGetTensorImpl()->bump_version();
  }
}

// img2gray.out's ADInplaceOrView kernel, as in the stable build (where it is Python: python/img2gray/ops.py says why
// each step): the bump, then `_img2gray_into` below this key (so not bumped twice), which functionalization can
// handle where it refuses img2gray.out (`-> Tensor(a!)`).
at::Tensor& out_bump_version_then_into(c10::DispatchKeySet keys, const at::Tensor& image, at::Tensor& out) {
  const at::AutoDispatchBelowADInplaceOrView below_inplace_or_view;
  if (!out.defined()) {  // out=None through torch.ops: the out kernel says what it expected
    return out_overload().redispatch(keys & c10::after_ADInplaceOrView_keyset, image, out);
  }
  bump_version(out);
  into_op().call(image, out);
  return out;
}

// _img2gray_into's ADInplaceOrView kernel: the kernels below, then the bump, as torch's generated kernels for its own
// out= ops do. With into_autograd at the Autograd key, `_img2gray_into` refuses autograd and bumps in C++ what the
// stable build's Python wrapper has to (the stable ABI reaches neither requires_grad nor a version counter), so the
// wrapper's eager out= path in this build is the one C++ call.
void into_then_bump_version(c10::DispatchKeySet keys, const at::Tensor& image, at::Tensor& out) {
  {
    const at::AutoDispatchBelowADInplaceOrView below_inplace_or_view;
    into_op().redispatch(keys & c10::after_ADInplaceOrView_keyset, image, out);
  }
  bump_version(out);
}

// _img2gray_into: out_variant with positional arguments and nothing returned (../op_schema.h says why it exists).
template <Runner kRun>
void into(const at::Tensor& image, at::Tensor& out) {
  out_variant<kRun>(image, out);
}

void into_autograd(c10::DispatchKeySet keys, const at::Tensor& image, at::Tensor& out) {
  refuse_out_with_autograd(image, out);
  const at::AutoDispatchBelowAutograd below_autograd;
  into_op().redispatch(keys & c10::after_autograd_keyset, image, out);
}

// Registered for the refused layouts' dispatch keys (op_schema.h lists them).
template <const char* kWhat>
at::Tensor refuse_layout(const at::Tensor& image) {
  TORCH_CHECK_TYPE(false, "img2gray: expected a strided (dense) image of shape (..., H, W, 3), got ", kWhat,
                   " (convert each image separately, or call .to_dense())");
  return image;  // not reached
}

template <const char* kWhat>
at::Tensor& refuse_layout_out(const at::Tensor& image, at::Tensor& out) {
  refuse_layout<kWhat>(image);
  return out;
}

template <const char* kWhat>
void refuse_layout_into(const at::Tensor& image, at::Tensor& /*out*/) {
  refuse_layout<kWhat>(image);
}

}  // namespace

IMG2GRAY_EXPAND(TORCH_LIBRARY, IMG2GRAY_OPS_NAMESPACE, m) {
  for (const char* schema : kOpSchemas) {
    m.def(schema);
  }
}

IMG2GRAY_EXPAND(TORCH_LIBRARY_IMPL, IMG2GRAY_OPS_NAMESPACE, CPU, m) {
  m.impl("img2gray", &functional<run_cpu>);
  m.impl("_img2gray_no_grad", &functional<run_cpu>);
  m.impl("img2gray.out", &out_variant<run_cpu>);
  m.impl("_img2gray_into", &into<run_cpu>);
}

IMG2GRAY_EXPAND(TORCH_LIBRARY_IMPL, IMG2GRAY_OPS_NAMESPACE, Autograd, m) {
  m.impl("img2gray.out", TORCH_FN(out_autograd));
  m.impl("_img2gray_into", TORCH_FN(into_autograd));
}

IMG2GRAY_EXPAND(TORCH_LIBRARY_IMPL, IMG2GRAY_OPS_NAMESPACE, ADInplaceOrView, m) {
  m.impl("img2gray.out", TORCH_FN(out_bump_version_then_into));
  m.impl("_img2gray_into", TORCH_FN(into_then_bump_version));
}

#define IMG2GRAY_REFUSE(key, what)                                           \
  IMG2GRAY_EXPAND(TORCH_LIBRARY_IMPL, IMG2GRAY_OPS_NAMESPACE, key, m) {      \
    m.impl("img2gray", &refuse_layout<what>);                                \
    m.impl("_img2gray_no_grad", &refuse_layout<what>);                       \
    m.impl("img2gray.out", &refuse_layout_out<what>);                        \
    m.impl("_img2gray_into", &refuse_layout_into<what>);                     \
  }
IMG2GRAY_FOR_EACH_REFUSED_KEY(IMG2GRAY_REFUSE)

#ifdef IMG2GRAY_WITH_CUDA
IMG2GRAY_EXPAND(TORCH_LIBRARY_IMPL, IMG2GRAY_OPS_NAMESPACE, CUDA, m) {
  m.impl("img2gray", &functional<run_cuda>);
  m.impl("_img2gray_no_grad", &functional<run_cuda>);
  m.impl("img2gray.out", &out_variant<run_cuda>);
  m.impl("_img2gray_into", &into<run_cuda>);
}
#endif

}  // namespace img2gray

IMG2GRAY_DEFINE_PYTHON_MODULE()
