// CUDA kernels. img2gray is memory-bound (uint8: 3 bytes in, 1 out per pixel), so the fast kernel is built
// around 16-byte memory transactions: one "chunk" is the pixels whose gray values fill 16 bytes
// (16 uint8, 8 half/bf16, 4 float pixels), read as three 16-byte loads and written as one 16-byte store.
// benchmarks/NOTES.md records the versions tried and what each measured.
#include "kernels.h"
#include "luma.h"

#include <cuda.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <cstdint>

namespace img2gray {
namespace {

constexpr int kThreads = 256;
constexpr int kVectorBytes = 16;
// Chunks each thread keeps in flight per loop iteration (independent loads → memory-level parallelism).
constexpr int kChunksPerIteration = 2;

template <typename T>
struct Chunk {
  static constexpr int kPixels = kVectorBytes / sizeof(T);
  union In {
    uint4 vec[3];
    T value[3 * kPixels];
  };
  union Out {
    uint4 vec;
    T value[kPixels];
  };
};

template <typename T>
__device__ __forceinline__ uint4 convert_chunk(const uint4* __restrict__ rgb, int64_t chunk) {
  typename Chunk<T>::In in;
#pragma unroll
  for (int k = 0; k < 3; ++k) {
    in.vec[k] = __ldg(rgb + 3 * chunk + k);
  }
  typename Chunk<T>::Out out;
#pragma unroll
  for (int p = 0; p < Chunk<T>::kPixels; ++p) {
    out.value[p] = luma(in.value[3 * p], in.value[3 * p + 1], in.value[3 * p + 2]);
  }
  return out.vec;
}

// Grid-stride over whole chunks with 16-byte loads and streaming stores; both pointers must be 16-byte aligned.
template <typename T>
__global__ void __launch_bounds__(kThreads)
    img2gray_vector_kernel(const uint4* __restrict__ rgb, uint4* __restrict__ gray, int64_t chunks) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * kThreads;
  int64_t chunk = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x;
  for (; chunk + (kChunksPerIteration - 1) * stride < chunks; chunk += kChunksPerIteration * stride) {
    uint4 result[kChunksPerIteration];
#pragma unroll
    for (int u = 0; u < kChunksPerIteration; ++u) {
      result[u] = convert_chunk<T>(rgb, chunk + u * stride);
    }
#pragma unroll
    for (int u = 0; u < kChunksPerIteration; ++u) {
      __stcs(gray + chunk + u * stride, result[u]);
    }
  }
  for (; chunk < chunks; chunk += stride) {
    __stcs(gray + chunk, convert_chunk<T>(rgb, chunk));
  }
}

// One pixel per thread: the original design. Used for the tail after the last whole chunk and for pointers that
// are not 16-byte aligned.
template <typename T>
__global__ void img2gray_scalar_kernel(const T* __restrict__ rgb, T* __restrict__ gray, int64_t pixels) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < pixels) {
    gray[i] = luma(rgb[3 * i], rgb[3 * i + 1], rgb[3 * i + 2]);
  }
}

// Launches go through the driver's cuLaunchKernel on the kernel's context-independent handle (cudaGetKernel, looked
// up once; the current context picks the device), reached through cudart's driver entry point, so nothing links
// libcuda. That is ~0.2 us less host time per call than <<<>>> (benchmarks/launch_cost.cu), and small frames are
// host-bound (issue K). Anything else (no entry point or handle, or a failed launch: no current context yet, a sticky
// error) goes through cudaLaunchKernel, which makes the context current where needed and reports the error in the
// runtime's terms; that error is also left as the thread's last error, cleared here since it is reported here.
using DriverLaunch = CUresult (*)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                                  CUstream, void**, void**);

DriverLaunch driver_launch() {
  static const DriverLaunch fn = [] {
    constexpr unsigned kLaunchAbi = 12000;  // cuLaunchKernel as of CUDA 12.0, the first to accept a CUkernel
    void* entry = nullptr;
    cudaDriverEntryPointQueryResult found{};
    const cudaError_t err =
        cudaGetDriverEntryPointByVersion("cuLaunchKernel", &entry, kLaunchAbi, cudaEnableDefault, &found);
    return err == cudaSuccess && found == cudaDriverEntryPointSuccess ? reinterpret_cast<DriverLaunch>(entry) : nullptr;
  }();
  return fn;
}

// Launch<kernel>::run(blocks, stream, args...): kThreads threads a block; the arguments take the kernel's own
// parameter types. The handle is cached per kernel (a static in each specialization).
template <auto kKernel>
struct Launch;

template <typename... Params, void (*kKernel)(Params...)>
struct Launch<kKernel> {
  static cudaKernel_t handle() {
    static const cudaKernel_t found = [] {
      cudaKernel_t kernel = nullptr;
      return cudaGetKernel(&kernel, kKernel) == cudaSuccess ? kernel : nullptr;
    }();
    return found;
  }

  static cudaError_t run(int64_t blocks, cudaStream_t stream, Params... args) {
    void* arguments[] = {&args...};
    const DriverLaunch fast = driver_launch();
    const cudaKernel_t kernel = handle();
    if (fast != nullptr && kernel != nullptr &&
        fast(reinterpret_cast<CUfunction>(kernel), static_cast<unsigned>(blocks), 1, 1, kThreads, 1, 1, 0,
             reinterpret_cast<CUstream>(stream), arguments, nullptr) == CUDA_SUCCESS) {
      return cudaSuccess;
    }
    const cudaError_t err = cudaLaunchKernel(reinterpret_cast<const void*>(kKernel),
                                             dim3(static_cast<unsigned>(blocks)), dim3(kThreads), arguments, 0, stream);
    if (err != cudaSuccess) {
      (void)cudaGetLastError();
    }
    return err;
  }
};

template <typename T>
cudaError_t launch_scalar(const T* rgb, T* gray, int64_t pixels, cudaStream_t stream) {
  return Launch<img2gray_scalar_kernel<T>>::run((pixels + kThreads - 1) / kThreads, stream, rgb, gray, pixels);
}

cudaError_t resident_blocks(int device, int* blocks) {
  // Cached per device, since cudaDeviceGetAttribute is cheap but this sits on the per-call path. Threads may race to
  // fill an entry; they all store the same value, and relaxed atomics make that race defined. Devices past the table
  // are asked each time rather than sharing an entry.
  constexpr int kCachedDevices = 64;
  static std::atomic<int> cache[kCachedDevices] = {};
  std::atomic<int>* entry = device >= 0 && device < kCachedDevices ? &cache[device] : nullptr;
  if (entry != nullptr) {
    if (const int cached = entry->load(std::memory_order_relaxed); cached != 0) {
      *blocks = cached;
      return cudaSuccess;
    }
  }
  int sms = 0, threads_per_sm = 0;
  cudaError_t err = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
  if (err == cudaSuccess) {
    err = cudaDeviceGetAttribute(&threads_per_sm, cudaDevAttrMaxThreadsPerMultiProcessor, device);
  }
  if (err != cudaSuccess) {
    return err;
  }
  *blocks = sms * std::max(1, threads_per_sm / kThreads);
  if (entry != nullptr) {
    entry->store(*blocks, std::memory_order_relaxed);
  }
  return cudaSuccess;
}

bool is_aligned(const void* p) {
  return reinterpret_cast<std::uintptr_t>(p) % kVectorBytes == 0;
}

template <typename T>
cudaError_t launch_fast(const T* rgb, T* gray, int64_t pixels, int device, cudaStream_t stream) {
  if (!is_aligned(rgb) || !is_aligned(gray)) {
    return launch_scalar(rgb, gray, pixels, stream);
  }
  const int64_t chunks = pixels / Chunk<T>::kPixels;
  if (chunks > 0) {
    int resident = 0;
    if (const cudaError_t err = resident_blocks(device, &resident); err != cudaSuccess) {
      return err;
    }
    const int64_t wanted = (chunks + kThreads - 1) / kThreads;
    if (const cudaError_t err = Launch<img2gray_vector_kernel<T>>::run(std::min<int64_t>(wanted, resident), stream,
                                       reinterpret_cast<const uint4*>(rgb), reinterpret_cast<uint4*>(gray), chunks);
        err != cudaSuccess) {
      return err;
    }
  }
  const int64_t done = chunks * Chunk<T>::kPixels;
  return done < pixels ? launch_scalar(rgb + 3 * done, gray + done, pixels - done, stream) : cudaSuccess;
}

template <typename T>
cudaError_t launch_typed(const void* rgb, void* gray, int64_t pixels, int device, cudaStream_t stream) {
  return launch_fast(static_cast<const T*>(rgb), static_cast<T*>(gray), pixels, device, stream);
}

}  // namespace

cudaError_t launch_cuda(Dtype dtype, const void* rgb, void* gray, int64_t pixels, int device, cudaStream_t stream) {
  if (pixels == 0) {
    return cudaSuccess;
  }
  switch (dtype) {
    case Dtype::kUint8:
      return launch_typed<uint8_t>(rgb, gray, pixels, device, stream);
    case Dtype::kFloat32:
      return launch_typed<float>(rgb, gray, pixels, device, stream);
    case Dtype::kFloat16:
      return launch_typed<c10::Half>(rgb, gray, pixels, device, stream);
    case Dtype::kBFloat16:
      return launch_typed<c10::BFloat16>(rgb, gray, pixels, device, stream);
  }
  return cudaErrorInvalidValue;
}

}  // namespace img2gray
