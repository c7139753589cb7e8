/* A build that breaks the numeric contract is refused at vt_create, with a
   message that says why: linked with gcc -ffast-math (its startup code turns
   on FTZ/DAZ) or compiled with clang -ffp-contract=fast (contraction despite
   the pragma), this program expects vt_create to fail with the message named
   in argv[1] and exits 0 only then. (Compiled with -ffast-math it does not
   compile at all: vtrain.h's #error.) */
#define VTRAIN_IMPLEMENTATION
#include "../../vtrain.h"
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv) {
    vt_desc d = vt_desc_default();
    vt_ctx *c;
    if (argc < 2) { fprintf(stderr, "usage: refused MESSAGE\n"); return 2; }
    c = vt_create(&d);
    if (c) {
        printf("vt_create accepted a build that breaks the numeric contract (expected: '%s')\n", argv[1]);
        vt_destroy(c);
        return 1;
    }
    printf("refused: %s\n", vt_last_error());
    return strstr(vt_last_error(), argv[1]) ? 0 : 1;
}
