/* tests/test_cuda.c - the CUDA backend (vtrain_cuda.cu.h).

   Every test runs on the emulator (the kernels' own source on the CPU, with
   a reference cuBLAS that sums in another order), and again on GPU 0 when
   this machine has one; without one each GPU run prints "skip: no CUDA
   device (<reason>)" and counts neither as passed nor failed. What they
   show: the rounding kernel and the log compaction give exactly the CPU's
   entries; the device's block digests are the CPU's; every kernel, forward
   and backward, computes the CPU op's binary64 values within the two bounds
   and the same bounds (captured at every rounding point of programs that
   use every op); GPU-trained runs audit bit-exactly on the CPU at every
   step and the reverse (an MLP, a character GPT, a transcript); native mode
   diverges; two GPU runs write byte-identical logs; selecting the backend
   without a device fails plainly and leaves the CPU alone; bad input fails
   with the CPU's own messages. */
#define VTRAIN_IMPLEMENTATION
#define VTRAIN_CUDA
#define VTRAIN_CUDA_EMU
#include "../vtrain.h"
#include "test.h"
#include "../examples/chargpt.h"
#include "../examples/digitsmlp.h"
#include "allops.h"
#include "../examples/digitscnn.h"
#include <signal.h>
#include <sys/wait.h>

#define CPU (-100) /* a "device" number for the CPU backend in these tests */

static int g_dev = VT_CUDA_EMULATOR; /* the device under test */
static int g_have_gpu;
static char g_no_gpu[600];

static vt_desc desc_on(int dev) {
    vt_desc d = vt_desc_default();
    if (dev == CPU) vt_order_parse(&d.order, "threads:2");
    else { d.backend = VT_BACKEND_CUDA; d.device = dev; }
    return d;
}
static const char *dev_name(int dev) { return dev == CPU ? "cpu" : dev == VT_CUDA_EMULATOR ? "emulated gpu" : "gpu"; }

/* TEST2(name) runs on the emulator, and RUN2 runs it again on GPU 0 when
   there is one (name_on_gpu), or says why not */
#define TEST2(name) static void name(void); static void name##_on_gpu(void) { g_dev = 0; name(); g_dev = VT_CUDA_EMULATOR; } static void name(void)
#define RUN2(name)                                                                                  \
    do {                                                                                            \
        RUN(name);                                                                                  \
        if (g_have_gpu) RUN(name##_on_gpu);                                                         \
        else if (!vt_test_filter || strstr(#name, vt_test_filter))                                  \
            printf("%-44sskip: no CUDA device (%s)\n", #name "_on_gpu", g_no_gpu);                 \
    } while (0)

/* --- programs ----------------------------------------------------------------- */

static vt_digits g_digits;
/* 64-48-32-10, batch 32, clipping, cosine schedule, batches committed */
static digitsmlp mlp_new(int act) {
    digitsmlp a = digitsmlp_new(&g_digits);
    a.nlayers = 3; a.sizes[1] = 48; a.sizes[2] = 32; a.sizes[3] = 10;
    a.act = act; a.batch = 32; a.clip = 5.0; a.lr_min = 3e-4; a.commit = 1;
    return a;
}

static chargpt g_text; /* the text, shared; each context gets its own chargpt */
static chargpt gpt_new(void) {
    chargpt a = g_text;
    a.cfg.layers = 2; a.cfg.width = 32; a.cfg.heads = 2; a.T = 16; a.B = 4; a.cfg.dropout = 0.1;
    a.steps = 200; a.lr = 3e-3;
    a.x = a.y = NULL;
    return a;
}
static void gpt_free(chargpt *a) { free(a->x); free(a->y); a->x = a->y = NULL; }

/* wider rows (reductions over several segments of 256 threads), other
   broadcasts, few-bit inputs (exactness certificates), an embedding read
   twice, a bias whose gradient sums values 2^40 apart (not exact) */
typedef struct { vt_tensor *w, *b, *lw, *lb, *v, *emb, *k; vt_optim *opt; } wide_app;
#define WR 6
#define WC 300
static vt_status wide_setup(vt_ctx *c, void *u) {
    wide_app *a = (wide_app *)u;
    int64_t nw[2] = {WC, 64}, nb[1] = {WC}, nv[1] = {WC}, ne[2] = {10, 64}, nk[2] = {WR, 1};
    vt_adamw_desc ad = vt_adamw_default();
    a->w = vt_param(c, "w", 2, nw);
    a->b = vt_param(c, "b", 1, nb);
    a->lw = vt_param(c, "lw", 1, nb);
    a->lb = vt_param(c, "lb", 1, nb);
    a->v = vt_param(c, "v", 1, nv);
    a->emb = vt_param(c, "emb", 2, ne);
    a->k = vt_param(c, "k", 2, nk);
    vt_init_normal(c, a->w, 3, 0, 0.1);
    vt_init_normal(c, a->b, 3, 1, 0.1);
    vt_init_normal(c, a->lw, 3, 2, 0.3);
    vt_init_normal(c, a->lb, 3, 3, 0.1);
    vt_init_normal(c, a->v, 3, 4, 1.0);
    vt_init_normal(c, a->emb, 3, 5, 1.0);
    vt_init_normal(c, a->k, 3, 6, 1.0);
    ad.lr = 1e-2;
    a->opt = vt_adamw_create(c, &ad);
    return vt_status_of(c);
}
static vt_status wide_step(vt_ctx *c, int64_t s, void *u) {
    wide_app *a = (wide_app *)u;
    int64_t nx[2] = {WR, 64}, ni[1] = {WR}, nm[2] = {WR, WC}, i;
    float xs[WR * 64], ms[WR * WC];
    int32_t ids[WR], ids2[WR], tg[WR];
    vt_tensor *x, *e1, *e2, *h, *hl, *y, *z, *sm, *ls, *ce, *l, *mk;
    for (i = 0; i < WR * 64; i++) xs[i] = (float)(vt_rng_u64(9, (uint64_t)s, (uint64_t)i) % 33) / 16.0f - 1.0f; /* k/16 */
    for (i = 0; i < WR * WC; i++) /* magnitudes from 2^-20 to 2^20 in one column: a sum that is not exact */
        ms[i] = (float)(vt_rng_normal(10, (uint64_t)s, (uint64_t)i) * ldexp(1.0, (int)(i % 41) - 20));
    for (i = 0; i < WR; i++) {
        ids[i] = (int32_t)(vt_rng_u64(11, (uint64_t)s, (uint64_t)i) % 3);
        ids2[i] = (int32_t)(i % 10);
        tg[i] = (int32_t)((i * 97 + s) % WC);
    }
    x = vt_from_f32(c, 2, nx, xs);
    e1 = vt_embedding(c, a->emb, vt_from_i32(c, 1, ni, ids));                 /* (WR,64), repeated ids */
    e2 = vt_embedding(c, a->emb, vt_from_i32(c, 1, ni, ids2));                /* the table read twice */
    e2 = vt_scale(c, e2, 1e-3);
    x = vt_add(c, x, e1);
    x = vt_add(c, x, e2);
    h = vt_linear(c, x, a->w, a->b);                                          /* (WR,WC) */
    mk = vt_from_f32(c, 2, nm, ms);
    l = vt_mul(c, h, mk);
    l = vt_scale(c, vt_mean(c, l), 1e-6);                                     /* dbias: wide sums */
    hl = vt_layernorm(c, h, a->lw, a->lb, 1e-5);                              /* rows of 300 */
    y = vt_add(c, hl, a->v);                                                  /* + (WC): sums over rows */
    z = vt_mul(c, y, a->k);                                                   /* * (WR,1): sums over columns */
    z = vt_sub(c, a->v, z);                                                   /* (WC) - (WR,WC) */
    z = vt_gelu(c, vt_scale(c, z, 8.0));                                      /* |z| > 20 too */
    sm = vt_softmax(c, z);
    ls = vt_log_softmax(c, hl);
    ce = vt_cross_entropy(c, z, vt_from_i32(c, 1, ni, tg));
    {
        int perm[2] = {1, 0};
        vt_tensor *zt = vt_contiguous(c, vt_permute(c, z, perm));            /* a strided copy */
        vt_tensor *cc = vt_concat(c, zt, vt_split(c, zt, 0, 10, 20), 0);     /* (WC+20, WR) */
        vt_tensor *dr = vt_dropout(c, cc, 0.5, 5);
        vt_tensor *sq = vt_mse(c, dr, vt_scale(c, cc, 0.5));
        l = vt_add(c, l, vt_scale(c, sq, 1e-2));
    }
    l = vt_add(c, l, ce);
    l = vt_add(c, l, vt_scale(c, vt_sum(c, vt_mul(c, sm, ls)), 1e-3));
    vt_backward(c, l);
    vt_optim_step(c, a->opt, 1e-2);
    return vt_status_of(c);
}

/* --- capturing every kernel's binary64 outputs, before the rounding point ------ */

typedef struct { int kind, exact; int64_t n; double *x, *e; } snap;
typedef struct { snap *s; int n, cap; } snaps;
static snaps g_cap[2];
static vt_ctx *g_capctx[2];
static vt__backend g_capbe[2];
static const vt__backend *g_capor[2];

static void cap_kernel(vt__kern *k) {
    int side = k->c == g_capctx[0] ? 0 : 1, i;
    snaps *S = &g_cap[side];
    g_capor[side]->kernel(k);
    if (vt_status_of(k->c) != VT_OK) return;
    for (i = 0; i < VT_MAX_SRC; i++) {
        const vt__kout *o = &k->out[i];
        snap *sn;
        size_t bytes = sizeof(double) * (size_t)(o->n ? o->n : 1);
        if (!o->x) continue;
        if (S->n == S->cap) {
            S->cap = S->cap * 2 + 64;
            S->s = (snap *)realloc(S->s, sizeof(snap) * (size_t)S->cap);
        }
        sn = &S->s[S->n++];
        sn->kind = o->kind; sn->exact = o->exact; sn->n = o->n;
        sn->x = (double *)malloc(bytes);
        sn->e = o->e ? (double *)malloc(bytes) : NULL;
        if (o->lz) { /* the cpu's lazy product bound: write it out here */
            int64_t q;
            memcpy(sn->x, o->x, bytes);
            for (q = 0; q < o->n; q++) sn->e[q] = vt__lazy_e(o->lz, q);
        } else if (k->c->be->has_memory) {
            k->c->be->b2h(k->c, sn->x, o->x, bytes);
            if (o->e) k->c->be->b2h(k->c, sn->e, o->e, bytes);
        } else {
            memcpy(sn->x, o->x, bytes);
            if (o->e) memcpy(sn->e, o->e, bytes);
        }
    }
}
static void cap_install(int side, vt_ctx *c) {
    g_capctx[side] = c;
    g_capor[side] = c->be;
    g_capbe[side] = *c->be;
    g_capbe[side].kernel = cap_kernel;
    c->be = &g_capbe[side];
}
static void cap_clear(void) {
    int s, i;
    for (s = 0; s < 2; s++) {
        for (i = 0; i < g_cap[s].n; i++) { free(g_cap[s].s[i].x); free(g_cap[s].s[i].e); }
        g_cap[s].n = 0;
    }
}
typedef struct { int64_t points, values, bounded, viol, emis; double worst; char first[200]; } cmp_stats;
/* both sides ran the same kernels on the same inputs: x within e_a + e_b,
   the same bounds (up to the order of the sums inside them), exact alike */
static void cap_compare(cmp_stats *st) {
    int i;
    if (g_cap[0].n != g_cap[1].n && !st->first[0])
        snprintf(st->first, sizeof st->first, "%d kernel outputs on one side, %d on the other", g_cap[0].n, g_cap[1].n);
    for (i = 0; i < g_cap[0].n && i < g_cap[1].n; i++) {
        const snap *a = &g_cap[0].s[i], *b = &g_cap[1].s[i];
        int64_t j;
        char nm[64];
        vt__kind_name(a->kind, nm, sizeof nm);
        vt_test_cover_kind(a->kind); /* the kernel check's coverage (every_op_covered) */
        st->points++;
        /* no bound array (vt__same_everywhere) reads as bounds of 0 */
        if (a->kind != b->kind || a->n != b->n || a->exact != b->exact) {
            if (!st->first[0]) snprintf(st->first, sizeof st->first, "output %d: %s[%lld] exact %d vs kind %d [%lld] exact %d", i, nm,
                                        (long long)a->n, a->exact, b->kind, (long long)b->n, b->exact);
            st->viol++;
            continue;
        }
        for (j = 0; j < a->n; j++) {
            double xa = a->x[j], xb = b->x[j], ea = a->e ? a->e[j] : 0, eb = b->e ? b->e[j] : 0, d = fabs(xa - xb);
            st->values++;
            if (a->exact || (ea == 0 && eb == 0)) {
                if (memcmp(&xa, &xb, 8) && !(xa == 0 && xb == 0 && a->exact == 0)) {
                    st->viol++;
                    if (!st->first[0]) snprintf(st->first, sizeof st->first, "%s[%lld] element %lld: %.17g vs %.17g, both exact",
                                                nm, (long long)a->n, (long long)j, xa, xb);
                }
                continue;
            }
            st->bounded++;
            if (!(d <= (ea + eb) * (1 + 0x1p-20))) {
                st->viol++;
                if (!st->first[0]) snprintf(st->first, sizeof st->first, "%s[%lld] element %lld: |%.17g - %.17g| > %g + %g", nm,
                                            (long long)a->n, (long long)j, xa, xb, ea, eb);
            } else if (ea + eb > 0 && d / (ea + eb) > st->worst) st->worst = d / (ea + eb);
            if (!(fabs(ea - eb) <= 1e-6 * (ea > eb ? ea : eb))) {
                st->emis++;
                if (!st->first[0]) snprintf(st->first, sizeof st->first, "%s[%lld] element %lld: bounds differ, %.17g vs %.17g", nm,
                                            (long long)a->n, (long long)j, ea, eb);
            }
        }
    }
    cap_clear();
}

/* --- trainer and auditor in lock step, chunks in memory ------------------------ */

typedef struct { int64_t steps_ok, entries, corrections, exact_t, exact_a; cmp_stats cmp; char why[700]; } lock_res;

/* trains with `train` and audits with `audit` step by step; after every step
   the state digests and the chunk hashes must agree. With capture, every
   kernel output of every step is compared (cap_compare). */
static int lockstep(const vt_program *pt, const vt_program *pa, int train, int audit, int64_t steps, vt_mode mode, int capture,
                    lock_res *r) {
    vt_desc dt = desc_on(train), da = desc_on(audit);
    vt_ctx *t, *a;
    int64_t s;
    memset(r, 0, sizeof *r);
    dt.log_memory = da.log_memory = 1;
    dt.mode = da.mode = mode;
    da.role = VT_ROLE_AUDIT;
    t = vt_create(&dt);
    a = vt_create(&da);
    if (!t || !a) {
        snprintf(r->why, sizeof r->why, "vt_create: %s", vt_last_error());
        vt_destroy(t); vt_destroy(a);
        return 0;
    }
    pt->setup(t, pt->user);
    pa->setup(a, pa->user);
    if (capture) { cap_install(0, t); cap_install(1, a); }
    for (s = 0; s < steps; s++) {
        const unsigned char *ch;
        size_t n;
        unsigned char d1[32], d2[32], h1[32], h2[32];
        vt_step_begin(t); pt->step(t, s, pt->user); vt_step_end(t);
        if (vt_status_of(t) != VT_OK) { snprintf(r->why, sizeof r->why, "%s trainer, step %lld: %s", dev_name(train), (long long)s, vt_error_message(t)); break; }
        if (vt_step_chunk(t, &ch, &n) != VT_OK) { snprintf(r->why, sizeof r->why, "no chunk at step %lld", (long long)s); break; }
        vt_feed_chunk(a, ch, n);
        vt_step_begin(a); pa->step(a, s, pa->user); vt_step_end(a);
        if (vt_status_of(a) != VT_OK) { snprintf(r->why, sizeof r->why, "%s auditor, step %lld: %s", dev_name(audit), (long long)s, vt_error_message(a)); break; }
        vt_weights_digest(t, d1);
        vt_weights_digest(a, d2);
        vt_step_chunk_sha(t, h1);
        vt_step_chunk_sha(a, h2);
        if (memcmp(d1, d2, 32) || memcmp(h1, h2, 32)) {
            snprintf(r->why, sizeof r->why, "step %lld: the %s differ", (long long)s, memcmp(d1, d2, 32) ? "state digests" : "chunk hashes");
            break;
        }
        if (capture) cap_compare(&r->cmp);
        r->steps_ok++;
    }
    {
        vt_log_stats st;
        vt_log_stats_get(t, &st);
        r->entries = st.entries;
        r->exact_t = st.exact;
        vt_log_stats_get(a, &st);
        r->corrections = st.corrections;
        r->exact_a = st.exact;
    }
    cap_clear();
    vt_destroy(t);
    vt_destroy(a);
    return r->steps_ok == steps;
}

/* --- the rounding point's primitives ------------------------------------------------ */

static int ents_equal(const vt__ents *a, const vt__ents *b, char *why, size_t n) {
    int64_t k;
    if (a->n != b->n) { snprintf(why, n, "%lld entries vs %lld", (long long)a->n, (long long)b->n); return 0; }
    for (k = 0; k < a->n; k++)
        if (a->e[k].i != b->e[k].i || vt__fbits(a->e[k].r) != vt__fbits(b->e[k].r) || a->e[k].full != b->e[k].full) {
            snprintf(why, n, "entry %lld: (%lld, %08x, %d) vs (%lld, %08x, %d)", (long long)k, (long long)a->e[k].i,
                     vt__fbits(a->e[k].r), a->e[k].full, (long long)b->e[k].i, vt__fbits(b->e[k].r), b->e[k].full);
            return 0;
        }
    return 1;
}

/* x values whose bounds put many of them across binary32 boundaries: every
   block shape (one element, a partial block, exact blocks, a block with more
   entries than it keeps before its emit pass), compact and full entries */
static void round_data(int64_t n, uint64_t seed, double *x, double *e) {
    int64_t i;
    for (i = 0; i < n; i++) {
        double v = vt_rng_normal(seed, 1, (uint64_t)i) * ldexp(1.0, (int)(vt_rng_u64(seed, 2, (uint64_t)i) % 60) - 30);
        uint64_t r = vt_rng_u64(seed, 3, (uint64_t)i);
        x[i] = v;
        e[i] = fabs(v) * 0x1p-55;                              /* mostly no entry */
        if (r % 7 == 0) e[i] = fabs(v) * 0x1p-26;               /* some entries, compact */
        if (r % 97 == 0) e[i] = fabs(v) * 0x1p-12;              /* full ones (span > 255 keys) */
        if (i >= 4096 && i < 6144) e[i] = fabs(v) * 0x1p-24;    /* a dense block: overflows its slot */
        if (r % 101 == 0) { x[i] = 0; e[i] = 1e-300; }          /* zeros with a bound: entries at +-0 */
        if (r % 103 == 0) { x[i] = ldexp(1.0, -140); e[i] = ldexp(1.0, -150); } /* subnormal binary32 */
        if (r % 211 == 0) e[i] = 0;
    }
}

TEST2(rounding_kernel_matches_cpu) {
    vt_desc dg = desc_on(g_dev), dc = desc_on(CPU);
    vt_ctx *g = vt_create(&dg), *c = vt_create(&dc);
    static const int64_t sizes[] = {1, 100, 2047, 2048, 2049, 70001};
    int si, compact;
    int64_t total_entries = 0;
    if (!g || !c) { CHECK(0, "vt_create: %s", vt_last_error()); vt_destroy(g); vt_destroy(c); return; }
    for (si = 0; si < (int)(sizeof sizes / sizeof sizes[0]); si++)
        for (compact = 0; compact < 2; compact++) {
            int64_t n = sizes[si], bc, bg, k;
            double *x = (double *)malloc(sizeof(double) * (size_t)n), *e = (double *)malloc(sizeof(double) * (size_t)n);
            double *xg = (double *)malloc(sizeof(double) * (size_t)n), *dx, *de;
            vt__ents ec, eg;
            char why[200];
            memset(&ec, 0, sizeof ec);
            memset(&eg, 0, sizeof eg);
            round_data(n, (uint64_t)(si * 2 + compact + 1), x, e);
            dx = (double *)g->be->alloc(g, sizeof(double) * (size_t)n, 0);
            de = (double *)g->be->alloc(g, sizeof(double) * (size_t)n, 0);
            g->be->h2b(g, dx, x, sizeof(double) * (size_t)n);
            g->be->h2b(g, de, e, sizeof(double) * (size_t)n);
            bg = g->be->round(g, dx, de, n, 1.0, compact, &eg);
            g->be->b2h(g, xg, dx, sizeof(double) * (size_t)n);
            bc = vt__cpu_round(c, x, e, n, 1.0, compact, &ec);
            CHECK(bg == -1 && bc == -1, "n=%lld: NaN reported at %lld (gpu) / %lld (cpu)", (long long)n, (long long)bg, (long long)bc);
            CHECK(ents_equal(&ec, &eg, why, sizeof why), "n=%lld compact=%d: %s", (long long)n, compact, why);
            for (k = 0; k < n && !memcmp(&x[k], &xg[k], 8); k++) {}
            CHECK(k == n, "n=%lld: rounded value %lld differs: %.17g vs %.17g", (long long)n, (long long)k, x[k], xg[k]);
            total_entries += eg.n;
            if (n == 70001 && compact) { /* the auditor's gather and put */
                vt__rent at[5];
                double gx[5], ge[5];
                vt__ents pe;
                memset(&pe, 0, sizeof pe);
                for (k = 0; k < 5; k++) { at[k].i = k * 13001 + 7; vt__ents_push(c, &pe, at[k].i, (float)(k + 0.5), 0); }
                g->be->h2b(g, dx, x, sizeof(double) * (size_t)n); /* x is rounded now; e unchanged */
                g->be->gather(g, dx, de, at, 5, gx, ge);
                for (k = 0; k < 5; k++)
                    CHECK(gx[k] == x[at[k].i] && ge[k] == e[at[k].i], "gather %lld: %g %g vs %g %g", (long long)k, gx[k], ge[k],
                          x[at[k].i], e[at[k].i]);
                g->be->put(g, dx, &pe);
                g->be->b2h(g, xg, dx, sizeof(double) * (size_t)n);
                for (k = 0; k < 5; k++) CHECK(xg[at[k].i] == (double)(k + 0.5), "put %lld: %g", (long long)k, xg[at[k].i]);
                CHECK(xg[8] == x[8], "put changed another element");
            }
            free(x); free(e); free(xg); free(ec.e); free(eg.e);
            vt__reset_life(g, 0);
        }
    {   /* the first NaN wins, in any block; cast and check-only */
        int64_t n = 70001, bg, bc, k;
        double *x = (double *)malloc(sizeof(double) * (size_t)n), *e = (double *)malloc(sizeof(double) * (size_t)n), *dx, *xg;
        round_data(n, 9, x, e);
        x[60000] = NAN; x[5000] = NAN; x[3000] = NAN;
        dx = (double *)g->be->alloc(g, sizeof(double) * (size_t)n, 0);
        g->be->h2b(g, dx, x, sizeof(double) * (size_t)n);
        bg = g->be->cast(g, dx, n, 1);
        bc = vt__cpu_cast(c, x, n, 1);
        CHECK(bg == 3000 && bc == 3000, "first NaN: gpu %lld, cpu %lld (want 3000)", (long long)bg, (long long)bc);
        x[3000] = x[5000] = x[60000] = 1.0 / 3;
        g->be->h2b(g, dx, x, sizeof(double) * (size_t)n);
        xg = e;
        CHECK(g->be->cast(g, dx, n, 0) == -1, "cast found a NaN");
        g->be->b2h(g, xg, dx, sizeof(double) * (size_t)n);
        for (k = 0; k < n && xg[k] == (double)(float)x[k]; k++) {}
        CHECK(k == n, "cast: element %lld is %.17g, want %.17g", (long long)k, xg[k], (double)(float)x[k]);
        free(x); free(e);
        vt__reset_life(g, 0);
    }
    NOTE("%lld entries compared, all equal (index, value, compact flag) and in index order", (long long)total_entries);
    vt_destroy(g);
    vt_destroy(c);
}

TEST2(block_digests_match_cpu) {
    vt_desc dg = desc_on(g_dev), dc = desc_on(CPU);
    vt_ctx *g = vt_create(&dg), *c = vt_create(&dc);
    static const int64_t sizes[] = {1, 16383, 16384, 16385, 50000};
    int i;
    if (!g || !c) { CHECK(0, "vt_create: %s", vt_last_error()); vt_destroy(g); vt_destroy(c); return; }
    for (i = 0; i < 5; i++) {
        char nm[16];
        vt_tensor *pg, *pc;
        unsigned char a[32], b[32], *blk = (unsigned char *)malloc(32 * (size_t)(sizes[i] / 16384 + 2)), one[32];
        int64_t q;
        snprintf(nm, sizeof nm, "p%d", i);
        pg = vt_param(g, nm, 1, &sizes[i]);
        pc = vt_param(c, nm, 1, &sizes[i]);
        vt_init_normal(g, pg, 5, (uint64_t)i, 1.0);
        vt_init_normal(c, pc, 5, (uint64_t)i, 1.0);
        vt__bp(g, pg); /* now on the device too: its digest is computed there */
        CHECK(g->be->block_digests(g, pg, blk) == 1, "the device did not hash %s", nm);
        for (q = 0; q < (sizes[i] + 16383) / 16384; q++) {
            vt__block_digest(pc, q, one);
            CHECK(!memcmp(one, blk + 32 * q, 32), "%s: block %lld differs", nm, (long long)q);
        }
        vt_tensor_digest(g, pg, a);
        vt_tensor_digest(c, pc, b);
        CHECK(!memcmp(a, b, 32), "%s: digests differ", nm);
        free(blk);
    }
    vt_destroy(g);
    vt_destroy(c);
}

/* --- every kernel against the CPU op ------------------------------------------------- */

static void ops_check(const char *what, vt_program p1, vt_program p2, int64_t steps) {
    lock_res r;
    int dir;
    for (dir = 0; dir < 2; dir++) {
        int train = dir ? CPU : g_dev, audit = dir ? g_dev : CPU;
        int ok = lockstep(&p1, &p2, train, audit, steps, VT_MODE_VERIFIED, 1, &r);
        CHECK(ok, "%s, %s-trained: %s", what, dev_name(train), r.why);
        CHECK(r.cmp.viol == 0 && r.cmp.emis == 0 && !r.cmp.first[0], "%s, %s-trained: %lld values outside the bounds, %lld bounds differ; first: %s",
              what, dev_name(train), (long long)r.cmp.viol, (long long)r.cmp.emis, r.cmp.first);
        CHECK(r.cmp.bounded > 1000, "%s: only %lld bounded values compared", what, (long long)r.cmp.bounded);
        if (!dir)
            NOTE("%s: %lld kernel outputs, %lld values (%lld with a bound) match the cpu; largest |x_gpu - x_cpu| = %.2g (e_gpu + e_cpu)",
                 what, (long long)r.cmp.points, (long long)r.cmp.values, (long long)r.cmp.bounded, r.cmp.worst);
    }
}

TEST2(every_op_matches_cpu) {
    allops_app a1, a2;
    wide_app w1, w2;
    digitsmlp m1 = mlp_new(1), m2 = mlp_new(1);
    chargpt c1 = gpt_new(), c2 = gpt_new();
    vt_program p1, p2;
    p1 = allops_program(&a1);
    p2 = allops_program(&a2);
    ops_check("all ops", p1, p2, 3);
    p1.setup = p2.setup = wide_setup; p1.step = p2.step = wide_step;
    p1.user = &w1; p2.user = &w2;
    ops_check("wide rows", p1, p2, 3);
    ops_check("mlp (tanh)", digitsmlp_program(&m1), digitsmlp_program(&m2), 3);
    m1 = mlp_new(2); m2 = mlp_new(2);
    ops_check("mlp (gelu)", digitsmlp_program(&m1), digitsmlp_program(&m2), 3);
    ops_check("char gpt", chargpt_program(&c1), chargpt_program(&c2), 3);
    gpt_free(&c1); gpt_free(&c2);
}

/* every_op_matches_cpu compared every op of VT__OP_LIST, forward and
   backward: an op added to vtrain.h without a CUDA kernel, or missing from
   tests/allops.h, fails here */
TEST(every_op_covered) { vt_test_check_coverage("the CUDA kernel check (every_op_matches_cpu)", 0); }

/* --- training on one backend, auditing on the other ------------------------------------ */

TEST2(mlp_gpu_trained_cpu_audited) {
    digitsmlp a = mlp_new(0), b = mlp_new(0);
    vt_program pa = digitsmlp_program(&a), pb = digitsmlp_program(&b);
    lock_res r;
    CHECK(lockstep(&pa, &pb, g_dev, CPU, 60, VT_MODE_VERIFIED, 0, &r), "%s", r.why);
    NOTE("%s-trained MLP, 60 steps, every step's state identical on the cpu; %lld log entries", dev_name(g_dev), (long long)r.entries);
    a = mlp_new(2); b = mlp_new(2);
    CHECK(lockstep(&pa, &pb, CPU, g_dev, 60, VT_MODE_VERIFIED, 0, &r), "reverse: %s", r.why);
    NOTE("cpu-trained MLP (gelu) audited on the %s: 60 steps identical, %lld entries, %lld corrected its rounding",
         dev_name(g_dev), (long long)r.entries, (long long)r.corrections);
}

/* the digits CNN (convolutions, batch norm with running statistics, max
   pooling): trained on the device, every step's state identical on the
   cpu, and the reverse */
TEST2(cnn_gpu_trained_cpu_audited) {
    digitscnn a = digitscnn_new(&g_digits), b = digitscnn_new(&g_digits);
    vt_program pa, pb;
    lock_res r;
    a.width = b.width = 4; a.batch = b.batch = 16; a.steps = b.steps = 12;
    pa = digitscnn_program(&a); pb = digitscnn_program(&b);
    CHECK(lockstep(&pa, &pb, g_dev, CPU, 12, VT_MODE_VERIFIED, 0, &r), "%s", r.why);
    NOTE("%s-trained digits CNN, 12 steps, every step's state (running statistics included) identical on the cpu; %lld log entries",
         dev_name(g_dev), (long long)r.entries);
    CHECK(lockstep(&pa, &pb, CPU, g_dev, 12, VT_MODE_VERIFIED, 0, &r), "reverse: %s", r.why);
}

TEST2(gpt_gpu_trained_cpu_audited) {
    chargpt a = gpt_new(), b = gpt_new();
    vt_program pa = chargpt_program(&a), pb = chargpt_program(&b);
    lock_res r;
    CHECK(lockstep(&pa, &pb, g_dev, CPU, 30, VT_MODE_VERIFIED, 0, &r), "%s", r.why);
    NOTE("%s-trained char GPT, 30 steps identical on the cpu: %lld entries, %lld corrected the cpu's own rounding", dev_name(g_dev),
         (long long)r.entries, (long long)r.corrections);
    CHECK(r.entries > 0, "no log entries in 30 steps");
    CHECK(lockstep(&pa, &pb, CPU, g_dev, 30, VT_MODE_VERIFIED, 0, &r), "reverse: %s", r.why);
    NOTE("cpu-trained char GPT audited on the %s: 30 steps identical, %lld corrections", dev_name(g_dev), (long long)r.corrections);
    gpt_free(&a); gpt_free(&b);
}

/* Least squares trained to its minimum (test_replay's round-only case): near
   the minimum a gradient is the small sum of large terms that cancel, so the
   summation order decides its rounding now and then. Plain rounding on the
   GPU and on the CPU drifts apart; with the log, the CPU replays the GPU's
   run and the log's entries correct the CPU's own rounding. */
typedef struct { vt_tensor *w; vt_optim *opt; float *x, *y; } lsq_app;
#define LSQ_IN 128
#define LSQ_OUT 32
#define LSQ_R 512
static float *g_lsq_x, *g_lsq_y;
static vt_status lsq_setup(vt_ctx *c, void *u) {
    lsq_app *a = (lsq_app *)u;
    int64_t n[2] = {LSQ_OUT, LSQ_IN};
    vt_sgd_desc sd = vt_sgd_default();
    a->w = vt_param(c, "w", 2, n);
    vt_init_normal(c, a->w, 1, 0, 0.01);
    sd.lr = 10; sd.momentum = 0.5;
    a->opt = vt_sgd_create(c, &sd);
    return vt_status_of(c);
}
static vt_status lsq_step(vt_ctx *c, int64_t s, void *u) {
    lsq_app *a = (lsq_app *)u;
    int64_t xs[2] = {LSQ_R, LSQ_IN}, ys[2] = {LSQ_R, LSQ_OUT};
    vt_tensor *x, *y, *h;
    (void)s;
    x = vt_from_f32(c, 2, xs, g_lsq_x);
    y = vt_from_f32(c, 2, ys, g_lsq_y);
    h = vt_linear(c, x, a->w, NULL);
    vt_backward(c, vt_mse(c, h, y));
    vt_optim_step(c, a->opt, 10);
    return vt_status_of(c);
}

TEST2(boundary_cases_agree_with_cpu) {
    lsq_app a, b;
    vt_program pa, pb;
    vt_desc d;
    vt_report rg, rc;
    lock_res r;
    int64_t i;
    if (!g_lsq_x) {
        g_lsq_x = (float *)malloc(sizeof(float) * LSQ_R * LSQ_IN);
        g_lsq_y = (float *)malloc(sizeof(float) * LSQ_R * LSQ_OUT);
        for (i = 0; i < LSQ_R * LSQ_IN; i++) g_lsq_x[i] = (float)vt_rng_normal(5, 0, (uint64_t)i);
        for (i = 0; i < LSQ_R * LSQ_OUT; i++) g_lsq_y[i] = (float)vt_rng_normal(6, 0, (uint64_t)i);
    }
    pa.setup = pb.setup = lsq_setup; pa.step = pb.step = lsq_step; pa.on_step = pb.on_step = NULL;
    pa.user = &a; pb.user = &b;
    d = desc_on(g_dev); d.mode = VT_MODE_ROUND_ONLY;
    vt_run(&d, &pa, 60, &rg);
    d = desc_on(CPU); d.mode = VT_MODE_ROUND_ONLY;
    vt_run(&d, &pa, 60, &rc);
    CHECK(rg.status == VT_OK && rc.status == VT_OK, "%s / %s", rg.message, rc.message);
    CHECK(memcmp(rg.digest, rc.digest, 32) != 0, "round-only: the %s and the cpu agree after 60 steps", dev_name(g_dev));
    CHECK(lockstep(&pa, &pb, g_dev, CPU, 60, VT_MODE_VERIFIED, 0, &r), "verified: %s", r.why);
    /* what round-only lacked: the products' boundary cases, evaluated
       exactly on both sides (the device's vtk_exact, the cpu's own) */
    CHECK(r.exact_t > 0 && r.exact_a > 0, "no product value was evaluated exactly (%lld on the %s, %lld on the cpu)",
          (long long)r.exact_t, dev_name(g_dev), (long long)r.exact_a);
    NOTE("round-only: %s and cpu weights differ after 60 steps; verified: identical at every step, %lld product values "
         "evaluated exactly on the %s and %lld on the cpu, %lld log entries", dev_name(g_dev), (long long)r.exact_t,
         dev_name(g_dev), (long long)r.exact_a, (long long)r.entries);
}

/* the whole pipeline through files: a transcript written by the GPU trainer
   (log, commitments with device-side digests, checkpoints, Merkle root) is
   audited by the CPU, then by the GPU from its checkpoint */
TEST2(gpu_transcript_audited_on_cpu) {
    chargpt a = gpt_new();
    vt_program p = chargpt_program(&a);
    vt_desc d = desc_on(g_dev);
    vt_report r;
    char dir[64];
    char cmd[128];
    snprintf(dir, sizeof dir, "build/tc_%s", g_dev == VT_CUDA_EMULATOR ? "emu" : "gpu");
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) printf("    (could not remove %s)\n", dir);
    d.transcript = dir;
    d.ckpt_every = 10;
    vt_run(&d, &p, 24, &r);
    CHECK(r.status == VT_OK && r.steps == 24, "training: %s", r.message);
    d = desc_on(CPU);
    d.transcript = dir;
    d.role = VT_ROLE_AUDIT;
    vt_run(&d, &p, 24, &r);
    CHECK(r.status == VT_OK && r.steps == 24, "cpu audit: %s", r.message);
    d = desc_on(g_dev);
    d.transcript = dir;
    d.role = VT_ROLE_AUDIT;
    d.audit_from = 10;
    vt_run(&d, &p, 24, &r);
    CHECK(r.status == VT_OK && r.steps == 14, "%s audit from the checkpoint at step 10: %s (%lld steps)", dev_name(g_dev), r.message,
          (long long)r.steps);
    gpt_free(&a);
}

/* --- modes ---------------------------------------------------------------------------------- */

TEST2(native_gpu_differs_from_cpu) {
    digitsmlp a = mlp_new(1);
    vt_program p = digitsmlp_program(&a);
    vt_desc d = desc_on(g_dev);
    vt_report rg, rc;
    d.mode = VT_MODE_NATIVE;
    vt_run(&d, &p, 40, &rg);
    d = desc_on(CPU);
    d.mode = VT_MODE_NATIVE;
    vt_run(&d, &p, 40, &rc);
    CHECK(rg.status == VT_OK && rc.status == VT_OK, "native runs: %s / %s", rg.message, rc.message);
    CHECK(memcmp(rg.digest, rc.digest, 32) != 0, "native %s and cpu runs ended with identical weights", dev_name(g_dev));
    CHECK(fabs(rg.last_loss - rc.last_loss) < 0.05, "native losses far apart: %g vs %g", rg.last_loss, rc.last_loss);
    NOTE("native (binary32, SGEMM on the gpu): final loss %.6f on the %s, %.6f on the cpu; weights differ", rg.last_loss,
         dev_name(g_dev), rc.last_loss);
}

TEST2(other_modes_run) {
    digitsmlp a = mlp_new(2), b = mlp_new(2);
    vt_program pa = digitsmlp_program(&a), pb = digitsmlp_program(&b);
    vt_desc d;
    vt_report rg, rc;
    lock_res r;
    int m;
    for (m = 0; m < 2; m++) { /* fp64 and round-only: no log; the losses stay close to the cpu's */
        vt_mode mode = m ? VT_MODE_ROUND_ONLY : VT_MODE_FP64;
        d = desc_on(g_dev); d.mode = mode;
        vt_run(&d, &pa, 30, &rg);
        d = desc_on(CPU); d.mode = mode;
        vt_run(&d, &pa, 30, &rc);
        CHECK(rg.status == VT_OK && rc.status == VT_OK, "%s: %s / %s", vt_mode_name(mode), rg.message, rc.message);
        CHECK(fabs(rg.last_loss - rc.last_loss) < 1e-4 * fabs(rc.last_loss) + 1e-6, "%s: loss %.9g on the %s, %.9g on the cpu",
              vt_mode_name(mode), rg.last_loss, dev_name(g_dev), rc.last_loss);
    }
    { /* the probabilistic bound: GPU-trained, CPU-audited */
        vt_desc dt = desc_on(g_dev), da = desc_on(CPU);
        vt_ctx *t, *au;
        int64_t s;
        int same = 1;
        dt.bound = VT_BOUND_PROBABILISTIC; dt.lambda = 10; dt.log_memory = 1;
        da.role = VT_ROLE_AUDIT; da.log_memory = 1;
        t = vt_create(&dt); au = vt_create(&da);
        if (!t || !au) { CHECK(0, "%s", vt_last_error()); vt_destroy(t); vt_destroy(au); return; }
        pa.setup(t, pa.user); pb.setup(au, pb.user);
        for (s = 0; s < 20 && same; s++) {
            const unsigned char *ch; size_t n; unsigned char x1[32], x2[32];
            vt_step_begin(t); pa.step(t, s, pa.user); vt_step_end(t);
            vt_step_chunk(t, &ch, &n); vt_feed_chunk(au, ch, n);
            vt_step_begin(au); pb.step(au, s, pb.user); vt_step_end(au);
            vt_weights_digest(t, x1); vt_weights_digest(au, x2);
            same = vt_status_of(t) == VT_OK && vt_status_of(au) == VT_OK && !memcmp(x1, x2, 32);
        }
        CHECK(same, "probabilistic bound: differs at step %lld: %s / %s", (long long)(s - 1), vt_error_message(t), vt_error_message(au));
        vt_destroy(t); vt_destroy(au);
    }
    (void)r;
}

TEST2(two_gpu_runs_write_identical_logs) {
    chargpt a = gpt_new();
    vt_program p = chargpt_program(&a);
    vt_desc d = desc_on(g_dev);
    vt_report r1, r2;
    unsigned char *b1, *b2;
    int64_t n1, n2;
    d.log_path = "build/tc_run1.vtlog";
    vt_run(&d, &p, 20, &r1);
    d.log_path = "build/tc_run2.vtlog";
    vt_run(&d, &p, 20, &r2);
    CHECK(r1.status == VT_OK && r2.status == VT_OK, "%s / %s", r1.message, r2.message);
    b1 = vt__slurp("build/tc_run1.vtlog", &n1);
    b2 = vt__slurp("build/tc_run2.vtlog", &n2);
    CHECK(b1 && b2 && n1 == n2 && !memcmp(b1, b2, (size_t)n1), "the two logs differ (%lld and %lld bytes)", (long long)n1, (long long)n2);
    CHECK(r1.log.entries + r1.log.exact > 0, "no entries and no exact evaluations: the comparison says little");
    NOTE("two %s runs (threads scheduled in different orders): logs of %lld bytes, %lld entries (%lld exact evaluations), "
         "byte-identical", dev_name(g_dev), (long long)n1, (long long)r1.log.entries, (long long)r1.log.exact);
    free(b1); free(b2);
    gpt_free(&a);
}

/* --- selection and errors -------------------------------------------------------------- */

TEST(backend_selection) {
    vt_desc d = vt_desc_default();
    vt_ctx *c;
    digitsmlp a = mlp_new(0);
    vt_program p = digitsmlp_program(&a);
    vt_report r;
    d.backend = VT_BACKEND_CUDA;
    d.device = 0;
    c = vt_create(&d);
    if (!g_have_gpu) {
        CHECK(!c && vt_last_status() == VT_ERR_BACKEND, "vt_create on a machine without a GPU returned %p (%s)", (void *)c,
              vt_last_error());
        CHECK(strstr(vt_last_error(), "no CUDA") != NULL, "the message does not say plainly: %s", vt_last_error());
        NOTE("%s", vt_last_error());
    } else CHECK(c != NULL, "GPU 0: %s", vt_last_error());
    vt_destroy(c);
    d.device = 999;
    c = vt_create(&d);
    CHECK(!c && strstr(vt_last_error(), "CUDA"), "device 999: %s", vt_last_error());
    vt_destroy(c);
    d.backend = (vt_backend_kind)7;
    CHECK(!vt_create(&d) && strstr(vt_last_error(), "unknown backend"), "%s", vt_last_error());
    /* the CPU path is unaffected */
    d = desc_on(CPU);
    vt_run(&d, &p, 5, &r);
    CHECK(r.status == VT_OK && r.steps == 5, "cpu run after the failed ones: %s", r.message);
}

typedef struct { int what; vt_tensor *w, *emb; } bad_app;
static vt_status bad_setup(vt_ctx *c, void *u) {
    bad_app *a = (bad_app *)u;
    int64_t nw[2] = {8, 16}, ne[2] = {10, 16};
    a->w = vt_param(c, "w", 2, nw);
    a->emb = vt_param(c, "emb", 2, ne);
    vt_init_normal(c, a->w, 1, 0, 0.3);
    vt_init_normal(c, a->emb, 1, 1, 0.3);
    return vt_status_of(c);
}
static vt_status bad_step(vt_ctx *c, int64_t s, void *u) {
    bad_app *a = (bad_app *)u;
    float x[4 * 16];
    int32_t ids[4] = {1, 2, 3, 4}, tg[4] = {0, 1, 2, 3};
    int64_t nx[2] = {4, 16}, ni[1] = {4}, i;
    vt_tensor *h;
    for (i = 0; i < 64; i++) x[i] = (float)vt_rng_normal(2, (uint64_t)s, (uint64_t)i);
    if (a->what == 0 && s == 2) x[37] = NAN;       /* a NaN in the batch */
    if (a->what == 1 && s == 1) ids[2] = 10;        /* an id past the table */
    if (a->what == 2 && s == 1) tg[3] = -1;         /* a target outside the classes */
    h = vt_add(c, vt_from_f32(c, 2, nx, x), vt_embedding(c, a->emb, vt_from_i32(c, 1, ni, ids)));
    h = vt_linear(c, h, a->w, NULL);
    vt_backward(c, vt_cross_entropy(c, h, vt_from_i32(c, 1, ni, tg)));
    return vt_status_of(c);
}

TEST2(bad_input_same_errors) {
    int w;
    for (w = 0; w < 3; w++) {
        bad_app a;
        vt_program p;
        vt_desc d;
        vt_report rg, rc;
        memset(&a, 0, sizeof a);
        a.what = w;
        p.setup = bad_setup; p.step = bad_step; p.on_step = NULL; p.user = &a;
        d = desc_on(g_dev);
        vt_run(&d, &p, 4, &rg);
        d = desc_on(CPU);
        vt_run(&d, &p, 4, &rc);
        CHECK(rc.status != VT_OK && rg.status == rc.status && rg.first_bad_step == rc.first_bad_step && !strcmp(rg.message, rc.message),
              "case %d: %s: %s (step %lld)  vs cpu %s: %s (step %lld)", w, vt_status_name(rg.status), rg.message,
              (long long)rg.first_bad_step, vt_status_name(rc.status), rc.message, (long long)rc.first_bad_step);
        if (g_dev == VT_CUDA_EMULATOR) NOTE("%s", rg.message);
    }
}

/* --- the emulator's own guards ----------------------------------------------------------- */

/* host code that reads device memory directly works in an emulator but not
   on a GPU: here it faults */
TEST(emulator_device_memory_is_not_host_memory) {
    vt_desc d = desc_on(VT_CUDA_EMULATOR);
    vt_ctx *c = vt_create(&d);
    int64_t n = 100;
    vt_tensor *t;
    pid_t pid;
    int st = 0;
    if (!c) { CHECK(0, "%s", vt_last_error()); return; }
    t = vt_param(c, "t", 1, &n);
    vt_init_const(c, t, 1.5);
    vt__bp(c, t);
    CHECK(vt_item(c, t) == 1.5, "the device copy is not the host's: %g", vt_item(c, t));
    fflush(stdout);
    pid = fork();
    if (pid == 0) {
        volatile double v = ((volatile double *)t->bmem)[3]; /* a device address, read from the host */
        _exit(v == 1.5 ? 0 : 1);
    }
    waitpid(pid, &st, 0);
    CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGSEGV, "reading device memory from the host did not fault (status %d)", st);
    vt_destroy(c);
}

int main(int argc, char **argv) {
    vt_desc d = desc_on(0);
    vt_ctx *c;
    TEST_FILTER(argc, argv);
    setvbuf(stdout, NULL, _IONBF, 0);
    /* cap_kernel reads the CPU's outputs before their rounding point: the
       attention kernels' fused rounding (A FUSED CAUSAL POINT in vtrain.h)
       and a product's rounding in its GEMM (A FUSED PRODUCT) would have
       rounded them already (and the first written no bound) */
    vt__no_fuse = 1;
    vt__no_gfuse = 1;
    if (vt_digits_load("data/digits.csv", &g_digits) != VT_OK) { printf("%s\n0 passed, 1 failed\n", vt_last_error()); return 1; }
    if (chargpt_load(&g_text, "data/kjv_nt.txt") != VT_OK) { printf("%s\n0 passed, 1 failed\n", vt_last_error()); return 1; }
    c = vt_create(&d);
    g_have_gpu = c != NULL;
    if (c) printf("GPU 0: %s (compute capability %d.%d)\n", vt__cus(c)->devname, vt__cus(c)->cc_major, vt__cus(c)->cc_minor);
    else {
        snprintf(g_no_gpu, sizeof g_no_gpu, "%s", vt_last_error());
        printf("skip: no CUDA device (%s): the GPU runs below are skipped; every test runs on the emulator\n", g_no_gpu);
    }
    vt_destroy(c);
    /* the emulator's memory guard (>>cuda-emu) on where host code touches
       the most device addresses; off for the long runs (it costs two
       mprotect calls per device call) */
    vt__emu_guard = 1;
    RUN2(rounding_kernel_matches_cpu);
    RUN2(block_digests_match_cpu);
    RUN2(every_op_matches_cpu);
    RUN(every_op_covered);
    RUN2(gpu_transcript_audited_on_cpu);
    RUN(backend_selection);
    RUN2(bad_input_same_errors);
    RUN(emulator_device_memory_is_not_host_memory);
    vt__emu_guard = 0;
    RUN2(mlp_gpu_trained_cpu_audited);
    RUN2(cnn_gpu_trained_cpu_audited);
    RUN2(gpt_gpu_trained_cpu_audited);
    RUN2(boundary_cases_agree_with_cpu);
    RUN2(native_gpu_differs_from_cpu);
    RUN2(other_modes_run);
    RUN2(two_gpu_runs_write_identical_logs);
    free(g_lsq_x);
    free(g_lsq_y);
    vt_digits_free(&g_digits);
    chargpt_free(&g_text);
    return TEST_SUMMARY();
}
