/* train_digits.c - an MLP on the UCI handwritten digits (8x8), with vtrain.

   make train_digits && ./build/train_digits [--steps N] [--order ORDER]
       [--mode verified|round-only|native|fp64] [--log FILE] [--audit]

   Trains 64 -> 128 -> 10 (ReLU) with AdamW on 1,437 images and reports the
   accuracy on the 360 held out. With --log the run writes its rounding log
   and per-step commitments; --audit replays a logged run (use another
   --order) and checks every step's weights against the trainer's. */
#define VTRAIN_IMPLEMENTATION
#include "../vtrain.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    vt_digits data;
    int ntrain, ntest, batch;
    int64_t steps;
    int32_t *perm;       /* a fixed shuffle of the samples: train first */
    vt_mlp mlp;
    vt_optim *opt;
    double lr;
} app;

static vt_status setup(vt_ctx *c, void *u) {
    app *a = (app *)u;
    int sizes[3] = {64, 128, 10};
    vt_adamw_desc ad = vt_adamw_default();
    vt_mlp_init(c, &a->mlp, 2, sizes, 0, 1234);
    ad.lr = a->lr;
    ad.weight_decay = 1e-4;
    a->opt = vt_adamw_create(c, &ad);
    return vt_status_of(c);
}

/* one training step: a batch drawn by (seed, epoch, index) */
static vt_status step(vt_ctx *c, int64_t s, void *u) {
    app *a = (app *)u;
    int i;
    int64_t xs[2], ys[1], idx[256];
    float x[256 * 64];
    int32_t y[256];
    vt_tensor *loss;
    for (i = 0; i < a->batch; i++) {
        uint64_t k = (uint64_t)(s * a->batch + i);
        uint64_t epoch = k / (uint64_t)a->ntrain, j = vt_shuffle(99, epoch, k % (uint64_t)a->ntrain, (uint64_t)a->ntrain);
        int n = a->perm[j];
        idx[i] = n;
        memcpy(x + i * 64, a->data.x + n * 64, sizeof(float) * 64);
        y[i] = a->data.y[n];
    }
    vt_commit_batch(c, idx, a->batch);
    xs[0] = a->batch; xs[1] = 64; ys[0] = a->batch;
    loss = vt_cross_entropy(c, vt_mlp_forward(c, &a->mlp, vt_from_f32(c, 2, xs, x)), vt_from_i32(c, 1, ys, y));
    vt_backward(c, loss);
    vt_optim_step(c, a->opt, vt_lr_cosine(s, 20, a->steps, a->lr, a->lr * 0.1));
    if (s % 100 == 0 || s == a->steps - 1) printf("step %5lld  loss %.4f\n", (long long)s, vt_item(c, loss));
    return vt_status_of(c);
}

static double accuracy(vt_ctx *c, app *a, int from, int n) {
    int i, j, correct = 0;
    int64_t xs[2];
    float *x = (float *)calloc((size_t)n * 64, sizeof(float));
    vt_tensor *logits;
    for (i = 0; i < n; i++) memcpy(x + i * 64, a->data.x + a->perm[from + i] * 64, sizeof(float) * 64);
    vt_eval_begin(c);
    xs[0] = n; xs[1] = 64;
    logits = vt_mlp_forward(c, &a->mlp, vt_from_f32(c, 2, xs, x));
    if (logits) {
        double *l = (double *)malloc(sizeof(double) * 10 * (size_t)n);
        vt_read_f64(c, logits, l);
        for (i = 0; i < n; i++) {
            int best = 0;
            for (j = 1; j < 10; j++) if (l[i * 10 + j] > l[i * 10 + best]) best = j;
            correct += best == a->data.y[a->perm[from + i]];
        }
        free(l);
    }
    vt_eval_end(c);
    free(x);
    return (double)correct / n;
}

int main(int argc, char **argv) {
    app a;
    vt_desc d = vt_desc_default();
    vt_program prog;
    vt_ctx *c;
    vt_report r;
    const char *path = "data/digits.csv";
    int i, audit = 0;
    memset(&a, 0, sizeof a);
    a.steps = 600; a.batch = 64; a.lr = 3e-3;
    for (i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--steps") && i + 1 < argc) a.steps = atoll(argv[++i]);
        else if (!strcmp(argv[i], "--order") && i + 1 < argc) {
            if (vt_order_parse(&d.order, argv[++i]) != VT_OK) { fprintf(stderr, "%s\n", vt_last_error()); return 2; }
        } else if (!strcmp(argv[i], "--mode") && i + 1 < argc) {
            const char *m = argv[++i];
            d.mode = !strcmp(m, "native") ? VT_MODE_NATIVE : !strcmp(m, "round-only") ? VT_MODE_ROUND_ONLY
                   : !strcmp(m, "fp64") ? VT_MODE_FP64 : VT_MODE_VERIFIED;
        } else if (!strcmp(argv[i], "--log") && i + 1 < argc) d.log_path = argv[++i];
        else if (!strcmp(argv[i], "--audit")) audit = 1;
        else if (!strcmp(argv[i], "--data") && i + 1 < argc) path = argv[++i];
        else { fprintf(stderr, "usage: %s [--steps N] [--order ORDER] [--mode M] [--log FILE] [--audit] [--data FILE]\n", argv[0]); return 2; }
    }
    if (vt_digits_load(path, &a.data) != VT_OK) { fprintf(stderr, "error: %s\n", vt_last_error()); return 1; }
    a.perm = (int32_t *)malloc(sizeof(int32_t) * (size_t)a.data.n);
    for (i = 0; i < a.data.n; i++) a.perm[i] = (int32_t)vt_shuffle(7, 0, (uint64_t)i, (uint64_t)a.data.n);
    a.ntest = a.data.n / 5;
    a.ntrain = a.data.n - a.ntest;
    d.role = audit ? VT_ROLE_AUDIT : VT_ROLE_TRAIN;
    c = vt_create(&d);
    if (!c) { fprintf(stderr, "error: %s\n", vt_last_error()); return 1; }
    prog.setup = setup; prog.step = step; prog.on_step = NULL; prog.user = &a;
    setup(c, &a);
    printf("digits: %d train, %d test; mode %s, %s\n", a.ntrain, a.ntest, vt_mode_name(d.mode), audit ? "auditing" : "training");
    vt_run_ctx(c, &prog, a.steps, &r);
    if (r.status != VT_OK) { fprintf(stderr, "error: %s\n", r.message); vt_destroy(c); return 1; }
    {
        char hex[65];
        vt_hex(r.digest, 32, hex);
        printf("%lld steps in %.2f s (%.2f ms/step); weights %.16s...\n", (long long)r.steps, r.seconds,
               1e3 * r.seconds / (double)r.steps, hex);
        printf("log: %lld entries over %lld rounded values (%.1f per million), %lld bytes\n", (long long)r.log.entries,
               (long long)r.log.values, 1e6 * (double)r.log.entries / (double)(r.log.values ? r.log.values : 1), (long long)r.log.bytes);
    }
    printf("train accuracy %.2f%%, test accuracy %.2f%%\n", 100 * accuracy(c, &a, 0, a.ntrain), 100 * accuracy(c, &a, a.ntrain, a.ntest));
    vt_destroy(c);
    vt_digits_free(&a.data);
    free(a.perm);
    return 0;
}
