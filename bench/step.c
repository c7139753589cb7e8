/* bench/step.c - milliseconds per training step on the CPU, per mode.

   make bench-step
   ./build/bench_step [--threads N] [--steps N] [--model mlp|gpt] [--mode MODE[,MODE...]]
                      [--width C] [--context T] [--layers L] [--batch B] [--warmup N]

   --width, --context, --layers and --batch size the GPT (make bench-torch
   sweeps them beside PyTorch). --model and --mode run one configuration
   alone (or the listed modes side by side), for instruction counts:
       valgrind --tool=callgrind ./build/bench_step --threads 1 --steps 3 \
           --model gpt --mode verified
   (per-step counts: the difference of two such runs with different --steps,
   divided by the difference in steps; or one run of the modes side by side
   with --warmup 0 --steps 2 and callgrind's --dump-before=vt_step_begin,
   one dump per step, in turn: bench/callgrind_step.sh).

   The digits MLP (64-128-10, batch 64) and a small character GPT (4 layers,
   width 128, 4 heads, context 64, batch 8) on random data, each in the four
   modes side by side in one run: verified (rounding points with bounds and
   the log, written to /dev/null-like memory), round-only, fp64 (binary64
   without rounding points) and native (binary32 accumulation). The ratios
   are what we report: verified over fp64 is the cost of the rounding points
   and the log; verified over native is the cost of bit-exactness over a
   plain binary32 trainer. The four modes run side by side, taking turns
   step by step; median of the timed steps after 3 warm-up rounds. */
#define VTRAIN_IMPLEMENTATION
#include "../vtrain.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct { int gpt; vt_mlp mlp; vt_gpt g; vt_optim *opt; int B, T, V, C, L; int32_t *x, *y; } model;
static int g_width = 128, g_context = 64, g_layers = 4, g_batch = 8, g_warmup = 3;

static vt_status setup(vt_ctx *c, void *u) {
    model *m = (model *)u;
    vt_adamw_desc ad = vt_adamw_default();
    if (m->gpt) {
        vt_gpt_config cfg;
        memset(&cfg, 0, sizeof cfg);
        cfg.vocab = m->V; cfg.context = m->T; cfg.layers = m->L; cfg.heads = 4; cfg.width = m->C;
        vt_gpt_init(c, &m->g, &cfg, 1);
    } else {
        int sizes[3] = {64, 128, 10};
        vt_mlp_init(c, &m->mlp, 2, sizes, 0, 1);
    }
    m->opt = vt_adamw_create(c, &ad);
    return vt_status_of(c);
}

static vt_status step(vt_ctx *c, int64_t s, void *u) {
    model *m = (model *)u;
    vt_tensor *loss;
    int64_t i;
    if (m->gpt) {
        int64_t ne[2];
        for (i = 0; i < m->B * m->T; i++) {
            m->x[i] = (int32_t)(vt_rng_u64(3, (uint64_t)s, (uint64_t)i) % (uint64_t)m->V);
            m->y[i] = (int32_t)(vt_rng_u64(4, (uint64_t)s, (uint64_t)i) % (uint64_t)m->V);
        }
        ne[0] = m->B; ne[1] = m->T;
        loss = vt_gpt_forward(c, &m->g, vt_from_i32(c, 2, ne, m->x), vt_from_i32(c, 2, ne, m->y), s);
    } else {
        int64_t xs[2], ys[1];
        float x[64 * 64];
        int32_t y[64];
        for (i = 0; i < 64 * 64; i++) x[i] = (float)(vt_rng_u64(3, (uint64_t)s, (uint64_t)i) % 17) / 16.0f;
        for (i = 0; i < 64; i++) y[i] = (int32_t)(vt_rng_u64(4, (uint64_t)s, (uint64_t)i) % 10);
        xs[0] = 64; xs[1] = 64; ys[0] = 64;
        loss = vt_cross_entropy(c, vt_mlp_forward(c, &m->mlp, vt_from_f32(c, 2, xs, x)), vt_from_i32(c, 1, ys, y));
    }
    vt_backward(c, loss);
    vt_clip_grad_norm(c, 1.0);
    vt_optim_step(c, m->opt, 1e-3);
    return vt_status_of(c);
}

static int cmpd(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* one context per mode; the modes take turns step by step, so that a change
   in the machine's load touches all of them alike (the ratios are what we
   report); the median of each mode's timed steps after 3 warm-up rounds */
static void median_ms(int gpt, const vt_mode *ms, int nm, int threads, int steps, double *out, double *per_million) {
    model m[4];
    vt_ctx *c[4];
    double *t = (double *)malloc(sizeof(double) * (size_t)(steps * nm));
    int i, k;
    for (k = 0; k < nm; k++) {
        vt_desc d = vt_desc_default();
        memset(&m[k], 0, sizeof m[k]);
        m[k].gpt = gpt; m[k].B = g_batch; m[k].T = g_context; m[k].V = 64; m[k].C = g_width; m[k].L = g_layers;
        m[k].x = (int32_t *)malloc(sizeof(int32_t) * (size_t)(m[k].B * m[k].T));
        m[k].y = (int32_t *)malloc(sizeof(int32_t) * (size_t)(m[k].B * m[k].T));
        d.mode = ms[k];
        d.order.threads = threads;
        c[k] = vt_create(&d);
        setup(c[k], &m[k]);
    }
    for (i = 0; i < steps + g_warmup; i++)
        for (k = 0; k < nm; k++) {
            double t0 = vt__now();
            vt_step_begin(c[k]);
            step(c[k], i, &m[k]);
            vt_step_end(c[k]);
            if (i >= g_warmup) t[k * steps + i - g_warmup] = vt__now() - t0;
        }
    for (k = 0; k < nm; k++) {
        if (vt_status_of(c[k]) != VT_OK) fprintf(stderr, "error: %s\n", vt_error_message(c[k]));
        qsort(t + k * steps, (size_t)steps, sizeof(double), cmpd);
        out[k] = 1e3 * t[k * steps + steps / 2];
        if (per_million && ms[k] == VT_MODE_VERIFIED) {
            vt_log_stats st;
            vt_log_stats_get(c[k], &st);
            *per_million = 1e6 * (double)st.entries / (double)(st.values ? st.values : 1);
        }
        vt_destroy(c[k]);
        free(m[k].x); free(m[k].y);
    }
    free(t);
}

static const char *mode_names[4] = {"verified", "round-only", "fp64", "native"};
static const vt_mode modes[4] = {VT_MODE_VERIFIED, VT_MODE_ROUND_ONLY, VT_MODE_FP64, VT_MODE_NATIVE};

int main(int argc, char **argv) {
    int threads = 0, steps = 15, gpt, i, only_model = -1, nsel = 0, sel[4];
    for (i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--threads") && i + 1 < argc) threads = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--steps") && i + 1 < argc) steps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--model") && i + 1 < argc) only_model = !strcmp(argv[++i], "gpt");
        else if (!strcmp(argv[i], "--width") && i + 1 < argc) g_width = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--warmup") && i + 1 < argc) g_warmup = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--context") && i + 1 < argc) g_context = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--layers") && i + 1 < argc) g_layers = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--batch") && i + 1 < argc) g_batch = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--mode") && i + 1 < argc) {
            const char *q = argv[++i];
            while (*q && nsel < 4) {
                int k, len = (int)strcspn(q, ","), found = -1;
                for (k = 0; k < 4; k++)
                    if ((int)strlen(mode_names[k]) == len && !strncmp(q, mode_names[k], (size_t)len)) found = k;
                if (found < 0) { fprintf(stderr, "bench_step: unknown mode '%.*s' (verified, round-only, fp64, native)\n", len, q); return 2; }
                sel[nsel++] = found;
                q += len;
                if (*q == ',') q++;
            }
        } else {
            fprintf(stderr, "usage: bench_step [--threads N] [--steps N] [--model mlp|gpt] [--mode MODE[,MODE...]] [--width C] "
                            "[--context T] [--layers L] [--batch B] [--warmup N]\n");
            return 2;
        }
    }
    if (steps < 1) steps = 1;
    if (g_warmup < 0) g_warmup = 0;
    if (nsel > 0) {
        double pm, ms[4];
        vt_mode mm[4];
        int k;
        for (k = 0; k < nsel; k++) mm[k] = modes[sel[k]];
        median_ms(only_model == 1, mm, nsel, threads, steps, ms, &pm);
        for (k = 0; k < nsel; k++)
            printf("%s %s: %.2f ms per step (median of %d)\n", only_model == 1 ? "gpt" : "mlp", mode_names[sel[k]], ms[k], steps);
        return 0;
    }
    printf("%-28s %10s %10s %10s %10s %10s %10s\n", "model", "verified", "round-only", "fp64", "native", "ver/fp64", "ver/native");
    for (gpt = 0; gpt < 2; gpt++) {
        double pm = 0, t[4], v, r, f, n;
        char name[64];
        snprintf(name, sizeof name, "gpt L%d C%d T%d B%d", g_layers, g_width, g_context, g_batch);
        if (only_model >= 0 && gpt != only_model) continue;
        median_ms(gpt, modes, 4, threads, steps, t, &pm);
        v = t[0]; r = t[1]; f = t[2]; n = t[3];
        printf("%-28s %8.2fms %8.2fms %8.2fms %8.2fms %10.2f %10.2f   (%.1f entries per million)\n",
               gpt ? name : "mlp 64-128-10 B64", v, r, f, n, v / f, v / n, pm);
    }
    return 0;
}
