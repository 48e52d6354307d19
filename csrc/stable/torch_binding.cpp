// The stable-ABI binding: STABLE_TORCH_LIBRARY and the AOTI C shim, compiled with TORCH_TARGET_VERSION
// set to torch 2.10 (CMakeLists.txt). It reaches torch only through the versioned C shims, so one binary runs
// under every torch >= 2.10 (no at::/c10:: symbol is imported; tests check the ELF). Same schema, checks and
// kernels as classic/torch_binding.cpp; errors surface as RuntimeError (the Python wrapper re-raises them as the
// typed ValueError/TypeError the classic build raises).
#include "../byte_span.h"
#include "../kernels.h"
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
#include <utility>
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

// A tensor the call owns, without the heap: the boxed kernels below take their arguments' handles off the
// dispatcher's stack and hand a result's back. Wrapping each in torch::stable::Tensor (as TORCH_BOX does) costs a
// shared_ptr control block per tensor per call, and returning one a second handle (benchmarks/NOTES.md, row 17).
class OwnedHandle {
 public:
  explicit OwnedHandle(AtenTensorHandle handle) noexcept : handle_(handle) {}
  OwnedHandle(OwnedHandle&& other) noexcept : handle_(other.release()) {}
  OwnedHandle(const OwnedHandle&) = delete;
  OwnedHandle& operator=(const OwnedHandle&) = delete;
  OwnedHandle& operator=(OwnedHandle&&) = delete;
  ~OwnedHandle() {
    if (handle_ != nullptr) {
      (void)aoti_torch_delete_tensor_object(handle_);
    }
  }
  AtenTensorHandle get() const noexcept { return handle_; }
  AtenTensorHandle release() noexcept { return std::exchange(handle_, nullptr); }

 private:
  AtenTensorHandle handle_;
};

// A torch::stable::Tensor sharing `handle`'s tensor, for the rare paths that call torch's ops (copies).
Tensor shared_tensor(AtenTensorHandle handle) {
  AtenTensorHandle copy = nullptr;
  STABLE_TORCH_ERROR_CODE_CHECK(aoti_torch_new_tensor_handle(handle, &copy));
  return Tensor(copy);
}

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

std::string dtype_name(int32_t code) {
  using torch::stable::detail::from;
  return torch::headeronly::toString(torch::stable::detail::to<torch::headeronly::ScalarType>(from(code)));
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

// What a call's checks and launch read of a tensor, each through the shim once. Every shim call is an exported
// function behind an exception guard, and Tensor's accessors make several (scalar_type() compares the dtype code
// with up to 13 dtype getters; sizes(), strides() and element_size() ask again for what another call already
// read): reading each fact once took an out= call from ~47 shim calls to 18 (benchmarks/NOTES.md, row 14).
struct TensorFacts {
  int32_t dtype;  // the shim's code; kernel_dtype() maps it
  DeviceId device;
  IntArray sizes;  // borrowed from the tensor, which the caller holds for the whole call
  IntArray strides;
  int64_t numel;
  bool contiguous;
};

TensorFacts facts_of(AtenTensorHandle handle) {
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

bool is_defined(AtenTensorHandle handle) {
  bool defined = false;
  STABLE_TORCH_ERROR_CODE_CHECK(aoti_torch_is_defined(handle, &defined));
  return defined;
}

const void* const_data(AtenTensorHandle handle) {
  const void* data = nullptr;
  STABLE_TORCH_ERROR_CODE_CHECK(torch_get_const_data_ptr(handle, &data));
  return data;
}

void* mutable_data(AtenTensorHandle handle) {
  void* data = nullptr;
  STABLE_TORCH_ERROR_CODE_CHECK(torch_get_mutable_data_ptr(handle, &data));
  return data;
}

// The checks run once per call, here (the Python wrapper adds none on the success path).
Image check_image(AtenTensorHandle image) {
  IMG2GRAY_CHECK(is_defined(image), "img2gray: expected image to be a Tensor, got None");
  const TensorFacts facts = facts_of(image);
  IMG2GRAY_CHECK(facts.sizes.size() >= 3 && facts.sizes.back() == 3,
                 "img2gray: expected an RGB image of shape (..., H, W, 3), got shape ", format_shape(facts.sizes));
  const std::optional<Dtype> dtype = kernel_dtype(facts.dtype);
  IMG2GRAY_CHECK(dtype.has_value(), "img2gray: expected dtype uint8, float16, bfloat16 or float32, got ",
                 dtype_name(facts.dtype));
  return {facts, *dtype, const_data(image)};
}

// Checks `out` against the checked image; its facts, and (when it has elements) its data pointer in `out_data`.
TensorFacts check_out(const Image& in, AtenTensorHandle out, void*& out_data) {
  IMG2GRAY_CHECK(is_defined(out), "img2gray: expected out to be a Tensor, got None");
  const TensorFacts facts = facts_of(out);
  IMG2GRAY_CHECK(facts.dtype == in.facts.dtype, "img2gray: expected out of dtype ",
                 dtype_name(in.facts.dtype), " (the image's), got ", dtype_name(facts.dtype));
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
  out_data = mutable_data(out);
  const size_t bytes = element_size(in.dtype);
  IMG2GRAY_CHECK(in.facts.numel == 0 ||
                     !overlap(byte_span(out_data, facts.sizes, facts.strides, bytes),
                              byte_span(in.data, sizes, in.facts.strides, bytes)),
                 "img2gray: out overlaps the image's memory");
  return facts;
}

// Allocation through the AOTI C shim that ATen's own empty_strided sits behind (CUDA: torch's caching allocator),
// not through the boxed dispatcher (torch_call_dispatcher costs microseconds per call).
OwnedHandle new_contiguous(const TensorFacts& like, IntArray shape) {
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
  return OwnedHandle(handle);
}

// The image's pixels, contiguous: its own memory, or (non-contiguous input) one copy kept alive in `copy`.
const void* dense_data(AtenTensorHandle image, const Image& in, std::optional<Tensor>& copy) {
  if (in.facts.contiguous) {
    return in.data;
  }
  copy = torch::stable::contiguous(shared_tensor(image));
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
template <CudaKernel kKernel>
void run_cuda(Dtype dtype, const void* rgb, void* gray, int64_t pixels, int32_t device) {
  // A device guard through the shim allocates one on the heap; most calls are already on the right device. The
  // device asked is the CUDA runtime's, the one whose context the launch uses: torch's own current device can be an
  // index it has not switched the runtime to yet (c10::cuda::MaybeSetDevice, for a device without a context), and
  // the shim's query walks torch's accelerator hooks (0.3 us a call on the H100 hosts; benchmarks/NOTES.md row 20).
  int current = -1;
  STD_CUDA_CHECK(cudaGetDevice(&current));
  std::optional<torch::stable::accelerator::DeviceGuard> guard;
  if (current != device) {
    guard.emplace(device);
  }
  // The AOTI shim, not Stream::nativeHandle(), which needs torch 2.13.
  void* stream = nullptr;
  STABLE_TORCH_ERROR_CODE_CHECK(aoti_torch_get_current_cuda_stream(device, &stream));
  STD_CUDA_CHECK(launch_cuda(kKernel, dtype, rgb, gray, pixels, device, static_cast<cudaStream_t>(stream)));
}
#endif

// The kernels' bodies, on handles the boxed entry points below own for the whole call.
template <Runner kRun>
OwnedHandle functional(AtenTensorHandle image) {
  const Image in = check_image(image);
  OwnedHandle out = new_contiguous(in.facts, gray_shape(in.facts.sizes));
  const int64_t pixels = in.facts.numel / 3;
  if (pixels > 0) {
    std::optional<Tensor> copy;
    kRun(in.dtype, dense_data(image, in, copy), mutable_data(out.get()), pixels, in.facts.device.index);
  }
  return out;
}

template <Runner kRun>
void out_variant(AtenTensorHandle image, AtenTensorHandle out) {
  const Image in = check_image(image);
  void* out_data = nullptr;
  const TensorFacts out_facts = check_out(in, out, out_data);
  if (out_facts.numel == 0) {
    return;
  }
  std::optional<Tensor> copy;
  const void* rgb = dense_data(image, in, copy);
  if (out_facts.contiguous) {
    kRun(in.dtype, rgb, out_data, out_facts.numel, in.facts.device.index);
  } else {
    const OwnedHandle packed = new_contiguous(out_facts, gray_shape(in.facts.sizes));
    kRun(in.dtype, rgb, mutable_data(packed.get()), out_facts.numel, in.facts.device.index);
    Tensor destination = shared_tensor(out);
    torch::stable::copy_(destination, shared_tensor(packed.get()));
  }
}

// Boxed entry points, registered in place of TORCH_BOX's (see OwnedHandle): each takes ownership of its arguments'
// handles before anything can throw, and hands its result's handle to the stack.
void expect_arity(const char* op, uint64_t num_args, uint64_t num_outputs, uint64_t args, uint64_t outputs) {
  IMG2GRAY_CHECK(num_args == args && num_outputs == outputs, op, ": registered schema has ", num_args,
                 " arguments and ", num_outputs, " returns, the kernel takes ", args, " and returns ", outputs);
}

AtenTensorHandle tensor_argument(StableIValue value) {
  return torch::stable::detail::to<AtenTensorHandle>(value);
}

// img2gray(Tensor image) -> Tensor, and _img2gray_no_grad, _img2gray_simple.
template <Runner kRun>
void boxed_functional(StableIValue* stack, uint64_t num_args, uint64_t num_outputs) {
  const OwnedHandle image(tensor_argument(stack[0]));
  expect_arity("img2gray", num_args, num_outputs, 1, 1);
  OwnedHandle out = functional<kRun>(image.get());
  stack[0] = torch::stable::detail::from(out.release());
}

// img2gray.out(Tensor image, *, Tensor(a!) out) -> Tensor(a!): returns its own handle of out.
template <Runner kRun>
void boxed_out(StableIValue* stack, uint64_t num_args, uint64_t num_outputs) {
  const OwnedHandle image(tensor_argument(stack[0]));
  OwnedHandle out(tensor_argument(stack[1]));
  expect_arity("img2gray.out", num_args, num_outputs, 2, 1);
  out_variant<kRun>(image.get(), out.get());
  stack[0] = torch::stable::detail::from(out.release());
}

// _img2gray_into(Tensor image, Tensor(a!) out) -> (): img2gray.out with positional arguments and nothing returned,
// the wrapper's out= path. A torch.ops call parses keyword arguments and wraps a returned tensor; with neither it
// costs ~0.5 us less (benchmarks/NOTES.md).
template <Runner kRun>
void boxed_into(StableIValue* stack, uint64_t num_args, uint64_t num_outputs) {
  const OwnedHandle image(tensor_argument(stack[0]));
  const OwnedHandle out(tensor_argument(stack[1]));
  expect_arity("_img2gray_into", num_args, num_outputs, 2, 0);
  out_variant<kRun>(image.get(), out.get());
}

// Registered for the nested and sparse dispatch keys, which would otherwise say "Could not run ... with
// arguments from the 'NestedTensorCPU' backend" (or, through Python, "Internal error").
constexpr const char kNested[] = "a nested tensor";
constexpr const char kSparse[] = "a sparse tensor";

template <const char* kWhat>
void boxed_refuse_layout(StableIValue* stack, uint64_t num_args, uint64_t /*num_outputs*/) {
  for (uint64_t i = 0; i < num_args; ++i) {  // every argument is a tensor: released before the error
    const OwnedHandle argument(tensor_argument(stack[i]));
  }
  fail("img2gray: expected a strided (dense) image of shape (..., H, W, 3), got ", kWhat,
       " (convert each image separately, or call .to_dense())");
}

}  // namespace
}  // namespace img2gray

IMG2GRAY_EXPAND(STABLE_TORCH_LIBRARY, IMG2GRAY_OPS_NAMESPACE, m) {
  m.def("img2gray(Tensor image) -> Tensor");
  m.def("img2gray.out(Tensor image, *, Tensor(a!) out) -> Tensor(a!)");
  // The Python wrapper's out= path (python/img2gray/ops.py): img2gray.out without the keyword and the return.
  m.def("_img2gray_into(Tensor image, Tensor(a!) out) -> ()");
  // The wrapper's path when no gradient is wanted: img2gray's kernels without register_autograd's Python kernel.
  m.def("_img2gray_no_grad(Tensor image) -> Tensor");
  // The one-pixel-per-thread CUDA kernel, kept as a reference for tests and benchmarks (CUDA builds only).
  m.def("_img2gray_simple(Tensor image) -> Tensor");
}

IMG2GRAY_EXPAND(STABLE_TORCH_LIBRARY_IMPL, IMG2GRAY_OPS_NAMESPACE, CPU, m) {
  m.impl("img2gray", &img2gray::boxed_functional<img2gray::run_cpu>);
  m.impl("_img2gray_no_grad", &img2gray::boxed_functional<img2gray::run_cpu>);
  m.impl("img2gray.out", &img2gray::boxed_out<img2gray::run_cpu>);
  m.impl("_img2gray_into", &img2gray::boxed_into<img2gray::run_cpu>);
}

#define IMG2GRAY_REFUSE(key, what)                                               \
  IMG2GRAY_EXPAND(STABLE_TORCH_LIBRARY_IMPL, IMG2GRAY_OPS_NAMESPACE, key, m) {   \
    m.impl("img2gray", &img2gray::boxed_refuse_layout<img2gray::what>);          \
    m.impl("_img2gray_no_grad", &img2gray::boxed_refuse_layout<img2gray::what>); \
    m.impl("img2gray.out", &img2gray::boxed_refuse_layout<img2gray::what>);      \
    m.impl("_img2gray_into", &img2gray::boxed_refuse_layout<img2gray::what>);    \
  }
IMG2GRAY_REFUSE(NestedTensorCPU, kNested)
IMG2GRAY_REFUSE(NestedTensorCUDA, kNested)
IMG2GRAY_REFUSE(SparseCPU, kSparse)
IMG2GRAY_REFUSE(SparseCUDA, kSparse)
IMG2GRAY_REFUSE(SparseCsrCPU, kSparse)
IMG2GRAY_REFUSE(SparseCsrCUDA, kSparse)

#ifdef IMG2GRAY_WITH_CUDA
IMG2GRAY_EXPAND(STABLE_TORCH_LIBRARY_IMPL, IMG2GRAY_OPS_NAMESPACE, CUDA, m) {
  using img2gray::CudaKernel;
  m.impl("img2gray", &img2gray::boxed_functional<img2gray::run_cuda<CudaKernel::kFast>>);
  m.impl("_img2gray_no_grad", &img2gray::boxed_functional<img2gray::run_cuda<CudaKernel::kFast>>);
  m.impl("img2gray.out", &img2gray::boxed_out<img2gray::run_cuda<CudaKernel::kFast>>);
  m.impl("_img2gray_simple", &img2gray::boxed_functional<img2gray::run_cuda<CudaKernel::kSimple>>);
  m.impl("_img2gray_into", &img2gray::boxed_into<img2gray::run_cuda<CudaKernel::kFast>>);
}
#endif

IMG2GRAY_DEFINE_PYTHON_MODULE()
