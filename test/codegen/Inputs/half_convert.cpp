// Prints f16 conversions of scalar.h for test/codegen/scalar-f16c.test: every
// f16 bit pattern widened, and a sweep of f32 bit patterns (all signs,
// exponents and rounding cases, every 251st pattern plus the neighbours of
// f16's rounding and overflow boundaries) narrowed. Built with and without
// SLUICE_NO_F16C, the two outputs must be identical.
#include "sluice_gen/scalar.h"

#include <stdio.h>

static uint64_t mix(uint64_t hash, uint64_t value) {
  return (hash ^ value) * 1099511628211ull;
}

int main() {
  uint64_t hash = 1469598103934665603ull;
  for (uint32_t bits = 0; bits < 65536; ++bits) {
    sluice_f16 h;
    h.bits = (uint16_t)bits;
    float f = sluice_load(h);
    // Every NaN widens to some NaN; compare them as one class.
    hash = mix(hash, f != f ? 0x7fc00000u : sluice_float_to_bits(f));
  }
  printf("widen %016llx\n", (unsigned long long)hash);
  hash = 1469598103934665603ull;
  uint64_t count = 0;
  for (uint64_t bits = 0; bits < (1ull << 32); bits += 251) {
    hash = mix(hash, sluice_to_f16(sluice_bits_to_float((uint32_t)bits)).bits);
    ++count;
  }
  // Around each f16 value's halfway points (ties to even) and the top.
  for (uint32_t h = 0; h < 0x7c00; ++h)
    for (int sign = 0; sign < 2; ++sign) {
      sluice_f16 lo;
      lo.bits = (uint16_t)h;
      uint32_t word = sluice_float_to_bits(sluice_load(lo)) + (h < 0x400 ? 0 : 0xfffu);
      for (uint32_t d = 0; d < 3; ++d) {
        uint32_t w = (word + d) | (sign ? 0x80000000u : 0);
        hash = mix(hash, sluice_to_f16(sluice_bits_to_float(w)).bits);
        ++count;
      }
    }
  printf("narrow %016llx over %llu values\n", (unsigned long long)hash, (unsigned long long)count);
  return 0;
}
