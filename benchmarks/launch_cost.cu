// Host cost of one CUDA kernel launch, without torch or Python: the floor under any per-frame call (issue K's
// small frames). Runtime <<<>>> (1 and 225 blocks, with and without cudaGetLastError), cudaLaunchKernel, the driver's
// cuLaunchKernel (through cudaGetDriverEntryPointByVersion, so no libcuda stub is needed to link), cudaGetDevice,
// and the legacy default stream; median of 7 rounds of 20,000 back-to-back launches of a 64-element copy kernel.
//   nvcc -O2 -arch=sm_90 -std=c++17 benchmarks/launch_cost.cu -o launch_cost && ./launch_cost
// Built here, run on the device (results/h200-launch-cost.txt).
#include <cuda.h>
#include <cuda_runtime.h>
#include <chrono>
#include <cstdio>
#include <cstdint>
#include <algorithm>
#include <vector>
__global__ void k(const uint4* __restrict__ a, uint4* __restrict__ b, int64_t n) {
  int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (i < n) b[i] = a[i];
}
template <class F> double per_call(F f, int calls = 20000) {
  for (int i = 0; i < 500; ++i) f();
  cudaDeviceSynchronize();
  std::vector<double> t;
  for (int r = 0; r < 7; ++r) {
    auto s = std::chrono::steady_clock::now();
    for (int i = 0; i < calls; ++i) f();
    auto e = std::chrono::steady_clock::now();
    cudaDeviceSynchronize();
    t.push_back(std::chrono::duration<double, std::micro>(e - s).count() / calls);
  }
  std::sort(t.begin(), t.end());
  return t[3];
}
int main() {
  uint4 *a, *b; int64_t n = 64;
  cudaMalloc(&a, 1 << 20); cudaMalloc(&b, 1 << 20);
  cudaStream_t s; cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
  printf("<<<>>> 1 block:          %.3f us\n", per_call([&] { k<<<1, 256, 0, s>>>(a, b, n); }));
  printf("<<<>>> 225 blocks:       %.3f us\n", per_call([&] { k<<<225, 256, 0, s>>>(a, b, n); }));
  printf("<<<>>> + GetLastError:   %.3f us\n", per_call([&] { k<<<225, 256, 0, s>>>(a, b, n); (void)cudaGetLastError(); }));
  void* args[] = {&a, &b, &n};
  printf("cudaLaunchKernel:        %.3f us\n", per_call([&] { cudaLaunchKernel((const void*)k, dim3(225), dim3(256), args, 0, s); }));
  cudaFunction_t f; cudaGetFuncBySymbol(&f, (const void*)k);
  using Launch = CUresult (*)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, CUstream, void**, void**);
  void* entry = nullptr; cudaDriverEntryPointQueryResult q;
  cudaGetDriverEntryPointByVersion("cuLaunchKernel", &entry, 12000, cudaEnableDefault, &q);
  Launch launch = reinterpret_cast<Launch>(entry);
  printf("cuLaunchKernel:          %.3f us\n", per_call([&] { launch((CUfunction)f, 225, 1, 1, 256, 1, 1, 0, (CUstream)s, args, nullptr); }));
  int dev; printf("cudaGetDevice:           %.3f us\n", per_call([&] { cudaGetDevice(&dev); }));
  printf("legacy stream <<<>>>:    %.3f us\n", per_call([&] { k<<<225, 256>>>(a, b, n); }));
  return 0;
}
