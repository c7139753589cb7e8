/* test_bounds.c - hunting for inputs that break a bound.

   The numeric contract (>>rounding in vtrain.h) says each rounding point's
   value x and bound e mean one of two things: e = 0, every conforming
   machine computes exactly x; e > 0, x is within e of the reference x*
   (the op's definition evaluated exactly, with every value that is the
   same everywhere taken as computed). This program tries to break both
   claims with adversarial inputs:

     gauss     N(0,1) values
     wide      magnitudes from 2^-60 to 2^60 in one row
     cancel    pairs x, -x(1 + 2^-20) and a small remainder: sums near 0
     midpoint  rows built so that the exact result is a binary32 midpoint,
               with +-2^20 pairs that make every order round differently
     tiny      binary32 subnormals among normal values
     long      reductions of 8192 terms and more
     short     rows of length 1 and 2 (bounds of 0: the same everywhere)

   Every kernel output is captured before its rounding point (a hook on the
   CPU backend's kernel entry). Where this file knows the op's definition
   (linear forward and backward, matmul, softmax, log-softmax, cross-entropy,
   layernorm forward and backward, sum, mean, mse, attention's scores,
   softmax and mix, embedding backward) it computes x* in __float128
   (113-bit significand: a sum of n binary64 terms carries at most n 2^-113
   relative error, far below every bound) and counts |x - x*| > e as a
   violation. For every output of every op, each case also runs under
   several reduction orders (threads, blocks, chaos permutations, fma on and
   off) and checks that e = 0 values are bit-identical across them, that
   |x_a - x_b| <= e_a + e_b, and that two orders' bounds of one element
   differ by less than the factor 2 that compact log entries rely on
   (COMPACT ENTRIES in >>rounding).

   It also checks vtrain's own elementary functions against __float128 and
   VT__DLOG_ERR's claim for log.

   ./build/test_bounds          the quick version (make test)
   ./build/test_bounds --long   more seeds, longer rows (make test-bounds)
   Each run prints the totals: outputs checked, per op kind the worst
   |x - x*| / e, the largest bound ratio between orders. */
#define VTRAIN_IMPLEMENTATION
#include "../vtrain.h"
#include "test.h"
#include <quadmath.h>

typedef __float128 q128;

static int g_long;

/* --- capture ------------------------------------------------------------------ */

#define MAXCAP 64
typedef struct {
    int kind, op, slot, bwd;
    int64_t n;
    double *x, *e;      /* e NULL: no bound array (the same everywhere) */
} snap;
typedef struct { snap s[MAXCAP]; int n; } snaps;

typedef struct {
    const char *name;
    int64_t outputs, checked, viol, ident_bad, cross_bad;
    double worst;       /* max |x - x*| / e */
    double eratio;      /* max bound ratio between orders */
} kstat;
static kstat g_k[VT_POINT_KINDS];
static int64_t g_total_checked, g_total_viol;
static char g_first[400];

static const vt__backend *g_orig;
static vt__backend g_hook;
static snaps *g_cap;

/* reference values for an output, or 0 if this file does not know the op */
static int reference(const vt__kern *k, int slot, const double *old, q128 *ref);

static void record_violation(const char *what) {
    if (!g_first[0]) snprintf(g_first, sizeof g_first, "%s", what);
}

static void hook_kernel(vt__kern *k) {
    int i;
    double *old[VT_MAX_SRC] = {0};
    for (i = 0; i < VT_MAX_SRC; i++) /* values an accumulating kernel adds to */
        if (k->out[i].x && k->out[i].acc) {
            old[i] = (double *)malloc(sizeof(double) * (size_t)(k->out[i].n + 1));
            memcpy(old[i], k->out[i].x, sizeof(double) * (size_t)k->out[i].n);
        }
    g_orig->kernel(k);
    for (i = 0; i < VT_MAX_SRC && vt_status_of(k->c) == VT_OK; i++) {
        const vt__kout *o = &k->out[i];
        snap *sn;
        int64_t j;
        if (!o->x || o->exact) continue;
        if (g_cap && g_cap->n < MAXCAP) {
            sn = &g_cap->s[g_cap->n++];
            sn->kind = o->kind; sn->op = (int)k->t->op; sn->slot = i; sn->bwd = k->bwd; sn->n = o->n;
            sn->x = (double *)malloc(sizeof(double) * (size_t)(o->n + 1));
            memcpy(sn->x, o->x, sizeof(double) * (size_t)o->n);
            sn->e = NULL;
            if (o->e || o->lz) {
                sn->e = (double *)malloc(sizeof(double) * (size_t)(o->n + 1));
                for (j = 0; j < o->n; j++) sn->e[j] = o->lz ? vt__lazy_e(o->lz, j) : o->e[j];
            }
        }
        if (o->e || o->lz) {
            q128 *ref = (q128 *)malloc(sizeof(q128) * (size_t)(o->n + 1));
            kstat *ks = &g_k[o->kind];
            if (reference(k, i, old[i], ref)) {
                for (j = 0; j < o->n; j++) {
                    double e = o->lz ? vt__lazy_e(o->lz, j) : o->e[j], x = o->x[j];
                    double d = (double)fabsq((q128)x - ref[j]);
                    if (e <= 0) continue; /* a claim of sameness, checked across orders */
                    ks->checked++;
                    g_total_checked++;
                    if (!(d <= e)) {
                        char why[400], nm[64];
                        vt__kind_name(o->kind, nm, sizeof nm);
                        ks->viol++;
                        g_total_viol++;
                        snprintf(why, sizeof why, "%s element %lld: x %.17g, reference %.17g, |x - x*| = %.3g > e = %.3g", nm,
                                 (long long)j, x, (double)ref[j], d, e);
                        record_violation(why);
                    } else if (d / e > ks->worst) { ks->worst = d / e; if (getenv("VT_DBG") && d / e > 0.5) printf("\n   DBG %s elem %lld x %.17g ref %.17g d %.3g e %.3g\n", vt_op_name(k->t->op), (long long)j, x, (double)ref[j], d, e); }
                }
            }
            free(ref);
        }
    }
    for (i = 0; i < VT_MAX_SRC; i++) free(old[i]);
}

static void snaps_free(snaps *s) {
    int i;
    for (i = 0; i < s->n; i++) { free(s->s[i].x); free(s->s[i].e); }
    s->n = 0;
}

/* two orders' captures of the same program: sameness, divergence, bound ratio */
static void compare_runs(const snaps *a, const snaps *b, const char *case_name) {
    int i;
    if (a->n != b->n) {
        char why[200];
        snprintf(why, sizeof why, "%s: %d kernel outputs in one order, %d in another", case_name, a->n, b->n);
        record_violation(why);
        g_total_viol++;
        return;
    }
    for (i = 0; i < a->n; i++) {
        const snap *p = &a->s[i], *q = &b->s[i];
        kstat *ks = &g_k[p->kind];
        int64_t j;
        if (p->kind != q->kind || p->n != q->n) { g_total_viol++; record_violation("outputs differ in kind or size"); continue; }
        ks->outputs++;
        for (j = 0; j < p->n; j++) {
            double ea = p->e ? p->e[j] : 0, eb = q->e ? q->e[j] : 0, xa = p->x[j], xb = q->x[j];
            char why[400], nm[64];
            if (ea == 0 && eb == 0) {
                if (memcmp(&xa, &xb, 8) && !(xa != xa && xb != xb)) {
                    vt__kind_name(p->kind, nm, sizeof nm);
                    ks->ident_bad++;
                    g_total_viol++;
                    snprintf(why, sizeof why, "%s (%s) element %lld: bound 0 in both orders but %.17g vs %.17g", nm, case_name,
                             (long long)j, xa, xb);
                    record_violation(why);
                }
                continue;
            }
            if (!(fabs(xa - xb) <= (ea + eb) * (1 + 0x1p-20))) {
                vt__kind_name(p->kind, nm, sizeof nm);
                ks->cross_bad++;
                g_total_viol++;
                snprintf(why, sizeof why, "%s (%s) element %lld: |%.17g - %.17g| > %g + %g", nm, case_name, (long long)j, xa, xb, ea, eb);
                record_violation(why);
            }
            if (ea > 0 && eb > 0) {
                double r = ea > eb ? ea / eb : eb / ea;
                if (r > ks->eratio) ks->eratio = r;
            } else if ((ea > 0) != (eb > 0)) { /* one order claims sameness, the other a bound */
                vt__kind_name(p->kind, nm, sizeof nm);
                ks->ident_bad++;
                g_total_viol++;
                snprintf(why, sizeof why, "%s (%s) element %lld: bound %g in one order, %g in the other", nm, case_name,
                         (long long)j, ea, eb);
                record_violation(why);
            }
        }
    }
}

/* --- references ------------------------------------------------------------------- */

static const double *D(const vt_tensor *t) { return (const double *)t->data; }

/* out[r, c] (+)= sum_k A[r*ars + k*aks] B[k*bks + c*bcs], in __float128 */
static void qmm(q128 *out, int64_t R, int64_t Cn, int64_t K, const double *A, int64_t ars, int64_t aks, const double *B,
                int64_t bks, int64_t bcs) {
    int64_t r, c, k;
    for (r = 0; r < R; r++)
        for (c = 0; c < Cn; c++) {
            q128 s = 0;
            for (k = 0; k < K; k++) s += (q128)A[r * ars + k * aks] * (q128)B[k * bks + c * bcs];
            out[r * Cn + c] += s;
        }
}

/* softmax reference of one row: d_j = vt__dexp(x_j - m) as the kernel computes
   it (the same everywhere), s* exact */
static q128 qrow_sum(const double *x, int64_t n, double *d, double *mx) {
    int64_t j;
    double m = -INFINITY;
    q128 s = 0;
    for (j = 0; j < n; j++) if (x[j] > m) m = x[j];
    for (j = 0; j < n; j++) { d[j] = vt__dexp(x[j] - m); s += (q128)d[j]; }
    *mx = m;
    return s;
}

static int reference(const vt__kern *k, int slot, const double *old, q128 *ref) {
    const vt_tensor *t = k->t;
    int64_t n = k->out[slot].n, i, r, j;
    for (i = 0; i < n; i++) ref[i] = old ? (q128)old[i] : 0;
    switch (t->op) {
    case VT_OP_LINEAR: {
        const vt_tensor *x = t->src[0], *w = t->src[1], *b = t->src[2];
        int64_t IN = w->ne[1], OC = w->ne[0], R = vt_numel(x) / IN;
        if (!k->bwd) {
            qmm(ref, R, OC, IN, D(x), IN, 1, D(w), 1, IN);
            if (b) for (r = 0; r < R; r++) for (j = 0; j < OC; j++) ref[r * OC + j] += (q128)D(b)[j];
            return 1;
        }
        if (slot == 0) { qmm(ref, R, IN, OC, D(t->grad), OC, 1, D(w), IN, 1); return 1; }
        if (slot == 1) { qmm(ref, OC, IN, R, D(t->grad), 1, OC, D(x), IN, 1); return 1; }
        for (r = 0; r < R; r++) for (j = 0; j < OC; j++) ref[j] += (q128)D(t->grad)[r * OC + j];
        return 1;
    }
    case VT_OP_MATMUL: { /* the cases here: a (Bt,M,K), b (Bt,K,N) or (K,N), no transposes */
        const vt_tensor *a = t->src[0], *b = t->src[1];
        int64_t M = a->ne[a->ndim - 2], K = a->ne[a->ndim - 1], N = b->ne[b->ndim - 1], Bt = vt_numel(a) / (M * K), bb;
        if (k->bwd || t->iparam[0] || t->iparam[1] || b->ne[b->ndim - 2] != K) return 0;
        for (bb = 0; bb < Bt; bb++)
            qmm(ref + bb * M * N, M, N, K, D(a) + bb * M * K, K, 1, D(b) + (b->ndim > 2 ? bb * K * N : 0), N, 1);
        return 1;
    }
    case VT_OP_SOFTMAX: case VT_OP_LOG_SOFTMAX: case VT_OP_ATT_SOFTMAX: {
        const vt_tensor *x = t->src[0];
        int64_t L = x->ne[x->ndim - 1], R = vt_numel(x) / L;
        int causal = t->op == VT_OP_ATT_SOFTMAX, logsm = t->op == VT_OP_LOG_SOFTMAX;
        double *d = (double *)malloc(sizeof(double) * (size_t)(L + 1)), m;
        for (r = 0; r < R; r++) {
            int64_t nr = causal ? r % L + 1 : L;
            const double *xr = D(x) + r * L;
            if (!k->bwd) {
                q128 s = qrow_sum(xr, nr, d, &m);
                for (j = 0; j < nr; j++) ref[r * L + j] = logsm ? (q128)(xr[j] - m) - logq(s) : (q128)d[j] / s;
            } else {
                const double *y = D(t) + r * L, *dy = D(t->grad) + r * L;
                q128 S = 0;
                if (logsm) {
                    for (j = 0; j < nr; j++) S += (q128)dy[j];
                    for (j = 0; j < nr; j++) ref[r * L + j] += (q128)dy[j] - (q128)vt__dexp(y[j]) * S;
                } else {
                    for (j = 0; j < nr; j++) S += (q128)dy[j] * (q128)y[j];
                    for (j = 0; j < nr; j++) ref[r * L + j] += (q128)y[j] * ((q128)dy[j] - S);
                }
            }
        }
        free(d);
        return 1;
    }
    case VT_OP_CROSS_ENTROPY: {
        const vt_tensor *x = t->src[0];
        const int32_t *tg = (const int32_t *)t->src[1]->data;
        int64_t V = x->ne[x->ndim - 1], R = vt_numel(x) / V;
        double *d = (double *)malloc(sizeof(double) * (size_t)(V + 1)), m;
        q128 tot = 0;
        for (r = 0; r < R; r++) {
            const double *xr = D(x) + r * V;
            q128 s = qrow_sum(xr, V, d, &m);
            if (!k->bwd) tot += logq(s) - (q128)(xr[tg[r]] - m);
            else {
                double coef = D(t->grad)[0] / (double)R;
                for (j = 0; j < V; j++) ref[r * V + j] += ((q128)d[j] / s - (j == tg[r] ? 1 : 0)) * (q128)coef;
            }
        }
        if (!k->bwd) ref[0] = tot / R;
        free(d);
        return 1;
    }
    case VT_OP_LAYERNORM: {
        const vt_tensor *x = t->src[0], *w = t->src[1], *b = t->src[2];
        int64_t C = x->ne[x->ndim - 1], R = vt_numel(x) / C;
        double eps = t->fparam[0];
        q128 *xh = (q128 *)malloc(sizeof(q128) * (size_t)(C + 1)), *acc = NULL;
        if (k->bwd && slot > 0) acc = ref;
        for (r = 0; r < R; r++) {
            const double *xr = D(x) + r * C;
            q128 mu = 0, var = 0, rstd;
            for (j = 0; j < C; j++) mu += (q128)xr[j];
            mu /= C;
            for (j = 0; j < C; j++) var += ((q128)xr[j] - mu) * ((q128)xr[j] - mu);
            var /= C;
            rstd = 1 / sqrtq(var + (q128)eps);
            for (j = 0; j < C; j++) xh[j] = ((q128)xr[j] - mu) * rstd;
            if (!k->bwd) {
                for (j = 0; j < C; j++) ref[r * C + j] = xh[j] * (q128)D(w)[j] + (q128)D(b)[j];
            } else {
                const double *dy = D(t->grad) + r * C;
                if (slot == 0) {
                    q128 m1 = 0, m2 = 0;
                    for (j = 0; j < C; j++) { q128 dn = (q128)dy[j] * (q128)D(w)[j]; m1 += dn; m2 += dn * xh[j]; }
                    m1 /= C; m2 /= C;
                    for (j = 0; j < C; j++) ref[r * C + j] += rstd * ((q128)dy[j] * (q128)D(w)[j] - m1 - xh[j] * m2);
                } else if (slot == 1) {
                    for (j = 0; j < C; j++) acc[j] += (q128)dy[j] * xh[j];
                } else {
                    for (j = 0; j < C; j++) acc[j] += (q128)dy[j];
                }
            }
        }
        free(xh);
        return 1;
    }
    case VT_OP_SUM: case VT_OP_MEAN: {
        const vt_tensor *x = t->src[0];
        int64_t nx = vt_numel(x);
        q128 s = 0;
        if (k->bwd) return 0;
        for (i = 0; i < nx; i++) s += (q128)D(x)[i];
        ref[0] = t->op == VT_OP_MEAN ? s / nx : s;
        return 1;
    }
    case VT_OP_MSE: {
        const vt_tensor *a = t->src[0], *b = t->src[1];
        int64_t na = vt_numel(a);
        q128 s = 0;
        if (k->bwd) return 0;
        for (i = 0; i < na; i++) { double di = D(a)[i] - D(b)[i]; s += (q128)(di * di); }
        ref[0] = s / na;
        return 1;
    }
    case VT_OP_ATT_SCORES: case VT_OP_ATT_MIX: {
        const vt_tensor *qkv = t->op == VT_OP_ATT_SCORES ? t->src[0] : t->src[1];
        int64_t B = qkv->ne[0], T = qkv->ne[1], C = qkv->ne[2] / 3, NH = t->iparam[0], hs = t->iparam[1], C3 = 3 * C, b, h, tt,
                t2, dd;
        double scale = 1.0 / sqrt((double)hs);
        const double *Q = D(qkv);
        if (k->bwd) return 0;
        for (b = 0; b < B; b++)
            for (h = 0; h < NH; h++)
                for (tt = 0; tt < T; tt++) {
                    if (t->op == VT_OP_ATT_SCORES) {
                        for (t2 = 0; t2 <= tt; t2++) {
                            q128 s = 0;
                            for (dd = 0; dd < hs; dd++)
                                s += (q128)Q[(b * T + tt) * C3 + h * hs + dd] * (q128)Q[(b * T + t2) * C3 + C + h * hs + dd];
                            ref[((b * NH + h) * T + tt) * T + t2] = (q128)scale * s;
                        }
                    } else {
                        const double *att = D(t->src[0]) + ((b * NH + h) * T + tt) * T;
                        for (dd = 0; dd < hs; dd++) {
                            q128 s = 0;
                            for (t2 = 0; t2 <= tt; t2++) s += (q128)att[t2] * (q128)Q[(b * T + t2) * C3 + 2 * C + h * hs + dd];
                            ref[(b * T + tt) * C + h * hs + dd] += s;
                        }
                    }
                }
        return 1;
    }
    case VT_OP_EMBEDDING: {
        const vt_tensor *tab = t->src[0];
        const int32_t *idx = (const int32_t *)t->src[1]->data;
        int64_t Cc = tab->ne[1], npos = vt_numel(t->src[1]);
        if (!k->bwd) return 0;
        for (i = 0; i < npos; i++)
            for (j = 0; j < Cc; j++) ref[idx[i] * Cc + j] += (q128)D(t->grad)[i * Cc + j];
        return 1;
    }
    default: return 0;
    }
}

/* --- input generators ----------------------------------------------------------------- */

enum { G_GAUSS, G_WIDE, G_CANCEL, G_MIDPOINT, G_TINY, G_NGEN };
static const char *g_gen_names[] = {"gauss", "wide", "cancel", "midpoint", "tiny"};

/* n binary32 values for one row of generator g */
static void gen_row(int g, uint64_t seed, uint64_t row, float *v, int64_t n) {
    int64_t i;
    for (i = 0; i < n; i++) {
        uint64_t r = vt_rng_u64(seed, row, (uint64_t)i);
        double z = vt_rng_normal(seed + 1, row, (uint64_t)i);
        switch (g) {
        case G_WIDE: v[i] = (float)ldexp((r & 1 ? -1.0 : 1.0) * (1 + (double)((r >> 8) & 0xffff) / 65536), (int)((r >> 32) % 121) - 60); break;
        case G_CANCEL:
            if (i % 2 == 0) v[i] = (float)z;
            else v[i] = (float)(-(double)v[i - 1] * (1 + 0x1p-20));
            if (i == n - 1 && n % 2) v[i] = (float)(z * 0x1p-30);
            break;
        case G_MIDPOINT: {
            /* a binary32 f, +-2^20 pairs, and f's half ulp spread over the rest */
            int64_t p = i % 4;
            if (i == 0) v[i] = 1.0f + (float)((r >> 40) & 0x7fff) * 0x1p-15f;
            else if (p == 1) v[i] = 0x1p20f;
            else if (p == 2) v[i] = -0x1p20f;
            else v[i] = (r & 1) ? 0x1p-25f : -0x1p-26f;
            break;
        }
        case G_TINY: v[i] = (i % 3 == 0) ? (float)(z * 1e-40) : (float)(z * 1e-3); break;
        default: v[i] = (float)z;
        }
    }
}

/* --- cases ------------------------------------------------------------------------------- */

typedef struct {
    int op;          /* what the case builds */
    int gen;
    int64_t R, K, N; /* rows, reduction length, outputs */
    uint64_t seed;
    vt_tensor *p[4];
} hcase;

static void fill_param(vt_ctx *c, vt_tensor *t, int gen, uint64_t seed, int64_t rowlen) {
    int64_t n = vt_numel(t), r;
    float *v = (float *)malloc(sizeof(float) * (size_t)(n + 1));
    for (r = 0; r < n / rowlen; r++) gen_row(gen, seed, (uint64_t)r, v + r * rowlen, rowlen);
    vt_write_f32(c, t, v);
    free(v);
}

static vt_status case_setup(vt_ctx *c, void *u) {
    hcase *h = (hcase *)u;
    int64_t s2[2], s1[1], s3[3];
    switch (h->op) {
    case VT_OP_LINEAR:
        s2[0] = h->R; s2[1] = h->K; h->p[0] = vt_param(c, "x", 2, s2);
        s2[0] = h->N; s2[1] = h->K; h->p[1] = vt_param(c, "w", 2, s2);
        s1[0] = h->N; h->p[2] = vt_param(c, "b", 1, s1);
        fill_param(c, h->p[0], h->gen, h->seed, h->K);
        fill_param(c, h->p[1], h->gen == G_MIDPOINT ? G_GAUSS : h->gen, h->seed + 7, h->K);
        if (h->gen == G_MIDPOINT) { /* w = 1: the row sums themselves sit on midpoints */
            float *one = (float *)malloc(sizeof(float) * (size_t)(h->N * h->K));
            int64_t q;
            for (q = 0; q < h->N * h->K; q++) one[q] = 1.0f;
            vt_write_f32(c, h->p[1], one);
            free(one);
        }
        fill_param(c, h->p[2], G_GAUSS, h->seed + 9, h->N);
        break;
    case VT_OP_MATMUL:
        s3[0] = 2; s3[1] = h->R; s3[2] = h->K; h->p[0] = vt_param(c, "a", 3, s3);
        s2[0] = h->K; s2[1] = h->N; h->p[1] = vt_param(c, "b", 2, s2);
        fill_param(c, h->p[0], h->gen, h->seed, h->K);
        fill_param(c, h->p[1], h->gen, h->seed + 3, h->N);
        break;
    case VT_OP_LAYERNORM:
        s2[0] = h->R; s2[1] = h->K; h->p[0] = vt_param(c, "x", 2, s2);
        s1[0] = h->K; h->p[1] = vt_param(c, "w", 1, s1); h->p[2] = vt_param(c, "b", 1, s1);
        fill_param(c, h->p[0], h->gen, h->seed, h->K);
        fill_param(c, h->p[1], G_GAUSS, h->seed + 1, h->K);
        fill_param(c, h->p[2], G_GAUSS, h->seed + 2, h->K);
        break;
    case VT_OP_ATT_SCORES: /* the attention: qkv (2, T=R, 3C), C = K, 2 heads */
        s3[0] = 2; s3[1] = h->R; s3[2] = 3 * h->K; h->p[0] = vt_param(c, "qkv", 3, s3);
        fill_param(c, h->p[0], h->gen, h->seed, 3 * h->K);
        break;
    case VT_OP_EMBEDDING:
        s2[0] = 7; s2[1] = h->K; h->p[0] = vt_param(c, "table", 2, s2);
        fill_param(c, h->p[0], h->gen, h->seed, h->K);
        break;
    default: /* softmax, log_softmax, cross_entropy, sum, mean, mse: x (R, K) */
        s2[0] = h->R; s2[1] = h->K; h->p[0] = vt_param(c, "x", 2, s2);
        fill_param(c, h->p[0], h->gen, h->seed, h->K);
        if (h->op == VT_OP_MSE) { h->p[1] = vt_param(c, "y", 2, s2); fill_param(c, h->p[1], h->gen, h->seed + 5, h->K); }
    }
    return vt_status_of(c);
}

/* the loss: sum(y * r) with r binary32 N(0,1), so every output gets its own gradient */
static vt_tensor *project(vt_ctx *c, vt_tensor *y, uint64_t seed) {
    int64_t n = vt_numel(y), i;
    float *r = (float *)malloc(sizeof(float) * (size_t)(n + 1));
    vt_tensor *rt, *p;
    for (i = 0; i < n; i++) r[i] = (float)vt_rng_normal(seed, 99, (uint64_t)i);
    rt = vt_from_f32(c, y->ndim, y->ne, r);
    free(r);
    p = vt_mul(c, y, rt);
    return vt_sum(c, p);
}

static vt_status case_step(vt_ctx *c, int64_t s, void *u) {
    hcase *h = (hcase *)u;
    vt_tensor *y = NULL, *L;
    (void)s;
    switch (h->op) {
    case VT_OP_LINEAR: y = vt_linear(c, h->p[0], h->p[1], h->p[2]); break;
    case VT_OP_MATMUL: y = vt_matmul(c, h->p[0], h->p[1], 0, 0); break;
    case VT_OP_SOFTMAX: y = vt_softmax(c, h->p[0]); break;
    case VT_OP_LOG_SOFTMAX: y = vt_log_softmax(c, h->p[0]); break;
    case VT_OP_LAYERNORM: y = vt_layernorm(c, h->p[0], h->p[1], h->p[2], 1e-5); break;
    case VT_OP_SUM: y = vt_sum(c, h->p[0]); break;
    case VT_OP_MEAN: y = vt_mean(c, h->p[0]); break;
    case VT_OP_MSE: y = vt_mse(c, h->p[0], h->p[1]); break;
    case VT_OP_ATT_SCORES: y = vt_attention(c, h->p[0], 2); break;
    case VT_OP_CROSS_ENTROPY: {
        int64_t ne[1], i;
        int32_t *tg = (int32_t *)malloc(sizeof(int32_t) * (size_t)h->R);
        vt_tensor *tt;
        for (i = 0; i < h->R; i++) tg[i] = (int32_t)(vt_rng_u64(h->seed, 5, (uint64_t)i) % (uint64_t)h->K);
        ne[0] = h->R;
        tt = vt_from_i32(c, 1, ne, tg);
        free(tg);
        L = vt_cross_entropy(c, h->p[0], tt);
        vt_backward(c, L);
        return vt_status_of(c);
    }
    case VT_OP_EMBEDDING: {
        int64_t ne[1], i;
        int32_t idx[64];
        vt_tensor *it;
        for (i = 0; i < h->R && i < 64; i++) idx[i] = (int32_t)(vt_rng_u64(h->seed, 6, (uint64_t)i) % 7);
        ne[0] = h->R < 64 ? h->R : 64;
        it = vt_from_i32(c, 1, ne, idx);
        y = vt_embedding(c, h->p[0], it);
        break;
    }
    }
    L = project(c, y, h->seed + 11);
    vt_backward(c, L);
    return vt_status_of(c);
}

static const char *g_orders[] = {"threads:2", "threads:1,chaos:1", "threads:2,chaos:2,nofma", "threads:1,block:7", "chaos:3,block:3"};

/* one case under every order: references checked in each, orders compared */
static void run_case(hcase *h) {
    snaps runs[5];
    int norders = g_long ? 5 : 3, oi;
    char nm[128];
    snprintf(nm, sizeof nm, "%s %s R%lld K%lld N%lld", vt_op_name((vt_op)h->op), g_gen_names[h->gen], (long long)h->R,
             (long long)h->K, (long long)h->N);
    for (oi = 0; oi < norders; oi++) {
        vt_desc d = vt_desc_default();
        vt_ctx *c;
        vt_program p;
        vt_report r;
        vt_order_parse(&d.order, g_orders[oi]);
        if (!d.order.threads) d.order.threads = 2;
        /* the first order trains and logs, the others audit with its log:
           a reduction's output may round differently in another order (its
           bound allows that), and only the log makes the next op's inputs
           identical, which is what a bound of 0 speaks of */
        d.log_path = "build/test_bounds_case.vtlog";
        d.role = oi == 0 ? VT_ROLE_TRAIN : VT_ROLE_AUDIT;
        c = vt_create(&d);
        if (!c) { CHECK(0, "vt_create: %s", vt_last_error()); return; }
        g_orig = c->be;
        g_hook = *c->be;
        g_hook.kernel = hook_kernel;
        c->be = &g_hook;
        runs[oi].n = 0;
        g_cap = &runs[oi];
        p.setup = case_setup; p.step = case_step; p.on_step = NULL; p.user = h;
        case_setup(c, h);
        vt_run_ctx(c, &p, 1, &r);
        g_cap = NULL;
        CHECK(r.status == VT_OK, "%s under %s: %s", nm, g_orders[oi], r.message);
        vt_destroy(c);
    }
    for (oi = 1; oi < norders; oi++) compare_runs(&runs[0], &runs[oi], nm);
    for (oi = 0; oi < norders; oi++) snaps_free(&runs[oi]);
}

TEST(bounds_hold_against_float128) {
    static const int ops[] = {VT_OP_LINEAR, VT_OP_MATMUL, VT_OP_SOFTMAX, VT_OP_LOG_SOFTMAX, VT_OP_CROSS_ENTROPY,
                              VT_OP_LAYERNORM, VT_OP_SUM, VT_OP_MEAN, VT_OP_MSE, VT_OP_ATT_SCORES, VT_OP_EMBEDDING};
    int oi, g, si, nseeds = g_long ? 6 : 1;
    int64_t big = g_long ? 16384 : 8192;
    for (oi = 0; oi < (int)(sizeof ops / sizeof ops[0]); oi++)
        for (g = 0; g < G_NGEN; g++)
            for (si = 0; si < nseeds; si++) {
                hcase h;
                int op = ops[oi];
                memset(&h, 0, sizeof h);
                h.op = op; h.gen = g; h.seed = 1000 + 17 * (uint64_t)si + 131 * (uint64_t)g;
                switch (op) {
                case VT_OP_LINEAR: h.R = 5; h.K = si % 2 ? 2 : (g == G_MIDPOINT ? 403 : 257); h.N = 6; break;
                case VT_OP_MATMUL: h.R = 4; h.K = 37 + si; h.N = 5; break;
                case VT_OP_ATT_SCORES: h.R = 9; h.K = 8; break;
                case VT_OP_EMBEDDING: h.R = 40; h.K = 5; break;
                case VT_OP_SUM: case VT_OP_MEAN: h.R = 1; h.K = big; break;
                default: h.R = 3; h.K = si % 3 == 0 ? 300 : si % 3 == 1 ? 2 : 1;
                }
                if (op == VT_OP_CROSS_ENTROPY && h.K < 2) h.K = 2;
                run_case(&h);
            }
    {   /* the long rows: a weight gradient over 8192 rows, a softmax over 8192 */
        hcase h;
        memset(&h, 0, sizeof h);
        h.op = VT_OP_LINEAR; h.gen = G_WIDE; h.R = big; h.K = 3; h.N = 2; h.seed = 77;
        run_case(&h);
        h.op = VT_OP_SOFTMAX; h.gen = G_GAUSS; h.R = 2; h.K = big; h.seed = 78;
        run_case(&h);
        h.op = VT_OP_LOG_SOFTMAX; h.gen = G_CANCEL;
        run_case(&h);
    }
    CHECK(g_total_viol == 0, "%lld violations; first: %s", (long long)g_total_viol, g_first);
    CHECK(g_total_checked > 20000, "only %lld outputs checked against a reference", (long long)g_total_checked);
    {
        int kd;
        int64_t outs = 0;
        double emax = 0;
        for (kd = 0; kd < VT_POINT_KINDS; kd++) {
            kstat *ks = &g_k[kd];
            char nm[64];
            outs += ks->outputs;
            if (ks->eratio > emax) emax = ks->eratio;
            if (!ks->checked && !ks->outputs) continue;
            vt__kind_name(kd, nm, sizeof nm);
            NOTE("%-18s %8lld outputs compared across orders, %8lld against __float128: worst |x - x*|/e %.3g, bound ratio 1 + %.2g",
                 nm, (long long)ks->outputs, (long long)ks->checked, ks->worst, ks->eratio > 0 ? ks->eratio - 1 : 0);
        }
        NOTE("%lld values checked against __float128, %lld kernel outputs compared across orders, largest bound ratio "
             "1 + %.3g (the contract assumes at most 1 + 2^-20 = 1 + %.3g)", (long long)g_total_checked, (long long)outs,
             emax - 1, 0x1p-20);
        CHECK(emax <= 1 + 0x1p-21, "two orders' bounds of one element differ by a factor 1 + %g (TWO HONEST BOUNDS)", emax - 1);
    }
}

/* --- vtrain's own elementary functions -------------------------------------------------- */

static double ulps(double got, q128 want) {
    double w = (double)want, u;
    if (w == 0) return got == 0 ? 0 : 1e300;
    if (fabs(w) < 0x1p-1022) return (double)fabsq((q128)got - want) / 0x1p-1074;
    u = nextafter(fabs(w), INFINITY) - fabs(w);
    return (double)fabsq((q128)got - want) / u;
}

static q128 qsig(q128 x) { return 1 / (1 + expq(-x)); }
static q128 qcospi2(q128 p) { return cosq(M_PIq / 2 * p); }
static double dcospi2(double p) { return vt__dcospi2(p, 1 - p); }

typedef struct { const char *name; double (*f)(double); q128 (*q)(q128); double lo, hi, limit; } eltest;

TEST(elementary_functions_accuracy) {
    static const eltest T[] = {
        {"exp", vt__dexp, expq, -745, 709.7, 1.5},
        {"exp", vt__dexp, expq, -0.35, 0.35, 1.0},
        {"expm1", vt__dexpm1, expm1q, -1, 1, 4.5},
        {"expm1", vt__dexpm1, expm1q, -1e-8, 1e-8, 1.0},
        {"log", vt__dlog, logq, 0.6, 1.6, 2.5},
        {"log", vt__dlog, logq, 1, 1e300, 2.5},
        {"log", vt__dlog, logq, 1e-320, 1e-300, 2.5},
        {"tanh", vt__dtanh, tanhq, -25, 25, 3.5},
        {"tanh", vt__dtanh, tanhq, -1e-6, 1e-6, 3.5},
        {"sigmoid", vt__dsigmoid, qsig, -740, 740, 3.5},
        {"cospi2", dcospi2, qcospi2, 0, 1, 3.0},
        {"cospi2", dcospi2, qcospi2, 0.999999, 1, 3.0},
    };
    int64_t n = g_long ? 2000000 : 100000, i;
    int t;
    for (t = 0; t < (int)(sizeof T / sizeof T[0]); t++) {
        double worst = 0, wx = 0;
        for (i = 0; i < n; i++) {
            double u = vt_rng_uniform(42, (uint64_t)t, (uint64_t)i), x = T[t].lo + (T[t].hi - T[t].lo) * u, e;
            if (T[t].lo > 0 && T[t].hi / T[t].lo > 1e6) x = exp(log(T[t].lo) + (log(T[t].hi) - log(T[t].lo)) * u);
            e = ulps(T[t].f(x), T[t].q((q128)x));
            if (e > worst) { worst = e; wx = x; }
        }
        CHECK(worst <= T[t].limit, "%s on [%g, %g]: %.3f ulps at %.17g (limit %.1f)", T[t].name, T[t].lo, T[t].hi, worst, wx,
              T[t].limit);
        NOTE("%-8s [%g, %g]: worst %.3f ulps (%lld inputs)", T[t].name, T[t].lo, T[t].hi, worst, (long long)n);
    }
    {   /* VT__DLOG_ERR: |log(x) - log x| <= 8u |log x| where kernels use it (x >= 1: a softmax's sum), and near 1 */
        double worst = 0;
        for (i = 0; i < n; i++) {
            double x = i % 2 ? 1 + vt_rng_uniform(43, 0, (uint64_t)i) * 1e-6 : exp(vt_rng_uniform(43, 1, (uint64_t)i) * 700), r;
            q128 L = logq((q128)x);
            if (L == 0) continue;
            r = (double)(fabsq((q128)vt__dlog(x) - L) / fabsq(L));
            if (r > worst) worst = r;
        }
        CHECK(worst <= VT__DLOG_ERR, "log's relative error %.3g exceeds VT__DLOG_ERR %.3g", worst, VT__DLOG_ERR);
        NOTE("log: relative error at most %.3g (VT__DLOG_ERR %.3g)", worst, VT__DLOG_ERR);
    }
}

/* The learning rate of vt_lr_cosine is the same double for every chaos
   order and accurate relative to the exact schedule to its last step, also
   when it decays to 0 (where 1 + cos(pi p) cancelled). */
TEST(cosine_schedule_relative) {
    int64_t s, total = 100000;
    double worst = 0;
    for (s = 0; s < total; s += 7) {
        double lr = vt_lr_cosine(s, 10, total, 3e-3, 0.0);
        q128 p = (q128)(s - 10) / (total - 10), want = s < 10 ? (q128)3e-3 * (s + 1) / 10 : (q128)3e-3 * 0.5Q * (1 + cosq(M_PIq * p));
        double r;
        if (want == 0) continue;
        r = (double)(fabsq((q128)lr - want) / want);
        if (r > worst) worst = r;
    }
    CHECK(worst < 16 * 0x1p-53, "vt_lr_cosine: relative error %.3g", worst);
    NOTE("vt_lr_cosine to min_lr 0 over 100000 steps: relative error at most %.3g (%.1f u)", worst, worst / 0x1p-53);
}

/* GELU's negative tail: x sigmoid(2z) keeps its relative accuracy where
   0.5 x (1 + tanh z) cancels (from x = -6 every output of the old tanh
   form needed a log entry, below -8 an entry's interval held 10^9 binary32
   values); and the op carries no bound at all (the same bits everywhere). */
TEST(gelu_tail_relative) {
    int64_t i, n = g_long ? 2000000 : 200000;
    double worst = 0, wx = 0;
    for (i = 0; i < n; i++) {
        double x = (double)(float)(-14 + 17 * vt_rng_uniform(44, 0, (uint64_t)i)), y = x * vt__dsigmoid(vt__gelu_arg(x));
        q128 X = (q128)x, z = (q128)VT__GELU_S * (X + (q128)VT__GELU_A * X * X * X), want = X / (1 + expq(-2 * z)), r; /* 0.5 X (1 + tanh z), without its cancellation */
        if (want == 0) continue;
        /* relative to the condition of exp at 2z: z itself rounds (a few u relative) */
        r = fabsq(((q128)y - want) / want) / (1 + 2 * fabsq(z));
        if ((double)r > worst) { worst = (double)r; wx = x; }
    }
    CHECK(worst < 8 * 0x1p-53, "gelu: relative error %.3g (1 + |2z|) at x = %.9g", worst, wx);
    NOTE("gelu on [-14, 3]: relative error at most %.2f u (1 + |2z|), the condition of exp at 2z (x = %.6g)", worst / 0x1p-53, wx);
    {   /* no bound array, so no log entry, for any input */
        vt_desc d = vt_desc_default();
        vt_ctx *c = vt_create(&d);
        int64_t ne[1] = {1000};
        float v[1000];
        vt_tensor *x, *y, *L;
        vt_log_stats st;
        int k;
        for (i = 0; i < 1000; i++) v[i] = (float)(-30 + 0.03 * (double)i);
        x = vt_param(c, "x", 1, ne);
        vt_write_f32(c, x, v);
        vt_step_begin(c);
        y = vt_gelu(c, x);
        L = vt_sum(c, y);
        vt_backward(c, L);
        vt_step_end(c);
        k = vt__kind(VT_OP_GELU, 0);
        vt_log_kind_stats(c, k, &st, NULL, 0);
        CHECK(vt_status_of(c) == VT_OK && st.points == 1 && st.entries == 0, "gelu: %s, %lld points, %lld entries", vt_error_message(c),
              (long long)st.points, (long long)st.entries);
        vt_destroy(c);
    }
}

/* THE EXACT EVALUATION ON THE CPU (vt__xsum_fast beside vt__cpu_exact)
   claims the value of vt__xprod_value, the superaccumulator, wherever it
   answers. Adversarial sums, contiguous (the vector lanes) and strided (the
   scalar lanes), with C0 and bias: every answer must be bit-identical to
   the definition, and most must come from the fast path (else it is not
   the speed it claims). Exact midpoints and zeros must fall back. */
static float xt_f32(uint64_t key, uint64_t i, int kind) {
    double g = vt_rng_normal(77, key, i);
    switch (kind) {
    case 1: return (float)(g * ldexp(1.0, (int)(vt_rng_u64(78, key, i) % 120) - 60)); /* wide */
    case 2: return (float)(g * 0x1p-140);                                              /* tiny: subnormals */
    default: return (float)g;
    }
}

TEST(exact_fast_path_matches_superaccumulator) {
    enum { KMAX = 20000 };
    double *A = (double *)malloc(sizeof(double) * KMAX), *B = (double *)malloc(sizeof(double) * 2 * KMAX);
    double c0[1], bias[1];
    int64_t agree = 0, fast = 0, total = 0, bad = 0, fell_mid = 0, mids = 0;
    int trial, kind;
    for (trial = 0; trial < 400; trial++)
        for (kind = 0; kind < 6; kind++) {
            static const int64_t lens[] = {1, 2, 7, 8, 9, 33, 500, 4096, 20000};
            int64_t K = lens[trial % 9], k;
            uint64_t key = (uint64_t)(trial * 16 + kind);
            vt__xblk z;
            double fv = 0, ref;
            int strided = trial & 1, ok;
            for (k = 0; k < K; k++) {
                A[k] = xt_f32(key, (uint64_t)k, kind % 3);
                B[k * (strided ? 2 : 1)] = xt_f32(key ^ 0x55, (uint64_t)k, kind % 3);
                if (strided) B[2 * k + 1] = NAN; /* never read */
            }
            if (kind == 3 && K >= 4) /* cancellation: pairs a b, -a b (1 + 2^-20) */
                for (k = 0; k + 1 < K; k += 2) { A[k + 1] = -(double)(float)(A[k] * (1 + 0x1p-20)); B[(k + 1) * (strided ? 2 : 1)] = B[k * (strided ? 2 : 1)]; }
            if (kind >= 4 && K >= 4) { /* an exact binary32 midpoint (kind 4) or just off it (kind 5) */
                double f = (float)(1 + vt_rng_normal(79, key, 0)), h = ldexp(1.0, vt__fexp(f) - 24);
                for (k = 0; k + 1 < K; k += 2) { A[k + 1] = -A[k]; B[(k + 1) * (strided ? 2 : 1)] = B[k * (strided ? 2 : 1)]; }
                A[0] = f; B[0] = 1; A[1] = h; B[strided ? 2 : 1] = 1; /* f + half an ulp, then the pairs */
                if (K > 3 && (K % 2) == 0) { A[2] = 1; B[2 * (strided ? 2 : 1)] = 1; A[3] = -1; B[3 * (strided ? 2 : 1)] = 1; }
                if (kind == 5 && K >= 6) { A[K - 1] = (trial & 2) ? 0x1p-60 : -0x1p-60; A[K - 2] = 0; }
                mids += kind == 4;
            }
            memset(&z, 0, sizeof z);
            z.M = 1; z.N = 1; z.K = K; z.A = A; z.sam = 0; z.sak = 1; z.B = B; z.sbk = strided ? 2 : 1; z.sbn = 0;
            if (trial % 3 == 0) { c0[0] = xt_f32(key, 999999, 0); z.C0 = c0; }
            if (trial % 5 == 0) { bias[0] = xt_f32(key, 999998, 0); z.bias = bias; }
            if (trial % 7 == 0) z.B = NULL;
            ref = vt__xprod_value(&z, 1, 0);
            ok = vt__xsum_fast(&z, 0, 0, &fv);
            total++;
            if (ok) {
                fast++;
                if (memcmp(&fv, &ref, 8) == 0) agree++;
                else if (bad++ == 0) CHECK(0, "kind %d, K %lld, trial %d: fast %.17g, exact %.17g", kind, (long long)K, trial, fv, ref);
            } else if (kind == 4 && K >= 4 && !z.C0 && !z.bias && z.B) fell_mid++;
        }
    CHECK(bad == 0, "%lld of %lld fast answers differ from the superaccumulator", (long long)bad, (long long)fast);
    CHECK(fast > total / 2, "the fast path answered only %lld of %lld sums", (long long)fast, (long long)total);
    CHECK(fell_mid > 0, "no exact midpoint fell back to the superaccumulator (%lld midpoints)", (long long)mids);
    NOTE("%lld sums: %lld answered by the fast path (all identical), %lld exact midpoints fell back", (long long)total,
         (long long)fast, (long long)fell_mid);
    { /* the grouped sweep of vt__exact_task (outputs advancing together, chunk by chunk) over three blocks: a
         weight-gradient-like one (both operands contiguous, K not a multiple of the lanes or the chunk), a
         strided one with C0, and a convolution-like one (both operands strided, copied into pieces, outputs
         sharing columns, more outputs than a group and K over several chunks); every output against the
         definition */
        enum { M1 = 9, N1 = 31, K1 = 1203, M2 = 5, N2 = 7, K2 = 77, M3 = 40, N3 = 30, K3 = 1100 };
        double *a1 = (double *)malloc(sizeof(double) * M1 * K1), *b1 = (double *)malloc(sizeof(double) * N1 * K1);
        double *a2 = (double *)malloc(sizeof(double) * M2 * K2), *b2 = (double *)malloc(sizeof(double) * K2 * N2);
        double *a3 = (double *)malloc(sizeof(double) * K3 * M3), *b3 = (double *)malloc(sizeof(double) * K3 * N3);
        double c2[M2 * N2], x[M1 * N1 + M2 * N2 + M3 * N3];
        vt__xblk blk[3];
        vt__xprod xp;
        vt__entry en[M1 * N1 + M2 * N2 + M3 * N3];
        vt__xent xe[M1 * N1 + M2 * N2 + M3 * N3];
        vt__ents at;
        vt__exact_job ej;
        void *wb[1];
        int64_t i, nbad = 0, nout = M1 * N1 + M2 * N2 + M3 * N3;
        for (i = 0; i < M1 * K1; i++) a1[i] = (float)vt_rng_normal(81, 0, (uint64_t)i);
        for (i = 0; i < N1 * K1; i++) b1[i] = (float)vt_rng_normal(81, 1, (uint64_t)i);
        for (i = 0; i + 1 < K1; i += 2) b1[i + 1] = b1[i]; /* pairs: some cancellation */
        for (i = 0; i < M1; i++) a1[i * K1 + 1] = -(double)(float)(a1[i * K1] * (1 + 0x1p-18));
        for (i = 0; i < M2 * K2; i++) a2[i] = (float)vt_rng_normal(81, 2, (uint64_t)i);
        for (i = 0; i < K2 * N2; i++) b2[i] = (float)vt_rng_normal(81, 3, (uint64_t)i);
        for (i = 0; i < M2 * N2; i++) c2[i] = (float)vt_rng_normal(81, 4, (uint64_t)i);
        for (i = 0; i < K3 * M3; i++) a3[i] = (float)vt_rng_normal(81, 5, (uint64_t)i);
        for (i = 0; i < K3 * N3; i++) b3[i] = (float)vt_rng_normal(81, 6, (uint64_t)i);
        for (i = 0; i + 1 < K3; i += 2) /* term k + 1 nearly cancels term k in every output */
            { int64_t m; for (m = 0; m < M3; m++) a3[(i + 1) * M3 + m] = -a3[i * M3 + m]; }
        memset(blk, 0, sizeof blk);
        blk[0].off = 0; blk[0].M = M1; blk[0].N = N1; blk[0].K = K1; blk[0].A = a1; blk[0].sam = K1; blk[0].sak = 1;
        blk[0].B = b1; blk[0].sbk = 1; blk[0].sbn = K1;
        blk[1].off = M1 * N1; blk[1].M = M2; blk[1].N = N2; blk[1].K = K2; blk[1].A = a2; blk[1].sam = K2; blk[1].sak = 1;
        blk[1].B = b2; blk[1].sbk = N2; blk[1].sbn = 1; blk[1].C0 = c2;
        blk[2].off = M1 * N1 + M2 * N2; blk[2].M = M3; blk[2].N = N3; blk[2].K = K3; blk[2].A = a3; blk[2].sam = 1;
        blk[2].sak = M3; blk[2].B = b3; blk[2].sbk = N3; blk[2].sbn = 1;
        for (i = 0; i + 1 < K3; i += 2) /* and b's row k + 1 is row k (1 + 2^-19), to binary32 */
            { int64_t n; for (n = 0; n < N3; n++) b3[(i + 1) * N3 + n] = (float)(b3[i * N3 + n] * (1 + 0x1p-19)); }
        xp.b = blk; xp.n = 3; xp.cap = 3;
        memset(en, 0, sizeof en);
        for (i = 0; i < nout; i++) en[i].i = nout - 1 - i; /* any order: the sweep sorts them */
        at.e = en; at.n = nout; at.cap = nout; at.bad = -1;
        vt__xent_fill(&xp, &at, xe);
        for (i = 0; i < nout; i++) x[i] = NAN;
        ej.x = x; ej.xp = &xp; ej.en = xe;
        wb[0] = malloc(VT__XWORK); /* thread 0's work area (vt__cpu_exact takes them from the scratch arena) */
        ej.wb = wb;
        vt__exact_task(&ej, 0, nout, 0);
        free(wb[0]);
        for (i = 0; i < nout; i++) {
            double r = vt__xprod_value(blk, 3, i);
            if (memcmp(&r, &x[i], 8)) nbad++;
        }
        CHECK(nbad == 0, "grouped sweep: %lld of %lld outputs differ from the superaccumulator", (long long)nbad, (long long)nout);
        free(a1); free(b1); free(a2); free(b2); free(a3); free(b3);
    }
    free(A);
    free(B);
}

/* A ONE-CHUNK PRODUCT'S BOUND FROM ITS VALUE (>>rounding): |x - S| <= gx (T +
   |x|) for the computed x of any order. Adversarial sums of exact terms
   (products of binary32 values): one-signed ones (where the refinement is
   no tighter), cancelling pairs, a few large terms of one sign against many
   of the other, binary32 midpoints with +-2^20 pairs, wide magnitudes;
   each summed in the orders that make partial sums largest (positives
   first, negatives first, by magnitude up and down), pairwise, in 16 lanes,
   and permuted; S and T in __float128. Then the rounding look itself
   (vt__round_look with the product's gs and gx, width e as for a correctly
   rounded product): wherever it leaves an element undecided no more, the
   element's RNE32 must be that of S, and the refinement must have decided
   some elements that e alone left open (else this checks nothing). */
static double ord_sum(const double *t, const int *ix, int64_t n, int how) {
    int64_t k;
    double s = 0, l[16] = {0};
    if (how == 0) { for (k = 0; k < n; k++) s += t[ix[k]]; return s; }
    if (how == 1) { /* pairwise */
        double *w = (double *)malloc(sizeof(double) * (size_t)n);
        int64_t m = n;
        for (k = 0; k < n; k++) w[k] = t[ix[k]];
        while (m > 1) { int64_t h = 0; for (k = 0; k + 1 < m; k += 2) w[h++] = w[k] + w[k + 1]; if (m & 1) w[h++] = w[m - 1]; m = h; }
        s = w[0]; free(w); return s;
    }
    for (k = 0; k < n; k++) l[k % 16] += t[ix[k]]; /* 16 lanes, then left to right */
    for (k = 0; k < 16; k++) s += l[k];
    return s;
}
static const double *g_st;
static int cmp_val(const void *a, const void *b) { double x = g_st[*(const int *)a], y = g_st[*(const int *)b]; return x < y ? -1 : x > y; }
static int cmp_desc(const void *a, const void *b) { return cmp_val(b, a); }
static int cmp_mag(const void *a, const void *b) { double x = fabs(g_st[*(const int *)a]), y = fabs(g_st[*(const int *)b]); return x < y ? -1 : x > y; }
static int cmp_magd(const void *a, const void *b) { return cmp_mag(b, a); }

TEST(value_bound_holds_in_adversarial_orders) {
    enum { NMAX = 4100 };
    static const int64_t lens[] = {3, 8, 50, 577, 4096};
    double *t = (double *)malloc(sizeof(double) * NMAX);
    int *ix = (int *)malloc(sizeof(int) * NMAX);
    vt_desc d = vt_desc_default();
    vt_ctx *c = vt_create(&d);
    int64_t sums = 0, viol = 0, looked = 0, refined = 0, wrong = 0;
    double worst = 0;
    int trial, kind, ord;
    if (!c) { CHECK(0, "vt_create: %s", vt_last_error()); return; }
    for (trial = 0; trial < (g_long ? 600 : 150); trial++)
        for (kind = 0; kind < 6; kind++) {
            int64_t n = lens[trial % 5], k;
            uint64_t key = (uint64_t)(trial * 8 + kind);
            q128 S = 0, T = 0;
            double g = vt__gsum(&c->ord, n + 2), gx = g / (2 - g), gs = vt__gsum(&c->ord, n);
            for (k = 0; k < n; k++) {
                double a = (float)vt_rng_normal(91, key, (uint64_t)k), b = (float)vt_rng_normal(92, key, (uint64_t)k);
                if (kind == 1) b = fabs(b), a = fabs(a);                        /* one sign */
                if (kind == 4) a = (float)(a * ldexp(1.0, (int)(vt_rng_u64(93, key, (uint64_t)k) % 80) - 40));
                t[k] = a * b;
            }
            if (kind == 2) /* cancelling pairs */
                for (k = 0; k + 1 < n; k += 2) t[k + 1] = -(double)(float)(t[k] * (1 + 0x1p-21));
            if (kind == 3) { /* many small positives against a few large negatives: S near 0 */
                q128 pos = 0;
                for (k = 0; k < n; k++) { t[k] = fabs(t[k]); pos += t[k]; }
                for (k = 0; k < n / 8 + 1 && k < n; k++) t[k] = -(double)(float)((double)pos / (double)(n / 8 + 1));
            }
            if (kind == 5 && n >= 4) { /* a binary32 midpoint f + h/2 with +-2^20 pairs */
                double f = (float)(1 + vt_rng_normal(94, key, 0)), h = ldexp(1.0, vt__fexp(f) - 24);
                for (k = 0; k + 1 < n; k += 2) { t[k] = ldexp((float)vt_rng_normal(95, key, (uint64_t)k), 20); t[k + 1] = -t[k]; }
                t[0] = f; t[1] = h;
                if (trial & 1) t[n - 1] = (trial & 2) ? 0x1p-60 : -0x1p-60;
            }
            for (k = 0; k < n; k++) { S += (q128)t[k]; T += fabsq((q128)t[k]); }
            for (ord = 0; ord < 9; ord++) {
                double x, bnd, dd, e, ev;
                int how = ord < 6 ? 0 : ord - 6;
                for (k = 0; k < n; k++) ix[k] = (int)k;
                g_st = t;
                if (ord == 1) qsort(ix, (size_t)n, sizeof(int), cmp_desc); /* positives first, largest first */
                if (ord == 2) qsort(ix, (size_t)n, sizeof(int), cmp_val);  /* negatives first */
                if (ord == 3) qsort(ix, (size_t)n, sizeof(int), cmp_mag);
                if (ord == 4) qsort(ix, (size_t)n, sizeof(int), cmp_magd);
                if (ord == 5 || ord == 8)
                    for (k = n - 1; k > 0; k--) { int64_t r = (int64_t)(vt_rng_u64(96, key * 16 + (uint64_t)ord, (uint64_t)k) % (uint64_t)(k + 1)); int q = ix[k]; ix[k] = ix[r]; ix[r] = q; }
                x = ord_sum(t, ix, n, how);
                dd = (double)fabsq((q128)x - S);
                bnd = gx * ((double)T + fabs(x));
                sums++;
                if (!(dd <= bnd)) { if (viol++ == 0) CHECK(0, "kind %d, n %lld, order %d: |x - S| = %.3g > gx (T + |x|) = %.3g", kind, (long long)n, ord, dd, bnd); }
                else if (bnd > 0 && dd / bnd > worst) worst = dd / bnd;
                /* the look: bound e = G T with G = gsum(n) (statistics at their tightest, T) */
                e = vt__gsum(&c->ord, n) * (double)T;
                if (e > 0) {
                    vt__rjob j;
                    vt__ents en;
                    memset(&j, 0, sizeof j);
                    memset(&en, 0, sizeof en);
                    en.bad = -1;
                    j.c = c; j.ef = 0.5; j.gs = gs; j.gx = gx;
                    ev = e * 2 * j.ef * VT__SAFE + fabs(x) * 0x1p-50;
                    if (vt__fbits((float)(x - ev)) != vt__fbits((float)(x + ev))) {
                        looked++;
                        vt__round_look(&j, &en, &x, &e, 1, 0);
                        if (en.n == 0) { /* decided by the refinement: RNE32(x) must be RNE32(S) */
                            float want = (float)S; /* __float128 to binary32: correctly rounded */
                            refined++;
                            if (vt__fbits((float)x) != vt__fbits(want) && wrong++ == 0)
                                CHECK(0, "kind %d, n %lld, order %d: the refinement decided %.9g, RNE32(S) is %.9g", kind,
                                      (long long)n, ord, (double)(float)x, (double)want);
                        }
                        free(en.e);
                    }
                }
            }
        }
    CHECK(viol == 0, "%lld of %lld sums broke the bound from their value", (long long)viol, (long long)sums);
    CHECK(wrong == 0, "%lld elements decided wrongly", (long long)wrong);
    CHECK(refined > 0, "the refinement decided none of the %lld elements e left open", (long long)looked);
    NOTE("%lld sums: worst |x - S| / (gx (T + |x|)) %.3g; of %lld elements e left open, the value's bound decided %lld",
         (long long)sums, worst, (long long)looked, (long long)refined);
    vt_destroy(c);
    free(t);
    free(ix);
}

/* vt__gb_row, the product bound four elements at a time (vt__gbound_task and
   the lazy look), must give every element exactly vt__gb_e's bound: with and
   without old values, on statistics of every kind (zeros, few-bit values
   whose sums are exact, so e = 0, huge, tiny, infinite and NaN), and old
   values that are zero, few-bit, ordinary, tiny (their lowest bit makes an
   exact sum inexact: e = G s where th alone gave 0), NaN and infinite. */
TEST(gbound_rows_are_the_scalar_bound) {
    enum { M = 7, N = 203 };
    static double st[4 * M + 5 * N], c0[M * N], E[N];
    vt__stat_job sa, sb;
    vt__gbound_job gb;
    int64_t m, n, trial, bad = 0, zero = 0, total = 0;
    for (trial = 0; trial < 40; trial++) {
        int kind = (int)(trial % 5);
        memset(&sa, 0, sizeof sa); memset(&sb, 0, sizeof sb); memset(&gb, 0, sizeof gb);
        sa.n1 = st; sa.n2 = st + M; sa.mx = st + 2 * M; sa.th = st + 3 * M;
        sb.n1 = st + 4 * M; sb.n2 = sb.n1 + N; sb.mx = sb.n2 + N; sb.th = sb.mx + N;
        for (m = 0; m < M; m++) { /* a row of few-bit values, L = -3: th = 2^50 */
            double u = vt_rng_uniform(71, (uint64_t)trial, (uint64_t)m);
            sa.n1[m] = kind == 1 ? 4 * u : 40 * u; sa.n2[m] = sa.n1[m] / 2; sa.mx[m] = sa.n1[m] / 3;
            sa.th[m] = kind == 1 ? 0x1p50 : kind == 2 ? INFINITY : vt__pow2((int)(u * 60) - 20);
        }
        for (n = 0; n < N; n++) {
            double u = vt_rng_uniform(71, (uint64_t)trial, (uint64_t)(1000 + n));
            sb.n1[n] = n % 17 == 3 ? 0 : kind == 3 && n % 29 == 5 ? INFINITY : kind == 4 && n % 31 == 7 ? NAN : u * 8;
            sb.n2[n] = sb.n1[n] / 2; sb.mx[n] = sb.n1[n] / 4;
            sb.th[n] = kind == 1 || n % 5 == 0 ? 0x1p50 : vt__pow2((int)(u * 80) - 30);
        }
        for (n = 0; n < M * N; n++) {
            double u = vt_rng_uniform(71, (uint64_t)trial, (uint64_t)(5000 + n));
            c0[n] = n % 4 == 0 ? 0 : n % 4 == 1 ? (double)(int)(u * 64) / 16 : n % 4 == 2 ? (float)(u - 0.5) : (float)(u * 0x1p-60);
            if (kind == 3 && n % 97 == 11) c0[n] = -INFINITY;
            if (kind == 4 && n % 89 == 13) c0[n] = NAN;
        }
        gb.a = &sa; gb.b = &sb; gb.G = vt__gam(1000); gb.N = N; gb.lde = N; gb.ldc = N;
        gb.C0 = trial % 2 ? c0 : NULL;
        for (m = 0; m < M; m++) {
            double a1 = sa.n1[m], a2 = sa.n2[m], am = sa.mx[m], ath = sa.th[m] * 0x1p-53;
            int64_t n0 = (trial * 3 + m) % 4; /* rows that start anywhere */
            vt__gb_row(&gb, a1, a2, am, ath, m, n0, N - n0, E);
            for (n = n0; n < N; n++) {
                double want = vt__gb_e(&gb, a1, a2, am, ath, m, n);
                bad += memcmp(&want, &E[n - n0], 8) != 0 && !(want != want && E[n - n0] != E[n - n0]);
                zero += want == 0;
                total++;
            }
        }
    }
    CHECK(bad == 0, "%lld of %lld row bounds differ from vt__gb_e", (long long)bad, (long long)total);
    CHECK(zero > 100 && zero < total - 1000, "%lld of %lld bounds are 0 (exact sums): the test needs both kinds",
          (long long)zero, (long long)total);
    NOTE("%lld bounds (%lld exact sums) identical to vt__gb_e", (long long)total, (long long)zero);
}

/* A LAZY BOUND with old values (vt__mm_batch, a convolution's dx that
   accumulates): row r's cap adds capc[r] >= max |C0| over the row. The
   hunt: old values as large as the product's own bound s, values x whose
   nearest binary32 midpoint lies between G s and G (s + |c0|) away (open
   under e, not under a cap that forgets the old values), one per block of
   256 among values far from any midpoint, so no neighbour triggers the
   look; and a row with a NaN old value and one with an infinite one (capc
   infinite: the whole row is looked at). vt__lazy_round must leave open
   exactly the elements vt__cpu_round leaves open with every element's
   vt__lazy_e, and cast the same values. */
TEST(lazy_bound_with_old_values_caps_every_element) {
    enum { M = 3, NB = 2, NC = 600, NX = NB * M * NC };
    static double st[4 * M + 5 * NB * NC], c0m[NB * M * NC], x[NX], x1[NX], x2[NX], e[NX], capc[NB * M];
    static vt__entry got[NX];
    vt_desc d = vt_desc_default();
    vt_ctx *c;
    vt__lazy z;
    vt__capc_job cj;
    int64_t i, n, r, na, bad = 0, danger = 0, caught = 0;
    vt_order_parse(&d.order, "threads:2");
    c = vt_create(&d);
    if (!c) { CHECK(0, "vt_create: %s", vt_last_error()); return; }
    memset(&z, 0, sizeof z);
    z.sa.n1 = st; z.sa.n2 = st + M; z.sa.mx = st + 2 * M; z.sa.th = st + 3 * M;
    z.sb.n1 = st + 4 * M; z.sb.n2 = z.sb.n1 + NB * NC; z.sb.mx = z.sb.n2 + NB * NC; z.sb.th = z.sb.mx + NB * NC;
    for (i = 0; i < M; i++) { z.sa.n1[i] = 1; z.sa.n2[i] = 1; z.sa.mx[i] = 1; z.sa.th[i] = 0; }
    for (n = 0; n < NB * NC; n++) { /* columns alike, so a row's cap is its elements' s */
        z.sb.n1[n] = 1; z.sb.n2[n] = n % 7 == 0 ? 0.875 : 1; z.sb.mx[n] = 1; z.sb.th[n] = 0;
    }
    z.gb.a = &z.sa; z.gb.b = &z.sb; z.gb.G = 0x1p-30; z.gb.N = NB * NC; z.gb.lde = NB * NC;
    z.cap1 = z.cap2 = z.capm = 1; z.capb = 0;
    z.M = M; z.N = NB * NC; z.nb = NB; z.nc = NC;
    for (i = 0; i < NX; i++) { /* old values up to s; x near 1 + k 2^-23, mostly far from the midpoints */
        int64_t q = i % NC;
        double u = vt_rng_uniform(73, 0, (uint64_t)i), mid = 1 + (double)(i % 1000) * 0x1p-23 + 0x1p-24;
        c0m[i] = (i % 2 ? -1 : 1) * (0.5 + 0.5 * vt_rng_uniform(73, 1, (uint64_t)i));
        x[i] = mid + 0x1p-25 * (1 + u);
        if (q % 256 == 100) { /* |mid - x| between G s and G (s + |c0|) */
            x[i] = mid - 0x1p-30 * (1.02 + (fabs(c0m[i]) - 0.04) * u);
            danger++;
        }
    }
    c0m[1 * NC + 17] = NAN;          /* row 1 (b 0, m 1) */
    c0m[(M + 2) * NC + 300] = INFINITY; /* row 5 (b 1, m 2) */
    cj.x = c0m; cj.nc = NC; cj.capc = capc; cj.copy = NULL;
    vt__capc_task(&cj, 0, NB * M, 0);
    z.c0 = c0m; z.capc = capc;
    CHECK(capc[1] == INFINITY && capc[5] == INFINITY && capc[0] <= 1 && capc[0] >= 0.99, "capc: %g %g %g", capc[1], capc[5],
          capc[0]);
    for (i = 0; i < NX; i++) e[i] = vt__lazy_e(&z, i);
    memcpy(x1, x, sizeof x); memcpy(x2, x, sizeof x);
    c->ents.n = 0;
    vt__lazy_round(c, x1, &z, 0.5, 0, &c->ents);
    na = c->ents.n;
    memcpy(got, c->ents.e, sizeof(vt__entry) * (size_t)na);
    c->ents.n = 0;
    vt__cpu_round(c, x2, e, NX, 0.5, 0, &c->ents);
    bad += na != c->ents.n;
    for (i = 0; i < na && na == c->ents.n; i++) bad += got[i].i != c->ents.e[i].i;
    for (i = 0; i < NX; i++) bad += memcmp(&x1[i], &x2[i], 8) != 0 && !(x1[i] != x1[i] && x2[i] != x2[i]);
    for (i = 0; i < na; i++) {
        r = got[i].i / NC;
        caught += got[i].i % NC % 256 == 100 && r != 1 && r != 5;
    }
    CHECK(bad == 0, "lazy and written-out rounding differ in %lld places (%lld and %lld open)", (long long)bad, (long long)na,
          (long long)c->ents.n);
    CHECK(caught > danger / 2, "%lld of %lld elements in the band the old values add were left open", (long long)caught,
          (long long)danger);
    NOTE("%lld open elements (the written-out bound: %lld); %lld of the %lld in the old values' band", (long long)na,
         (long long)c->ents.n, (long long)caught, (long long)danger);
    c->ents.n = 0;
    vt_destroy(c);
}

int main(int argc, char **argv) {
    int i;
    for (i = 1; i < argc; i++) if (!strcmp(argv[i], "--long")) g_long = 1;
    if (argc > 1 && !g_long) TEST_FILTER(argc, argv);
    setvbuf(stdout, NULL, _IONBF, 0);
    /* the hook reads every output's x and e before its rounding point; the
       attention kernels' fused rounding (A FUSED CAUSAL POINT in vtrain.h)
       would have rounded x already and written no e, and a product rounded
       in its GEMM (A FUSED PRODUCT) would have rounded x: the unfused paths
       here (test_replay compares each pair of paths' logs byte for byte) */
    vt__no_fuse = 1;
    vt__no_gfuse = 1;
    RUN(elementary_functions_accuracy);
    RUN(cosine_schedule_relative);
    RUN(gelu_tail_relative);
    RUN(bounds_hold_against_float128);
    RUN(exact_fast_path_matches_superaccumulator);
    RUN(value_bound_holds_in_adversarial_orders);
    RUN(gbound_rows_are_the_scalar_bound);
    RUN(lazy_bound_with_old_values_caps_every_element);
    return TEST_SUMMARY();
}
