/* tests/test_grad.c - finite-difference gradient checks, in binary64, for
   every op of the public API and for the two models.

   METHOD. A context in VT_MODE_FP64 (nothing is rounded to binary32) holds
   the inputs whose gradient we want as parameters, filled with seeded random
   values. One step builds y = op(inputs), reduces it to a scalar with a
   random projection L = sum(y * r) (r fixed, N(0,1), so every output element
   gets its own upstream gradient), calls vt_backward and reads the gradients.
   In the same step the forward output y is compared with a reference written
   here in plain C (where the case has one). Then, for every element of every
   parameter (or a seeded random subset of at least 24 elements of the larger
   ones), the loss is recomputed in separate steps at x + h and x - h, and

       numeric  = (L(x + h) - L(x - h)) / ((x + h) - (x - h))
       error    = |analytic - numeric| / max(|numeric|, floor)

   must stay below the case's tolerance. Defaults (ops): h = 1e-6 max(1, |x|),
   floor = 1, tol = 1e-6: the test inputs, projections and hence the gradients
   are O(1); central differences carry a truncation error ~h^2 |f'''| ~ 1e-12
   and a cancellation error ~1e-16 |L| / h ~ 1e-10 |L|, both far below 1e-6.
   Looser settings are stated where they are used:

       ops (every op, views, used twice, two backward)  h 1e-6  floor 1     tol 1e-6
       MLP and GPT in binary64 (gradients 1e-4..1)      h 1e-6  floor 1e-3  tol 1e-5
       MLP in VT_MODE_VERIFIED (binary32 values)        h 1e-2  floor 1e-2  tol 1e-2

   (measured over 40 seeds: the worst error is below 0.07 tol in binary64
   and below 0.35 tol in verified mode).
   Every case prints its worst error with NOTE, so the log shows how tight
   each check is; a failing element is printed with parameter, index,
   analytic and numeric values.

   The forward reference check uses |y - ref| <= 1e-10 max(1, |ref|): both
   sides compute in binary64, only the summation order (and vtrain's own
   exp/tanh) can differ.

   DROPOUT draws its mask from the step number (vt_step_index). The checks
   for it (and for the GPT with dropout) evaluate every finite-difference loss
   in a fresh context advanced by empty steps to the same step number as the
   analytic step, and compare the forward output with a mask computed here.

   Seeds: every case has its own seed derived from a base seed (default
   20240601, or the environment variable VT_TEST_SEED), printed at start. */
#define VTRAIN_IMPLEMENTATION
#include "../vtrain.h"
#include "test.h"

/* ==========================================================================
   harness
   ========================================================================== */

#define GC_MAXP 8
#define GC_MAXI 512

static uint64_t gc_base_seed = 20240601u;
static uint64_t gc_seed_counter = 0;

enum { INIT_NORMAL, INIT_AWAY, INIT_ONE };

typedef struct {
    const char *name;
    int nd;
    int64_t ne[4];
    int init;     /* INIT_NORMAL: scale N(0,1); INIT_AWAY: sign(z)(0.2+|z|) scale; INIT_ONE: 1 + scale N(0,1) */
    double scale;
} gc_pspec;

typedef struct gc gc;
struct gc {
    const char *name;
    uint64_t seed;
    vt_mode mode;
    int np;                      /* parameters of the default setup */
    gc_pspec ps[GC_MAXP];
    vt_tensor *p[GC_MAXP];       /* this context's parameters (default setup) */
    int (*setup)(vt_ctx *c, gc *g);             /* NULL: parameters from ps */
    vt_tensor *(*build)(vt_ctx *c, gc *g);      /* inside a step: returns the scalar loss */
    int (*analytic)(vt_ctx *c, gc *g);          /* NULL: build + vt_backward; else does its own backward calls */
    void (*ref)(const gc *g, double *const *vals, double *out); /* reference of g->y, or NULL */
    vt_tensor *y;                /* set by build: the op output to compare with ref */
    int ia[8];
    double da[8];
    int32_t iv[GC_MAXI];         /* integer data (targets, indices) */
    int niv;
    void *user;                  /* case state that setup writes (a model) */
    size_t user_size;
    /* options */
    double h, tol, floor, ftol;
    int nall, nsub;
    int fresh;                   /* each finite-difference loss in a fresh context */
    int pre_steps;               /* empty steps before the analytic step (and in fresh contexts) */
    int zero_ok;                 /* the true gradient is 0 everywhere (no vacuity check) */
    const char *hint;            /* printed when the case fails: what the check expects */
    /* results */
    double worst, worst_fwd;
    int64_t checked;
};

static void gc_init(gc *g, const char *name) {
    memset(g, 0, sizeof *g);
    g->name = name;
    g->seed = vt_rng_u64(gc_base_seed, 1000 + gc_seed_counter++, 0);
    g->mode = VT_MODE_FP64;
    g->h = 1e-6;
    g->tol = 1e-6;
    g->floor = 1.0;
    g->ftol = 1e-10;
    g->nall = 64;
    g->nsub = 24;
}

static void gc_param(gc *g, const char *name, int init, double scale, int nd, int64_t d0, int64_t d1, int64_t d2,
                     int64_t d3) {
    gc_pspec *s = &g->ps[g->np++];
    s->name = name;
    s->nd = nd;
    s->ne[0] = d0; s->ne[1] = d1; s->ne[2] = d2; s->ne[3] = d3;
    s->init = init;
    s->scale = scale;
}

static int64_t gc_numel(int nd, const int64_t *ne) {
    int64_t n = 1;
    int i;
    for (i = 0; i < nd; i++) n *= ne[i];
    return n;
}

static vt_ctx *gc_ctx(vt_mode mode) {
    vt_desc d = vt_desc_default();
    d.mode = mode;
    d.order.threads = 1;
    return vt_create(&d);
}

static int gc_default_setup(vt_ctx *c, gc *g) {
    int k;
    for (k = 0; k < g->np; k++) {
        const gc_pspec *s = &g->ps[k];
        int64_t i, n = gc_numel(s->nd, s->ne);
        double *v = (double *)malloc(sizeof(double) * (size_t)(n ? n : 1));
        g->p[k] = vt_param(c, s->name, s->nd, s->ne);
        if (!g->p[k]) { free(v); return 0; }
        for (i = 0; i < n; i++) {
            double z = vt_rng_normal(g->seed, 100 + (uint64_t)k, (uint64_t)i);
            v[i] = s->init == INIT_NORMAL ? s->scale * z
                 : s->init == INIT_AWAY   ? (z < 0 ? -1 : 1) * (0.2 + fabs(z)) * s->scale
                                          : 1 + s->scale * z;
        }
        vt_write_f64(c, g->p[k], v);
        free(v);
    }
    return vt_status_of(c) == VT_OK;
}

static int gc_setup(vt_ctx *c, gc *g) { return g->setup ? g->setup(c, g) : gc_default_setup(c, g); }

/* L = sum(y * r), r ~ N(0,1) from the case seed: distinct upstream gradients */
static vt_tensor *gc_proj(vt_ctx *c, gc *g, vt_tensor *y, uint64_t stream) {
    int64_t i, n;
    double *r;
    vt_tensor *rt;
    if (!y) return NULL;
    n = vt_numel(y);
    r = (double *)malloc(sizeof(double) * (size_t)(n ? n : 1));
    for (i = 0; i < n; i++) r[i] = vt_rng_normal(g->seed, 7 + stream, (uint64_t)i);
    rt = vt_from_f64(c, y->ndim, y->ne, r);
    free(r);
    return vt_sum(c, vt_mul(c, y, rt));
}

static int gc_pre_steps(vt_ctx *c, int n) {
    int i;
    for (i = 0; i < n; i++) {
        vt_step_begin(c);
        vt_step_end(c);
    }
    return vt_status_of(c) == VT_OK;
}

/* the loss at parameter values vals (all parameters of the case) */
static double gc_loss(gc *g, vt_ctx *c, double *const *vals) {
    int i, np;
    double v;
    vt_tensor *L;
    vt_ctx *c2 = NULL;
    vt_tensor *saved_p[GC_MAXP];
    void *saved_user = NULL;
    if (g->fresh) {
        memcpy(saved_p, g->p, sizeof saved_p);
        if (g->user_size) { saved_user = malloc(g->user_size); memcpy(saved_user, g->user, g->user_size); }
        c2 = gc_ctx(g->mode);
        if (!c2 || !gc_setup(c2, g) || !gc_pre_steps(c2, g->pre_steps)) { v = NAN; goto done; }
        c = c2;
    }
    np = vt_param_count(c);
    for (i = 0; i < np; i++) vt_write_f64(c, vt_param_at(c, i), vals[i]);
    if (g->fresh && vt_step_index(c) != g->pre_steps) { v = NAN; goto done; }
    vt_step_begin(c);
    L = g->build(c, g);
    v = (L && vt_status_of(c) == VT_OK) ? vt_item(c, L) : NAN;
    vt_step_end(c);
done:
    if (c2) {
        vt_destroy(c2);
        memcpy(g->p, saved_p, sizeof saved_p);
        if (saved_user) { memcpy(g->user, saved_user, g->user_size); free(saved_user); }
    }
    return v;
}

static int gc_default_analytic(vt_ctx *c, gc *g) {
    vt_tensor *L = g->build(c, g);
    if (!L) return 0;
    return vt_backward(c, L) == VT_OK;
}

/* runs the case; failures are CHECKs; returns the worst error */
static double gc_run(gc *g) {
    vt_ctx *c = gc_ctx(g->mode);
    int np = 0, i, ok;
    double *vals[64], *grads[64];
    double worst = 0, worst_fwd = 0;
    int64_t checked = 0;
    int nfail = 0;
    CHECK(c != NULL, "%s: vt_create failed: %s", g->name, vt_last_error());
    if (!c) return INFINITY;
    ok = gc_setup(c, g);
    CHECK(ok, "%s: setup failed: %s", g->name, vt_error_message(c));
    if (!ok) { vt_destroy(c); return INFINITY; }
    ok = gc_pre_steps(c, g->pre_steps);
    np = vt_param_count(c);
    VT_ASSERT(np <= 64);
    for (i = 0; i < np; i++) {
        vt_tensor *p = vt_param_at(c, i);
        int64_t n = vt_numel(p);
        vals[i] = (double *)malloc(sizeof(double) * (size_t)(n ? n : 1));
        grads[i] = (double *)malloc(sizeof(double) * (size_t)(n ? n : 1));
        vt_read_f64(c, p, vals[i]);
    }
    /* the analytic step */
    g->y = NULL;
    vt_step_begin(c);
    ok = ok && (g->analytic ? g->analytic(c, g) : gc_default_analytic(c, g)) && vt_status_of(c) == VT_OK;
    CHECK(ok, "%s: forward/backward failed: %s", g->name, vt_error_message(c));
    if (ok) {
        for (i = 0; i < np; i++) {
            vt_tensor *p = vt_param_at(c, i);
            int64_t n = vt_numel(p);
            if (p->grad_fresh) memset(grads[i], 0, sizeof(double) * (size_t)n); /* no gradient this step: zero */
            else vt_read_f64(c, p->grad, grads[i]);
        }
        if (g->ref) {
            int64_t n = g->y ? vt_numel(g->y) : 0, j;
            CHECK(g->y != NULL, "%s: no forward output to compare", g->name);
            if (g->y) {
                double *y = (double *)malloc(sizeof(double) * (size_t)(n ? n : 1));
                double *r = (double *)malloc(sizeof(double) * (size_t)(n ? n : 1));
                vt_read_f64(c, g->y, y);
                g->ref(g, vals, r);
                for (j = 0; j < n; j++) {
                    double e = fabs(y[j] - r[j]) / fmax(1.0, fabs(r[j]));
                    if (!(e <= g->ftol) && nfail < 5) {
                        CHECK(0, "%s: forward y[%lld] = %.17g, reference %.17g (error %.3g > %.0e)", g->name, (long long)j,
                              y[j], r[j], e, g->ftol);
                        nfail++;
                    }
                    if (!(e <= worst_fwd)) worst_fwd = e;
                }
                free(y);
                free(r);
            }
        }
    }
    vt_step_end(c);
    if (ok) {
        int k;
        for (k = 0; k < np; k++) {
            vt_tensor *p = vt_param_at(c, k);
            int64_t n = vt_numel(p), m = n <= g->nall ? n : g->nsub, q;
            double maxnum = 0, maxan = 0;
            for (q = 0; q < m; q++) {
                int64_t j = n <= g->nall ? q : (int64_t)vt_shuffle(g->seed, 5000 + (uint64_t)k, (uint64_t)q, (uint64_t)n);
                double x0 = vals[k][j], h = g->h * fmax(1.0, fabs(x0)), xp = x0 + h, xm = x0 - h, lp, lm, num, an, err;
                if (g->mode != VT_MODE_FP64) { xp = (double)(float)xp; xm = (double)(float)xm; } /* what the param holds */
                vals[k][j] = xp;
                lp = gc_loss(g, c, vals);
                vals[k][j] = xm;
                lm = gc_loss(g, c, vals);
                vals[k][j] = x0;
                num = (lp - lm) / (xp - xm);
                an = grads[k][j];
                err = fabs(an - num) / fmax(fabs(num), g->floor);
                if (!(err <= g->tol) && nfail < 8) {
                    CHECK(0, "%s: d/d %s[%lld]: analytic %.12g, numeric %.12g (error %.3g > %.0e)", g->name, p->name,
                          (long long)j, an, num, err, g->tol);
                    nfail++;
                }
                if (!(err <= worst)) worst = err; /* NaN counts as worst */
                if (fabs(num) > maxnum) maxnum = fabs(num);
                if (fabs(an) > maxan) maxan = fabs(an);
                checked++;
            }
            /* a check where both sides are 0 everywhere proves nothing */
            CHECK(g->zero_ok || maxnum > 0 || maxan > 0, "%s: parameter %s: every checked gradient is 0 (vacuous check)", g->name, p->name);
        }
    }
    for (i = 0; i < np; i++) { free(vals[i]); free(grads[i]); }
    vt_test_cover(c); /* the ops this case checked (every_op_covered) */
    vt_destroy(c);
    if (nfail && g->hint) NOTE("%s FAILED: %s", g->name, g->hint);
    g->worst = worst;
    g->worst_fwd = worst_fwd;
    g->checked = checked;
    if (g->ref)
        NOTE("%-34s worst grad error %.2e (tol %.0e, floor %g, h %.0e, %lld elems), forward %.1e", g->name, worst, g->tol,
             g->floor, g->h, (long long)checked, worst_fwd);
    else
        NOTE("%-34s worst grad error %.2e (tol %.0e, floor %g, h %.0e, %lld elems)", g->name, worst, g->tol, g->floor, g->h,
             (long long)checked);
    return worst;
}

/* --- index helpers for the references -------------------------------------- */

static void gc_unravel(int64_t li, int nd, const int64_t *ne, int64_t *idx) {
    int d;
    for (d = nd - 1; d >= 0; d--) { idx[d] = li % ne[d]; li /= ne[d]; }
}

static int64_t gc_ravel(int nd, const int64_t *ne, const int64_t *idx) {
    int64_t li = 0;
    int d;
    for (d = 0; d < nd; d++) li = li * ne[d] + idx[d];
    return li;
}

/* broadcast shape of two shapes (right-aligned) */
static int gc_bshape(const gc_pspec *a, const gc_pspec *b, int64_t *ne) {
    int nd = a->nd > b->nd ? a->nd : b->nd, i;
    for (i = 0; i < nd; i++) {
        int ia = a->nd - nd + i, ib = b->nd - nd + i;
        int64_t x = ia >= 0 ? a->ne[ia] : 1, y = ib >= 0 ? b->ne[ib] : 1;
        ne[i] = x == 1 ? y : x;
    }
    return nd;
}

/* the element of operand a (shape s) that output index idx (nd dims) reads */
static int64_t gc_bidx(const gc_pspec *s, int nd, const int64_t *idx) {
    int64_t li = 0;
    int d;
    for (d = 0; d < s->nd; d++) {
        int od = nd - s->nd + d;
        li = li * s->ne[d] + (s->ne[d] == 1 ? 0 : idx[od]);
    }
    return li;
}

/* ==========================================================================
   elementwise: add, sub, mul (same shapes and broadcasting), scale
   ========================================================================== */

static vt_tensor *b_binary(vt_ctx *c, gc *g) {
    vt_tensor *a = g->p[0], *b = g->p[1];
    g->y = g->ia[0] == 0 ? vt_add(c, a, b) : g->ia[0] == 1 ? vt_sub(c, a, b) : vt_mul(c, a, b);
    return gc_proj(c, g, g->y, 0);
}

static void r_binary(const gc *g, double *const *v, double *out) {
    int64_t ne[4], idx[4], n, i;
    int nd = gc_bshape(&g->ps[0], &g->ps[1], ne);
    n = gc_numel(nd, ne);
    for (i = 0; i < n; i++) {
        double a, b;
        gc_unravel(i, nd, ne, idx);
        a = v[0][gc_bidx(&g->ps[0], nd, idx)];
        b = v[1][gc_bidx(&g->ps[1], nd, idx)];
        out[i] = g->ia[0] == 0 ? a + b : g->ia[0] == 1 ? a - b : a * b;
    }
}

static void run_binary(const char *name, int op, int nda, const int64_t *a, int ndb, const int64_t *b) {
    gc g;
    gc_init(&g, name);
    gc_param(&g, "a", INIT_NORMAL, 1.0, nda, a[0], a[1], a[2], a[3]);
    gc_param(&g, "b", INIT_NORMAL, 1.0, ndb, b[0], b[1], b[2], b[3]);
    g.ia[0] = op;
    g.build = b_binary;
    g.ref = r_binary;
    gc_run(&g);
}

TEST(grad_add_sub_mul_same_shape) {
    int64_t s[4] = {2, 3, 5, 0};
    run_binary("add (2,3,5)+(2,3,5)", 0, 3, s, 3, s);
    run_binary("sub (2,3,5)-(2,3,5)", 1, 3, s, 3, s);
    run_binary("mul (2,3,5)*(2,3,5)", 2, 3, s, 3, s);
}

TEST(grad_broadcast) {
    int64_t btc[4] = {2, 3, 5, 0}, c1[4] = {5, 0, 0, 0}, tc[4] = {3, 5, 0, 0}, b1c[4] = {2, 1, 5, 0};
    int64_t bt1[4] = {2, 3, 1, 0}, r31[4] = {3, 1, 0, 0}, r14[4] = {1, 4, 0, 0}, o3o[4] = {1, 3, 1, 0};
    int64_t bt14[4] = {2, 3, 1, 4}, o1c4[4] = {1, 1, 5, 4};
    run_binary("add (B,T,C)+(C)", 0, 3, btc, 1, c1);
    run_binary("add (C)+(B,T,C)", 0, 1, c1, 3, btc);
    run_binary("mul (B,T,C)*(T,C)", 2, 3, btc, 2, tc);
    run_binary("mul (T,C)*(B,T,C)", 2, 2, tc, 3, btc);
    run_binary("sub (B,1,C)-(B,T,C)", 1, 3, b1c, 3, btc);
    run_binary("sub (B,T,C)-(B,1,C)", 1, 3, btc, 3, b1c);
    run_binary("sub (C)-(B,T,C)", 1, 1, c1, 3, btc);
    run_binary("mul (B,T,1)*(B,T,C)", 2, 3, bt1, 3, btc);
    run_binary("add (3,1)+(1,4) outer", 0, 2, r31, 2, r14);
    run_binary("mul (3,1)*(1,4) outer", 2, 2, r31, 2, r14);
    run_binary("sub (1,3,1)-(B,T,C)", 1, 3, o3o, 3, btc);
    run_binary("mul (2,3,1,4)*(1,1,5,4) 4-D", 2, 4, bt14, 4, o1c4);
}

static vt_tensor *b_scale(vt_ctx *c, gc *g) {
    g->y = vt_scale(c, g->p[0], g->da[0]);
    return gc_proj(c, g, g->y, 0);
}
static void r_scale(const gc *g, double *const *v, double *out) {
    int64_t i, n = gc_numel(g->ps[0].nd, g->ps[0].ne);
    for (i = 0; i < n; i++) out[i] = v[0][i] * g->da[0];
}

TEST(grad_scale) {
    gc g;
    gc_init(&g, "scale (2,3,5) * -1.7");
    gc_param(&g, "x", INIT_NORMAL, 1.0, 3, 2, 3, 5, 0);
    g.da[0] = -1.7;
    g.build = b_scale;
    g.ref = r_scale;
    gc_run(&g);
    gc_init(&g, "scale (7) * 0.3");
    gc_param(&g, "x", INIT_NORMAL, 1.0, 1, 7, 0, 0, 0);
    g.da[0] = 0.3;
    g.build = b_scale;
    g.ref = r_scale;
    gc_run(&g);
}

/* ==========================================================================
   matmul and linear
   ========================================================================== */

static vt_tensor *b_matmul(vt_ctx *c, gc *g) {
    g->y = vt_matmul(c, g->p[0], g->p[1], g->ia[0], g->ia[1]);
    return gc_proj(c, g, g->y, 0);
}

static void r_matmul(const gc *g, double *const *v, double *out) {
    const gc_pspec *a = &g->ps[0], *b = &g->ps[1];
    int ta = g->ia[0], tb = g->ia[1];
    int64_t M = ta ? a->ne[a->nd - 1] : a->ne[a->nd - 2], K = ta ? a->ne[a->nd - 2] : a->ne[a->nd - 1];
    int64_t N = tb ? b->ne[b->nd - 2] : b->ne[b->nd - 1];
    int64_t nbat = gc_numel(a->nd, a->ne) / (M * K), bi, m, n, k;
    int shared = b->nd == 2;
    for (bi = 0; bi < nbat; bi++) {
        const double *A = v[0] + bi * M * K, *B = v[1] + (shared ? 0 : bi * K * N);
        for (m = 0; m < M; m++)
            for (n = 0; n < N; n++) {
                double s = 0;
                for (k = 0; k < K; k++) s += (ta ? A[k * M + m] : A[m * K + k]) * (tb ? B[n * K + k] : B[k * N + n]);
                out[bi * M * N + m * N + n] = s;
            }
    }
}

/* a (batch.., M,K) (or (..,K,M) with ta), b (batch.., K,N) (or (..,N,K)), nbd batch dims, b shared when bshared */
static void run_matmul(const char *what, int nbd, const int64_t *bd, int64_t M, int64_t K, int64_t N, int ta, int tb,
                       int bshared) {
    gc g;
    char name[96];
    int64_t a[4] = {0, 0, 0, 0}, b[4] = {0, 0, 0, 0};
    int i;
    snprintf(name, sizeof name, "matmul %s ta=%d tb=%d", what, ta, tb);
    gc_init(&g, name);
    for (i = 0; i < nbd; i++) a[i] = bd[i];
    a[nbd] = ta ? K : M;
    a[nbd + 1] = ta ? M : K;
    if (bshared) {
        b[0] = tb ? N : K;
        b[1] = tb ? K : N;
    } else {
        for (i = 0; i < nbd; i++) b[i] = bd[i];
        b[nbd] = tb ? N : K;
        b[nbd + 1] = tb ? K : N;
    }
    gc_param(&g, "a", INIT_NORMAL, 1.0, nbd + 2, a[0], a[1], a[2], a[3]);
    gc_param(&g, "b", INIT_NORMAL, 1.0, bshared ? 2 : nbd + 2, b[0], b[1], b[2], b[3]);
    g.ia[0] = ta;
    g.ia[1] = tb;
    if (bshared && ta)
        g.hint = "matmul(a, b, ta=1, tb) with a batched a and a 2-D b shared by the batches: db must be the "
                 "sum over batches of op(a_b)^T dy_b; a wrong db (da right) means a's batches were read at the wrong offsets";
    g.build = b_matmul;
    g.ref = r_matmul;
    gc_run(&g);
}

TEST(grad_matmul_2d) {
    int t;
    for (t = 0; t < 4; t++) run_matmul("(3,4)x(4,5)", 0, NULL, 3, 4, 5, t >> 1, t & 1, 0);
}

TEST(grad_matmul_batched_3d) {
    int64_t bd[1] = {2};
    int t;
    for (t = 0; t < 4; t++) run_matmul("(2,3,4)x(2,4,5)", 1, bd, 3, 4, 5, t >> 1, t & 1, 0);
}

TEST(grad_matmul_batched_4d) {
    int64_t bd[2] = {2, 3};
    int t;
    for (t = 0; t < 4; t++) run_matmul("(2,3,5,3)x(2,3,3,4)", 2, bd, 5, 3, 4, t >> 1, t & 1, 0);
}

TEST(grad_matmul_shared_b) {
    int64_t bd3[1] = {2}, bd4[2] = {2, 3};
    int t;
    for (t = 0; t < 4; t++) run_matmul("(2,3,4)x(4,5) shared", 1, bd3, 3, 4, 5, t >> 1, t & 1, 1);
    for (t = 0; t < 4; t++) run_matmul("(2,3,5,3)x(3,4) shared", 2, bd4, 5, 3, 4, t >> 1, t & 1, 1);
}

static vt_tensor *b_linear(vt_ctx *c, gc *g) {
    g->y = vt_linear(c, g->p[0], g->p[1], g->np > 2 ? g->p[2] : NULL);
    return gc_proj(c, g, g->y, 0);
}

static void r_linear(const gc *g, double *const *v, double *out) {
    const gc_pspec *x = &g->ps[0], *w = &g->ps[1];
    int64_t IN = w->ne[1], OC = w->ne[0], R = gc_numel(x->nd, x->ne) / IN, r, o, i;
    for (r = 0; r < R; r++)
        for (o = 0; o < OC; o++) {
            double s = g->np > 2 ? v[2][o] : 0;
            for (i = 0; i < IN; i++) s += v[0][r * IN + i] * v[1][o * IN + i];
            out[r * OC + o] = s;
        }
}

static void run_linear(const char *name, int nd, int64_t d0, int64_t d1, int64_t d2, int64_t d3, int64_t OC, int bias) {
    gc g;
    int64_t IN = nd == 2 ? d1 : nd == 3 ? d2 : d3;
    gc_init(&g, name);
    gc_param(&g, "x", INIT_NORMAL, 1.0, nd, d0, d1, d2, d3);
    gc_param(&g, "w", INIT_NORMAL, 0.5, 2, OC, IN, 0, 0);
    if (bias) gc_param(&g, "bias", INIT_NORMAL, 1.0, 1, OC, 0, 0, 0);
    g.build = b_linear;
    g.ref = r_linear;
    gc_run(&g);
}

TEST(grad_linear) {
    run_linear("linear x(5,7) w(4,7) +bias", 2, 5, 7, 0, 0, 4, 1);
    run_linear("linear x(5,7) w(4,7) no bias", 2, 5, 7, 0, 0, 4, 0);
    run_linear("linear x(2,3,7) w(6,7) +bias", 3, 2, 3, 7, 0, 6, 1);
    run_linear("linear x(2,3,7) w(6,7) no bias", 3, 2, 3, 7, 0, 6, 0);
    run_linear("linear x(2,2,3,5) w(3,5) +bias", 4, 2, 2, 3, 5, 3, 1);
}

/* ==========================================================================
   activations, softmax family
   ========================================================================== */

static double ref_gelu(double x) { return 0.5 * x * (1 + tanh(0.79788456080286535588 * (x + 0.044715 * x * x * x))); }

static vt_tensor *b_unary(vt_ctx *c, gc *g) {
    vt_tensor *x = g->p[0];
    switch (g->ia[0]) {
    case 0: g->y = vt_relu(c, x); break;
    case 1: g->y = vt_gelu(c, x); break;
    case 2: g->y = vt_tanh(c, x); break;
    case 3: g->y = vt_softmax(c, x); break;
    default: g->y = vt_log_softmax(c, x); break;
    }
    return gc_proj(c, g, g->y, 0);
}

static void r_unary(const gc *g, double *const *v, double *out) {
    const gc_pspec *s = &g->ps[0];
    int64_t n = gc_numel(s->nd, s->ne), C = s->ne[s->nd - 1], i, r, j;
    if (g->ia[0] <= 2) {
        for (i = 0; i < n; i++) {
            double x = v[0][i];
            out[i] = g->ia[0] == 0 ? (x > 0 ? x : 0) : g->ia[0] == 1 ? ref_gelu(x) : tanh(x);
        }
        return;
    }
    for (r = 0; r < n / C; r++) {
        const double *x = v[0] + r * C;
        double m = -INFINITY, s2 = 0;
        for (j = 0; j < C; j++) m = fmax(m, x[j]);
        for (j = 0; j < C; j++) s2 += exp(x[j] - m);
        for (j = 0; j < C; j++) out[r * C + j] = g->ia[0] == 3 ? exp(x[j] - m) / s2 : x[j] - m - log(s2);
    }
}

static void run_unary(const char *name, int op, int init, double scale, int nd, int64_t d0, int64_t d1, int64_t d2) {
    gc g;
    gc_init(&g, name);
    g.zero_ok = (op == 3 && d1 == 1); /* softmax of one-element rows is constant */
    gc_param(&g, "x", init, scale, nd, d0, d1, d2, 0);
    g.ia[0] = op;
    g.build = b_unary;
    g.ref = r_unary;
    gc_run(&g);
}

/* relu: inputs at least 0.2 from the kink, so x +- h never crosses it */
TEST(grad_relu) {
    run_unary("relu (2,3,5) |x|>=0.2", 0, INIT_AWAY, 1.0, 3, 2, 3, 5);
    run_unary("relu (13)", 0, INIT_AWAY, 0.5, 1, 13, 0, 0);
}
TEST(grad_gelu) {
    run_unary("gelu (2,3,5)", 1, INIT_NORMAL, 2.0, 3, 2, 3, 5);
    run_unary("gelu (4,9) wide inputs", 1, INIT_NORMAL, 4.0, 2, 4, 9, 0);
}
TEST(grad_tanh) {
    run_unary("tanh (2,3,5)", 2, INIT_NORMAL, 1.5, 3, 2, 3, 5);
    run_unary("tanh (11)", 2, INIT_NORMAL, 0.5, 1, 11, 0, 0);
}
TEST(grad_softmax) {
    run_unary("softmax (2,3,7)", 3, INIT_NORMAL, 2.0, 3, 2, 3, 7);
    run_unary("softmax (5,1)", 3, INIT_NORMAL, 1.0, 2, 5, 1, 0); /* a one-element row: y = 1, dx = 0 */
}
TEST(grad_log_softmax) {
    run_unary("log_softmax (2,3,7)", 4, INIT_NORMAL, 2.0, 3, 2, 3, 7);
    run_unary("log_softmax (4,10)", 4, INIT_NORMAL, 3.0, 2, 4, 10, 0);
}

/* --- cross-entropy: loss = s * CE(logits, targets), s = da[0] (upstream gradient) */
static vt_tensor *b_ce(vt_ctx *c, gc *g) {
    const gc_pspec *s = &g->ps[0];
    int64_t tne[3];
    int i;
    for (i = 0; i < s->nd - 1; i++) tne[i] = s->ne[i];
    g->y = vt_cross_entropy(c, g->p[0], vt_from_i32(c, s->nd - 1, tne, g->iv));
    return g->da[0] == 1 ? g->y : vt_scale(c, g->y, g->da[0]);
}

static void r_ce(const gc *g, double *const *v, double *out) {
    const gc_pspec *s = &g->ps[0];
    int64_t V = s->ne[s->nd - 1], R = gc_numel(s->nd, s->ne) / V, r, j;
    double tot = 0;
    for (r = 0; r < R; r++) {
        const double *x = v[0] + r * V;
        double m = -INFINITY, s2 = 0;
        for (j = 0; j < V; j++) m = fmax(m, x[j]);
        for (j = 0; j < V; j++) s2 += exp(x[j] - m);
        tot += log(s2) + m - x[g->iv[r]];
    }
    out[0] = tot / (double)R;
}

static void run_ce(const char *name, int nd, int64_t d0, int64_t d1, int64_t d2, double up) {
    gc g;
    int64_t R, V, i;
    gc_init(&g, name);
    gc_param(&g, "logits", INIT_NORMAL, 2.0, nd, d0, d1, d2, 0);
    V = g.ps[0].ne[nd - 1];
    R = gc_numel(nd, g.ps[0].ne) / V;
    for (i = 0; i < R; i++) g.iv[i] = (int32_t)(vt_rng_u64(g.seed, 3, (uint64_t)i) % (uint64_t)V);
    g.niv = (int)R;
    g.da[0] = up;
    g.build = b_ce;
    g.ref = r_ce;
    gc_run(&g);
}

TEST(grad_cross_entropy) {
    run_ce("cross_entropy (5,7)", 2, 5, 7, 0, 1.0);
    run_ce("cross_entropy (2,3,7) x1.7", 3, 2, 3, 7, 1.7);
    run_ce("cross_entropy (1,3) x-0.6", 2, 1, 3, 0, -0.6);
}

/* --- mse: loss = s * mse(pred, target), both parameters */
static vt_tensor *b_mse(vt_ctx *c, gc *g) {
    g->y = vt_mse(c, g->p[0], g->p[1]);
    return g->da[0] == 1 ? g->y : vt_scale(c, g->y, g->da[0]);
}
static void r_mse(const gc *g, double *const *v, double *out) {
    int64_t i, n = gc_numel(g->ps[0].nd, g->ps[0].ne);
    double s = 0;
    for (i = 0; i < n; i++) s += (v[0][i] - v[1][i]) * (v[0][i] - v[1][i]);
    out[0] = s / (double)n;
}

TEST(grad_mse) {
    gc g;
    gc_init(&g, "mse (2,3,5) vs (2,3,5)");
    gc_param(&g, "pred", INIT_NORMAL, 1.0, 3, 2, 3, 5, 0);
    gc_param(&g, "target", INIT_NORMAL, 1.0, 3, 2, 3, 5, 0);
    g.da[0] = 1;
    g.build = b_mse;
    g.ref = r_mse;
    gc_run(&g);
    gc_init(&g, "mse (6,5) vs (2,3,5) x2.5");
    gc_param(&g, "pred", INIT_NORMAL, 1.0, 2, 6, 5, 0, 0);
    gc_param(&g, "target", INIT_NORMAL, 1.0, 3, 2, 3, 5, 0);
    g.da[0] = 2.5;
    g.build = b_mse;
    g.ref = r_mse;
    gc_run(&g);
}

/* ==========================================================================
   layernorm, embedding, attention
   ========================================================================== */

static vt_tensor *b_layernorm(vt_ctx *c, gc *g) {
    g->y = vt_layernorm(c, g->p[0], g->p[1], g->p[2], g->da[0]);
    return gc_proj(c, g, g->y, 0);
}
static void r_layernorm(const gc *g, double *const *v, double *out) {
    const gc_pspec *s = &g->ps[0];
    int64_t C = s->ne[s->nd - 1], R = gc_numel(s->nd, s->ne) / C, r, i;
    for (r = 0; r < R; r++) {
        const double *x = v[0] + r * C;
        double mu = 0, var = 0, rstd;
        for (i = 0; i < C; i++) mu += x[i];
        mu /= (double)C;
        for (i = 0; i < C; i++) var += (x[i] - mu) * (x[i] - mu);
        var /= (double)C;
        rstd = 1 / sqrt(var + g->da[0]);
        for (i = 0; i < C; i++) out[r * C + i] = (x[i] - mu) * rstd * v[1][i] + v[2][i];
    }
}

static void run_layernorm(const char *name, int nd, int64_t d0, int64_t d1, int64_t d2, double xscale, double eps) {
    gc g;
    int64_t C;
    gc_init(&g, name);
    gc_param(&g, "x", INIT_NORMAL, xscale, nd, d0, d1, d2, 0);
    C = g.ps[0].ne[nd - 1];
    gc_param(&g, "w", INIT_ONE, 0.3, 1, C, 0, 0, 0);
    gc_param(&g, "b", INIT_NORMAL, 0.5, 1, C, 0, 0, 0);
    g.da[0] = eps;
    g.build = b_layernorm;
    g.ref = r_layernorm;
    gc_run(&g);
}

TEST(grad_layernorm) {
    run_layernorm("layernorm (2,3,10) eps 1e-5", 3, 2, 3, 10, 1.0, 1e-5);
    run_layernorm("layernorm (4,7) eps 1e-5", 2, 4, 7, 0, 2.0, 1e-5);
    run_layernorm("layernorm (3,6) small x, eps 0.1", 2, 3, 6, 0, 0.2, 0.1); /* eps matters */
}

/* embedding: table (V,C) parameter; idx in g->iv with shape ia[0] dims ia[1..3] */
static vt_tensor *b_embedding(vt_ctx *c, gc *g) {
    int64_t ne[3];
    int i;
    for (i = 0; i < g->ia[0]; i++) ne[i] = g->ia[1 + i];
    g->y = vt_embedding(c, g->p[0], vt_from_i32(c, g->ia[0], ne, g->iv));
    return gc_proj(c, g, g->y, 0);
}
static void r_embedding(const gc *g, double *const *v, double *out) {
    int64_t C = g->ps[0].ne[1], p, j;
    for (p = 0; p < g->niv; p++)
        for (j = 0; j < C; j++) out[p * C + j] = v[0][g->iv[p] * C + j];
}

static void run_embedding(const char *name, int64_t V, int64_t C, int nd, int i0, int i1, int i2, int vmax) {
    gc g;
    int i, n;
    gc_init(&g, name);
    gc_param(&g, "table", INIT_NORMAL, 1.0, 2, V, C, 0, 0);
    g.ia[0] = nd;
    g.ia[1] = i0; g.ia[2] = i1; g.ia[3] = i2;
    n = i0 * (nd > 1 ? i1 : 1) * (nd > 2 ? i2 : 1);
    /* indices < vmax <= V: repeated rows accumulate, rows >= vmax get gradient 0 */
    for (i = 0; i < n; i++) g.iv[i] = (int32_t)(vt_rng_u64(g.seed, 4, (uint64_t)i) % (uint64_t)vmax);
    g.iv[n - 1] = g.iv[0]; /* at least one repeat */
    g.niv = n;
    g.build = b_embedding;
    g.ref = r_embedding;
    gc_run(&g);
}

TEST(grad_embedding) {
    run_embedding("embedding V6 C5 idx(2,7), rows<5", 6, 5, 2, 2, 7, 0, 5);
    run_embedding("embedding V4 C3 idx(9) repeats", 4, 3, 1, 9, 0, 0, 3);
    run_embedding("embedding V7 C2 idx(2,2,3)", 7, 2, 3, 2, 2, 3, 7);
}

static vt_tensor *b_attention(vt_ctx *c, gc *g) {
    g->y = vt_attention(c, g->p[0], g->ia[0]);
    return gc_proj(c, g, g->y, 0);
}
static void r_attention(const gc *g, double *const *v, double *out) {
    const gc_pspec *s = &g->ps[0];
    int64_t B = s->ne[0], T = s->ne[1], C = s->ne[2] / 3, NH = g->ia[0], hs = C / NH, b, h, t, t2, i;
    double scale = 1.0 / sqrt((double)hs), att[64];
    for (b = 0; b < B; b++)
        for (h = 0; h < NH; h++)
            for (t = 0; t < T; t++) {
                const double *q = v[0] + (b * T + t) * 3 * C + h * hs;
                double m = -INFINITY, sum = 0;
                for (t2 = 0; t2 <= t; t2++) {
                    const double *k = v[0] + (b * T + t2) * 3 * C + C + h * hs;
                    double d = 0;
                    for (i = 0; i < hs; i++) d += q[i] * k[i];
                    att[t2] = d * scale;
                    m = fmax(m, att[t2]);
                }
                for (t2 = 0; t2 <= t; t2++) { att[t2] = exp(att[t2] - m); sum += att[t2]; }
                for (i = 0; i < hs; i++) {
                    double o = 0;
                    for (t2 = 0; t2 <= t; t2++) o += att[t2] / sum * v[0][(b * T + t2) * 3 * C + 2 * C + h * hs + i];
                    out[(b * T + t) * C + h * hs + i] = o;
                }
            }
}

static void run_attention(const char *name, int64_t B, int64_t T, int64_t C, int nh, double scale) {
    gc g;
    gc_init(&g, name);
    gc_param(&g, "qkv", INIT_NORMAL, scale, 3, B, T, 3 * C, 0);
    g.ia[0] = nh;
    g.build = b_attention;
    g.ref = r_attention;
    g.nall = 0; /* 180+ elements: a random subset, larger than the default */
    g.nsub = 60;
    gc_run(&g);
}

TEST(grad_attention) {
    run_attention("attention B2 T5 C12 NH3", 2, 5, 12, 3, 1.0);
    run_attention("attention B3 T7 C8 NH2", 3, 7, 8, 2, 1.5);
    run_attention("attention B1 T4 C6 NH1", 1, 4, 6, 1, 1.0);
    /* heads wider than the sequence: the per-thread products are T x hs */
    run_attention("attention B1 T2 C32 NH1", 1, 2, 32, 1, 1.0);
    run_attention("attention B2 T3 C48 NH2", 2, 3, 48, 2, 1.0);
}

/* ==========================================================================
   dropout
   ========================================================================== */

/* y = dropout(x, p, seed) at step ia[1]; the reference mask: keep element i
   when uniform(seed, step, i) >= p, and scale by 1/(1-p) */
static vt_tensor *b_dropout(vt_ctx *c, gc *g) {
    g->y = vt_dropout(c, g->p[0], g->da[0], (uint64_t)g->ia[0]);
    return gc_proj(c, g, g->y, 0);
}
static void r_dropout(const gc *g, double *const *v, double *out) {
    int64_t i, n = gc_numel(g->ps[0].nd, g->ps[0].ne);
    for (i = 0; i < n; i++)
        out[i] = vt_rng_uniform((uint64_t)g->ia[0], (uint64_t)g->pre_steps, (uint64_t)i) >= g->da[0]
                     ? v[0][i] * (1.0 / (1.0 - g->da[0]))
                     : 0.0;
}

TEST(grad_dropout) {
    gc g;
    int pre;
    for (pre = 0; pre <= 3; pre += 3) {
        gc_init(&g, pre ? "dropout p0.3 (3,4,5) at step 3" : "dropout p0.3 (3,4,5) at step 0");
        gc_param(&g, "x", INIT_NORMAL, 1.0, 3, 3, 4, 5, 0);
        g.da[0] = 0.3;
        g.ia[0] = 17;
        g.pre_steps = pre;
        g.fresh = 1; /* each finite-difference loss at the same step number, in its own context */
        g.build = b_dropout;
        g.ref = r_dropout;
        gc_run(&g);
    }
    gc_init(&g, "dropout p0.5 (40) at step 1");
    gc_param(&g, "x", INIT_NORMAL, 1.0, 1, 40, 0, 0, 0);
    g.da[0] = 0.5;
    g.ia[0] = 5;
    g.pre_steps = 1;
    g.fresh = 1;
    g.build = b_dropout;
    g.ref = r_dropout;
    gc_run(&g);
}

/* the mask: the fraction kept, a new mask each step, identity without grad
   or with p = 0 */
TEST(dropout_mask_properties) {
    vt_ctx *c = gc_ctx(VT_MODE_FP64);
    int64_t ne[2] = {100, 50}, i, n = 5000, kept = 0, same = 0;
    double *x = (double *)malloc(sizeof(double) * (size_t)n), *y0 = (double *)malloc(sizeof(double) * (size_t)n);
    double *y1 = (double *)malloc(sizeof(double) * (size_t)n), *y2 = (double *)malloc(sizeof(double) * (size_t)n);
    vt_tensor *p = vt_param(c, "x", 2, ne);
    for (i = 0; i < n; i++) x[i] = 1.0 + vt_rng_uniform(3, 3, (uint64_t)i);
    vt_write_f64(c, p, x);
    vt_step_begin(c);
    vt_read_f64(c, vt_dropout(c, p, 0.3, 9), y0);
    vt_read_f64(c, vt_dropout(c, p, 0.0, 9), y2);
    for (i = 0; i < n; i++) kept += y0[i] != 0;
    for (i = 0; i < n; i++) /* kept elements are x * (1 / (1 - p)), one product */
        if (!(y0[i] == 0 || y0[i] == x[i] * (1.0 / 0.7))) {
            CHECK(0, "dropout kept element %lld as %.17g, want %.17g", (long long)i, y0[i], x[i] * (1.0 / 0.7));
            break;
        }
    for (i = 0; i < n; i++)
        if (y2[i] != x[i]) { CHECK(0, "dropout p=0 changed element %lld", (long long)i); break; }
    vt_set_grad(c, 0);
    vt_read_f64(c, vt_dropout(c, p, 0.3, 9), y2);
    for (i = 0; i < n; i++)
        if (y2[i] != x[i]) { CHECK(0, "dropout without grad is not the identity at %lld", (long long)i); break; }
    vt_set_grad(c, 1);
    vt_step_end(c);
    vt_step_begin(c);
    vt_read_f64(c, vt_dropout(c, p, 0.3, 9), y1);
    vt_step_end(c);
    for (i = 0; i < n; i++) same += (y0[i] != 0) == (y1[i] != 0);
    CHECK(fabs((double)kept / (double)n - 0.7) < 0.03, "dropout p=0.3 kept %lld of %lld", (long long)kept, (long long)n);
    CHECK(same < n * 0.7, "the next step's mask agrees on %lld of %lld elements (expected ~58%%)", (long long)same, (long long)n);
    CHECK(vt_status_of(c) == VT_OK, "%s", vt_error_message(c));
    NOTE("dropout p=0.3: kept %.4f, next step agrees on %.4f", (double)kept / (double)n, (double)same / (double)n);
    free(x); free(y0); free(y1); free(y2);
    vt_destroy(c);
}

/* ==========================================================================
   sum, mean, concat, split
   ========================================================================== */

static vt_tensor *b_reduce(vt_ctx *c, gc *g) {
    g->y = g->ia[0] ? vt_mean(c, g->p[0]) : vt_sum(c, g->p[0]);
    /* y is a scalar; scale it so the upstream gradient is not 1 */
    return vt_scale(c, g->y, g->da[0]);
}
static void r_reduce(const gc *g, double *const *v, double *out) {
    int64_t i, n = gc_numel(g->ps[0].nd, g->ps[0].ne);
    double s = 0;
    for (i = 0; i < n; i++) s += v[0][i];
    out[0] = g->ia[0] ? s / (double)n : s;
}

TEST(grad_sum_mean) {
    gc g;
    int m;
    for (m = 0; m < 2; m++) {
        gc_init(&g, m ? "mean (2,3,5) x-1.3" : "sum (2,3,5) x-1.3");
        gc_param(&g, "x", INIT_NORMAL, 1.0, 3, 2, 3, 5, 0);
        g.ia[0] = m;
        g.da[0] = -1.3;
        g.build = b_reduce;
        g.ref = r_reduce;
        gc_run(&g);
        gc_init(&g, m ? "mean (7) x2" : "sum (7) x2");
        gc_param(&g, "x", INIT_NORMAL, 1.0, 1, 7, 0, 0, 0);
        g.ia[0] = m;
        g.da[0] = 2;
        g.build = b_reduce;
        g.ref = r_reduce;
        gc_run(&g);
    }
}

static vt_tensor *b_concat(vt_ctx *c, gc *g) {
    g->y = vt_concat(c, g->p[0], g->p[1], g->ia[0]);
    return gc_proj(c, g, g->y, 0);
}
static void r_concat(const gc *g, double *const *v, double *out) {
    const gc_pspec *a = &g->ps[0], *b = &g->ps[1];
    int dim = g->ia[0], nd = a->nd;
    int64_t ne[4], idx[4], i, n;
    memcpy(ne, a->ne, sizeof ne);
    ne[dim] = a->ne[dim] + b->ne[dim];
    n = gc_numel(nd, ne);
    for (i = 0; i < n; i++) {
        gc_unravel(i, nd, ne, idx);
        if (idx[dim] < a->ne[dim]) out[i] = v[0][gc_ravel(nd, a->ne, idx)];
        else { idx[dim] -= a->ne[dim]; out[i] = v[1][gc_ravel(nd, b->ne, idx)]; }
    }
}

static void run_concat(const char *name, int dim, int nd, const int64_t *a, const int64_t *b) {
    gc g;
    gc_init(&g, name);
    gc_param(&g, "a", INIT_NORMAL, 1.0, nd, a[0], a[1], a[2], a[3]);
    gc_param(&g, "b", INIT_NORMAL, 1.0, nd, b[0], b[1], b[2], b[3]);
    g.ia[0] = dim;
    g.build = b_concat;
    g.ref = r_concat;
    gc_run(&g);
}

TEST(grad_concat) {
    int64_t a[4] = {2, 3, 4, 0}, b0[4] = {1, 3, 4, 0}, b1[4] = {2, 2, 4, 0}, b2[4] = {2, 3, 5, 0};
    int64_t m[4] = {3, 2, 0, 0}, m2[4] = {3, 5, 0, 0};
    run_concat("concat (2,3,4)+(1,3,4) dim 0", 0, 3, a, b0);
    run_concat("concat (2,3,4)+(2,2,4) dim 1", 1, 3, a, b1);
    run_concat("concat (2,3,4)+(2,3,5) dim 2", 2, 3, a, b2);
    run_concat("concat (3,2)+(3,5) dim 1", 1, 2, m, m2);
}

static vt_tensor *b_split(vt_ctx *c, gc *g) {
    g->y = vt_split(c, g->p[0], g->ia[0], g->ia[1], g->ia[2]);
    return gc_proj(c, g, g->y, 0);
}
static void r_split(const gc *g, double *const *v, double *out) {
    const gc_pspec *x = &g->ps[0];
    int dim = g->ia[0], nd = x->nd;
    int64_t ne[4], idx[4], i, n;
    memcpy(ne, x->ne, sizeof ne);
    ne[dim] = g->ia[2];
    n = gc_numel(nd, ne);
    for (i = 0; i < n; i++) {
        gc_unravel(i, nd, ne, idx);
        idx[dim] += g->ia[1];
        out[i] = v[0][gc_ravel(nd, x->ne, idx)];
    }
}

static void run_split(const char *name, int dim, int start, int len) {
    gc g;
    gc_init(&g, name);
    gc_param(&g, "x", INIT_NORMAL, 1.0, 3, 3, 5, 4, 0);
    g.ia[0] = dim; g.ia[1] = start; g.ia[2] = len;
    g.build = b_split;
    g.ref = r_split;
    gc_run(&g);
}

/* two splits of the same tensor: the second accumulates into its gradient */
static vt_tensor *b_split2(vt_ctx *c, gc *g) {
    vt_tensor *a = vt_split(c, g->p[0], 1, 0, 3), *b = vt_split(c, g->p[0], 1, 2, 3);
    return vt_add(c, gc_proj(c, g, a, 0), gc_proj(c, g, b, 1));
}

TEST(grad_split) {
    gc g;
    run_split("split (3,5,4) dim 0 [1,3)", 0, 1, 2);
    run_split("split (3,5,4) dim 1 [1,4)", 1, 1, 3);
    run_split("split (3,5,4) dim 2 [3,4)", 2, 3, 1);
    gc_init(&g, "two overlapping splits of one x");
    gc_param(&g, "x", INIT_NORMAL, 1.0, 3, 2, 5, 3, 0);
    g.build = b_split2;
    gc_run(&g);
}

/* ==========================================================================
   views: reshape, transpose, permute, slice, contiguous
   ========================================================================== */

static vt_tensor *b_views(vt_ctx *c, gc *g) {
    vt_tensor *x = g->p[0];
    switch (g->ia[0]) {
    case 0: { /* reshape (2,3,4) -> (6,4), into a matmul with w (4,5) */
        int64_t ne[2] = {6, 4};
        g->y = vt_reshape(c, x, 2, ne);
        return vt_add(c, gc_proj(c, g, g->y, 0), gc_proj(c, g, vt_matmul(c, g->y, g->p[1], 0, 0), 1));
    }
    case 1: /* transpose (2,3,4) dims 1,2 -> (2,4,3) */
        g->y = vt_transpose(c, x, 1, 2);
        return gc_proj(c, g, g->y, 0);
    case 2: { /* permute (2,3,4,5) -> perm {2,0,3,1} = (4,2,5,3) */
        int perm[4] = {2, 0, 3, 1};
        g->y = vt_permute(c, x, perm);
        return gc_proj(c, g, g->y, 0);
    }
    case 3: /* slice (4,5,6) dim 1 [1,4) */
        g->y = vt_slice(c, x, 1, 1, 3);
        return gc_proj(c, g, g->y, 0);
    case 4: /* contiguous of a transpose, into matmul as a: (2,4,3)x(2,3,5) */
        g->y = vt_contiguous(c, vt_transpose(c, x, 1, 2));
        return vt_add(c, gc_proj(c, g, g->y, 0), gc_proj(c, g, vt_matmul(c, g->y, g->p[1], 0, 0), 1));
    case 5: { /* chain: transpose -> slice -> reshape -> tanh */
        int64_t ne[2];
        vt_tensor *t = vt_slice(c, vt_transpose(c, x, 0, 2), 0, 1, 2); /* (4,3,2) -> (2,3,2) */
        ne[0] = 3; ne[1] = 4;
        g->y = vt_reshape(c, t, 2, ne);
        return gc_proj(c, g, vt_tanh(c, g->y), 0);
    }
    case 6: { /* two overlapping slices of one tensor, and a slice on dim 0 (contiguous) */
        vt_tensor *a = vt_slice(c, x, 1, 0, 3), *b = vt_slice(c, x, 1, 2, 3), *d = vt_slice(c, x, 0, 1, 1);
        return vt_add(c, vt_add(c, gc_proj(c, g, a, 0), gc_proj(c, g, b, 1)), gc_proj(c, g, d, 2));
    }
    case 7: { /* slice of a reshape of a parameter, used as the transposed operand of a batched matmul */
        int64_t ne[3] = {2, 4, 3};
        vt_tensor *r = vt_reshape(c, x, 3, ne), *s = vt_slice(c, r, 2, 0, 2); /* (2,4,2) */
        return gc_proj(c, g, vt_matmul(c, s, g->p[1], 1, 0), 0);           /* (2,2,4)^T-op x (2,4,5) */
    }
    default: { /* reshape of a transposed view (reshape copies it first), 3 views deep */
        int64_t ne[1] = {24};
        vt_tensor *t = vt_transpose(c, vt_transpose(c, x, 0, 1), 1, 2);
        g->y = vt_reshape(c, t, 1, ne);
        return gc_proj(c, g, g->y, 0);
    }
    }
}

static void r_views(const gc *g, double *const *v, double *out) {
    const gc_pspec *x = &g->ps[0];
    int64_t idx[4], in[4], one[4], i, n = gc_numel(x->nd, x->ne);
    switch (g->ia[0]) {
    case 0: memcpy(out, v[0], sizeof(double) * (size_t)n); break;
    case 1: case 4: { /* (2,3,4) -> (2,4,3) */
        int64_t ne[3] = {2, 4, 3};
        for (i = 0; i < n; i++) {
            gc_unravel(i, 3, ne, idx);
            in[0] = idx[0]; in[1] = idx[2]; in[2] = idx[1];
            out[i] = v[0][gc_ravel(3, x->ne, in)];
        }
        break;
    }
    case 2: { /* out dim d = in dim perm[d] */
        int perm[4] = {2, 0, 3, 1}, d;
        int64_t ne[4];
        for (d = 0; d < 4; d++) ne[d] = x->ne[perm[d]];
        for (i = 0; i < n; i++) {
            gc_unravel(i, 4, ne, idx);
            for (d = 0; d < 4; d++) in[perm[d]] = idx[d];
            out[i] = v[0][gc_ravel(4, x->ne, in)];
        }
        break;
    }
    case 3: { /* (4,5,6) [:,1:4,:] */
        int64_t ne[3] = {4, 3, 6};
        for (i = 0; i < 4 * 3 * 6; i++) {
            gc_unravel(i, 3, ne, idx);
            one[0] = idx[0]; one[1] = idx[1] + 1; one[2] = idx[2];
            out[i] = v[0][gc_ravel(3, x->ne, one)];
        }
        break;
    }
    case 5: { /* x (2,3,4); transpose(0,2) -> (4,3,2); slice dim 0 [1,3) -> (2,3,2); reshape (3,4) */
        int64_t ne[3] = {2, 3, 2};
        for (i = 0; i < 12; i++) {
            gc_unravel(i, 3, ne, idx); /* t[a][b][c] = x[c][b][a+1] */
            in[0] = idx[2]; in[1] = idx[1]; in[2] = idx[0] + 1;
            out[i] = v[0][gc_ravel(3, x->ne, in)];
        }
        break;
    }
    default: { /* x (2,3,4) -> transpose(0,1) (3,2,4) -> transpose(1,2) (3,4,2): t[a][b][c] = x[c][a][b] */
        int64_t ne[3] = {3, 4, 2};
        for (i = 0; i < 24; i++) {
            gc_unravel(i, 3, ne, idx);
            in[0] = idx[2]; in[1] = idx[0]; in[2] = idx[1];
            out[i] = v[0][gc_ravel(3, x->ne, in)];
        }
        break;
    }
    }
}

/* x (d0..d3), and a second parameter w (wnd dims w0..w2) when wnd > 0 */
static void run_views(const char *name, int which, int nd, int64_t d0, int64_t d1, int64_t d2, int64_t d3, int wnd,
                      int64_t w0, int64_t w1, int64_t w2, int ref) {
    gc g;
    gc_init(&g, name);
    gc_param(&g, "x", INIT_NORMAL, 1.0, nd, d0, d1, d2, d3);
    if (wnd) gc_param(&g, "w", INIT_NORMAL, 1.0, wnd, w0, w1, w2, 0);
    g.ia[0] = which;
    g.build = b_views;
    g.ref = ref ? r_views : NULL;
    gc_run(&g);
}

TEST(grad_views) {
    run_views("reshape (2,3,4)->(6,4) + matmul", 0, 3, 2, 3, 4, 0, 2, 4, 5, 0, 1);
    run_views("transpose (2,3,4) 1<->2", 1, 3, 2, 3, 4, 0, 0, 0, 0, 0, 1);
    run_views("permute (2,3,4,5) {2,0,3,1}", 2, 4, 2, 3, 4, 5, 0, 0, 0, 0, 1);
    run_views("slice (4,5,6) dim 1 [1,4)", 3, 3, 4, 5, 6, 0, 0, 0, 0, 0, 1);
    run_views("contiguous(transpose) + matmul", 4, 3, 2, 3, 4, 0, 3, 2, 3, 5, 1);
    run_views("transpose->slice->reshape->tanh", 5, 3, 2, 3, 4, 0, 0, 0, 0, 0, 1);
    run_views("two overlapping slices + dim-0 slice", 6, 3, 2, 5, 3, 0, 0, 0, 0, 0, 0);
    run_views("slice(reshape(x)) as matmul a^T", 7, 2, 6, 4, 0, 0, 3, 2, 4, 5, 0);
    run_views("reshape(transpose(transpose(x)))", 8, 3, 2, 3, 4, 0, 0, 0, 0, 0, 1);
}

/* ==========================================================================
   a tensor used twice; two backward calls in one step
   ========================================================================== */

static vt_tensor *b_twice(vt_ctx *c, gc *g) {
    vt_tensor *x = g->p[0];
    switch (g->ia[0]) {
    case 0: g->y = vt_add(c, vt_mul(c, x, x), x); break;            /* x*x + x */
    case 1: g->y = vt_mul(c, x, x); break;                          /* x*x alone */
    case 2: g->y = vt_add(c, x, x); break;                          /* x + x */
    case 3: g->y = vt_concat(c, x, x, 1); break;                    /* [x, x] */
    case 4: g->y = vt_matmul(c, x, x, 0, 1); break;                 /* x x^T */
    case 5: { vt_tensor *h = vt_tanh(c, x); g->y = vt_mul(c, h, h); break; } /* an activation squared */
    case 6: { vt_tensor *h = vt_tanh(c, x); g->y = vt_add(c, vt_mul(c, h, h), h); break; } /* h*h + h */
    default: { /* an activation feeding two branches: tanh(x) W1 + relu-free gelu(tanh(x)) */
        vt_tensor *h = vt_tanh(c, x);
        g->y = vt_add(c, vt_scale(c, h, 0.5), vt_gelu(c, h));
        break;
    }
    }
    return gc_proj(c, g, g->y, 0);
}

static void r_twice(const gc *g, double *const *v, double *out) {
    const gc_pspec *s = &g->ps[0];
    int64_t R = s->ne[0], C = s->ne[1], i, j, k;
    for (i = 0; i < R * C; i++) {
        double x = v[0][i], h = tanh(x);
        switch (g->ia[0]) {
        case 0: out[i] = x * x + x; break;
        case 1: out[i] = x * x; break;
        case 2: out[i] = x + x; break;
        case 5: out[i] = h * h; break;
        case 6: out[i] = h * h + h; break;
        case 7: out[i] = 0.5 * h + ref_gelu(h); break;
        default: break;
        }
    }
    if (g->ia[0] == 3)
        for (i = 0; i < R; i++)
            for (j = 0; j < 2 * C; j++) out[i * 2 * C + j] = v[0][i * C + (j % C)];
    if (g->ia[0] == 4)
        for (i = 0; i < R; i++)
            for (j = 0; j < R; j++) {
                double s2 = 0;
                for (k = 0; k < C; k++) s2 += v[0][i * C + k] * v[0][j * C + k];
                out[i * R + j] = s2;
            }
}

TEST(grad_tensor_used_twice) {
    static const char *names[8] = {"used twice: x*x + x",  "used twice: x*x",        "used twice: x + x",
                                   "used twice: concat(x,x,1)", "used twice: matmul(x,x^T)", "used twice: h*h, h=tanh(x)",
                                   "used twice: h*h + h", "used twice: h/2 + gelu(h)"};
    int w;
    for (w = 0; w < 8; w++) {
        gc g;
        gc_init(&g, names[w]);
        gc_param(&g, "x", INIT_NORMAL, 1.0, 2, 3, 4, 0, 0);
        g.ia[0] = w;
        g.hint = "when one tensor is both operands of an op (mul(x,x), add(x,x), concat(x,x), matmul(x,x^T)), "
                 "its gradient must receive both contributions; analytic = half (or a mix) means one was overwritten";
        g.build = b_twice;
        g.ref = r_twice;
        gc_run(&g);
    }
}

/* two losses over shared parameters W (5,4), b (5), x (3,4) inputs:
   L1 = proj(tanh(linear(x, W, b))), L2 = proj(gelu(linear(x2, W, b)) * v) */
static vt_tensor *two_l1(vt_ctx *c, gc *g) {
    return gc_proj(c, g, vt_tanh(c, vt_linear(c, g->p[2], g->p[0], g->p[1])), 0);
}
static vt_tensor *two_l2(vt_ctx *c, gc *g) {
    return gc_proj(c, g, vt_gelu(c, vt_linear(c, vt_scale(c, g->p[2], -0.7), g->p[0], g->p[1])), 1);
}
/* FD: L1 + L2 in one graph */
static vt_tensor *b_two(vt_ctx *c, gc *g) {
    if (g->ia[0] == 2) { /* shared activation h */
        vt_tensor *h = vt_tanh(c, vt_linear(c, g->p[2], g->p[0], g->p[1]));
        return vt_add(c, gc_proj(c, g, h, 0), gc_proj(c, g, vt_gelu(c, h), 1));
    }
    if (g->ia[0] == 3) return vt_scale(c, two_l1(c, g), 2.0); /* the same loss twice */
    return vt_add(c, two_l1(c, g), two_l2(c, g));
}
static int a_two(vt_ctx *c, gc *g) {
    vt_tensor *L1, *L2;
    switch (g->ia[0]) {
    case 0: /* build L1, backward, build L2, backward */
        L1 = two_l1(c, g);
        if (!L1 || vt_backward(c, L1) != VT_OK) return 0;
        L2 = two_l2(c, g);
        return L2 && vt_backward(c, L2) == VT_OK;
    case 1: /* build both, then backward L1, backward L2 */
        L1 = two_l1(c, g);
        L2 = two_l2(c, g);
        if (!L1 || !L2 || vt_backward(c, L1) != VT_OK) return 0;
        return vt_backward(c, L2) == VT_OK;
    case 2: { /* two losses sharing the activation h */
        vt_tensor *h = vt_tanh(c, vt_linear(c, g->p[2], g->p[0], g->p[1]));
        L1 = gc_proj(c, g, h, 0);
        L2 = gc_proj(c, g, vt_gelu(c, h), 1);
        if (!L1 || !L2 || vt_backward(c, L1) != VT_OK) return 0;
        return vt_backward(c, L2) == VT_OK;
    }
    default: /* the same loss backwarded twice: gradient 2 dL */
        L1 = two_l1(c, g);
        if (!L1 || vt_backward(c, L1) != VT_OK) return 0;
        return vt_backward(c, L1) == VT_OK;
    }
}

TEST(grad_two_backward) {
    static const char *names[4] = {"2 backward: L1 bwd, L2 built after", "2 backward: both built, then bwd each",
                                   "2 backward: losses share activation", "2 backward: same loss twice"};
    int w;
    for (w = 0; w < 4; w++) {
        gc g;
        gc_init(&g, names[w]);
        gc_param(&g, "W", INIT_NORMAL, 0.5, 2, 5, 4, 0, 0);
        gc_param(&g, "b", INIT_NORMAL, 0.5, 1, 5, 0, 0, 0);
        gc_param(&g, "x", INIT_NORMAL, 1.0, 2, 3, 4, 0, 0);
        g.ia[0] = w;
        g.hint = "after vt_backward(L1); vt_backward(L2) in one step a parameter's gradient should be dL1/dp + dL2/dp; "
                 "a larger analytic value means the second call propagated L1's graph again";
        g.build = b_two;
        g.analytic = a_two;
        gc_run(&g);
    }
}

/* ==========================================================================
   whole models
   ========================================================================== */

typedef struct {
    vt_mlp m;
    vt_gpt gpt;
    vt_gpt_config cfg;
    int nlayers, sizes[9], act, B, T;
} gc_model;

/* re-randomise every parameter (biases too, so nothing sits at 0; layernorm weights near 1) */
static void gc_rerandomise(vt_ctx *c, uint64_t seed, double wscale) {
    int i, np = vt_param_count(c);
    for (i = 0; i < np; i++) {
        vt_tensor *p = vt_param_at(c, i);
        int64_t j, n;
        size_t l;
        int lnw;
        double *v;
        if (!p) continue;
        n = vt_numel(p);
        l = strlen(p->name);
        lnw = l > 0 && strstr(p->name, "ln") != NULL && p->name[l - 1] == 'w';
        v = (double *)malloc(sizeof(double) * (size_t)n);
        vt_read_f64(c, p, v);
        for (j = 0; j < n; j++) {
            double z = vt_rng_normal(seed, 300 + (uint64_t)i, (uint64_t)j);
            v[j] = lnw ? 1 + 0.2 * z : p->ndim == 1 ? 0.3 * z : v[j] + wscale * z;
        }
        vt_write_f64(c, p, v);
        free(v);
    }
}

static int s_mlp(vt_ctx *c, gc *g) {
    gc_model *u = (gc_model *)g->user;
    if (vt_mlp_init(c, &u->m, u->nlayers, u->sizes, u->act, g->seed) != VT_OK) return 0;
    gc_rerandomise(c, g->seed, 0.0); /* biases random; weights keep their init */
    return vt_status_of(c) == VT_OK;
}

/* x (B, IN) constant inputs, targets in g->iv: cross-entropy (or mse for g->ia[0]) */
static vt_tensor *b_mlp(vt_ctx *c, gc *g) {
    gc_model *u = (gc_model *)g->user;
    int64_t ne[2], i, n;
    double *x;
    vt_tensor *xt, *logits;
    ne[0] = u->B; ne[1] = u->sizes[0];
    n = ne[0] * ne[1];
    x = (double *)malloc(sizeof(double) * (size_t)n);
    for (i = 0; i < n; i++) x[i] = vt_rng_normal(g->seed, 11, (uint64_t)i);
    if (g->mode == VT_MODE_FP64) xt = vt_from_f64(c, 2, ne, x);
    else {
        float *xf = (float *)malloc(sizeof(float) * (size_t)n);
        for (i = 0; i < n; i++) xf[i] = (float)x[i];
        xt = vt_from_f32(c, 2, ne, xf);
        free(xf);
    }
    free(x);
    logits = vt_mlp_forward(c, &u->m, xt);
    ne[0] = u->B;
    return vt_cross_entropy(c, logits, vt_from_i32(c, 1, ne, g->iv));
}

static void run_mlp(const char *name, vt_mode mode, int nl, const int *sizes, int act, int B) {
    gc g;
    gc_model u;
    int i;
    memset(&u, 0, sizeof u);
    gc_init(&g, name);
    u.nlayers = nl;
    for (i = 0; i <= nl; i++) u.sizes[i] = sizes[i];
    u.act = act;
    u.B = B;
    for (i = 0; i < B; i++) g.iv[i] = (int32_t)(vt_rng_u64(g.seed, 12, (uint64_t)i) % (uint64_t)sizes[nl]);
    g.user = &u;
    g.user_size = sizeof u;
    g.setup = s_mlp;
    g.build = b_mlp;
    g.mode = mode;
    g.nall = 100;
    if (mode == VT_MODE_FP64) {
        /* gradients are O(0.01..1) here: errors are relative to max(|numeric|, 1e-3) */
        g.floor = 1e-3;
        g.tol = 1e-5;
    } else {
        /* binary32 values: h = 1e-2 (a perturbation far above the binary32
           rounding of the loss, ~1e-7 |L|, so the difference keeps ~4 digits);
           tolerance 1e-2 relative to max(|numeric|, 1e-2) */
        g.h = 1e-2;
        g.floor = 1e-2;
        g.tol = 1e-2;
    }
    gc_run(&g);
}

TEST(grad_mlp) {
    int s3[3] = {7, 11, 5}, s4[4] = {7, 11, 9, 5};
    run_mlp("mlp {7,11,5} relu, CE, B=6", VT_MODE_FP64, 2, s3, 0, 6);
    run_mlp("mlp {7,11,5} tanh, CE, B=6", VT_MODE_FP64, 2, s3, 1, 6);
    run_mlp("mlp {7,11,5} gelu, CE, B=6", VT_MODE_FP64, 2, s3, 2, 6);
    run_mlp("mlp {7,11,9,5} tanh, CE, B=4", VT_MODE_FP64, 3, s4, 1, 4);
}

/* the verified mode's backward against its own forward (binary32 values) */
TEST(grad_verified_mlp) {
    int s3[3] = {5, 9, 4};
    run_mlp("VERIFIED mlp {5,9,4} tanh, CE, B=8", VT_MODE_VERIFIED, 2, s3, 1, 8);
    run_mlp("VERIFIED mlp {5,9,4} gelu, CE, B=8", VT_MODE_VERIFIED, 2, s3, 2, 8);
}

static int s_gpt(vt_ctx *c, gc *g) {
    gc_model *u = (gc_model *)g->user;
    if (vt_gpt_init(c, &u->gpt, &u->cfg, g->seed) != VT_OK) return 0;
    gc_rerandomise(c, g->seed, 0.25); /* weights 0.02 init + N(0, 0.25^2): attention far from uniform */
    return vt_status_of(c) == VT_OK;
}

static vt_tensor *b_gpt(vt_ctx *c, gc *g) {
    gc_model *u = (gc_model *)g->user;
    int64_t ne[2];
    ne[0] = u->B; ne[1] = u->T;
    return vt_gpt_forward(c, &u->gpt, vt_from_i32(c, 2, ne, g->iv), vt_from_i32(c, 2, ne, g->iv + u->B * u->T),
                          vt_step_index(c));
}

static void run_gpt(const char *name, double dropout, int pre_steps) {
    gc g;
    gc_model u;
    int i, n;
    memset(&u, 0, sizeof u);
    gc_init(&g, name);
    u.cfg.vocab = 13;
    u.cfg.context = 8;
    u.cfg.layers = 2;
    u.cfg.heads = 2;
    u.cfg.width = 8;
    u.cfg.dropout = dropout;
    u.B = 2;
    u.T = 6;
    n = u.B * u.T;
    for (i = 0; i < 2 * n; i++) g.iv[i] = (int32_t)(vt_rng_u64(g.seed, 13, (uint64_t)i) % 13u); /* tokens, targets */
    g.user = &u;
    g.user_size = sizeof u;
    g.setup = s_gpt;
    g.build = b_gpt;
    g.fresh = dropout > 0;
    g.pre_steps = pre_steps;
    g.nall = 64; /* smaller tensors in full, a random 24 of the others */
    /* gradients span 1e-4..1: errors relative to max(|numeric|, 1e-3) */
    g.floor = 1e-3;
    g.tol = 1e-5;
    gc_run(&g);
}

/* ==========================================================================
   convolution, batch norm, pooling (op table 1)
   ========================================================================== */

/* conv2d: x (N,C,H,W), w (OC,C/G,KH,KW), [bias (OC)]; ia: stride, pad,
   dilation, groups, has bias. The reference is the direct sum. */
static vt_tensor *b_conv(vt_ctx *c, gc *g) {
    g->y = vt_conv2d(c, g->p[0], g->p[1], g->ia[4] ? g->p[2] : NULL, g->ia[0], g->ia[1], g->ia[2], g->ia[3]);
    return gc_proj(c, g, g->y, 0);
}
static void r_conv(const gc *g, double *const *v, double *out) {
    const int64_t *xe = g->ps[0].ne, *we = g->ps[1].ne;
    int64_t N = xe[0], C = xe[1], H = xe[2], W = xe[3], OC = we[0], Cg = we[1], KH = we[2], KW = we[3];
    int64_t s = g->ia[0], p = g->ia[1], d = g->ia[2], G = g->ia[3], OCg = OC / G;
    int64_t OH = (H + 2 * p - d * (KH - 1) - 1) / s + 1, OW = (W + 2 * p - d * (KW - 1) - 1) / s + 1;
    int64_t n, oc, oh, ow, ic, kh, kw;
    (void)C;
    for (n = 0; n < N; n++)
        for (oc = 0; oc < OC; oc++)
            for (oh = 0; oh < OH; oh++)
                for (ow = 0; ow < OW; ow++) {
                    double acc = g->ia[4] ? v[2][oc] : 0;
                    for (ic = 0; ic < Cg; ic++)
                        for (kh = 0; kh < KH; kh++)
                            for (kw = 0; kw < KW; kw++) {
                                int64_t ih = oh * s - p + kh * d, iw = ow * s - p + kw * d, cc = (oc / OCg) * Cg + ic;
                                if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
                                acc += v[0][((n * xe[1] + cc) * H + ih) * W + iw] * v[1][((oc * Cg + ic) * KH + kh) * KW + kw];
                            }
                    out[((n * OC + oc) * OH + oh) * OW + ow] = acc;
                }
}
static void run_conv(const char *name, int64_t N, int64_t C, int64_t H, int64_t W, int64_t OC, int64_t K, int s, int p, int d,
                     int G, int bias) {
    gc g;
    gc_init(&g, name);
    gc_param(&g, "x", INIT_NORMAL, 1.0, 4, N, C, H, W);
    gc_param(&g, "w", INIT_NORMAL, 0.5, 4, OC, C / G, K, K);
    if (bias) gc_param(&g, "bias", INIT_NORMAL, 0.5, 1, OC, 0, 0, 0);
    g.ia[0] = s; g.ia[1] = p; g.ia[2] = d; g.ia[3] = G; g.ia[4] = bias;
    g.build = b_conv;
    g.ref = r_conv;
    gc_run(&g);
}

TEST(grad_conv2d) {
    run_conv("conv2d 3x3 pad 1, bias", 2, 3, 6, 5, 4, 3, 1, 1, 1, 1, 1);
    run_conv("conv2d stride 2 pad 2 dil 2 groups 2", 2, 4, 7, 7, 6, 3, 2, 2, 2, 2, 0);
    run_conv("conv2d depthwise 3x3", 1, 3, 5, 5, 3, 3, 1, 1, 1, 3, 0);
    run_conv("conv2d 1x1 stride 2", 2, 4, 5, 5, 3, 1, 2, 0, 1, 1, 1);
}

/* batchnorm2d with batch statistics (da[0] eps; ia[0]: with running state) */
static int s_bn(vt_ctx *c, gc *g) {
    if (!gc_default_setup(c, g)) return 0;
    if (g->ia[0]) g->user = vt_bn_state(c, "bn.state", g->ps[0].ne[1]);
    return vt_status_of(c) == VT_OK;
}
static vt_tensor *b_bn(vt_ctx *c, gc *g) {
    g->y = vt_batchnorm2d(c, g->p[0], g->p[1], g->p[2], g->ia[0] ? (vt_tensor *)g->user : NULL, 0.1, g->da[0]);
    return gc_proj(c, g, g->y, 0);
}
static void r_bn(const gc *g, double *const *v, double *out) {
    const int64_t *xe = g->ps[0].ne;
    int64_t N = xe[0], C = xe[1], HW = xe[2] * xe[3], n, ch, h;
    for (ch = 0; ch < C; ch++) {
        double mu = 0, var = 0, rstd;
        for (n = 0; n < N; n++)
            for (h = 0; h < HW; h++) mu += v[0][(n * C + ch) * HW + h];
        mu /= (double)(N * HW);
        for (n = 0; n < N; n++)
            for (h = 0; h < HW; h++) var += (v[0][(n * C + ch) * HW + h] - mu) * (v[0][(n * C + ch) * HW + h] - mu);
        var /= (double)(N * HW);
        rstd = 1 / sqrt(var + g->da[0]);
        for (n = 0; n < N; n++)
            for (h = 0; h < HW; h++) out[(n * C + ch) * HW + h] = (v[0][(n * C + ch) * HW + h] - mu) * rstd * v[1][ch] + v[2][ch];
    }
}
static void run_bn(const char *name, int64_t N, int64_t C, int64_t H, int64_t W, int state) {
    gc g;
    gc_init(&g, name);
    gc_param(&g, "x", INIT_NORMAL, 1.5, 4, N, C, H, W);
    gc_param(&g, "w", INIT_ONE, 0.3, 1, C, 0, 0, 0);
    gc_param(&g, "b", INIT_NORMAL, 0.5, 1, C, 0, 0, 0);
    g.da[0] = 1e-5;
    g.ia[0] = state;
    g.setup = s_bn;
    g.build = b_bn;
    g.ref = r_bn;
    gc_run(&g);
}

TEST(grad_batchnorm2d) {
    run_bn("batchnorm2d (3,4,3,2)", 3, 4, 3, 2, 0);
    run_bn("batchnorm2d (2,3,2,2), running state", 2, 3, 2, 2, 1);
}

/* pooling: ia kind (0 max, 1 avg, 2 global avg), k, stride, pad */
static vt_tensor *b_pool(vt_ctx *c, gc *g) {
    g->y = g->ia[0] == 0 ? vt_maxpool2d(c, g->p[0], g->ia[1], g->ia[2], g->ia[3])
         : g->ia[0] == 1 ? vt_avgpool2d(c, g->p[0], g->ia[1], g->ia[2], g->ia[3]) : vt_global_avgpool(c, g->p[0]);
    return gc_proj(c, g, g->y, 0);
}
static void r_pool(const gc *g, double *const *v, double *out) {
    const int64_t *xe = g->ps[0].ne;
    int64_t H = xe[2], W = xe[3], KH = g->ia[0] == 2 ? H : g->ia[1], KW = g->ia[0] == 2 ? W : g->ia[1];
    int64_t s = g->ia[0] == 2 ? 1 : g->ia[2], p = g->ia[0] == 2 ? 0 : g->ia[3];
    int64_t OH = (H + 2 * p - KH) / s + 1, OW = (W + 2 * p - KW) / s + 1, pl, oh, ow, kh, kw;
    for (pl = 0; pl < xe[0] * xe[1]; pl++)
        for (oh = 0; oh < OH; oh++)
            for (ow = 0; ow < OW; ow++) {
                double acc = 0, mx = -INFINITY;
                for (kh = 0; kh < KH; kh++)
                    for (kw = 0; kw < KW; kw++) {
                        int64_t ih = oh * s - p + kh, iw = ow * s - p + kw;
                        if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
                        acc += v[0][(pl * H + ih) * W + iw];
                        mx = fmax(mx, v[0][(pl * H + ih) * W + iw]);
                    }
                out[(pl * OH + oh) * OW + ow] = g->ia[0] == 0 ? mx : acc / (double)(KH * KW);
            }
}
static void run_pool(const char *name, int kind, int64_t N, int64_t C, int64_t H, int64_t W, int k, int s, int p) {
    gc g;
    gc_init(&g, name);
    gc_param(&g, "x", INIT_NORMAL, 1.0, 4, N, C, H, W);
    g.ia[0] = kind; g.ia[1] = k; g.ia[2] = s; g.ia[3] = p;
    g.build = b_pool;
    g.ref = r_pool;
    gc_run(&g);
}

TEST(grad_pooling) {
    run_pool("maxpool2d 3x3 stride 2 pad 1", 0, 2, 3, 5, 5, 3, 2, 1);
    run_pool("maxpool2d 2x2 stride 2", 0, 2, 2, 4, 6, 2, 2, 0);
    run_pool("avgpool2d 3x3 stride 2 pad 1", 1, 2, 3, 5, 5, 3, 2, 1);
    run_pool("avgpool2d 2x2 stride 1", 1, 1, 2, 4, 4, 2, 1, 0);
    run_pool("global_avgpool (2,3,4,5)", 2, 2, 3, 4, 5, 0, 0, 0);
}

/* The cases above checked the gradient of every op of VT__OP_LIST: an op
   added to vtrain.h without a finite-difference check fails here. */
TEST(every_op_covered) { vt_test_check_coverage("the gradient checks", 0); }

TEST(grad_gpt) { run_gpt("gpt V13 ctx8 L2 NH2 C8, B2 T6", 0.0, 0); }

/* dropout inside the model: every finite-difference loss in a fresh context
   at the same step number (2), so all masks match */
TEST(grad_gpt_dropout) { run_gpt("gpt as above, dropout 0.2, step 2", 0.2, 2); }

int main(void) {
    const char *s = getenv("VT_TEST_SEED");
    if (s && *s) gc_base_seed = strtoull(s, NULL, 0);
    printf("test_grad: base seed %llu (set VT_TEST_SEED to change)\n", (unsigned long long)gc_base_seed);
    RUN(grad_add_sub_mul_same_shape);
    RUN(grad_broadcast);
    RUN(grad_scale);
    RUN(grad_matmul_2d);
    RUN(grad_matmul_batched_3d);
    RUN(grad_matmul_batched_4d);
    RUN(grad_matmul_shared_b);
    RUN(grad_linear);
    RUN(grad_relu);
    RUN(grad_gelu);
    RUN(grad_tanh);
    RUN(grad_softmax);
    RUN(grad_log_softmax);
    RUN(grad_cross_entropy);
    RUN(grad_mse);
    RUN(grad_layernorm);
    RUN(grad_embedding);
    RUN(grad_attention);
    RUN(grad_dropout);
    RUN(dropout_mask_properties);
    RUN(grad_sum_mean);
    RUN(grad_concat);
    RUN(grad_split);
    RUN(grad_views);
    RUN(grad_tensor_used_twice);
    RUN(grad_two_backward);
    RUN(grad_mlp);
    RUN(grad_verified_mlp);
    RUN(grad_gpt);
    RUN(grad_gpt_dropout);
    RUN(grad_conv2d);
    RUN(grad_batchnorm2d);
    RUN(grad_pooling);
    RUN(every_op_covered);
    return TEST_SUMMARY();
}
