/* bench/gpu_step.c - one GPT-2 124M training step on the GPU, per mode.

   GPT-2 124M (vocab 50257, context 1024, 12 layers, 12 heads, width 768),
   batch 8, sequences of 1024: one training step (forward, backward, gradient
   clipping, AdamW, every rounding point, the log chunk built in memory) in
   each mode, the median of --steps after --warmup. Then, in verified mode:
   log bytes per step, the rounding kernels' time against the device's copy
   bandwidth (the rounding points are memory-bound: they read x and e and
   write x), and the time to hash the whole training state on the device (a
   step's commitment).

     build/bench_gpu_step                  GPU 0, the sizes above
     build/bench_gpu_step --emu --small    the emulator, a tiny model (checks the bench runs)
   Options: --device N, --steps N, --warmup N, --modes verified,round_only,fp64,native,
   --layers --width --heads --vocab --T --B. The last line, "RESULT ...", is
   for tests/gpu/run.sh. Results go to bench/RESULTS.md by hand, with the
   date and the GPU. */
#define VTRAIN_IMPLEMENTATION
#define VTRAIN_CUDA
#define VTRAIN_CUDA_EMU
#include "../vtrain.h"
#include "../examples/gpt2rand.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

typedef struct { double med, mn, mx, log_bytes, entries, values, round_ms, round_gb, digest_ms; int ok; } mode_res;

static void sync_dev(vt_ctx *c) { vt__cu *s = vt__cus(c); s->dev->sync(s); }
static double g_nparams; /* counted in the first mode's context (setting up GPT-2 124M takes seconds) */

static mode_res run_mode(gpt2rand *a, vt_mode mode, int device, int warmup, int steps) {
    mode_res r;
    vt_desc d = vt_desc_default();
    vt_ctx *c;
    double *t = (double *)malloc(sizeof(double) * (size_t)(steps + 1));
    vt_log_stats s0, s1;
    int k;
    memset(&r, 0, sizeof r);
    d.backend = VT_BACKEND_CUDA;
    d.device = device;
    d.mode = mode;
    d.log_memory = mode == VT_MODE_VERIFIED; /* the log chunk is built every step (no file) */
    c = vt_create(&d);
    if (!c) { printf("%s: %s\n", vt_mode_name(mode), vt_last_error()); free(t); return r; }
    gpt2rand_setup(c, a);
    if (!g_nparams) g_nparams = (double)vt_param_numel(c);
    for (k = 0; k < warmup + steps && vt_status_of(c) == VT_OK; k++) {
        double t0;
        if (k == warmup) vt_log_stats_get(c, &s0);
        sync_dev(c);
        t0 = vt__now();
        vt_step_begin(c);
        gpt2rand_step(c, k, a);
        vt_step_end(c);
        sync_dev(c);
        if (k >= warmup) t[k - warmup] = vt__now() - t0;
        if (k == 0) printf("  %s step 0: loss %.4f (%.1f s, first step allocates)\n", vt_mode_name(mode), vt_last_loss(c), vt__now() - t0);
    }
    if (vt_status_of(c) != VT_OK) {
        printf("%s: %s\n", vt_mode_name(mode), vt_error_message(c));
        vt_destroy(c);
        free(t);
        return r;
    }
    vt_log_stats_get(c, &s1);
    qsort(t, (size_t)steps, sizeof(double), cmp_d);
    r.med = 1e3 * t[steps / 2];
    r.mn = 1e3 * t[0];
    r.mx = 1e3 * t[steps - 1];
    r.log_bytes = (double)(s1.bytes - s0.bytes) / steps;
    r.entries = (double)(s1.entries - s0.entries) / steps;
    r.values = (double)(s1.values - s0.values) / steps;
    r.ok = 1;
    if (mode == VT_MODE_VERIFIED) {
        /* the rounding points alone: the device synchronised before each */
        vt__cu *cs = vt__cus(c);
        unsigned char dg[32];
        double t0;
        int nprof = 3;
        cs->profile = 1;
        cs->round_seconds = cs->round_bytes = 0;
        for (k = 0; k < nprof; k++) {
            vt_step_begin(c);
            gpt2rand_step(c, warmup + steps + k, a);
            vt_step_end(c);
        }
        cs->profile = 0;
        r.round_ms = 1e3 * cs->round_seconds / nprof;
        r.round_gb = cs->round_bytes / nprof / 1e9;
        sync_dev(c);
        t0 = vt__now();
        vt_weights_digest(c, dg);
        r.digest_ms = 1e3 * (vt__now() - t0);
    }
    vt_destroy(c);
    free(t);
    return r;
}

/* the device's copy bandwidth: bytes read plus written per second */
static double copy_bandwidth(int device) {
    vt_desc d = vt_desc_default();
    vt_ctx *c;
    vt__cu *s;
    size_t n = (size_t)1 << 30;
    void *a, *b;
    double t0, bw;
    int k;
    d.backend = VT_BACKEND_CUDA;
    d.device = device;
    c = vt_create(&d);
    if (!c) return 0;
    s = vt__cus(c);
    if (device == VT_CUDA_EMULATOR) n >>= 6;
    a = s->dev->alloc(s, n);
    b = s->dev->alloc(s, n);
    if (!a || !b) { vt_destroy(c); return 0; }
    s->dev->copy(s, b, a, n, 2);
    s->dev->sync(s);
    t0 = vt__now();
    for (k = 0; k < 5; k++) s->dev->copy(s, b, a, n, 2);
    s->dev->sync(s);
    bw = 2.0 * 5 * (double)n / (vt__now() - t0);
    s->dev->release(s, a);
    s->dev->release(s, b);
    vt_destroy(c);
    return bw;
}

int main(int argc, char **argv) {
    gpt2rand a;
    int device = 0, warmup = 3, steps = 10, i, m;
    const char *modes = "verified,round_only,fp64,native";
    static const char *names[4] = {"verified", "round_only", "fp64", "native"};
    static const vt_mode mm[4] = {VT_MODE_VERIFIED, VT_MODE_ROUND_ONLY, VT_MODE_FP64, VT_MODE_NATIVE};
    mode_res res[4];
    double bw;
    memset(&a, 0, sizeof a);
    memset(res, 0, sizeof res);
    a.cfg.vocab = 50257; a.cfg.context = 1024; a.cfg.layers = 12; a.cfg.heads = 12; a.cfg.width = 768;
    a.B = 8; a.T = 1024;
    for (i = 1; i < argc; i++) {
        const char *o = argv[i], *v = i + 1 < argc ? argv[i + 1] : "0";
        if (!strcmp(o, "--emu")) device = VT_CUDA_EMULATOR;
        else if (!strcmp(o, "--small")) {
            a.cfg.vocab = 100; a.cfg.context = 32; a.cfg.layers = 2; a.cfg.heads = 4; a.cfg.width = 64;
            a.B = 2; a.T = 32; warmup = 1; steps = 3;
        } else if (!strcmp(o, "--device")) { device = atoi(v); i++; }
        else if (!strcmp(o, "--steps")) { steps = atoi(v); i++; }
        else if (!strcmp(o, "--warmup")) { warmup = atoi(v); i++; }
        else if (!strcmp(o, "--modes")) { modes = v; i++; }
        else if (!strcmp(o, "--layers")) { a.cfg.layers = atoi(v); i++; }
        else if (!strcmp(o, "--width")) { a.cfg.width = atoi(v); i++; }
        else if (!strcmp(o, "--heads")) { a.cfg.heads = atoi(v); i++; }
        else if (!strcmp(o, "--vocab")) { a.cfg.vocab = atoi(v); i++; }
        else if (!strcmp(o, "--T")) { a.T = atoi(v); a.cfg.context = a.T; i++; }
        else if (!strcmp(o, "--B")) { a.B = atoi(v); i++; }
        else { printf("unknown option %s (see the top of bench/gpu_step.c)\n", o); return 2; }
    }
    if (steps < 1) steps = 1;
    {
        vt_desc d = vt_desc_default();
        vt_ctx *c;
        d.backend = VT_BACKEND_CUDA;
        d.device = device;
        c = vt_create(&d);
        if (!c) { printf("skip: no CUDA device (%s)\n", vt_last_error()); return 0; }
        printf("device: %s (compute capability %d.%d), driver CUDA %d.%d\n", vt__cus(c)->devname, vt__cus(c)->cc_major,
               vt__cus(c)->cc_minor, vt__cus(c)->driver_version / 1000, (vt__cus(c)->driver_version % 1000) / 10);
        vt_destroy(c);
    }
    printf("model: vocab %d, context %d, %d layers, %d heads, width %d; batch %d x %d tokens; median of %d steps after %d\n",
           a.cfg.vocab, a.cfg.context, a.cfg.layers, a.cfg.heads, a.cfg.width, a.B, a.T, steps, warmup);
    for (m = 0; m < 4; m++) {
        if (!strstr(modes, names[m])) continue;
        res[m] = run_mode(&a, mm[m], device, warmup, steps);
        if (!res[m].ok) continue;
        printf("%-11s median %8.1f ms  (min %.1f, max %.1f)", names[m], res[m].med, res[m].mn, res[m].mx);
        if (mm[m] == VT_MODE_VERIFIED)
            printf("  log %.0f bytes/step, %.0f entries/step (%.1f per million rounded values)", res[m].log_bytes, res[m].entries,
                   res[m].values > 0 ? 1e6 * res[m].entries / res[m].values : 0);
        printf("\n");
    }
    printf("parameters: %.1fM\n", g_nparams / 1e6);
    bw = copy_bandwidth(device);
    if (res[0].ok) {
        printf("rounding points (verified): %.2f ms/step, their kernels move %.2f GB/step: %.0f GB/s; device copy %.0f GB/s\n",
               res[0].round_ms, res[0].round_gb, res[0].round_ms > 0 ? res[0].round_gb / (res[0].round_ms / 1e3) : 0, bw / 1e9);
        printf("state digest (the commitment's hash of weights and moments, on the device): %.2f ms\n", res[0].digest_ms);
    }
    printf("RESULT verified_ms=%.2f round_only_ms=%.2f fp64_ms=%.2f native_ms=%.2f log_bytes=%.0f entries=%.0f round_ms=%.2f "
           "round_gbps=%.1f copy_gbps=%.1f digest_ms=%.2f\n", res[0].med, res[1].med, res[2].med, res[3].med, res[0].log_bytes,
           res[0].entries, res[0].round_ms, res[0].round_ms > 0 ? res[0].round_gb / (res[0].round_ms / 1e3) : 0, bw / 1e9,
           res[0].digest_ms);
    gpt2rand_free(&a);
    return 0;
}
