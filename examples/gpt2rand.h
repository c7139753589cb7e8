/* gpt2rand.h - a GPT-2-shaped model trained on random tokens, the program of
   the GPU step bench and the GPU audit (include after vtrain.h).

   Tokens and targets come from (31 or 32, step, position): no data set is
   needed and any machine draws the same batch for the same step. AdamW
   (weight decay 0.1) at 6e-4, clipping at 1.0; lr_min > 0 turns on a cosine
   schedule over 100 steps with 5 warm-up steps. The caller sets cfg, B, T. */
#ifndef GPT2RAND_H
#define GPT2RAND_H
#include <stdlib.h>

typedef struct gpt2rand {
    vt_gpt_config cfg;
    int B, T;
    double lr_min;
    vt_gpt g;
    vt_optim *opt;
    int32_t *x, *y;  /* batch buffers (B*T), allocated by the first setup */
} gpt2rand;

static vt_status gpt2rand_setup(vt_ctx *c, void *u) {
    gpt2rand *a = (gpt2rand *)u;
    vt_adamw_desc ad = vt_adamw_default();
    vt_gpt_init(c, &a->g, &a->cfg, 1337);
    ad.lr = 6e-4;
    ad.weight_decay = 0.1;
    a->opt = vt_adamw_create(c, &ad);
    if (!a->x) {
        a->x = (int32_t *)malloc(sizeof(int32_t) * (size_t)a->B * (size_t)a->T);
        a->y = (int32_t *)malloc(sizeof(int32_t) * (size_t)a->B * (size_t)a->T);
        if (!a->x || !a->y) return VT_ERR_NOMEM;
    }
    return vt_status_of(c);
}

static vt_status gpt2rand_step(vt_ctx *c, int64_t s, void *u) {
    gpt2rand *a = (gpt2rand *)u;
    int64_t ne[2], i, n = (int64_t)a->B * a->T;
    vt_tensor *x, *y, *loss;
    for (i = 0; i < n; i++) {
        a->x[i] = (int32_t)(vt_rng_u64(31, (uint64_t)s, (uint64_t)i) % (uint64_t)a->cfg.vocab);
        a->y[i] = (int32_t)(vt_rng_u64(32, (uint64_t)s, (uint64_t)i) % (uint64_t)a->cfg.vocab);
    }
    ne[0] = a->B; ne[1] = a->T;
    x = vt_from_i32(c, 2, ne, a->x);
    y = vt_from_i32(c, 2, ne, a->y);
    loss = vt_gpt_forward(c, &a->g, x, y, s);
    vt_backward(c, loss);
    vt_clip_grad_norm(c, 1.0);
    vt_optim_step(c, a->opt, a->lr_min > 0 ? vt_lr_cosine(s, 5, 100, 6e-4, a->lr_min) : 6e-4);
    return vt_status_of(c);
}

static void gpt2rand_free(gpt2rand *a) {
    free(a->x);
    free(a->y);
    a->x = a->y = NULL;
}
#endif
