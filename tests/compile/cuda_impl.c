/* The implementation translation unit of the CUDA two-TU compile check. */
#define VTRAIN_IMPLEMENTATION
#define VTRAIN_CUDA
#define VTRAIN_CUDA_EMU
#include "../../vtrain.h"
#include <stdio.h>

int vt_check_emulator_tu(void); /* in cuda_user.c */

int main(void) {
    int ok = vt_check_emulator_tu();
    if (!ok) printf("the emulator, selected from another translation unit: %s\n", vt_last_error());
    return ok ? 0 : 1;
}
