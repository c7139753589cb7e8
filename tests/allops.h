/* tests/allops.h - the all-ops program: one training step that runs every
   op of vtrain.h forward and backward, plus the optimizer and clipping.

   test_replay replays it across orders and checks every op's bound against
   other orders; test_cuda runs it on the CUDA backend and compares every
   kernel with the CPU op. A new op goes in here too (see "how to add an op"
   in vtrain.h): every_op_covered in both programs fails until it does.

   Shapes: views, broadcasting, both matmul layouts, batched and shared
   operands, attention; one gradient term with magnitudes over 50 binades,
   so the bias gradient's column sums are not exact and their bound must not
   be 0. One op per statement: C leaves the order of sibling arguments open,
   and the tape must not depend on the compiler. */
#ifndef VT_TEST_ALLOPS_H
#define VT_TEST_ALLOPS_H
#include <math.h>

typedef struct {
    vt_tensor *w, *b, *lw, *lb, *emb, *m3, *m4;
    vt_tensor *cw1, *cb1, *bnw, *bnb, *bns, *cw2, *cfw; /* the convolutional branch (op table 1) */
    vt_optim *opt;
} allops_app;

static vt_status allops_setup(vt_ctx *c, void *u) {
    allops_app *a = (allops_app *)u;
    int64_t nw[2] = {48, 40}, nb[1] = {48}, ne[2] = {20, 40}, nm[2] = {48, 24}, n4[2] = {24, 48};
    vt_sgd_desc sd = vt_sgd_default();
    a->w = vt_param(c, "w", 2, nw);
    a->b = vt_param(c, "b", 1, nb);
    a->lw = vt_param(c, "lw", 1, nb);
    a->lb = vt_param(c, "lb", 1, nb);
    a->emb = vt_param(c, "emb", 2, ne);
    a->m3 = vt_param(c, "m3", 2, nm);
    a->m4 = vt_param(c, "m4", 2, n4);
    vt_init_normal(c, a->w, 1, 0, 0.2);
    vt_init_normal(c, a->b, 1, 1, 0.1);
    vt_init_normal(c, a->lw, 1, 2, 0.1);
    vt_init_normal(c, a->lb, 1, 3, 0.1);
    vt_init_normal(c, a->emb, 1, 4, 1.0);
    vt_init_normal(c, a->m3, 1, 5, 0.2);
    vt_init_normal(c, a->m4, 1, 6, 0.2);
    {
        int64_t n1[4] = {6, 3, 3, 3}, n6[1] = {6}, nf[2] = {5, 6};
        a->cw1 = vt_param(c, "cw1", 4, n1);
        a->cb1 = vt_param(c, "cb1", 1, n6);
        a->bnw = vt_param(c, "bnw", 1, n6);
        a->bnb = vt_param(c, "bnb", 1, n6);
        a->cw2 = vt_param(c, "cw2", 4, n1);
        a->cfw = vt_param(c, "cfw", 2, nf);
        a->bns = vt_bn_state(c, "bn.running", 6);
        vt_init_normal(c, a->cw1, 1, 7, 0.3);
        vt_init_normal(c, a->cb1, 1, 8, 0.1);
        vt_init_const(c, a->bnw, 1.0);
        vt_init_normal(c, a->bnb, 1, 9, 0.1);
        vt_init_normal(c, a->cw2, 1, 10, 0.3);
        vt_init_normal(c, a->cfw, 1, 11, 0.3);
    }
    sd.lr = 1e-2; sd.momentum = 0.9; sd.nesterov = 1; sd.weight_decay = 1e-3;
    a->opt = vt_sgd_create(c, &sd);
    return vt_status_of(c);
}

/* the wide-magnitude term: sum((x w^T + b) * wide), wide over 50 binades */
static vt_tensor *allops_wide(vt_ctx *c, allops_app *a, vt_tensor *x, int64_t s) {
    static float wide[96 * 48];
    int64_t nw3[3] = {4, 24, 48}, i;
    vt_tensor *y, *w;
    for (i = 0; i < 96 * 48; i++) {
        uint64_t r = vt_rng_u64(4, (uint64_t)s, (uint64_t)i);
        wide[i] = (float)ldexp((r & 1 ? -1.0 : 1.0) * (1 + (double)((r >> 8) & 0xffff) / 65536), -6 - (int)((r >> 32) % 50));
    }
    y = vt_linear(c, x, a->w, a->b);
    w = vt_from_f32(c, 3, nw3, wide);
    y = vt_mul(c, y, w);
    return vt_sum(c, y);
}

/* the convolutional branch: conv (bias) -> batch norm -> relu -> max pool,
   a grouped, dilated, strided conv beside an average pool, global average
   pool, linear, cross-entropy */
static vt_tensor *allops_cnn(vt_ctx *c, allops_app *a, int64_t s) {
    static float img[2 * 3 * 8 * 8];
    int64_t ni[4] = {2, 3, 8, 8}, nt[1] = {2}, i;
    int32_t tgt[2];
    vt_tensor *x, *h, *p, *h2, *av, *g;
    for (i = 0; i < 2 * 3 * 8 * 8; i++) img[i] = (float)vt_rng_normal(5, (uint64_t)s, (uint64_t)i);
    for (i = 0; i < 2; i++) tgt[i] = (int32_t)(vt_rng_u64(6, (uint64_t)s, (uint64_t)i) % 5);
    x = vt_from_f32(c, 4, ni, img);
    h = vt_conv2d(c, x, a->cw1, a->cb1, 1, 1, 1, 1);                        /* (2,6,8,8) */
    h = vt_batchnorm2d(c, h, a->bnw, a->bnb, a->bns, 0.1, 1e-5);
    h = vt_relu(c, h);
    p = vt_maxpool2d(c, h, 3, 2, 1);                                        /* (2,6,4,4) */
    h2 = vt_conv2d(c, p, a->cw2, NULL, 2, 2, 2, 2);                         /* (2,6,2,2) */
    av = vt_avgpool2d(c, p, 2, 2, 0);                                       /* (2,6,2,2) */
    h2 = vt_add(c, h2, av);
    g = vt_global_avgpool(c, h2);                                           /* (2,6) */
    g = vt_linear(c, g, a->cfw, NULL);
    return vt_cross_entropy(c, g, vt_from_i32(c, 1, nt, tgt));
}

static vt_status allops_step(vt_ctx *c, int64_t s, void *u) {
    allops_app *a = (allops_app *)u;
    int64_t ti[2] = {4, 24}, i;
    int32_t tok[96], tgt[96];
    vt_tensor *x, *h, *q, *att, *l1, *l2, *l3, *l4, *l5, *lsm, *g1, *t1, *r1, *m1;
    for (i = 0; i < 96; i++) {
        tok[i] = (int32_t)(vt_rng_u64(2, (uint64_t)s, (uint64_t)i) % 20);
        tgt[i] = (int32_t)(vt_rng_u64(3, (uint64_t)s, (uint64_t)i) % 48);
    }
    x = vt_embedding(c, a->emb, vt_from_i32(c, 2, ti, tok));                 /* (4,24,40) */
    x = vt_dropout(c, x, 0.1, 77);
    h = vt_linear(c, x, a->w, a->b);                                          /* (4,24,48) */
    l5 = allops_wide(c, a, x, s);
    h = vt_layernorm(c, h, a->lw, a->lb, 1e-5);
    g1 = vt_gelu(c, h);
    t1 = vt_tanh(c, h);
    t1 = vt_scale(c, t1, 0.5);
    h = vt_add(c, g1, t1);
    r1 = vt_relu(c, h);
    r1 = vt_mul(c, h, r1);
    m1 = vt_mean(c, h);
    h = vt_sub(c, r1, m1);
    q = vt_split(c, h, 2, 0, 24);
    q = vt_concat(c, h, q, 2);                                                /* (4,24,72) */
    q = vt_slice(c, q, 2, 0, 72);
    q = vt_contiguous(c, q);
    att = vt_attention(c, q, 3);                                              /* (4,24,24) */
    att = vt_matmul(c, att, a->m3, 0, 1);                                     /* (4,24,48), shared b^T */
    {
        vt_tensor *hs = vt_softmax(c, h), *ht, *g, *p, *sp;
        ht = vt_transpose(c, h, 1, 2);
        g = vt_matmul(c, ht, hs, 0, 0);                                       /* (4,48,48) batched */
        p = vt_matmul(c, hs, g, 0, 1);
        sp = vt_scale(c, p, 1e-2);
        att = vt_add(c, att, sp);
        p = vt_matmul(c, h, a->m4, 1, 0);                                     /* a^T: (4,48,48), shared b */
        p = vt_matmul(c, p, g, 1, 1);
        sp = vt_scale(c, vt_mean(c, p), 1e-3);
        att = vt_add(c, att, sp);
    }
    lsm = vt_log_softmax(c, att);
    l1 = vt_cross_entropy(c, att, vt_from_i32(c, 2, ti, tgt));
    {
        vt_tensor *s1 = vt_sum(c, lsm), *m2 = vt_mean(c, att);
        l2 = vt_mse(c, s1, m2);
    }
    l3 = vt_mul(c, h, h);
    l3 = vt_sum(c, l3);
    l3 = vt_scale(c, l3, 1e-4);
    l2 = vt_scale(c, l2, 1e-6);
    l4 = vt_add(c, l3, l5);
    l4 = vt_add(c, l2, l4);
    l4 = vt_add(c, l1, l4);
    l1 = allops_cnn(c, a, s);
    l4 = vt_add(c, l1, l4);
    vt_backward(c, l4);
    vt_clip_grad_norm(c, 1.0);
    vt_optim_step(c, a->opt, 1e-2);
    return vt_status_of(c);
}

static vt_program allops_program(allops_app *a) {
    vt_program p;
    p.setup = allops_setup; p.step = allops_step; p.on_step = NULL; p.user = a;
    return p;
}
#endif
