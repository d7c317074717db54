// Checks scalar.h's portable f16 conversions against the hardware's (F16C
// vcvtph2ps / vcvtps2ph, round to nearest even) for test/codegen/
// scalar-f16c.test: every f16 bit pattern widened, every 3rd f32 bit pattern
// narrowed, and the neighbours of every f16 rounding boundary. Prints the
// mismatch counts (NaNs match NaNs: the portable code makes the canonical
// quiet NaN, the instruction keeps the payload).
#include "sluice_gen/scalar.h"

#include <immintrin.h>
#include <initializer_list>
#include <stdio.h>

static bool isNaNHalf(uint16_t h) { return (h & 0x7c00) == 0x7c00 && (h & 0x3ff); }

static uint64_t checkNarrow(uint32_t word) {
  float f = sluice_bits_to_float(word);
  uint16_t got = sluice_to_f16(f).bits;
  uint16_t want = (uint16_t)_cvtss_sh(f, _MM_FROUND_TO_NEAREST_INT);
  return got != want && !(isNaNHalf(got) && isNaNHalf(want));
}

int main() {
  uint64_t widenBad = 0, narrowBad = 0, narrowCount = 0;
  for (uint32_t bits = 0; bits < 65536; ++bits) {
    sluice_f16 h;
    h.bits = (uint16_t)bits;
    float got = sluice_load(h), want = _cvtsh_ss((unsigned short)bits);
    widenBad += sluice_float_to_bits(got) != sluice_float_to_bits(want) &&
                !(got != got && want != want);
  }
  for (uint64_t word = 0; word < (1ull << 32); word += 3, ++narrowCount)
    narrowBad += checkNarrow((uint32_t)word);
  // Around each f16 value and the halfway point above it (ties to even).
  for (uint32_t bits = 0; bits < 0x7c00; ++bits) {
    sluice_f16 h, next;
    h.bits = (uint16_t)bits;
    next.bits = (uint16_t)(bits + 1);
    uint32_t word = sluice_float_to_bits(sluice_load(h));
    uint32_t half = sluice_float_to_bits((sluice_load(h) + sluice_load(next)) * 0.5f);
    for (int d = -2; d <= 2; ++d)
      for (uint32_t sign : {0u, 0x80000000u}) {
        narrowBad += checkNarrow((word + d) | sign) + checkNarrow((half + d) | sign);
        narrowCount += 2;
      }
  }
  printf("widen: %llu of 65536 differ\n", (unsigned long long)widenBad);
  printf("narrow: %llu of %llu differ\n", (unsigned long long)narrowBad,
         (unsigned long long)narrowCount);
  return widenBad || narrowBad;
}
