/* bench/logsize.c - rounding-log size per bound mode, beside the paper's
   dense encoding.

   make bench-logsize
   ./build/bench_logsize [--steps N]

   The digits MLP (64-128-10, batch 64) and the character GPT of `make demo`
   (3 layers, width 96, 4 heads, context 64, batch 8) trained for N steps in
   each bound mode: sound, probabilistic (lambda 12) and calibrated (measured
   on two chaos orders over 5 steps, margin 8). For each: log bytes per
   step, entries per million rounded values, and the size of the paper's
   dense encoding of the same run (1.6 bits for every rounded value) as a
   ratio. Every calibrated run is then audited under the two orders it was
   calibrated on, and every sound and probabilistic run under an order it
   never saw; the column "replays" says whether all audits matched. */
#define VTRAIN_IMPLEMENTATION
#include "../vtrain.h"
#include "../examples/chargpt.h"
#include "../examples/digitsmlp.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void run(const char *name, const vt_program *p, int64_t steps) {
    static const char *modes[3] = {"sound", "probabilistic", "calibrated"};
    int m;
    for (m = 0; m < 3; m++) {
        vt_desc d = vt_desc_default();
        vt_calib t;
        vt_report tr, r;
        vt_order o[2];
        const char *aud[2] = {"chaos:21,threads:1", "chaos:22,threads:2"};
        int k, ok = 1;
        memset(&t, 0, sizeof t);
        vt_order_parse(&d.order, "threads:2");
        if (m == 2) {
            vt_order_parse(&o[0], aud[0]);
            vt_order_parse(&o[1], aud[1]);
            if (vt_calibrate(&d, p, 5, o, 2, 8.0, &t) != VT_OK) { printf("calibration failed: %s\n", vt_last_error()); return; }
            d.calib = &t;
        } else {
            aud[0] = "chaos:31,threads:1";
            aud[1] = "threads:1,block:11";
        }
        d.bound = (vt_bound_mode)m;
        d.log_path = "build/bench_logsize.vtlog";
        vt_run(&d, p, steps, &tr);
        d.role = VT_ROLE_AUDIT;
        d.calib = NULL;
        for (k = 0; k < 2; k++) {
            vt_order_parse(&d.order, aud[k]);
            vt_run(&d, p, steps, &r);
            if (r.status != VT_OK) printf("  audit under %s failed: %s\n", aud[k], r.message);
            ok &= r.status == VT_OK;
        }
        printf("%-22s %-14s %12.0f %12.2f %14.0f %10.0fx  %s\n", name, modes[m], (double)tr.log.bytes / (double)steps,
               1e6 * (double)tr.log.entries / (double)tr.log.values, 0.2 * (double)tr.log.values / (double)steps,
               0.2 * (double)tr.log.values / (double)tr.log.bytes, ok ? "yes" : "NO");
        vt_calib_free(&t);
    }
}

int main(int argc, char **argv) {
    int64_t steps = 100;
    int i;
    chargpt g;
    vt_program p;
    vt_digits digits;
    digitsmlp mlp;
    for (i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--steps") && i + 1 < argc) steps = atoll(argv[++i]);
    if (vt_digits_load("data/digits.csv", &digits) != VT_OK || chargpt_load(&g, "data/kjv_nt.txt") != VT_OK) {
        fprintf(stderr, "error: %s\n", vt_last_error());
        return 1;
    }
    printf("%-22s %-14s %12s %12s %14s %11s  %s\n", "model", "bound", "bytes/step", "entries/M", "dense B/step", "smaller", "replays");
    mlp = digitsmlp_new(&digits);
    p = digitsmlp_program(&mlp);
    run("mlp 64-128-10 B64", &p, steps);
    g.cfg.layers = 3; g.cfg.heads = 4; g.cfg.width = 96; g.T = 64; g.B = 8; g.steps = steps;
    p = chargpt_program(&g);
    run("gpt L3 C96 T64 B8", &p, steps);
    vt_digits_free(&digits);
    chargpt_free(&g);
    return 0;
}
