/* chargpt.h - the character-level GPT training program shared by
   train_chargpt.c, demo.c and nondeterminism_lab.c (include after vtrain.h).

   A GPT-2 architecture over the bytes of a text file, trained with AdamW, a
   cosine schedule with warm-up and gradient clipping at 1.0. Batches are
   windows whose start offsets come from (seed, step, row): any machine
   draws the same batch for the same step. */
#ifndef CHARGPT_H
#define CHARGPT_H
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct chargpt {
    vt_text text;
    int64_t ntrain;      /* tokens [0, ntrain) train, the rest validation */
    int B, T;
    int64_t steps;       /* schedule length */
    vt_gpt_config cfg;
    vt_gpt gpt;
    vt_optim *opt;
    double lr;
    int32_t *x, *y;      /* batch buffers (B*T) */
    int shards;          /* 0: one batch per step; S >= 1: the batch in S shards (B >= S) */
} chargpt;

/* defaults: 4 layers, 4 heads, width 128, context 64, batch 8 */
static vt_status chargpt_load(chargpt *a, const char *path) {
    memset(a, 0, sizeof *a);
    a->steps = 300; a->B = 8; a->T = 64; a->lr = 3e-3;
    a->cfg.context = 64; a->cfg.layers = 4; a->cfg.heads = 4; a->cfg.width = 128;
    if (vt_text_load(path, &a->text) != VT_OK) return VT_ERR_IO;
    a->cfg.vocab = a->text.vocab;
    a->ntrain = a->text.n * 9 / 10;
    return VT_OK;
}

static VT__UNUSED void chargpt_free(chargpt *a) {
    vt_text_free(&a->text);
    free(a->x);
    free(a->y);
}

/* the unigram baseline: the entropy (nats per character) of the training text */
static VT__UNUSED double chargpt_unigram(const chargpt *a) {
    double cnt[256] = {0}, h = 0;
    int64_t k;
    for (k = 0; k < a->ntrain; k++) cnt[a->text.tok[k]] += 1;
    for (k = 0; k < a->text.vocab; k++)
        if (cnt[k] > 0) h -= cnt[k] / (double)a->ntrain * log(cnt[k] / (double)a->ntrain);
    return h;
}

/* 1 if the sampler can draw batches: a batch of 1..1024 rows (the step's
   offsets array) and, in each part of the text, at least one window of T+1
   tokens to start at; else 0 with the reason in why */
static int chargpt_fits(const chargpt *a, char *why, size_t n) {
    int64_t val = a->text.n - a->ntrain;
    if (a->B < 1 || a->B > 1024 || a->T < 1) {
        snprintf(why, n, "chargpt: batch %d (1..1024) or context %d (at least 1) is out of range", a->B, a->T);
        return 0;
    }
    if (a->ntrain < (int64_t)a->T + 2 || val < (int64_t)a->T + 2) {
        snprintf(why, n, "chargpt: the text holds %lld characters, %lld for training and %lld for validation; each part "
                         "needs at least context + 2 = %d to draw a window from",
                 (long long)a->text.n, (long long)a->ntrain, (long long)val, a->T + 2);
        return 0;
    }
    return 1;
}

static vt_status chargpt_setup(vt_ctx *c, void *u) {
    chargpt *a = (chargpt *)u;
    vt_adamw_desc ad = vt_adamw_default();
    char why[256];
    if (!chargpt_fits(a, why, sizeof why)) return vt_set_error(c, VT_ERR_ARG, why);
    a->cfg.context = a->T;
    vt_gpt_init(c, &a->gpt, &a->cfg, 1337);
    ad.lr = a->lr;
    ad.weight_decay = 0.01;
    a->opt = vt_adamw_create(c, &ad);
    if (!a->x) {
        a->x = (int32_t *)malloc(sizeof(int32_t) * (size_t)(a->B * a->T));
        a->y = (int32_t *)malloc(sizeof(int32_t) * (size_t)(a->B * a->T));
    }
    return vt_status_of(c);
}

/* windows of T+1 tokens starting at offsets drawn from (seed, step, row) */
static void chargpt_batch(const chargpt *a, int64_t s, int val, int64_t *starts) {
    int b, t;
    int64_t base = val ? a->ntrain : 0, span = (val ? a->text.n - a->ntrain : a->ntrain) - a->T - 1;
    for (b = 0; b < a->B; b++) {
        int64_t st = base + (int64_t)(vt_rng_u64(val ? 4242 : 2024, (uint64_t)s, (uint64_t)b) % (uint64_t)span);
        if (starts) starts[b] = st;
        for (t = 0; t < a->T; t++) {
            a->x[b * a->T + t] = a->text.tok[st + t];
            a->y[b * a->T + t] = a->text.tok[st + t + 1];
        }
    }
}

static vt_status chargpt_step(vt_ctx *c, int64_t s, void *u) {
    chargpt *a = (chargpt *)u;
    int64_t ne[2], starts[1024];
    vt_tensor *loss;
    chargpt_batch(a, s, 0, starts);
    vt_commit_batch(c, starts, a->B);
    ne[0] = a->B; ne[1] = a->T;
    loss = vt_gpt_forward(c, &a->gpt, vt_from_i32(c, 2, ne, a->x), vt_from_i32(c, 2, ne, a->y), s);
    vt_backward(c, loss);
    vt_clip_grad_norm(c, 1.0);
    vt_optim_step(c, a->opt, vt_lr_cosine(s, a->steps / 20 + 1, a->steps, a->lr, a->lr / 10));
    return vt_status_of(c);
}

/* mean loss over the first n validation batches (evaluation: nothing logged) */
static VT__UNUSED double chargpt_val_loss(vt_ctx *c, chargpt *a, int n) {
    int i;
    double tot = 0;
    int64_t ne[2];
    ne[0] = a->B; ne[1] = a->T;
    for (i = 0; i < n; i++) {
        vt_tensor *l;
        chargpt_batch(a, i, 1, NULL);
        vt_eval_begin(c);
        l = vt_gpt_forward(c, &a->gpt, vt_from_i32(c, 2, ne, a->x), vt_from_i32(c, 2, ne, a->y), 0);
        tot += vt_item(c, l);
        vt_eval_end(c);
    }
    return tot / n;
}

/* The same step split into a->shards shards (SHARDS in vtrain.h): shard k
   takes rows [k B / S, (k + 1) B / S), each window drawn from (2024, step,
   row) as the whole step draws it, and scales its mean loss by its share
   of the rows. */
static vt_status chargpt_shard(vt_ctx *c, chargpt *a, int64_t s, int k, int S) {
    int b, t, r0 = k * a->B / S, r1 = (k + 1) * a->B / S;
    int64_t ne[2], starts[1024], span = a->ntrain - a->T - 1;
    vt_tensor *loss;
    for (b = r0; b < r1; b++) {
        int64_t st = (int64_t)(vt_rng_u64(2024, (uint64_t)s, (uint64_t)b) % (uint64_t)span);
        starts[b - r0] = st;
        for (t = 0; t < a->T; t++) {
            a->x[(b - r0) * a->T + t] = a->text.tok[st + t];
            a->y[(b - r0) * a->T + t] = a->text.tok[st + t + 1];
        }
    }
    vt_commit_batch(c, starts, r1 - r0);
    ne[0] = r1 - r0; ne[1] = a->T;
    loss = vt_gpt_forward(c, &a->gpt, vt_from_i32(c, 2, ne, a->x), vt_from_i32(c, 2, ne, a->y), s);
    if (r1 - r0 < a->B) loss = vt_scale(c, loss, (double)(r1 - r0) / a->B);
    vt_backward(c, loss);
    return vt_status_of(c);
}

static vt_status chargpt_sharded_step(vt_ctx *c, int64_t s, void *u) {
    chargpt *a = (chargpt *)u;
    int k, S = vt_shard_count(c);
    for (k = 0; k < S; k++) {
        if (!vt_shard_begin(c, k)) continue;
        chargpt_shard(c, a, s, k, S);
        vt_shard_end(c);
    }
    vt_shards_sum(c);
    vt_clip_grad_norm(c, 1.0);
    vt_optim_step(c, a->opt, vt_lr_cosine(s, a->steps / 20 + 1, a->steps, a->lr, a->lr / 10));
    return vt_status_of(c);
}

/* shards 0: the plain step; else the sharded one (vt_desc.shards = shards) */
static vt_program chargpt_program(chargpt *a) {
    vt_program p;
    p.setup = chargpt_setup;
    p.step = a->shards ? chargpt_sharded_step : chargpt_step;
    p.on_step = NULL;
    p.user = a;
    return p;
}
#endif
