/* train_chargpt.c - a character-level GPT on the King James New Testament.

   make train_chargpt && ./build/train_chargpt [--steps N] [--layers L]
       [--width C] [--heads NH] [--context T] [--batch B] [--order ORDER]
       [--mode verified|round-only|native|fp64] [--log FILE] [--audit]

   A GPT-2 architecture (pre-norm blocks, GELU MLP, tied embeddings) over the
   63 byte values of data/kjv_nt.txt, trained with AdamW and a cosine
   schedule. Prints progress, the validation loss beside the unigram
   baseline, and a few lines sampled from the trained model. */
#define VTRAIN_IMPLEMENTATION
#include "../vtrain.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    vt_text text;
    int64_t ntrain;      /* tokens [0, ntrain) train, the rest validation */
    int B, T;
    int64_t steps;
    vt_gpt_config cfg;
    vt_gpt gpt;
    vt_optim *opt;
    double lr;
} app;

static vt_status setup(vt_ctx *c, void *u) {
    app *a = (app *)u;
    vt_adamw_desc ad = vt_adamw_default();
    vt_gpt_init(c, &a->gpt, &a->cfg, 1337);
    ad.lr = a->lr;
    ad.weight_decay = 0.01;
    a->opt = vt_adamw_create(c, &ad);
    return vt_status_of(c);
}

/* windows of T+1 tokens starting at offsets drawn from (seed, step, row) */
static void batch(const app *a, int64_t s, int val, int32_t *x, int32_t *y, int64_t *starts) {
    int b, t;
    int64_t base = val ? a->ntrain : 0, span = (val ? a->text.n - a->ntrain : a->ntrain) - a->T - 1;
    for (b = 0; b < a->B; b++) {
        int64_t st = base + (int64_t)(vt_rng_u64(val ? 4242 : 2024, (uint64_t)s, (uint64_t)b) % (uint64_t)span);
        if (starts) starts[b] = st;
        for (t = 0; t < a->T; t++) {
            x[b * a->T + t] = a->text.tok[st + t];
            y[b * a->T + t] = a->text.tok[st + t + 1];
        }
    }
}

static vt_status step(vt_ctx *c, int64_t s, void *u) {
    app *a = (app *)u;
    int64_t ne[2], starts[256];
    int32_t *x = (int32_t *)malloc(sizeof(int32_t) * (size_t)(a->B * a->T)), *y = (int32_t *)malloc(sizeof(int32_t) * (size_t)(a->B * a->T));
    vt_tensor *loss;
    batch(a, s, 0, x, y, starts);
    vt_commit_batch(c, starts, a->B);
    ne[0] = a->B; ne[1] = a->T;
    loss = vt_gpt_forward(c, &a->gpt, vt_from_i32(c, 2, ne, x), vt_from_i32(c, 2, ne, y), s);
    vt_backward(c, loss);
    vt_clip_grad_norm(c, 1.0);
    vt_optim_step(c, a->opt, vt_lr_cosine(s, a->steps / 20 + 1, a->steps, a->lr, a->lr / 10));
    free(x);
    free(y);
    return vt_status_of(c);
}

static double val_loss(vt_ctx *c, app *a, int nbatches) {
    int i;
    double tot = 0;
    int64_t ne[2];
    int32_t *x = (int32_t *)malloc(sizeof(int32_t) * (size_t)(a->B * a->T)), *y = (int32_t *)malloc(sizeof(int32_t) * (size_t)(a->B * a->T));
    ne[0] = a->B; ne[1] = a->T;
    for (i = 0; i < nbatches; i++) {
        vt_tensor *l;
        batch(a, i, 1, x, y, NULL);
        vt_eval_begin(c);
        l = vt_gpt_forward(c, &a->gpt, vt_from_i32(c, 2, ne, x), vt_from_i32(c, 2, ne, y), 0);
        tot += vt_item(c, l);
        vt_eval_end(c);
    }
    free(x);
    free(y);
    return tot / nbatches;
}

static double t_prev;
static int64_t s_prev;
static void on_step(vt_ctx *c, int64_t s, void *u) {
    app *a = (app *)u;
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
    app a;
    vt_desc d = vt_desc_default();
    vt_program prog;
    vt_ctx *c;
    vt_report r;
    const char *path = "data/kjv_nt.txt";
    int i, audit = 0;
    double unigram = 0;
    memset(&a, 0, sizeof a);
    a.steps = 300; a.B = 8; a.T = 64; a.lr = 3e-3;
    a.cfg.context = 64; a.cfg.layers = 4; a.cfg.heads = 4; a.cfg.width = 128;
    for (i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--steps") && i + 1 < argc) a.steps = atoll(argv[++i]);
        else if (!strcmp(argv[i], "--layers") && i + 1 < argc) a.cfg.layers = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--width") && i + 1 < argc) a.cfg.width = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--heads") && i + 1 < argc) a.cfg.heads = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--context") && i + 1 < argc) a.cfg.context = a.T = atoi(argv[++i]);
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
        else if (!strcmp(argv[i], "--data") && i + 1 < argc) path = argv[++i];
        else { fprintf(stderr, "usage: %s [--steps N] [--layers L] [--width C] [--heads NH] [--context T] [--batch B] [--lr LR] [--order O] [--mode M] [--log FILE] [--audit]\n", argv[0]); return 2; }
    }
    if (a.B > 256) a.B = 256;
    if (vt_text_load(path, &a.text) != VT_OK) { fprintf(stderr, "error: %s\n", vt_last_error()); return 1; }
    a.cfg.vocab = a.text.vocab;
    a.ntrain = a.text.n * 9 / 10;
    {   /* the unigram baseline: the entropy of the training characters */
        double cnt[256] = {0};
        int64_t k;
        for (k = 0; k < a.ntrain; k++) cnt[a.text.tok[k]] += 1;
        for (k = 0; k < a.text.vocab; k++) if (cnt[k] > 0) unigram -= cnt[k] / a.ntrain * log(cnt[k] / a.ntrain);
    }
    d.role = audit ? VT_ROLE_AUDIT : VT_ROLE_TRAIN;
    c = vt_create(&d);
    if (!c) { fprintf(stderr, "error: %s\n", vt_last_error()); return 1; }
    prog.setup = setup; prog.step = step; prog.on_step = on_step; prog.user = &a;
    setup(c, &a);
    printf("chargpt: %lld chars, vocab %d; %d layers, %d heads, width %d, context %d, batch %d; %lld parameters; mode %s\n",
           (long long)a.text.n, a.text.vocab, a.cfg.layers, a.cfg.heads, a.cfg.width, a.T, a.B, (long long)vt_param_numel(c),
           vt_mode_name(d.mode));
    vt_run_ctx(c, &prog, a.steps, &r);
    if (r.status != VT_OK) { fprintf(stderr, "error: %s\n", r.message); vt_destroy(c); return 1; }
    if (getenv("VT_KSTATS")) {
        int k;
        for (k = 0; k < VT_POINT_KINDS; k++) {
            vt_log_stats ks;
            char nm[64];
            if (vt_log_kind_stats(c, k, &ks, nm, sizeof nm))
                printf("  %-20s points %6lld  values %10lld  entries %7lld  (%.1f per million)\n", nm, (long long)ks.points,
                       (long long)ks.values, (long long)ks.entries, 1e6 * (double)ks.entries / (double)ks.values);
        }
    }
    printf("%lld steps in %.1f s (%.1f ms/step); log %lld entries / %lld values (%.1f per million), %lld bytes\n",
           (long long)r.steps, r.seconds, 1e3 * r.seconds / (double)r.steps, (long long)r.log.entries, (long long)r.log.values,
           1e6 * (double)r.log.entries / (double)(r.log.values ? r.log.values : 1), (long long)r.log.bytes);
    printf("validation loss %.4f (unigram baseline %.4f)\n", val_loss(c, &a, 8), unigram);
    {
        int32_t toks[400];
        const char *prompt = "And Jesus said";
        int np = (int)strlen(prompt), k;
        for (k = 0; k < np; k++) toks[k] = a.text.stoi[(unsigned char)prompt[k]] < 0 ? 0 : a.text.stoi[(unsigned char)prompt[k]];
        vt_gpt_generate(c, &a.gpt, toks, np, 200, 0.8, 5);
        printf("sample:\n");
        for (k = 0; k < np + 200; k++) putchar(a.text.itos[toks[k]]);
        printf("\n");
    }
    vt_destroy(c);
    vt_text_free(&a.text);
    return 0;
}
