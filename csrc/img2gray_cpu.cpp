// CPU kernel. uint8 and float32 on x86-64 take hand-written SIMD paths (csrc/cpu_x86.h: AVX-512 VBMI or AVX2
// for uint8, AVX-512F or AVX2 for float32), picked once at load time from what the CPU supports; everything else
// (half types, other architectures, CPUs without AVX2) is a plain indexed loop that the compiler vectorises.
// Threading is the caller's (torch's parallel_for), so this file needs no torch library.
#include <cstdlib>
#include <cstring>

#include "cpu_x86.h"
#include "kernels.h"
#include "luma.h"

namespace img2gray {
namespace {

template <typename T>
__attribute__((always_inline)) inline void convert_range_impl(const T* __restrict__ rgb, T* __restrict__ gray,
                                                              int64_t count) {
  for (int64_t i = 0; i < count; ++i) {
    gray[i] = luma(rgb[3 * i], rgb[3 * i + 1], rgb[3 * i + 2]);
  }
}

// x86-64's baseline (SSE2) has no byte shuffle and no 32-bit multiply, so the stride-3 loop only vectorises
// 8 bytes at a time there; an AVX2 clone, picked at load time by the CPU, vectorises it 32 bytes wide.
#if defined(__x86_64__) && defined(__GNUC__)
#define IMG2GRAY_CPU_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define IMG2GRAY_CPU_CLONES
#endif

#define IMG2GRAY_DEFINE_CONVERT_RANGE(T)                                         \
  IMG2GRAY_CPU_CLONES void convert_range(const T* rgb, T* gray, int64_t count) { \
    convert_range_impl(rgb, gray, count);                                        \
  }
IMG2GRAY_DEFINE_CONVERT_RANGE(uint8_t)
IMG2GRAY_DEFINE_CONVERT_RANGE(float)
IMG2GRAY_DEFINE_CONVERT_RANGE(c10::Half)
IMG2GRAY_DEFINE_CONVERT_RANGE(c10::BFloat16)
#undef IMG2GRAY_DEFINE_CONVERT_RANGE

template <typename T>
void convert_typed(const void* rgb, void* gray, int64_t begin, int64_t end) {
  convert_range(static_cast<const T*>(rgb) + 3 * begin, static_cast<T*>(gray) + begin, end - begin);
}

// Output ranges from this size on are written with streaming stores: they bypass the caches, so the output
// lines are not read first (a quarter of a uint8 call's traffic) and do not evict the input. From 256 KiB of
// output a range moves 1 MiB or more, past what a core's L2 keeps anyway; smaller ranges (small images, or an
// image split over many threads) stay in cache for whatever reads them next.
// IMG2GRAY_CPU_STREAM_BYTES=N (read at load) moves the threshold: tests set 0 to run every shape through the
// streaming paths, benchmarks compare thresholds.
int64_t stream_bytes() {
  const char* value = std::getenv("IMG2GRAY_CPU_STREAM_BYTES");
  char* end = nullptr;
  const long long bytes = value != nullptr ? std::strtoll(value, &end, 10) : -1;
  return value != nullptr && *value != '\0' && *end == '\0' && bytes >= 0 ? bytes : int64_t{1} << 18;
}
const int64_t kStreamBytes = stream_bytes();

template <typename T>
using SimdPath = void (*)(const T* rgb, T* gray, int64_t count, bool stream);

#ifdef IMG2GRAY_HAVE_X86_SIMD
// The widest path the CPU runs; IMG2GRAY_CPU_ISA=avx2 or =scalar asks for a narrower one (tests use it to run
// every path on one machine; it can never select an instruction set the CPU lacks).
enum class Isa { kScalar, kAvx2, kAvx512 };
Isa pick_isa(bool avx512_ok) {
  Isa isa = __builtin_cpu_supports("avx2") ? Isa::kAvx2 : Isa::kScalar;
  if (isa == Isa::kAvx2 && avx512_ok) isa = Isa::kAvx512;
  if (const char* wanted = std::getenv("IMG2GRAY_CPU_ISA")) {
    if (std::strcmp(wanted, "scalar") == 0) isa = Isa::kScalar;
    if (std::strcmp(wanted, "avx2") == 0 && isa == Isa::kAvx512) isa = Isa::kAvx2;
  }
  return isa;
}

SimdPath<uint8_t> pick_u8() {
  __builtin_cpu_init();
  switch (pick_isa(__builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vbmi"))) {
    case Isa::kAvx512:
      return x86::u8_avx512vbmi<>;
    case Isa::kAvx2:
      return x86::u8_avx2<>;
    case Isa::kScalar:
      break;
  }
  return nullptr;
}

SimdPath<float> pick_f32() {
  __builtin_cpu_init();
  switch (pick_isa(__builtin_cpu_supports("avx512f"))) {
    case Isa::kAvx512:
      return x86::f32_avx512<>;
    case Isa::kAvx2:
      return x86::f32_avx2<>;
    case Isa::kScalar:
      break;
  }
  return nullptr;
}

const SimdPath<uint8_t> kU8Path = pick_u8();
const SimdPath<float> kF32Path = pick_f32();
#else
constexpr SimdPath<uint8_t> kU8Path = nullptr;
constexpr SimdPath<float> kF32Path = nullptr;
#endif

template <typename T>
void convert_simd(SimdPath<T> path, const void* rgb, void* gray, int64_t begin, int64_t end) {
  if (path == nullptr) return convert_typed<T>(rgb, gray, begin, end);
  const int64_t count = end - begin;
  path(static_cast<const T*>(rgb) + 3 * begin, static_cast<T*>(gray) + begin, count,
       count * static_cast<int64_t>(sizeof(T)) >= kStreamBytes);
}

}  // namespace

void convert_cpu(Dtype dtype, const void* rgb, void* gray, int64_t begin, int64_t end) {
  switch (dtype) {
    case Dtype::kUint8:
      return convert_simd<uint8_t>(kU8Path, rgb, gray, begin, end);
    case Dtype::kFloat32:
      return convert_simd<float>(kF32Path, rgb, gray, begin, end);
    case Dtype::kFloat16:
      return convert_typed<c10::Half>(rgb, gray, begin, end);
    case Dtype::kBFloat16:
      return convert_typed<c10::BFloat16>(rgb, gray, begin, end);
  }
}

}  // namespace img2gray
