#include "compute_sampling.h"

/* splitmix64's finaliser: every bit of the seed moves every bit of the draw. */
static uint64_t mix(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

struct sample_draw sample_draw_next(uint64_t seed) {
  uint64_t bits = mix(seed);
  struct sample_draw d;
  d.interval_ns = SAMPLE_INTERVAL_NS / 2 + (bits >> 32) % SAMPLE_INTERVAL_NS;
  d.skips = (unsigned)(bits & 0xffff) % SAMPLE_SKIPS_MAX;
  return d;
}

int sample_take(const struct sample_draw* draw, uint64_t since_ns, unsigned passed,
                uint32_t spans) {
  if (!sample_due(draw, since_ns)) return 0;
  return spans < SAMPLE_YOUNG || passed >= draw->skips || since_ns >= SAMPLE_OVERDUE_NS;
}
