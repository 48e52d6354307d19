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

}  // namespace img2gray
