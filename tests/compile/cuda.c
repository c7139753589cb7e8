/* The CUDA backend in one translation unit, compiled as C and as C++ with
   gcc and clang: trains a few steps of a tiny model on the emulated GPU with
   a log, audits it on the CPU, and checks that asking for a real GPU on a
   machine without one fails with a message rather than a crash. */
#define VTRAIN_IMPLEMENTATION
#define VTRAIN_CUDA
#define VTRAIN_CUDA_EMU
#include "../../vtrain.h"
#include <stdio.h>

static vt_tensor *W, *b;
static vt_optim *opt;

static vt_status setup(vt_ctx *c, void *user) {
    int64_t wshape[2] = {4, 8}, bshape[1] = {4};
    vt_adamw_desc ad = vt_adamw_default();
    (void)user;
    W = vt_param(c, "W", 2, wshape);
    b = vt_param(c, "b", 1, bshape);
    vt_init_normal(c, W, 42, 1, 0.5);
    vt_init_const(c, b, 0.0);
    ad.lr = 0.05;
    opt = vt_adamw_create(c, &ad);
    return vt_status_of(c);
}

static vt_status step(vt_ctx *c, int64_t s, void *user) {
    float xs[16 * 8], ys[16 * 4];
    int i;
    int64_t xshape[2] = {16, 8}, yshape[2] = {16, 4};
    vt_tensor *x, *y, *h;
    (void)user;
    for (i = 0; i < 16 * 8; i++) xs[i] = (float)(vt_rng_uniform(7, (uint64_t)s, (uint64_t)i) * 2 - 1);
    for (i = 0; i < 16 * 4; i++) ys[i] = xs[2 * i] - 0.5f * xs[2 * i + 1];
    x = vt_from_f32(c, 2, xshape, xs);
    y = vt_from_f32(c, 2, yshape, ys);
    h = vt_linear(c, x, W, b);
    h = vt_gelu(c, h);
    vt_backward(c, vt_mse(c, h, y));
    vt_optim_step(c, opt, 0.05);
    return vt_status_of(c);
}

int main(int argc, char **argv) {
    vt_program prog;
    vt_desc d = vt_desc_default();
    vt_report r;
    const char *log = argc > 1 ? argv[1] : "build/compile_check_cuda.vtlog";
    prog.setup = setup; prog.step = step; prog.on_step = NULL; prog.user = NULL;
    d.log_path = log;
    d.backend = VT_BACKEND_CUDA;
    d.device = VT_CUDA_EMULATOR;
    if (vt_run(&d, &prog, 20, &r) != VT_OK) { printf("train on the emulated GPU: %s\n", r.message); return 1; }
    d.backend = VT_BACKEND_CPU;
    d.role = VT_ROLE_AUDIT;
    if (vt_run(&d, &prog, 20, &r) != VT_OK) { printf("audit on the CPU: %s\n", r.message); return 1; }
    d = vt_desc_default();
    d.backend = VT_BACKEND_CUDA;
    d.device = 0;
    {
        vt_ctx *c = vt_create(&d); /* a GPU if there is one, else NULL and a reason */
        if (!c && !vt_last_error()[0]) { printf("vt_create failed without a message\n"); return 1; }
        vt_destroy(c);
    }
    return 0;
}
