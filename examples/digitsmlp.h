/* digitsmlp.h - the digits MLP training program shared by the tests, the
   log-size bench and the GPU audit (include after vtrain.h).

   An MLP over the 8x8 digits, AdamW, batches of up to 64 samples drawn from
   (5, step, row): any machine draws the same batch for the same step. The
   fields set by digitsmlp_new are the defaults; callers change them before
   the first step. */
#ifndef DIGITSMLP_H
#define DIGITSMLP_H
#include <string.h>

typedef struct digitsmlp {
    const vt_digits *d;  /* the data, shared, not owned */
    int nlayers;         /* sizes[0..nlayers]: 64, hidden..., 10 */
    int sizes[8];
    int act;             /* vt_mlp_init's activation */
    int batch;           /* samples per step, at most 64 */
    double lr;           /* constant, or the peak of the cosine schedule */
    double lr_min;       /* > 0: cosine schedule over `steps` with 10 warm-up steps */
    int64_t steps;
    double clip;         /* > 0: clip the gradient norm to this */
    int commit;          /* commit each batch's sample indices to the transcript */
    int shards;          /* 0: one batch per step; S >= 1: the batch in S shards (batch >= S) */
    vt_mlp m;
    vt_optim *opt;
} digitsmlp;

/* defaults: 64-128-10 (relu), batch 64, AdamW at a constant 3e-3, no
   clipping, no batch commitments */
static digitsmlp digitsmlp_new(const vt_digits *d) {
    digitsmlp a;
    memset(&a, 0, sizeof a);
    a.d = d;
    a.nlayers = 2; a.sizes[0] = 64; a.sizes[1] = 128; a.sizes[2] = 10;
    a.batch = 64; a.lr = 3e-3; a.steps = 200;
    return a;
}

static vt_status digitsmlp_setup(vt_ctx *c, void *u) {
    digitsmlp *a = (digitsmlp *)u;
    vt_adamw_desc ad = vt_adamw_default();
    vt_mlp_init(c, &a->m, a->nlayers, a->sizes, a->act, 7);
    ad.lr = a->lr;
    a->opt = vt_adamw_create(c, &ad);
    return vt_status_of(c);
}

static vt_status digitsmlp_step(vt_ctx *c, int64_t s, void *u) {
    digitsmlp *a = (digitsmlp *)u;
    int i;
    int64_t xs[2], ys[1], idx[64];
    float x[64 * 64];
    int32_t y[64];
    vt_tensor *in, *lg, *tg;
    for (i = 0; i < a->batch; i++) {
        int n = (int)(vt_rng_u64(5, (uint64_t)s, (uint64_t)i) % (uint64_t)a->d->n);
        idx[i] = n;
        memcpy(x + i * 64, a->d->x + n * 64, sizeof(float) * 64);
        y[i] = a->d->y[n];
    }
    if (a->commit) vt_commit_batch(c, idx, a->batch);
    xs[0] = a->batch; xs[1] = 64; ys[0] = a->batch;
    in = vt_from_f32(c, 2, xs, x);
    lg = vt_mlp_forward(c, &a->m, in);
    tg = vt_from_i32(c, 1, ys, y);
    vt_backward(c, vt_cross_entropy(c, lg, tg));
    if (a->clip > 0) vt_clip_grad_norm(c, a->clip);
    vt_optim_step(c, a->opt, a->lr_min > 0 ? vt_lr_cosine(s, 10, a->steps, a->lr, a->lr_min) : a->lr);
    return vt_status_of(c);
}

/* The same step split into a->shards shards (SHARDS in vtrain.h): shard k
   takes rows [k B / S, (k + 1) B / S) of the batch, drawn from (5, step,
   row) as the whole step draws them, and scales its mean loss by its share
   of the rows, so that the shards' gradients sum to the whole batch's. */
static vt_status digitsmlp_shard(vt_ctx *c, digitsmlp *a, int64_t s, int k, int S) {
    int i, r0 = k * a->batch / S, r1 = (k + 1) * a->batch / S;
    int64_t xs[2], ys[1], idx[64];
    float x[64 * 64];
    int32_t y[64];
    vt_tensor *in, *lg, *tg, *loss;
    for (i = r0; i < r1; i++) {
        int n = (int)(vt_rng_u64(5, (uint64_t)s, (uint64_t)i) % (uint64_t)a->d->n);
        idx[i - r0] = n;
        memcpy(x + (i - r0) * 64, a->d->x + n * 64, sizeof(float) * 64);
        y[i - r0] = a->d->y[n];
    }
    if (a->commit) vt_commit_batch(c, idx, r1 - r0);
    xs[0] = r1 - r0; xs[1] = 64; ys[0] = r1 - r0;
    in = vt_from_f32(c, 2, xs, x);
    lg = vt_mlp_forward(c, &a->m, in);
    tg = vt_from_i32(c, 1, ys, y);
    loss = vt_cross_entropy(c, lg, tg);
    if (r1 - r0 < a->batch) loss = vt_scale(c, loss, (double)(r1 - r0) / a->batch);
    vt_backward(c, loss);
    return vt_status_of(c);
}

static vt_status digitsmlp_sharded_step(vt_ctx *c, int64_t s, void *u) {
    digitsmlp *a = (digitsmlp *)u;
    int k, S = vt_shard_count(c);
    for (k = 0; k < S; k++) {
        if (!vt_shard_begin(c, k)) continue;
        digitsmlp_shard(c, a, s, k, S);
        vt_shard_end(c);
    }
    vt_shards_sum(c);
    if (a->clip > 0) vt_clip_grad_norm(c, a->clip);
    vt_optim_step(c, a->opt, a->lr_min > 0 ? vt_lr_cosine(s, 10, a->steps, a->lr, a->lr_min) : a->lr);
    return vt_status_of(c);
}

/* shards 0: the plain step; else the sharded one (vt_desc.shards = shards) */
static vt_program digitsmlp_program(digitsmlp *a) {
    vt_program p;
    p.setup = digitsmlp_setup; p.step = a->shards ? digitsmlp_sharded_step : digitsmlp_step; p.on_step = NULL; p.user = a;
    return p;
}
#endif
