/* bench/transcript.c - what a verifiable run costs beyond training: the
   transcript's bytes per step beside the weights, audit time over training
   time, the judge's time for one disputed step, and the dispute game's
   rounds for runs of 10^2, 10^4 and 10^6 steps.

   make bench-transcript
   ./build/bench_transcript [--steps N] [--data data/kjv_nt.txt] [--dir DIR]

   The program is the character GPT of examples/chargpt.h (4 layers, width
   128, context 64, batch 8). Training and the audits run one after another in
   this process on the same machine, with the same thread count; the auditor
   uses the default order (the replay's own cost) and then chaos:1 (every
   reduction permuted: the cost of emulating another machine). The dispute
   rounds use synthetic leaves (a real run of 10^6 steps would take weeks on
   this machine); the game code is the same. */
#define VTRAIN_IMPLEMENTATION
#include "../vtrain.h"
#include "../examples/chargpt.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static double file_bytes(const char *dir, const char *name) {
    char p[1024];
    struct stat st;
    snprintf(p, sizeof p, "%s/%s", dir, name);
    return stat(p, &st) == 0 ? (double)st.st_size : 0.0;
}

static double ckpt_bytes(const char *dir, int *count) {
    DIR *d = opendir(dir);
    struct dirent *e;
    double tot = 0;
    *count = 0;
    if (!d) return 0;
    while ((e = readdir(d)))
        if (!strncmp(e->d_name, "ckpt-", 5)) { tot += file_bytes(dir, e->d_name); (*count)++; }
    closedir(d);
    return tot;
}

/* the trainer answers every query from its leaves; returns rounds, or -1 if
   the game ends anywhere but step p */
static int play(const vt_leaf_info *tr, const vt_leaf_info *au, int64_t n, int64_t p) {
    unsigned char (*lv)[32] = (unsigned char (*)[32])malloc(32 * (size_t)n), root[32];
    vt_dispute g;
    int64_t lo, hi, i;
    for (i = 0; i < n; i++) memcpy(lv[i], tr[i].leaf, 32);
    vt_merkle_root((const unsigned char (*)[32])lv, n, root);
    free(lv);
    vt_dispute_begin(&g, au, n, root);
    while (vt_dispute_query(&g, &lo, &hi)) {
        vt_claim c;
        vt_dispute_answer(tr, n, lo, hi, &c);
        if (vt_dispute_receive(&g, &c) != VT_OK) break;
    }
    return g.result == p ? g.rounds : -1;
}

static void dispute_rounds(void) {
    static const int64_t sizes[3] = {100, 10000, 1000000};
    int s;
    printf("\ndispute game on synthetic leaves (10 random first-differing steps per size)\n");
    printf("%10s %12s %12s %14s %14s\n", "steps", "max rounds", "bound", "ms per game", "all correct");
    for (s = 0; s < 3; s++) {
        int64_t n = sizes[s], i;
        vt_leaf_info *a = (vt_leaf_info *)calloc((size_t)n, sizeof *a), *b = (vt_leaf_info *)calloc((size_t)n, sizeof *b);
        int game, worst = 0, ok = 1, bound = 1;
        double t0, ms = 0;
        while (((int64_t)1 << (bound - 1)) < n) bound++; /* ceil(log2 n) + 1 */
        for (game = 0; game < 10; game++) {
            int64_t p = (int64_t)(vt_rng_u64(5, (uint64_t)s, (uint64_t)game) % (uint64_t)n);
            int r;
            for (i = 0; i < n; i++) {
                a[i].step = b[i].step = i;
                memset(a[i].state, 0, 32);
                memset(b[i].state, 0, 32);
                a[i].state[0] = b[i].state[0] = (unsigned char)i;
                a[i].state[1] = b[i].state[1] = (unsigned char)(i >> 8);
                a[i].state[2] = b[i].state[2] = (unsigned char)(i >> 16);
                if (i >= p) b[i].state[3] = 1; /* the auditor's run diverges at p for good */
                vt_leaf_hash(&a[i]);
                vt_leaf_hash(&b[i]);
            }
            t0 = vt__now();
            r = play(a, b, n, p);
            ms += 1e3 * (vt__now() - t0);
            if (r < 0) ok = 0;
            if (r > worst) worst = r;
        }
        printf("%10lld %12d %12d %14.1f %14s\n", (long long)n, worst, bound, ms / 10, ok ? "yes" : "NO");
        free(a);
        free(b);
    }
}

int main(int argc, char **argv) {
    chargpt A;
    vt_program p;
    vt_desc d = vt_desc_default();
    vt_report rt, ra, rc;
    const char *data = "data/kjv_nt.txt", *dir = "build/bench_transcript_run";
    int64_t steps = 120, nparams, q;
    int i, nck = 0;
    double logb, comb, ckb, manb, weights, state;
    char cmd[1200];
    for (i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--steps") && i + 1 < argc) steps = atoll(argv[++i]);
        else if (!strcmp(argv[i], "--data") && i + 1 < argc) data = argv[++i];
        else if (!strcmp(argv[i], "--dir") && i + 1 < argc) dir = argv[++i];
        else { fprintf(stderr, "usage: bench_transcript [--steps N] [--data FILE] [--dir DIR]\n"); return 2; }
    }
    if (chargpt_load(&A, data) != VT_OK) { fprintf(stderr, "error: %s\n", vt_last_error()); return 1; }
    A.steps = steps;
    p = chargpt_program(&A);
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) return 1;

    d.transcript = dir;
    d.ckpt_every = 50;
    vt_run(&d, &p, steps, &rt);
    if (rt.status != VT_OK) { fprintf(stderr, "train: %s\n", rt.message); return 1; }
    nparams = 0;
    {
        /* the committed state: weights and AdamW's two moments */
        vt_ctx *c = vt_create(NULL);
        chargpt_setup(c, &A);
        nparams = vt_param_numel(c);
        vt_destroy(c);
    }
    weights = 4.0 * (double)nparams;
    state = 3 * weights;

    d.role = VT_ROLE_AUDIT;
    vt_run(&d, &p, steps, &ra);
    if (ra.status != VT_OK) { fprintf(stderr, "audit: %s\n", ra.message); return 1; }
    vt_order_parse(&d.order, "chaos:1");
    vt_run(&d, &p, steps, &rc);
    if (rc.status != VT_OK) { fprintf(stderr, "audit chaos:1: %s\n", rc.message); return 1; }

    logb = file_bytes(dir, "log.vtlog");
    comb = file_bytes(dir, "commits.bin");
    manb = file_bytes(dir, "manifest.txt") + file_bytes(dir, "root.txt");
    ckb = ckpt_bytes(dir, &nck);
    printf("character GPT, %lld parameters (%.0f bytes of binary32 weights, %.0f with the AdamW moments), %lld steps,\n"
           "checkpoint every 50 steps\n\n", (long long)nparams, weights, state, (long long)steps);
    printf("transcript bytes per step\n");
    printf("  rounding log        %10.0f   (%.5f of the weights)\n", logb / (double)steps, logb / (double)steps / weights);
    printf("  commitments         %10.0f   (%.5f)\n", comb / (double)steps, comb / (double)steps / weights);
    printf("  log + commitments   %10.0f   (%.5f)\n", (logb + comb) / (double)steps, (logb + comb) / (double)steps / weights);
    printf("  checkpoints         %10.0f   (%d files of %.0f bytes, amortised)\n", ckb / (double)steps, nck, nck ? ckb / nck : 0.0);
    printf("  manifest + root     %10.0f   (once: %.0f bytes)\n", manb / (double)steps, manb);
    printf("  a full state per step would be %.0f bytes\n\n", state);
    printf("time (same machine, same threads)\n");
    printf("  train               %8.2f s  (%.1f ms per step)\n", rt.seconds, 1e3 * rt.seconds / (double)steps);
    printf("  audit, default order%8.2f s  audit/train %.3f\n", ra.seconds, ra.seconds / rt.seconds);
    printf("  audit, chaos:1      %8.2f s  audit/train %.3f\n", rc.seconds, rc.seconds / rt.seconds);

    /* the judge's part of a dispute over step q: the trainer rebuilds the
       state before q from its last checkpoint, the judge loads it and
       re-executes step q with the trainer's chunk */
    {
        vt_leaf_info *L = NULL;
        int64_t n = 0;
        unsigned char *chunk = NULL;
        size_t clen = 0;
        char ckpt[1100], why[400];
        double t0, t1, t2;
        vt_verdict v;
        vt_desc j = vt_desc_default();
        vt_leaf_info fake;
        q = steps - 3;
        snprintf(ckpt, sizeof ckpt, "%s/judge-state.safetensors", dir);
        if (vt_transcript_leaves(dir, &L, &n) != VT_OK) { fprintf(stderr, "%s\n", vt_last_error()); return 1; }
        vt_order_parse(&j.order, "chaos:2");
        t0 = vt__now();
        if (vt_transcript_state_before(&j, &p, dir, q, ckpt) != VT_OK) { fprintf(stderr, "%s\n", vt_last_error()); return 1; }
        t1 = vt__now();
        if (vt_transcript_chunk(dir, q, &chunk, &clen) != VT_OK) { fprintf(stderr, "%s\n", vt_last_error()); return 1; }
        fake = L[q]; /* an auditor who claims another state after step q */
        fake.state[0] ^= 1;
        vt_leaf_hash(&fake);
        t2 = vt__now();
        v = vt_judge(&j, &p, &L[q - 1], ckpt, chunk, clen, &L[q], &fake, why, sizeof why);
        printf("\njudge, one disputed step (%lld)\n", (long long)q);
        printf("  trainer rebuilds the state before it from its last checkpoint: %.2f s\n", t1 - t0);
        printf("  judge loads that state and re-executes the step (chaos:2):      %.2f s  (%.1f training steps)\n",
               vt__now() - t2, (vt__now() - t2) / (rt.seconds / (double)steps));
        printf("  verdict: %s\n", v == VT_VERDICT_AUDITOR_WRONG ? "the auditor is wrong (as it should be)" : why);
        free(chunk);
        vt_free_leaves(L);
        remove(ckpt);
    }
    dispute_rounds();
    chargpt_free(&A);
    return 0;
}
