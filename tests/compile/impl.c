/* The implementation translation unit of the two-TU compile check. */
#define VTRAIN_IMPLEMENTATION
#include "../../vtrain.h"

int vt_check_other_tu(void); /* in user.c */

int main(void) {
    vt_desc d = vt_desc_default();
    vt_ctx *c;
    int64_t ne[2] = {2, 3};
    vt_tensor *t;
    int ok = 1;
    d.order.threads = 1;
    c = vt_create(&d);
    if (!c) return 1;
    t = vt_param(c, "t", 2, ne);
    vt_init_normal(c, t, 1, 2, 1.0);
    ok &= vt_status_of(c) == VT_OK;
    ok &= vt_check_other_tu();
    vt_destroy(c);
    return ok ? 0 : 1;
}
