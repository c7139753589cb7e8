/* train_resnet.c - a CIFAR ResNet (18 or 50, CIFAR form) trained verifiably
   into a transcript, as the two source papers train theirs.

   make build/train_resnet
   ./build/train_resnet --data DIR [--model resnet18|resnet50] [--width W]
       [--batch B] [--steps N] [--lr LR] [--out RUN] [--ckpt-every K]
       [--order ORDER] [--audit ORDER]

   DIR holds CIFAR-10's binary files (data_batch_1.bin ... data_batch_5.bin,
   https://www.cs.toronto.edu/~kriz/cifar.html); --data synthetic trains on
   CIFAR-shaped images made here instead (examples/cnnprog.h). The run is a
   transcript in RUN (default build/resnet_run): manifest, rounding log,
   per-step commitments, checkpoints, Merkle root, as `vtrain train` writes;
   `vtrain audit RUN` replays it, and --audit ORDER replays it here at the
   end. Defaults: resnet18, width 64, batch 64, 300 steps, lr 0.1. */
#define VTRAIN_IMPLEMENTATION
#include "../vtrain.h"
#include "digitscnn.h"
#include "cnnprog.h"

static cnnprog P;

static void on_step(vt_ctx *c, int64_t s, void *u) {
    (void)u;
    if (s % 10 == 0 || s == P.steps - 1) { printf("  step %5lld  loss %.4f\n", (long long)s, vt_last_loss(c)); fflush(stdout); }
}

static int usage(void) {
    fprintf(stderr, "usage: train_resnet --data DIR|synthetic [--model resnet18|resnet50] [--width W] [--batch B] [--steps N] [--lr LR]\n"
                    "                    [--out RUN] [--ckpt-every K] [--order ORDER] [--audit ORDER]\n");
    return 2;
}

int main(int argc, char **argv) {
    vt_desc d = vt_desc_default();
    vt_program prog;
    vt_report r;
    const char *out = "build/resnet_run", *audit = NULL;
    char why[200], hex[65];
    int i;
    memset(&P, 0, sizeof P);
    snprintf(P.model, sizeof P.model, "resnet18");
    P.width = 64; P.batch = 64; P.steps = 300; P.lr = 0.1;
    for (i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!v) return usage();
        i++;
        if (!strcmp(a, "--data")) snprintf(P.data, sizeof P.data, "%s", v);
        else if (!strcmp(a, "--model")) snprintf(P.model, sizeof P.model, "%s", v);
        else if (!strcmp(a, "--width")) P.width = atoi(v);
        else if (!strcmp(a, "--batch")) P.batch = atoi(v);
        else if (!strcmp(a, "--steps")) P.steps = atoll(v);
        else if (!strcmp(a, "--lr")) P.lr = atof(v);
        else if (!strcmp(a, "--out")) out = v;
        else if (!strcmp(a, "--ckpt-every")) d.ckpt_every = atoi(v);
        else if (!strcmp(a, "--audit")) audit = v;
        else if (!strcmp(a, "--order")) { if (vt_order_parse(&d.order, v) != VT_OK) { fprintf(stderr, "error: %s\n", vt_last_error()); return 2; } }
        else return usage();
    }
    if (!P.data[0]) { fprintf(stderr, "error: --data DIR (a CIFAR-10 directory) or --data synthetic is needed\n"); return usage(); }
    if (!strcmp(P.model, "cnn") || !cnnprog_check(&P, why, sizeof why)) {
        fprintf(stderr, "error: %s\n", strcmp(P.model, "cnn") ? why : "--model is resnet18 or resnet50");
        return 2;
    }
    if (!cnnprog_load(&P)) return 1;
    printf("%s (width %d) on %d %s images, batch %d, %lld steps into '%s'\n", P.model, P.width, P.cifar.n,
           strcmp(P.data, "synthetic") ? "CIFAR-10" : "synthetic CIFAR-shaped", P.batch, (long long)P.steps, out);
    d.transcript = out;
    d.manifest = cnnprog_manifest(&P);
    prog = cnnprog_program(&P);
    prog.on_step = on_step;
    vt_run(&d, &prog, P.steps, &r);
    if (r.status != VT_OK) { fprintf(stderr, "error: %s\n", r.message); cnnprog_free(&P); return 1; }
    vt_hex(r.digest, 32, hex);
    printf("done: %lld steps in %.1f s (%.2f s/step), final state %.16s...; log %.0f bytes per step, %lld entries over %lld values\n",
           (long long)r.steps, r.seconds, r.seconds / (double)r.steps, hex, (double)r.log.bytes / (double)r.steps,
           (long long)r.log.entries, (long long)r.log.values);
    if (audit) {
        d.role = VT_ROLE_AUDIT;
        if (vt_order_parse(&d.order, audit) != VT_OK) { fprintf(stderr, "error: %s\n", vt_last_error()); return 2; }
        prog.on_step = NULL;
        vt_run(&d, &prog, P.steps, &r);
        printf("audit in order %s: %s\n", audit, r.status == VT_OK ? "every step identical, Merkle root verified" : r.message);
        if (r.status != VT_OK) { cnnprog_free(&P); return 1; }
    }
    cnnprog_free(&P);
    return 0;
}
