/* bench/dp.c - what shards cost (bench/dp.sh runs both parts).

     dp sum [--steps N] [--threads N]
         one process, the character GPT (4 layers, width 128, B 8, T 64)
         in S = 4 shards: every rounding-point kind's time and log entries
         per step beside the cross-shard sum's; then the cross-shard sum of
         the last step's contributions against a plain binary32 sum of the
         same values (what an all-reduce adds), alternated ABAB, as a ratio
     dp run [--steps N] [--threads N]
         under mpirun: the same training over the ranks (vtrain_dp.h);
         rank 0 prints the steps, the seconds and the log's bytes

   Built with mpicc (the sum part needs no mpirun). */
#define VTRAIN_IMPLEMENTATION
#include "../vtrain.h"
#include "../vtrain_dp.h"
#include "../examples/chargpt.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static chargpt g_gpt;

static int setup_gpt(int shards) {
    if (chargpt_load(&g_gpt, "data/kjv_nt.txt") != VT_OK) { fprintf(stderr, "cannot load data/kjv_nt.txt\n"); return 0; }
    g_gpt.steps = 300; /* chargpt's defaults: 4 layers, 4 heads, width 128, context 64, batch 8 */
    g_gpt.shards = shards;
    return 1;
}

static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

#if defined(__GNUC__)
#define NOINLINE __attribute__((noinline)) /* callgrind counts these two by name (bench/dp.sh) */
#else
#define NOINLINE
#endif

/* the plain binary32 sum of the contributions: the peer of the exact rule */
static NOINLINE double native_sum(const vt__shc *sc, int S, int64_t nv, double *out) {
    double t0 = vt__now();
    int64_t j;
    int k;
    for (j = 0; j < nv; j++) {
        float x = (float)vt__sh_get(sc[0].vals, 4, j);
        for (k = 1; k < S; k++) x = x + (float)vt__sh_get(sc[k].vals, 4, j);
        out[j] = x;
    }
    return vt__now() - t0;
}

static NOINLINE double exact_sum(const vt__shc *sc, int S, int64_t nv, double *out, int64_t *exact) {
    double t0 = vt__now();
    int64_t j;
    int nan = 0;
    for (j = 0; j < nv; j++) out[j] = vt__sh_sum(sc, S, j, exact, &nan);
    return vt__now() - t0;
}

static int bench_sum(int steps, int threads) {
    vt_desc d = vt_desc_default();
    vt_program p;
    vt_report r;
    vt_ctx *c;
    char ord[32], name[64];
    int k, S = 4;
    vt_log_stats st;
    double tot = 0;
    if (!setup_gpt(S)) return 1;
    p = chargpt_program(&g_gpt);
    d.shards = S;
    d.log_memory = 1; /* the trainer builds its log (in memory): the entries are the log's */
    snprintf(ord, sizeof ord, "threads:%d", threads);
    vt_order_parse(&d.order, ord);
    c = vt_create(&d);
    if (!c || p.setup(c, p.user) != VT_OK) { fprintf(stderr, "%s\n", c ? vt_error_message(c) : vt_last_error()); return 1; }
    vt_run_ctx(c, &p, steps, &r);
    if (r.status != VT_OK) { fprintf(stderr, "%s\n", r.message); return 1; }
    printf("character GPT, 4 layers, width 128, B 8 in S = 4 shards of 2 rows, T 64, %d steps, %d thread(s), %lld parameters\n", steps, threads,
           (long long)vt_param_numel(c));
    printf("step: %.1f ms; log %.0f bytes and %.2f entries per step\n\n", 1e3 * r.seconds / steps, (double)r.log.bytes / steps,
           (double)r.log.entries / steps);
    printf("| rounding point | points/step | values/step | ms/step | entries/step |\n|---|---|---|---|---|\n");
    for (k = 0; k < VT_OP_COUNT * 8; k++) {
        if (!vt_log_kind_stats(c, k, &st, name, sizeof name) || !st.points) continue;
        printf("| %s | %.0f | %.0f | %.3f | %.2f |\n", name, (double)st.points / steps, (double)st.values / steps, 1e3 * st.seconds / steps,
               (double)st.entries / steps);
        tot += st.seconds;
    }
    printf("| **cross-shard sum** | 1 | %.0f | %.3f | 0 (%.2f summed exactly) |\n", (double)r.log.shard_values / steps,
           1e3 * r.log.shard_seconds / steps, (double)r.log.shard_exact / steps);
    printf("\ncross-shard sum (packing, exchange, sum) / all kernels and rounding points: %.4f\n\n", r.log.shard_seconds / tot);
    {   /* the last step's contributions, summed again: ABAB against binary32 */
        vt__shc sc[4];
        int64_t nv = vt__grad_values(c), exact = 0;
        double *out = (double *)malloc(sizeof(double) * (size_t)nv), te[7], tn[7];
        int i;
        c->step_no--; /* the parse checks the step: the contributions are of the last one */
        if (!out || vt__shards_parse(c, sc) != VT_OK) { fprintf(stderr, "no contributions: %s\n", vt_error_message(c)); return 1; }
        c->step_no++;
        for (i = 0; i < 7; i++) { te[i] = exact_sum(sc, S, nv, out, &exact); tn[i] = native_sum(sc, S, nv, out); }
        qsort(te, 7, sizeof(double), cmp_d);
        qsort(tn, 7, sizeof(double), cmp_d);
        printf("the cross-shard sum of %lld values x %d shards, 7 alternating rounds, medians: exact rule %.3f ms, plain binary32 "
               "sum %.3f ms, ratio %.2f (%lld exact sums in all rounds)\n", (long long)nv, S, 1e3 * te[3], 1e3 * tn[3], te[3] / tn[3],
               (long long)exact);
        printf("RESULT sum_exact_ms=%.3f sum_native_ms=%.3f step_ms=%.1f\n", 1e3 * te[3], 1e3 * tn[3], 1e3 * r.seconds / steps);
        free(out);
    }
    vt_destroy(c);
    return 0;
}

static int bench_run(int argc, char **argv, int steps, int threads) {
    vt_desc d = vt_desc_default();
    vt_dp_cfg cfg = vt_dp_cfg_default();
    vt_program p;
    vt_report r;
    vt_status st;
    char ord[32];
    int rank = 0, size = 1;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (!setup_gpt(4)) return vt_dp_exit(VT_ERR_IO);
    p = chargpt_program(&g_gpt);
    d.shards = 4;
    d.log_memory = rank == 0; /* rank 0 builds the log (in memory), as it would write it */
    snprintf(ord, sizeof ord, "threads:%d", threads);
    vt_order_parse(&d.order, ord);
    st = vt_dp_run(&d, &p, steps, &cfg, &r);
    if (st != VT_OK) printf("rank %d: %s\n", rank, r.message);
    else if (rank == 0) {
        unsigned char dg[32];
        char hex[17];
        memcpy(dg, r.digest, 32);
        vt_hex(dg, 8, hex);
        printf("RESULT ranks=%d threads=%d steps=%d seconds=%.3f log_bytes=%lld state=%s\n", size, threads, steps, r.seconds, (long long)r.log.bytes, hex);
    }
    return vt_dp_exit(st);
}

/* the two sums once each over N values of 4 shards of gradient-like
   binary32 values (a spread of magnitudes, signs, some cancellation), for
   callgrind: bench/dp.sh counts each function's instructions */
static int bench_icount(int64_t n) {
    vt__shc sc[4];
    float *v = (float *)malloc(sizeof(float) * 4 * (size_t)n);
    double *out = (double *)malloc(sizeof(double) * (size_t)n);
    int64_t j, exact = 0;
    int k;
    if (!v || !out) return 1;
    for (k = 0; k < 4; k++) {
        for (j = 0; j < n; j++) {
            double g = vt_rng_normal(5, (uint64_t)k, (uint64_t)j) * ldexp(1.0, -(int)(vt_rng_u64(6, (uint64_t)j, 0) % 20));
            v[k * n + j] = (float)g;
        }
        sc[k].vals = (const unsigned char *)(v + k * n);
    }
    exact_sum(sc, 4, n, out, &exact);
    native_sum(sc, 4, n, out);
    printf("icount: %lld values x 4 shards, %lld summed exactly\n", (long long)n, (long long)exact);
    free(v);
    free(out);
    return 0;
}

int main(int argc, char **argv) {
    int i, steps = 10, threads = 1;
    if (argc == 3 && !strcmp(argv[1], "icount")) return bench_icount(atoll(argv[2]));
    for (i = 2; i < argc; i++) {
        if (!strcmp(argv[i], "--steps") && i + 1 < argc) steps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--threads") && i + 1 < argc) threads = atoi(argv[++i]);
        else { fprintf(stderr, "unknown option '%s'\n", argv[i]); return 2; }
    }
    if (argc >= 2 && !strcmp(argv[1], "sum")) return bench_sum(steps, threads);
    if (argc >= 2 && !strcmp(argv[1], "run")) return bench_run(argc, argv, steps, threads);
    fprintf(stderr, "usage: dp sum|run [--steps N] [--threads N]\n");
    return 2;
}
