/* bench/gemm_kernel.c - vtrain's GEMM micro-kernel alone beside OpenBLAS's.

   make build/bench_gemm_kernel   (needs a DYNAMIC_ARCH libopenblas, which
                                   exports its per-core kernels)
   ./build/bench_gemm_kernel [--m 96] [--n 1024] [--k 256] [--rounds 41]

   No packing and no driver: both kernels run over packed panels already in
   memory, m rows of A (the block vt__gemm_tile keeps in L2) by n columns of
   B by one k-block of k terms, C += A B. Ours walks the tile as
   vt__gemm_tile does (B's micro-panel outer, A's micro-panels inner); the
   peer is dgemm_kernel_SKYLAKEX for our AVX-512 kernel, dgemm_kernel_HASWELL
   for our AVX2 one (VTRAIN_SIMD=avx2), called with the same m, n, k on its
   own buffers. The values are arbitrary: speed does not depend on them.
   Short rounds alternate (ours, OpenBLAS); printed: GFLOP/s of each
   library's fastest round (on a shared machine the round least touched by
   others), the ratio of those (OpenBLAS time / ours: above 1 we are
   faster) and the median of the per-round ratios with their range.
   Where the cache levels lie is chosen with the shape: n = 1024, k = 256
   puts B (2 MiB) beside L2; n = 4096 puts it in L3; m = 192 puts C beyond
   L2 (bench/RESULTS.md, issue 15 round 4). */
#define VTRAIN_IMPLEMENTATION
#include "../vtrain.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int (*ob_kernel)(long m, long n, long k, double alpha, double *sa, double *sb, double *c, long ldc);
extern int dgemm_kernel_SKYLAKEX(long m, long n, long k, double alpha, double *sa, double *sb, double *c, long ldc);
extern int dgemm_kernel_HASWELL(long m, long n, long k, double alpha, double *sa, double *sb, double *c, long ldc);

static int cmpd(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* n doubles at the start of a page (the allocation itself goes to *base
   for free()). vtrain's packing buffer is 64-byte aligned and puts B's
   panel 96 x 256 doubles (48 pages) after A's block, so the two start at
   the same offset in a page, as here. (With plain malloc's 16-byte
   alignment every row of 8 doubles straddles two lines: our kernel then
   read 0.72-0.79x of OpenBLAS's, 0.90x here.) */
static double *fill(size_t n, int mod, void **base) {
    unsigned char *q = (unsigned char *)malloc(sizeof(double) * (n + 8) + 4096);
    double *p;
    size_t i;
    if (!q) { fprintf(stderr, "bench_gemm_kernel: out of memory\n"); exit(1); }
    *base = q;
    p = (double *)(q + (4096 - (uintptr_t)q % 4096) % 4096);
    for (i = 0; i < n + 8; i++) p[i] = mod ? 1e-3 * (double)(i % (size_t)mod) : 0.0;
    return p;
}

int main(int argc, char **argv) {
    const vt__ukr_set *ks = vt__gemm_isa();
    long m = 96, n = 1024, k = 256, reps, r, jr, ir;
    int rounds = 41, i;
    void *mem[6];
    double *A, *B, *C, *A2, *B2, *C2, best0 = 1e30, best1 = 1e30, ratio[256], fl;
    ob_kernel peer;
    for (i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--m") && i + 1 < argc) m = atol(argv[++i]);
        else if (!strcmp(argv[i], "--n") && i + 1 < argc) n = atol(argv[++i]);
        else if (!strcmp(argv[i], "--k") && i + 1 < argc) k = atol(argv[++i]);
        else if (!strcmp(argv[i], "--rounds") && i + 1 < argc) rounds = atoi(argv[++i]);
        else { fprintf(stderr, "usage: bench_gemm_kernel [--m 96] [--n 1024] [--k 256] [--rounds 41]\n"); return 2; }
    }
    if (!strcmp(ks->name, "avx512")) peer = dgemm_kernel_SKYLAKEX;
    else if (!strcmp(ks->name, "avx2")) peer = dgemm_kernel_HASWELL;
    else { fprintf(stderr, "bench_gemm_kernel: our %s kernel has no OpenBLAS peer here\n", ks->name); return 3; }
    if (m % ks->mr || n % ks->nr || m <= 0 || n <= 0 || k <= 0) { /* whole tiles: ours's edge path is not timed */
        fprintf(stderr, "bench_gemm_kernel: m must be a positive multiple of %d, n of %d\n", ks->mr, ks->nr);
        return 2;
    }
    if (rounds < 1) rounds = 1;
    if (rounds > 256) rounds = 256;
    A = fill((size_t)(m * k), 7, &mem[0]); B = fill((size_t)(n * k), 5, &mem[1]); C = fill((size_t)(m * n), 0, &mem[2]);
    A2 = fill((size_t)(m * k), 7, &mem[3]); B2 = fill((size_t)(n * k), 5, &mem[4]); C2 = fill((size_t)(m * n), 0, &mem[5]);
    reps = (long)(1.5e8 / (2.0 * (double)m * (double)n * (double)k));
    if (reps < 1) reps = 1;
    fl = 2.0 * (double)m * (double)n * (double)k * (double)reps;
    printf("the %s micro-kernel (%d x %d) beside OpenBLAS's dgemm_kernel_%s: m %ld, n %ld, k %ld, %d rounds\n",
           ks->name, ks->mr, ks->nr, peer == dgemm_kernel_SKYLAKEX ? "SKYLAKEX" : "HASWELL", m, n, k, rounds);
    for (i = -2; i < rounds; i++) { /* two warm-up rounds */
        double t0 = vt__now(), t1, t2;
        for (r = 0; r < reps; r++)
            for (jr = 0; jr < n; jr += ks->nr)
                for (ir = 0; ir < m; ir += ks->mr)
                    ks->k64(k, A + ir * k, B + jr * k, C + ir * n + jr, n, ks->mr, ks->nr, 0, 1);
        t1 = vt__now();
        for (r = 0; r < reps; r++) peer(m, n, k, 1.0, A2, B2, C2, m);
        t2 = vt__now();
        if (i < 0) continue;
        best0 = VT__MIN(best0, t1 - t0);
        best1 = VT__MIN(best1, t2 - t1);
        ratio[i] = (t2 - t1) / (t1 - t0);
    }
    qsort(ratio, (size_t)rounds, sizeof(double), cmpd);
    printf("GFLOP/s (fastest round): ours %.1f, OpenBLAS %.1f; OpenBLAS time / ours: best %.3f, median %.3f (%.3f-%.3f)\n",
           fl / best0 * 1e-9, fl / best1 * 1e-9, best1 / best0, ratio[rounds / 2], ratio[0], ratio[rounds - 1]);
    for (i = 0; i < 6; i++) free(mem[i]);
    return 0;
}
