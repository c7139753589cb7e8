/* tests/test_alloc.c - vtrain with the user's allocator.

   A program that defines VT_MALLOC, VT_REALLOC and VT_FREE gets every block
   vtrain takes through them, with the context's user pointer
   (vt_desc.alloc_user), and every one back through VT_FREE. Here each block
   carries a header (a magic word, the user pointer, its size), so a block
   given back through libc's free, or one of libc's given to VT_FREE, or a
   user pointer that is not the context's, shows; and the live count must be
   zero once the context and the ResNet are gone. The program uses what
   allocates: workers that grow entry lists, the exact evaluation of
   correctly rounded products (a least-squares fit near its minimum puts
   products on a boundary), a log in memory, clipping, AdamW and SGD, a
   ResNet's blocks (vt_resnet_free gave them to libc's free until this test
   found it). */
#define _POSIX_C_SOURCE 200809L /* as vtrain.h sets it, before the first system header */
#include <stdlib.h>
#include <stdint.h>
#include <string.h>

typedef struct { uint64_t magic; void *u; size_t size; uint64_t pad; } ta_head;
#define TA_MAGIC 0x7674726169636bull
static long ta_live, ta_total, ta_bad, ta_wrong_u;
static void *ta_expect_u;
static int ta_ok(ta_head *h, void *u) {
    if (h->magic != TA_MAGIC) { __atomic_add_fetch(&ta_bad, 1, __ATOMIC_RELAXED); return 0; }
    if (u != h->u || u != ta_expect_u) __atomic_add_fetch(&ta_wrong_u, 1, __ATOMIC_RELAXED);
    return 1;
}
static void *ta_malloc(size_t n, void *u) {
    ta_head *h = (ta_head *)malloc(sizeof(ta_head) + n);
    if (!h) return NULL;
    h->magic = TA_MAGIC; h->u = u; h->size = n;
    if (u != ta_expect_u) __atomic_add_fetch(&ta_wrong_u, 1, __ATOMIC_RELAXED);
    __atomic_add_fetch(&ta_live, 1, __ATOMIC_RELAXED);
    __atomic_add_fetch(&ta_total, 1, __ATOMIC_RELAXED);
    return h + 1;
}
static void ta_free(void *p, void *u) {
    ta_head *h;
    if (!p) return;
    h = (ta_head *)p - 1;
    if (!ta_ok(h, u)) return; /* not ours: leave it (the count says so) */
    h->magic = 0;
    __atomic_sub_fetch(&ta_live, 1, __ATOMIC_RELAXED);
    free(h);
}
static void *ta_realloc(void *p, size_t n, void *u) {
    ta_head *h;
    void *q;
    if (!p) return ta_malloc(n, u);
    h = (ta_head *)p - 1;
    if (!ta_ok(h, u)) return NULL;
    q = ta_malloc(n, u);
    if (!q) return NULL;
    memcpy(q, p, h->size < n ? h->size : n);
    ta_free(p, u);
    return q;
}
#define VT_MALLOC(sz, u) ta_malloc((sz), (u))
#define VT_REALLOC(p, sz, u) ta_realloc((p), (sz), (u))
#define VT_FREE(p, u) ta_free((p), (u))
#define VTRAIN_IMPLEMENTATION
#include "../vtrain.h"
#include "test.h"

static int g_tag; /* the user pointer: its address */

/* two layers with layernorm, AdamW and clipping (q = 0); least squares near
   its minimum with SGD (q = 1: many products on a boundary, evaluated
   exactly) */
typedef struct { int q; vt_tensor *w1, *w2, *g, *b; vt_optim *opt; float x[1024 * 256], y[1024 * 64]; } ta_app;
#define TA_R(q) ((q) ? 1024 : 256) /* rows, inputs, outputs */
#define TA_I(q) ((q) ? 256 : 32)
#define TA_O(q) ((q) ? 64 : 8)
static vt_status ta_setup(vt_ctx *c, void *u) {
    ta_app *a = (ta_app *)u;
    int64_t s1[2] = {32, 32}, s2[2] = {TA_O(a->q), TA_I(a->q)}, s3[1] = {32}, i;
    a->w2 = vt_param(c, "w2", 2, s2);
    vt_init_normal(c, a->w2, 1, 1, a->q ? 0.01 : 0.2);
    if (!a->q) {
        a->w1 = vt_param(c, "w1", 2, s1);
        a->g = vt_param(c, "g", 1, s3);
        a->b = vt_param(c, "b", 1, s3);
        vt_init_normal(c, a->w1, 1, 0, 0.2);
        vt_init_uniform(c, a->g, 1, 2, 1, 1);
        vt_init_uniform(c, a->b, 1, 3, 0, 0);
        a->opt = vt_adamw_create(c, NULL);
    } else {
        vt_sgd_desc sd = vt_sgd_default();
        sd.momentum = 0.5;
        a->opt = vt_sgd_create(c, &sd);
    }
    for (i = 0; i < TA_R(a->q) * TA_I(a->q); i++) a->x[i] = (float)vt_rng_normal(2, 0, (uint64_t)i);
    for (i = 0; i < TA_R(a->q) * TA_O(a->q); i++) a->y[i] = (float)vt_rng_normal(2, 1, (uint64_t)i);
    return vt_status_of(c);
}
static vt_status ta_step(vt_ctx *c, int64_t s, void *u) {
    ta_app *a = (ta_app *)u;
    int64_t xs[2] = {TA_R(a->q), TA_I(a->q)}, ys[2] = {TA_R(a->q), TA_O(a->q)};
    vt_tensor *h = vt_from_f32(c, 2, xs, a->x);
    (void)s;
    if (!a->q) h = vt_layernorm(c, vt_gelu(c, vt_linear(c, h, a->w1, NULL)), a->g, a->b, 1e-5);
    vt_backward(c, vt_mse(c, vt_linear(c, h, a->w2, NULL), vt_from_f32(c, 2, ys, a->y)));
    if (!a->q) vt_clip_grad_norm(c, 1.0);
    vt_optim_step(c, a->opt, a->q ? 10 : 1e-2);
    return vt_status_of(c);
}

TEST(every_block_through_the_users_allocator) {
    static ta_app app;
    static const char *orders[2] = {"threads:1", "threads:2"};
    int o, q;
    int64_t exact = 0;
    for (q = 0; q < 2; q++)
        for (o = 0; o < 2; o++) {
            vt_desc d = vt_desc_default();
            vt_program p;
            vt_report r;
            long before = ta_total;
            d.alloc_user = &g_tag;
            d.log_memory = 1;
            vt_order_parse(&d.order, orders[o]);
            ta_expect_u = &g_tag;
            app.q = q;
            p.setup = ta_setup; p.step = ta_step; p.on_step = NULL; p.user = &app;
            vt_run(&d, &p, q ? 32 : 12, &r);
            CHECK(r.status == VT_OK, "program %d, %s: %s", q, orders[o], r.message);
            CHECK(ta_total > before, "program %d, %s: nothing went through the user's allocator", q, orders[o]);
            if (q) exact += r.log.exact;
            NOTE("program %d, %s: %ld blocks through the user's allocator, %lld exact evaluations", q, orders[o],
                 ta_total - before, (long long)r.log.exact);
        }
    CHECK(exact > 0, "no exact evaluation: its work areas went untested");
    {   /* a ResNet's blocks */
        vt_desc d = vt_desc_default();
        vt_ctx *c;
        vt_resnet m;
        vt_resnet_config cfg = vt_resnet_default(18);
        d.alloc_user = &g_tag;
        cfg.width = 4; cfg.classes = 3;
        c = vt_create(&d);
        CHECK(c != NULL, "vt_create: %s", vt_last_error());
        if (c) {
            CHECK(vt_resnet_init(c, &m, &cfg, 1) == VT_OK, "vt_resnet_init: %s", vt_error_message(c));
            vt_resnet_free(&m);
            vt_destroy(c);
        }
    }
    CHECK(ta_bad == 0, "%ld blocks given to VT_FREE or VT_REALLOC that VT_MALLOC did not make", ta_bad);
    CHECK(ta_wrong_u == 0, "%ld calls with a user pointer that is not the context's", ta_wrong_u);
    CHECK(ta_live == 0, "%ld blocks still live after vt_destroy and vt_resnet_free", ta_live);
}

int main(int argc, char **argv) {
    TEST_FILTER(argc, argv);
    RUN(every_block_through_the_users_allocator);
    return TEST_SUMMARY();
}
