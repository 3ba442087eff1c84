/* What the hostile FMI masters (fmu_fuzz_host.c, fmu3_fuzz_host.c) share: a seeded xorshift64
 * generator and the hostile values they feed the FMU.  Included by both (one translation unit
 * each, so the definitions are static). */
#ifndef FUZZ_RANDOM_H
#define FUZZ_RANDOM_H

#include <math.h>

static unsigned long long state = 88172645463325252ull;
static unsigned long long rnd(void)
{
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    return state;
}
static int below(int n) { return n > 0 ? (int)(rnd() % (unsigned long long)n) : 0; }

static double hostile_real(void)
{
    switch (below(10)) {
    case 0: return NAN;
    case 1: return INFINITY;
    case 2: return -INFINITY;
    case 3: return 1e300;
    case 4: return -1e-300;
    case 5: return 0.0;
    default: return ((double)below(2001) - 1000.0) / 100.0;
    }
}

#endif
