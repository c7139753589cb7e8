/* vtrain's own exp, expm1, log, tanh, sigmoid and cospi2 (>>elementary)
   must give the same bits under any build of the implementation: this
   program prints a SHA-256 of their values over 200,000 inputs, and the
   compile check builds it with clang's defaults (which contract a*b+c
   unless told not to) and with gcc -ffp-contract=off and compares the
   two lines. */
#define VTRAIN_IMPLEMENTATION
#include "../../vtrain.h"
#include <stdio.h>

int main(void) {
    static double v[7 * 200000];
    unsigned char h[32];
    char hex[65];
    int i, k = 0;
    for (i = 0; i < 200000; i++) {
        double x = (vt_rng_uniform(3, 1, (uint64_t)i) - 0.5) * 80, p = vt_rng_uniform(3, 2, (uint64_t)i);
        v[k++] = vt__dexp(x);
        v[k++] = vt__dexpm1(x / 40);
        v[k++] = vt__dlog(fabs(x) + 1e-3);
        v[k++] = vt__dtanh(x / 8);
        v[k++] = vt__dsigmoid(x / 4);
        v[k++] = vt__dcospi2(p, 1 - p);
        v[k++] = vt__dexp(x / 1000);
    }
    vt_sha256(v, sizeof v, h);
    vt_hex(h, 32, hex);
    printf("%s\n", hex);
    return 0;
}
