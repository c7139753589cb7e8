/* nondeterminism_lab.c - why two machines train different weights, and what
   vtrain does about it. A lab to read first and run second: every number it
   prints is measured when you run it.

   Build and run from the repository root (about 20 seconds; it writes its
   logs to build/lab_*.vtlog):

       gcc -std=c99 -O2 -march=native -ffp-contract=off -Wall -Wextra -Werror \
           examples/nondeterminism_lab.c -o build/nondeterminism_lab -lm -lpthread
       ./build/nondeterminism_lab

   -ffp-contract=off forbids the compiler to fuse a*b+c into one fma behind
   our back: section 1 asks for fma explicitly (fmaf) where it wants one, and
   vtrain needs arithmetic to run exactly as written. It also builds as C++
   (g++ -x c++ with the same flags).

   1. One dot product, six orders. Floating-point addition is not
      associative, so the same binary32 products summed left to right, right
      to left, as a tree, in 8 SIMD lanes, with or without fma, give several
      different binary32 answers. Summed in binary64 they differ too, but only
      in the last bits: rounded to binary32 they (almost always) agree.
   2. A rounding point. vtrain's rule: compute in binary64, bound the error
      any order could make by e, round to binary32, and log the rounded value
      when x - 2e and x + 2e round differently. We watch the rule on thousands
      of ordinary dot products, then on one built to sit on a rounding
      boundary, where the orders really disagree and the log settles it; then
      the same dot product through vtrain itself.
   3. Training. Native binary32 training in two orders drifts apart from the
      first step. Verified training (binary64, rounding points, log) replays
      every step under another order, for a few hundred log bytes per step.
   4. round-only: rounding points without the log. It replicates small
      models, but its audit fails on least squares trained to its minimum,
      where a gradient is the small sum of large terms that cancel. Why it is
      rarely wrong, and why rarely is not good enough at GPT-2 size.
   5. The obvious alternative: train in binary64 and cast to binary32 at the
      end. How long and how large must a run be before two orders disagree
      after the cast? (For a GPT: from the first step.)

   "Another machine" here is another reduction order of vtrain's CPU backend
   (vt_desc.order; the >>order section of vtrain.h). "threads:1" is the
   default blocked order; "threads:1,chaos:7" permutes and re-blocks every
   sum, switches fma on and off and moves libm results by up to 3 ulps, all
   from the seed 7, as different hardware would. Both use one thread, so the
   lab's run time does not depend on a second core being free.

   Words: binary32 (float) and binary64 (double) are the IEEE-754 formats;
   RNE32(x) is x rounded to the nearest binary32 value, ties to even, which is
   what (float)x does in C; an ulp is the gap between neighbouring values of
   a format at that magnitude. */
#define VTRAIN_IMPLEMENTATION
#include "../vtrain.h"
#include "chargpt.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#if defined(__unix__) || defined(__APPLE__)
#include <unistd.h>
#define STDERR_IS_TTY() isatty(2)
#else
#define STDERR_IS_TTY() 0
#endif

/* --- small helpers ---------------------------------------------------------- */

static double g_t0; /* program start, for the closing summary */

static void die(const char *what, const char *msg) {
    fprintf(stderr, "error: %s: %s\n", what, msg);
    exit(1);
}
static void check_ctx(vt_ctx *c, const char *what) {
    if (vt_status_of(c) != VT_OK) die(what, vt_error_message(c));
}

/* Ordered integer keys: consecutive values of the format get consecutive
   integers, so the difference of two keys counts the ulps between them. As
   in vtrain (vt__key), -0 sits one step below +0: the sign of a zero is part
   of a value's bits, and so of the weights' hash. */
static int64_t key32(float f) {
    uint32_t b;
    memcpy(&b, &f, 4);
    return (b & 0x80000000u) ? -1 - (int64_t)(b & 0x7fffffffu) : (int64_t)b;
}
static int64_t key64(double d) {
    uint64_t b;
    memcpy(&b, &d, 8);
    return (b >> 63) ? -1 - (int64_t)(b & 0x7fffffffffffffffull) : (int64_t)b;
}
static int64_t ulps32(float a, float b) { return key32(a) - key32(b); }
static int64_t ulps64(double a, double b) { return key64(a) - key64(b); }
static int same32(float a, float b) { return memcmp(&a, &b, 4) == 0; } /* bit for bit: -0 != +0 */

/* progress for anything slower than a few seconds: one line on stderr,
   rewritten in place, when stderr is a terminal */
static void progress(const char *what, int64_t step, int64_t total) {
    if (STDERR_IS_TTY() && (step % 64 == 0 || step == total)) {
        fprintf(stderr, "\r   [%s: step %lld of %lld]   ", what, (long long)step, (long long)total);
        if (step == total) fprintf(stderr, "\r%60s\r", "");
        fflush(stderr);
    }
}

/* ==========================================================================
   1. One dot product, six orders
   ========================================================================== */

/* The orders. Each is what some real machine does: a scalar loop, the same
   loop backwards, a tree (what a GPU reduction or numpy's pairwise sum
   does), 8 accumulators (what AVX does with 8 floats per register), and the
   first and fourth again with fused multiply-add, which rounds a*b+s once
   instead of twice. */
enum { ORD_LTR, ORD_RTL, ORD_TREE, ORD_LANES, ORD_LTR_FMA, ORD_LANES_FMA, NORD };
static const char *ord_name[NORD] = {"left to right", "right to left", "pairwise tree",
                                     "8 SIMD lanes", "left to right, fma", "8 SIMD lanes, fma"};

static float tree32(const float *a, const float *b, int n) {
    if (n == 1) return a[0] * b[0];
    return tree32(a, b, n / 2) + tree32(a + n / 2, b + n / 2, n - n / 2);
}
static double tree64(const float *a, const float *b, int n) {
    if (n == 1) return (double)a[0] * b[0];
    return tree64(a, b, n / 2) + tree64(a + n / 2, b + n / 2, n - n / 2);
}

/* sum of a[i]*b[i] with binary32 products and a binary32 accumulator */
static float dot32(int order, const float *a, const float *b, int n) {
    float s = 0, acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    int i;
    switch (order) {
    case ORD_LTR: for (i = 0; i < n; i++) s = s + a[i] * b[i]; return s;
    case ORD_RTL: for (i = n - 1; i >= 0; i--) s = s + a[i] * b[i]; return s;
    case ORD_TREE: return tree32(a, b, n);
    case ORD_LTR_FMA: for (i = 0; i < n; i++) s = fmaf(a[i], b[i], s); return s;
    case ORD_LANES:
    case ORD_LANES_FMA:
        for (i = 0; i < n; i++)
            acc[i % 8] = order == ORD_LANES_FMA ? fmaf(a[i], b[i], acc[i % 8]) : acc[i % 8] + a[i] * b[i];
        return ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
    }
    return 0;
}

/* the same orders with a binary64 accumulator (the products of two binary32
   values are exact in binary64: 24 + 24 bits fit in 53) */
static double dot64(int order, const float *a, const float *b, int n) {
    double s = 0, acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    int i;
    switch (order) {
    case ORD_LTR: for (i = 0; i < n; i++) s = s + (double)a[i] * b[i]; return s;
    case ORD_RTL: for (i = n - 1; i >= 0; i--) s = s + (double)a[i] * b[i]; return s;
    case ORD_TREE: return tree64(a, b, n);
    case ORD_LTR_FMA: for (i = 0; i < n; i++) s = fma(a[i], b[i], s); return s;
    case ORD_LANES:
    case ORD_LANES_FMA:
        for (i = 0; i < n; i++)
            acc[i % 8] = order == ORD_LANES_FMA ? fma(a[i], b[i], acc[i % 8]) : acc[i % 8] + (double)a[i] * b[i];
        return ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
    }
    return 0;
}

/* The exact sum, as an unevaluated pair hi + lo, by an error-free
   transformation: TwoSum gives s = RN(h + p) and its rounding error t
   exactly, and the errors are summed into l. Only l's own (tiny) rounding
   errors remain: here some 2^-70 of the result, far below anything this
   lab looks at. */
static void dot_exact(const float *a, const float *b, int n, double *hi, double *lo) {
    double h = 0, l = 0;
    int i;
    for (i = 0; i < n; i++) {
        double p = (double)a[i] * b[i], s = h + p, bb = s - h, t = (h - (s - bb)) + (p - bb);
        h = s;
        l += t;
    }
    *hi = h + l;
    *lo = l - (*hi - h);
}
/* RNE32 of hi + lo: (float)hi, unless hi is exactly halfway between two
   binary32 values, where the sign of lo decides */
static float round_exact(double hi, double lo) {
    float r = (float)hi, other;
    if ((double)r == hi || lo == 0) return r;
    other = nextafterf(r, hi > r ? INFINITY : -INFINITY);
    if (hi - (double)r != (double)other - hi) return r;                  /* not a tie */
    return ((lo > 0) == ((double)other > (double)r)) ? other : r;        /* lo moves it past the tie */
}

static void random_vectors(uint64_t seed, float *a, float *b, int n) {
    int i;
    for (i = 0; i < n; i++) {
        a[i] = (float)vt_rng_normal(seed, 0, (uint64_t)i);
        b[i] = (float)vt_rng_normal(seed, 1, (uint64_t)i);
    }
}

/* how many distinct values among v[0..n) (bitwise, n small) */
static int distinct32(const float *v, int n) {
    int i, j, d = 0;
    for (i = 0; i < n; i++) {
        for (j = 0; j < i && !same32(v[i], v[j]); j++) {}
        d += j == i;
    }
    return d;
}
static int distinct64(const double *v, int n) {
    int i, j, d = 0;
    for (i = 0; i < n; i++) {
        for (j = 0; j < i && memcmp(&v[i], &v[j], 8); j++) {}
        d += j == i;
    }
    return d;
}

#define DOT_N 40000
#define TRIALS 2000
#define TRIAL_N 10000

static struct {
    int f32_distinct, f64_distinct, f64_rounded_distinct;
    int trials_f32_agree, trials_f64_agree;
    int flagged, trials_disagree, disagree_unflagged;
    int boundary_orders_up, boundary_vtrain_corrected, boundary_vtrain_agree;
    int64_t native_first, mlp_replayed, gpt_replayed;
    double mlp_bytes, mlp_per_m, gpt_bytes, gpt_per_m;
    int64_t ro_mlp_first, ro_gpt_first, ro_lsq_first, ro_lsq_first_w, lsq_replayed, lsq_corrections;
    double lsq_per_m, rate_lo, rate_hi;
    int64_t audit_corrections, audit_values;
    int64_t fp64_first[4], fp64_steps_any[4];
    double fp64_doubling[4];
    const char *fp64_name[4];
} S; /* the numbers for the closing summary */

/* Section 1. Why: this is the whole problem in miniature. A training step is
   millions of dot products like this one, and every machine (CPU, GPU, BLAS
   library, thread count) sums them in its own order. In binary32 the order
   shows in the result; in binary64 it shows only far below binary32's last
   bit - which is what vtrain builds on. */
static void section1(void) {
    static float a[DOT_N], b[DOT_N];
    float r32[NORD], r64r[NORD];
    double r64[NORD], hi, lo;
    float exact;
    int k, t, fma_changed = 0;
    random_vectors(1, a, b, DOT_N);
    dot_exact(a, b, DOT_N, &hi, &lo);
    exact = round_exact(hi, lo);
    printf("1. One dot product of %d binary32 products (seeded normal values), six orders\n\n", DOT_N);
    printf("   %-20s %16s %12s   %22s %14s\n", "order", "binary32 sum", "ulps off", "binary64 sum", "b64 ulps off");
    for (k = 0; k < NORD; k++) {
        r32[k] = dot32(k, a, b, DOT_N);
        r64[k] = dot64(k, a, b, DOT_N);
        r64r[k] = (float)r64[k];
        printf("   %-20s %16.9g %+12lld   %22.17g %+14lld\n", ord_name[k], (double)r32[k], (long long)ulps32(r32[k], exact),
               r64[k], (long long)ulps64(r64[k], hi));
    }
    printf("   %-20s %16.9g %12s   %22.17g\n\n", "exact", (double)exact, "", hi);
    S.f32_distinct = distinct32(r32, NORD);
    S.f64_distinct = distinct64(r64, NORD);
    S.f64_rounded_distinct = distinct32(r64r, NORD);
    printf("   binary32: %d different results. binary64: %d different results, but rounded to\n", S.f32_distinct, S.f64_distinct);
    printf("   binary32 they give %d (%.9g). (\"ulps off\": from the exact sum, in the format's ulps.)\n\n",
           S.f64_rounded_distinct, (double)r64r[0]);

    /* many dot products: how often do all six orders agree? */
    for (t = 0; t < TRIALS; t++) {
        random_vectors(1000 + (uint64_t)t, a, b, TRIAL_N);
        for (k = 0; k < NORD; k++) {
            r32[k] = dot32(k, a, b, TRIAL_N);
            r64[k] = dot64(k, a, b, TRIAL_N);
            r64r[k] = (float)r64[k];
        }
        S.trials_f32_agree += distinct32(r32, NORD) == 1;
        S.trials_f64_agree += distinct32(r64r, NORD) == 1;
        fma_changed += memcmp(&r64[ORD_LTR], &r64[ORD_LTR_FMA], 8) != 0 || memcmp(&r64[ORD_LANES], &r64[ORD_LANES_FMA], 8) != 0;
    }
    printf("   Over %d random dot products of length %d, the six orders agree on every bit\n", TRIALS, TRIAL_N);
    printf("     summed in binary32:                 %5d of %d\n", S.trials_f32_agree, TRIALS);
    printf("     summed in binary64, then RNE32:     %5d of %d\n", S.trials_f64_agree, TRIALS);
    printf("   In binary64, fma changed the result in %d of them: a product of two binary32 values\n", fma_changed);
    printf("   is exact in binary64, so fusing it into the add changes nothing.\n\n");
}

/* ==========================================================================
   2. The same dot product through a vtrain rounding point
   ========================================================================== */

/* vtrain's rule, written out in plain C. It lives in vtrain.h, the
   ">>rounding" section (vt__widen and vt__round_task; DESIGN.md 2.1):

     gamma(n) = n u / (1 - n u), u = 2^-53, bounds the relative error of ANY
     order of summing n terms, with or without fma (Higham, Lemma 3.1), so
     e = gamma(n) sum |a_i b_i| bounds |x - exact| for every machine's x.
     Two machines' values then differ by at most 2e.

     The trainer rounds r = RNE32(x) and logs (index, r) exactly when
     RNE32(x - w) != RNE32(x + w), with w = 2e (1 + 2^-20) + 2^-50 |x| (the
     extra terms pay for rounding e and x +- w themselves). If it logs
     nothing, RNE32 is constant on [x - 2e, x + 2e], which holds every other
     machine's x': they all round to r.

     The auditor, for a logged index, checks that r is plausible - it lies
     between RNE32(x' - w') and RNE32(x' + w') - and takes it. */
static double gamma_n(int64_t n) {
    double t = (double)n * 0x1p-53;
    return t / (1 - t);
}
static double widen(double x, double e) { return e > 0 ? 2 * e * (1 + 0x1p-20) + fabs(x) * 0x1p-50 : 0; }
static int trainer_logs(double x, double e) {
    double w = widen(x, e);
    return !same32((float)(x - w), (float)(x + w));
}
static int auditor_accepts(double x, double e, float r) {
    double w = widen(x, e);
    return key32((float)(x - w)) <= key32(r) && key32(r) <= key32((float)(x + w));
}
static double sum_abs_products(const float *a, const float *b, int n) {
    double s = 0;
    int i;
    for (i = 0; i < n; i++) s += fabs((double)a[i] * b[i]);
    return s;
}

/* A dot product built to sit on a rounding boundary. Half its terms are
   u_i v_i, the other half (-u_i) v_i: they cancel exactly, in exact
   arithmetic, but not in any floating-point order - each order leaves its
   own rounding noise. Three more terms make the exact value
   0.75 + 2^-25 + 2^-51: just above the midpoint 0.75 + 2^-25 between the
   binary32 neighbours 0.75 and 0.75 + 2^-24, so its correctly rounded value
   is 0.75 + 2^-24. Everything is shuffled. This is the least-squares
   situation of section 4 taken to the extreme: a small result made of large
   terms that cancel. */
#define BND_PAIRS 20000
#define BND_N (2 * BND_PAIRS + 3)
static void boundary_vectors(float *a, float *b) {
    int i;
    for (i = 0; i < BND_PAIRS; i++) {
        a[i] = (float)vt_rng_normal(2, 0, (uint64_t)i);
        b[i] = (float)vt_rng_normal(2, 1, (uint64_t)i);
        a[BND_PAIRS + i] = -a[i];
        b[BND_PAIRS + i] = b[i];
    }
    a[BND_N - 3] = 0.75f; a[BND_N - 2] = 0x1p-25f; a[BND_N - 1] = 0x1p-51f;
    b[BND_N - 3] = b[BND_N - 2] = b[BND_N - 1] = 1.0f;
    for (i = BND_N - 1; i > 0; i--) { /* Fisher-Yates from a counter-based generator */
        int j = (int)(vt_rng_u64(3, 0, (uint64_t)i) % (uint64_t)(i + 1));
        float ta = a[i], tb = b[i];
        a[i] = a[j]; b[i] = b[j]; a[j] = ta; b[j] = tb;
    }
}

/* One training "step" whose only op is the dot product, (1 x n)(n x 1), in
   vtrain: mode and order as given; a trainer hands back its step's log chunk,
   an auditor replays from one. Returns the binary32 result. */
static float vtrain_dot(vt_mode mode, const char *order, const float *a, const float *b, int n,
                        const unsigned char *chunk_in, size_t len_in, unsigned char *chunk_out, size_t cap_out,
                        size_t *len_out, vt_log_stats *st) {
    vt_desc d = vt_desc_default();
    vt_ctx *c;
    int64_t sa[2], sb[2];
    float r;
    vt_tensor *ta, *tb, *z;
    d.mode = mode;
    d.log_memory = mode == VT_MODE_VERIFIED;
    d.role = chunk_in ? VT_ROLE_AUDIT : VT_ROLE_TRAIN;
    vt_order_parse(&d.order, order);
    c = vt_create(&d);
    if (!c) die("vt_create", vt_last_error());
    if (chunk_in) vt_feed_chunk(c, chunk_in, len_in);
    sa[0] = 1; sa[1] = n; sb[0] = n; sb[1] = 1;
    vt_step_begin(c);
    ta = vt_from_f32(c, 2, sa, a); /* one tensor per statement: C leaves the order in which */
    tb = vt_from_f32(c, 2, sb, b); /* function arguments are evaluated to the compiler */
    z = vt_matmul(c, ta, tb, 0, 0);
    r = (float)vt_item(c, z);
    vt_step_end(c);
    check_ctx(c, order);
    if (chunk_out) {
        const unsigned char *p;
        vt_step_chunk(c, &p, len_out);
        if (*len_out > cap_out) die("vtrain_dot", "the step chunk is larger than its buffer");
        memcpy(chunk_out, p, *len_out);
    }
    if (st) vt_log_stats_get(c, st);
    vt_destroy(c);
    return r;
}

/* Section 2. Why: it shows on the smallest example why the rule is exact.
   The bound e is what makes it sound: it covers every order, known or not.
   Ordinary dot products are rarely near a boundary, so the log is small;
   when one is, the orders may round differently, and the log makes them
   agree - on the trainer's value, which need not be the correctly rounded
   one. Replay is about agreement, not about the last bit of accuracy. */
static void section2_trials(void) {
    static float a[TRIAL_N], b[TRIAL_N];
    int t, k;
    double e_ulps = 0, worst = 0;
    for (t = 0; t < TRIALS; t++) {
        double x[NORD], e;
        float r[NORD];
        int flagged, agree;
        random_vectors(1000 + (uint64_t)t, a, b, TRIAL_N);
        e = gamma_n(TRIAL_N) * sum_abs_products(a, b, TRIAL_N);
        double lo = INFINITY, hi = -INFINITY;
        for (k = 0; k < NORD; k++) {
            x[k] = dot64(k, a, b, TRIAL_N);
            r[k] = (float)x[k];
            lo = fmin(lo, x[k]);
            hi = fmax(hi, x[k]);
        }
        worst = fmax(worst, (hi - lo) / (2 * e));
        flagged = trainer_logs(x[ORD_LTR], e); /* the trainer sums left to right */
        agree = distinct32(r, NORD) == 1;
        S.flagged += flagged;
        S.trials_disagree += !agree;
        S.disagree_unflagged += !agree && !flagged;
        e_ulps += e / (nextafterf((float)fabs(x[0]), INFINITY) - (float)fabs(x[0]));
    }
    printf("   The same %d dot products of length %d, each with its bound e = gamma(n) sum|a_i b_i|\n", TRIALS, TRIAL_N);
    printf("   (on average e = %.2g binary32 ulps of the result; the six orders' values were never more than\n",
           e_ulps / TRIALS);
    printf("   %.1e of 2e apart: the bound is sound for any order, and loose for these):\n", worst);
    printf("     the trainer's test fires (a log entry):   %5d of %d\n", S.flagged, TRIALS);
    printf("     orders that round differently:            %5d of %d (unlogged: %d; the bound forbids any)\n\n",
           S.trials_disagree, TRIALS, S.disagree_unflagged);
}

static void section2_boundary(void) {
    static float a[BND_N], b[BND_N];
    static unsigned char chunk[1 << 16];
    double x[NORD], e, mid = 0.75 + 0x1p-25, ulp64 = 0x1p-53;
    float r, up = 0.75f + 0x1p-24f;
    int k, own_up = 0, agree = 0;
    size_t len = 0;
    vt_log_stats st;
    boundary_vectors(a, b);
    e = gamma_n(BND_N) * sum_abs_products(a, b, BND_N);
    printf("   A dot product built to sit on a boundary: %d terms u*v, %d terms (-u)*v and 0.75, 2^-25,\n", BND_PAIRS, BND_PAIRS);
    printf("   2^-51; exact value 0.75 + 2^-25 + 2^-51, just above the binary32 midpoint m = 0.75 + 2^-25.\n");
    printf("   Correctly rounded: %.9g. Bound e = %.3g = %.1f binary32 ulps.\n\n", (double)up, e, e / 0x1p-24);
    printf("   %-20s %16s %20s %12s  %s\n", "order", "binary32 sum", "b64: (x - m)/ulp64", "RNE32(x)", "trainer's test");
    for (k = 0; k < NORD; k++) {
        x[k] = dot64(k, a, b, BND_N);
        own_up += same32((float)x[k], up);
        printf("   %-20s %16.9g %+20.0f %12.9g  %s\n", ord_name[k], (double)dot32(k, a, b, BND_N), (x[k] - mid) / ulp64,
               (double)(float)x[k], trainer_logs(x[k], e) ? "straddles: log" : "-");
    }
    S.boundary_orders_up = own_up;
    /* the trainer sums left to right and logs; every other order audits */
    r = (float)x[ORD_LTR];
    for (k = 0; k < NORD; k++) agree += auditor_accepts(x[k], e, r);
    printf("\n   On their own, %d of the 6 orders round up to %.9g and %d down to 0.75. The trainer (left to\n", own_up,
           (double)up, NORD - own_up);
    printf("   right) logs (0, %.9g); ", (double)r);
    printf("%d of %d orders find that value plausible and take it:\n   all now hold %.9g.\n", agree, NORD, (double)r);

    /* the same through vtrain: one vt_matmul, one rounding point */
    {
        const char *orders[7] = {"threads:1", "threads:1,chaos:1", "threads:1,chaos:2", "threads:1,chaos:3",
                                 "threads:1,chaos:4", "threads:1,chaos:5", "threads:1,chaos:6"};
        int n_up = 0, corrected = 0, same = 0;
        float rt = vtrain_dot(VT_MODE_VERIFIED, orders[0], a, b, BND_N, NULL, 0, chunk, sizeof chunk, &len, &st);
        int64_t entries = st.entries, exact = st.exact;
        for (k = 0; k < 7; k++) {
            float ro = vtrain_dot(VT_MODE_ROUND_ONLY, orders[k], a, b, BND_N, NULL, 0, NULL, 0, NULL, NULL);
            n_up += same32(ro, up);
            if (k > 0) {
                float ra = vtrain_dot(VT_MODE_VERIFIED, orders[k], a, b, BND_N, chunk, len, NULL, 0, NULL, &st);
                same += same32(ra, rt);
                corrected += (int)st.corrections;
            }
        }
        S.boundary_vtrain_corrected = corrected;
        S.boundary_vtrain_agree = same;
        printf("\n   The same dot product as a vt_matmul (1 x %d)(%d x 1) in vtrain, orders threads:1 and\n", BND_N, BND_N);
        printf("   threads:1,chaos:1..6:\n");
        printf("     round-only (no log), 7 orders:  %d give %.9g, %d give %.9g\n", n_up, (double)up, 7 - n_up, 0.75);
        printf("     verified: the trainer (threads:1) logs %lld %s (a %zu-byte step chunk) and holds %.9g;\n",
               (long long)entries, entries == 1 ? "entry" : "entries", len, (double)rt);
        printf("     the 6 chaos auditors replay it: %d of 6 hold %.9g, %d by correcting their own rounding.\n", same,
               (double)rt, corrected);
        if (exact > 0)
            printf("     No entry was needed: a product's sum that its bound cannot decide is evaluated exactly\n"
                   "     (a superaccumulator, %lld value here), so every order holds the correctly rounded value.\n",
                   (long long)exact);
        if (!same32(rt, r))
            printf("   (vtrain's trainer holds %.9g, the plain-C one %.9g: each run agrees with its own trainer.\n"
                   "   Replay promises agreement, not the correctly rounded value.)\n", (double)rt, (double)r);
        printf("\n");
    }
}

static void section2(void) {
    printf("2. The same dot products through a vtrain rounding point\n\n");
    section2_trials();
    section2_boundary();
}

/* ==========================================================================
   Training programs for sections 3-5
   ========================================================================== */

/* An MLP on the 8x8 digits (64 -> hidden -> 10, ReLU), AdamW, gradient
   clipping; the batch of step s comes from (seed, s), the same on any
   machine. schedule > 0: cosine learning rate over that many steps. */
typedef struct mlp_app {
    const vt_digits *data;
    int hidden, batch;
    double lr;
    int64_t schedule;
    vt_mlp mlp;
    vt_optim *opt;
} mlp_app;

static vt_status mlp_setup(vt_ctx *c, void *u) {
    mlp_app *a = (mlp_app *)u;
    int sizes[3];
    vt_adamw_desc ad = vt_adamw_default();
    sizes[0] = 64; sizes[1] = a->hidden; sizes[2] = 10;
    vt_mlp_init(c, &a->mlp, 2, sizes, 0, 7);
    ad.lr = a->lr;
    a->opt = vt_adamw_create(c, &ad);
    return vt_status_of(c);
}

static vt_status mlp_step(vt_ctx *c, int64_t s, void *u) {
    mlp_app *a = (mlp_app *)u;
    int i;
    int64_t xs[2], ys[1], idx[128];
    float x[128 * 64];       /* batch <= 128 */
    int32_t y[128];
    vt_tensor *logits;
    for (i = 0; i < a->batch; i++) {
        int n = (int)(vt_rng_u64(5, (uint64_t)s, (uint64_t)i) % (uint64_t)a->data->n);
        idx[i] = n;
        memcpy(x + i * 64, a->data->x + n * 64, sizeof(float) * 64);
        y[i] = a->data->y[n];
    }
    vt_commit_batch(c, idx, a->batch);
    xs[0] = a->batch; xs[1] = 64; ys[0] = a->batch;
    logits = vt_mlp_forward(c, &a->mlp, vt_from_f32(c, 2, xs, x));
    vt_backward(c, vt_cross_entropy(c, logits, vt_from_i32(c, 1, ys, y)));
    vt_clip_grad_norm(c, 5.0);
    vt_optim_step(c, a->opt, a->schedule > 0 ? vt_lr_cosine(s, 10, a->schedule, a->lr, a->lr / 10) : a->lr);
    return vt_status_of(c);
}

static vt_program mlp_program(mlp_app *a) {
    vt_program p;
    p.setup = mlp_setup; p.step = mlp_step; p.on_step = NULL; p.user = a;
    return p;
}

/* Least squares trained to its minimum (the program of tests/test_replay.c):
   w (64 x 256) fits y = x w^T on 1024 fixed samples by SGD with momentum.
   Near the minimum each weight's gradient is the small sum of 1024 large
   per-sample terms that cancel - section 2's boundary case, grown
   naturally. */
#define LSQ_IN 256
#define LSQ_OUT 64
#define LSQ_R 1024
typedef struct lsq_app { vt_tensor *w; vt_optim *opt; const float *x, *y; } lsq_app;

static vt_status lsq_setup(vt_ctx *c, void *u) {
    lsq_app *a = (lsq_app *)u;
    int64_t n[2];
    vt_sgd_desc sd = vt_sgd_default();
    n[0] = LSQ_OUT; n[1] = LSQ_IN;
    a->w = vt_param(c, "w", 2, n);
    vt_init_normal(c, a->w, 1, 0, 0.01);
    sd.lr = 10; sd.momentum = 0.5;
    a->opt = vt_sgd_create(c, &sd);
    return vt_status_of(c);
}

static vt_status lsq_step(vt_ctx *c, int64_t s, void *u) {
    lsq_app *a = (lsq_app *)u;
    int64_t xs[2], ys[2];
    vt_tensor *pred;
    (void)s;
    xs[0] = LSQ_R; xs[1] = LSQ_IN; ys[0] = LSQ_R; ys[1] = LSQ_OUT;
    pred = vt_linear(c, vt_from_f32(c, 2, xs, a->x), a->w, NULL);
    vt_backward(c, vt_mse(c, pred, vt_from_f32(c, 2, ys, a->y)));
    vt_optim_step(c, a->opt, 10);
    return vt_status_of(c);
}

static vt_program lsq_program(lsq_app *a) {
    vt_program p;
    p.setup = lsq_setup; p.step = lsq_step; p.on_step = NULL; p.user = a;
    return p;
}

/* the tiny character GPT of the test suite: 2 layers, width 32, 2 heads,
   context 16, batch 4, on the King James New Testament */
static void tiny_gpt(chargpt *g, int64_t steps) {
    g->cfg.layers = 2; g->cfg.width = 32; g->cfg.heads = 2; g->T = 16; g->B = 4;
    g->steps = steps; g->lr = 3e-3;
}

/* ==========================================================================
   Two contexts in lockstep: the same program in two orders, compared after
   every step
   ========================================================================== */

#define ORDER_A "threads:1"
#define ORDER_B "threads:1,chaos:7"
#define MLP_STEPS 256 /* the digits MLP of sections 3 to 5 */

typedef struct twin {
    vt_ctx *c[2];
    vt_program p[2]; /* the same program, each with its own user data */
    int64_t step;
} twin;

static void twin_start(twin *t, vt_mode mode, vt_program pa, vt_program pb) {
    vt_desc d = vt_desc_default();
    const char *order[2] = {ORDER_A, ORDER_B};
    int k;
    d.mode = mode;
    t->p[0] = pa; t->p[1] = pb;
    t->step = 0;
    for (k = 0; k < 2; k++) {
        vt_order_parse(&d.order, order[k]);
        t->c[k] = vt_create(&d);
        if (!t->c[k]) die("vt_create", vt_last_error());
        t->p[k].setup(t->c[k], t->p[k].user);
        check_ctx(t->c[k], "setup");
    }
}

static void twin_step(twin *t) {
    int k;
    for (k = 0; k < 2; k++) {
        vt_step_begin(t->c[k]);
        t->p[k].step(t->c[k], t->step, t->p[k].user);
        vt_step_end(t->c[k]);
        check_ctx(t->c[k], "step");
    }
    t->step++;
}

static void twin_stop(twin *t) {
    vt_destroy(t->c[0]);
    vt_destroy(t->c[1]);
}

/* Compare the two contexts' weights (parameters only: what you would ship):
   the largest binary64 difference, and how many weights differ once each is
   cast to binary32. */
static int64_t cast_diff(twin *t, double *max64, int64_t *nweights, char *where, size_t nwhere) {
    int i;
    int64_t nd = 0, nw = 0, k;
    double mx = 0;
    if (where) where[0] = 0;
    for (i = 0; i < vt_param_count(t->c[0]); i++) {
        vt_tensor *pa = vt_param_at(t->c[0], i), *pb = vt_param_at(t->c[1], i);
        int64_t n = vt_numel(pa), lo = -1, hi = -1;
        double *wa = (double *)malloc(sizeof(double) * (size_t)n), *wb = (double *)malloc(sizeof(double) * (size_t)n);
        vt_read_f64(t->c[0], pa, wa);
        vt_read_f64(t->c[1], pb, wb);
        for (k = 0; k < n; k++) {
            if (fabs(wa[k] - wb[k]) > mx) mx = fabs(wa[k] - wb[k]);
            if (!same32((float)wa[k], (float)wb[k])) {
                nd++;
                if (lo < 0) lo = k;
                hi = k;
            }
        }
        if (where && lo >= 0 && strlen(where) + 40 < nwhere)
            snprintf(where + strlen(where), nwhere - strlen(where), "%s%s[%lld..%lld]", where[0] ? ", " : "", pa->name,
                     (long long)lo, (long long)hi);
        nw += n;
        free(wa);
        free(wb);
    }
    *max64 = mx;
    *nweights = nw;
    return nd;
}

/* Run n steps in lockstep and compare after every step: the first step
   after which the state (weights and optimizer moments, as binary32:
   vt_weights_compare) differs, the first after which the weights do, and at
   the end how many weights differ and by how much at most. */
typedef struct lockstep_result {
    int64_t first_state, first_weights, nstate, nweights, ndiff;
    double max_dw;
} lockstep_result;

static lockstep_result lockstep(vt_mode mode, vt_program pa, vt_program pb, int64_t n, const char *what) {
    twin t;
    lockstep_result r;
    r.first_state = r.first_weights = -1;
    twin_start(&t, mode, pa, pb);
    while (t.step < n) {
        twin_step(&t);
        if (r.first_state < 0 && vt_weights_compare(t.c[0], t.c[1], NULL, NULL) > 0) r.first_state = t.step - 1;
        if (r.first_state >= 0 && r.first_weights < 0 && cast_diff(&t, &r.max_dw, &r.nweights, NULL, 0) > 0)
            r.first_weights = t.step - 1;
        progress(what, t.step, n);
    }
    r.nstate = vt_weights_compare(t.c[0], t.c[1], NULL, NULL);
    r.ndiff = cast_diff(&t, &r.max_dw, &r.nweights, NULL, 0);
    twin_stop(&t);
    return r;
}

static void print_lockstep(const char *mode, const lockstep_result *r, int64_t steps) {
    if (r->first_state < 0) {
        printf("     %-11s all %lld steps identical, bit for bit, in both orders\n", mode, (long long)steps);
        return;
    }
    if (r->first_weights < 0) {
        printf("     %-11s the state first differs after step %lld: after %lld steps %lld optimizer moments\n", mode,
               (long long)r->first_state, (long long)steps, (long long)r->nstate);
        printf("     %-11s differ, but all %lld weights still agree\n", "", (long long)r->nweights);
        return;
    }
    printf("     %-11s the state first differs after step %lld, the weights after step %lld\n", mode,
           (long long)r->first_state, (long long)r->first_weights);
    printf("     %-11s after %lld steps %lld of %lld weights differ, max |dw| %.2g\n", "", (long long)steps,
           (long long)r->ndiff, (long long)r->nweights, r->max_dw);
}

/* Train with ORDER_A writing the log, then audit with ORDER_B: the auditor
   replays from the log and compares its state with the trainer's
   commitment after every step. */
static void train_then_audit(const vt_program *p, vt_mode mode, const char *log, int64_t steps, const char *order_b,
                             vt_report *tr, vt_report *ar) {
    vt_desc d = vt_desc_default();
    d.mode = mode;
    d.log_path = log;
    vt_order_parse(&d.order, ORDER_A);
    vt_run(&d, p, steps, tr);
    if (tr->status != VT_OK) die("training", tr->message);
    d.role = VT_ROLE_AUDIT;
    vt_order_parse(&d.order, order_b);
    vt_run(&d, p, steps, ar);
}

/* ==========================================================================
   3. Training: native drifts, verified replays
   ========================================================================== */

/* verified: train, then audit in the other order, and report */
static void verified_row(const vt_program *p, const char *log, int64_t steps, int64_t *replayed, double *bytes,
                         double *per_m) {
    vt_report tr, ar;
    train_then_audit(p, VT_MODE_VERIFIED, log, steps, ORDER_B, &tr, &ar);
    *replayed = ar.status == VT_OK ? ar.steps : ar.first_bad_step;
    *bytes = (double)tr.log.bytes / (double)steps;
    *per_m = 1e6 * (double)tr.log.entries / (double)tr.log.values;
    printf("     %-11s audit %s: %lld of %lld steps replayed bit for bit\n", "verified", ar.status == VT_OK ? "ok" : ar.message,
           (long long)*replayed, (long long)steps);
    printf("     %-11s log %.0f bytes per step: %.1f entries per million rounded values (%lld values\n", "", *bytes, *per_m,
           (long long)(tr.log.values / steps));
    printf("     %-11s rounded per step); the log corrected the auditor's own rounding %lld times\n", "",
           (long long)ar.log.corrections);
    S.audit_corrections += ar.log.corrections;
    S.audit_values += ar.log.values;
}

/* Section 3. Why: this is what users meet. Native training (what every
   framework does: binary32 accumulation in the machine's own order) gives
   two different models on two machines, from the first step on. Verified
   training gives the same bits on both, and the price is a log that is tiny
   because section 2's test rarely fires. */
static void section3(const vt_digits *digits, chargpt *gpt_a, chargpt *gpt_b) {
    mlp_app ma, mb;
    vt_program pa, pb;
    lockstep_result r;
    printf("3. Training: %s (the trainer) against %s (another machine)\n\n", ORDER_A, ORDER_B);
    memset(&ma, 0, sizeof ma);
    ma.data = digits; ma.hidden = 64; ma.batch = 64; ma.lr = 3e-3; ma.schedule = MLP_STEPS;
    mb = ma;
    pa = mlp_program(&ma);
    pb = mlp_program(&mb);
    printf("   digits MLP 64-64-10, AdamW, batch 64, %d steps\n", MLP_STEPS);
    r = lockstep(VT_MODE_NATIVE, pa, pb, MLP_STEPS, "native MLP");
    print_lockstep("native", &r, MLP_STEPS);
    S.native_first = r.first_state;
    verified_row(&pa, "build/lab_mlp.vtlog", MLP_STEPS, &S.mlp_replayed, &S.mlp_bytes, &S.mlp_per_m);
    pa = chargpt_program(gpt_a);
    pb = chargpt_program(gpt_b);
    printf("\n   character GPT, 2 layers of width 32, context 16, batch 4, 200 steps\n");
    r = lockstep(VT_MODE_NATIVE, pa, pb, 200, "native GPT");
    print_lockstep("native", &r, 200);
    verified_row(&pa, "build/lab_gpt.vtlog", 200, &S.gpt_replayed, &S.gpt_bytes, &S.gpt_per_m);
    printf("\n");
}

/* ==========================================================================
   4. round-only: rounding points without the log
   ========================================================================== */

/* The chance that two orders round one value differently is the chance
   that a binary32 rounding boundary falls between their two binary64
   values. Where x sits between two boundaries is, at this scale, random, so
   that chance is |x_A - x_B| / ulp32(x) on average: averaging it over many
   dot products measures a rate of one in ten million without waiting for
   the rare event itself (a ratio above 1 means a sure crossing: capped at
   1). Orders: the four distinct binary64 orders of section 1 (with fma they
   add nothing), all six pairs. The average is ruled by the rare dot
   products whose terms nearly cancel - a small result has small ulps - so
   it needs many samples: cancellation again, as in least squares. */
#define POOL (1 << 20)
static double crossing_rate(const float *pool, int K, int trials) {
    static const int ords[4] = {ORD_LTR, ORD_RTL, ORD_TREE, ORD_LANES};
    double tot = 0;
    int t, i, j;
    for (t = 0; t < trials; t++) {
        const float *a = pool + vt_rng_u64(9, (uint64_t)K, 2 * (uint64_t)t) % (POOL - K);
        const float *b = pool + vt_rng_u64(9, (uint64_t)K, 2 * (uint64_t)t + 1) % (POOL - K);
        double x[4];
        for (i = 0; i < 4; i++) x[i] = dot64(ords[i], a, b, K);
        for (i = 0; i < 4; i++)
            for (j = i + 1; j < 4; j++) {
                float r = (float)fabs(x[i]);
                tot += fmin(1.0, fabs(x[i] - x[j]) / ((double)nextafterf(r, INFINITY) - r)) / 6;
            }
    }
    return 1e6 * tot / trials;
}

/* one training's loss after each step (vt_program.on_step) */
static double g_loss[64];
static void record_loss(vt_ctx *c, int64_t s, void *u) {
    (void)u;
    if (s < 64) g_loss[s] = vt_last_loss(c);
}

/* least squares: round-only in lockstep, then verified train and audit */
static void section4_lsq(void) {
    lsq_app la, lb;
    vt_program pa, pb;
    vt_report tr, ar;
    lockstep_result r;
    float *x = (float *)malloc(sizeof(float) * LSQ_R * LSQ_IN), *y = (float *)malloc(sizeof(float) * LSQ_R * LSQ_OUT);
    int64_t i;
    for (i = 0; i < LSQ_R * LSQ_IN; i++) x[i] = (float)vt_rng_normal(5, 0, (uint64_t)i);
    for (i = 0; i < LSQ_R * LSQ_OUT; i++) y[i] = (float)vt_rng_normal(6, 0, (uint64_t)i);
    memset(&la, 0, sizeof la);
    la.x = x; la.y = y;
    lb = la;
    pa = lsq_program(&la);
    pb = lsq_program(&lb);
    printf("\n   least squares y = x w^T, 1024 samples of 256 -> 64, SGD with momentum, 60 steps\n");
    r = lockstep(VT_MODE_ROUND_ONLY, pa, pb, 60, "round-only least squares");
    print_lockstep("round-only", &r, 60);
    S.ro_lsq_first = r.first_state;
    S.ro_lsq_first_w = r.first_weights;
    pa.on_step = record_loss;
    train_then_audit(&pa, VT_MODE_VERIFIED, "build/lab_lsq.vtlog", 60, ORDER_B, &tr, &ar);
    S.lsq_replayed = ar.status == VT_OK ? ar.steps : ar.first_bad_step;
    S.lsq_corrections = ar.log.corrections;
    S.lsq_per_m = 1e6 * (double)ar.log.corrections / (double)ar.log.values;
    printf("     %-11s audit %s: %lld of 60 steps replayed bit for bit; of its %lld log entries,\n", "verified",
           ar.status == VT_OK ? "ok" : ar.message, (long long)S.lsq_replayed, (long long)tr.log.entries);
    printf("     %-11s %lld corrected the auditor's own rounding (%.0f per million rounded values)\n", "",
           (long long)ar.log.corrections, S.lsq_per_m);
    if (S.ro_lsq_first >= 0 && S.ro_lsq_first < 60)
        printf("     %-11s loss %.6f at step 0, %.6f at step %lld, %.6f at step 59: near the minimum\n", "", g_loss[0],
               g_loss[S.ro_lsq_first], (long long)S.ro_lsq_first, g_loss[59]);
    if (r.first_state >= 0 && r.first_weights < 0) {
        printf("   The orders part in the momentum buffers. Near the minimum they hold tiny gradients, and one\n");
        printf("   ulp of those moves w - lr m by far less than one ulp of w: no weight has rounded differently\n");
        printf("   yet. But the momentum is state that the next steps use and that the trainer commits to: an\n");
        printf("   audit of the round-only run fails after step %lld. (In this convex problem both runs head for\n",
               (long long)r.first_state);
        printf("   the same minimum; in a chaotic run a difference grows: section 5.)\n");
    }
    printf("\n");
    free(x);
    free(y);
}

/* Section 4. Why round-only is rarely wrong: a value goes wrong only if its
   exact result lies within the spread of the orders - a few binary64 ulps
   times the sum's condition number - of a binary32 rounding boundary, and
   binary32 boundaries are 2^29 binary64 ulps apart. Why rarely is not good
   enough: a step rounds millions to billions of values, so the expected
   number of crossings per step is (rate) x (values per step); and one
   crossing is a divergence that nobody can detect or repair without the
   log: from then on the two runs are different runs, and section 5 shows
   that training then drives them apart. */
static void section4(const vt_digits *digits, chargpt *gpt_a, chargpt *gpt_b) {
    static const int lengths[3] = {64, 768, 3072};
    static const char *what[3] = {"GPT-2's head size", "GPT-2's width", "GPT-2's MLP width"};
    static const int trials[3] = {200000, 40000, 10000};
    mlp_app ma, mb;
    lockstep_result r;
    float *pool;
    double rate[3];
    int k, i;
    printf("4. round-only: binary64 compute and rounding points, but no log (%s against %s)\n\n", ORDER_A, ORDER_B);
    memset(&ma, 0, sizeof ma);
    ma.data = digits; ma.hidden = 64; ma.batch = 64; ma.lr = 3e-3; ma.schedule = MLP_STEPS;
    mb = ma;
    printf("   digits MLP 64-64-10, as in section 3\n");
    r = lockstep(VT_MODE_ROUND_ONLY, mlp_program(&ma), mlp_program(&mb), MLP_STEPS, "round-only MLP");
    print_lockstep("round-only", &r, MLP_STEPS);
    S.ro_mlp_first = r.first_state;
    printf("   character GPT, as in section 3\n");
    r = lockstep(VT_MODE_ROUND_ONLY, chargpt_program(gpt_a), chargpt_program(gpt_b), 200, "round-only GPT");
    print_lockstep("round-only", &r, 200);
    S.ro_gpt_first = r.first_state;
    section4_lsq();

    pool = (float *)malloc(sizeof(float) * POOL);
    for (i = 0; i < POOL; i++) pool[i] = (float)vt_rng_normal(8, 0, (uint64_t)i);
    for (k = 0; k < 3; k++) rate[k] = crossing_rate(pool, lengths[k], trials[k]);
    free(pool);
    S.rate_lo = fmin(rate[0], fmin(rate[1], rate[2]));
    S.rate_hi = fmax(rate[0], fmax(rate[1], rate[2]));
    printf("   How often does another order round a value differently? In the models above too rarely\n");
    printf("   to count: section 3's audits corrected %lld of %.2g rounded values. On average it is\n",
           (long long)S.audit_corrections, (double)S.audit_values);
    printf("   |x_A - x_B| / ulp32(x), the chance that a boundary falls between two orders' values;\n");
    printf("   averaged over dot products of random data, per million values:\n");
    for (k = 0; k < 3; k++) {
        char label[96];
        snprintf(label, sizeof label, "%6d dot products of length %4d (%s)", trials[k], lengths[k], what[k]);
        printf("     %-58s %8.3f\n", label, rate[k]);
    }
    printf("     %-58s %8.0f\n", "least squares at its minimum (counted above)", S.lsq_per_m);
    printf("   EXTRAPOLATION, not a measurement: a GPT-2 124M step rounds about 4e9 values, many of them\n");
    printf("   outputs of dot products like these. At these rates that is about %.0f to %.0f boundary\n",
           S.rate_lo * 4e3, S.rate_hi * 4e3);
    printf("   crossings per step, each a silent divergence for round-only: a step replicates with\n");
    printf("   probability about exp(-%.0f). Cancellation like least squares' would make it %.2g per step.\n\n",
           S.rate_lo * 4e3, S.lsq_per_m * 4e3);
}

/* ==========================================================================
   5. Train in binary64, cast to binary32 at the end?
   ========================================================================== */

#define NCHECK 7
static const int64_t checkpoints[NCHECK] = {1, 4, 16, 64, 256, 1024, 2048};

/* One model in fp64 mode, in lockstep, for `steps` steps (a checkpoint):
   |dw| and differing casts at the checkpoints; the first step after which
   any cast differs (-1: none), the number of steps after which some cast
   differs, and how fast |dw| grew: the average number of steps in which it
   doubled, from step 1 to the end (0: it did not grow). */
static int64_t fp64_row(int row, const char *name, vt_program pa, vt_program pb, int64_t steps, char *where, size_t nwhere) {
    twin t;
    int64_t first = -1, nw = 0, any = 0, ncast[NCHECK];
    double max64[NCHECK], doubling = 0;
    int q = 0, j;
    twin_start(&t, VT_MODE_FP64, pa, pb);
    while (t.step < steps) {
        double mx;
        int64_t nd;
        twin_step(&t);
        nd = cast_diff(&t, &mx, &nw, first < 0 ? where : NULL, nwhere);
        if (nd > 0 && first < 0) first = t.step - 1;
        any += nd > 0;
        if (q < NCHECK && t.step == checkpoints[q]) { max64[q] = mx; ncast[q] = nd; q++; }
        progress(name, t.step, steps);
    }
    twin_stop(&t);
    if (q > 1 && max64[0] > 0 && max64[q - 1] > max64[0])
        doubling = (double)(checkpoints[q - 1] - 1) * log(2.0) / log(max64[q - 1] / max64[0]);
    printf("   %s, %lld weights\n", name, (long long)nw);
    printf("     after step    ");
    for (j = 0; j < q; j++) printf(" %8lld", (long long)checkpoints[j]);
    printf("\n     max |dw|      ");
    for (j = 0; j < q; j++) printf(" %8.1e", max64[j]);
    printf("\n     differ f32    ");
    for (j = 0; j < q; j++) printf(" %8lld", (long long)ncast[j]);
    if (first >= 0)
        printf("\n     casts first differ after step %lld, and differ after %lld of the %lld steps\n", (long long)first,
               (long long)any, (long long)steps);
    else
        printf("\n     no cast differs in %lld steps\n", (long long)steps);
    if (doubling > 0) printf("     |dw| doubles every %.0f steps on average\n", doubling);
    else printf("     |dw| did not grow\n");
    S.fp64_name[row] = name;
    S.fp64_first[row] = first;
    S.fp64_steps_any[row] = any;
    S.fp64_doubling[row] = doubling;
    return first;
}

/* Section 5. Why: "just use binary64" is the obvious fix, and it nearly
   works - a binary64 ulp is 2^-29 of a binary32 ulp, so two orders' weights
   start far below the cast's resolution. But (a) a weight whose exact
   gradient is zero (the GPT's attention key biases) receives pure rounding
   noise, and noise cast to binary32 is still noise: those casts differ from
   the first step; and (b) training feeds every difference back into the
   next step, so differences grow - how fast depends on the learning rate
   and the model, which is why we measure several - and once they reach
   binary32's last bit, the casts disagree. Nothing in the cast knows which
   weights to trust: there is no bound and no log. */
static void section5(const vt_digits *digits, chargpt *gpt_a, chargpt *gpt_b) {
    mlp_app ma, mb;
    char where[512], key_bias[64];
    printf("5. Train in binary64 (fp64 mode, no rounding points), cast to binary32 at the end\n");
    printf("   (%s against %s. max |dw|: the largest difference of a weight between the\n", ORDER_A, ORDER_B);
    printf("   two, in binary64; differ f32: how many weights differ once cast to binary32)\n\n");
    memset(&ma, 0, sizeof ma);
    ma.data = digits; ma.batch = 64;
    ma.hidden = 64; ma.lr = 3e-3; ma.schedule = MLP_STEPS; mb = ma;
    fp64_row(0, "digits MLP 64-64-10, lr 3e-3 (section 3's)", mlp_program(&ma), mlp_program(&mb), MLP_STEPS, NULL, 0);
    ma.hidden = 32; ma.lr = 3e-2; ma.schedule = 0; mb = ma;
    fp64_row(1, "digits MLP 64-32-10, lr 3e-2, constant", mlp_program(&ma), mlp_program(&mb), 2048, NULL, 0);
    ma.hidden = 512; mb = ma;
    fp64_row(2, "digits MLP 64-512-10, lr 3e-2, constant", mlp_program(&ma), mlp_program(&mb), 1024, NULL, 0);
    fp64_row(3, "character GPT of section 3, 256 steps", chargpt_program(gpt_a), chargpt_program(gpt_b), 256, where, sizeof where);
    snprintf(key_bias, sizeof key_bias, "qkvb[%d..%d]", gpt_a->cfg.width, 2 * gpt_a->cfg.width - 1);
    printf("   The GPT's first differing casts are %s.\n", where);
    if (strstr(where, key_bias)) {
        printf("   qkvb holds the biases of query, key and value, %d each: these are the key biases. Their exact\n",
               gpt_a->cfg.width);
        printf("   gradient is 0 - softmax ignores a shift that is the same for every key - so in binary64 they\n");
        printf("   are pure rounding noise, and no cast can agree on noise.\n");
    }
    printf("\n");
}

/* ========================================================================== */

static void summary(void) {
    int k;
    printf("Summary (%.0f s)\n", vt__now() - g_t0);
    printf("  1. One dot product, 6 orders: %d binary32 results; binary64 rounded to binary32: %d. Over %d\n",
           S.f32_distinct, S.f64_rounded_distinct, TRIALS);
    printf("     dot products the binary32 orders agreed %d times, binary64-then-rounded %d times.\n", S.trials_f32_agree,
           S.trials_f64_agree);
    printf("  2. vtrain's test logged %d of %d dot products; unlogged disagreements: %d. Built on a boundary,\n",
           S.flagged, TRIALS, S.disagree_unflagged);
    printf("     the orders split %d/%d; with the log all agree (vtrain: %d of 6 auditors, %d by correcting).\n",
           S.boundary_orders_up, NORD - S.boundary_orders_up, S.boundary_vtrain_agree, S.boundary_vtrain_corrected);
    printf("  3. native: the MLP's two orders differ from step %lld. verified: MLP %lld, GPT %lld steps replayed\n",
           (long long)S.native_first, (long long)S.mlp_replayed, (long long)S.gpt_replayed);
    printf("     under another order, with %.0f and %.0f log bytes per step (%.1f, %.1f entries per million).\n",
           S.mlp_bytes, S.gpt_bytes, S.mlp_per_m, S.gpt_per_m);
    printf("  4. round-only, first step after which the state differs (-1: never): MLP %lld, GPT %lld,\n",
           (long long)S.ro_mlp_first, (long long)S.ro_gpt_first);
    printf("     least squares %lld (its weights: %lld). verified replays least squares (%lld steps,\n",
           (long long)S.ro_lsq_first, (long long)S.ro_lsq_first_w, (long long)S.lsq_replayed);
    printf("     %lld corrections).", (long long)S.lsq_corrections);
    printf(" Crossing rates %.3f-%.3f per million values: EXTRAPOLATED ~%.0f-%.0f\n     per GPT-2 124M step.\n",
           S.rate_lo, S.rate_hi, S.rate_lo * 4e3, S.rate_hi * 4e3);
    printf("  5. binary64, then cast: first step after which binary32 weights differ (-1: none):\n");
    for (k = 0; k < 4; k++)
        printf("     %-44s %5lld  (|dw| doubles every %3.0f steps)\n", S.fp64_name[k], (long long)S.fp64_first[k],
               S.fp64_doubling[k]);
}

int main(void) {
    vt_digits digits;
    chargpt ga, gb;
    g_t0 = vt__now();
    printf("vtrain %s nondeterminism lab\n\n", vt_version());
    if (vt_digits_load("data/digits.csv", &digits) != VT_OK) die("data/digits.csv", vt_last_error());
    if (chargpt_load(&ga, "data/kjv_nt.txt") != VT_OK) die("data/kjv_nt.txt", vt_last_error());
    tiny_gpt(&ga, 200);
    gb = ga;            /* a second app for the second context of a pair: */
    gb.x = gb.y = NULL; /* its own batch buffers, the same text */
    section1();
    section2();
    section3(&digits, &ga, &gb);
    section4(&digits, &ga, &gb);
    ga.steps = gb.steps = 256; /* section 5 runs the GPT longer */
    section5(&digits, &ga, &gb);
    summary();
    free(gb.x);
    free(gb.y);
    chargpt_free(&ga);
    vt_digits_free(&digits);
    return 0;
}
