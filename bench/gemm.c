/* bench/gemm.c - vtrain's binary64 GEMM beside OpenBLAS's cblas_dgemm.

   make bench-gemm   (installs nothing; needs libopenblas-dev)

   C = A B for square n x n binary64 matrices, n = 256, 512, 1024, on 1 and
   2 threads, both libraries in the same run. "ours" is the GEMM every
   vtrain matmul runs on; "ours+bound" adds the per-element error bound that
   a verified rounding point needs (row and column statistics, O(n^2)).
   Reports GFLOP/s (best of several repetitions) and the ratio to OpenBLAS. */
#define VTRAIN_IMPLEMENTATION
#include "../vtrain.h"
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>

extern void openblas_set_num_threads(int);

static double best_of(int reps, void (*fn)(void *), void *arg) {
    double best = 1e30;
    int r;
    for (r = 0; r < reps; r++) {
        double t0 = vt__now();
        fn(arg);
        t0 = vt__now() - t0;
        if (t0 < best) best = t0;
    }
    return best;
}

typedef struct { vt_ctx *c; int n; double *A, *B, *C, *E; int bound; } job;

static void run_ours(void *p) {
    job *j = (job *)p;
    int64_t n = j->n, i;
    for (i = 0; i < n * n; i++) j->C[i] = 0;
    if (j->bound) vt__gemm_bound(j->c, &j->c->ord, n, n, n, j->A, n, 1, j->B, n, 1, NULL, n, NULL, 0, j->E);
    vt__gemm_run(j->c, &j->c->ord, n, n, n, j->A, n, 1, j->B, n, 1, j->C, n, 0);
    vt__arena_reset(&j->c->scratch);
}

static void run_blas(void *p) {
    job *j = (job *)p;
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, j->n, j->n, j->n, 1.0, j->A, j->n, j->B, j->n, 0.0, j->C, j->n);
}

int main(void) {
    int sizes[3] = {256, 512, 1024}, th, si;
    printf("%-6s %-7s %12s %12s %12s %8s %8s\n", "n", "threads", "ours GF/s", "+bound GF/s", "OpenBLAS", "ratio", "+bound");
    for (th = 1; th <= 2; th++) {
        vt_desc d = vt_desc_default();
        vt_ctx *c;
        d.order.threads = th;
        c = vt_create(&d);
        openblas_set_num_threads(th);
        for (si = 0; si < 3; si++) {
            int n = sizes[si], reps = n <= 512 ? 10 : 4;
            int64_t i;
            job j;
            double to, tb, tbl, fl = 2.0 * n * n * n;
            j.c = c; j.n = n; j.bound = 0;
            j.A = (double *)malloc(sizeof(double) * (size_t)n * n);
            j.B = (double *)malloc(sizeof(double) * (size_t)n * n);
            j.C = (double *)malloc(sizeof(double) * (size_t)n * n);
            j.E = (double *)malloc(sizeof(double) * (size_t)n * n);
            for (i = 0; i < (int64_t)n * n; i++) {
                j.A[i] = (float)vt_rng_normal(1, 0, (uint64_t)i);
                j.B[i] = (float)vt_rng_normal(1, 1, (uint64_t)i);
            }
            to = best_of(reps, run_ours, &j);
            j.bound = 1;
            tb = best_of(reps, run_ours, &j);
            tbl = best_of(reps, run_blas, &j);
            printf("%-6d %-7d %12.1f %12.1f %12.1f %8.2f %8.2f\n", n, th, fl / to * 1e-9, fl / tb * 1e-9, fl / tbl * 1e-9,
                   tbl / to, tbl / tb);
            free(j.A); free(j.B); free(j.C); free(j.E);
        }
        vt_destroy(c);
    }
    return 0;
}
