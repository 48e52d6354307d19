// The stable-ABI binding: torch's public stable API (STABLE_TORCH_LIBRARY, TORCH_BOX, torch::stable::Tensor and the
// stable C shims under them), compiled with TORCH_TARGET_VERSION set to torch 2.10 (CMakeLists.txt). It reaches
// torch only through the versioned C shims, so one binary runs under every torch >= 2.10 (no at::/c10:: symbol is
// imported; tests check the ELF). Same schema (../op_schema.h), checks and kernels as classic/torch_binding.cpp;
// errors surface as RuntimeError (the Python wrapper re-raises them as the typed ValueError/TypeError the classic
// build raises).
#include "../byte_span.h"
#include "../kernels.h"
#include "../op_schema.h"
#include "../ops_names.h"
#include "../python_module.h"

#include <torch/csrc/stable/library.h>
#include <torch/csrc/stable/ops.h>
#include <torch/csrc/stable/tensor.h>
#include <torch/headeronly/core/ScalarType.h>
#include <torch/headeronly/util/Exception.h>

#include <torch/csrc/inductor/aoti_torch/c/shim.h>

#ifdef IMG2GRAY_WITH_CUDA
#include <torch/csrc/stable/accelerator.h>
#include <torch/csrc/stable/macros.h>
#endif
#include <torch/headeronly/macros/Macros.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

// The stable headers look up newer shims with dlsym(RTLD_DEFAULT, ...). glibc 2.34 moved dlsym into libc under
// a new symbol version; binding the old one (present in every glibc since 2.2.5, via libdl) keeps the binary
// loadable on glibc 2.28, i.e. honestly manylinux_2_28 (CMakeLists.txt links -ldl).
#if defined(__x86_64__) && defined(__GLIBC__)
__asm__(".symver dlsym,dlsym@GLIBC_2.2.5");
#endif

namespace img2gray {
namespace {

using torch::stable::Tensor;

// One-line errors (STD_TORCH_CHECK prefixes "function, file:line, "); they surface as RuntimeError, which the
// Python wrapper turns into the same typed TypeError/ValueError as the classic build's.
template <typename... Args>
[[noreturn]] void fail(const Args&... args) {
  std::ostringstream message;
  ((message << args), ...);
  throw std::runtime_error(message.str());
}
#define IMG2GRAY_CHECK(cond, ...) \
  if (C10_UNLIKELY(!(cond))) {    \
    fail(__VA_ARGS__);            \
  }

// "[2, 2]": shapes in messages as ATen prints them, so both builds say the same thing.
template <typename Ints>
std::string format_shape(const Ints& sizes) {
  std::string text = "[";
  for (size_t i = 0; i < sizes.size(); ++i) {
    text += (i ? ", " : "") + std::to_string(sizes[i]);
  }
  return text + "]";
}

// The four dtypes the kernels serve, by the shim's dtype code (read once: each getter is a shim call).
std::optional<Dtype> kernel_dtype(int32_t code) {
  static const int32_t kUint8 = aoti_torch_dtype_uint8(), kFloat32 = aoti_torch_dtype_float32(),
                       kFloat16 = aoti_torch_dtype_float16(), kBFloat16 = aoti_torch_dtype_bfloat16();
  if (code == kUint8) return Dtype::kUint8;
  if (code == kFloat32) return Dtype::kFloat32;
  if (code == kFloat16) return Dtype::kFloat16;
  if (code == kBFloat16) return Dtype::kBFloat16;
  return std::nullopt;
}

// For messages only: Tensor::scalar_type() maps the shim's code through every dtype getter.
const char* dtype_name(const Tensor& tensor) {
  return torch::headeronly::toString(tensor.scalar_type());
}

size_t element_size(Dtype dtype) {
  return dtype == Dtype::kUint8 ? 1 : dtype == Dtype::kFloat32 ? 4 : 2;
}

// (type, index) as the AOTI shim reports them; "cuda:0", "cpu", "meta" as torch prints them.
struct DeviceId {
  int32_t type;
  int32_t index;
  bool operator==(const DeviceId& other) const { return type == other.type && index == other.index; }
};

std::string device_name(DeviceId device) {
  if (device.type == aoti_torch_device_type_cpu()) {
    return "cpu";
  }
  const std::string type = device.type == aoti_torch_device_type_cuda()   ? "cuda"
                           : device.type == aoti_torch_device_type_meta() ? "meta"
                                                                          : "device type " + std::to_string(device.type);
  return device.index >= 0 ? type + ":" + std::to_string(device.index) : type;
}

using IntArray = torch::headeronly::IntHeaderOnlyArrayRef;

// What a call's checks and launch read of a tensor, each through the stable C shim once. Every shim call is an
// exported function behind an exception guard, and Tensor's accessors make several (scalar_type() compares the dtype
// code with up to 13 dtype getters; sizes(), strides() and element_size() ask again for what another call already
// read): reading each fact once took an out= call from ~47 shim calls to 18.
struct TensorFacts {
  int32_t dtype;  // the shim's code; kernel_dtype() maps it
  DeviceId device;
  IntArray sizes;  // borrowed from the tensor, which the caller holds for the whole call
  IntArray strides;
  int64_t numel;
  bool contiguous;
};

TensorFacts facts_of(const Tensor& tensor) {
  const AtenTensorHandle handle = tensor.get();
  int64_t dim = 0;
  int64_t* sizes = nullptr;
  int64_t* strides = nullptr;
  TensorFacts facts{};
  STABLE_TORCH_ERROR_CODE_CHECK(aoti_torch_get_dim(handle, &dim));
  STABLE_TORCH_ERROR_CODE_CHECK(aoti_torch_get_sizes(handle, &sizes));
  STABLE_TORCH_ERROR_CODE_CHECK(aoti_torch_get_strides(handle, &strides));
  STABLE_TORCH_ERROR_CODE_CHECK(aoti_torch_get_dtype(handle, &facts.dtype));
  STABLE_TORCH_ERROR_CODE_CHECK(aoti_torch_get_device_type(handle, &facts.device.type));
  STABLE_TORCH_ERROR_CODE_CHECK(aoti_torch_get_device_index(handle, &facts.device.index));
  STABLE_TORCH_ERROR_CODE_CHECK(aoti_torch_is_contiguous(handle, &facts.contiguous));
  facts.sizes = IntArray(sizes, static_cast<size_t>(dim));
  facts.strides = IntArray(strides, static_cast<size_t>(dim));
  facts.numel = 1;
  for (const int64_t size : facts.sizes) {
    facts.numel *= size;
  }
  return facts;
}

// The image's shape without its channel dimension: a view of the image's sizes, nothing copied.
IntArray gray_shape(IntArray sizes) {
  return IntArray(sizes.data(), sizes.size() - 1);
}

// An image the kernels can serve: its facts, its kernel dtype and its data pointer (read once: the out= checks and
// the kernel both need it).
struct Image {
  TensorFacts facts;
  Dtype dtype;
  const void* data;
};

// The checks run once per call, here (the Python wrapper adds none on the success path).
Image check_image(const Tensor& image) {
  IMG2GRAY_CHECK(image.defined(), "img2gray: expected image to be a Tensor, got None");
  const TensorFacts facts = facts_of(image);
  IMG2GRAY_CHECK(facts.sizes.size() >= 3 && facts.sizes.back() == 3,
                 "img2gray: expected an RGB image of shape (..., H, W, 3), got shape ", format_shape(facts.sizes));
  const std::optional<Dtype> dtype = kernel_dtype(facts.dtype);
  IMG2GRAY_CHECK(dtype.has_value(), "img2gray: expected dtype uint8, float16, bfloat16 or float32, got ",
                 dtype_name(image));
  return {facts, *dtype, image.const_data_ptr()};
}

// Checks `out` against the checked image; its facts, and (when it has elements) its data pointer in `out_data`.
TensorFacts check_out(const Tensor& image, const Image& in, const Tensor& out, void*& out_data) {
  IMG2GRAY_CHECK(out.defined(), "img2gray: expected out to be a Tensor, got None");
  const TensorFacts facts = facts_of(out);
  IMG2GRAY_CHECK(facts.dtype == in.facts.dtype, "img2gray: expected out of dtype ", dtype_name(image),
                 " (the image's), got ", dtype_name(out));
  IMG2GRAY_CHECK(facts.device == in.facts.device, "img2gray: expected out on ", device_name(in.facts.device),
                 " (the image's device), got ", device_name(facts.device));
  const IntArray sizes = in.facts.sizes;
  IMG2GRAY_CHECK(
      facts.sizes.size() + 1 == sizes.size() && std::equal(facts.sizes.begin(), facts.sizes.end(), sizes.begin()),
      "img2gray: expected out of shape ", format_shape(gray_shape(sizes)), ", got ", format_shape(facts.sizes));
  if (facts.numel == 0) {
    return facts;
  }
  IMG2GRAY_CHECK(facts.contiguous || !may_self_overlap(facts.sizes, facts.strides),
                 "img2gray: more than one element of out may refer to a single memory location (internal overlap); "
                 "expected an out whose elements do not share memory, got strides ", format_shape(facts.strides));
  out_data = out.mutable_data_ptr();
  const size_t bytes = element_size(in.dtype);
  IMG2GRAY_CHECK(in.facts.numel == 0 ||
                     !overlap(byte_span(out_data, facts.sizes, facts.strides, bytes),
                              byte_span(in.data, sizes, in.facts.strides, bytes)),
                 "img2gray: out overlaps the image's memory");
  return facts;
}

// Allocation through the stable C shim that ATen's own empty_strided sits behind (CUDA: torch's caching allocator),
// not through torch::stable::new_empty, which goes through the boxed dispatcher (microseconds per call).
Tensor new_contiguous(const TensorFacts& like, IntArray shape) {
  constexpr size_t kMaxDims = 16;  // strides on the stack up to here (a heap block per call otherwise)
  std::vector<int64_t> heap_strides;
  int64_t stack_strides[kMaxDims];
  int64_t* strides = stack_strides;
  if (shape.size() > kMaxDims) {
    heap_strides.resize(shape.size());
    strides = heap_strides.data();
  }
  int64_t stride = 1;
  for (size_t d = shape.size(); d-- > 0;) {
    strides[d] = stride;
    stride *= std::max<int64_t>(shape[d], 1);
  }
  AtenTensorHandle handle = nullptr;
  STABLE_TORCH_ERROR_CODE_CHECK(aoti_torch_empty_strided(static_cast<int64_t>(shape.size()), shape.data(), strides,
                                                         like.dtype, like.device.type, like.device.index, &handle));
  return Tensor(handle);
}

// The image's pixels, contiguous: its own memory, or (non-contiguous input) one copy kept alive in `copy`.
const void* dense_data(const Tensor& image, const Image& in, std::optional<Tensor>& copy) {
  if (in.facts.contiguous) {
    return in.data;
  }
  copy = torch::stable::contiguous(image);
  return copy->const_data_ptr();
}

// Kernel runners: `rgb` contiguous (..., 3), `gray` contiguous with `pixels` elements, on `device`.
using Runner = void (*)(Dtype dtype, const void* rgb, void* gray, int64_t pixels, int32_t device);

void run_cpu(Dtype dtype, const void* rgb, void* gray, int64_t pixels, int32_t /*device*/) {
  const CpuPlan plan = plan_cpu(dtype, pixels, torch::stable::get_num_threads());
  std::atomic<int64_t> next_tile{0};
  torch::stable::parallel_for(0, plan.workers, 1,
      [&](int64_t, int64_t) { convert_cpu_tiles(dtype, rgb, gray, plan, next_tile); });
}

#ifdef IMG2GRAY_WITH_CUDA
void run_cuda(Dtype dtype, const void* rgb, void* gray, int64_t pixels, int32_t device) {
  // A device guard through the shim allocates one on the heap; most calls are already on the right device. The
  // device asked is the CUDA runtime's, the one whose context the launch uses: torch's own current device can be an
  // index it has not switched the runtime to yet (c10::cuda::MaybeSetDevice, for a device without a context), and
  // the shim's query walks torch's accelerator hooks (0.3 us a call on the H100 hosts).
  int current = -1;
  STD_CUDA_CHECK(cudaGetDevice(&current));
  std::optional<torch::stable::accelerator::DeviceGuard> guard;
  if (current != device) {
    guard.emplace(device);
  }
  // The AOTI shim, not Stream::nativeHandle(), which needs torch 2.13.
  void* stream = nullptr;
  STABLE_TORCH_ERROR_CODE_CHECK(aoti_torch_get_current_cuda_stream(device, &stream));
  STD_CUDA_CHECK(launch_cuda(dtype, rgb, gray, pixels, device, static_cast<cudaStream_t>(stream)));
}
#endif

// The kernels, boxed by TORCH_BOX: each argument arrives as a torch::stable::Tensor that owns its handle.
// img2gray(Tensor image) -> Tensor, and _img2gray_no_grad.
template <Runner kRun>
Tensor functional(const Tensor& image) {
  const Image in = check_image(image);
  Tensor out = new_contiguous(in.facts, gray_shape(in.facts.sizes));
  const int64_t pixels = in.facts.numel / 3;
  if (pixels > 0) {
    std::optional<Tensor> copy;
    kRun(in.dtype, dense_data(image, in, copy), out.mutable_data_ptr(), pixels, in.facts.device.index);
  }
  return out;
}

// _img2gray_into(Tensor image, Tensor(a!) out) -> (): writes into out.
template <Runner kRun>
void into(const Tensor& image, const Tensor& out) {
  const Image in = check_image(image);
  void* out_data = nullptr;
  const TensorFacts out_facts = check_out(image, in, out, out_data);
  if (out_facts.numel == 0) {
    return;
  }
  std::optional<Tensor> copy;
  const void* rgb = dense_data(image, in, copy);
  if (out_facts.contiguous) {
    kRun(in.dtype, rgb, out_data, out_facts.numel, in.facts.device.index);
  } else {
    const Tensor packed = new_contiguous(out_facts, gray_shape(in.facts.sizes));
    kRun(in.dtype, rgb, packed.mutable_data_ptr(), out_facts.numel, in.facts.device.index);
    Tensor destination = out;
    torch::stable::copy_(destination, packed);
  }
}

// img2gray.out(Tensor image, *, Tensor(a!) out) -> Tensor(a!).
template <Runner kRun>
Tensor out_variant(const Tensor& image, const Tensor& out) {
  into<kRun>(image, out);
  return out;
}

// Registered for the refused layouts' dispatch keys (op_schema.h lists them).
template <const char* kWhat>
[[noreturn]] void refuse_layout() {
  fail("img2gray: expected a strided (dense) image of shape (..., H, W, 3), got ", kWhat,
       " (convert each image separately, or call .to_dense())");
}

template <const char* kWhat>
Tensor refuse_functional(const Tensor& /*image*/) {
  refuse_layout<kWhat>();
}

template <const char* kWhat>
Tensor refuse_out(const Tensor& /*image*/, const Tensor& /*out*/) {
  refuse_layout<kWhat>();
}

template <const char* kWhat>
void refuse_into(const Tensor& /*image*/, const Tensor& /*out*/) {
  refuse_layout<kWhat>();
}

}  // namespace
}  // namespace img2gray

IMG2GRAY_EXPAND(STABLE_TORCH_LIBRARY, IMG2GRAY_OPS_NAMESPACE, m) {
  for (const char* schema : img2gray::kOpSchemas) {
    m.def(schema);
  }
}

IMG2GRAY_EXPAND(STABLE_TORCH_LIBRARY_IMPL, IMG2GRAY_OPS_NAMESPACE, CPU, m) {
  m.impl("img2gray", TORCH_BOX(&img2gray::functional<img2gray::run_cpu>));
  m.impl("_img2gray_no_grad", TORCH_BOX(&img2gray::functional<img2gray::run_cpu>));
  m.impl("img2gray.out", TORCH_BOX(&img2gray::out_variant<img2gray::run_cpu>));
  m.impl("_img2gray_into", TORCH_BOX(&img2gray::into<img2gray::run_cpu>));
}

#define IMG2GRAY_REFUSE(key, what)                                                \
  IMG2GRAY_EXPAND(STABLE_TORCH_LIBRARY_IMPL, IMG2GRAY_OPS_NAMESPACE, key, m) {    \
    m.impl("img2gray", TORCH_BOX(&img2gray::refuse_functional<what>));            \
    m.impl("_img2gray_no_grad", TORCH_BOX(&img2gray::refuse_functional<what>));   \
    m.impl("img2gray.out", TORCH_BOX(&img2gray::refuse_out<what>));               \
    m.impl("_img2gray_into", TORCH_BOX(&img2gray::refuse_into<what>));            \
  }
IMG2GRAY_FOR_EACH_REFUSED_KEY(IMG2GRAY_REFUSE)

#ifdef IMG2GRAY_WITH_CUDA
IMG2GRAY_EXPAND(STABLE_TORCH_LIBRARY_IMPL, IMG2GRAY_OPS_NAMESPACE, CUDA, m) {
  m.impl("img2gray", TORCH_BOX(&img2gray::functional<img2gray::run_cuda>));
  m.impl("_img2gray_no_grad", TORCH_BOX(&img2gray::functional<img2gray::run_cuda>));
  m.impl("img2gray.out", TORCH_BOX(&img2gray::out_variant<img2gray::run_cuda>));
  m.impl("_img2gray_into", TORCH_BOX(&img2gray::into<img2gray::run_cuda>));
}
#endif

IMG2GRAY_DEFINE_PYTHON_MODULE()
