/* bench/cnn.c - a CIFAR ResNet's training step: time per step in vtrain's
   modes, and the rounding log's size beside the paper's dense encoding.

   make build/bench_cnn
   ./build/bench_cnn [--model resnet18|resnet50] [--width W] [--batch B]
       [--modes verified,fp64,native] [--steps N] [--rounds R] [--threads T]

   The model of vt_resnet_init (CIFAR form) on random CIFAR-shaped images
   (N(0,1) binary32 values from Philox, labels uniform over 10), SGD with
   momentum 0.9 and weight decay 5e-4. A round runs every mode once, for N
   steps each in a fresh context (the first step, which allocates, is not
   timed; each later step is); rounds alternate the modes (ABAB) so a change
   in the machine's load touches all alike. Per mode: the median over rounds
   of a round's median step time, and per round the ratio to the first mode.

   The log: bytes per step of the verified run's log (chunks with their
   headers), the rounded values per step, and the paper's dense encoding of
   the same step: 1.6 bits for every rounded value (Srivastava, Arora and
   Boneh 2024: a ternary symbol per value, five per byte). Machine-readable
   lines start with "RESULT".

   Built as build/bench_gpu_cnn (make cuda: -DVT_BENCH_CUDA) it also takes
   --device gpu|emu: the CUDA backend on GPU 0 or on its emulator. */
#define VTRAIN_IMPLEMENTATION
#ifdef VT_BENCH_CUDA
#define VTRAIN_CUDA
#define VTRAIN_CUDA_EMU
#endif
#include "../vtrain.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct { vt_resnet m; vt_optim *opt; int depth, width, B; float *x; } app;
static app A;
static double t_last, times[64];
static int ntimes;

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static vt_status setup(vt_ctx *c, void *u) {
    app *a = (app *)u;
    vt_resnet_config cfg = vt_resnet_default(a->depth);
    vt_sgd_desc sd = vt_sgd_default();
    cfg.width = a->width;
    vt_resnet_free(&a->m);
    vt_resnet_init(c, &a->m, &cfg, 5);
    sd.lr = 0.05; sd.momentum = 0.9; sd.weight_decay = 5e-4;
    a->opt = vt_sgd_create(c, &sd);
    return vt_status_of(c);
}

static vt_status step(vt_ctx *c, int64_t s, void *u) {
    app *a = (app *)u;
    int64_t xs[4], ys[1], i, n = (int64_t)a->B * 3072;
    int32_t y[1024];
    for (i = 0; i < n; i++) a->x[i] = (float)vt_rng_normal(41, (uint64_t)s, (uint64_t)i);
    for (i = 0; i < a->B; i++) y[i] = (int32_t)(vt_rng_u64(42, (uint64_t)s, (uint64_t)i) % 10);
    xs[0] = a->B; xs[1] = 3; xs[2] = 32; xs[3] = 32; ys[0] = a->B;
    vt_backward(c, vt_cross_entropy(c, vt_resnet_forward(c, &a->m, vt_from_f32(c, 4, xs, a->x)), vt_from_i32(c, 1, ys, y)));
    vt_optim_step(c, a->opt, 0.05);
    return vt_status_of(c);
}

static void on_step(vt_ctx *c, int64_t s, void *u) {
    double t = now();
    (void)c; (void)u;
    if (s > 0 && ntimes < 64) times[ntimes++] = t - t_last;
    t_last = t;
}

static int cmpd(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}
static double median(double *v, int n) {
    qsort(v, (size_t)n, sizeof(double), cmpd);
    return n ? (n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2])) : 0;
}

int main(int argc, char **argv) {
    const char *modes = "verified,fp64";
    char ms[8][16];
    int nm = 0, steps = 3, rounds = 2, threads = 2, i, r, k, dev = -2; /* -2: the CPU */
    double med[8][16];
    vt_report rep;
    A.depth = 18; A.width = 64; A.B = 64;
    for (i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--model")) A.depth = !strcmp(argv[i + 1], "resnet50") ? 50 : 18;
        else if (!strcmp(argv[i], "--width")) A.width = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--batch")) A.B = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--modes")) modes = argv[i + 1];
        else if (!strcmp(argv[i], "--steps")) steps = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--rounds")) rounds = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--threads")) threads = atoi(argv[i + 1]);
#ifdef VT_BENCH_CUDA
        else if (!strcmp(argv[i], "--device")) dev = !strcmp(argv[i + 1], "emu") ? VT_CUDA_EMULATOR : !strcmp(argv[i + 1], "gpu") ? 0 : -2;
#endif
        else { fprintf(stderr, "unknown option %s\n", argv[i]); return 2; }
    }
    if (steps < 2 || rounds < 1 || rounds > 16 || A.B < 2 || A.B > 1024) { fprintf(stderr, "need --steps >= 2, 1..16 rounds, batch 2..1024\n"); return 2; }
    {
        const char *p = modes;
        while (*p && nm < 8) {
            size_t l = strcspn(p, ",");
            snprintf(ms[nm++], sizeof ms[0], "%.*s", (int)l, p);
            p += l + (p[l] == ',');
        }
    }
    A.x = (float *)malloc(sizeof(float) * 3072 * (size_t)A.B);
    printf("resnet%d (CIFAR form), width %d, batch %d, 3x32x32; %d steps per run (the first not timed), %d rounds, %d threads, %s\n",
           A.depth, A.width, A.B, steps, rounds, threads, dev == -2 ? "cpu" : dev == 0 ? "gpu 0" : "emulated gpu");
    for (r = 0; r < rounds; r++)
        for (k = 0; k < nm; k++) {
            vt_desc d = vt_desc_default();
            vt_program p;
            d.mode = !strcmp(ms[k], "fp64") ? VT_MODE_FP64 : !strcmp(ms[k], "native") ? VT_MODE_NATIVE : VT_MODE_VERIFIED;
            d.order.threads = threads;
            if (dev != -2) { d.backend = VT_BACKEND_CUDA; d.device = dev; }
            if (d.mode == VT_MODE_VERIFIED) d.log_path = "build/bench_cnn.vtlog";
            p.setup = setup; p.step = step; p.on_step = on_step; p.user = &A;
            ntimes = 0;
            t_last = now();
            vt_run(&d, &p, steps, &rep);
            if (rep.status != VT_OK) { fprintf(stderr, "error: %s\n", rep.message); return 1; }
            med[k][r] = median(times, ntimes);
            printf("round %d  %-9s %8.3f s/step", r, ms[k], med[k][r]);
            if (k) printf("   %.3fx %s", med[k][r] / med[0][r], ms[0]);
            printf("\n");
            if (d.mode == VT_MODE_VERIFIED && r == 0) {
                double vps = (double)rep.log.values / (double)steps, bps = (double)rep.log.bytes / (double)steps;
                double dense = vps * 1.6 / 8;
                printf("log: %.0f bytes per step (%lld entries, %lld exact products over %d steps); %.0f rounded values per step;\n"
                       "     the paper's dense encoding of the same step: %.0f bytes (1.6 bits per value): %.0fx smaller\n",
                       bps, (long long)rep.log.entries, (long long)rep.log.exact, steps, vps, dense, dense / bps);
                printf("RESULT log model=resnet%d width=%d batch=%d bytes_per_step=%.0f values_per_step=%.0f dense_bytes=%.0f ratio=%.1f\n",
                       A.depth, A.width, A.B, bps, vps, dense, dense / bps);
            }
            fflush(stdout);
        }
    for (k = 0; k < nm; k++) {
        double v[16], ratio[16];
        memcpy(v, med[k], sizeof(double) * (size_t)rounds);
        for (r = 0; r < rounds; r++) ratio[r] = med[k][r] / med[0][r];
        printf("RESULT time model=resnet%d width=%d batch=%d mode=%s s_per_step=%.3f ratio_to_%s=%.3f\n", A.depth, A.width, A.B, ms[k],
               median(v, rounds), ms[0], median(ratio, rounds));
    }
    vt_resnet_free(&A.m);
    free(A.x);
    return 0;
}
