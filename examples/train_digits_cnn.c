/* train_digits_cnn.c - a small CNN (two convolutions with batch norm, max
   pooling, a linear head; examples/digitscnn.h) on the UCI handwritten
   digits (8x8), trained verifiably and audited in another order.

   make build/train_digits_cnn && ./build/train_digits_cnn [--steps N]
       [--order ORDER] [--audit-order ORDER] [--mode verified|round-only|native|fp64]
       [--log FILE] [--no-audit] [--data FILE]

   Trains on 1,437 images and reports the accuracy on the 360 held out (the
   same split as train_digits). With --log the run writes its rounding log
   and commitments; then (unless --no-audit) an auditor replays the log in
   --audit-order and checks every step, batch-norm running statistics
   included, against the trainer's commitments. */
#define VTRAIN_IMPLEMENTATION
#include "../vtrain.h"
#include "digitscnn.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int usage(const char *argv0) {
    fprintf(stderr, "usage: %s [--steps N] [--order ORDER] [--audit-order ORDER] [--mode M] [--log FILE] [--no-audit] [--data FILE]\n", argv0);
    return 2;
}

int main(int argc, char **argv) {
    vt_digits data;
    digitscnn a;
    vt_desc d = vt_desc_default();
    vt_program prog;
    vt_ctx *c;
    vt_report r;
    vt_order ao;
    const char *path = "data/digits.csv";
    int32_t *perm;
    int i, audit = 1, ntest;
    int64_t steps = 400;
    vt_order_parse(&ao, "threads:1,chaos:5,nofma");
    for (i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--steps") && i + 1 < argc) steps = atoll(argv[++i]);
        else if (!strcmp(argv[i], "--order") && i + 1 < argc) {
            if (vt_order_parse(&d.order, argv[++i]) != VT_OK) { fprintf(stderr, "%s\n", vt_last_error()); return 2; }
        } else if (!strcmp(argv[i], "--audit-order") && i + 1 < argc) {
            if (vt_order_parse(&ao, argv[++i]) != VT_OK) { fprintf(stderr, "%s\n", vt_last_error()); return 2; }
        } else if (!strcmp(argv[i], "--mode") && i + 1 < argc) {
            const char *m = argv[++i];
            if (!strcmp(m, "native")) d.mode = VT_MODE_NATIVE;
            else if (!strcmp(m, "round-only")) d.mode = VT_MODE_ROUND_ONLY;
            else if (!strcmp(m, "fp64")) d.mode = VT_MODE_FP64;
            else if (!strcmp(m, "verified")) d.mode = VT_MODE_VERIFIED;
            else return usage(argv[0]);
        } else if (!strcmp(argv[i], "--log") && i + 1 < argc) d.log_path = argv[++i];
        else if (!strcmp(argv[i], "--no-audit")) audit = 0;
        else if (!strcmp(argv[i], "--data") && i + 1 < argc) path = argv[++i];
        else return usage(argv[0]);
    }
    if (steps < 1) return usage(argv[0]);
    if (vt_digits_load(path, &data) != VT_OK) { fprintf(stderr, "error: %s\n", vt_last_error()); return 1; }
    perm = (int32_t *)malloc(sizeof(int32_t) * (size_t)data.n);
    if (!perm) return 1;
    for (i = 0; i < data.n; i++) perm[i] = (int32_t)vt_shuffle(7, 0, (uint64_t)i, (uint64_t)data.n);
    ntest = data.n / 5;
    a = digitscnn_new(&data);
    a.perm = perm;
    a.ntrain = data.n - ntest;
    a.steps = steps;
    a.commit = 1;
    c = vt_create(&d);
    if (!c) { fprintf(stderr, "error: %s\n", vt_last_error()); return 1; }
    prog = digitscnn_program(&a);
    prog.setup(c, &a);
    printf("digits cnn: %d train, %d test; width %d, batch %d; mode %s\n", a.ntrain, ntest, a.width, a.batch, vt_mode_name(d.mode));
    vt_run_ctx(c, &prog, steps, &r);
    if (r.status != VT_OK) { fprintf(stderr, "error: %s\n", r.message); vt_destroy(c); return 1; }
    {
        char hex[65];
        vt_hex(r.digest, 32, hex);
        printf("%lld steps in %.2f s (%.2f ms/step), last loss %.4f; state %.16s...\n", (long long)r.steps, r.seconds,
               1e3 * r.seconds / (double)r.steps, r.last_loss, hex);
        printf("log: %lld entries over %lld rounded values (%.2f per million), %lld exact products, %lld bytes\n",
               (long long)r.log.entries, (long long)r.log.values, 1e6 * (double)r.log.entries / (double)(r.log.values ? r.log.values : 1),
               (long long)r.log.exact, (long long)r.log.bytes);
    }
    printf("train accuracy %.2f%%, test accuracy %.2f%%\n", 100 * digitscnn_accuracy(c, &a, 0, a.ntrain),
           100 * digitscnn_accuracy(c, &a, a.ntrain, ntest));
    vt_destroy(c);
    if (audit && d.log_path && d.mode == VT_MODE_VERIFIED) {
        char os[96];
        digitscnn b = digitscnn_new(&data);
        b.perm = perm; b.ntrain = a.ntrain; b.steps = steps; b.commit = 1;
        d.role = VT_ROLE_AUDIT;
        d.order = ao;
        vt_order_string(&ao, os, sizeof os);
        prog = digitscnn_program(&b);
        vt_run(&d, &prog, steps, &r);
        printf("audit in order %s: %s\n", os, r.status == VT_OK ? "every step identical (weights, moments, running statistics)" : r.message);
        if (r.status != VT_OK) return 1;
    }
    vt_digits_free(&data);
    free(perm);
    return 0;
}
