/* bench/gemm.c - vtrain's binary64 GEMM beside OpenBLAS's cblas_dgemm.

   make bench-gemm   (installs nothing; needs libopenblas-dev)
   ./build/bench_gemm [--rounds R] [--sizes 256,512,1024] [--threads 1,2]

   C = A B for square n x n binary64 matrices on 1 and 2 threads, both
   libraries in the same run, taking turns (ours, ours with the bound,
   OpenBLAS, and again) so that a change in the machine's load touches all
   three alike. "ours" is the GEMM every vtrain matmul runs on; "+bound" adds
   the per-element error bound that a verified rounding point needs (row and
   column statistics, O(n^2)). Prints GFLOP/s (median over the rounds, by
   wall clock), the median of the per-round ratios with their range, the
   ratio of the best rounds (each library's fastest round: on a shared
   machine the round least touched by other processes, the closest a wall
   clock gets to the kernel's own speed), and the ratio by CPU time (a
   thread that waits for a core is not charged: on one thread the calling
   thread's time, the steadiest figure on a loaded machine; on two the
   process's, which OpenBLAS's spinning idle workers inflate, so there it
   flatters us). Every ratio is OpenBLAS's time over ours: above 1, we are
   faster.

   The peer is OpenBLAS's kernel for the ISA our kernel uses on this machine:
   openblas_get_corename() is printed and checked. With our AVX-512 kernel
   OpenBLAS must run an AVX-512 core (SkylakeX, Cooperlake, SapphireRapids);
   with our AVX2 kernel an AVX2 core or better (Haswell, Zen, or those). A
   build or an OPENBLAS_CORETYPE that gives it an older core would flatter
   us, and the bench refuses to run. To measure our AVX2 kernel on an
   AVX-512 machine against OpenBLAS's AVX2 kernel:
       VTRAIN_SIMD=avx2 OPENBLAS_CORETYPE=Haswell ./build/bench_gemm
   (make bench-gemm runs that too where the CPU has AVX-512).

   --layers C[,C...] instead times the products of the bench GPT's linear
   layers at width C (bench/step.c: B8 T64, so R = 512 rows; per block the
   layers C->3C, C->C, C->4C and 4C->C), each as the step runs it: the
   forward Y = X W^T, the input gradient dX = dY W and the weight gradient
   dW = dY^T X summed per sequence (T rows a chunk, then the chunks in
   order), beside cblas_dgemm with the same operands and transposes (one
   sum over all R rows: the peer's natural product). Rows: the kind and the
   shape, then as above.

   --native times native mode's products instead (binary32 micro-kernels
   on operands converted to binary32 while packing, sums rounded to
   binary32 after each addition; the weight gradient in one chunk per
   thread, as native runs it) beside cblas_sgemm on binary32 copies of the
   same operands: the binary32 GEMM that "verified over native" is
   measured against. No bound in this mode ("+bound" reads "-"). */
#define VTRAIN_IMPLEMENTATION
#include "../vtrain.h"
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern void openblas_set_num_threads(int);
extern char *openblas_get_corename(void);
extern char *openblas_get_config(void);

/* C (M x N) = A B, A read as A[m sam + k sak], B as B[k sbk + n sbn]: the
   square products have every stride n or 1, the layers' products the
   strides vt__k_linear gives them (ta, tb: the transposes for OpenBLAS) */
typedef struct {
    vt_ctx *c;
    int64_t M, N, K, sam, sak, sbk, sbn, kchunk;
    int ta, tb;
    double *A, *B, *C, *E;
    float *Af, *Bf, *Cf; /* --native: binary32 copies for cblas_sgemm */
    int bound;
} job;
static int native32; /* --native */

static void run_ours(job *j) {
    if (j->bound) vt__gemm_bound(j->c, &j->c->ord, j->M, j->N, j->K, j->A, j->sam, j->sak, j->B, j->sbk, j->sbn, NULL, j->N, NULL, j->kchunk, j->E);
    vt__gemm_set(j->c, &j->c->ord, j->M, j->N, j->K, j->A, j->sam, j->sak, j->B, j->sbk, j->sbn, j->C, j->N, j->kchunk); /* as vt__mm without bias */
    vt__arena_reset(&j->c->scratch);
}

static void run_blas(job *j) {
    if (native32) {
        cblas_sgemm(CblasRowMajor, j->ta ? CblasTrans : CblasNoTrans, j->tb ? CblasTrans : CblasNoTrans, (int)j->M, (int)j->N,
                    (int)j->K, 1.0f, j->Af, (int)(j->ta ? j->sak : j->sam), j->Bf, (int)(j->tb ? j->sbn : j->sbk), 0.0f, j->Cf,
                    (int)j->N);
        return;
    }
    cblas_dgemm(CblasRowMajor, j->ta ? CblasTrans : CblasNoTrans, j->tb ? CblasTrans : CblasNoTrans, (int)j->M, (int)j->N,
                (int)j->K, 1.0, j->A, (int)(j->ta ? j->sak : j->sam), j->B, (int)(j->tb ? j->sbn : j->sbk), 0.0, j->C, (int)j->N);
}

/* CPU time: of the calling thread on one thread (both libraries then run
   on it alone, and OpenBLAS's idle workers, which spin for a while after a
   call, are not charged to either), of the process on more */
static int cpu_thread_only;
static double cpu_now(void) {
    struct timespec ts;
    clock_gettime(cpu_thread_only ? CLOCK_THREAD_CPUTIME_ID : CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* SPINNING NEIGHBOURS. Between calls each library's idle workers spin
   before they sleep: ours for under a millisecond, OpenBLAS's for 2^28
   cycles by default (0.1 s here, measured at 100% of a core after a call).
   On two cores our next runs then shared them with OpenBLAS's spinner, and
   measured 0.48-0.60x in one process, 1.04-1.08x in the next (n = 256 and
   512, Intel Xeon, 2026-12-05), by where the scheduler put it. So the
   bench runs OpenBLAS with a spin as short as ours (OPENBLAS_THREAD_TIMEOUT
   = 18: 2^18 cycles, about 0.1 ms, set by re-executing itself, since
   OpenBLAS reads it when loaded; a value the caller set is kept and
   printed), and on more threads pauses 2 ms, untimed, before each timed
   run, so that neither library's spinner overlaps the other's run. */
static void settle(void) {
    struct timespec ts;
    ts.tv_sec = 0;
    ts.tv_nsec = 2000000L;
    nanosleep(&ts, NULL);
}

static int cmpd(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}
static double median(double *v, int n) {
    qsort(v, (size_t)n, sizeof(double), cmpd);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static int in_list(const char *name, const char *const *list) {
    for (; *list; list++)
        if (!strcmp(name, *list)) return 1;
    return 0;
}

/* the machine's CPU as lscpu names it */
static void cpu_model(char *buf, size_t n) {
    FILE *f = fopen("/proc/cpuinfo", "r");
    char line[512];
    snprintf(buf, n, "unknown CPU");
    if (!f) return;
    while (fgets(line, sizeof line, f))
        if (!strncmp(line, "model name", 10) && strchr(line, ':')) {
            char *p = strchr(line, ':') + 2;
            p[strcspn(p, "\n")] = 0;
            snprintf(buf, n, "%s", p);
            break;
        }
    fclose(f);
}

static int parse_list(const char *s, int *out, int max) {
    int n = 0;
    while (*s && n < max) {
        out[n++] = atoi(s);
        s = strchr(s, ',');
        if (!s) break;
        s++;
    }
    return n;
}

/* one row: rounds of ours, ours with the bound and OpenBLAS in turn */
static void measure(job *jp, int threads, int rounds, const char *label) {
    job j = *jp;
    double work = (double)j.M * (double)j.N * (double)j.K;
    int r, reps = work <= 256.0 * 256 * 256 ? 8 : work <= 512.0 * 512 * 512 ? 2 : 1;
    int64_t i;
    double w[3][64], cpu[3] = {0, 0, 0}, ra[64], rb[64], fl = 2.0 * work * reps;
    j.A = (double *)malloc(sizeof(double) * (size_t)(j.M * j.K));
    j.B = (double *)malloc(sizeof(double) * (size_t)(j.K * j.N));
    j.C = (double *)malloc(sizeof(double) * (size_t)(j.M * j.N));
    j.E = (double *)malloc(sizeof(double) * (size_t)(j.M * j.N));
    for (i = 0; i < j.M * j.K; i++) j.A[i] = (float)vt_rng_normal(1, 0, (uint64_t)i);
    for (i = 0; i < j.K * j.N; i++) j.B[i] = (float)vt_rng_normal(1, 1, (uint64_t)i);
    j.Af = j.Bf = j.Cf = NULL;
    if (native32) {
        j.Af = (float *)malloc(sizeof(float) * (size_t)(j.M * j.K));
        j.Bf = (float *)malloc(sizeof(float) * (size_t)(j.K * j.N));
        j.Cf = (float *)malloc(sizeof(float) * (size_t)(j.M * j.N));
        for (i = 0; i < j.M * j.K; i++) j.Af[i] = (float)j.A[i];
        for (i = 0; i < j.K * j.N; i++) j.Bf[i] = (float)j.B[i];
    }
    j.bound = 0; run_ours(&j); run_blas(&j); /* warm-up: pages, packing buffers, threads */
    for (r = 0; r < rounds + 1 && r < 64; r++) {
        int k, q;
        for (k = 0; k < 3; k++) {
            double t0, c0;
            if (native32 && k == 1) { /* no bound */
                if (r > 0) w[1][r - 1] = w[0][r - 1];
                continue;
            }
            if (threads > 1) settle();
            t0 = vt__now(); c0 = cpu_now();
            j.bound = k == 1;
            for (q = 0; q < reps; q++) {
                if (k < 2) run_ours(&j);
                else run_blas(&j);
            }
            if (r > 0) { w[k][r - 1] = vt__now() - t0; cpu[k] += cpu_now() - c0; }
        }
        if (r > 0) { ra[r - 1] = w[2][r - 1] / w[0][r - 1]; rb[r - 1] = w[2][r - 1] / w[1][r - 1]; }
    }
    {
        double lo_a = ra[0], hi_a = ra[0], lo_b = rb[0], hi_b = rb[0], ma, mb, m0, m1, m2;
        double best0 = w[0][0], best2 = w[2][0];
        char sa[32], sb[32];
        for (r = 1; r < rounds; r++) {
            lo_a = VT__MIN(lo_a, ra[r]); hi_a = VT__MAX(hi_a, ra[r]);
            lo_b = VT__MIN(lo_b, rb[r]); hi_b = VT__MAX(hi_b, rb[r]);
            best0 = VT__MIN(best0, w[0][r]); best2 = VT__MIN(best2, w[2][r]);
        }
        ma = median(ra, rounds); mb = median(rb, rounds);
        m0 = median(w[0], rounds); m1 = median(w[1], rounds); m2 = median(w[2], rounds);
        snprintf(sa, sizeof sa, "%.2f (%.2f-%.2f)", ma, lo_a, hi_a);
        snprintf(sb, sizeof sb, "%.2f (%.2f-%.2f)", mb, lo_b, hi_b);
        if (native32)
            printf("%-22s %-7d %9.1f %9s %9.1f   %-19s %-19s %9.2f %9.2f\n", label, threads, fl / m0 * 1e-9, "-",
                   fl / m2 * 1e-9, sa, "-", best2 / best0, cpu[2] / cpu[0]);
        else
            printf("%-22s %-7d %9.1f %9.1f %9.1f   %-19s %-19s %9.2f %9.2f\n", label, threads, fl / m0 * 1e-9,
                   fl / m1 * 1e-9, fl / m2 * 1e-9, sa, sb, best2 / best0, cpu[2] / cpu[0]);
        fflush(stdout);
    }
    free(j.A); free(j.B); free(j.C); free(j.E);
    free(j.Af); free(j.Bf); free(j.Cf);
}

int main(int argc, char **argv) {
    static const char *const avx512_cores[] = {"SkylakeX", "Cooperlake", "SapphireRapids", NULL};
    static const char *const avx2_cores[] = {"Haswell", "Zen", "SkylakeX", "Cooperlake", "SapphireRapids", NULL};
    int sizes[8] = {256, 512, 1024}, nsz = 3, layers[8], nlay = 0, ths[4] = {1, 2}, nth = 2, rounds = 7, ti, si, i;
    const char *ours = vt__gemm_isa()->name, *core = openblas_get_corename();
    char model[256];
    if (!getenv("OPENBLAS_THREAD_TIMEOUT")) { /* SPINNING NEIGHBOURS (above) */
        setenv("OPENBLAS_THREAD_TIMEOUT", "18", 1);
        execv("/proc/self/exe", argv);
        fprintf(stderr, "bench_gemm: could not re-execute itself with OPENBLAS_THREAD_TIMEOUT=18 (no /proc/self/exe?): "
                        "OpenBLAS keeps its default spin, which can halve our figures on more threads; set it and run "
                        "again to avoid that\n");
    }
    for (i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--rounds") && i + 1 < argc) rounds = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--sizes") && i + 1 < argc) nsz = parse_list(argv[++i], sizes, 8);
        else if (!strcmp(argv[i], "--threads") && i + 1 < argc) nth = parse_list(argv[++i], ths, 4);
        else if (!strcmp(argv[i], "--layers") && i + 1 < argc) nlay = parse_list(argv[++i], layers, 8);
        else if (!strcmp(argv[i], "--native")) native32 = 1;
        else {
            fprintf(stderr, "usage: bench_gemm [--rounds R] [--sizes 256,512,1024 | --layers 128,512] [--threads 1,2] [--native]\n");
            return 2;
        }
    }
    if (rounds < 1) rounds = 1;
    if (rounds > 63) rounds = 63;
    for (si = 0; si < nlay; si++)
        if (layers[si] < 1 || layers[si] > 4096) { fprintf(stderr, "bench_gemm: --layers: width %d is not in 1..4096\n", layers[si]); return 2; }
    for (si = 0; si < nsz; si++)
        if (sizes[si] < 1 || sizes[si] > 8192) { fprintf(stderr, "bench_gemm: --sizes: %d is not in 1..8192\n", sizes[si]); return 2; }
    cpu_model(model, sizeof model);
    printf("CPU: %s\nours: the %s micro-kernel%s; peer: OpenBLAS %s, core %s (%s), OPENBLAS_THREAD_TIMEOUT=%s\n", model,
           ours, native32 ? " (native: binary32)" : "", native32 ? "cblas_sgemm" : "cblas_dgemm", core, openblas_get_config(), getenv("OPENBLAS_THREAD_TIMEOUT") ? getenv("OPENBLAS_THREAD_TIMEOUT") : "(unset)");
    if (!strcmp(ours, "avx512") ? !in_list(core, avx512_cores) : !strcmp(ours, "avx2") ? !in_list(core, avx2_cores) : 0) {
        fprintf(stderr,
                "bench_gemm: refusing to compare: our %s kernel against OpenBLAS's %s core, which is not its best kernel "
                "for this ISA (OPENBLAS_CORETYPE=%s; a build without the machine's kernel, or a forced older core, would "
                "flatter us). Unset OPENBLAS_CORETYPE or set it to %s.\n",
                ours, core, getenv("OPENBLAS_CORETYPE") ? getenv("OPENBLAS_CORETYPE") : "(unset)",
                !strcmp(ours, "avx512") ? "SkylakeX" : "Haswell");
        return 3;
    }
    printf("%d rounds, ours / ours+bound / OpenBLAS in turn; GFLOP/s: median by wall clock; ratio: median (min-max) of "
           "the rounds; best: of the fastest rounds; cpu: by CPU time (the thread's on 1 thread); OpenBLAS time / ours\n\n",
           rounds);
    printf("%-22s %-7s %9s %9s %9s   %-19s %-19s %9s %9s\n", nlay ? "product MxNxK" : "n", "threads", "ours", "+bound", "OpenBLAS", "ours/OpenBLAS",
           "+bound/OpenBLAS", "best", "cpu ratio");
    for (ti = 0; ti < nth; ti++) {
        vt_desc d = vt_desc_default();
        vt_ctx *c;
        d.order.threads = ths[ti];
        if (native32) d.mode = VT_MODE_NATIVE;
        c = vt_create(&d);
        openblas_set_num_threads(ths[ti]);
        cpu_thread_only = ths[ti] == 1;
        if (nlay)
            for (si = 0; si < nlay; si++) {
                int64_t C = layers[si], R = 512, L;
                for (L = 0; L < 4; L++) {
                    int64_t IN = L == 3 ? 4 * C : C, OC = L == 0 ? 3 * C : L == 2 ? 4 * C : C, kind;
                    for (kind = 0; kind < 3; kind++) {
                        job j;
                        char label[64];
                        memset(&j, 0, sizeof j);
                        j.c = c;
                        if (kind == 0) { /* Y = X W^T: X (R, IN), W (OC, IN) */
                            j.M = R; j.N = OC; j.K = IN; j.sam = IN; j.sak = 1; j.sbk = 1; j.sbn = IN; j.tb = 1;
                        } else if (kind == 1) { /* dX = dY W: dY (R, OC) */
                            j.M = R; j.N = IN; j.K = OC; j.sam = OC; j.sak = 1; j.sbk = IN; j.sbn = 1;
                        } else { /* dW = dY^T X, per sequence of 64 rows (native: one chunk per thread) */
                            j.M = OC; j.N = IN; j.K = R; j.sam = 1; j.sak = OC; j.sbk = IN; j.sbn = 1; j.ta = 1;
                            j.kchunk = native32 ? (R + ths[ti] - 1) / ths[ti] : 64; /* as vt__row_chunk */
                        }
                        snprintf(label, sizeof label, "%s %lldx%lldx%lld", kind == 0 ? "fwd" : kind == 1 ? "dX" : "dW",
                                 (long long)j.M, (long long)j.N, (long long)j.K);
                        measure(&j, ths[ti], rounds, label);
                    }
                }
            }
        else
            for (si = 0; si < nsz; si++) {
                job j;
                char label[32];
                memset(&j, 0, sizeof j);
                j.c = c;
                j.M = j.N = j.K = sizes[si];
                j.sam = j.sbk = sizes[si]; j.sak = j.sbn = 1;
                snprintf(label, sizeof label, "%d", sizes[si]);
                measure(&j, ths[ti], rounds, label);
            }
        vt_destroy(c);
    }
    return 0;
}
