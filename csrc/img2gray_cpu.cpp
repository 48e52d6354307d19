// CPU kernel. uint8 and float32 on x86-64 take hand-written SIMD paths (csrc/cpu_x86.h: AVX-512 VBMI or AVX2
// for uint8, AVX-512F or AVX2 for float32), picked once at load time from what the CPU supports; everything else
// (half types, other architectures, CPUs without AVX2) is a plain indexed loop that the compiler vectorises.
// Threading is the caller's (torch's parallel_for starts the workers; plan_cpu decides how they share the work),
// so this file needs no torch library.
#include <algorithm>
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

// Reads a non-negative integer setting from the environment; `fallback` when unset or not a number. Nothing can be
// raised here (a static initializer): python/img2gray/_settings.py applies the same rule, and the ISA choices below,
// and warns at import for a value ignored here, so keep the two in step (tests/test_settings.py checks the rule).
int64_t env_setting(const char* name, int64_t fallback) {
  const char* value = std::getenv(name);
  char* end = nullptr;
  const long long number = value != nullptr ? std::strtoll(value, &end, 10) : -1;
  return value != nullptr && *value != '\0' && *end == '\0' && number >= 0 ? number : fallback;
}

// A call whose share per thread is from this size of output on is written with streaming stores: they bypass
// the caches, so the output lines are not read first (a quarter of a uint8 call's traffic) and do not evict the
// input. From 256 KiB of output a share moves 1 MiB or more, past what a core's L2 keeps anyway; smaller shares
// (small images, or an image split over many threads) stay in cache for whatever reads them next.
// IMG2GRAY_CPU_STREAM_BYTES=N (read at load) moves the threshold: tests set 0 to run every shape through the
// streaming paths, benchmarks compare thresholds.
const int64_t kStreamBytes = env_setting("IMG2GRAY_CPU_STREAM_BYTES", int64_t{1} << 18);

// How a call is cut into tiles that the threads claim one after another (so a thread slowed by a busy neighbour
// or a preempted vCPU hands its remaining tiles to the others). By default each thread's share is cut into
// kTilesPerWorker tiles, never below kMinTilePixels: measured on the H200 host's 16 threads (benchmarks/NOTES.md,
// "Dynamic tiles"), about 8 tiles per thread was the best tile at 4K and at 1080p, uint8 and float32 alike;
// 2 a thread was too coarse to even out (1080p uint8 33 vs 28 us), 32 a thread too fine (4K float32 444 vs
// 405 us; likely each tile's restart of the software prefetch, whose first 4 KiB are not prefetched).
// IMG2GRAY_CPU_TILE_PIXELS=N (read at load) sets the tile to N pixels instead, with no floor (tests use tiny
// tiles; 0 = one tile per thread, the static split; benchmarks compare them). Tiles are rounded up to a multiple
// of 64 pixels, so they begin on a cache line of the output whenever the output does.
constexpr int64_t kTilesPerWorker = 8;
constexpr int64_t kMinTilePixels = 4096;
const int64_t kTilePixels = env_setting("IMG2GRAY_CPU_TILE_PIXELS", -1);

// The smallest share worth a thread: 256 KiB of memory traffic (3 values read and 1 written per pixel), a few
// microseconds of work: large enough that waking a thread is noise, small enough that a 1080p frame (uint8) or a
// 512x512 one (float32) uses 16 threads.
int64_t value_bytes(Dtype dtype) { return dtype == Dtype::kUint8 ? 1 : dtype == Dtype::kFloat32 ? 4 : 2; }
int64_t grain_pixels(Dtype dtype) { return (int64_t{256} << 10) / (4 * value_bytes(dtype)); }

int64_t divide_up(int64_t a, int64_t b) { return (a + b - 1) / b; }

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
void convert_simd(SimdPath<T> path, const void* rgb, void* gray, int64_t begin, int64_t end, bool stream) {
  if (path == nullptr) return convert_typed<T>(rgb, gray, begin, end);
  path(static_cast<const T*>(rgb) + 3 * begin, static_cast<T*>(gray) + begin, end - begin, stream);
}

void convert_pixels(Dtype dtype, const void* rgb, void* gray, int64_t begin, int64_t end, bool stream) {
  switch (dtype) {
    case Dtype::kUint8:
      return convert_simd<uint8_t>(kU8Path, rgb, gray, begin, end, stream);
    case Dtype::kFloat32:
      return convert_simd<float>(kF32Path, rgb, gray, begin, end, stream);
    case Dtype::kFloat16:
      return convert_typed<c10::Half>(rgb, gray, begin, end);
    case Dtype::kBFloat16:
      return convert_typed<c10::BFloat16>(rgb, gray, begin, end);
  }
}

}  // namespace

CpuPlan plan_cpu(Dtype dtype, int64_t pixels, int64_t threads) {
  CpuPlan plan;
  plan.pixels = std::max<int64_t>(pixels, 0);
  if (plan.pixels == 0) return plan;
  plan.workers = std::clamp<int64_t>(divide_up(plan.pixels, grain_pixels(dtype)), 1, std::max<int64_t>(threads, 1));
  const int64_t share = divide_up(plan.pixels, plan.workers);
  plan.stream = share * value_bytes(dtype) >= kStreamBytes;
  const int64_t tile = kTilePixels < 0   ? std::max(divide_up(share, kTilesPerWorker), kMinTilePixels)
                       : kTilePixels == 0 ? share
                                          : kTilePixels;
  plan.tile_pixels = divide_up(std::min(tile, share), 64) * 64;
  plan.tiles = divide_up(plan.pixels, plan.tile_pixels);
  return plan;
}

void convert_cpu_tiles(Dtype dtype, const void* rgb, void* gray, const CpuPlan& plan,
                       std::atomic<int64_t>& next_tile) {
  for (int64_t tile = next_tile.fetch_add(1, std::memory_order_relaxed); tile < plan.tiles;
       tile = next_tile.fetch_add(1, std::memory_order_relaxed)) {
    const int64_t begin = tile * plan.tile_pixels;
    convert_pixels(dtype, rgb, gray, begin, std::min(plan.pixels, begin + plan.tile_pixels), plan.stream);
  }
}

}  // namespace img2gray
