/* train_chargpt.c - a character-level GPT on the King James New Testament.

   make build/train_chargpt && ./build/train_chargpt [--steps N] [--layers L]
       [--width C] [--heads NH] [--context T] [--batch B] [--lr LR]
       [--order ORDER] [--mode verified|round-only|native|fp64]
       [--log FILE] [--audit]

   A GPT-2 architecture (pre-norm blocks, GELU MLP, tied embeddings) over the
   63 byte values of data/kjv_nt.txt. Prints progress, the validation loss
   beside the unigram baseline, and a few lines sampled from the model. With
   --log the run writes its rounding log and per-step commitments; --audit
   replays a logged run (pass the same model options, another --order). */
#define VTRAIN_IMPLEMENTATION
#include "../vtrain.h"
#include "chargpt.h"

static double t_prev;
static int64_t s_prev;
static void on_step(vt_ctx *c, int64_t s, void *u) {
    chargpt *a = (chargpt *)u;
    if (s % 25 == 0 || s == a->steps - 1) {
        double now = vt__now();
        vt_log_stats st;
        vt_log_stats_get(c, &st);
        printf("step %5lld  loss %.4f  %6.1f ms/step  log %lld entries\n", (long long)s, vt_last_loss(c),
               s > s_prev ? 1e3 * (now - t_prev) / (double)(s - s_prev) : 0.0, (long long)st.entries);
        t_prev = now;
        s_prev = s;
    }
}

int main(int argc, char **argv) {
    chargpt a;
    vt_desc d = vt_desc_default();
    vt_program prog;
    vt_ctx *c;
    vt_report r;
    const char *path = "data/kjv_nt.txt";
    int i, audit = 0, kstats = 0;
    for (i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--data") && i + 1 < argc) path = argv[i + 1];
    if (chargpt_load(&a, path) != VT_OK) { fprintf(stderr, "error: %s\n", vt_last_error()); return 1; }
    for (i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--steps") && i + 1 < argc) a.steps = atoll(argv[++i]);
        else if (!strcmp(argv[i], "--layers") && i + 1 < argc) a.cfg.layers = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--width") && i + 1 < argc) a.cfg.width = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--heads") && i + 1 < argc) a.cfg.heads = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--context") && i + 1 < argc) a.T = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--batch") && i + 1 < argc) a.B = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--lr") && i + 1 < argc) a.lr = atof(argv[++i]);
        else if (!strcmp(argv[i], "--order") && i + 1 < argc) {
            if (vt_order_parse(&d.order, argv[++i]) != VT_OK) { fprintf(stderr, "%s\n", vt_last_error()); return 2; }
        } else if (!strcmp(argv[i], "--mode") && i + 1 < argc) {
            const char *m = argv[++i];
            d.mode = !strcmp(m, "native") ? VT_MODE_NATIVE : !strcmp(m, "round-only") ? VT_MODE_ROUND_ONLY
                   : !strcmp(m, "fp64") ? VT_MODE_FP64 : VT_MODE_VERIFIED;
        } else if (!strcmp(argv[i], "--log") && i + 1 < argc) d.log_path = argv[++i];
        else if (!strcmp(argv[i], "--audit")) audit = 1;
        else if (!strcmp(argv[i], "--kind-stats")) kstats = 1;
        else if (!strcmp(argv[i], "--data") && i + 1 < argc) i++;
        else {
            fprintf(stderr, "usage: %s [--steps N] [--layers L] [--width C] [--heads NH] [--context T] [--batch B] [--lr LR]\n"
                            "       [--order ORDER] [--mode M] [--log FILE] [--audit] [--kind-stats] [--data FILE]\n", argv[0]);
            return 2;
        }
    }
    if (a.B < 1 || a.B > 1024 || a.T < 2) { fprintf(stderr, "error: batch must be 1..1024 and context >= 2\n"); return 2; }
    d.role = audit ? VT_ROLE_AUDIT : VT_ROLE_TRAIN;
    c = vt_create(&d);
    if (!c) { fprintf(stderr, "error: %s\n", vt_last_error()); return 1; }
    prog = chargpt_program(&a);
    prog.on_step = on_step;
    if (chargpt_setup(c, &a) != VT_OK) { fprintf(stderr, "error: %s\n", vt_error_message(c)); return 1; }
    printf("chargpt: %lld chars, vocab %d; %d layers, %d heads, width %d, context %d, batch %d; %lld parameters; mode %s%s\n",
           (long long)a.text.n, a.text.vocab, a.cfg.layers, a.cfg.heads, a.cfg.width, a.T, a.B, (long long)vt_param_numel(c),
           vt_mode_name(d.mode), audit ? ", auditing" : "");
    t_prev = vt__now();
    vt_run_ctx(c, &prog, a.steps, &r);
    if (r.status != VT_OK) { fprintf(stderr, "error: %s\n", r.message); vt_destroy(c); return 1; }
    printf("%lld steps in %.1f s (%.1f ms/step); log %lld entries / %lld values (%.1f per million), %lld bytes\n",
           (long long)r.steps, r.seconds, 1e3 * r.seconds / (double)r.steps, (long long)r.log.entries, (long long)r.log.values,
           1e6 * (double)r.log.entries / (double)(r.log.values ? r.log.values : 1), (long long)r.log.bytes);
    if (audit)
        printf("audit: every step's weights equal the trainer's; %lld log entries applied, %lld of them corrected this machine's own rounding\n",
               (long long)r.log.entries, (long long)r.log.corrections);
    if (kstats) {
        int k;
        for (k = 0; k < VT_POINT_KINDS; k++) {
            vt_log_stats ks;
            char nm[64];
            if (vt_log_kind_stats(c, k, &ks, nm, sizeof nm))
                printf("  %-18s points %6lld values %10lld entries %7lld (%6.1f/M) corr %3lld  time %6.2f s (round %5.2f)\n", nm,
                       (long long)ks.points, (long long)ks.values, (long long)ks.entries, 1e6 * (double)ks.entries / (double)ks.values,
                       (long long)ks.corrections, ks.seconds, ks.round_seconds);
        }
    }
    printf("validation loss %.4f (unigram baseline %.4f)\n", chargpt_val_loss(c, &a, 8), chargpt_unigram(&a));
    {
        int32_t toks[400];
        const char *prompt = "And Jesus said";
        int np = (int)strlen(prompt), k;
        for (k = 0; k < np; k++) toks[k] = a.text.stoi[(unsigned char)prompt[k]] < 0 ? 0 : a.text.stoi[(unsigned char)prompt[k]];
        vt_gpt_generate(c, &a.gpt, toks, np, 240, 0.8, 5);
        printf("sample:\n");
        for (k = 0; k < np + 240; k++) putchar(a.text.itos[toks[k]]);
        printf("\n");
    }
    vt_destroy(c);
    chargpt_free(&a);
    return 0;
}
