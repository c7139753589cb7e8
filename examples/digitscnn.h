/* digitscnn.h - a small convolutional network on the 8x8 digits, the
   training program shared by examples/train_digits_cnn.c, the CLI (vtrain
   train --model cnn) and the tests (include after vtrain.h).

       x (B,1,8,8) -> conv 3x3 (W) -> batch norm -> relu
                   -> conv 3x3 (2W) -> batch norm -> relu -> max pool 2x2
                   -> flatten (2W*16) -> linear 10

   AdamW with a cosine schedule; batches drawn from (seed 5, step, row) over
   the first ntrain samples of perm, so any machine draws the same batch for
   the same step. The fields set by digitscnn_new are the defaults; callers
   change them before the first step. */
#ifndef DIGITSCNN_H
#define DIGITSCNN_H
#include <stdlib.h>
#include <string.h>

typedef struct digitscnn {
    const vt_digits *d;   /* the data, shared, not owned */
    const int32_t *perm;  /* sample order (NULL: 0..n-1); training uses the first ntrain */
    int ntrain;           /* 0: all samples */
    int width;            /* W: channels of the first convolution */
    int batch;            /* samples per step, at most 128 */
    double lr;            /* the peak of the cosine schedule */
    int64_t steps;        /* the schedule's length */
    int commit;           /* commit each batch's sample indices */
    vt_tensor *w1, *g1, *b1, *s1, *w2, *g2, *b2, *s2, *fw, *fb;
    vt_optim *opt;
} digitscnn;

static VT__UNUSED digitscnn digitscnn_new(const vt_digits *d) {
    digitscnn a;
    memset(&a, 0, sizeof a);
    a.d = d;
    a.width = 16; a.batch = 64; a.lr = 3e-3; a.steps = 400;
    return a;
}

static vt_status digitscnn_setup(vt_ctx *c, void *u) {
    digitscnn *a = (digitscnn *)u;
    int64_t W = a->width, n1[4] = {W, 1, 3, 3}, n2[4] = {2 * W, W, 3, 3}, c1[1] = {W}, c2[1] = {2 * W}, nf[2] = {10, 2 * W * 16}, nb[1] = {10};
    vt_adamw_desc ad = vt_adamw_default();
    a->w1 = vt_param(c, "conv1.w", 4, n1);
    a->g1 = vt_param(c, "bn1.w", 1, c1);
    a->b1 = vt_param(c, "bn1.b", 1, c1);
    a->w2 = vt_param(c, "conv2.w", 4, n2);
    a->g2 = vt_param(c, "bn2.w", 1, c2);
    a->b2 = vt_param(c, "bn2.b", 1, c2);
    a->fw = vt_param(c, "fc.w", 2, nf);
    a->fb = vt_param(c, "fc.b", 1, nb);
    a->s1 = vt_bn_state(c, "bn1.running", W);
    a->s2 = vt_bn_state(c, "bn2.running", 2 * W);
    vt_init_normal(c, a->w1, 11, 0, sqrt(2.0 / 9));
    vt_init_normal(c, a->w2, 11, 1, sqrt(2.0 / (9.0 * (double)W)));
    vt_init_normal(c, a->fw, 11, 2, sqrt(1.0 / (double)(2 * W * 16)));
    vt_init_const(c, a->g1, 1.0);
    vt_init_const(c, a->b1, 0.0);
    vt_init_const(c, a->g2, 1.0);
    vt_init_const(c, a->b2, 0.0);
    vt_init_const(c, a->fb, 0.0);
    ad.lr = a->lr;
    ad.weight_decay = 1e-4;
    a->opt = vt_adamw_create(c, &ad);
    return vt_status_of(c);
}

/* images (n,1,8,8) -> logits (n,10) */
static vt_tensor *digitscnn_forward(vt_ctx *c, const digitscnn *a, vt_tensor *x) {
    x = vt_conv2d(c, x, a->w1, NULL, 1, 1, 1, 1);
    x = vt_batchnorm2d(c, x, a->g1, a->b1, a->s1, 0.1, 1e-5);
    x = vt_relu(c, x);
    x = vt_conv2d(c, x, a->w2, NULL, 1, 1, 1, 1);
    x = vt_batchnorm2d(c, x, a->g2, a->b2, a->s2, 0.1, 1e-5);
    x = vt_relu(c, x);
    x = vt_maxpool2d(c, x, 2, 2, 0);
    x = vt_flatten(c, x);
    return vt_linear(c, x, a->fw, a->fb);
}

static int digitscnn_sample(const digitscnn *a, int i) { return a->perm ? a->perm[i] : i; }

static vt_status digitscnn_step(vt_ctx *c, int64_t s, void *u) {
    digitscnn *a = (digitscnn *)u;
    int i, nt = a->ntrain ? a->ntrain : a->d->n;
    int64_t xs[4], ys[1], idx[128];
    float x[128 * 64];
    int32_t y[128];
    vt_tensor *in, *lg, *tg;
    if (a->batch < 2 || a->batch > 128) return vt_set_error(c, VT_ERR_ARG, "digitscnn: batch must be 2..128");
    for (i = 0; i < a->batch; i++) {
        int n = digitscnn_sample(a, (int)(vt_rng_u64(5, (uint64_t)s, (uint64_t)i) % (uint64_t)nt));
        idx[i] = n;
        memcpy(x + i * 64, a->d->x + n * 64, sizeof(float) * 64);
        y[i] = a->d->y[n];
    }
    if (a->commit) vt_commit_batch(c, idx, a->batch);
    xs[0] = a->batch; xs[1] = 1; xs[2] = 8; xs[3] = 8; ys[0] = a->batch;
    in = vt_from_f32(c, 4, xs, x);
    lg = digitscnn_forward(c, a, in);
    tg = vt_from_i32(c, 1, ys, y);
    vt_backward(c, vt_cross_entropy(c, lg, tg));
    vt_optim_step(c, a->opt, vt_lr_cosine(s, 20, a->steps, a->lr, a->lr * 0.05));
    return vt_status_of(c);
}

static VT__UNUSED vt_program digitscnn_program(digitscnn *a) {
    vt_program p;
    p.setup = digitscnn_setup; p.step = digitscnn_step; p.on_step = NULL; p.user = a;
    return p;
}

/* accuracy over samples perm[from .. from + n), in evaluation mode (batch
   norm with its running statistics), in chunks of 256 */
static VT__UNUSED double digitscnn_accuracy(vt_ctx *c, const digitscnn *a, int from, int n) {
    int i, j, k, correct = 0;
    float *x = (float *)malloc(sizeof(float) * 256 * 64);
    double *l = (double *)malloc(sizeof(double) * 256 * 10);
    if (!x || !l) { free(x); free(l); return 0; }
    for (k = 0; k < n; k += 256) {
        int m = n - k < 256 ? n - k : 256;
        int64_t xs[4];
        vt_tensor *lg;
        for (i = 0; i < m; i++) memcpy(x + i * 64, a->d->x + digitscnn_sample(a, from + k + i) * 64, sizeof(float) * 64);
        xs[0] = m; xs[1] = 1; xs[2] = 8; xs[3] = 8;
        vt_eval_begin(c);
        lg = digitscnn_forward(c, a, vt_from_f32(c, 4, xs, x));
        if (lg && vt_read_f64(c, lg, l) == VT_OK)
            for (i = 0; i < m; i++) {
                int best = 0;
                for (j = 1; j < 10; j++) if (l[i * 10 + j] > l[i * 10 + best]) best = j;
                correct += best == a->d->y[digitscnn_sample(a, from + k + i)];
            }
        vt_eval_end(c);
    }
    free(x);
    free(l);
    return n ? (double)correct / n : 0;
}
#endif
