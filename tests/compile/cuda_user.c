/* The second translation unit of the CUDA two-TU compile check: it sees
   only the declarations, and selects the emulator by its public name. */
#include "../../vtrain.h"

int vt_check_emulator_tu(void) {
    vt_desc d = vt_desc_default();
    vt_ctx *c;
    int64_t ne[1] = {5};
    vt_tensor *t;
    int ok;
    d.backend = VT_BACKEND_CUDA;
    d.device = VT_CUDA_EMULATOR;
    c = vt_create(&d);
    if (!c) return 0;
    t = vt_param(c, "t", 1, ne);
    vt_init_normal(c, t, 1, 2, 1.0);
    ok = vt_status_of(c) == VT_OK;
    vt_destroy(c);
    return ok;
}
