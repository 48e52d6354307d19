// Standalone check and timing of every CPU kernel path in csrc/cpu_x86.h, without building the extension.
//   g++ -O3 -ffp-contract=off -fopenmp -std=c++17 -I csrc -I "$(python -c 'import torch,os;
//     print(os.path.join(os.path.dirname(torch.__file__), "include"))')" benchmarks/cpu_kernel_harness.cpp -o harness
//   ./harness check     every path: all 2^24 uint8 triples against luma(), odd counts and misaligned pointers
//                       (exactly sized inputs, guard bytes after outputs), float32 bit for bit against luma();
//                       also built with -fsanitize=address,undefined (clean)
//   ./harness bench [huge|small|mixed]
//                       4K and 1080p, uint8 and float32, each path on 1 thread and on all (OpenMP), plus the
//                       memory ceiling: a kernel with the same loads and stores and no arithmetic, and memcpy.
//                       The pages the buffers get: huge (the default) asks for transparent huge pages as numpy does
//                       for arrays of 4 MiB and more (what a numpy caller and OpenCV's output run on); small keeps
//                       4 KiB pages (plain malloc, torch's CPU allocator); mixed gives the input huge pages and the
//                       output small ones (img2gray's allocating call on a numpy image). In a VM the page size
//                       alone moved 4K float32 on one core by 1.5-1.7x.
#include <omp.h>
#include <sys/mman.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "cpu_x86.h"
#include "luma.h"

using namespace img2gray;

namespace {

// Read once, before main (hence __builtin_cpu_init first, as GCC asks of code that runs in a constructor).
const bool kHasAvx512 = (__builtin_cpu_init(), __builtin_cpu_supports("avx512f") != 0);

template <typename T>
using Kernel = void (*)(const T*, T*, int64_t, bool);

template <typename T>
void scalar(const T* rgb, T* gray, int64_t n, bool) {
  for (int64_t i = 0; i < n; ++i) gray[i] = luma(rgb[3 * i], rgb[3 * i + 1], rgb[3 * i + 2]);
}

struct U8Path {
  const char* name;
  Kernel<uint8_t> fn;
  bool supported;
};
struct F32Path {
  const char* name;
  Kernel<float> fn;
  bool supported;
};

// Each SIMD path as the op runs it and without its software prefetch ("-nopf"), to show what the prefetch gives.
std::vector<U8Path> u8_paths() {
  const bool avx2 = __builtin_cpu_supports("avx2") != 0;
  const bool vbmi = __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vbmi");
  return {{"scalar", scalar<uint8_t>, true},
          {"avx2", x86::u8_avx2<>, avx2},
          {"avx2-nopf", x86::u8_avx2<0>, avx2},
          {"avx512vbmi", x86::u8_avx512vbmi<>, vbmi},
          {"avx512vbmi-nopf", x86::u8_avx512vbmi<0>, vbmi}};
}
std::vector<F32Path> f32_paths() {
  const bool avx2 = __builtin_cpu_supports("avx2") != 0, avx512 = kHasAvx512;
  return {{"scalar", scalar<float>, true},
          {"avx2", x86::f32_avx2<>, avx2},
          {"avx2-nopf", x86::f32_avx2<0>, avx2},
          {"avx512", x86::f32_avx512<>, avx512},
          {"avx512-nopf", x86::f32_avx512<0>, avx512}};
}

int check() {
  int failures = 0;
  const int64_t n = int64_t{1} << 24;
  std::vector<uint8_t> rgb(3 * n + 256), expected(n), got(n + 256);
  for (int64_t v = 0; v < n; ++v) {
    rgb[3 * v] = static_cast<uint8_t>(v >> 16), rgb[3 * v + 1] = static_cast<uint8_t>(v >> 8);
    rgb[3 * v + 2] = static_cast<uint8_t>(v);
    expected[v] = static_cast<uint8_t>((rgb[3 * v] * 19595u + rgb[3 * v + 1] * 38470u + rgb[3 * v + 2] * 7471u +
                                        0x8000u) >> 16);
  }
  for (const auto& path : u8_paths()) {
    if (!path.supported) {
      std::printf("uint8 %-15s not supported here\n", path.name);
      continue;
    }
    for (bool stream : {false, true}) {
      path.fn(rgb.data(), got.data(), n, stream);
      int64_t bad = 0;
      for (int64_t v = 0; v < n; ++v) bad += got[v] != expected[v];
      // Odd counts at every input/output misalignment: results, and no write outside [0, count).
      int64_t bad_small = 0;
      for (int in_off = 0; in_off < 4; ++in_off) {
        for (int out_off = 0; out_off < 67; out_off += 1) {
          for (int64_t count : {0, 1, 2, 5, 31, 33, 35, 63, 64, 65, 127, 129, 200, 1000, 4099}) {
            std::vector<uint8_t> src(3 * count + in_off), dst(count + 200, 0xAB);  // exact: ASan builds catch overreads
            for (int64_t k = 0; k < 3 * count; ++k) src[k + in_off] = rgb[(k * 7919 + 13 * count) % (3 * n)];
            path.fn(src.data() + in_off, dst.data() + out_off, count, stream);
            for (int64_t k = 0; k < static_cast<int64_t>(dst.size()); ++k) {
              const int64_t j = k - out_off;
              const uint8_t want = (j < 0 || j >= count) ? 0xAB
                                   : luma(src[in_off + 3 * j], src[in_off + 3 * j + 1], src[in_off + 3 * j + 2]);
              bad_small += dst[k] != want;
            }
          }
        }
      }
      std::printf("uint8 %-15s stream=%d: %lld of 2^24 triples differ, %lld bad bytes in odd/misaligned cases\n",
                  path.name, stream, static_cast<long long>(bad), static_cast<long long>(bad_small));
      failures += bad != 0 || bad_small != 0;
    }
  }
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> dist(-2.0f, 300.0f);
  const int64_t m = 1 << 20;
  std::vector<float> frgb(3 * m + 64), fexp(m), fgot(m + 64);
  for (auto& x : frgb) x = dist(rng);
  frgb[0] = 1e-40f, frgb[1] = -0.0f, frgb[2] = 3e38f;  // denormal, signed zero, overflow to inf
  scalar(frgb.data(), fexp.data(), m, false);
  for (const auto& path : f32_paths()) {
    if (!path.supported) {
      std::printf("float32 %-11s not supported here\n", path.name);
      continue;
    }
    for (bool stream : {false, true}) {
      int64_t bad = 0;
      for (int off : {0, 1, 3}) {
        for (int64_t count : {m - 7, int64_t{1}, int64_t{15}, int64_t{17}, int64_t{100}}) {
          std::fill(fgot.begin(), fgot.end(), -1.0f);
          path.fn(frgb.data(), fgot.data() + off, count, stream);
          bad += std::memcmp(fgot.data() + off, fexp.data(), 4 * count) != 0;
          for (int k = 0; k < off; ++k) bad += fgot[k] != -1.0f;
          for (int64_t k = off + count; k < static_cast<int64_t>(fgot.size()); ++k) bad += fgot[k] != -1.0f;
        }
      }
      std::printf("float32 %-11s stream=%d: %lld bad cases (bitwise vs luma())\n", path.name, stream,
                  static_cast<long long>(bad));
      failures += bad != 0;
    }
  }
  std::printf(failures ? "FAILED\n" : "all paths exact\n");
  return failures != 0;
}

// Runs fn(begin, end) once, split in equal contiguous chunks over `threads` (OpenMP); microseconds.
template <typename F>
double time_once(int threads, int64_t n, const F& fn) {
  const auto t0 = std::chrono::steady_clock::now();
#pragma omp parallel num_threads(threads)
  {
    const int t = omp_get_thread_num(), nt = omp_get_num_threads();
    const int64_t chunk = (n + nt - 1) / nt, b = std::min(n, t * chunk), e = std::min(n, b + chunk);
    fn(b, e);
  }
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
}

// Candidates timed round-robin (one call each per round, so load from other processes hits all alike);
// each row is the median over the rounds, with the best in brackets.
struct Candidate {
  std::string name;
  std::function<void(int64_t, int64_t)> fn;
};
void run_candidates(const char* label, int threads, int64_t n, double bytes, int rounds,
                    const std::vector<Candidate>& cands) {
  std::vector<std::vector<double>> times(cands.size());
  for (int r = 0; r < rounds + 2; ++r) {
    for (size_t c = 0; c < cands.size(); ++c) {
      const double us = time_once(threads, n, cands[c].fn);
      if (r >= 2) times[c].push_back(us);  // two warm-up rounds
    }
  }
  for (size_t c = 0; c < cands.size(); ++c) {
    auto& t = times[c];
    std::sort(t.begin(), t.end());
    const double med = t[t.size() / 2];
    std::printf("%-14s %-26s %2d thr %9.1f us (best %8.1f) %6.1f GB/s\n", label, cands[c].name.c_str(), threads,
                med, t[0], bytes / med / 1e3);
  }
}

// The memory ceilings below are written for AVX-512 and for AVX2, and the widest the CPU runs is used (an AVX2-only
// host, e.g. a Zen 3 guest, would stop at the first 512-bit instruction).
// The same loads and stores as the uint8 kernel (3 × 64 bytes in, 64 out) with one OR instead of the arithmetic.
__attribute__((target("avx512f"))) void touch_u8_avx512(const uint8_t* rgb, uint8_t* gray, int64_t n, bool stream) {
  for (int64_t i = 0; i + 64 <= n; i += 64) {
    const uint8_t* p = rgb + 3 * i;
    const __m512i v = _mm512_ternarylogic_epi64(_mm512_loadu_si512(p), _mm512_loadu_si512(p + 64),
                                                _mm512_loadu_si512(p + 128), 0xfe);
    if (stream) _mm512_stream_si512(reinterpret_cast<__m512i*>(gray + i), v);
    else _mm512_storeu_si512(gray + i, v);
  }
  _mm_sfence();
}

__attribute__((target("avx2"))) void touch_u8_avx2(const uint8_t* rgb, uint8_t* gray, int64_t n, bool stream) {
  for (int64_t i = 0; i + 32 <= n; i += 32) {
    const __m256i* p = reinterpret_cast<const __m256i*>(rgb + 3 * i);
    const __m256i v = _mm256_or_si256(_mm256_or_si256(_mm256_loadu_si256(p), _mm256_loadu_si256(p + 1)),
                                      _mm256_loadu_si256(p + 2));
    if (stream) _mm256_stream_si256(reinterpret_cast<__m256i*>(gray + i), v);
    else _mm256_storeu_si256(reinterpret_cast<__m256i*>(gray + i), v);
  }
  _mm_sfence();
}

void touch_u8(const uint8_t* rgb, uint8_t* gray, int64_t n, bool stream) {
  kHasAvx512 ? touch_u8_avx512(rgb, gray, n, stream) : touch_u8_avx2(rgb, gray, n, stream);
}

// 2 MiB aligned (torch's CPU allocator gives 64 bytes; the kernels take any alignment: see check()). Huge: advised
// for transparent huge pages before the first touch, as numpy does from 4 MiB on, so the kernel backs it with huge
// pages where it can; small: advised against them (the 4 KiB pages of plain malloc and torch's CPU allocator), so
// a THP mode of "always" does not decide instead.
template <typename T>
struct Buffer {
  Buffer(int64_t n, bool huge) {
    const size_t align = size_t{2} << 20, bytes = (n * sizeof(T) + align - 1) / align * align;
    ptr = static_cast<T*>(std::aligned_alloc(align, bytes));
    madvise(ptr, bytes, huge ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
    std::memset(ptr, 0, n * sizeof(T));
  }
  ~Buffer() { std::free(ptr); }
  T* data() const { return ptr; }
  T* ptr;
};

// The float32 kernel's loads and stores (3 × 16 floats in, 16 out) with one add.
__attribute__((target("avx512f"))) void touch_f32_avx512(const float* rgb, float* gray, int64_t n, bool stream) {
  for (int64_t i = 0; i + 16 <= n; i += 16) {
    const float* p = rgb + 3 * i;
    const __m512 v = _mm512_add_ps(_mm512_add_ps(_mm512_loadu_ps(p), _mm512_loadu_ps(p + 16)), _mm512_loadu_ps(p + 32));
    if (stream) _mm512_stream_ps(gray + i, v);
    else _mm512_storeu_ps(gray + i, v);
  }
  _mm_sfence();
}

__attribute__((target("avx2"))) void touch_f32_avx2(const float* rgb, float* gray, int64_t n, bool stream) {
  for (int64_t i = 0; i + 8 <= n; i += 8) {
    const float* p = rgb + 3 * i;
    const __m256 v = _mm256_add_ps(_mm256_add_ps(_mm256_loadu_ps(p), _mm256_loadu_ps(p + 8)), _mm256_loadu_ps(p + 16));
    if (stream) _mm256_stream_ps(gray + i, v);
    else _mm256_storeu_ps(gray + i, v);
  }
  _mm_sfence();
}

void touch_f32(const float* rgb, float* gray, int64_t n, bool stream) {
  kHasAvx512 ? touch_f32_avx512(rgb, gray, n, stream) : touch_f32_avx2(rgb, gray, n, stream);
}

// Reads `bytes` bytes and writes nothing (one 64-byte result per thread, so the loads cannot be dropped).
__attribute__((target("avx512f"))) void read_only_avx512(const uint8_t* p, int64_t bytes, uint8_t* sink) {
  __m512i acc0 = _mm512_setzero_si512(), acc1 = acc0;
  for (int64_t i = 0; i + 128 <= bytes; i += 128) {
    acc0 = _mm512_or_si512(acc0, _mm512_loadu_si512(p + i));
    acc1 = _mm512_or_si512(acc1, _mm512_loadu_si512(p + i + 64));
  }
  _mm512_storeu_si512(sink, _mm512_or_si512(acc0, acc1));
}

__attribute__((target("avx2"))) void read_only_avx2(const uint8_t* p, int64_t bytes, uint8_t* sink) {
  __m256i acc0 = _mm256_setzero_si256(), acc1 = acc0;
  for (int64_t i = 0; i + 64 <= bytes; i += 64) {
    acc0 = _mm256_or_si256(acc0, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + i)));
    acc1 = _mm256_or_si256(acc1, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + i + 32)));
  }
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(sink), _mm256_or_si256(acc0, acc1));
}

void read_only(const uint8_t* p, int64_t bytes, uint8_t* sink) {
  kHasAvx512 ? read_only_avx512(p, bytes, sink) : read_only_avx2(p, bytes, sink);
}

template <typename T>
void bench_size(const char* size, int64_t w, int64_t h, int threads_all, bool huge_input, bool huge_output) {
  const int64_t n = w * h;
  Buffer<T> rgb(3 * n, huge_input), gray(n, huge_output);
  Buffer<uint8_t> src(2 * n * sizeof(T), huge_input), dst(2 * n * sizeof(T), huge_output), sink(64 * 256, false);
  std::mt19937 rng(2);
  for (int64_t k = 0; k < 3 * n; ++k) rgb.data()[k] = static_cast<T>(rng() % 256);
  std::memset(src.data(), 1, 2 * n * sizeof(T));
  const double bytes = static_cast<double>(4 * n * sizeof(T));
  const std::string label = std::string(size) + (sizeof(T) == 1 ? " uint8" : " float32");
  for (int threads : {1, threads_all}) {
    std::vector<Candidate> cands;
    // memcpy of the same total traffic: 2n·sizeof(T) bytes read and as many written.
    cands.push_back({"ceiling: memcpy", [&](int64_t b, int64_t e) {
                       const int64_t k = 2 * sizeof(T);
                       std::memcpy(dst.data() + k * b, src.data() + k * b, k * (e - b));
                     }});
    // Reading the input alone (no output): what no kernel can beat.
    cands.push_back({"ceiling: read input only", [&](int64_t b, int64_t e) {
                       read_only(reinterpret_cast<const uint8_t*>(rgb.data() + 3 * b), 3 * (e - b) * sizeof(T),
                                 sink.data() + 64 * omp_get_thread_num());
                     }});
    for (bool stream : {false, true}) {
      cands.push_back({stream ? "ceiling: touch (stream)" : "ceiling: touch", [&, stream](int64_t b, int64_t e) {
                         if constexpr (sizeof(T) == 1) touch_u8(rgb.data() + 3 * b, gray.data() + b, e - b, stream);
                         else touch_f32(rgb.data() + 3 * b, gray.data() + b, e - b, stream);
                       }});
    }
    if constexpr (sizeof(T) == 1) {
      for (const auto& path : u8_paths()) {
        if (!path.supported) continue;
        for (bool stream : {false, true}) {
          cands.push_back({std::string(path.name) + (stream ? " (stream)" : ""), [&, path, stream](int64_t b, int64_t e) {
                             path.fn(rgb.data() + 3 * b, gray.data() + b, e - b, stream);
                           }});
        }
      }
    } else {
      for (const auto& path : f32_paths()) {
        if (!path.supported) continue;
        for (bool stream : {false, true}) {
          cands.push_back({std::string(path.name) + (stream ? " (stream)" : ""), [&, path, stream](int64_t b, int64_t e) {
                             path.fn(rgb.data() + 3 * b, gray.data() + b, e - b, stream);
                           }});
        }
      }
    }
    run_candidates(label.c_str(), threads, n, bytes, n * sizeof(T) > 4000000 ? 15 : 41, cands);
  }
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "check";
  if (mode == "check") return check();
  if (mode != "bench") {
    std::fprintf(stderr, "usage: harness check | harness bench [huge|small|mixed]; got %s\n", mode.c_str());
    return 2;
  }
  const std::string pages = argc > 2 ? argv[2] : "huge";
  if (pages != "huge" && pages != "small" && pages != "mixed") {
    std::fprintf(stderr, "harness bench: expected pages huge, small or mixed; got %s\n", pages.c_str());
    return 2;
  }
  const bool huge_input = pages != "small", huge_output = pages == "huge";
  std::printf("pages: input %s, output %s\n", huge_input ? "huge (madvise)" : "4 KiB",
              huge_output ? "huge (madvise)" : "4 KiB");
  const int threads = omp_get_max_threads();
  bench_size<uint8_t>("4K", 3840, 2160, threads, huge_input, huge_output);
  bench_size<uint8_t>("1080p", 1920, 1080, threads, huge_input, huge_output);
  bench_size<float>("4K", 3840, 2160, threads, huge_input, huge_output);
  bench_size<float>("1080p", 1920, 1080, threads, huge_input, huge_output);
  return 0;
}
