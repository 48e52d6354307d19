// The op library's schema, written once: both bindings (classic/ and stable/torch_binding.cpp) define exactly these.
// python/img2gray/ops.py adds the fake kernels, the autograd and vmap rules and the Python wrapper.
#pragma once

namespace img2gray {

inline constexpr const char* kOpSchemas[] = {
    // The op: what torch.compile, torch.export and direct torch.ops callers see.
    "img2gray(Tensor image) -> Tensor",
    "img2gray.out(Tensor image, *, Tensor(a!) out) -> Tensor(a!)",
    // Private, why: img2gray.out without the keyword and the aliasing result. Functionalization (torch.compile,
    // export's run_decompositions) refuses `-> Tensor(a!)` on a custom op, so below autograd img2gray.out runs this.
    "_img2gray_into(Tensor image, Tensor(a!) out) -> ()",
    // Private, why: img2gray's kernels without register_autograd's Python kernel, which costs microseconds per call;
    // the wrapper calls it when no gradient is wanted.
    "_img2gray_no_grad(Tensor image) -> Tensor",
};

// The layouts the op refuses, by dispatch key, and what its error calls them. Both bindings register a refusing
// kernel for every key listed here: without one the key says "Could not run ... with arguments from the
// 'NestedTensorCPU' backend" (or, through Python, "Internal error"). REFUSE(key, what) is the binding's own macro.
inline constexpr char kNested[] = "a nested tensor";
inline constexpr char kSparse[] = "a sparse tensor";

#define IMG2GRAY_FOR_EACH_REFUSED_KEY(REFUSE)  \
  REFUSE(NestedTensorCPU, ::img2gray::kNested)  \
  REFUSE(NestedTensorCUDA, ::img2gray::kNested) \
  REFUSE(SparseCPU, ::img2gray::kSparse)        \
  REFUSE(SparseCUDA, ::img2gray::kSparse)       \
  REFUSE(SparseCsrCPU, ::img2gray::kSparse)     \
  REFUSE(SparseCsrCUDA, ::img2gray::kSparse)

}  // namespace img2gray
