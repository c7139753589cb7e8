/* tests/test_cnn.c - convolutional networks (issue 16): the digits CNN and a
   narrow ResNet-18 trained in one order and audited in others (every step's
   state identical, batch-norm running statistics included), native mode
   diverging, checkpoint and resume in the middle of a run with batch norm,
   evaluation with the running statistics, the CIFAR-10 loader and its
   augmentation, and bad input (each a clear error, nothing aborts). */
#define VTRAIN_IMPLEMENTATION
#include "../vtrain.h"
#include "test.h"
#include "../examples/digitscnn.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static vt_digits g_digits;
static int load_digits(void) {
    static int done = 0;
    if (!done) done = vt_digits_load("data/digits.csv", &g_digits) == VT_OK ? 1 : -1;
    return done == 1;
}

/* a small digits CNN: width 4, batch 16, over 8 steps of schedule */
static digitscnn g_cnn;
static vt_program cnn_program(void) {
    g_cnn = digitscnn_new(&g_digits);
    g_cnn.width = 4; g_cnn.batch = 16; g_cnn.steps = 8; g_cnn.commit = 1;
    return digitscnn_program(&g_cnn);
}

/* a ResNet-18 of width 4 (4, 8, 16, 32 channels) on CIFAR-shaped random
   images (B 4, 3x32x32), SGD with momentum */
typedef struct { vt_resnet m; vt_optim *opt; int B; } rn_app;
static rn_app g_rn;
static vt_status rn_setup(vt_ctx *c, void *u) {
    rn_app *a = (rn_app *)u;
    vt_resnet_config cfg = vt_resnet_default(18);
    vt_sgd_desc sd = vt_sgd_default();
    cfg.width = 4;
    vt_resnet_free(&a->m);
    vt_resnet_init(c, &a->m, &cfg, 3);
    sd.lr = 0.05; sd.momentum = 0.9; sd.weight_decay = 5e-4;
    a->opt = vt_sgd_create(c, &sd);
    return vt_status_of(c);
}
static vt_status rn_step(vt_ctx *c, int64_t s, void *u) {
    rn_app *a = (rn_app *)u;
    static float x[4 * 3 * 32 * 32];
    int32_t y[4];
    int64_t xs[4] = {4, 3, 32, 32}, ys[1] = {4}, i;
    vt_tensor *lg;
    for (i = 0; i < 4 * 3 * 32 * 32; i++) x[i] = (float)vt_rng_normal(21, (uint64_t)s, (uint64_t)i);
    for (i = 0; i < 4; i++) y[i] = (int32_t)(vt_rng_u64(22, (uint64_t)s, (uint64_t)i) % 10);
    lg = vt_resnet_forward(c, &a->m, vt_from_f32(c, 4, xs, x));
    vt_backward(c, vt_cross_entropy(c, lg, vt_from_i32(c, 1, ys, y)));
    vt_optim_step(c, a->opt, 0.05);
    return vt_status_of(c);
}
static vt_program rn_program(void) {
    vt_program p;
    p.setup = rn_setup; p.step = rn_step; p.on_step = NULL; p.user = &g_rn;
    return p;
}

/* trains with train_order, audits with each of orders; returns how many audits matched every step */
static int train_audit(const vt_program *p, vt_mode mode, const char *log, int64_t steps, const char *train_order,
                       const char **orders, int n, vt_report *tr) {
    vt_desc d = vt_desc_default();
    vt_report r;
    int k, ok = 0;
    d.mode = mode;
    d.log_path = log;
    vt_order_parse(&d.order, train_order);
    vt_run(&d, p, steps, tr);
    CHECK(tr->status == VT_OK, "training (%s) failed: %s", vt_mode_name(mode), tr->message);
    d.role = VT_ROLE_AUDIT;
    for (k = 0; k < n; k++) {
        vt_order_parse(&d.order, orders[k]);
        vt_run(&d, p, steps, &r);
        if (r.status == VT_OK && r.steps == steps) ok++;
        if (mode == VT_MODE_VERIFIED) CHECK(r.status == VT_OK, "audit with order %s: %s", orders[k], r.message);
        else NOTE("native, order %s: %s", orders[k], r.status == VT_OK ? "replayed" : r.message);
    }
    return ok;
}

static const char *orders4[4] = {"threads:1", "threads:2,block:13", "chaos:7,threads:2", "chaos:9,threads:1,nofma"};

TEST(cnn_replays_across_orders) {
    vt_report tr;
    vt_program p;
    int ok;
    if (!load_digits()) { CHECK(0, "cannot load data/digits.csv"); return; }
    p = cnn_program();
    ok = train_audit(&p, VT_MODE_VERIFIED, "build/t_cnn.vtlog", 8, "threads:2", orders4, 4, &tr);
    CHECK(ok == 4, "%d of 4 audits matched", ok);
    NOTE("digits CNN, 8 steps: %lld log entries over %lld values, %lld exact products, %.0f log bytes per step",
         (long long)tr.log.entries, (long long)tr.log.values, (long long)tr.log.exact, (double)tr.log.bytes / 8);
}

TEST(cnn_native_diverges) {
    vt_report tr;
    vt_program p;
    int ok;
    if (!load_digits()) { CHECK(0, "cannot load data/digits.csv"); return; }
    p = cnn_program();
    ok = train_audit(&p, VT_MODE_NATIVE, "build/t_cnnn.vtlog", 8, "threads:2", orders4, 4, &tr);
    CHECK(ok == 0, "native mode replayed under %d of 4 other orders: the orders are not really different", ok);
}

TEST(resnet18_narrow_replays_across_orders) {
    vt_report tr;
    vt_program p = rn_program();
    const char *o[2] = {"chaos:3,threads:2,nofma", "threads:1,block:29"};
    int ok = train_audit(&p, VT_MODE_VERIFIED, "build/t_rn18.vtlog", 3, "threads:2", o, 2, &tr);
    CHECK(ok == 2, "%d of 2 audits matched", ok);
    NOTE("ResNet-18 width 4, B 4, 3 steps: %lld log entries over %lld values, %lld exact products, %.0f log bytes per step",
         (long long)tr.log.entries, (long long)tr.log.values, (long long)tr.log.exact, (double)tr.log.bytes / 3);
    vt_resnet_free(&g_rn.m);
}

TEST(resnet18_native_diverges) {
    vt_report tr;
    vt_program p = rn_program();
    const char *o[1] = {"chaos:3,threads:2,nofma"};
    int ok = train_audit(&p, VT_MODE_NATIVE, "build/t_rn18n.vtlog", 2, "threads:2", o, 1, &tr);
    CHECK(ok == 0, "native ResNet-18 replayed under another order");
    vt_resnet_free(&g_rn.m);
}

/* The running statistics are state: they move in training, they are in the
   state digest (a change to one value changes it), and evaluation uses them. */
TEST(running_statistics_are_state) {
    vt_desc d = vt_desc_default();
    vt_program p;
    vt_report r;
    vt_ctx *c;
    unsigned char a[32], b[32];
    double st[8], st0[8];
    float v[8];
    int64_t xs[4] = {3, 1, 8, 8}, i;
    vt_tensor *y1, *y2;
    double o1[3 * 10], o2[3 * 10]; /* 3 images, 10 classes */
    if (!load_digits()) { CHECK(0, "cannot load data/digits.csv"); return; }
    p = cnn_program();
    c = vt_create(&d);
    if (!c) { CHECK(0, "%s", vt_last_error()); return; }
    p.setup(c, p.user);
    vt_read_f64(c, g_cnn.s1, st0);
    vt_run_ctx(c, &p, 3, &r);
    CHECK(r.status == VT_OK, "%s", r.message);
    vt_read_f64(c, g_cnn.s1, st);
    CHECK(st[0] != st0[0] && st[4] != st0[4], "the running mean and variance did not move (%g %g)", st[0], st[4]);
    vt_weights_digest(c, a);
    for (i = 0; i < 8; i++) v[i] = (float)st[i];
    v[5] = nextafterf(v[5], 10.0f);
    vt_write_f32(c, g_cnn.s1, v);
    vt_weights_digest(c, b);
    CHECK(memcmp(a, b, 32) != 0, "one running variance changed by one ulp, the state digest did not");
    /* evaluation: the same input gives the same output twice (no batch
       statistics), and another running mean changes it */
    {
        float img[3 * 64];
        vt_tensor *x;
        for (i = 0; i < 3 * 64; i++) img[i] = g_digits.x[i];
        vt_eval_begin(c);
        x = vt_from_f32(c, 4, xs, img);
        y1 = digitscnn_forward(c, &g_cnn, x);
        vt_read_f64(c, y1, o1);
        vt_eval_end(c);
        v[1] += 0.5f;
        vt_write_f32(c, g_cnn.s1, v);
        vt_eval_begin(c);
        x = vt_from_f32(c, 4, xs, img);
        y2 = digitscnn_forward(c, &g_cnn, x);
        vt_read_f64(c, y2, o2);
        vt_eval_end(c);
        CHECK(vt_status_of(c) == VT_OK, "%s", vt_error_message(c));
        CHECK(memcmp(o1, o2, sizeof o1) != 0, "evaluation did not use the running mean");
    }
    vt_destroy(c);
}

/* A transcript with checkpoints every 2 steps: a run stopped at step 5 and
   resumed to 8 ends with the leaves of an unbroken 8-step run (the running
   statistics come back from the checkpoint), and the resumed transcript
   audits in another order. */
TEST(checkpoint_resume_with_batch_norm) {
    vt_desc d = vt_desc_default();
    vt_program p;
    vt_report r;
    vt_leaf_info *la = NULL, *lb = NULL;
    int64_t na = 0, nb = 0, k;
    const char *man[] = {"program=test-digits-cnn", NULL};
    if (!load_digits()) { CHECK(0, "cannot load data/digits.csv"); return; }
    if (system("rm -rf build/t_cnn_full build/t_cnn_res") != 0) {}
    d.manifest = man;
    d.ckpt_every = 2;
    vt_order_parse(&d.order, "threads:2");
    p = cnn_program();
    d.transcript = "build/t_cnn_full";
    vt_run(&d, &p, 8, &r);
    CHECK(r.status == VT_OK, "unbroken run: %s", r.message);
    p = cnn_program();
    d.transcript = "build/t_cnn_res";
    vt_run(&d, &p, 5, &r);
    CHECK(r.status == VT_OK, "first part: %s", r.message);
    p = cnn_program();
    d.resume = 1;
    vt_order_parse(&d.order, "threads:1");
    vt_run(&d, &p, 8, &r);
    CHECK(r.status == VT_OK, "resume: %s", r.message);
    NOTE("resumed: ran %lld steps", (long long)r.steps);
    CHECK(vt_transcript_leaves("build/t_cnn_full", &la, &na) == VT_OK && vt_transcript_leaves("build/t_cnn_res", &lb, &nb) == VT_OK,
          "%s", vt_last_error());
    CHECK(na == 8 && nb == 8, "steps %lld and %lld", (long long)na, (long long)nb);
    for (k = 0; k < na && k < nb; k++)
        if (memcmp(la[k].leaf, lb[k].leaf, 32)) break;
    CHECK(k == 8, "leaves differ from step %lld", (long long)k);
    vt_free_leaves(la);
    vt_free_leaves(lb);
    d.resume = 0;
    d.role = VT_ROLE_AUDIT;
    vt_order_parse(&d.order, "chaos:4,nofma");
    p = cnn_program();
    vt_run(&d, &p, 8, &r);
    CHECK(r.status == VT_OK, "audit of the resumed transcript: %s", r.message);
}

/* --- bad input --------------------------------------------------------------------- */

/* an op on a fresh context inside a step: the error and its message */
static vt_status bad_op(int which, char *msg, size_t n) {
    vt_desc d = vt_desc_default();
    vt_ctx *c = vt_create(&d);
    int64_t xs[4] = {2, 3, 5, 5}, ws[4] = {4, 2, 3, 3}, wb[4] = {4, 3, 7, 7}, bs[1] = {5};
    vt_tensor *x, *w, *y = NULL;
    vt_status st;
    if (!c) return VT_ERR_ARG;
    vt_step_begin(c);
    x = vt_new(c, VT_F32, 4, xs);
    if (which == 0) { w = vt_new(c, VT_F32, 4, ws); y = vt_conv2d(c, x, w, NULL, 1, 1, 1, 1); }  /* C 3, w takes 2 */
    if (which == 1) { w = vt_new(c, VT_F32, 4, wb); y = vt_conv2d(c, x, w, NULL, 1, 0, 1, 1); }  /* 7x7 on 5x5 */
    if (which == 2) { w = vt_new(c, VT_F32, 4, ws); y = vt_conv2d(c, x, w, NULL, 1, 1, 1, 2); }  /* groups 2, C 3 */
    if (which == 3) { w = vt_new(c, VT_F32, 1, bs); y = vt_batchnorm2d(c, x, w, w, NULL, 0.1, 1e-5); } /* w (5), C 3 */
    if (which == 4) y = vt_maxpool2d(c, x, 7, 1, 0);
    if (which == 5) { int64_t s2[2] = {2, 3}; y = vt_conv2d(c, vt_new(c, VT_F32, 2, s2), x, NULL, 1, 0, 1, 1); }
    st = vt_status_of(c);
    snprintf(msg, n, "%s", vt_error_message(c));
    CHECK(y == NULL, "case %d: the op returned a tensor", which);
    vt_step_end(c);
    vt_destroy(c);
    return st;
}

TEST(bad_shapes_are_clear_errors) {
    char m[512];
    CHECK(bad_op(0, m, sizeof m) == VT_ERR_SHAPE && strstr(m, "channels do not match") && strstr(m, "C = 3"), "%s", m);
    NOTE("%s", m);
    CHECK(bad_op(1, m, sizeof m) == VT_ERR_SHAPE && strstr(m, "larger than the padded input"), "%s", m);
    NOTE("%s", m);
    CHECK(bad_op(2, m, sizeof m) == VT_ERR_SHAPE && strstr(m, "divisible by groups"), "%s", m);
    NOTE("%s", m);
    CHECK(bad_op(3, m, sizeof m) == VT_ERR_SHAPE && strstr(m, "C = 3"), "%s", m);
    NOTE("%s", m);
    CHECK(bad_op(4, m, sizeof m) == VT_ERR_SHAPE && strstr(m, "maxpool2d") && strstr(m, "larger than the padded input"), "%s", m);
    NOTE("%s", m);
    CHECK(bad_op(5, m, sizeof m) == VT_ERR_SHAPE && strstr(m, "(N,C,H,W)"), "%s", m);
    NOTE("%s", m);
}

/* writes n CIFAR records (labels i % 10, pixels from i), plus `extra` stray bytes */
static void write_cifar(const char *path, int n, int extra, int bad_label_at) {
    FILE *f = fopen(path, "wb");
    int i, j;
    if (!f) return;
    for (i = 0; i < n; i++) {
        unsigned char rec[3073];
        rec[0] = (unsigned char)(i == bad_label_at ? 10 : i % 10);
        for (j = 0; j < 3072; j++) rec[1 + j] = (unsigned char)((i * 7 + j * 13) & 0xff);
        fwrite(rec, 1, sizeof rec, f);
    }
    for (i = 0; i < extra; i++) fputc(1, f);
    fclose(f);
}

TEST(cifar_loader) {
    vt_cifar d;
    const char *ok[2] = {"build/t_cifar1.bin", "build/t_cifar2.bin"}, *tr[2] = {"build/t_cifar1.bin", "build/t_cifar_trunc.bin"};
    const char *bl[1] = {"build/t_cifar_label.bin"}, *miss[1] = {"build/t_cifar_missing.bin"};
    float a[3072], b[3072], p[3072];
    int i, same = 1, flipped = 0;
    write_cifar(ok[0], 5, 0, -1);
    write_cifar(ok[1], 3, 0, -1);
    write_cifar(tr[1], 4, 1000, -1);
    write_cifar(bl[0], 6, 0, 4);
    CHECK(vt_cifar_load(ok, 2, &d) == VT_OK && d.n == 8, "%s (%d images)", vt_last_error(), d.n);
    CHECK(d.y[5] == 0 && d.y[7] == 2 && d.x[5 * 3072 + 1] == (unsigned char)13, "records read wrong");
    /* augmentation: a function of (seed, stream, index) only; crops and flips happen */
    for (i = 0; i < 40; i++) {
        int k;
        vt_cifar_image(&d, 1, 1, 9, 3, (uint64_t)i, a);
        vt_cifar_image(&d, 1, 1, 9, 3, (uint64_t)i, b);
        same &= !memcmp(a, b, sizeof a);
        vt_cifar_image(&d, 1, 0, 0, 0, 0, p);
        for (k = 0; k < 3072 && a[k] == p[k]; k++) {}
        flipped += k < 3072;
    }
    CHECK(same, "the same (seed, stream, index) gave two different augmentations");
    CHECK(flipped >= 30, "only %d of 40 augmented images differ from the plain one", flipped);
    vt_cifar_free(&d);
    CHECK(vt_cifar_load(tr, 2, &d) == VT_ERR_TRUNCATED && strstr(vt_last_error(), "t_cifar_trunc.bin") && strstr(vt_last_error(), "record 4"),
          "%s", vt_last_error());
    NOTE("%s", vt_last_error());
    CHECK(d.n == 0 && !d.x, "a failed load left data behind");
    CHECK(vt_cifar_load(bl, 1, &d) == VT_ERR_FORMAT && strstr(vt_last_error(), "record 4") && strstr(vt_last_error(), "label 10"),
          "%s", vt_last_error());
    NOTE("%s", vt_last_error());
    CHECK(vt_cifar_load(miss, 1, &d) == VT_ERR_IO && strstr(vt_last_error(), "t_cifar_missing.bin"), "%s", vt_last_error());
    NOTE("%s", vt_last_error());
}

/* a NaN in a batch: the step fails with a message that names the point, and
   nothing aborts */
TEST(nan_in_batch_is_named) {
    vt_desc d = vt_desc_default();
    vt_ctx *c = vt_create(&d);
    vt_resnet m;
    vt_resnet_config cfg = vt_resnet_default(18);
    static float x[2 * 3 * 8 * 8];
    int64_t xs[4] = {2, 3, 8, 8};
    if (!c) { CHECK(0, "%s", vt_last_error()); return; }
    cfg.width = 2;
    vt_resnet_init(c, &m, &cfg, 1);
    x[77] = NAN;
    vt_step_begin(c);
    vt_resnet_forward(c, &m, vt_from_f32(c, 4, xs, x));
    CHECK(vt_status_of(c) == VT_ERR_NONFINITE && strstr(vt_error_message(c), "conv2d"), "%s", vt_error_message(c));
    NOTE("%s", vt_error_message(c));
    vt_step_end(c);
    vt_resnet_free(&m);
    vt_destroy(c);
}

/* A FUSED CAST over a convolution's images (vt__mm_batch without bounds: fp64,
   native, round-only): each image's product cast (checked) tile by tile,
   against the point's own pass (vt__no_gfuse): the digits CNN's states
   after 4 steps in each mode, on one thread and on two; and a NaN in one
   image names the same conv2d element either way. */
static void cast_nan_message(vt_mode mode, const char *order, char *msg, size_t n) {
    vt_desc d = vt_desc_default();
    vt_ctx *c;
    vt_resnet m;
    vt_resnet_config cfg = vt_resnet_default(18);
    static float x[3 * 3 * 8 * 8];
    int64_t xs[4] = {3, 3, 8, 8};
    d.mode = mode;
    vt_order_parse(&d.order, order);
    c = vt_create(&d);
    cfg.width = 2;
    vt_resnet_init(c, &m, &cfg, 1);
    memset(x, 0, sizeof x);
    x[2 * 192 + 77] = NAN; /* image 2 */
    x[2 * 192 + 140] = NAN;
    vt_step_begin(c);
    vt_resnet_forward(c, &m, vt_from_f32(c, 4, xs, x));
    snprintf(msg, n, "%s", vt_error_message(c));
    vt_step_end(c);
    vt_resnet_free(&m);
    vt_destroy(c);
}
TEST(conv_fused_casts_same_bits) {
    static const vt_mode modes[3] = {VT_MODE_FP64, VT_MODE_NATIVE, VT_MODE_ROUND_ONLY};
    static const char *ords[2] = {"threads:1", "threads:2"};
    int64_t casts = vt__gcast;
    int m, o, f;
    if (!load_digits()) { CHECK(0, "cannot load data/digits.csv"); return; }
    for (m = 0; m < 3; m++)
        for (o = 0; o < 2; o++) {
            vt_report r[2];
            char msg[2][512];
            for (f = 0; f < 2; f++) {
                vt_desc d = vt_desc_default();
                vt_program p = cnn_program();
                d.mode = modes[m];
                vt_order_parse(&d.order, ords[o]);
                vt__no_gfuse = !f;
                vt_run(&d, &p, 4, &r[f]);
                cast_nan_message(modes[m], ords[o], msg[f], sizeof msg[f]);
                vt__no_gfuse = 0;
                CHECK(r[f].status == VT_OK, "%s %s: %s", vt_mode_name(modes[m]), ords[o], r[f].message);
            }
            CHECK(!memcmp(r[0].digest, r[1].digest, 32), "%s %s: the states differ", vt_mode_name(modes[m]), ords[o]);
            CHECK(!strcmp(msg[0], msg[1]) && strstr(msg[1], "conv2d"), "%s %s: the pass says '%s', the fused form '%s'",
                  vt_mode_name(modes[m]), ords[o], msg[0], msg[1]);
        }
    CHECK(vt__gcast > casts, "no output was cast in its kernel: the test compares the pass with itself");
}

/* A convolution's products over all images share one bound computation
   (vt__mm_batch: lazy, with the old values the exact evaluation keeps where
   dx accumulates): every conv2d output's bound must be the bound of its own
   image's product, as the per-image path (vt__no_lazy) writes it, and the
   values must not move. Two convs read x, so dx accumulates onto old
   values, which (near weights, mirrored targets) it nearly cancels: the
   old values, not the product, make most of the bound. And the lazy rounding must decide as the written-out bound does:
   for each lazy output, with its bound widened by 2^k (k from 0 to 28:
   from a few open elements to most), the elements vt__lazy_round leaves
   open and the values it casts must be those of vt__cpu_round over every
   element's vt__lazy_e (the caps, old values included, never skip a look
   that an element needs). */
typedef struct { int64_t n; double *x, *e; int lazy, acc; } cv_snap;
static cv_snap g_cv[2][8];
static int g_cvn, g_cvrun;
static int64_t g_cv_open, g_cv_open_acc, g_cv_diff;
static const vt__backend *g_cv_orig;
static vt__backend g_cv_hook;
static void cv_lazy_vs_written(vt__kern *k, const vt__kout *o, const double *e) {
    vt_ctx *c = k->c;
    double *x1 = (double *)malloc(sizeof(double) * (size_t)o->n), *x2 = (double *)malloc(sizeof(double) * (size_t)o->n);
    vt__ents a, b;
    static const int shifts[] = {0, 4, 7, 9, 11, 13, 15, 18, 22, 28};
    int q, sh;
    memset(&a, 0, sizeof a); memset(&b, 0, sizeof b);
    for (q = 0; q < (int)(sizeof shifts / sizeof shifts[0]); q++) {
        int64_t j, na;
        sh = shifts[q];
        memcpy(x1, o->x, sizeof(double) * (size_t)o->n);
        memcpy(x2, o->x, sizeof(double) * (size_t)o->n);
        c->ents.n = 0;
        vt__lazy_round(c, x1, o->lz, vt__pow2(sh), 0, &c->ents);
        na = c->ents.n;
        a.e = (vt__entry *)realloc(a.e, sizeof(vt__entry) * (size_t)(na + 1));
        if (na) memcpy(a.e, c->ents.e, sizeof(vt__entry) * (size_t)na); /* (no entries: ents.e may be NULL) */
        c->ents.n = 0;
        vt__cpu_round(c, x2, e, o->n, vt__pow2(sh), 0, &c->ents);
        g_cv_open += na;
        if (o->lz->c0) g_cv_open_acc += na;
        if (na != c->ents.n) g_cv_diff++;
        for (j = 0; j < na && na == c->ents.n; j++) g_cv_diff += a.e[j].i != c->ents.e[j].i;
        for (j = 0; j < o->n; j++) g_cv_diff += memcmp(&x1[j], &x2[j], 8) != 0;
    }
    c->ents.n = 0;
    free(a.e); free(b.e); free(x1); free(x2);
}
static void cv_hook(vt__kern *k) {
    int i;
    int64_t j;
    g_cv_orig->kernel(k);
    if (k->t->op != VT_OP_CONV2D) return;
    for (i = 0; i < 2; i++) {
        const vt__kout *o = &k->out[i];
        cv_snap *s;
        if (!o->x || g_cvn >= 8) continue;
        s = &g_cv[g_cvrun][g_cvn++];
        s->n = o->n; s->lazy = o->lz != NULL; s->acc = o->lz && o->lz->c0;
        s->x = (double *)malloc(sizeof(double) * (size_t)o->n);
        s->e = (double *)malloc(sizeof(double) * (size_t)o->n);
        memcpy(s->x, o->x, sizeof(double) * (size_t)o->n);
        for (j = 0; j < o->n; j++) s->e[j] = o->lz ? vt__lazy_e(o->lz, j) : o->e ? o->e[j] : -1;
        if (o->lz) cv_lazy_vs_written(k, o, s->e);
    }
}

TEST(conv_batched_bound_is_each_images_bound) {
    int run, i, nlazy = 0, nacc = 0;
    int64_t j, bad_x = 0, bad_e = 0, looked = 0;
    double worst = 0;
    for (run = 0; run < 2; run++) {
        vt_desc d = vt_desc_default();
        vt_ctx *c;
        int64_t xs[4] = {3, 4, 7, 7}, ws[4] = {5, 4, 3, 3};
        vt_tensor *x, *w1, *w2, *y1, *y2, *t1, *t2;
        float tv[3 * 5 * 7 * 7], tv2[3 * 5 * 7 * 7];
        vt_order_parse(&d.order, "threads:2");
        c = vt_create(&d);
        if (!c) { CHECK(0, "vt_create: %s", vt_last_error()); return; }
        g_cv_orig = c->be; g_cv_hook = *c->be; g_cv_hook.kernel = cv_hook; c->be = &g_cv_hook;
        x = vt_param(c, "x", 4, xs); w1 = vt_param(c, "w1", 4, ws); w2 = vt_param(c, "w2", 4, ws);
        for (j = 0; j < vt_numel(x); j++) vt__d(x)[j] = (float)vt_rng_normal(31, 0, (uint64_t)j);
        for (j = 0; j < vt_numel(w1); j++) { /* w2 near w1, and y2's target 2 y1 - t1: the two dx nearly cancel */
            vt__d(w1)[j] = (float)vt_rng_normal(31, 1, (uint64_t)j);
            vt__d(w2)[j] = (float)(vt__d(w1)[j] * (1 + 0x1p-12 * vt_rng_normal(31, 2, (uint64_t)j)));
        }
        for (j = 0; j < 3 * 5 * 7 * 7; j++) tv[j] = (float)vt_rng_normal(31, 3, (uint64_t)j);
        vt__no_lazy = run;
        vt__no_gfuse = 1; /* the hook reads x before its rounding point (A FUSED PRODUCT would have rounded it) */
        g_cvrun = run; g_cvn = 0;
        vt_step_begin(c);
        xs[1] = 5;
        y1 = vt_conv2d(c, x, w1, NULL, 1, 1, 1, 1);
        y2 = vt_conv2d(c, x, w2, NULL, 1, 1, 1, 1);
        for (j = 0; j < 3 * 5 * 7 * 7; j++) tv2[j] = (float)(2 * vt__d(y1)[j] - tv[j]);
        t1 = vt_from_f32(c, 4, xs, tv);
        t2 = vt_from_f32(c, 4, xs, tv2);
        vt_backward(c, vt_add(c, vt_mse(c, y1, t1), vt_mse(c, y2, t2)));
        vt_step_end(c);
        vt__no_lazy = 0;
        vt__no_gfuse = 0;
        CHECK(vt_status_of(c) == VT_OK, "%s", vt_error_message(c));
        vt_destroy(c);
    }
    CHECK(g_cvn == 6, "captured %d conv outputs, expected 6 (two forwards, two dx, two dw)", g_cvn);
    for (i = 0; i < g_cvn && i < 6; i++) {
        cv_snap *a = &g_cv[0][i], *b = &g_cv[1][i];
        nlazy += a->lazy;
        nacc += a->acc && a->n == 3 * 4 * 7 * 7;
        CHECK(!b->lazy || b->n == 5 * 4 * 3 * 3, "output %d: lazy with vt__no_lazy", i);
        for (j = 0; j < a->n && a->n == b->n; j++) {
            double r = b->e[j] > 0 ? a->e[j] / b->e[j] : (a->e[j] == 0 ? 1 : 0);
            bad_x += memcmp(&a->x[j], &b->x[j], 8) != 0;
            if (!(fabs(r - 1) <= 0x1p-40)) bad_e++;
            worst = VT__MAX(worst, fabs(r - 1));
            looked++;
        }
    }
    CHECK(nlazy >= 4 && nacc >= 1, "%d lazy outputs, %d accumulating dx: the batched forms were not exercised", nlazy, nacc);
    CHECK(g_cv_open > 1000 && g_cv_open_acc > 100 && g_cv_diff == 0,
          "lazy and written-out rounding: %lld open elements (%lld with old values), %lld differences", (long long)g_cv_open,
          (long long)g_cv_open_acc, (long long)g_cv_diff);
    CHECK(bad_x == 0, "%lld values differ between the batched and the per-image bound", (long long)bad_x);
    CHECK(bad_e == 0, "%lld of %lld bounds differ from the per-image bound (worst relative %.3g)", (long long)bad_e,
          (long long)looked, worst);
    NOTE("%lld bounds of 6 conv outputs (%d lazy, %d with old values): worst relative difference from the per-image bound "
         "%.3g; lazy rounding left open the %lld elements (%lld with old values) the written-out bound did", (long long)looked, nlazy,
         nacc, worst, (long long)g_cv_open, (long long)g_cv_open_acc);
    for (run = 0; run < 2; run++)
        for (i = 0; i < 8; i++) { free(g_cv[run][i].x); free(g_cv[run][i].e); g_cv[run][i].x = g_cv[run][i].e = NULL; }
}

/* A convolution's im2col matrices described by their source (vt__wstat):
   the exact evaluation reads an undecided output's column from x (forward)
   or dy (dx) instead of the matrix, and the lazy bound takes the columns'
   statistics from per-pixel ones. For strides, padding, dilation and a
   non-square kernel, every column's terms read from the source must be the
   matrix's, bit for bit, from any starting term, and every column's
   statistics must agree with the matrix's own (vt__stat_task) to 2^-40
   relative, th at most that of the column's true lowest set bit. */
/* line q of statistics derived without the matrix (w) against those of the
   matrix itself (d): sums within 2^-40 relative, the same maximum, and a
   threshold no larger than the true lowest bit's of the line's entries
   X[q sq + k sk], k < K. Notes the worst relative difference. */
static int stat_line_ok(const vt__stat_job *w, const vt__stat_job *d, int64_t q, const double *X, int64_t sq, int64_t sk,
                        int64_t K, double *worst) {
    double r1 = d->n1[q] > 0 ? w->n1[q] / d->n1[q] - 1 : w->n1[q], r2 = d->n2[q] > 0 ? w->n2[q] / d->n2[q] - 1 : w->n2[q], thl;
    int L = VT__LSB_NONE;
    int64_t k;
    for (k = 0; k < K; k++)
        if (X[q * sq + k * sk] != 0) L = VT__MIN(L, vt__lsb(X[q * sq + k * sk]));
    thl = L >= VT__LSB_NONE ? INFINITY : vt__pow2(VT__MIN(L + 53, 1023));
    *worst = VT__MAX(*worst, VT__MAX(fabs(r1), fabs(r2)));
    return fabs(r1) <= 0x1p-40 && fabs(r2) <= 0x1p-40 && w->mx[q] == d->mx[q] && w->th[q] <= thl;
}

TEST(conv_source_gather_and_statistics_match_the_matrix) {
    static const int geo[][6] = { /* KH, KW, s, p, d, C */
        {3, 3, 1, 1, 1, 5}, {3, 3, 2, 1, 1, 4}, {1, 1, 2, 0, 1, 6}, {3, 3, 1, 2, 2, 3}, {3, 2, 2, 0, 1, 4}, {9, 8, 1, 4, 1, 2}};
    int gi;
    int64_t bad_g = 0, bad_s = 0, ncols = 0;
    double worst = 0;
    for (gi = 0; gi < (int)(sizeof geo / sizeof geo[0]); gi++) {
        vt__cgeo g;
        int dx;
        memset(&g, 0, sizeof g);
        g.N = 2; g.C = geo[gi][5]; g.H = 9; g.W = 7; g.OC = 3; g.KH = geo[gi][0]; g.KW = geo[gi][1];
        g.s = geo[gi][2]; g.p = geo[gi][3]; g.d = geo[gi][4]; g.G = 1; g.Cg = g.C; g.OCg = g.OC;
        g.OH = (g.H + 2 * g.p - g.d * (g.KH - 1) - 1) / g.s + 1; g.OW = (g.W + 2 * g.p - g.d * (g.KW - 1) - 1) / g.s + 1;
        g.Kg = g.C * g.KH * g.KW; g.Kd = g.OC * g.KH * g.KW; g.P = g.OH * g.OW; g.HW = g.H * g.W;
        for (dx = 0; dx < 2; dx++) {
            int64_t SC = dx ? g.OC : g.C, SH = dx ? g.OH : g.H, SW = dx ? g.OW : g.W, KR = dx ? g.Kd : g.Kg;
            int64_t NC = dx ? g.N * g.HW : g.N * g.P, nc = dx ? g.HW : g.P, ns = g.N * SC * SH * SW, i, q, k0;
            double *S = (double *)malloc(sizeof(double) * (size_t)ns), *M = (double *)malloc(sizeof(double) * (size_t)(KR * NC));
            double *st = (double *)malloc(sizeof(double) * (size_t)(8 * NC + 8)), piece[600];
            int *lsb = (int *)malloc(sizeof(int) * (size_t)(NC + 1));
            vt__wstat w;
            vt__stat_job sd, sw;
            vt__col_job cj;
            for (i = 0; i < ns; i++) /* binary32 values, some zero, some of few bits */
                S[i] = i % 7 == 3 ? 0.0 : i % 11 == 5 ? (double)(i % 5) / 8 : (float)vt_rng_normal(91, (uint64_t)gi, (uint64_t)i);
            cj.g = &g; cj.src = S; cj.dst = M;
            if (dx) vt__dcol_task(&cj, 0, g.Kd, 0); else vt__im2col_task(&cj, 0, g.Kg, 0);
            memset(&w, 0, sizeof w);
            w.S = S; w.N = g.N; w.C = SC; w.H = SH; w.W = SW; w.OH = dx ? g.H : g.OH; w.OW = dx ? g.W : g.OW;
            w.KH = g.KH; w.KW = g.KW; w.s = g.s; w.p = g.p; w.d = g.d; w.dx = dx;
            w.pix = (double *)malloc(sizeof(double) * (size_t)(5 * ns / SC + 1));
            for (q = 0; q < NC; q++) /* every column, from several starting terms */
                for (k0 = 0; k0 < KR; k0 += 1 + KR / 3) {
                    int64_t k1 = VT__MIN(KR, k0 + 600), k;
                    vt__wstat_gather(&w, q / nc, q % nc, k0, k1, piece);
                    for (k = k0; k < k1; k++) bad_g += memcmp(&piece[k - k0], &M[k * NC + q], 8) != 0;
                }
            memset(&sd, 0, sizeof sd);
            sd.X = M; sd.s_outer = 1; sd.s_k = NC; sd.K = KR; sd.n1 = st; sd.n2 = st + NC; sd.mx = st + 2 * NC; sd.th = st + 3 * NC;
            sd.lsb = lsb;
            vt__stat_task(&sd, 0, NC, 0);
            sw = sd;
            sw.n1 = st + 4 * NC; sw.n2 = st + 5 * NC; sw.mx = st + 6 * NC; sw.th = st + 7 * NC;
            {
                vt__wstat_job pj;
                vt__wcol_job cw;
                pj.w = &w; cw.w = &w; cw.sb = &sw;
                vt__wstat_pix_task(&pj, 0, g.N, 0);
                vt__wstat_col_task(&cw, 0, NC, 0);
            }
            for (q = 0; q < NC; q++) {
                if (!stat_line_ok(&sw, &sd, q, M, 1, NC, KR, &worst) && bad_s++ == 0)
                    CHECK(0, "geometry %d, %s, column %lld: n1 %.17g / %.17g, n2 %.17g / %.17g, mx %g / %g, th %g / %g", gi,
                          dx ? "dcol" : "col", (long long)q, sw.n1[q], sd.n1[q], sw.n2[q], sd.n2[q], sw.mx[q], sd.mx[q], sw.th[q],
                          sd.th[q]);
                ncols++;
            }
            if (!dx) { /* col's rows (the weight gradient's B lines) from x: vt__wstat_lines */
                vt__stat_job rd, rw;
                vt__wline_job lj;
                double *rs = (double *)malloc(sizeof(double) * (size_t)(8 * KR + 8));
                int *rl = (int *)malloc(sizeof(int) * (size_t)(KR + 1));
                memset(&rd, 0, sizeof rd);
                rd.X = M; rd.s_outer = NC; rd.s_k = 1; rd.K = NC; rd.n1 = rs; rd.n2 = rs + KR; rd.mx = rs + 2 * KR; rd.th = rs + 3 * KR;
                rd.lsb = rl;
                vt__stat_task(&rd, 0, KR, 0);
                rw = rd;
                rw.n1 = rs + 4 * KR; rw.n2 = rs + 5 * KR; rw.mx = rs + 6 * KR; rw.th = rs + 7 * KR;
                free(w.pix);
                w.lines = 1;
                w.pix = (double *)malloc(sizeof(double) * (size_t)(4 * g.HW + 1));
                lj.w = &w; lj.sb = &rw;
                vt__wstat_line_task(&lj, 0, g.C, 0);
                for (q = 0; q < KR; q++) {
                    if (!stat_line_ok(&rw, &rd, q, M, NC, 1, NC, &worst) && bad_s++ == 0)
                        CHECK(0, "geometry %d, col row %lld: n1 %.17g / %.17g, n2 %.17g / %.17g, mx %g / %g, th %g / %g", gi,
                              (long long)q, rw.n1[q], rd.n1[q], rw.n2[q], rd.n2[q], rw.mx[q], rd.mx[q], rw.th[q], rd.th[q]);
                    ncols++;
                }
                free(rs); free(rl);
            }
            free(S); free(M); free(st); free(lsb); free(w.pix);
        }
    }
    CHECK(bad_g == 0, "%lld terms read from the source differ from the im2col matrix", (long long)bad_g);
    CHECK(bad_s == 0, "%lld column statistics differ from the matrix's", (long long)bad_s);
    NOTE("%lld columns of 6 geometries, forward and dx, and col's rows: terms identical, statistics within %.3g relative", (long long)ncols, worst);
}

/* The exact evaluation of a convolution's undecided outputs, column by
   column from the source image (vt__exact_cols), must give the definition
   (vt__xprod_value, the superaccumulator) for every output: forward and dx,
   a stride, a kernel with more terms than one gathered piece (VT__XC) and
   a tail that is not a multiple of the lanes, several outputs per column,
   and the entries cut into tasks anywhere. */
TEST(conv_exact_columns_are_the_definition) {
    static const int geo[][7] = {{3, 3, 1, 1, 1, 461, 5}, {3, 3, 2, 1, 1, 5, 461}, {3, 2, 1, 0, 1, 7, 3}}; /* KH, KW, s, p, d, C, OC */
    int gi, dx;
    int64_t bad = 0, total = 0;
    for (gi = 0; gi < 3; gi++)
        for (dx = 0; dx < 2; dx++) {
            vt__cgeo g;
            vt__wstat w;
            vt__col_job cj;
            vt__xprod xp;
            vt__exact_job ej;
            void *wb[1];
            vt__ents at;
            int64_t SC, SH, SW, KR, NC, nc, ns, rows, nout, i;
            double *S, *Mx, *A, *x;
            vt__xblk z[2];
            vt__entry *en;
            vt__xent *xe;
            memset(&g, 0, sizeof g);
            g.N = 2; g.C = geo[gi][5]; g.H = 5; g.W = 4; g.OC = geo[gi][6]; g.KH = geo[gi][0]; g.KW = geo[gi][1];
            g.s = geo[gi][2]; g.p = geo[gi][3]; g.d = geo[gi][4]; g.G = 1; g.Cg = g.C; g.OCg = g.OC;
            g.OH = (g.H + 2 * g.p - g.d * (g.KH - 1) - 1) / g.s + 1; g.OW = (g.W + 2 * g.p - g.d * (g.KW - 1) - 1) / g.s + 1;
            g.Kg = g.C * g.KH * g.KW; g.Kd = g.OC * g.KH * g.KW; g.P = g.OH * g.OW; g.HW = g.H * g.W;
            SC = dx ? g.OC : g.C; SH = dx ? g.OH : g.H; SW = dx ? g.OW : g.W; KR = dx ? g.Kd : g.Kg;
            NC = dx ? g.N * g.HW : g.N * g.P; nc = dx ? g.HW : g.P; ns = g.N * SC * SH * SW; rows = dx ? g.C : g.OC;
            if (rows > 6) rows = 6;
            nout = g.N * rows * nc;
            S = (double *)malloc(sizeof(double) * (size_t)ns); Mx = (double *)malloc(sizeof(double) * (size_t)(KR * NC));
            A = (double *)malloc(sizeof(double) * (size_t)(rows * KR)); x = (double *)malloc(sizeof(double) * (size_t)nout);
            en = (vt__entry *)calloc((size_t)nout, sizeof(vt__entry)); xe = (vt__xent *)malloc(sizeof(vt__xent) * (size_t)nout);
            for (i = 0; i < ns; i++) S[i] = i % 9 == 4 ? 0.0 : (float)vt_rng_normal(93, (uint64_t)(gi * 2 + dx), (uint64_t)i);
            for (i = 0; i < rows * KR; i++) A[i] = (float)vt_rng_normal(94, (uint64_t)(gi * 2 + dx), (uint64_t)i);
            cj.g = &g; cj.src = S; cj.dst = Mx;
            if (dx) vt__dcol_task(&cj, 0, g.Kd, 0); else vt__im2col_task(&cj, 0, g.Kg, 0);
            memset(&w, 0, sizeof w);
            w.S = S; w.N = g.N; w.C = SC; w.H = SH; w.W = SW; w.OH = dx ? g.H : g.OH; w.OW = dx ? g.W : g.OW;
            w.KH = g.KH; w.KW = g.KW; w.s = g.s; w.p = g.p; w.d = g.d; w.dx = dx;
            memset(z, 0, sizeof z);
            for (i = 0; i < 2; i++) { /* image i's product: rows x nc, its columns read from the source */
                z[i].off = i * rows * nc; z[i].M = rows; z[i].N = nc; z[i].K = KR; z[i].A = A; z[i].sam = KR; z[i].sak = 1;
                z[i].B = Mx + i * nc; z[i].sbk = NC; z[i].sbn = 1; z[i].ws = &w; z[i].wn = i;
            }
            xp.b = z; xp.n = 2; xp.cap = 2; xp.gs = xp.gx = 0;
            for (i = 0; i < nout; i++) en[i].i = nout - 1 - i;
            at.e = en; at.n = nout; at.cap = nout; at.bad = -1;
            vt__xent_fill(&xp, &at, xe);
            for (i = 0; i < nout; i++) x[i] = NAN;
            ej.x = x; ej.xp = &xp; ej.en = xe;
            wb[0] = malloc(VT__XWORK); /* thread 0's work area (vt__cpu_exact takes them from the scratch arena) */
            ej.wb = wb;
            vt__exact_task(&ej, 0, 7, 0); /* a cut inside a column's run */
            vt__exact_task(&ej, 7, nout, 0);
            free(wb[0]);
            for (i = 0; i < nout; i++) {
                double r = vt__xprod_value(z, 2, i);
                bad += memcmp(&r, &x[i], 8) != 0;
            }
            total += nout;
            free(S); free(Mx); free(A); free(x); free(en); free(xe);
        }
    CHECK(bad == 0, "%lld of %lld outputs differ from the superaccumulator", (long long)bad, (long long)total);
    NOTE("%lld outputs of 3 geometries, forward and dx (K up to %d): %lld differ from the definition", (long long)total, 461 * 9,
         (long long)bad);
}

/* vt__sum_exact (batch norm's backward sums) gives vt__sum_bound's verdict
   for the true lowest set bit of the finite values, on terms of every kind:
   binary32 values of spread exponents, few-bit values (exact sums), tiny
   and subnormal ones, huge ones (mag overflowing), zeros, inf and NaN, with
   and without an old value, lengths on and off the vector width */
TEST(bn_sum_exactness_is_the_lowest_bit_verdict) {
    double t[64];
    int64_t trial, n, i, bad = 0, nexact = 0;
    for (trial = 0; trial < 20000; trial++) {
        uint64_t h = (uint64_t)trial * 0x9E3779B97F4A7C15ull;
        int kind = (int)(trial % 9), L = VT__LSB_NONE, want, got;
        double old = 0, mag = 0, sc;
        n = 1 + (int64_t)((h >> 8) % 40);
        sc = vt__pow2((int)((h >> 20) % 2100) - 1074);
        for (i = 0; i < n; i++) {
            double r = vt_rng_normal(17, (uint64_t)trial, (uint64_t)i), v;
            switch (kind) {
            case 0: v = (float)r; break;                                   /* binary32, exponents near 0 */
            case 1: v = (double)(int)(r * 64) / 8; break;                   /* few-bit: exact sums */
            case 2: v = (double)(int)(r * 1e6); break;                      /* integers up to 2^22 */
            case 3: v = (float)r * sc; break;                               /* any scale, subnormals to huge */
            case 4: v = (double)(int)(r * 8) * sc; break;                   /* few-bit at any scale */
            case 5: v = i % 3 ? 0.0 : (double)(int)(r * 16) * 0x1p-1074; break; /* subnormal multiples */
            case 6: v = (float)r * 0x1p1000; break;                         /* mag overflows */
            case 7: v = i == n / 2 ? (h & 1 ? NAN : -INFINITY) : (h & 2 ? 0.0 : (double)(int)(r * 4)); break;
            default: v = (float)r * (float)r * vt__pow2((int)(i % 50) - 25); break; /* binary64 products */
            }
            t[i] = v;
        }
        if (h & 4) old = (float)vt_rng_normal(18, (uint64_t)trial, 0) * (kind == 1 || kind == 4 ? 1 : sc);
        if (kind == 1 && (h & 8)) old = 0.25;
        mag = fabs(old);
        for (i = 0; i < n; i++) mag += fabs(t[i]);
        if (old != 0) L = vt__lsb(old);
        for (i = 0; i < n; i++) L = VT__MIN(L, vt__lsb(t[i]));
        want = L >= VT__LSB_NONE / 2 || mag * (1 + 0x1p-40) < vt__pow2(VT__MIN(L + 53, 1100)); /* vt__sum_bound's test */
        got = vt__sum_exact(t, n, old, mag);
        nexact += want;
        if (want != got && bad++ == 0)
            CHECK(0, "trial %lld (kind %d, %lld terms, old %g, mag %g, L %d): exact %d, vt__sum_exact %d", (long long)trial, kind,
                  (long long)n, old, mag, L, want, got);
    }
    CHECK(bad == 0, "%lld of 20000 verdicts differ", (long long)bad);
    NOTE("20000 sums (%lld exact): vt__sum_exact's verdict is the lowest-bit one in every one", (long long)nexact);
}

int main(int argc, char **argv) {
    TEST_FILTER(argc, argv);
    RUN(cnn_replays_across_orders);
    RUN(cnn_native_diverges);
    RUN(resnet18_narrow_replays_across_orders);
    RUN(resnet18_native_diverges);
    RUN(running_statistics_are_state);
    RUN(checkpoint_resume_with_batch_norm);
    RUN(bad_shapes_are_clear_errors);
    RUN(cifar_loader);
    RUN(nan_in_batch_is_named);
    RUN(conv_fused_casts_same_bits);
    RUN(conv_batched_bound_is_each_images_bound);
    RUN(conv_source_gather_and_statistics_match_the_matrix);
    RUN(conv_exact_columns_are_the_definition);
    RUN(bn_sum_exactness_is_the_lowest_bit_verdict);
    vt_digits_free(&g_digits);
    return TEST_SUMMARY();
}
