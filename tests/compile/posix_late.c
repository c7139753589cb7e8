/* A system header before vtrain.h under -std=c99: the _POSIX_C_SOURCE that
   vtrain.h defines comes too late, and the implementation must refuse to
   build (an #error that says what to do) rather than time everything with
   clock(), the process's CPU time. The Makefile's cc-posix_late expects the
   error without -D_POSIX_C_SOURCE and a clean build with it. */
#include <stdio.h>
#define VTRAIN_IMPLEMENTATION
#include "../../vtrain.h"

int main(void) {
    printf("vtrain %s built\n", VTRAIN_VERSION_STRING);
    return 0;
}
