/* vtrain.c - a command-line tool over the library: train a character GPT
   into a transcript, audit a transcript, play the dispute game between two
   transcripts, inspect one.

   make build/vtrain
   ./build/vtrain train RUN [options]       train into the directory RUN
   ./build/vtrain audit RUN [options]       replay RUN and check every step
   ./build/vtrain dispute RUN_A RUN_B       A is challenged by B's replay
   ./build/vtrain inspect RUN [--freedom]   manifest, steps, root, log statistics, trainer's freedom
   ./build/vtrain COMMAND --help

   The model and data are the character GPT of examples/chargpt.h on
   data/kjv_nt.txt, or with --model cnn|resnet18|resnet50 a convolutional
   network (examples/cnnprog.h: the digits CNN, or a CIFAR ResNet on a
   CIFAR-10 directory or --data synthetic). Everything an auditor needs to
   rebuild the program (model, size, batch, learning rate, steps, the data
   file and its SHA-256) goes into the transcript's manifest; `audit` and
   `dispute` read it from there. */
#define VTRAIN_IMPLEMENTATION
#include "../vtrain.h"
#include "chargpt.h"
#include "digitscnn.h"
#include "cnnprog.h"
#include <ctype.h>
#include <errno.h>
#include <signal.h>

typedef struct {
    chargpt g;
    int64_t poison_at;    /* a dishonest trainer: swap in other text at this step (-1: none) */
    char data[600];
} tool;

static tool T;
static cnnprog P;     /* --model cnn|resnet18|resnet50 */
static int use_cnn;

/* the program: chargpt, with an optional poisoned step that still commits
   the honest batch offsets (the data itself is what changes) */
static vt_status tool_step(vt_ctx *c, int64_t s, void *u) {
    tool *t = (tool *)u;
    chargpt *a = &t->g;
    int64_t ne[2], starts[1024];
    int i;
    vt_tensor *loss;
    chargpt_batch(a, s, 0, starts);
    vt_commit_batch(c, starts, a->B);
    if (s == t->poison_at) { /* "And the trainer said" over and over, as next-character targets */
        const char *pz = "and the trainer said, buy now; ";
        int pn = (int)strlen(pz);
        for (i = 0; i < a->B * a->T; i++) {
            int sx = a->text.stoi[(unsigned char)pz[i % pn]], sy = a->text.stoi[(unsigned char)pz[(i + 1) % pn]];
            a->x[i] = sx < 0 ? 0 : sx;
            a->y[i] = sy < 0 ? 0 : sy;
        }
    }
    ne[0] = a->B; ne[1] = a->T;
    loss = vt_gpt_forward(c, &a->gpt, vt_from_i32(c, 2, ne, a->x), vt_from_i32(c, 2, ne, a->y), s);
    vt_backward(c, loss);
    vt_clip_grad_norm(c, 1.0);
    vt_optim_step(c, a->opt, vt_lr_cosine(s, a->steps / 20 + 1, a->steps, a->lr, a->lr / 10));
    return vt_status_of(c);
}

/* A test hook: with VTRAIN_TEST_KILL_AT=STEP in the environment, `vtrain
   train` kills itself with SIGKILL right after step STEP (its log chunk
   and commitment written and flushed), as a kill -9 landing there would:
   tests/test_cli.sh's kill-and-resume check kills at a known step instead
   of racing the run. */
static long long kill_at = -1;

static void on_step(vt_ctx *c, int64_t s, void *u) {
    tool *t = (tool *)u;
    if (s == kill_at) {
        fflush(stdout);
#if defined(SIGKILL)
        raise(SIGKILL);
#endif
        abort();
    }
    if (use_cnn) {
        if (s % 10 == 0 || s == P.steps - 1) { printf("  step %5lld  loss %.4f\n", (long long)s, vt_last_loss(c)); fflush(stdout); }
        return;
    }
    if (s % 50 == 0 || s == t->g.steps - 1) {
        printf("  step %5lld  loss %.4f\n", (long long)s, vt_last_loss(c));
        fflush(stdout);
    }
}

static vt_program tool_program(void) {
    vt_program p = chargpt_program(&T.g);
    if (use_cnn) return cnnprog_program(&P);
    p.step = tool_step;
    p.user = &T;
    return p;
}

static int sha_file(const char *path, char hex[65]) {
    FILE *f = fopen(path, "rb");
    vt_sha256_ctx s;
    unsigned char buf[65536], h[32];
    size_t n;
    if (!f) return 0;
    vt_sha256_init(&s);
    while ((n = fread(buf, 1, sizeof buf, f)) > 0) vt_sha256_update(&s, buf, n);
    fclose(f);
    vt_sha256_final(&s, h);
    vt_hex(h, 32, hex);
    return 1;
}

/* --- numbers from the command line and from a manifest ---------------------
   Each is parsed whole (strtoll/strtod with an end pointer and errno: "abc",
   "5x", "" and out-of-range values are errors, never a silent 0) and checked
   against its range; the error names the flag or the manifest key. The
   ranges: a batch fits the step's offset array, a thread count what
   vt_create starts, the rest what one machine can train. */
#define MAX_STEPS 1000000000LL
#define MAX_LAYERS 256
#define MAX_WIDTH 16384
#define MAX_HEADS 256
#define MAX_CONTEXT 16384
#define MAX_BATCH 1024
#define MAX_LR 10.0

static int num_int(const char *what, const char *s, long long lo, long long hi, long long *out) {
    char *end;
    long long v;
    if (!*s || isspace((unsigned char)s[0])) { fprintf(stderr, "error: %s: '%s' is not an integer\n", what, s); return 0; }
    errno = 0;
    v = strtoll(s, &end, 10);
    if (end == s || *end) { fprintf(stderr, "error: %s: '%s' is not an integer\n", what, s); return 0; }
    if (errno == ERANGE || v < lo || v > hi) { fprintf(stderr, "error: %s: %s is outside %lld..%lld\n", what, s, lo, hi); return 0; }
    *out = v;
    return 1;
}

/* a real number in (lo, hi] */
static int num_real(const char *what, const char *s, double lo, double hi, double *out) {
    char *end;
    double v;
    if (!*s || isspace((unsigned char)s[0])) { fprintf(stderr, "error: %s: '%s' is not a number\n", what, s); return 0; }
    errno = 0;
    v = strtod(s, &end);
    if (end == s || *end) { fprintf(stderr, "error: %s: '%s' is not a number\n", what, s); return 0; }
    if (errno == ERANGE || !(v > lo && v <= hi)) { fprintf(stderr, "error: %s: %s is outside (%g, %g]\n", what, s, lo, hi); return 0; }
    *out = v;
    return 1;
}

/* flag FLAG with an integer value in [lo, hi]: 1 parsed (into *out), 0 not this flag, -1 an error (printed) */
static int flag_int(int argc, char **argv, int *i, const char *flag, long long lo, long long hi, long long *out) {
    if (strcmp(argv[*i], flag)) return 0;
    if (*i + 1 >= argc) { fprintf(stderr, "error: %s needs a value\n", flag); return -1; }
    return num_int(flag, argv[++*i], lo, hi, out) ? 1 : -1;
}

/* flag FLAG with a string value: 1, 0 or -1 as flag_int */
static int flag_str(int argc, char **argv, int *i, const char *flag, const char **out) {
    if (strcmp(argv[*i], flag)) return 0;
    if (*i + 1 >= argc) { fprintf(stderr, "error: %s needs a value\n", flag); return -1; }
    *out = argv[++*i];
    return 1;
}

/* the program's manifest entries */
static const char *const *manifest_entries(void) {
    static char buf[10][700];
    static const char *ptr[11];
    char hex[65];
    int k = 0;
    if (!sha_file(T.data, hex)) snprintf(hex, sizeof hex, "unreadable");
    snprintf(buf[k++], sizeof buf[0], "program=chargpt");
    snprintf(buf[k++], sizeof buf[0], "data.file=%s", T.data);
    snprintf(buf[k++], sizeof buf[0], "data.sha256=%s", hex);
    snprintf(buf[k++], sizeof buf[0], "model.layers=%d", T.g.cfg.layers);
    snprintf(buf[k++], sizeof buf[0], "model.width=%d", T.g.cfg.width);
    snprintf(buf[k++], sizeof buf[0], "model.heads=%d", T.g.cfg.heads);
    snprintf(buf[k++], sizeof buf[0], "model.context=%d", T.g.T);
    snprintf(buf[k++], sizeof buf[0], "train.batch=%d", T.g.B);
    snprintf(buf[k++], sizeof buf[0], "train.lr=%.17g", T.g.lr);
    snprintf(buf[k++], sizeof buf[0], "train.steps=%lld", (long long)T.g.steps);
    for (k = 0; k < 10; k++) ptr[k] = buf[k];
    ptr[10] = NULL;
    return ptr;
}

/* 1 loaded; -1 the file could not be read here (missing, unreadable, out
   of memory); 0 it was read but cannot feed the model (too short for the
   context, ...) */
static int load_data(void) {
    int64_t steps = T.g.steps;
    int L = T.g.cfg.layers, C = T.g.cfg.width, H = T.g.cfg.heads, ctx = T.g.T, B = T.g.B;
    double lr = T.g.lr;
    char why[256];
    if (chargpt_load(&T.g, T.data) != VT_OK) { fprintf(stderr, "error: %s\n", vt_last_error()); return -1; }
    T.g.steps = steps; T.g.cfg.layers = L; T.g.cfg.width = C; T.g.cfg.heads = H; T.g.T = ctx; T.g.B = B; T.g.lr = lr;
    if (!chargpt_fits(&T.g, why, sizeof why)) { fprintf(stderr, "error: '%s': %s\n", T.data, why); return 0; }
    return 1;
}

/* one manifest value; prints the error and returns 0 when it is missing */
static int get(const char *dir, const char *key, char *v, size_t n) {
    if (vt_manifest_get(dir, key, v, n) == VT_OK) return 1;
    fprintf(stderr, "error: %s\n", vt_last_error());
    return 0;
}

/* an integer manifest value in [lo, hi] (a transcript may come from anyone) */
static int get_int(const char *dir, const char *key, long long lo, long long hi, long long *out) {
    char v[600], what[100];
    if (!get(dir, key, v, sizeof v)) return 0;
    snprintf(what, sizeof what, "'%s/manifest.txt', %s", dir, key);
    return num_int(what, v, lo, hi, out);
}

/* rebuild the program from a transcript's manifest; checks every value and
   the data file's hash. 1: rebuilt; 0: the manifest names one of this
   tool's programs with a value missing, malformed or out of range, or data
   that cannot feed it (the manifest's fault); -1: this tool or machine
   cannot rebuild it (a program this tool does not have, or data that is
   absent, unreadable, another file than its SHA-256 names, or too large
   for this machine's memory) */
static int from_manifest(const char *dir) {
    char v[600], hex[65], what[100];
    long long x;
    if (!get(dir, "program", v, sizeof v)) return -1;
    if (cnnprog_is(v)) { use_cnn = 1; return cnnprog_from_manifest(&P, dir); }
    if (strcmp(v, "chargpt")) { fprintf(stderr, "error: '%s' is not a transcript of chargpt, cnn, resnet18 or resnet50\n", dir); return -1; }
    if (!get(dir, "data.file", v, sizeof v)) return 0;
    snprintf(T.data, sizeof T.data, "%s", v);
    if (!get_int(dir, "model.layers", 1, MAX_LAYERS, &x)) return 0;
    T.g.cfg.layers = (int)x;
    if (!get_int(dir, "model.width", 1, MAX_WIDTH, &x)) return 0;
    T.g.cfg.width = (int)x;
    if (!get_int(dir, "model.heads", 1, MAX_HEADS, &x)) return 0;
    T.g.cfg.heads = (int)x;
    if (!get_int(dir, "model.context", 2, MAX_CONTEXT, &x)) return 0;
    T.g.T = (int)x;
    if (!get_int(dir, "train.batch", 1, MAX_BATCH, &x)) return 0;
    T.g.B = (int)x;
    if (!get_int(dir, "train.steps", 1, MAX_STEPS, &x)) return 0;
    T.g.steps = x;
    if (!get(dir, "train.lr", v, sizeof v)) return 0;
    snprintf(what, sizeof what, "'%s/manifest.txt', train.lr", dir);
    if (!num_real(what, v, 0, MAX_LR, &T.g.lr)) return 0;
    if (T.g.cfg.width % T.g.cfg.heads) {
        fprintf(stderr, "error: '%s/manifest.txt': model.width %d is not a multiple of model.heads %d\n", dir, T.g.cfg.width, T.g.cfg.heads);
        return 0;
    }
    if (!get(dir, "data.sha256", v, sizeof v)) return 0;
    if (!sha_file(T.data, hex)) { fprintf(stderr, "error: cannot read the data file '%s' the manifest names\n", T.data); return -1; }
    if (strcmp(hex, v)) {
        fprintf(stderr, "error: the data file '%s' is not the one the manifest names (SHA-256 %.16s..., manifest %.16s...)\n", T.data,
                hex, v);
        return -1;
    }
    return load_data();
}

/* the options every command takes: 1 parsed, 0 not one of them, -1 an error (printed) */
static int parse_common(vt_desc *d, int argc, char **argv, int *i) {
    const char *v;
    long long x;
    int k;
    if ((k = flag_str(argc, argv, i, "--order", &v)) != 0) {
        int thr = d->order.threads;
        if (k < 0) return -1;
        if (vt_order_parse(&d->order, v) != VT_OK) { fprintf(stderr, "error: --order: %s\n", vt_last_error()); return -1; }
        if (!d->order.threads) d->order.threads = thr;
        return 1;
    }
    if ((k = flag_int(argc, argv, i, "--threads", 1, VT_MAX_THREADS, &x)) != 0) {
        if (k > 0) d->order.threads = (int)x;
        return k;
    }
    if ((k = flag_str(argc, argv, i, "--backend", &v)) != 0) {
        if (k < 0) return -1;
        if (!strcmp(v, "cpu")) d->backend = VT_BACKEND_CPU;
        else if (!strcmp(v, "cuda")) d->backend = VT_BACKEND_CUDA;
        else { fprintf(stderr, "error: --backend: unknown backend '%s' (cpu, cuda)\n", v); return -1; }
        return 1;
    }
    return 0;
}

static int cmd_train(int argc, char **argv) {
    vt_desc d = vt_desc_default();
    vt_program p;
    vt_report r;
    const char *dir = NULL;
    int i, k;
    long long x;
    const char *v;
    char hex[65];
    T.g.steps = 300; T.g.cfg.layers = 3; T.g.cfg.width = 96; T.g.cfg.heads = 4; T.g.T = 64; T.g.B = 8; T.g.lr = 3e-3;
    if (getenv("VTRAIN_TEST_KILL_AT") && !num_int("VTRAIN_TEST_KILL_AT", getenv("VTRAIN_TEST_KILL_AT"), 0, MAX_STEPS - 1, &kill_at)) return 2;
    for (i = 2; i + 1 < argc; i++) /* --model first: it decides the defaults of the others */
        if (!strcmp(argv[i], "--model")) {
            const char *m = argv[i + 1];
            if (!strcmp(m, "gpt")) continue;
            if (!cnnprog_is(m)) { fprintf(stderr, "error: --model: unknown model '%s' (gpt, cnn, resnet18, resnet50)\n", m); return 2; }
            use_cnn = 1;
            snprintf(P.model, sizeof P.model, "%s", m);
            if (!strcmp(m, "cnn")) { P.width = 16; P.batch = 64; P.lr = 3e-3; P.steps = 400; snprintf(P.data, sizeof P.data, "data/digits.csv"); }
            else { P.width = 64; P.batch = 64; P.lr = 0.1; P.steps = 300; }
        }
    for (i = 2; i < argc; i++) {
        k = parse_common(&d, argc, argv, &i);
        if (k < 0) return 2;
        if (k) continue;
        if (!strcmp(argv[i], "--help")) {
            printf("usage: vtrain train RUN [--steps N] [--layers L] [--width C] [--heads H] [--context T] [--batch B] [--lr LR]\n"
                   "                        [--ckpt-every K] [--order ORDER] [--threads N] [--bound sound|probabilistic]\n"
                   "                        [--data FILE] [--resume] [--poison-at STEP] [--model gpt|cnn|resnet18|resnet50]\n"
                   "                        [--mode verified|round-only|native|fp64]\n"
                   "Trains the character GPT into the transcript directory RUN (manifest, log, commitments,\n"
                   "checkpoints every K steps, root). --resume continues a killed run from its last checkpoint.\n"
                   "--mode other than verified (the default) keeps no rounding log: such a run's audit is no proof,\n"
                   "and it cannot be disputed (the modes to compare with, as in `make demo`).\n"
                   "--poison-at STEP plays a dishonest trainer: at that step it trains on other text but commits\n"
                   "the honest batch; `vtrain audit` and `vtrain dispute` catch it.\n"
                   "--model cnn trains the digits CNN (--width, --batch, --steps, --lr, --data FILE apply);\n"
                   "--model resnet18|resnet50 a CIFAR ResNet on --data DIR (CIFAR-10's data_batch_N.bin files)\n"
                   "or --data synthetic (CIFAR-shaped images made here); --poison-at is the GPT's only.\n"
                   "Ranges: --steps 1..%lld, --layers 1..%d, --width 1..%d (a multiple of --heads), --heads 1..%d,\n"
                   "--context 2..%d, --batch 1..%d, --lr in (0, %g], --ckpt-every 1..1000000000, --threads 1..%d.\n",
                   MAX_STEPS, MAX_LAYERS, MAX_WIDTH, MAX_HEADS, MAX_CONTEXT, MAX_BATCH, MAX_LR, VT_MAX_THREADS);
            return 0;
        }
        if (!strcmp(argv[i], "--model") && i + 1 < argc) { i++; continue; }
        if (use_cnn) { /* the convolutional models' options */
            if ((k = flag_int(argc, argv, &i, "--steps", 1, MAX_STEPS, &x)) != 0) P.steps = x;
            else if ((k = flag_int(argc, argv, &i, "--width", 1, 1024, &x)) != 0) P.width = (int)x;
            else if ((k = flag_int(argc, argv, &i, "--batch", 2, MAX_BATCH, &x)) != 0) P.batch = (int)x;
            else if ((k = flag_int(argc, argv, &i, "--ckpt-every", 1, 1000000000, &x)) != 0) d.ckpt_every = (int)x;
            else if ((k = flag_str(argc, argv, &i, "--lr", &v)) != 0) k = k > 0 && num_real("--lr", v, 0, MAX_LR, &P.lr) ? 1 : -1;
            else if ((k = flag_str(argc, argv, &i, "--data", &v)) != 0) snprintf(P.data, sizeof P.data, "%s", v);
            else if (!strcmp(argv[i], "--resume")) d.resume = 1;
            else if (argv[i][0] != '-' && !dir) dir = argv[i];
            else { fprintf(stderr, "error: unknown option '%s' for --model %s (vtrain train --help)\n", argv[i], P.model); return 2; }
            if (k < 0) return 2;
            continue;
        }
        if ((k = flag_int(argc, argv, &i, "--steps", 1, MAX_STEPS, &x)) != 0) T.g.steps = x;
        else if ((k = flag_int(argc, argv, &i, "--layers", 1, MAX_LAYERS, &x)) != 0) T.g.cfg.layers = (int)x;
        else if ((k = flag_int(argc, argv, &i, "--width", 1, MAX_WIDTH, &x)) != 0) T.g.cfg.width = (int)x;
        else if ((k = flag_int(argc, argv, &i, "--heads", 1, MAX_HEADS, &x)) != 0) T.g.cfg.heads = (int)x;
        else if ((k = flag_int(argc, argv, &i, "--context", 2, MAX_CONTEXT, &x)) != 0) T.g.T = (int)x;
        else if ((k = flag_int(argc, argv, &i, "--batch", 1, MAX_BATCH, &x)) != 0) T.g.B = (int)x;
        else if ((k = flag_int(argc, argv, &i, "--ckpt-every", 1, 1000000000, &x)) != 0) d.ckpt_every = (int)x;
        else if ((k = flag_int(argc, argv, &i, "--poison-at", 0, MAX_STEPS - 1, &x)) != 0) T.poison_at = x;
        else if ((k = flag_str(argc, argv, &i, "--lr", &v)) != 0) k = k > 0 && num_real("--lr", v, 0, MAX_LR, &T.g.lr) ? 1 : -1;
        else if ((k = flag_str(argc, argv, &i, "--data", &v)) != 0) snprintf(T.data, sizeof T.data, "%s", v);
        else if ((k = flag_str(argc, argv, &i, "--mode", &v)) != 0) {
            int m;
            for (m = 0; k > 0 && m < VT_MODE_COUNT && strcmp(v, vt_mode_name((vt_mode)m)); m++) {}
            if (k > 0 && m == VT_MODE_COUNT) { fprintf(stderr, "error: --mode: unknown mode '%s' (verified, round-only, native, fp64)\n", v); k = -1; }
            else if (k > 0) d.mode = (vt_mode)m;
        }
        else if ((k = flag_str(argc, argv, &i, "--bound", &v)) != 0) {
            if (k > 0 && !strcmp(v, "sound")) d.bound = VT_BOUND_SOUND;
            else if (k > 0 && !strcmp(v, "probabilistic")) {
                d.bound = VT_BOUND_PROBABILISTIC;
                d.allow_probabilistic = 1; /* asked for by name */
            }
            else if (k > 0) { fprintf(stderr, "error: --bound: unknown bound mode '%s' (sound, probabilistic)\n", v); k = -1; }
        } else if (!strcmp(argv[i], "--resume")) d.resume = 1;
        else if (argv[i][0] != '-' && !dir) dir = argv[i];
        else { fprintf(stderr, "error: unknown option '%s' (vtrain train --help)\n", argv[i]); return 2; }
        if (k < 0) return 2;
    }
    if (!dir) { fprintf(stderr, "error: vtrain train needs a directory (vtrain train --help)\n"); return 2; }
    if (use_cnn) {
        char why[200];
        if (!P.data[0]) { fprintf(stderr, "error: --model %s needs --data DIR (CIFAR-10) or --data synthetic\n", P.model); return 2; }
        if (!cnnprog_check(&P, why, sizeof why)) { fprintf(stderr, "error: %s\n", why); return 2; }
        if (!cnnprog_load(&P)) return 1;
        d.transcript = dir;
        d.manifest = cnnprog_manifest(&P);
        p = tool_program();
        p.on_step = on_step;
        printf("training %s, %lld steps into '%s'%s\n", P.model, (long long)P.steps, dir, d.resume ? " (resuming)" : "");
        vt_run(&d, &p, P.steps, &r);
        if (r.status != VT_OK) { fprintf(stderr, "error: %s\n", r.message); return 1; }
        vt_hex(r.digest, 32, hex);
        printf("done: %lld steps in %.1f s, final state %.16s..., log %.0f bytes per step\n", (long long)r.steps, r.seconds, hex,
               r.steps ? (double)r.log.bytes / (double)r.steps : 0.0);
        return 0;
    }
    if (T.g.cfg.width % T.g.cfg.heads) {
        fprintf(stderr, "error: --width %d is not a multiple of --heads %d\n", T.g.cfg.width, T.g.cfg.heads);
        return 2;
    }
    if (load_data() != 1) return 1;
    d.transcript = dir;
    d.manifest = manifest_entries();
    p = tool_program();
    p.on_step = on_step;
    printf("training %lld steps into '%s'%s\n", (long long)T.g.steps, dir, d.resume ? " (resuming)" : "");
    vt_run(&d, &p, T.g.steps, &r);
    if (r.status != VT_OK) { fprintf(stderr, "error: %s\n", r.message); return 1; }
    vt_hex(r.digest, 32, hex);
    printf("done: %lld steps in %.1f s, final state %.16s..., log %.0f bytes per step\n", (long long)r.steps, r.seconds, hex,
           r.steps ? (double)r.log.bytes / (double)r.steps : 0.0);
    return 0;
}

/* The trainer's freedom, as this audit measured it: an entry whose plausible
   interval (the auditor's sound interval) holds more than one binary32 value
   is one where a dishonest trainer could have written another value and still
   passed; log2 of the interval's size, summed, is how many bits it could
   choose. Products the bounds could not decide were evaluated exactly and
   leave no freedom. */
static void print_freedom(const vt_report *r) {
    double steps = r->steps > 0 ? (double)r->steps : 1.0;
    printf("trainer's freedom: %lld entries with more than one plausible value, %.1f bits in all (%.1f bits per step);\n",
           (long long)r->log.multi, r->log.freedom_bits, r->log.freedom_bits / steps);
    printf("%lld undecided product values evaluated exactly (no entry, no freedom)\n", (long long)r->log.exact);
}

static int cmd_audit(int argc, char **argv) {
    vt_desc d = vt_desc_default();
    vt_program p;
    vt_report r;
    const char *dir = NULL;
    int i, k;
    long long x;
    char hex[65];
    vt_order_parse(&d.order, "chaos:1");
    for (i = 2; i < argc; i++) {
        k = parse_common(&d, argc, argv, &i);
        if (k < 0) return 2;
        if (k) continue;
        if (!strcmp(argv[i], "--help")) {
            printf("usage: vtrain audit RUN [--order ORDER] [--threads N] [--backend cpu|cuda] [--from STEP]\n"
                   "Replays the transcript RUN from step 0 (or from its checkpoint at STEP) with another reduction\n"
                   "order (default chaos:1) and compares every step's leaf (weights and optimizer state, log chunk,\n"
                   "batch) with the trainer's; at the end checks the Merkle root. Reports the first differing step\n"
                   "and what differs. With --from STEP (a checkpoint below the step count) steps 0..STEP-1 are not\n"
                   "verified (the checkpoint is trusted): such an audit reports itself incomplete and exits 1.\n"
                   "Only a verified transcript's audit is a proof; any other mode's exits 1 and says so.\n");
            return 0;
        }
        if ((k = flag_int(argc, argv, &i, "--from", 0, MAX_STEPS, &x)) != 0) {
            if (k < 0) return 2;
            d.audit_from = x;
        } else if (argv[i][0] != '-' && !dir) dir = argv[i];
        else { fprintf(stderr, "error: unknown option '%s' (vtrain audit --help)\n", argv[i]); return 2; }
    }
    if (!dir) { fprintf(stderr, "error: vtrain audit needs a transcript directory\n"); return 2; }
    if (from_manifest(dir) != 1) return 1;
    d.role = VT_ROLE_AUDIT;
    d.transcript = dir;
    p = tool_program();
    if (use_cnn) T.g.steps = P.steps;
    if (d.audit_from >= T.g.steps) {
        fprintf(stderr, "error: --from: %lld is not below the run's %lld steps (from there nothing would be replayed)\n", (long long)d.audit_from,
                (long long)T.g.steps);
        return 2;
    }
    {   /* only a verified run's audit is a proof */
        char mode[32];
        if (vt_manifest_get(dir, "vtrain.mode", mode, sizeof mode) == VT_OK && strcmp(mode, "verified")) {
            vt_run(&d, &p, T.g.steps, &r);
            printf("AUDIT IS NO PROOF: '%s' was trained in mode %s, which keeps no rounding log: a replay on another machine or in another "
                   "order may differ from an honest trainer and match a dishonest one (this replay: %s)\n", dir, mode,
                   r.status == VT_OK ? "every leaf equal" : r.message);
            return 1;
        }
    }
    printf("auditing '%s' (%lld steps) from step %lld\n", dir, (long long)T.g.steps, (long long)d.audit_from);
    vt_run(&d, &p, T.g.steps, &r);
    if (r.status != VT_OK) {
        if (r.first_bad_step < 0 && (r.status == VT_ERR_BACKEND || r.status == VT_ERR_NOMEM)) {
            /* this machine could not replay: nothing is shown about the run */
            printf("AUDIT NOT RUN: this machine cannot replay here (%s): nothing about '%s' was verified or refuted\n", r.message, dir);
            return 1;
        }
        if (r.first_bad_step >= 0) printf("AUDIT FAILED at step %lld: %s\n", (long long)r.first_bad_step, r.message);
        else printf("AUDIT FAILED: %s\n", r.message);
        return 1;
    }
    if (d.audit_from > 0) { /* steps before --from were not replayed: their checkpoint was trusted */
        printf("AUDIT INCOMPLETE: steps %lld..%lld replayed and equal, root verified; steps 0..%lld were NOT verified (checkpoint %lld "
               "was trusted): audit without --from for a full audit\n",
               (long long)d.audit_from, (long long)(d.audit_from + r.steps - 1), (long long)(d.audit_from - 1), (long long)d.audit_from);
        return 1;
    }
    if (r.root_steps != d.audit_from + r.steps) { /* the manifest's train.steps stop short of the commitments */
        printf("AUDIT INCOMPLETE: steps %lld..%lld replayed and equal, but root.txt commits %lld steps (the manifest says train.steps = %lld)\n",
               (long long)d.audit_from, (long long)(d.audit_from + r.steps - 1), (long long)r.root_steps, (long long)T.g.steps);
        return 1;
    }
    vt_hex(r.digest, 32, hex);
    printf("audit passed: %lld steps replayed, every leaf equal, Merkle root verified; final state %.16s...\n", (long long)r.steps, hex);
    printf("(%.1f s, %lld log entries applied, %lld corrected this machine's own rounding)\n", r.seconds, (long long)r.log.entries,
           (long long)r.log.corrections);
    print_freedom(&r);
    return 0;
}

static void on_round(const vt_dispute *g, int64_t lo, int64_t hi, void *u) {
    (void)u;
    if (g->rounds == 1) printf("dispute over %lld steps: A's root differs from B's; B walks down A's Merkle tree\n", (long long)g->n);
    if (g->outcome == VT_DISPUTE_TRAINER_LOSES) printf("  round %2d: steps [%lld, %lld): A's answer fails\n", g->rounds, (long long)lo, (long long)hi);
    else if (hi - lo > 1)
        printf("  round %2d: steps [%lld, %lld): A's children verified; the difference is in [%lld, %lld)\n", g->rounds, (long long)lo,
               (long long)hi, (long long)g->lo, (long long)g->hi);
    else printf("  round %2d: A reveals its leaf of step %lld\n", g->rounds, (long long)lo);
}

/* Every branch ends in one stated outcome and an exit status: 0 when the
   game ended in a verdict or in "no dispute", 1 when no verdict could be
   reached, 2 for a bad command line. */
/* A's program could not be rebuilt here (k: from_manifest's answer). Who
   answers for that is decided as vt_dispute_transcripts decides before it
   runs anything, in its order: each party's files must back its own root
   (a missing or edited manifest loses its holder the game), both must
   describe one program and as many steps, equal roots are no dispute, the
   trainer's settings must be usable and verified; then a manifest of one
   of this tool's programs that names unusable values is the trainer's (it
   published it), and anything this tool or machine lacks (the program,
   the data, the memory) is the judge's own failure: no verdict */
static int dispute_without_program(const char *a, const char *b, int k) {
    unsigned char pa[32], pb[32], ra[32], rb[32];
    int64_t na, nb;
    vt_desc jd = vt_desc_default();
    if (vt_transcript_check(a, &na) != VT_OK) {
        printf("the trainer's transcript does not back its own root (%s): it cannot answer for it: the trainer loses\n"
               "verdict: the trainer (A) is wrong\n", vt_last_error());
        return 0;
    }
    if (vt_transcript_check(b, &nb) != VT_OK) {
        printf("the auditor's transcript does not back its own root (%s): its challenge is malformed: the auditor loses\n"
               "verdict: the auditor (B) is wrong\n", vt_last_error());
        return 0;
    }
    if (vt_manifest_program_sha(a, pa) != VT_OK || vt_manifest_program_sha(b, pb) != VT_OK || memcmp(pa, pb, 32)) {
        printf("the two manifests describe different programs: no game, no verdict\n");
        return 1;
    }
    if (na != nb) {
        printf("the transcripts commit %lld and %lld steps: no game, no verdict\n", (long long)na, (long long)nb);
        return 1;
    }
    if (vt_transcript_root(a, ra, NULL, NULL) == VT_OK && vt_transcript_root(b, rb, NULL, NULL) == VT_OK && !memcmp(ra, rb, 32)) {
        printf("no dispute\n");
        return 0;
    }
    if (vt_transcript_settings(a, &jd) != VT_OK) {
        printf("the trainer's manifest is unusable (%s): the trainer loses\nverdict: the trainer (A) is wrong\n", vt_last_error());
        return 0;
    }
    if (jd.mode != VT_MODE_VERIFIED) {
        printf("the transcripts were trained in mode %s: only verified transcripts can be judged: no game, no verdict\n", vt_mode_name(jd.mode));
        return 1;
    }
    if (k < 0) {
        printf("this tool or machine cannot rebuild the program (see the error: a program it does not have, data it lacks, or no "
               "memory): the judge cannot replay: no verdict\n");
        return 1;
    }
    printf("the trainer's manifest, which both parties committed to, names no program this tool can run (see the error): "
           "the trainer loses\nverdict: the trainer (A) is wrong\n");
    return 0;
}

static int cmd_dispute(int argc, char **argv) {
    const char *a = NULL, *b = NULL;
    vt_desc d = vt_desc_default();
    vt_program p;
    vt_dispute_report r;
    int i, k;
    vt_order_parse(&d.order, "chaos:2");
    for (i = 2; i < argc; i++) {
        k = parse_common(&d, argc, argv, &i);
        if (k < 0) return 2;
        if (k) continue;
        if (!strcmp(argv[i], "--help")) {
            printf("usage: vtrain dispute RUN_A RUN_B [--order ORDER] [--threads N] [--backend cpu|cuda]\n"
                   "Plays the dispute game: A (the trainer) is challenged by B (the auditor's transcript of the same\n"
                   "manifest: its own run, in any order). Both must be verified transcripts, each must back its own\n"
                   "root. The auditor bisects over the leaves, checking each of A's answers against A's Merkle root, to\n"
                   "the first step they disagree on; steps whose leaves differ only in their log chunks (two honest\n"
                   "orders may log different entries for the same weights) are no fault, and the judge goes on to the\n"
                   "first step whose state or batch differ. A's state before that step is rebuilt from A's own files\n"
                   "(a replay from A's last checkpoint before it, or from step 0: any file of A's missing or bad loses\n"
                   "A the game), and the judge re-executes the step (with ORDER) with A's log chunk and with B's: a\n"
                   "party whose own chunk does not reproduce its own leaf is wrong; when both do, nobody is.\n"
                   "Exit status 0: a verdict, no fault or no dispute; 1: no verdict could be reached.\n");
            return 0;
        }
        if (argv[i][0] != '-' && !a) a = argv[i];
        else if (argv[i][0] != '-' && !b) b = argv[i];
        else { fprintf(stderr, "error: unknown option '%s' (vtrain dispute --help)\n", argv[i]); return 2; }
    }
    if (!a || !b) { fprintf(stderr, "error: vtrain dispute needs two transcripts (vtrain dispute --help)\n"); return 2; }
    /* the program is the trainer's (its manifest); the auditor's must describe the same one */
    k = from_manifest(a);
    if (k != 1) return dispute_without_program(a, b, k);
    p = tool_program();
    memset(&r, 0, sizeof r);
    r.on_round = on_round;
    if (vt_dispute_transcripts(&d, &p, a, b, &r) != VT_OK) { fprintf(stderr, "error: %s\n", vt_last_error()); return 1; }
    printf("%s\n", r.message);
    if ((r.outcome == VT_DISPUTE_FOUND || r.outcome == VT_DISPUTE_NO_FAULT) && r.judge_seconds > 0)
        printf("judge: rebuilt the trainer's state before step %lld by replaying %lld steps (%.2f s), then re-executed that step with "
               "each party's log (%.2f s)\n", (long long)r.step, (long long)r.replayed_steps, r.rebuild_seconds, r.judge_seconds);
    if (r.outcome == VT_DISPUTE_NONE) { printf("no dispute\n"); return 0; }
    if (r.outcome == VT_DISPUTE_NO_FAULT) { printf("verdict: no fault (neither A nor B is wrong)\n"); return 0; }
    printf("verdict: %s\n", r.verdict == VT_VERDICT_TRAINER_WRONG   ? "the trainer (A) is wrong"
                             : r.verdict == VT_VERDICT_AUDITOR_WRONG ? "the auditor (B) is wrong"
                                                                     : "none");
    return r.verdict == VT_VERDICT_NONE ? 1 : 0;
}

static int cmd_inspect(int argc, char **argv) {
    const char *dir = NULL;
    vt_leaf_info *L;
    int64_t n, nr;
    unsigned char root[32], msha[32];
    char hex[65], path[700], line[700];
    FILE *f;
    int i, freedom = 0;
    for (i = 2; i < argc; i++) {
        if (!strcmp(argv[i], "--help")) {
            printf("usage: vtrain inspect RUN [--freedom]\n"
                   "Prints the manifest, the number of steps, the Merkle root and the log's size. --freedom also\n"
                   "replays the run (as `vtrain audit` does, order chaos:1) to count the log entries with more than\n"
                   "one plausible value and the bits per step a dishonest trainer could choose freely.\n");
            return 0;
        }
        if (!strcmp(argv[i], "--freedom")) freedom = 1;
        else if (argv[i][0] != '-' && !dir) dir = argv[i];
        else { fprintf(stderr, "error: unknown option '%s' (vtrain inspect --help)\n", argv[i]); return 2; }
    }
    if (!dir) { fprintf(stderr, "error: vtrain inspect needs a transcript directory (vtrain inspect --help)\n"); return 2; }
    snprintf(path, sizeof path, "%s/manifest.txt", dir);
    f = fopen(path, "r");
    if (!f) { fprintf(stderr, "error: cannot read '%s'\n", path); return 1; }
    printf("manifest (%s):\n", path);
    while (fgets(line, sizeof line, f)) printf("  %s", line);
    fclose(f);
    if (vt_transcript_leaves(dir, &L, &n) != VT_OK) { fprintf(stderr, "error: %s\n", vt_last_error()); return 1; }
    printf("steps committed: %lld\n", (long long)n);
    if (vt_transcript_root(dir, root, msha, &nr) == VT_OK) {
        vt_hex(root, 32, hex);
        printf("Merkle root over %lld leaves: %s\n", (long long)nr, hex);
        if (vt_transcript_check(dir, &nr) != VT_OK) printf("root.txt DOES NOT MATCH the other files: %s\n", vt_last_error());
    } else printf("no usable root.txt: %s\n", vt_last_error());
    snprintf(path, sizeof path, "%s/log.vtlog", dir);
    f = fopen(path, "rb");
    if (f) {
        fseek(f, 0, SEEK_END);
        printf("log: %ld bytes (%.0f per step)\n", ftell(f), n ? (double)ftell(f) / (double)n : 0.0);
        fclose(f);
    }
    vt_free_leaves(L);
    if (freedom) {
        vt_desc d = vt_desc_default();
        vt_program p;
        vt_report r;
        if (from_manifest(dir) != 1) return 1;
        vt_order_parse(&d.order, "chaos:1");
        d.role = VT_ROLE_AUDIT;
        d.transcript = dir;
        p = tool_program();
        vt_run(&d, &p, T.g.steps, &r);
        if (r.status != VT_OK) { printf("the replay failed, so no freedom figure: %s (vtrain audit says more)\n", r.message); return 1; }
        print_freedom(&r);
    }
    return 0;
}

int main(int argc, char **argv) {
    memset(&T, 0, sizeof T);
    T.poison_at = -1;
    snprintf(T.data, sizeof T.data, "data/kjv_nt.txt");
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "help")) {
        printf("usage: vtrain train|audit|dispute|inspect ...   (vtrain COMMAND --help)\n");
        return argc < 2 ? 2 : 0;
    }
    if (!strcmp(argv[1], "train")) return cmd_train(argc, argv);
    if (!strcmp(argv[1], "audit")) return cmd_audit(argc, argv);
    if (!strcmp(argv[1], "dispute")) return cmd_dispute(argc, argv);
    if (!strcmp(argv[1], "inspect")) return cmd_inspect(argc, argv);
    fprintf(stderr, "error: unknown command '%s' (train, audit, dispute, inspect)\n", argv[1]);
    return 2;
}
