// Hand-written x86-64 SIMD paths of the CPU kernel, each compiled for its own instruction set with a target
// attribute (the file is built for baseline x86-64; csrc/img2gray_cpu.cpp picks a path at run time). Included
// by img2gray_cpu.cpp and by benchmarks/cpu_kernel_harness.cpp, which checks and times every path alone.
//
// uint8, exactly Pillow's (r*19595 + g*38470 + b*7471 + 0x8000) >> 16 in 16-bit lanes:
//   each weight is 256*hi + lo with hi = (77, 150, 29) and lo = (-117, 70, 47); pmaddubsw (u8 pixel × s8 weight,
//   adjacent pairs summed to s16) takes the pixels as byte pairs (r, g) and (b, g), with g's weight split over
//   the two pairs so that no pair can saturate:
//     A = [77 r + 51 g] + [29 b + 99 g]   (each pair ≤ 128·255 = 32640; A itself ≤ 65025, read as u16)
//     B = [-117 r + 35 g] + [47 b + 35 g] (|B| ≤ 29835)
//   so that 256 A + B = r*19595 + g*38470 + b*7471, and
//     (256 A + B + 0x8000) >> 16 = (A + (B >>arith 8) + 0x80) >> 8,
//   whose sum stays in [0, 65408]: the result is the high byte of a u16. Exact for all 2^24 triples (the
//   harness and tests/test_ops.py check every one).
// float32: ((0.299 r + 0.587 g) + 0.114 b) with separate multiplies and adds (never an FMA), the order of luma().
#pragma once

#if defined(__x86_64__) && defined(__GNUC__)
#define IMG2GRAY_HAVE_X86_SIMD 1

#include <immintrin.h>

#include <algorithm>
#include <array>
#include <cstdint>

#include "luma.h"

namespace img2gray::x86 {

// pmaddubsw weights, as the 16-bit word of a (first byte, second byte) pair.
constexpr int16_t pair_weight(int first, int second) {
  return static_cast<int16_t>((first & 0xff) | (second << 8));
}
constexpr int16_t kHiRG = pair_weight(77, 51), kHiBG = pair_weight(29, 99);
constexpr int16_t kLoRG = pair_weight(-117, 35), kLoBG = pair_weight(47, 35);

// Software prefetch of the input, kPrefetchAhead bytes ahead of the block being converted. The hardware
// prefetchers alone leave one core short of the memory bandwidth while it also shuffles: on an AVX2-only EPYC
// guest, 4K uint8 on 1 thread took 2.7 ms without and 1.9 ms with it (float32 1.1-1.5x faster), on the H200
// host's Xeon 4K float32 9.7 ms and 8.1 ms (benchmarks/NOTES.md, "Prefetch"); on all cores it is within noise.
// Each loop asks for the lines of one block's worth of input per step; kAhead = 0 turns it off (the harness
// times both). A prefetch never faults, so the address may lie past the end of the input; it is formed as an
// integer so that no pointer points outside the buffer.
inline constexpr int64_t kPrefetchAhead = 4096;

template <int64_t kAhead, int kBytesPerStep>
__attribute__((always_inline)) inline void prefetch_input(const void* block) {
  if constexpr (kAhead > 0) {
    const uintptr_t ahead = reinterpret_cast<uintptr_t>(block) + kAhead;
    for (int offset = 0; offset < kBytesPerStep; offset += 64) {
      _mm_prefetch(reinterpret_cast<const char*>(ahead + offset), _MM_HINT_T0);
    }
  }
}

// ---------------------------------------------------------------------------------------------------------------
// AVX-512 VBMI (Ice Lake, Sapphire Rapids and later Xeons; AMD Zen 4 and later): vpermt2b picks any bytes of two
// registers, so 64 pixels are 3 loads, 5 byte permutes, 8 pmaddubsw and one store. Tails use masked loads/stores.
#define IMG2GRAY_TARGET_VBMI __attribute__((target("avx512f,avx512bw,avx512vbmi"), always_inline)) inline

struct VbmiTables {
  std::array<uint8_t, 64> rg_lo, bg_lo, rg_hi, bg_hi, odd;
};
constexpr VbmiTables make_vbmi_tables() {
  VbmiTables t{};
  for (int i = 0; i < 32; ++i) {
    // Pixels 0..31 of a block are bytes 0..95 of (v0, v1); pixels 32..63 are bytes 32..127 of (v1, v2).
    for (int half = 0; half < 2; ++half) {
      const int base = 3 * i + 32 * half;
      auto& rg = half ? t.rg_hi : t.rg_lo;
      auto& bg = half ? t.bg_hi : t.bg_lo;
      rg[2 * i] = static_cast<uint8_t>(base);
      rg[2 * i + 1] = static_cast<uint8_t>(base + 1);
      bg[2 * i] = static_cast<uint8_t>(base + 2);
      bg[2 * i + 1] = static_cast<uint8_t>(base + 1);
    }
  }
  for (int i = 0; i < 64; ++i) t.odd[i] = static_cast<uint8_t>(2 * i + 1);  // high bytes of (T0, T1)
  return t;
}
inline constexpr VbmiTables kVbmi = make_vbmi_tables();

IMG2GRAY_TARGET_VBMI __m512i vbmi_luma_words(__m512i rg, __m512i bg) {
  const __m512i a = _mm512_add_epi16(_mm512_maddubs_epi16(rg, _mm512_set1_epi16(kHiRG)),
                                     _mm512_maddubs_epi16(bg, _mm512_set1_epi16(kHiBG)));
  const __m512i b = _mm512_add_epi16(_mm512_maddubs_epi16(rg, _mm512_set1_epi16(kLoRG)),
                                     _mm512_maddubs_epi16(bg, _mm512_set1_epi16(kLoBG)));
  return _mm512_add_epi16(_mm512_add_epi16(a, _mm512_srai_epi16(b, 8)), _mm512_set1_epi16(0x80));
}

IMG2GRAY_TARGET_VBMI __m512i vbmi_block(__m512i v0, __m512i v1, __m512i v2) {
  const __m512i rg_lo = _mm512_loadu_si512(kVbmi.rg_lo.data()), bg_lo = _mm512_loadu_si512(kVbmi.bg_lo.data());
  const __m512i rg_hi = _mm512_loadu_si512(kVbmi.rg_hi.data()), bg_hi = _mm512_loadu_si512(kVbmi.bg_hi.data());
  const __m512i t0 = vbmi_luma_words(_mm512_permutex2var_epi8(v0, rg_lo, v1), _mm512_permutex2var_epi8(v0, bg_lo, v1));
  const __m512i t1 = vbmi_luma_words(_mm512_permutex2var_epi8(v1, rg_hi, v2), _mm512_permutex2var_epi8(v1, bg_hi, v2));
  return _mm512_permutex2var_epi8(t0, _mm512_loadu_si512(kVbmi.odd.data()), t1);
}

// Up to 64 pixels with masked loads and stores (never touches a byte outside the range).
IMG2GRAY_TARGET_VBMI void vbmi_partial(const uint8_t* rgb, uint8_t* gray, int64_t count) {
  const int64_t bytes = 3 * count;
  auto mask = [](int64_t n) -> __mmask64 {
    return n <= 0 ? 0 : n >= 64 ? ~__mmask64{0} : (__mmask64{1} << n) - 1;
  };
  const __m512i v0 = _mm512_maskz_loadu_epi8(mask(bytes), rgb);
  const __m512i v1 = _mm512_maskz_loadu_epi8(mask(bytes - 64), rgb + 64);
  const __m512i v2 = _mm512_maskz_loadu_epi8(mask(bytes - 128), rgb + 128);
  _mm512_mask_storeu_epi8(gray, mask(count), vbmi_block(v0, v1, v2));
}

template <int64_t kAhead = kPrefetchAhead>
__attribute__((target("avx512f,avx512bw,avx512vbmi"))) inline void u8_avx512vbmi(const uint8_t* rgb, uint8_t* gray,
                                                                                  int64_t count, bool stream) {
  int64_t i = 0;
  if (stream) {
    // Streaming (non-temporal) stores need 64-byte aligned addresses: a masked head block first.
    const int64_t head = std::min<int64_t>(count, (64 - (reinterpret_cast<uintptr_t>(gray) & 63)) & 63);
    if (head) vbmi_partial(rgb, gray, head);
    for (i = head; i + 64 <= count; i += 64) {
      const uint8_t* p = rgb + 3 * i;
      prefetch_input<kAhead, 192>(p);
      const __m512i v = vbmi_block(_mm512_loadu_si512(p), _mm512_loadu_si512(p + 64), _mm512_loadu_si512(p + 128));
      _mm512_stream_si512(reinterpret_cast<__m512i*>(gray + i), v);
    }
    _mm_sfence();
  } else {
    for (; i + 64 <= count; i += 64) {
      const uint8_t* p = rgb + 3 * i;
      prefetch_input<kAhead, 192>(p);
      _mm512_storeu_si512(gray + i,
                          vbmi_block(_mm512_loadu_si512(p), _mm512_loadu_si512(p + 64), _mm512_loadu_si512(p + 128)));
    }
  }
  if (i < count) vbmi_partial(rgb + 3 * i, gray + i, count - i);
}

// float32, 16 pixels per step: two vpermt2ps per channel, then the three products and two sums.
struct F32Tables {
  std::array<int32_t, 16> first[3], second[3];
};
constexpr F32Tables make_f32_tables() {
  F32Tables t{};
  for (int c = 0; c < 3; ++c) {
    for (int j = 0; j < 16; ++j) {
      const int e = 3 * j + c;  // element of (v0, v1, v2)
      t.first[c][j] = e < 32 ? e : 0;
      t.second[c][j] = e < 32 ? j : 16 + (e - 32);
    }
  }
  return t;
}
inline constexpr F32Tables kF32 = make_f32_tables();

#define IMG2GRAY_TARGET_AVX512F __attribute__((target("avx512f"), always_inline)) inline

IMG2GRAY_TARGET_AVX512F __m512 f32_avx512_channel(__m512 v0, __m512 v1, __m512 v2, int c) {
  const __m512 t = _mm512_permutex2var_ps(v0, _mm512_loadu_si512(kF32.first[c].data()), v1);
  return _mm512_permutex2var_ps(t, _mm512_loadu_si512(kF32.second[c].data()), v2);
}

IMG2GRAY_TARGET_AVX512F __m512 f32_avx512_block(__m512 v0, __m512 v1, __m512 v2) {
  const __m512 r = f32_avx512_channel(v0, v1, v2, 0), g = f32_avx512_channel(v0, v1, v2, 1);
  const __m512 b = f32_avx512_channel(v0, v1, v2, 2);
  const __m512 rg = _mm512_add_ps(_mm512_mul_ps(_mm512_set1_ps(0.299f), r), _mm512_mul_ps(_mm512_set1_ps(0.587f), g));
  return _mm512_add_ps(rg, _mm512_mul_ps(_mm512_set1_ps(0.114f), b));
}

template <int64_t kAhead = kPrefetchAhead>
__attribute__((target("avx512f"))) inline void f32_avx512(const float* rgb, float* gray, int64_t count,
                                                          bool stream) {
  int64_t i = 0;
  if (stream && (reinterpret_cast<uintptr_t>(gray) & 3) == 0) {
    const int64_t head = std::min<int64_t>(count, ((64 - (reinterpret_cast<uintptr_t>(gray) & 63)) & 63) / 4);
    for (; i < head; ++i) gray[i] = luma(rgb[3 * i], rgb[3 * i + 1], rgb[3 * i + 2]);
    for (; i + 16 <= count; i += 16) {
      const float* p = rgb + 3 * i;
      prefetch_input<kAhead, 192>(p);
      _mm512_stream_ps(gray + i,
                       f32_avx512_block(_mm512_loadu_ps(p), _mm512_loadu_ps(p + 16), _mm512_loadu_ps(p + 32)));
    }
    _mm_sfence();
  } else {
    for (; i + 16 <= count; i += 16) {
      const float* p = rgb + 3 * i;
      prefetch_input<kAhead, 192>(p);
      _mm512_storeu_ps(gray + i,
                       f32_avx512_block(_mm512_loadu_ps(p), _mm512_loadu_ps(p + 16), _mm512_loadu_ps(p + 32)));
    }
  }
  if (i < count) {
    const int64_t n = count - i, values = 3 * n;
    auto mask = [](int64_t m) -> __mmask16 { return m <= 0 ? 0 : m >= 16 ? 0xffff : (1u << m) - 1; };
    const float* p = rgb + 3 * i;
    const __m512 v0 = _mm512_maskz_loadu_ps(mask(values), p);
    const __m512 v1 = _mm512_maskz_loadu_ps(mask(values - 16), p + 16);
    const __m512 v2 = _mm512_maskz_loadu_ps(mask(values - 32), p + 32);
    _mm512_mask_storeu_ps(gray + i, mask(n), f32_avx512_block(v0, v1, v2));
  }
}

// ---------------------------------------------------------------------------------------------------------------
// AVX2 (Haswell and later, every x86-64 server of the last decade): pshufb only shuffles within 128-bit lanes, so
// each lane takes 4 pixels (a vpermd spreads bytes 0..15 and 12..27 of a 32-byte load over the two lanes); one
// pshufb per 8 pixels makes the (r, g) and (b, g) pairs, and 64-bit unpacks gather them per 16 pixels.
#define IMG2GRAY_TARGET_AVX2 __attribute__((target("avx2"), always_inline)) inline

// 8 pixels from a 32-byte load at p (bytes 24..31 unused): lane k = [(r,g) × 4 | (b,g) × 4] of pixels 4k..4k+3.
IMG2GRAY_TARGET_AVX2 __m256i avx2_pairs(const uint8_t* p) {
  const __m256i v = _mm256_permutevar8x32_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)),
                                                _mm256_setr_epi32(0, 1, 2, 3, 3, 4, 5, 6));
  const __m256i shuffle = _mm256_setr_epi8(0, 1, 3, 4, 6, 7, 9, 10, 2, 1, 5, 4, 8, 7, 11, 10,  //
                                           0, 1, 3, 4, 6, 7, 9, 10, 2, 1, 5, 4, 8, 7, 11, 10);
  return _mm256_shuffle_epi8(v, shuffle);
}

// 16 pixels at p (reads 56 bytes) → words in the order lane 0: pixels 0-3, 8-11; lane 1: 4-7, 12-15.
IMG2GRAY_TARGET_AVX2 __m256i avx2_luma_words(const uint8_t* p) {
  const __m256i x = avx2_pairs(p), y = avx2_pairs(p + 24);
  const __m256i rg = _mm256_unpacklo_epi64(x, y), bg = _mm256_unpackhi_epi64(x, y);
  const __m256i a = _mm256_add_epi16(_mm256_maddubs_epi16(rg, _mm256_set1_epi16(kHiRG)),
                                     _mm256_maddubs_epi16(bg, _mm256_set1_epi16(kHiBG)));
  const __m256i b = _mm256_add_epi16(_mm256_maddubs_epi16(rg, _mm256_set1_epi16(kLoRG)),
                                     _mm256_maddubs_epi16(bg, _mm256_set1_epi16(kLoBG)));
  const __m256i t = _mm256_add_epi16(_mm256_add_epi16(a, _mm256_srai_epi16(b, 8)), _mm256_set1_epi16(0x80));
  return _mm256_srli_epi16(t, 8);
}

// 32 pixels at p (reads 104 bytes: callers keep 8 bytes of input beyond the 96 used).
IMG2GRAY_TARGET_AVX2 __m256i avx2_block(const uint8_t* p) {
  const __m256i packed = _mm256_packus_epi16(avx2_luma_words(p), avx2_luma_words(p + 48));
  return _mm256_permutevar8x32_epi32(packed, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
}

template <int64_t kAhead = kPrefetchAhead>
__attribute__((target("avx2"))) inline void u8_avx2(const uint8_t* rgb, uint8_t* gray, int64_t count, bool stream) {
  int64_t i = 0;
  // 32 pixels per step while 104 bytes (34.67 pixels) of input remain; the rest pixel by pixel.
  if (stream) {
    const int64_t head = std::min<int64_t>(count, (32 - (reinterpret_cast<uintptr_t>(gray) & 31)) & 31);
    for (; i < head; ++i) gray[i] = luma(rgb[3 * i], rgb[3 * i + 1], rgb[3 * i + 2]);
    for (; i + 35 <= count; i += 32) {
      prefetch_input<kAhead, 96>(rgb + 3 * i);
      _mm256_stream_si256(reinterpret_cast<__m256i*>(gray + i), avx2_block(rgb + 3 * i));
    }
    _mm_sfence();
  } else {
    for (; i + 35 <= count; i += 32) {
      prefetch_input<kAhead, 96>(rgb + 3 * i);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(gray + i), avx2_block(rgb + 3 * i));
    }
  }
  for (; i < count; ++i) gray[i] = luma(rgb[3 * i], rgb[3 * i + 1], rgb[3 * i + 2]);
}

// float32, 8 pixels per step: per channel two blends of the three loads put its 8 values in one register (their
// positions never collide), and one vpermps puts them in order.
IMG2GRAY_TARGET_AVX2 __m256 f32_avx2_block(const float* p) {
  const __m256 m0 = _mm256_loadu_ps(p), m1 = _mm256_loadu_ps(p + 8), m2 = _mm256_loadu_ps(p + 16);
  // r: m0 at 0,3,6 · m1 at 1,4,7 · m2 at 2,5;  g: m0 1,4,7 · m1 2,5 · m2 0,3,6;  b: m0 2,5 · m1 0,3,6 · m2 1,4,7.
  const __m256 r = _mm256_permutevar8x32_ps(_mm256_blend_ps(_mm256_blend_ps(m0, m1, 0x92), m2, 0x24),
                                            _mm256_setr_epi32(0, 3, 6, 1, 4, 7, 2, 5));
  const __m256 g = _mm256_permutevar8x32_ps(_mm256_blend_ps(_mm256_blend_ps(m0, m1, 0x24), m2, 0x49),
                                            _mm256_setr_epi32(1, 4, 7, 2, 5, 0, 3, 6));
  const __m256 b = _mm256_permutevar8x32_ps(_mm256_blend_ps(_mm256_blend_ps(m0, m1, 0x49), m2, 0x92),
                                            _mm256_setr_epi32(2, 5, 0, 3, 6, 1, 4, 7));
  const __m256 rg = _mm256_add_ps(_mm256_mul_ps(_mm256_set1_ps(0.299f), r), _mm256_mul_ps(_mm256_set1_ps(0.587f), g));
  return _mm256_add_ps(rg, _mm256_mul_ps(_mm256_set1_ps(0.114f), b));
}

template <int64_t kAhead = kPrefetchAhead>
__attribute__((target("avx2"))) inline void f32_avx2(const float* rgb, float* gray, int64_t count, bool stream) {
  int64_t i = 0;
  if (stream && (reinterpret_cast<uintptr_t>(gray) & 3) == 0) {
    const int64_t head = std::min<int64_t>(count, ((32 - (reinterpret_cast<uintptr_t>(gray) & 31)) & 31) / 4);
    for (; i < head; ++i) gray[i] = luma(rgb[3 * i], rgb[3 * i + 1], rgb[3 * i + 2]);
    for (; i + 8 <= count; i += 8) {
      prefetch_input<kAhead, 96>(rgb + 3 * i);
      _mm256_stream_ps(gray + i, f32_avx2_block(rgb + 3 * i));
    }
    _mm_sfence();
  } else {
    for (; i + 8 <= count; i += 8) {
      prefetch_input<kAhead, 96>(rgb + 3 * i);
      _mm256_storeu_ps(gray + i, f32_avx2_block(rgb + 3 * i));
    }
  }
  for (; i < count; ++i) gray[i] = luma(rgb[3 * i], rgb[3 * i + 1], rgb[3 * i + 2]);
}

}  // namespace img2gray::x86

#endif  // x86-64 with GCC or Clang
