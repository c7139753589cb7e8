/* demo.c - train a character GPT, then audit it as another machine would.

   make demo      (about two minutes on two cores)

   1. The trainer trains a GPT-2-shaped character model on the King James New
      Testament for a few hundred steps (binary64 compute, binary32 state,
      the default reduction order, 2 threads) and writes its rounding log and
      a commitment (SHA-256 of weights and optimizer state) for every step.
   2. The auditor replays the run from the log on "other hardware": one
      thread and the chaos order, which permutes and re-blocks every sum,
      switches fma on and off and moves libm results by a few ulps. It
      compares its state with the trainer's commitment at every step.
   3. The same pair of runs in native binary32 mode, without rounding points
      or log, side by side: how soon and how far they drift apart. */
#define VTRAIN_IMPLEMENTATION
#include "../vtrain.h"
#include "chargpt.h"

static void on_step(vt_ctx *c, int64_t s, void *u) {
    chargpt *a = (chargpt *)u;
    if (s % 50 == 0 || s == a->steps - 1) {
        vt_log_stats st;
        vt_log_stats_get(c, &st);
        printf("  step %4lld  loss %.4f  log %7.1f KB\n", (long long)s, vt_last_loss(c), st.bytes / 1024.0);
        fflush(stdout);
    }
}

int main(int argc, char **argv) {
    chargpt a;
    vt_desc d = vt_desc_default();
    vt_program p;
    vt_report tr, ar;
    const char *log = "build/demo.vtlog", *train_order = "threads:2", *audit_order = "threads:1,chaos:2026";
    int64_t steps = 300, s, first_diff = -1;
    char hex[65];
    int i;
    for (i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--steps") && i + 1 < argc) steps = atoll(argv[++i]);
    if (chargpt_load(&a, "data/kjv_nt.txt") != VT_OK) { fprintf(stderr, "error: %s\n", vt_last_error()); return 1; }
    a.cfg.layers = 3; a.cfg.heads = 4; a.cfg.width = 96; a.T = 64; a.B = 8; a.steps = steps;
    p = chargpt_program(&a);
    p.on_step = on_step;
    printf("vtrain %s demo: a %d-layer character GPT (width %d, context %d, batch %d) on data/kjv_nt.txt\n\n", vt_version(),
           a.cfg.layers, a.cfg.width, a.T, a.B);

    /* 1. train */
    printf("1. train: verified mode, order %s, %lld steps, log %s\n", train_order, (long long)steps, log);
    d.log_path = log;
    vt_order_parse(&d.order, train_order);
    if (vt_run(&d, &p, steps, &tr) != VT_OK) { fprintf(stderr, "error: %s\n", tr.message); return 1; }
    vt_hex(tr.digest, 32, hex);
    printf("   %lld steps in %.1f s; final state %.16s...\n\n", (long long)tr.steps, tr.seconds, hex);

    /* 2. audit on "other hardware" */
    printf("2. audit: order %s, replaying from the log\n", audit_order);
    p.on_step = NULL;
    d.role = VT_ROLE_AUDIT;
    vt_order_parse(&d.order, audit_order);
    vt_run(&d, &p, steps, &ar);
    vt_hex(ar.digest, 32, hex);
    printf("   (%.1f s)\n", ar.seconds);
    if (ar.status != VT_OK) {
        printf("   AUDIT FAILED at step %lld: %s\n", (long long)ar.first_bad_step, ar.message);
        return 1;
    }
    printf("   steps replayed:               %lld, every step's state equal to the trainer's commitment\n", (long long)ar.steps);
    printf("   final state (SHA-256):        %s %s\n", hex, memcmp(ar.digest, tr.digest, 32) ? "DIFFERS" : "(same as trainer)");
    printf("   log bytes per step:           %.0f (dense 1.6-bit encoding of the paper: %.0f, %.0fx more)\n",
           (double)tr.log.bytes / (double)steps, 0.2 * (double)tr.log.values / (double)steps,
           0.2 * (double)tr.log.values / (double)tr.log.bytes);
    printf("   entries per million values:   %.1f (%lld entries over %lld rounded values)\n",
           1e6 * (double)tr.log.entries / (double)tr.log.values, (long long)tr.log.entries, (long long)tr.log.values);
    printf("   entries that corrected the auditor's own rounding: %lld\n", (long long)ar.log.corrections);
    printf("   trainer's freedom:            %.1f entries per step with more than one plausible value, %.1f bits per step\n\n",
           (double)ar.log.multi / (double)steps, ar.log.freedom_bits / (double)steps);

    /* 3. native: the same pair of runs without rounding points, in lockstep */
    printf("3. the same two runs in native binary32 mode (no rounding points, no log):\n");
    {
        vt_desc dn = vt_desc_default();
        vt_ctx *c1, *c2;
        chargpt b = a;
        vt_program p1, p2;
        double maxd = 0;
        int64_t nd;
        int firstp;
        double t0 = vt__now();
        dn.mode = VT_MODE_NATIVE;
        vt_order_parse(&dn.order, train_order);
        c1 = vt_create(&dn);
        vt_order_parse(&dn.order, audit_order);
        c2 = vt_create(&dn);
        b.x = b.y = NULL;
        p1 = chargpt_program(&a);
        p2 = chargpt_program(&b);
        p1.setup(c1, &a);
        p2.setup(c2, &b);
        for (s = 0; s < steps && vt_status_of(c1) == VT_OK && vt_status_of(c2) == VT_OK; s++) {
            unsigned char d1[32], d2[32];
            vt_step_begin(c1); p1.step(c1, s, &a); vt_step_end(c1);
            vt_step_begin(c2); p2.step(c2, s, &b); vt_step_end(c2);
            vt_weights_digest(c1, d1);
            vt_weights_digest(c2, d2);
            if (first_diff < 0 && memcmp(d1, d2, 32)) first_diff = s;
        }
        nd = vt_weights_compare(c1, c2, &maxd, &firstp);
        printf("   first step whose state differs: %lld\n", (long long)first_diff);
        printf("   after %lld steps: %lld of %lld state values differ, max |dw| = %.3g (first in '%s')\n", (long long)steps,
               (long long)nd, (long long)(3 * vt_param_numel(c1)), maxd, firstp >= 0 ? vt__state(c1, firstp)->name : "-");
        printf("   losses: %.6f vs %.6f (%.1f s)\n\n", vt_last_loss(c1), vt_last_loss(c2), vt__now() - t0);
        vt_destroy(c1);
        vt_destroy(c2);
        free(b.x);
        free(b.y);
    }
    printf("Verified training replays bit for bit under another order; native binary32 training does not.\n");
    chargpt_free(&a);
    return 0;
}
