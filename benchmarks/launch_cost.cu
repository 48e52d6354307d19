// Host cost of one CUDA kernel launch, without torch or Python: the floor under any per-frame call (the host cost of
// small frames). Each way of launching is timed twice:
//   queue full: 20,000 back-to-back launches, so the host waits on the GPU once the launch queue fills
//     (what a back-to-back benchmark of tiny kernels sees: max(host cost, the GPU's time per launch));
//   host only: bursts of 32 launches after a synchronize, far below the queue's depth, timed on the host alone.
// Ways: runtime <<<>>> (with and without cudaGetLastError), cudaLaunchKernel with its return value checked, the
// driver's cuLaunchKernel (through cudaGetDriverEntryPointByVersion, so no libcuda stub is needed to link), the
// legacy default stream, and cudaGetDevice / cudaGetLastError alone. Medians of 7 (queue full) or 301 (host only)
// rounds. Built and run on a CUDA host (gpu_run.sh's launch phase writes it into gpu.txt):
//   nvcc -O2 -arch=sm_90 -std=c++17 benchmarks/launch_cost.cu -o launch_cost && ./launch_cost
#include <cuda.h>
#include <cuda_runtime.h>
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <vector>
__global__ void k(const uint4* __restrict__ a, uint4* __restrict__ b, int64_t n) {
  int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (i < n) b[i] = a[i];
}
template <class F> double median_us(F f, int calls, int rounds) {
  std::vector<double> t;
  for (int r = 0; r < rounds; ++r) {
    cudaDeviceSynchronize();
    auto s = std::chrono::steady_clock::now();
    for (int i = 0; i < calls; ++i) f();
    auto e = std::chrono::steady_clock::now();
    t.push_back(std::chrono::duration<double, std::micro>(e - s).count() / calls);
  }
  cudaDeviceSynchronize();
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}
template <class F> void row(const char* name, F f) {
  for (int i = 0; i < 500; ++i) f();
  printf("%-28s queue full %.3f us   host only %.3f us\n", name, median_us(f, 20000, 7), median_us(f, 32, 301));
}
int main() {
  uint4 *a, *b; int64_t n = 64;
  cudaMalloc(&a, 1 << 20); cudaMalloc(&b, 1 << 20);
  cudaStream_t s; cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
  row("<<<>>> 1 block", [&] { k<<<1, 256, 0, s>>>(a, b, n); });
  row("<<<>>> 225 blocks", [&] { k<<<225, 256, 0, s>>>(a, b, n); });
  row("<<<>>> + cudaGetLastError", [&] { k<<<225, 256, 0, s>>>(a, b, n); (void)cudaGetLastError(); });
  void* args[] = {&a, &b, &n};
  row("cudaLaunchKernel, checked", [&] {
    if (cudaLaunchKernel((const void*)k, dim3(225), dim3(256), args, 0, s) != cudaSuccess) std::abort();
  });
  cudaFunction_t f; cudaGetFuncBySymbol(&f, (const void*)k);
  using Launch = CUresult (*)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, CUstream, void**, void**);
  void* entry = nullptr; cudaDriverEntryPointQueryResult q;
  cudaGetDriverEntryPointByVersion("cuLaunchKernel", &entry, 12000, cudaEnableDefault, &q);
  Launch launch = reinterpret_cast<Launch>(entry);
  row("cuLaunchKernel, checked", [&] {
    if (launch((CUfunction)f, 225, 1, 1, 256, 1, 1, 0, (CUstream)s, args, nullptr) != CUDA_SUCCESS) std::abort();
  });
  row("legacy stream <<<>>>", [&] { k<<<225, 256>>>(a, b, n); });
  int dev; row("cudaGetDevice", [&] { cudaGetDevice(&dev); });
  row("cudaGetLastError", [&] { (void)cudaGetLastError(); });
  return 0;
}
