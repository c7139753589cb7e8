/* One translation unit, compiled as C and as C++, optionally VTRAIN_STATIC or
   VTRAIN_NO_THREADS: trains a few steps of a tiny model and checks the log
   replays. */
#define VTRAIN_IMPLEMENTATION
#include "../../vtrain.h"
#include <stdio.h>

static vt_tensor *W, *b;
static vt_optim *opt;

static vt_status setup(vt_ctx *c, void *user) {
    int64_t wshape[2] = {1, 1};
    vt_adamw_desc ad = vt_adamw_default();
    (void)user;
    W = vt_param(c, "W", 2, wshape);
    b = vt_param(c, "b", 1, wshape);
    vt_init_normal(c, W, 42, 1, 0.5);
    vt_init_const(c, b, 0.0);
    ad.lr = 0.05;
    opt = vt_adamw_create(c, &ad);
    return vt_status_of(c);
}

static vt_status step(vt_ctx *c, int64_t s, void *user) {
    float xs[8], ys[8];
    int i;
    int64_t shape[2] = {8, 1};
    (void)user;
    for (i = 0; i < 8; i++) {
        xs[i] = (float)(vt_rng_uniform(7, 2, (uint64_t)(s * 8 + i)) * 2 - 1);
        ys[i] = 3 * xs[i] - 1;
    }
    vt_backward(c, vt_mse(c, vt_linear(c, vt_from_f32(c, 2, shape, xs), W, b), vt_from_f32(c, 2, shape, ys)));
    vt_optim_step(c, opt, 0.05);
    return vt_status_of(c);
}

int main(int argc, char **argv) {
    vt_program prog;
    vt_desc d = vt_desc_default();
    vt_report r;
    const char *log = argc > 1 ? argv[1] : "build/compile_check.vtlog";
    prog.setup = setup; prog.step = step; prog.on_step = NULL; prog.user = NULL;
    d.log_path = log;
    if (vt_run(&d, &prog, 100, &r) != VT_OK) { printf("train: %s\n", r.message); return 1; }
    d.role = VT_ROLE_AUDIT;
    vt_order_parse(&d.order, "threads:1,chaos:5");
    if (vt_run(&d, &prog, 100, &r) != VT_OK) { printf("audit: %s\n", r.message); return 1; }
    return 0;
}
