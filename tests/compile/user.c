/* A translation unit that only includes the declarations and calls the
   library: linking fails if the implementation macro or VTDEF is wrong. */
#include "../../vtrain.h"
#include <string.h>

int vt_check_other_tu(void) {
    unsigned char h[32];
    char hex[65];
    vt_sha256("abc", 3, h);
    vt_hex(h, 32, hex);
    return strcmp(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad") == 0 &&
           strcmp(vt_version(), VTRAIN_VERSION_STRING) == 0 && vt_rng_u64(1, 2, 3) == vt_rng_u64(1, 2, 3);
}
