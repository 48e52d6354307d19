// The kernels' interface, free of any torch type: raw pointers, a dtype tag and (for CUDA) a stream. Both op
// bindings — classic/ (ATen, one binary per torch minor) and stable/ (torch stable ABI, one binary for every
// torch >= 2.10) — check and allocate tensors, then call these. Kernels never allocate and never throw.
#pragma once

#include <cstdint>

#ifdef IMG2GRAY_WITH_CUDA
#include <cuda_runtime_api.h>
#endif

namespace img2gray {

enum class Dtype { kUint8, kFloat32, kFloat16, kBFloat16 };

// Converts pixels [begin, end): `rgb` holds 3 values per pixel, `gray` one. Callers split the range over
// threads with torch's parallel_for (at::parallel_for or torch::stable::parallel_for).
void convert_cpu(Dtype dtype, const void* rgb, void* gray, int64_t begin, int64_t end);

// Pixels per parallel_for task: 256 KiB of memory traffic (3 values read and 1 written per pixel), a few
// microseconds of work: large enough that waking a thread is noise, small enough that a 1080p frame (uint8) or a
// 512x512 one (float32) uses 16 threads.
constexpr int64_t cpu_grain_pixels(Dtype dtype) {
  const int64_t value_bytes = dtype == Dtype::kUint8 ? 1 : dtype == Dtype::kFloat32 ? 4 : 2;
  return (int64_t{256} << 10) / (4 * value_bytes);
}

#ifdef IMG2GRAY_WITH_CUDA
enum class CudaKernel {
  kFast,    // 16-byte vector loads/stores (the op)
  kSimple,  // one pixel per thread: the original design, kept as the test and benchmark reference
};

// Enqueues the conversion of `pixels` contiguous pixels on `stream` (the caller has made `device` current).
// Returns the launch error, if any; pixels == 0 launches nothing.
cudaError_t launch_cuda(CudaKernel kernel, Dtype dtype, const void* rgb, void* gray, int64_t pixels, int device,
                        cudaStream_t stream);
#endif

}  // namespace img2gray
