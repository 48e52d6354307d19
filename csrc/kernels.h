// The kernels' interface, free of any torch type: raw pointers, a dtype tag and (for CUDA) a stream. Both op
// bindings — classic/ (ATen, one binary per torch minor) and stable/ (torch stable ABI, one binary for every
// torch >= 2.10) — check and allocate tensors, then call these. Kernels never allocate and never throw.
#pragma once

#include <atomic>
#include <cstdint>

#ifdef IMG2GRAY_WITH_CUDA
#include <cuda_runtime_api.h>
#endif

namespace img2gray {

enum class Dtype { kUint8, kFloat32, kFloat16, kBFloat16 };

// How one CPU call is shared out: `tiles` tiles of `tile_pixels` pixels each (the last one shorter), claimed one
// at a time from a shared counter by `workers` threads, so a thread that is slowed down (a busy sibling
// hyperthread, a preempted vCPU) holds up the call by one tile, not by a whole static share.
struct CpuPlan {
  int64_t pixels = 0;
  int64_t workers = 1;  // parallel_for tasks: one per thread, fewer for small images
  int64_t tile_pixels = 0;
  int64_t tiles = 0;
  bool stream = false;  // streaming (non-temporal) stores for every tile
};

// `threads`: the caller's parallel_for thread count (at::get_num_threads / torch::stable::get_num_threads).
CpuPlan plan_cpu(Dtype dtype, int64_t pixels, int64_t threads);

// A worker's part of a call: converts the tiles it claims from `next_tile` until none is left. Callers start
// plan.workers of these with parallel_for(0, plan.workers, 1, ...) and ignore the range it hands each one, so
// the split never depends on how the parallel backend divides that range.
void convert_cpu_tiles(Dtype dtype, const void* rgb, void* gray, const CpuPlan& plan,
                       std::atomic<int64_t>& next_tile);

#ifdef IMG2GRAY_WITH_CUDA
// Enqueues the conversion of `pixels` contiguous pixels on `stream` (the caller has made `device` current).
// Returns the launch error, if any; pixels == 0 launches nothing.
cudaError_t launch_cuda(Dtype dtype, const void* rgb, void* gray, int64_t pixels, int device, cudaStream_t stream);
#endif

}  // namespace img2gray
