/* tests/gpu/audit.c - train on one backend, audit on another, step by step.

     build/gpu_audit MODEL TRAIN AUDIT STEPS [T B]
     build/gpu_audit probe       GPU 0's name, or why there is none (exit 3)
       MODEL  mlp (digits), cnn (the digits CNN: convolutions, batch norm,
              max pooling; examples/digitscnn.h), chargpt (4 layers, width
              128, the KJV text) or gpt2 (GPT-2's shape: 12 layers, width 768,
              12 heads, vocab 50257, context 1024; sequences of T, batch B: 64
              and 2 by default)
       TRAIN, AUDIT  cpu, gpu (device 0) or emu (the emulator)

   The trainer's log chunk of each step goes to the auditor in memory; after
   every step both state digests (weights and AdamW moments) and both chunk
   hashes are printed and compared. Exit status 0 when every step is
   identical. tests/gpu/run.sh runs it on a GPU machine. On the emulator
   with gpt2, set VTRAIN_EMU_GUARD=0: the memory guard's mprotect calls
   over gigabytes of device memory make it several times slower. */
#define VTRAIN_IMPLEMENTATION
#define VTRAIN_CUDA
#define VTRAIN_CUDA_EMU
#include "../../vtrain.h"
#include "../../examples/chargpt.h"
#include "../../examples/digitsmlp.h"
#include "../../examples/digitscnn.h"
#include "../../examples/gpt2rand.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static vt_digits g_digits;

static int backend(const char *s, vt_desc *d) {
    if (!strcmp(s, "cpu")) return 1;
    d->backend = VT_BACKEND_CUDA;
    if (!strcmp(s, "gpu")) { d->device = 0; return 1; }
    if (!strcmp(s, "emu")) { d->device = VT_CUDA_EMULATOR; return 1; }
    return 0;
}

int main(int argc, char **argv) {
    vt_desc dt = vt_desc_default(), da = vt_desc_default();
    vt_program p;
    void *ua, *ub;
    digitsmlp ma, mb;
    digitscnn na, nb;
    chargpt ca, cb;
    gpt2rand ga, gb;
    vt_ctx *t, *a;
    int64_t steps, s, same = 0;
    double t0 = vt__now(), tt = 0, ta = 0;
    if (argc == 2 && !strcmp(argv[1], "probe")) { /* is there a GPU? (tests/gpu/run.sh) */
        dt.backend = VT_BACKEND_CUDA;
        dt.device = 0;
        t = vt_create(&dt);
        if (!t) { printf("no CUDA device: %s\n", vt_last_error()); return 3; }
        printf("GPU 0: %s (compute capability %d.%d, %.1f GiB), driver CUDA %d.%d\n", vt__cus(t)->devname, vt__cus(t)->cc_major,
               vt__cus(t)->cc_minor, (double)vt__cus(t)->total_mem / (1 << 30), vt__cus(t)->driver_version / 1000,
               (vt__cus(t)->driver_version % 1000) / 10);
        vt_destroy(t);
        return 0;
    }
    if (argc < 5 || !backend(argv[2], &dt) || !backend(argv[3], &da)) {
        printf("usage: %s mlp|cnn|chargpt|gpt2 cpu|gpu|emu cpu|gpu|emu STEPS [T B]\n       %s probe\n", argv[0], argv[0]);
        return 2;
    }
    steps = atoll(argv[4]);
    memset(&ca, 0, sizeof ca);
    memset(&ga, 0, sizeof ga);
    if (!strcmp(argv[1], "mlp")) {
        if (vt_digits_load("data/digits.csv", &g_digits) != VT_OK) { printf("%s\n", vt_last_error()); return 1; }
        ma = digitsmlp_new(&g_digits);
        ma.act = 2; ma.commit = 1; ma.clip = 5.0; /* gelu: the libm bounds too */
        mb = ma;
        p = digitsmlp_program(&ma);
        ua = &ma; ub = &mb;
    } else if (!strcmp(argv[1], "cnn")) {
        if (vt_digits_load("data/digits.csv", &g_digits) != VT_OK) { printf("%s\n", vt_last_error()); return 1; }
        na = digitscnn_new(&g_digits);
        na.commit = 1; na.steps = steps;
        nb = na;
        p = digitscnn_program(&na);
        ua = &na; ub = &nb;
    } else if (!strcmp(argv[1], "chargpt")) {
        if (chargpt_load(&ca, "data/kjv_nt.txt") != VT_OK) { printf("%s\n", vt_last_error()); return 1; }
        ca.steps = steps;
        cb = ca;
        p = chargpt_program(&ca);
        ua = &ca; ub = &cb;
    } else if (!strcmp(argv[1], "gpt2")) {
        ga.cfg.vocab = 50257; ga.cfg.context = 1024; ga.cfg.layers = 12; ga.cfg.heads = 12; ga.cfg.width = 768;
        ga.T = argc > 5 ? atoi(argv[5]) : 64;
        ga.B = argc > 6 ? atoi(argv[6]) : 2;
        ga.lr_min = 6e-5;
        gb = ga;
        p.setup = gpt2rand_setup; p.step = gpt2rand_step;
        ua = &ga; ub = &gb;
    } else {
        printf("unknown model %s\n", argv[1]);
        return 2;
    }
    dt.log_memory = da.log_memory = 1;
    da.role = VT_ROLE_AUDIT;
    t = vt_create(&dt);
    a = vt_create(&da);
    if (!t || !a) { printf("vt_create: %s\n", vt_last_error()); return 1; }
    p.setup(t, ua);
    p.setup(a, ub);
    if (vt_status_of(t) != VT_OK || vt_status_of(a) != VT_OK) {
        printf("setup: %s / %s\n", vt_error_message(t), vt_error_message(a));
        return 1;
    }
    printf("%s: trained on %s, audited on %s, %lld steps (setup %.1f s)\n", argv[1], argv[2], argv[3], (long long)steps, vt__now() - t0);
    printf("step  loss       trainer state digest  auditor state digest   chunk  entries corrections\n");
    for (s = 0; s < steps; s++) {
        const unsigned char *ch;
        size_t n;
        unsigned char d1[32], d2[32], h1[32], h2[32];
        char x1[65], x2[65];
        vt_log_stats st;
        double q = vt__now();
        vt_step_begin(t); p.step(t, s, ua); vt_step_end(t);
        tt += vt__now() - q;
        if (vt_status_of(t) != VT_OK) { printf("trainer, step %lld: %s\n", (long long)s, vt_error_message(t)); break; }
        vt_step_chunk(t, &ch, &n);
        vt_feed_chunk(a, ch, n);
        q = vt__now();
        vt_step_begin(a); p.step(a, s, ub); vt_step_end(a);
        ta += vt__now() - q;
        if (vt_status_of(a) != VT_OK) { printf("auditor, step %lld: %s\n", (long long)s, vt_error_message(a)); break; }
        vt_weights_digest(t, d1);
        vt_weights_digest(a, d2);
        vt_step_chunk_sha(t, h1);
        vt_step_chunk_sha(a, h2);
        vt_hex(d1, 16, x1);
        vt_hex(d2, 16, x2);
        vt_log_stats_get(a, &st);
        printf("%4lld  %-9.5f  %s  %s  %6zu  %6lld  %6lld  %s\n", (long long)s, vt_last_loss(t), x1, x2, n, (long long)st.entries,
               (long long)st.corrections, memcmp(d1, d2, 32) || memcmp(h1, h2, 32) ? "DIFFERENT" : "identical");
        if (memcmp(d1, d2, 32) || memcmp(h1, h2, 32)) break;
        same++;
    }
    printf("%s %s->%s: %lld of %lld steps identical; trainer %.3f s/step, auditor %.3f s/step\n", argv[1], argv[2], argv[3],
           (long long)same, (long long)steps, tt / (double)(s > 0 ? s : 1), ta / (double)(s > 0 ? s : 1));
    vt_destroy(t);
    vt_destroy(a);
    if (!strcmp(argv[1], "mlp") || !strcmp(argv[1], "cnn")) vt_digits_free(&g_digits);
    if (!strcmp(argv[1], "chargpt")) { free(cb.x); free(cb.y); chargpt_free(&ca); }
    if (!strcmp(argv[1], "gpt2")) { gpt2rand_free(&ga); gpt2rand_free(&gb); }
    return same == steps ? 0 : 1;
}
